"""FLayerInfo, FLayerInfoMemo, record_signature and the seed's gpt_attention remove-padding rewrite."""

import numpy as np
import pytest

import gwr
import gwr.functional as F
from gwr._flayer import FLayerInfoMemo, record_signature
from gwr.functional import gpt_attention

B, S, NH, HS = 2, 4, 2, 3
H = NH * HS
W = 3 * H
memo = FLayerInfoMemo.instance()


def attention_ref(qkv, bias):
    """Causal multi-head attention of qkv (b, s, 3H) + bias, in float64 (the plugin's definition)."""
    x = qkv.astype(np.float64) + bias
    b, s, _ = x.shape
    q, k, v = (x[:, :, i * H:(i + 1) * H].reshape(b, s, NH, HS).transpose(0, 2, 1, 3) for i in range(3))
    sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(HS)
    sc = np.where(np.tril(np.ones((s, s), bool)), sc, -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(b, s, H)


def attention_net(with_bias=True):
    net = gwr.Network("att")
    qkv = net.add_input("qkv", gwr.float32, (B, S, W))
    bias = np.linspace(-0.5, 0.5, W).astype(np.float32)
    bt = F.constant(bias, network=net) if with_bias else None
    ctx, present = gpt_attention(qkv=qkv, qkv_bias=bt, num_heads=NH, head_size=HS)
    y = F.relu(ctx)
    y.name = "y"
    net.mark_output(y)
    return net, bias if with_bias else np.zeros(W, np.float32)


def test_gpt_attention_records_its_call():
    net, _ = attention_net()
    (ctx,) = net.get_tensor("y").get_parent().get_inputs()
    layer = ctx.get_parent()
    assert layer.op == "GPTAttention" and layer.domain == "gwr"
    f = memo.get(layer)
    assert isinstance(f, gwr._gwr.FLayerInfo) and f.kind == "gpt_attention" and f.layer is layer
    assert f.get_input("qkv") is net.get_tensor("qkv")
    assert f.get_input("attention_mask") is None and f.get_input("num_heads") is None
    raw = f.raw_inputs
    assert list(raw) == ["qkv", "qkv_bias", "attention_mask", "num_heads", "head_size", "remove_padding"]
    assert raw["num_heads"] == NH and raw["head_size"] == HS and raw["remove_padding"] == 0
    assert [t.shape for t in f.outputs] == [(B, S, H), (B, 2, NH, S, HS)]
    assert memo.size(net) == 1
    with gwr.net_guard(net):
        assert memo.get(layer.name).layer is layer
        assert memo.size() == 1
        assert memo.get("no such layer") is None
    assert memo.get(layer.name, network=net).kind == "gpt_attention"
    assert memo.get(net.get_tensor("y").get_parent()) is None  # a plain layer has none
    assert "gpt_attention" in repr(f)
    net.close()


def test_memo_by_name_needs_a_network():
    with pytest.raises(gwr.StateError):
        memo.get("x")
    with pytest.raises(TypeError):
        memo.get(3)
    assert FLayerInfoMemo.instance() is memo


def test_clone_inputs_is_independent():
    net, _ = attention_net()
    f = memo.get(net.get_tensor("y").get_parent().get_inputs()[0].get_parent())
    a = f.clone_inputs()
    a["num_heads"] = 99
    a["qkv"] = None
    b = f.clone_inputs()
    assert b["num_heads"] == NH and b["qkv"] is net.get_tensor("qkv") and a is not b
    assert f.raw_inputs["num_heads"] == NH
    net.close()


def test_replace_input_with_and_numbers():
    net, bias = attention_net()
    layer = net.get_tensor("y").get_parent().get_inputs()[0].get_parent()
    f = memo.get(layer)
    old = f.get_input("qkv")
    new = net.add_input("qkv2", gwr.float32, (B, S, W))
    f.replace_input_with(old, new)
    assert f.get_input("qkv") is new and layer.get_inputs(0)[0] is new
    with pytest.raises(gwr.NotFoundError):
        f.replace_input_with(old, new)  # old is no input any more
    other = net.add_input("i", gwr.int64, (B, S, W))
    with pytest.raises(gwr.Error):
        f.replace_input_with(new, other)  # a dtype change is refused
    x = np.random.default_rng(0).standard_normal((B, S, W)).astype(np.float32)
    out = gwr.Session(net, optimize="raw").run({"qkv": np.zeros_like(x), "qkv2": x,
                                                "i": np.zeros((B, S, W), np.int64)})["y"]
    np.testing.assert_allclose(out, np.maximum(attention_ref(x, bias), 0), rtol=1e-4, atol=1e-5)
    net.close()


def _seed_rewrite(net, layer, batch_size, in_len, hidden_size):
    """GPTAttentionPluginRemovePaddingRewritePass.match_and_rewrite as the seed text writes it
    (a Python float32 network instead of TensorRT's float16), run by hand on one layer."""
    flayer = FLayerInfoMemo.instance().get(layer.name)
    assert flayer
    tensor_input = flayer.get_input("qkv")
    if tensor_input.shape[0] == 1:  # already in remove-padding mode
        return False
    with gwr.net_guard(layer.network):
        new_inputs = flayer.clone_inputs()
        # Step 1: create new inputs and replace the original arglist.
        input = gwr.Tensor(name="qkv_packed", dtype=gwr.float32, shape=(1, batch_size * in_len, hidden_size))
        new_inputs["qkv"] = input
        new_inputs["remove_padding"] = 1
        # the packed rows run together: the lengths tell the plugin where each sequence starts
        new_inputs["attention_mask"] = F.constant(np.full(batch_size, in_len, np.int64))
        # Step 2: create a new plugin instance.
        new_outs = gpt_attention(**new_inputs)
        # the readers of the context expect (batch, seq, hidden)
        new_outs = (F.reshape(new_outs[0], (batch_size, in_len, H)), new_outs[1])
        # Step 3: deprive all the users of the old plugin instance.
        flayer.replace_outputs_uses_with(layer.network, new_outs)
        # Step 4: remove the old plugin instance.
        layer.mark_as_removed()
    return True


def test_seed_remove_padding_flow_matches_the_original():
    net, bias = attention_net()
    original = net.clone()
    layer = net.get_tensor("y").get_parent().get_inputs()[0].get_parent()
    with gwr.net_guard(net):  # what a running manager does for its patterns
        assert _seed_rewrite(net, layer, B, S, W)
    assert memo.get(layer) is None  # removed: no FLayerInfo
    net.prune()
    assert not layer.is_alive
    plugins = [l for l in net.layers if l.op == "GPTAttention"]
    assert len(plugins) == 1 and plugins[0].attrs["remove_padding"] == 1
    nf = memo.get(plugins[0])
    assert nf.get_input("qkv").shape == (1, B * S, W) and nf.raw_inputs["remove_padding"] == 1
    with gwr.net_guard(net):
        assert not _seed_rewrite(net, plugins[0], B, S, W)  # converted: skipped
    x = np.random.default_rng(5).standard_normal((B, S, W)).astype(np.float32)
    want = gwr.Session(original, optimize="raw").run({"qkv": x})["y"]
    np.testing.assert_allclose(want, np.maximum(attention_ref(x, bias), 0), rtol=1e-4, atol=1e-5)
    got = gwr.Session(net, optimize="raw").run({"qkv": x, "qkv_packed": x.reshape(1, B * S, W)})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    net.close()
    original.close()


def test_replace_outputs_uses_with_one_argument_and_alias():
    net, _ = attention_net(with_bias=False)
    layer = net.get_tensor("y").get_parent().get_inputs()[0].get_parent()
    f = memo.get(layer)
    outs = gpt_attention(**f.clone_inputs())  # re-created by its recorded call
    assert memo.size(net) == 2
    f.replace_outputs_uses_with(list(outs))
    assert net.get_tensor("y").get_parent().get_inputs()[0] is outs[0]
    g = memo.get(outs[0].get_parent())
    with pytest.raises(gwr.Error):
        g.replace_output_uses_with(net, [outs[0]])  # one tensor for two outputs
    again = gpt_attention(**g.clone_inputs())
    g.replace_output_uses_with(net, again)
    assert net.get_tensor("y").get_parent().get_inputs()[0] is again[0]
    with gwr.Network() as other:
        with pytest.raises(gwr.InvalidArgumentError):
            g.replace_outputs_uses_with(other, again)
    with pytest.raises(TypeError):
        g.replace_outputs_uses_with()
    net.close()


def test_lifetime_after_prune_and_close():
    net, _ = attention_net()
    layer = net.get_tensor("y").get_parent().get_inputs()[0].get_parent()
    f = memo.get(layer)
    f.replace_outputs_uses_with(gpt_attention(**f.clone_inputs()))
    layer.mark_as_removed()
    with pytest.raises(gwr.LifetimeError, match="removed"):
        f.kind
    assert layer.is_removed and layer.is_alive  # until prune
    net.prune()
    assert not layer.is_alive
    for use in (lambda: f.kind, lambda: f.clone_inputs(), lambda: f.get_input("qkv"), lambda: f.outputs,
                lambda: f.layer):
        with pytest.raises(gwr.LifetimeError):
            use()
    assert "dead" in repr(f)
    net2, _ = attention_net()
    f2 = memo.get(net2.get_tensor("y").get_parent().get_inputs()[0].get_parent())
    net2.close()
    with pytest.raises(gwr.LifetimeError):
        f2.raw_inputs


# ---- record_signature ----

@record_signature
def scaled_act(x, scale=2.0, kind="relu", shift=None):
    """Scales x, then an activation; adds shift when given."""
    y = F.mul(x, scale)
    if shift is not None:
        y = F.add(y, shift)
    return F.relu(y) if kind == "relu" else F.sigmoid(y)


def test_record_signature_records_kind_args_and_defaults():
    with gwr.Network() as net:
        x = net.add_input("x", gwr.float32, (3,))
        y = scaled_act(x)
        f = memo.get(y.get_parent())
        assert f.kind == scaled_act.kind == "scaled_act"
        assert f.raw_inputs == {"x": x, "scale": 2.0, "kind": "relu", "shift": None}
        assert f.outputs == [y]
        assert scaled_act.__doc__.startswith("Scales")
        y2 = scaled_act(x, 0.5, kind="sigmoid")
        assert memo.get(y2.get_parent()).raw_inputs["kind"] == "sigmoid"
        # re-creation through clone_inputs
        args = memo.get(y.get_parent()).clone_inputs()
        args["scale"] = 3.0
        y3 = scaled_act(**args)
        f3 = memo.get(y3.get_parent())
        assert f3.raw_inputs["scale"] == 3.0 and f3.get_input("x") is x
        for t in (y, y2, y3):
            net.mark_output(t)
        xv = np.array([-1.0, 0.5, 2.0], np.float32)
        r = gwr.Session(net, optimize="raw").run({"x": xv})
        np.testing.assert_allclose(r[y.name], np.maximum(2 * xv, 0), rtol=1e-6)
        np.testing.assert_allclose(r[y2.name], 1 / (1 + np.exp(-0.5 * xv)), rtol=1e-6)
        np.testing.assert_allclose(r[y3.name], np.maximum(3 * xv, 0), rtol=1e-6)
        # through gwr.functional.call too
        y4 = F.call("scaled_act", x=x, scale=1.0)
        assert isinstance(y4, gwr.Tensor) and memo.get(y4.get_parent()).kind == "scaled_act"


class Boom(Exception):
    pass


@record_signature(kind="test_flayer.explodes")
def explodes(x, when=1):
    """Raises from inside the functional."""
    F.relu(x)
    if when:
        raise Boom("from inside")
    return F.relu(x)


@record_signature(kind="test_flayer.pair")
def pair(x):
    """Two outputs."""
    return F.relu(x), F.neg(x)


@record_signature(kind="test_flayer.nothing")
def returns_nothing(x):
    """Builds a layer and returns no Tensor."""
    F.relu(x)


def test_record_signature_errors():
    with gwr.Network() as net:
        x = net.add_input("x", gwr.float32, (3,))
        n = net.num_layers
        with pytest.raises(Boom, match="from inside"):
            explodes(x)
        assert net.num_live_layers == n  # what the failed call built is marked removed
        assert isinstance(explodes(x, when=0), gwr.Tensor)
        a, b = pair(x)
        f = memo.get(b.get_parent())
        assert f.kind == "test_flayer.pair" and f.outputs == [a, b]
        with pytest.raises(TypeError, match="must return"):
            returns_nothing(x)
        with pytest.raises(TypeError):
            scaled_act(x, scale=object())  # not representable
        with pytest.raises(TypeError):
            scaled_act()  # x missing: Python's own TypeError
        with pytest.raises(TypeError):
            scaled_act(x, bogus=1)
        with pytest.raises(gwr.StateError):
            scaled_act(1.0)  # no Tensor, no net_guard
    with pytest.raises(gwr.LifetimeError):
        scaled_act(x)  # the network is closed


def test_record_signature_registration_rules():
    def f(x):
        return F.relu(x)
    record_signature(kind="test_flayer.same")(f)
    record_signature(kind="test_flayer.same")(f)  # the same function again: fine

    def g(x):
        return F.relu(x)
    with pytest.raises(gwr.DuplicateError):
        record_signature(kind="test_flayer.same")(g)
    with pytest.raises(gwr.DuplicateError):
        record_signature(kind="gpt_attention")(g)  # gwr's own
    with pytest.raises(TypeError):
        record_signature(kind="test_flayer.varargs")(lambda *xs: xs[0])
    with pytest.raises(TypeError):
        record_signature(kind="test_flayer.baddefault")(lambda x, d=object(): x)
