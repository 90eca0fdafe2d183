#!/usr/bin/python3
"""make_scale_model.py OUT: a model of the constant arithmetic exporters
leave around linear layers (numpy, seed 7), for the scale- and Pad-folding
passes (fold_scale_into_conv, fold_scale_into_gemm, fold_scalar_around_matmul,
fold_pad_into_conv). Opset 13, x [1, 8, 16, 16]:

  four Conv blocks, each Conv (constant W, B) -> Mul -> Add -> Relu, with the
  per-channel Mul and Add in one broadcast form per block: [] (scalar),
  [1] (scalar), [8, 1, 1], [1, 8, 1, 1]; the third block's Conv reads a
  zero Pad of H and W (opset-13 pads input) instead of its own pads, and
  its Add is a Sub; a Div by a [1, 8, 1, 1] constant after the fourth;
  then AveragePool (count_include_pad 1) of a zero Pad, Flatten, a Mul by
  a scalar 0.125 before MatMul (constant W [512, 32]), a per-column Mul
  [32] after it, Gemm (constant B, C) -> Mul [32] -> Add [1, 32].

Needs python3-onnx and numpy (Debian's /usr/bin/python3).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
nodes, inits = [], []


def const(arr):
    nm = f"c{len(inits)}"
    inits.append(numpy_helper.from_array(np.asarray(arr), nm))
    return nm


def op(t, ins, **attrs):
    out = f"{t.lower()}{len(nodes)}"
    nodes.append(helper.make_node(t, ins, [out], name=out, **attrs))
    return out


def f32(*shape, lo=-0.5, hi=0.5):
    return rng.uniform(lo, hi, shape).astype(np.float32)


C = 8
forms = [(), (1,), (C, 1, 1), (1, C, 1, 1)]
h = "x"
for i, form in enumerate(forms):
    n = int(np.prod(form)) if form else 1
    pads = [1, 1, 1, 1]
    src = h
    if i == 2:
        src = op("Pad", [h, const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
        pads = [0, 0, 0, 0]
    y = op("Conv", [src, const(f32(C, C, 3, 3)), const(f32(C))], kernel_shape=[3, 3], pads=pads)
    y = op("Mul", [y, const(f32(*form, lo=0.5, hi=1.5).reshape(form) if form else np.float32(1.25))])
    k = const(f32(*form).reshape(form) if form else np.float32(0.1))
    y = op("Sub" if i == 2 else "Add", [y, k])
    if i == 3:
        y = op("Div", [y, const(f32(1, C, 1, 1, lo=0.5, hi=2))])
    h = op("Relu", [y])
p = op("Pad", [h, const(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
h = op("AveragePool", [p], kernel_shape=[3, 3], strides=[2, 2], count_include_pad=1)
h = op("Flatten", [h])  # [1, 8 * 8 * 8]
h = op("Mul", [h, const(np.float32(0.125))])
h = op("MatMul", [h, const(f32(512, 32, lo=-0.1, hi=0.1))])
h = op("Mul", [h, const(f32(32, lo=0.5, hi=1.5))])
h = op("Gemm", [h, const(f32(32, 16)), const(f32(16))], alpha=0.5, beta=0.25)
h = op("Mul", [h, const(f32(16, lo=0.5, hi=1.5))])
y = op("Add", [h, const(f32(1, 16))])
g = helper.make_graph(nodes, "scale_forms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 16, 16])],
                      [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 16])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gwr-bench")
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1] if len(sys.argv) > 1 else "scale_forms.onnx")
