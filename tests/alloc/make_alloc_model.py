#!/usr/bin/python3
"""make_alloc_model.py DIR - writes DIR/model.onnx and its external data
DIR/model.bin for tests/alloc/test_alloc_fail.c: a small model with an If
whose branches hold a Loop (subgraphs two deep), weights kept outside the
model file, and a MatMul/Add/Relu chain, so that one load exercises the
importer's subgraph, external-data and weight paths, and one session the
executor's control flow. Run with Debian's /usr/bin/python3 (python3-onnx).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def vi(name, et, shape):
    return helper.make_tensor_value_info(name, et, shape)


w = np.arange(16, dtype=np.float32).reshape(4, 4) / 16.0
b = np.linspace(-1.0, 1.0, 4).astype(np.float32)
with open(os.path.join(out, "model.bin"), "wb") as f:
    f.write(w.tobytes())
    f.write(b.tobytes())


def external(name, arr, offset):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=arr.shape,
                    data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "model.bin"), ("offset", offset), ("length", arr.nbytes)):
        e = t.external_data.add()
        e.key, e.value = k, str(v)
    return t


body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Add", ["acc_in", "B"], ["acc_out"], name="body_add")],
    "body",
    [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc_in", TensorProto.FLOAT, [2, 4])],
    [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [2, 4])])
then_g = helper.make_graph(
    [helper.make_node("Loop", ["n", "", "h"], ["t_out"], name="loop", body=body)],
    "then_g", [], [vi("t_out", TensorProto.FLOAT, [2, 4])])
else_g = helper.make_graph(
    [helper.make_node("Neg", ["h"], ["e_out"], name="neg")],
    "else_g", [], [vi("e_out", TensorProto.FLOAT, [2, 4])])
nodes = [
    helper.make_node("MatMul", ["x", "W"], ["mm"], name="mm"),
    helper.make_node("Add", ["mm", "B"], ["pre"], name="bias"),
    helper.make_node("Relu", ["pre"], ["h"], name="relu"),
    helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g),
]
graph = helper.make_graph(
    nodes, "alloc",
    [vi("x", TensorProto.FLOAT, [2, 4]), vi("cond", TensorProto.BOOL, []), vi("n", TensorProto.INT64, [])],
    [vi("y", TensorProto.FLOAT, [2, 4])],
    [external("W", w, 0), external("B", b, w.nbytes)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
with open(os.path.join(out, "model.onnx"), "wb") as f:
    f.write(model.SerializeToString())
onnx.checker.check_model(os.path.join(out, "model.onnx"))
