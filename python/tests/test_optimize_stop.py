"""gwr.optimize(stop_after=K, profile=...) and the report's rounds (issue 26):
the run stopped after K rewrites holds exactly what K rewrites leave, and the
per-round counters add up to the report's."""
import pytest

import gwr


def build():
    """Neg(Neg((x * 1) + 0)): x*1, +0 and the Neg pair, one rewrite each at level basic."""
    net = gwr.Network("stop")
    x = net.add_input("x", gwr.float32, (2, 3))
    net.mark_output(-(-((x * 1.0) + 0.0)))
    return net


def units(net):
    ops = [l.op for l in net.layers if not l.is_removed]
    return ops.count("Mul") + ops.count("Add") + ops.count("Neg") // 2


def test_stop_after_k():
    full = gwr.optimize(build(), level="basic")
    assert full["rewrites"] == 3 and not full["stopped"]
    for k in range(0, 4):
        net = build()
        rep = gwr.optimize(net, level="basic", stop_after=k)
        assert rep["rewrites"] == k
        assert rep["stopped"]
        assert units(net) == 3 - k
        net.verify()
    with pytest.raises(ValueError):
        gwr.optimize(build(), stop_after=-1)


def test_manager_stop_after():
    """RewritePatternManager.rewrite(stop_after=K) with the built-in rules_cleanup
    on Neg(Neg(Neg(Neg(x)))): one Neg pair per rewrite."""
    def chain():
        net = gwr.Network("negs")
        x = net.add_input("x", gwr.float32, (2, 3))
        net.mark_output(-(-(-(-x))) * 2.0)
        return net
    m = gwr.RewritePatternManager()
    m.add("rules_cleanup", gwr.passes.get("rules_cleanup"))
    full = m.rewrite(chain())
    assert full["rewrites"] == 2 and full["converged"] and not full["stopped"]
    for k in range(0, 3):
        net = chain()
        s = m.rewrite(net, stop_after=k)
        assert s["rewrites"] == k and s["stopped"] and not s["converged"]
        assert [l.op for l in net.layers if not l.is_removed].count("Neg") == 4 - 2 * k
        net.verify()
    with pytest.raises(ValueError):
        m.rewrite(chain(), stop_after=-3)


def test_rounds_add_up():
    net = build()
    rep = gwr.optimize(net, level="basic", profile=True)
    assert rep["rounds"], rep
    total = {}
    for rd in rep["rounds"]:
        assert rd["rewrites"] == sum(p["rewrites"] for p in rd["passes"])
        for p in rd["passes"]:
            assert p["seconds"] >= 0
            total[p["label"]] = total.get(p["label"], 0) + p["rewrites"]
    for p in rep["passes"]:
        if p["skipped"] is None:
            assert total[p["label"]] == p["rewrites"], p["label"]
    assert rep["rounds"][0]["layers_before"] == rep["layers_before"]
    assert rep["rounds"][-1]["layers_after"] == rep["layers_after"]
    # two Constants, Mul, Add and the Neg pair; left: one Identity naming the
    # output. The rewrites remove the four computing layers and add the
    # Identity (removed - added 3); the final prune takes the Constants.
    assert (rep["layers_before"], rep["layers_after"]) == (6, 1)
    removed = sum(p["layers_removed"] - p["layers_added"] for rd in rep["rounds"] for p in rd["passes"])
    assert removed == 3
