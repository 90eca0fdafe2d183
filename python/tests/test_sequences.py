"""Sequence and optional outputs of a gwr.Session (issue 22, helper seq):
a sequence comes back as a list of arrays, an optional as its element or
None. The models are written with onnx.helper; the expected values are
numpy's split of the same input."""
import numpy as np
import pytest

import gwr

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402


def _model(nodes, outputs, opset=18):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])
    g = helper.make_graph(nodes, "g", [x], outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return gwr.onnx.load_bytes(m.SerializeToString())


def _seq_out(name):
    return helper.make_tensor_sequence_value_info(name, TensorProto.FLOAT, None)


def test_sequence_output_is_a_list():
    net = _model([helper.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0)], [_seq_out("s")])
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = gwr.Session(net, optimize="raw").run({"x": x})["s"]
    assert isinstance(out, list) and len(out) == 4
    for got, want in zip(out, x):
        np.testing.assert_array_equal(got, want)


def test_optional_output():
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    nodes = [helper.make_node("Optional", ["x"], ["o"]), helper.make_node("Optional", [], ["e"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, None))]
    net = _model(nodes, [helper.make_value_info("o", opt), helper.make_value_info("e", opt)])
    x = np.ones((4, 2), np.float32)
    out = gwr.Session(net, optimize="raw").run({"x": x})
    np.testing.assert_array_equal(out["o"], x)
    assert out["e"] is None
