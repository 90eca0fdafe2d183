"""gwr.quantize and gwr.precision: their arguments, the refusals of the C
library raised as gwr's exceptions with the C message (the network left
unchanged), and calibration given as a directory (.npz files written by
numpy.savez / savez_compressed, ONNX test-data directories written with
onnx.numpy_helper) or as a list of dicts of numpy arrays. The modes'
numerics are tested with the modes (tests/cli, tests/unit)."""

import os

import numpy as np
import pytest

import gwr
import gwr.functional as F
import gwr.onnx


def mm(name="mm"):
    """y = x [1, 4] float32 @ W [4, 3]."""
    net = gwr.Network(name)
    x = net.add_input("x", gwr.float32, (1, 4))
    w = (np.arange(12, dtype=np.float32).reshape(4, 3) - 6) / 7
    y = F.matmul(x, F.constant(w, network=net))
    y.name = "y"
    net.mark_output(y)
    return net


def quantized():
    """x -> QuantizeLinear -> DequantizeLinear: a model already quantized."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4])
    sc = numpy_helper.from_array(np.array(0.1, np.float32), "sc")
    zp = numpy_helper.from_array(np.array(128, np.uint8), "zp")
    g = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "sc", "zp"], ["q"]),
                           helper.make_node("DequantizeLinear", ["q", "sc", "zp"], ["y"])],
                          "q", [f("x")], [f("y")], [sc, zp])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return gwr.onnx.load_bytes(m.SerializeToString())


def x_sample(seed=0):
    return np.random.default_rng(seed).standard_normal((1, 4)).astype(np.float32)


# ---- arguments ------------------------------------------------------------------

@pytest.mark.parametrize("kw, words", [
    (dict(mode="fast"), "mode must be 'dynamic', 'static' or 'weight-only', not 'fast'"),
    (dict(target="trt"), "target must be"),
    (dict(format="qlinear"), "format must be 'qdq' or 'qoperator'"),
    (dict(method="kl"), "method must be"),
    (dict(activations="int4"), "activations must be 'uint8' or 'int8'"),
    (dict(algo="awq"), "algo must be 'rtn' or 'gptq'"),
    (dict(bits=0), "bits must be a positive int"),
    (dict(block_size=-32), "block_size must be a positive int"),
    (dict(percentile=-1.0), "percentile must be a positive number"),
    (dict(threads=0), "threads must be from 1 to"),
])
def test_quantize_bad_arguments(kw, words):
    net = mm()
    with pytest.raises(gwr.InvalidArgumentError, match=words) as e:
        gwr.quantize(net, **kw)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("kw, words", [
    (dict(exclude=5), "quantize: exclude must be a str or a list of str"),
    (dict(calibration=5), "calibration must be a gwr.Calib, a directory"),
    (dict(calibration=[5]), "calibration sample 0 must be a dict"),
    (dict(calibration=[{1: x_sample()}]), "input names must be str"),
    (dict(calibration=[{"x": np.array(["a", "b"])}]), "numpy dtype"),
    (dict(bits="4"), ""),
])
def test_quantize_argument_types(kw, words):
    with pytest.raises(TypeError, match=words):
        gwr.quantize(mm(), **kw)


def test_quantize_needs_a_network():
    with pytest.raises(TypeError):
        gwr.quantize("model.onnx")
    net = mm()
    net.close()
    with pytest.raises(gwr.LifetimeError):
        gwr.quantize(net)


# ---- the C library's refusals: raised with its message, the network unchanged ----

@pytest.mark.parametrize("kw, cls, words", [
    (dict(mode="weight-only", bits=3), gwr.InvalidArgumentError, "bits must be 4 or 8, not 3"),
    (dict(bits=4), gwr.InvalidArgumentError, "only weight-only quantization takes 4 bits"),
    (dict(mode="weight-only", block_size=24), gwr.InvalidArgumentError,
     "block size must be a power of two of at least 16, not 24"),
    (dict(smoothquant=2.0), gwr.InvalidArgumentError, r"SmoothQuant alpha must be in \(0, 1\]"),
    (dict(mode="static", percentile=40.0), gwr.InvalidArgumentError, "percentile must be in"),
    (dict(calibration=[]), gwr.InvalidArgumentError, "no calibration samples"),
    (dict(calibration=[{"x": np.zeros((1, 4), np.int32)}]), gwr.InvalidArgumentError,
     "input 'x': dtype int32, expected float32"),
    (dict(calibration=[{"x": x_sample(), "foo": x_sample()}]), gwr.InvalidArgumentError,
     "the model has no input 'foo'"),
    (dict(calibration=[{"x": np.zeros((2, 4), np.float32)}]), gwr.InvalidArgumentError,
     "input 'x': dim 0 is 2, expected 1"),
    (dict(calibration=[{"x": x_sample()}, {}]), gwr.InvalidArgumentError, "sample 1: input 'x' is missing"),
])
def test_quantize_refusals(kw, cls, words):
    net = mm()
    before = gwr.onnx.save_bytes(net)
    with pytest.raises(cls, match=words) as e:
        gwr.quantize(net, **kw)
    assert e.value.message == str(e.value) and "\n" not in str(e.value)
    assert gwr.onnx.save_bytes(net) == before


def test_quantize_refuses_a_quantized_model():
    net = quantized()
    before = gwr.onnx.save_bytes(net)
    with pytest.raises(gwr.UnsupportedError, match="the model is already quantized"):
        gwr.quantize(net, calibration=[{"x": x_sample()}])
    assert gwr.onnx.save_bytes(net) == before


def test_calibration_samples_that_fit_are_taken():
    # past the samples (which fit: arrays, and Python lists cast to the
    # input's dtype) to the refusal of 4-bit dynamic quantization
    for calib in ([{"x": x_sample(0)}, {"x": x_sample(1)}], ({"x": [[1, 2, 3, 4]]},)):
        with pytest.raises(gwr.InvalidArgumentError, match="4 bits") as e:
            gwr.quantize(mm(), calibration=calib, bits=4)
        assert "calibration" not in str(e.value)


# ---- calibration directories ------------------------------------------------------

def test_calibration_directory_npz(tmp_path):
    np.savez(tmp_path / "s1.npz", x=x_sample(1))
    np.savez_compressed(tmp_path / "s2.npz", x=x_sample(2))
    for path in (tmp_path, str(tmp_path)):
        with pytest.raises(gwr.InvalidArgumentError, match="4 bits"):
            gwr.quantize(mm(), calibration=path, bits=4)


def test_calibration_directory_test_data(tmp_path):
    from onnx import numpy_helper
    for k in range(3):
        d = tmp_path / f"test_data_set_{k}"
        d.mkdir()
        (d / "input_0.pb").write_bytes(numpy_helper.from_array(x_sample(k), "x").SerializeToString())
        (d / "output_0.pb").write_bytes(numpy_helper.from_array(np.zeros((1, 3), np.float32)).SerializeToString())
    with pytest.raises(gwr.InvalidArgumentError, match="4 bits"):
        gwr.quantize(mm(), calibration=tmp_path, bits=4)


def test_calibration_directory_refusals(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(gwr.InvalidArgumentError, match="no calibration samples"):
        gwr.quantize(mm(), calibration=empty)
    with pytest.raises(gwr.FileError, match="cannot open the directory"):
        gwr.quantize(mm(), calibration=tmp_path / "nope")
    bad = tmp_path / "bad"
    bad.mkdir()
    np.savez(bad / "s1.npz", x=np.zeros((1, 4), np.int32))
    with pytest.raises(gwr.InvalidArgumentError) as e:
        gwr.quantize(mm(), calibration=bad)
    assert str(e.value) == f"{bad}/s1.npz: input 'x' is int32, the model takes float32"
    np.savez(bad / "s1.npz", x=x_sample(), foo=x_sample())
    with pytest.raises(gwr.InvalidArgumentError, match="s1.npz: no input named 'foo' in the model"):
        gwr.quantize(mm(), calibration=bad)
    np.save(bad / "a.npy", x_sample())
    os.replace(bad / "a.npy", bad / "s1.npz")  # a lone .npy is no zip
    with pytest.raises(gwr.ParseError, match="s1.npz: not a zip file"):
        gwr.quantize(mm(), calibration=bad)


def test_quantize_dynamic_report():
    """Once dynamic quantization is written (dynamic.c): the report dict."""
    net = mm()
    try:
        rep = gwr.quantize(net, exclude=["Relu"], threads=2)
    except gwr.UnsupportedError as e:
        if "not implemented" in str(e):
            pytest.skip(str(e))
        raise
    assert set(rep) == {"layers", "weight_bytes_before", "weight_bytes_after"}
    assert rep["weight_bytes_before"] == 48
    for e in rep["layers"]:
        assert set(e) == {"layer", "op", "what", "rel_error", "cosine"}


# ---- precision ----------------------------------------------------------------------

@pytest.mark.parametrize("kw, cls, words", [
    (dict(to="fp8"), gwr.InvalidArgumentError, "to must be 'fp16' or 'bf16', not 'fp8'"),
    (dict(auto=-1.0), gwr.InvalidArgumentError, "auto must be a positive number"),
    (dict(threads=0), gwr.InvalidArgumentError, "threads must be from 1 to"),
    (dict(keep=5), TypeError, "precision: keep must be a str or a list of str"),
    (dict(keep_nodes=[1]), TypeError, ""),
    (dict(calibration=[3]), TypeError, "precision: calibration sample 0 must be a dict"),
])
def test_precision_arguments(kw, cls, words):
    net = mm()
    before = gwr.onnx.save_bytes(net)
    with pytest.raises(cls, match=words):
        gwr.precision(net, **kw)
    assert gwr.onnx.save_bytes(net) == before


def test_precision_report():
    """Once the conversion is written (precision.c): the report dict."""
    net = mm()
    try:
        rep = gwr.precision(net, to="float16", keep="Softmax", keep_io=True)
    except gwr.UnsupportedError as e:
        if "not implemented" in str(e):
            pytest.skip(str(e))
        raise
    assert set(rep) == {"layers", "weight_bytes_before", "weight_bytes_after"}


# ---- gwr.Calib: samples loaded or made once, used by several calls ------------------

def test_calib_object(tmp_path):
    net = mm()
    c = gwr.Calib(net, [{"x": x_sample(0)}, {"x": x_sample(1)}])
    assert len(c) == 2 and c.names(0) == ["x"] and c.names(-1) == ["x"] and "2 samples" in repr(c)
    with pytest.raises(IndexError):
        c.names(2)
    np.savez(tmp_path / "s1.npz", x=x_sample(3))
    d = gwr.Calib(net, tmp_path)
    assert len(d) == 1
    r = gwr.Calib.random(net, count=3, seed=5)
    assert len(r) == 3 and r.names(0) == ["x"]
    for calib in (c, d, r):
        # taken as given (past the samples to the 4-bit refusal), and reusable
        for _ in range(2):
            with pytest.raises(gwr.InvalidArgumentError, match="4 bits"):
                gwr.quantize(net, calibration=calib, bits=4)


def test_calib_refusals(tmp_path):
    net = mm()
    with pytest.raises(gwr.InvalidArgumentError, match="Calib: sample 0: input 'x': dtype int32, expected float32"):
        gwr.Calib(net, [{"x": np.zeros((1, 4), np.int32)}])
    with pytest.raises(gwr.InvalidArgumentError, match="Calib: no calibration samples"):
        gwr.Calib(net, [])
    with pytest.raises(gwr.InvalidArgumentError, match="no calibration samples"):
        gwr.Calib(net, tmp_path)
    with pytest.raises(TypeError):
        gwr.Calib(net, None)
    with pytest.raises(gwr.InvalidArgumentError, match="count must be at least 1"):
        gwr.Calib.random(net, count=0)
    # a set made for another network is checked when used
    other = gwr.Network("other")
    y = F.relu(other.add_input("z", gwr.float32, (2,)))
    other.mark_output(y)
    c = gwr.Calib.random(other, count=1)
    with pytest.raises(gwr.InvalidArgumentError, match="the model has no input 'z'"):
        gwr.quantize(net, calibration=c)
