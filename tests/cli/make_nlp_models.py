#!/usr/bin/env python3
"""Writes small ONNX models, one per transformer fusion of
src/passes/fuse_transformer.c (and fuse_gelu's ort forms), into DIR, as
exporters write them; tests/cli/test_optimize_ort.sh optimizes each with
`gwr optimize --target ort` and runs both on onnxruntime.

Usage: make_nlp_models.py DIR. Prints one line per model: NAME OPS..., the
ops the optimized model must hold (domain::op for com.microsoft)."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save, shape_inference

rng = np.random.default_rng(7)
F = TensorProto.FLOAT


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name)


def model(nodes, inputs, outputs, inits, opset=17):
    """The outputs' shapes from onnx's shape inference, as exporters write them."""
    def make(outs):
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs], outs, inits)
        m = helper.make_model_gen_version(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m
    known = {v.name: v for v in shape_inference.infer_shapes(make([])).graph.value_info}
    return make([known[n] for n in outputs])


def erf_gelu(x, y, p):
    """The exporters' 0.5 x (1 + erf(x / sqrt2))."""
    return [helper.make_node("Div", [x, p + "sq2"], [p + "d"]), helper.make_node("Erf", [p + "d"], [p + "e"]),
            helper.make_node("Add", [p + "e", p + "one"], [p + "a"]), helper.make_node("Mul", [x, p + "a"], [p + "m"]),
            helper.make_node("Mul", [p + "m", p + "half"], [y])], \
           [const(p + "sq2", 1.4142135), const(p + "one", 1.0), const(p + "half", 0.5)]


def tanh_gelu(x, y, p):
    n = [helper.make_node("Pow", [x, p + "three"], [p + "c"]), helper.make_node("Mul", [p + "c", p + "k"], [p + "ck"]),
         helper.make_node("Add", [x, p + "ck"], [p + "in"]), helper.make_node("Mul", [p + "in", p + "s"], [p + "u"]),
         helper.make_node("Tanh", [p + "u"], [p + "t"]), helper.make_node("Add", [p + "t", p + "one"], [p + "a"]),
         helper.make_node("Mul", [x, p + "a"], [p + "m"]), helper.make_node("Mul", [p + "m", p + "half"], [y])]
    return n, [const(p + "three", 3.0), const(p + "k", 0.044715), const(p + "s", 0.7978845608), const(p + "one", 1.0),
               const(p + "half", 0.5)]


def ln(x, y, h, p):
    return helper.make_node("LayerNormalization", [x, p + "g", p + "b"], [y], axis=-1, epsilon=1e-5), \
        [const(p + "g", rng.uniform(0.5, 1.5, h)), const(p + "b", rng.uniform(-0.5, 0.5, h))]


def skip_ln_shared():
    """A pre-LN block: s = x + r feeds the LayerNormalization and the next residual Add."""
    h = 8
    n0, i0 = ln("s", "y", h, "ln")
    nodes = [helper.make_node("Add", ["x", "r"], ["s"]), n0, helper.make_node("MatMul", ["y", "w"], ["f"]),
             helper.make_node("Add", ["s", "f"], ["z"])]
    return model(nodes, [("x", [2, 4, h]), ("r", [2, 4, h])], ["z"], i0 + [const("w", rng.uniform(-1, 1, (h, h)))])


def skip_ln_bias():
    """LayerNormalization(x + (MatMul(r, W) + bias)), the sum read once."""
    h = 8
    n0, i0 = ln("s", "y", h, "ln")
    nodes = [helper.make_node("MatMul", ["r", "w"], ["m"]), helper.make_node("Add", ["m", "bias"], ["mb"]),
             helper.make_node("Add", ["x", "mb"], ["s"]), n0]
    return model(nodes, [("x", [2, 4, h]), ("r", [2, 4, h])], ["y"],
                 i0 + [const("w", rng.uniform(-1, 1, (h, h))), const("bias", rng.uniform(-1, 1, h))])


def skip_ln_bias_shared():
    """LayerNormalization((x + r) + bias), the sum also read by the next residual Add: output 3 holds the bias too."""
    h = 8
    n0, i0 = ln("s", "y", h, "ln")
    nodes = [helper.make_node("Add", ["x", "r"], ["xr"]), helper.make_node("Add", ["xr", "bias"], ["s"]), n0,
             helper.make_node("Add", ["s", "y"], ["z"])]
    return model(nodes, [("x", [2, 4, h]), ("r", [2, 4, h])], ["z"], i0 + [const("bias", rng.uniform(-1, 1, h))])


def skip_ln_bcast():
    """x [2, 4, H] + skip [4, H] (onnxruntime's broadcast skip), the sum also a network output."""
    h = 8
    n0, i0 = ln("s", "y", h, "ln")
    return model([helper.make_node("Add", ["x", "r"], ["s"]), n0], [("x", [2, 4, h]), ("r", [4, h])], ["y", "s"], i0)


def bias_gelu():
    h = 8
    g, gi = erf_gelu("mb", "y", "ge")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "bias"], ["mb"])] + g
    return model(nodes, [("x", [2, 3, h])], ["y"],
                 gi + [const("w", rng.uniform(-1, 1, (h, h))), const("bias", rng.uniform(-1, 1, h))])


def fast_gelu_bias():
    h = 8
    g, gi = tanh_gelu("xb", "y", "ge")
    nodes = [helper.make_node("Add", ["x", "bias"], ["xb"])] + g
    return model(nodes, [("x", [2, 3, h])], ["y"], gi + [const("bias", rng.uniform(-1, 1, h))])


def gelu_plain():
    g, gi = erf_gelu("x", "y", "ge")
    return model(g, [("x", [2, 3, 8])], ["y"], gi)


def matmul_scale():
    """Scores of scaled-dot-product attention: q @ k^T * 0.125 (rank 4)."""
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["q", "kt"], ["s"]),
             helper.make_node("Mul", ["s", "scale"], ["y"])]
    return model(nodes, [("q", [2, 2, 4, 8]), ("k", [2, 2, 4, 8])], ["y"], [const("scale", 0.125)])


def gemm_transpose():
    nodes = [helper.make_node("Transpose", ["a"], ["at"], perm=[1, 0]),
             helper.make_node("Gemm", ["at", "w", "c"], ["y"], transB=1)]
    return model(nodes, [("a", [8, 4])], ["y"], [const("w", rng.uniform(-1, 1, (6, 8))), const("c", rng.uniform(-1, 1, 6))])


def silu():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    return model(nodes, [("x", [2, 3, 8])], ["y"], [])


def rms_norm(residual=False):
    """LlamaRMSNorm as exported: x * Reciprocal(Sqrt(ReduceMean(Pow(x, 2)) + eps)) * gamma (opset 18: axes an
    input); with `residual`, of x = h + r, which the next residual Add reads too (a pre-norm block)."""
    h = 8
    pre = [helper.make_node("Add", ["h", "res"], ["x"])] if residual else []
    post = [helper.make_node("MatMul", ["y", "w"], ["f"]), helper.make_node("Add", ["x", "f"], ["z"])] if residual else []
    nodes = pre + [helper.make_node("Pow", ["x", "two"], ["p"]), helper.make_node("ReduceMean", ["p", "axes"], ["m"], keepdims=1),
             helper.make_node("Add", ["m", "eps"], ["a"]), helper.make_node("Sqrt", ["a"], ["s"]),
             helper.make_node("Reciprocal", ["s"], ["r"]), helper.make_node("Mul", ["x", "r"], ["n"]),
             helper.make_node("Mul", ["gamma", "n"], ["y"])] + post
    inits = [const("two", 2.0), numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes"), const("eps", 1e-6),
             const("gamma", rng.uniform(0.5, 1.5, h))] + ([const("w", rng.uniform(-1, 1, (h, h)))] if residual else [])
    ins = [("h", [2, 4, h]), ("res", [2, 4, h])] if residual else [("x", [2, 4, h])]
    return model(nodes, ins, ["z" if residual else "y"], inits, opset=18)


MODELS = [
    ("skip_ln_shared", skip_ln_shared, "com.microsoft::SkipLayerNormalization"),
    ("skip_ln_bias", skip_ln_bias, "com.microsoft::SkipLayerNormalization"),
    ("skip_ln_bias_shared", skip_ln_bias_shared, "com.microsoft::SkipLayerNormalization"),
    ("skip_ln_bcast", skip_ln_bcast, "com.microsoft::SkipLayerNormalization"),
    ("bias_gelu", bias_gelu, "com.microsoft::BiasGelu"),
    ("fast_gelu_bias", fast_gelu_bias, "com.microsoft::FastGelu"),
    ("gelu", gelu_plain, "com.microsoft::Gelu"),
    ("matmul_scale", matmul_scale, "com.microsoft::FusedMatMul"),
    ("gemm_transpose", gemm_transpose, "Gemm"),
    ("silu", silu, "com.microsoft::QuickGelu"),
    ("rms_norm", rms_norm, "SimplifiedLayerNormalization"),
    ("rms_skip_shared", lambda: rms_norm(True), "com.microsoft::SkipSimplifiedLayerNormalization"),
]

if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, fn, ops in MODELS:
        save(fn(), os.path.join(out, name + ".onnx"))
        print(name, ops)
