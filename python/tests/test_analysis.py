"""gwr.analyze(): the built-in analyses from Python, against counts worked
out here from the conventions of docs/api.md (a multiply-add is 2 FLOPs,
one FLOP per element-wise output, 5 per normalized element)."""
import numpy as np
import pytest

import gwr
import gwr.functional as F


def mlp(batch="batch"):
    net = gwr.Network("mlp")
    x = net.add_input("x", gwr.float32, (batch, 8))
    w1 = F.constant(np.ones((8, 16), np.float32), network=net)
    w2 = F.constant(np.ones((16, 4), np.float32), network=net)
    h = F.relu(F.matmul(x, w1))
    y = F.layer_norm(F.matmul(h, w2), F.constant(np.ones(4, np.float32), network=net))
    net.mark_output(y)
    return net


def test_counts_follow_the_conventions():
    net = mlp()
    r = gwr.analyze(net, dims={"batch": 3})
    assert r["ops"] == {"Constant": 3, "MatMul": 2, "Relu": 1, "LayerNormalization": 1}
    per = {e["layer"].op + str(i): e["flops"] for i, e in enumerate(r["layers"])}
    flops = {e["layer"].name: e["flops"] for e in r["layers"]}
    m1, m2 = [l for l in net.layers if l.op == "MatMul"]
    assert flops[m1.name] == 2 * 3 * 16 * 8 and flops[m2.name] == 2 * 3 * 4 * 16
    (relu,) = [l for l in net.layers if l.op == "Relu"]
    (ln,) = [l for l in net.layers if l.op == "LayerNormalization"]
    assert flops[relu.name] == 3 * 16 and flops[ln.name] == 5 * 3 * 4
    assert r["totals"]["flops"] == sum(flops.values()) and r["totals"]["layers"] == 7 == len(per)
    assert r["totals"]["known_layers"] == 7 and r["assumed"] == [] and r["unused"] == []
    # weights: 8*16 + 16*4 + 4 float32s
    assert r["params"] == {"tensors": 3, "elements": 128 + 64 + 4, "bytes": 4 * 196, "shared_tensors": 0,
                           "shared_bytes": 0}
    assert r["memory"]["weight_bytes"] == 4 * 196
    # the MatMul's bytes: x (3x8) and w1 (8x16) read, 3x16 written
    (m1cost,) = [e for e in r["layers"] if e["layer"] is m1]
    assert m1cost["bytes_read"] == 4 * (24 + 128) and m1cost["bytes_written"] == 4 * 48


def test_peak_memory_from_the_lifetimes():
    net = mlp()
    r = gwr.analyze(net, dims={"batch": 2})
    life = r["lifetimes"]
    assert [e["tensor"].name for e in life][0] == "x"
    # recompute the peak from the lifetimes: bytes of tensors live at each position
    n = len([l for l in net.layers if not l.is_removed])
    at = [sum(e["bytes"] for e in life if e["first"] <= i <= e["last"]) for i in range(n)]
    assert r["memory"]["peak_bytes"] == max(at)
    assert r["memory"]["peak_index"] == at.index(max(at))
    assert r["memory"]["peak_layer"] is net.layers[at.index(max(at))]


def test_unbound_and_unused_dims():
    net = mlp()
    r = gwr.analyze(net, dims={"seq": 7})
    assert r["assumed"] == ["batch"] and r["unused"] == ["seq"]
    assert r["totals"]["known_layers"] < r["totals"]["layers"]
    fixed = gwr.analyze(mlp(batch=5))
    assert fixed["assumed"] == [] and fixed["totals"]["known_layers"] == 7


def test_bad_input():
    net = mlp()
    with pytest.raises(TypeError):
        gwr.analyze(net, dims=[("batch", 1)])
    with pytest.raises(gwr.Error):
        gwr.analyze(net, dims={"batch": -2})
    with pytest.raises(gwr.Error):
        gwr.analyze(net, dims={"batch": "two"})
    with pytest.raises(TypeError):
        gwr.analyze("not a network")
    net.close()
    with pytest.raises(gwr.LifetimeError):
        gwr.analyze(net)


def test_report_outlives_a_prune_safely():
    net = mlp()
    r = gwr.analyze(net)
    relu = [e["layer"] for e in r["layers"] if e["layer"].op == "Relu"][0]
    # bypass the Relu and prune it: the report's Layer object dies, the numbers stay
    relu.get_outputs(0)[0].replace_all_uses_with(relu.get_inputs(0)[0])
    relu.mark_as_removed()
    net.prune()
    assert not relu.is_alive and r["totals"]["layers"] == 7
    assert gwr.analyze(net)["totals"]["layers"] == 6
