"""Plugin kinds registered from Python (gwr.functional.register_plugin /
plugin): the shape function is Python, called wherever gwr infers types.

Registration is process-wide and permanent, so each test uses a domain of
its own."""
import pytest

import gwr
import gwr.functional as F


def widen(inputs, fields):
    """Output 0: the input widened k times along its last dim; output 1: an int64 scalar."""
    ((dt, shape),) = inputs
    return [(dt, shape[:-1] + (shape[-1] * fields.get("k", 1),)), (gwr.int64, ())]


def test_outputs_are_typed_by_the_python_function():
    F.register_plugin("test.typed", "Widen", 2, widen)
    net = gwr.Network()
    x = net.add_input("x", gwr.float16, ("batch", 4))
    a, b = F.plugin("test.typed", "Widen", [x], {"k": 3}, name="w")
    assert (a.dtype, a.shape) == (gwr.float16, ("batch", 12))
    assert (b.dtype, b.shape) == (gwr.int64, ())
    layer = a.get_parent()
    assert layer.name == "w" and layer.type == gwr.LayerType.PLUGIN
    assert (layer.plugin.plugin_namespace, layer.plugin.plugin_type, layer.plugin.fields) == ("test.typed", "Widen",
                                                                                               {"k": 3})
    # the generic op call finds the registered kind too
    (c, d) = F.op("Widen", [x], attrs={"k": 2}, domain="test.typed", noutputs=2)
    assert c.shape == ("batch", 8) and d.dtype == gwr.int64
    net.mark_output(a)
    net.verify()


def test_the_function_sees_absent_slots_and_unknown_shapes():
    seen = []

    def infer(inputs, fields):
        seen.append((inputs, fields))
        return [(gwr.float32, None)]

    F.register_plugin("test.slots", "Any", 1, infer)
    net = gwr.Network()
    x = net.add_input("x", gwr.int8, None)
    (y,) = F.plugin("test.slots", "Any", [x, None], {"s": "text", "v": [1.5, 2.0]})
    assert y.dtype == gwr.float32 and y.shape is None
    assert seen == [([(gwr.int8, None), None], {"s": "text", "v": [1.5, 2.0]})]


def test_errors_of_the_function_reach_the_caller():
    def raises_gwr(inputs, fields):
        raise gwr.ShapeError("the rows must match")

    def raises_value(inputs, fields):
        raise ValueError("bad k")

    F.register_plugin("test.errors", "Gwr", 1, raises_gwr)
    F.register_plugin("test.errors", "Value", 1, raises_value)
    F.register_plugin("test.errors", "Count", 1, lambda i, f: [(gwr.float32, (1,)), (gwr.float32, (1,))])
    F.register_plugin("test.errors", "Dtype", 1, lambda i, f: [("not-a-type", (1,))])
    F.register_plugin("test.errors", "Shape", 1, lambda i, f: [(gwr.float32, (-7,))])
    F.register_plugin("test.errors", "Pair", 1, lambda i, f: [gwr.float32])
    net = gwr.Network()
    x = net.add_input("x", gwr.float32, (2,))
    with pytest.raises(gwr.ShapeError, match="Gwr.*infer raised ShapeError: the rows must match"):
        F.plugin("test.errors", "Gwr", [x])
    with pytest.raises(gwr.InvalidArgumentError, match="infer raised ValueError: bad k"):
        F.plugin("test.errors", "Value", [x])
    with pytest.raises(gwr.InvalidArgumentError, match="list of 1 .dtype, shape. pairs"):
        F.plugin("test.errors", "Count", [x])
    with pytest.raises(gwr.InvalidArgumentError, match="unknown dtype"):
        F.plugin("test.errors", "Dtype", [x])
    with pytest.raises(gwr.InvalidArgumentError, match="shape"):
        F.plugin("test.errors", "Shape", [x])
    with pytest.raises(gwr.InvalidArgumentError, match="pair per output"):
        F.plugin("test.errors", "Pair", [x])
    # a refused layer leaves nothing behind
    assert len(net) == 0
    net.verify()


def test_registration_is_checked():
    F.register_plugin("test.reg", "Once", 1, widen)
    with pytest.raises(gwr.DuplicateError):
        F.register_plugin("test.reg", "Once", 1, widen)
    with pytest.raises(gwr.InvalidArgumentError):
        F.register_plugin("", "Relu", 1, widen)  # ONNX's domain is not a plugin's
    with pytest.raises(TypeError):
        F.register_plugin("test.reg", "NotCallable", 1, 42)
    with pytest.raises(ValueError):
        F.register_plugin("test.reg", "Negative", -1, widen)
    net = gwr.Network()
    x = net.add_input("x", gwr.float32, (2,))
    with pytest.raises(gwr.NotFoundError):
        F.plugin("test.reg", "NeverRegistered", [x])


def test_onnx_load_infers_through_python_with_the_gil_released(tmp_path):
    F.register_plugin("test.onnx", "Widen", 2, widen)
    net = gwr.Network("m")
    x = net.add_input("x", gwr.float32, ("batch", 5))
    a, _ = F.plugin("test.onnx", "Widen", [x], {"k": 2})
    net.mark_output(a)
    path = tmp_path / "widen.onnx"
    gwr.onnx.save(net, path)
    loaded = gwr.onnx.load(path, infer_shapes=True)
    (layer,) = loaded.layers
    out, extra = layer.get_outputs()
    assert (out.dtype, out.shape) == (gwr.float32, ("batch", 10))
    assert (extra.dtype, extra.shape) == (gwr.int64, ())
    # no kernel: a session says which layer
    with pytest.raises(gwr.Error, match="no kernel for test.onnx::Widen"):
        gwr.Session(loaded)


def test_a_python_plugin_in_a_rewrite():
    """A pattern replaces each Relu by a Python-registered plugin: the graph
    stays valid and typed (gwr cannot run it: no kernel)."""
    F.register_plugin("test.rewrite", "MyRelu", 1, lambda inputs, fields: [inputs[0]])

    class ToPlugin(gwr.PatternRewriter):
        def __init__(self):
            super().__init__("to_plugin", root_layer={"Relu"})

        def match(self, layer):
            return True

        def rewrite(self, layer):
            (y,) = F.plugin("test.rewrite", "MyRelu", layer.get_inputs(0))
            layer.get_outputs(0)[0].replace_all_uses_with(y)
            layer.mark_as_removed()

    net = gwr.Network()
    x = net.add_input("x", gwr.float32, (3, 4))
    net.mark_output(F.relu(F.relu(x) * 2.0))
    m = gwr.RewritePatternManager()
    m.add("to_plugin", ToPlugin())
    assert m.rewrite(net)["rewrites"] == 2
    assert [l.op for l in net.layers].count("MyRelu") == 2 and "Relu" not in [l.op for l in net.layers]
    assert net.outputs[0].shape == (3, 4) and net.outputs[0].dtype == gwr.float32
    net.verify()
