"""Writes a small model with an If whose branches hold two and one layers (for the browser test of
gwr view's bodies, tests/view/view_test.js): y = If(c, then: Relu(Neg(x)), else: Abs(x))."""
import sys

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
then_g = helper.make_graph(
    [helper.make_node("Neg", ["x"], ["t0"], name="then_neg"), helper.make_node("Relu", ["t0"], ["t1"], name="then_relu")],
    "then", [], [helper.make_tensor_value_info("t1", TensorProto.FLOAT, [2, 3])])
else_g = helper.make_graph(
    [helper.make_node("Abs", ["x"], ["e0"], name="else_abs")],
    "else", [], [helper.make_tensor_value_info("e0", TensorProto.FLOAT, [2, 3])])
g = helper.make_graph(
    [helper.make_node("Sigmoid", ["x"], ["s"], name="pre_sigmoid"),
     helper.make_node("If", ["c"], ["i"], name="the_if", then_branch=then_g, else_branch=else_g),
     helper.make_node("Add", ["i", "s"], ["y"], name="post_add")],
    "if_model", [x, c], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
