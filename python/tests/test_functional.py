"""gwr.functional: every builder's dtype and shape, and its numbers through a Session against
numpy computed independently."""

import math

import numpy as np
import pytest

import gwr
import gwr.functional as F

RNG = np.random.default_rng(15)


def run(net, outs, feeds):
    """Marks outs as outputs and runs the network as written."""
    for t in outs:
        net.mark_output(t)
    return gwr.Session(net, optimize="raw").run(feeds)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.fixture
def net():
    with gwr.Network("f") as n:
        yield n


def test_matmul_add_numbers(net):
    x = net.add_input("x", gwr.float32, (2, 3))
    wv, bv, xv = rand(3, 4), rand(4), rand(2, 3)
    y = F.add(F.matmul(x, F.constant(wv, network=net)), F.constant(bv, network=net))
    assert y.dtype == gwr.DataType.FLOAT32 and y.shape == (2, 4)
    out = run(net, [y], {"x": xv})[y.name]
    np.testing.assert_allclose(out, xv @ wv + bv, rtol=1e-5, atol=1e-6)


def test_elementwise_and_scalars(net):
    x = net.add_input("x", gwr.float32, (3, 1))
    yv = net.add_input("y", gwr.float32, (1, 4))
    outs = [F.sub(x, yv), F.mul(x, 2.0), F.div(1.0, F.add(F.abs(x), 1)), F.maximum(x, yv), F.minimum(x, yv),
            F.pow(F.abs(x), 2)]
    assert [o.shape for o in outs] == [(3, 4), (3, 1), (3, 1), (3, 4), (3, 4), (3, 1)]
    xv, yy = rand(3, 1), rand(1, 4)
    r = run(net, outs, {"x": xv, "y": yy})
    want = [xv - yy, xv * 2, 1 / (np.abs(xv) + 1), np.maximum(xv, yy), np.minimum(xv, yy), np.abs(xv) ** 2]
    for o, w in zip(outs, want):
        np.testing.assert_allclose(r[o.name], w, rtol=1e-5, atol=1e-6)


def test_scalar_takes_the_tensor_dtype(net):
    x = net.add_input("x", gwr.int64, (3,))
    y = F.add(x, 2)
    assert y.dtype == gwr.DataType.INT64
    r = run(net, [y], {"x": np.array([1, 2, 3], np.int64)})
    np.testing.assert_array_equal(r[y.name], [3, 4, 5])


def test_comparisons_and_where(net):
    x = net.add_input("x", gwr.float32, (5,))
    c = F.greater(x, 0.0)
    assert c.dtype == gwr.DataType.BOOL
    w = F.where(c, x, 0.0)
    e, lt = F.equal(x, 1.0), F.less(x, 0.0)
    xv = np.array([-2, 0, 1, 3, -1], np.float32)
    r = run(net, [c, w, e, lt], {"x": xv})
    np.testing.assert_array_equal(r[c.name], xv > 0)
    np.testing.assert_array_equal(r[w.name], np.where(xv > 0, xv, 0))
    np.testing.assert_array_equal(r[e.name], xv == 1)
    np.testing.assert_array_equal(r[lt.name], xv < 0)


def test_activations(net):
    x = net.add_input("x", gwr.float32, (4, 6))
    outs = {
        "relu": (F.relu(x), lambda v: np.maximum(v, 0)),
        "sigmoid": (F.sigmoid(x), lambda v: 1 / (1 + np.exp(-v))),
        "tanh": (F.tanh(x), np.tanh),
        "gelu": (F.gelu(x), lambda v: v * 0.5 * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))),
        "gelu_tanh": (F.gelu(x, approximate="tanh"),
                      lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))),
        "silu": (F.silu(x), lambda v: v / (1 + np.exp(-v))),
        "exp": (F.exp(x), np.exp),
        "leaky": (F.leaky_relu(x, 0.1), lambda v: np.where(v > 0, v, 0.1 * v)),
        "erf": (F.erf(x), np.vectorize(math.erf)),
    }
    xv = rand(4, 6)
    r = run(net, [t for t, _ in outs.values()], {"x": xv})
    for name, (t, ref) in outs.items():
        assert t.shape == (4, 6), name
        np.testing.assert_allclose(r[t.name], ref(xv.astype(np.float64)), rtol=1e-4, atol=1e-5, err_msg=name)


def test_softmax_and_layer_norm(net):
    x = net.add_input("x", gwr.float32, (3, 8))
    sv, bv = rand(8), rand(8)
    sm = F.softmax(x, axis=-1)
    ln = F.layer_norm(x, F.constant(sv, network=net), F.constant(bv, network=net), epsilon=1e-5)
    xv = rand(3, 8).astype(np.float64)
    r = run(net, [sm, ln], {"x": xv.astype(np.float32)})
    e = np.exp(xv - xv.max(-1, keepdims=True))
    np.testing.assert_allclose(r[sm.name], e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    mu, var = xv.mean(-1, keepdims=True), xv.var(-1, keepdims=True)
    np.testing.assert_allclose(r[ln.name], (xv - mu) / np.sqrt(var + 1e-5) * sv + bv, rtol=1e-4, atol=1e-5)


def test_gemm(net):
    a = net.add_input("a", gwr.float32, (4, 3))
    bv, cv = rand(5, 4), rand(5)
    y = F.gemm(a, F.constant(bv, network=net), F.constant(cv, network=net), alpha=0.5, beta=2.0,
               trans_a=True, trans_b=True)
    assert y.shape == (3, 5)
    av = rand(4, 3)
    np.testing.assert_allclose(run(net, [y], {"a": av})[y.name], 0.5 * av.T @ bv.T + 2 * cv, rtol=1e-5, atol=1e-5)


def test_shape_builders(net):
    x = net.add_input("x", gwr.float32, (2, 3, 4))
    rs = F.reshape(x, (0, -1))
    tr = F.transpose(x, (2, 0, 1))
    tr_default = F.transpose(x)
    cc = F.concat([x, x], axis=1)
    parts = F.split(x, 2, [1, 3])
    halves = F.split(x, 0, 2)
    sl = F.slice(x, [1], [3], axes=[2])
    un = F.unsqueeze(x, 0)
    sq = F.squeeze(un, [0])
    ga = F.gather(x, [2, 0], axis=1)
    ca = F.cast(x, "int64")
    rsum, rmean, rmax = F.reduce_sum(x, [1]), F.reduce_mean(x, 2, keepdims=False), F.reduce_max(x)
    shapes = {rs: (2, 12), tr: (4, 2, 3), tr_default: (4, 3, 2), cc: (2, 6, 4), parts[0]: (2, 3, 1),
              parts[1]: (2, 3, 3), halves[1]: (1, 3, 4), sl: (2, 3, 2), un: (1, 2, 3, 4), sq: (2, 3, 4),
              ga: (2, 2, 4), ca: (2, 3, 4), rsum: (2, 1, 4), rmean: (2, 3), rmax: (1, 1, 1)}
    for t, s in shapes.items():
        assert t.shape == s, t
    assert ca.dtype == gwr.DataType.INT64
    xv = rand(2, 3, 4) * 4
    r = run(net, list(shapes), {"x": xv})
    want = {rs: xv.reshape(2, 12), tr: xv.transpose(2, 0, 1), tr_default: xv.transpose(), cc: np.concatenate([xv, xv], 1),
            parts[0]: xv[:, :, :1], parts[1]: xv[:, :, 1:], halves[1]: xv[1:], sl: xv[:, :, 1:3],
            un: xv[None], sq: xv, ga: xv[:, [2, 0]], ca: np.trunc(xv).astype(np.int64),
            rsum: xv.sum(1, keepdims=True), rmean: xv.mean(2), rmax: xv.max(keepdims=True)}
    for t, w in want.items():
        np.testing.assert_allclose(r[t.name], w, rtol=1e-5, atol=1e-5, err_msg=t.name)


def test_conv(net):
    x = net.add_input("x", gwr.float32, (1, 2, 5, 5))
    wv = rand(3, 2, 3, 3)
    y = F.conv(x, F.constant(wv, network=net), pads=[1, 1, 1, 1])
    assert y.shape == (1, 3, 5, 5)
    xv = rand(1, 2, 5, 5)
    xp = np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 3, 5, 5))
    for o in range(3):
        for i in range(5):
            for j in range(5):
                want[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * wv[o]).sum()
    np.testing.assert_allclose(run(net, [y], {"x": xv})[y.name], want, rtol=1e-4, atol=1e-5)


def test_op_generic_and_plugin(net):
    x = net.add_input("x", gwr.float32, (2, 3))
    (y,) = F.op("LeakyRelu", [x], {"alpha": 0.5})
    xv = rand(2, 3)
    np.testing.assert_allclose(run(net, [y], {"x": xv})[y.name], np.where(xv > 0, xv, 0.5 * xv), rtol=1e-6)
    outs = F.op("MyPlugin", [x, None], {"k": 3, "tag": "z", "f": [1.5, 2.5]}, domain="acme", noutputs=2)
    assert len(outs) == 2 and outs[0].dtype == gwr.DataType.FLOAT32
    pl = outs[0].get_parent()
    assert pl.domain == "acme" and pl.op == "MyPlugin"
    assert pl.attrs["k"] == 3 and pl.attrs["tag"] == "z" and list(pl.attrs["f"]) == [1.5, 2.5]
    # a plugin without a kernel: planning names it
    with pytest.raises(gwr.Error, match="MyPlugin"):
        gwr.Session(net, optimize="raw")


def test_constants_of_every_dtype_round_trip(net):
    values = [
        np.array([[1.5, -2.25]], np.float32), np.array([1, -2, 3], np.int64), np.array([7, -8], np.int32),
        np.array([1, 255], np.uint8), np.array([-128, 5], np.int8), np.array([True, False, True]),
        np.array([0.5, -1.0, 65504.0], np.float16), np.array([1e300, -2.0], np.float64),
        np.array(3.5, np.float32),
    ]
    ts = [F.constant(v, network=net) for v in values]
    for t, v in zip(ts, values):
        assert t.shape == v.shape and t.dtype == gwr._gwr._f_dtype(v.dtype)
    # an Identity each: a constant alone is no output a session can return in every mode
    outs = [F.op("Identity", [t])[0] for t in ts]
    r = run(net, outs, {})
    for o, v in zip(outs, values):
        assert r[o.name].dtype == v.dtype
        np.testing.assert_array_equal(r[o.name], v)


def test_constant_with_dtype_lists_and_strings(net):
    a = F.constant([[1, 2], [3, 4]], dtype=gwr.float16, network=net)
    assert a.dtype == gwr.DataType.FLOAT16 and a.shape == (2, 2)
    b = F.constant(2.5, network=net)  # Python float -> float32
    assert b.dtype == gwr.DataType.FLOAT32 and b.shape == ()
    s = F.constant(["ab", "cd"], network=net)
    assert s.dtype == gwr.DataType.STRING and s.shape == (2,)
    with gwr.net_guard(net):
        c = F.constant(np.arange(3, dtype=np.int32))  # the current network
    assert c.network is net
    r = run(net, [F.op("Identity", [t])[0] for t in (a, s)], {})
    vals = list(r.values())
    np.testing.assert_array_equal(vals[0], np.array([[1, 2], [3, 4]], np.float16))
    assert list(vals[1]) == ["ab", "cd"]


def test_mismatched_shapes_raise_shape_error_with_the_c_message(net):
    a = net.add_input("a", gwr.float32, (2, 3))
    b = net.add_input("b", gwr.float32, (4, 5))
    with pytest.raises(gwr.ShapeError) as e:
        F.matmul(a, b)
    assert e.value.status == "GWR_ERR_SHAPE"
    assert str(e.value) and str(e.value) == e.value.message
    assert "3" in str(e.value) and "4" in str(e.value)
    with pytest.raises(gwr.ShapeError):
        F.add(a, b)
    with pytest.raises(gwr.ShapeError):
        F.reshape(a, (7,))


def test_bad_inputs(net):
    a = net.add_input("a", gwr.float32, (2, 3))
    with pytest.raises(TypeError):
        F.add(a, "x")
    with pytest.raises(TypeError):
        F.relu(np.zeros(3))
    with pytest.raises(TypeError):
        F.reshape(a, ["a", "b"])
    with pytest.raises(TypeError):
        F.op("Relu", [a], {"bad": object()})
    with pytest.raises(TypeError):
        F.constant(np.array([object()]), network=net)
    with gwr.Network("other") as other:
        o = other.add_input("o", gwr.float32, (2, 3))
        with pytest.raises(gwr.InvalidArgumentError):
            F.add(a, o)


def test_no_network_is_a_state_error():
    with pytest.raises(gwr.StateError):
        F.constant([1.0, 2.0])


def test_wrong_dtype_is_a_dtype_error():
    with gwr.Network() as net:
        a = net.add_input("a", gwr.float32, (2,))
        b = net.add_input("b", gwr.int64, (2,))
        with pytest.raises(gwr.DtypeError, match="float32.*int64"):
            F.add(a, b)
        with pytest.raises(gwr.DtypeError, match="bool"):
            F.where(a, a, a)
        with pytest.raises(ValueError):
            F.cast(a, "nope")
        with pytest.raises(ValueError):
            F.concat([], 0)
        with pytest.raises(gwr.InvalidArgumentError, match="approximate"):
            F.gelu(a, "bad")


def test_tensor_of_a_closed_network():
    net = gwr.Network()
    a = net.add_input("a", gwr.float32, (2,))
    net.close()
    with pytest.raises(gwr.LifetimeError):
        F.relu(a)


def test_build_gpt_two_ways_agree():
    """The decoder generator: 26 layers a block + 3, symbolic batch and seq; the
    plugin form and the plain-ONNX form compute the same on random tokens."""
    a, b = gwr.Network("plugin"), gwr.Network("onnx")
    ya = F.build_gpt(a, 2, hidden=32, heads=4, seed=7)
    F.build_gpt(b, 2, hidden=32, heads=4, use_plugin=False, seed=7)
    assert len(a) == 2 * 26 + 3 and ya.name == "y" and a.outputs == [ya]
    assert ya.shape == ("batch", "seq", 32) and a.inputs[0].shape == ("batch", "seq", 32)
    assert sum(l.op == "GPTAttention" for l in a.layers) == 2
    assert not any(l.op == "GPTAttention" for l in b.layers)
    x = np.random.default_rng(0).standard_normal((2, 5, 32)).astype(np.float32)
    ra = gwr.Session(a, optimize="raw").run({"x": x})["y"]
    rb = gwr.Session(b, optimize="raw").run({"x": x})["y"]
    assert np.isfinite(ra).all() and ra.shape == (2, 5, 32)
    np.testing.assert_allclose(ra, rb, rtol=1e-4, atol=1e-5)
    a.verify()
    with pytest.raises(gwr.InvalidArgumentError, match="multiple of heads"):
        F.build_gpt(gwr.Network(), 1, hidden=30, heads=4)
    with pytest.raises(gwr.LifetimeError):
        F.build_gpt(a.close() or a, 1)
