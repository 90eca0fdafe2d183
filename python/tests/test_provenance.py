"""Provenance from Python (issue 26): optimize(provenance=True) and
RewritePatternManager.rewrite(provenance=True) record on each new layer the
rule that made it and the layers it replaced; gwr.onnx.save(provenance=True)
writes it into node metadata that gwr.onnx.load reads back. Off by default."""
import json
import os
import tempfile

import gwr


def made(net):
    return {l.name: json.loads(l.provenance) for l in net.layers
            if not l.is_removed and l.provenance is not None}


def gelu():
    """x * 0.5 * (1 + erf(x / sqrt 2)) as separate layers: fuse_gelu makes one Gelu."""
    net = gwr.Network("gelu")
    x = net.add_input("x", gwr.float32, (2, 8))
    y = (x * 0.5) * (gwr.functional.erf(x / 1.4142135381698608) + 1.0)
    net.mark_output(y)
    return net


def test_off_by_default():
    net = gelu()
    originals = {l.name for l in net.layers}
    gwr.optimize(net)
    assert made(net) == {}
    assert any(l.op == "Gelu" for l in net.layers if not l.is_removed), "the fusion ran"
    assert originals  # the network had layers to replace


def test_optimize_records_rule_and_replaced_layers():
    net = gelu()
    originals = {l.name: l.op for l in net.layers}
    gwr.optimize(net, provenance=True)
    gelus = [l for l in net.layers if not l.is_removed and l.op == "Gelu"]
    assert len(gelus) == 1
    p = json.loads(gelus[0].provenance)
    assert p["rule"] == "fuse_gelu"
    names = [f for f in p["from"] if isinstance(f, str)]
    # The replaced layers are the original Div, Erf, Add and Muls (no constants).
    assert names and all(n in originals for n in names)
    assert {originals[n] for n in names} >= {"Div", "Erf", "Mul", "Add"}
    # Round trip through ONNX node metadata.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.onnx")
        gwr.onnx.save(net, path, provenance=True)
        back = gwr.onnx.load(path)
        assert made(back)[gelus[0].name] == p
        plain = os.path.join(d, "plain.onnx")
        gwr.onnx.save(net, plain)
        assert made(gwr.onnx.load(plain)) == {}


def test_manager_rewrite_provenance():
    """The manager records only when asked, for a built-in pass as for any pattern."""
    for on in (False, True):
        net = gelu()
        before = {l.name for l in net.layers}
        m = gwr.RewritePatternManager()
        m.add_builtin("fuse_gelu")
        m.rewrite(net, provenance=on)
        assert any(l.op == "Gelu" for l in net.layers if not l.is_removed)
        rec = made(net)
        if not on:
            assert rec == {}
            continue
        assert [v["rule"] for v in rec.values()] == ["fuse_gelu"]
        assert all(isinstance(f, str) and f in before for v in rec.values() for f in v["from"])
