#!/usr/bin/env python3
"""make_attention_models.py DIR - small decoders with PyTorch-style attention
(separate q/k/v projections, head Reshape/Transpose, a constant causal mask)
for tests/cli/test_attention_ort.sh: the forms fuse_attention must fuse.

  sep.onnx    2 blocks: scores / sqrt(D) + an additive [1, 1, S, S] -inf mask
  where.onnx  1 block: q * D^-1/2, K by two Transposes, Where(causal, s,
              float32 lowest) with query row 0 seeing no key (uniform weights)
  ninf.onnx   as sep.onnx, 1 block, query row 0 seeing no key with -inf
              (NaN rows before and after)
  sep23.onnx, where23.onnx, ninf23.onnx  the same at opset 23, where ONNX
              Attention exists (fuse_attention alone, target onnx)
"""
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

B, S, H, N = 2, 8, 32, 4
D = H // N
rng = np.random.default_rng(7)


class G:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, p):
        self.n += 1
        return "%s_%d" % (p, self.n)

    def const(self, arr):
        nm = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def op(self, op, ins, **attrs):
        out = self.name(op)
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out


def linear(g, x, i, o):
    w = g.const((rng.standard_normal((i, o)) * 0.2).astype(np.float32))
    b = g.const((rng.standard_normal(o) * 0.1).astype(np.float32))
    return g.op("Add", [g.op("MatMul", [x, w]), b])


def heads(g, t, perm):
    return g.op("Transpose", [g.op("Reshape", [t, g.const(np.array([B, S, N, D], np.int64))])], perm=perm)


def block(g, x, form, full_row):
    q, k, v = linear(g, x, H, H), linear(g, x, H, H), linear(g, x, H, H)
    qh, vh = heads(g, q, [0, 2, 1, 3]), heads(g, v, [0, 2, 1, 3])
    keep = np.tril(np.ones((S, S), bool))
    if full_row:
        keep[0, :] = False
    if form == "where":
        qh = g.op("Mul", [qh, g.const(np.array(D ** -0.5, np.float32))])
        kt = g.op("Transpose", [heads(g, k, [0, 2, 1, 3])], perm=[0, 1, 3, 2])
        s = g.op("MatMul", [qh, kt])
        fill = g.const(np.array(np.finfo(np.float32).min, np.float32))
        s = g.op("Where", [g.const(keep.reshape(1, 1, S, S)), s, fill])
    else:
        s = g.op("MatMul", [qh, heads(g, k, [0, 2, 3, 1])])
        s = g.op("Div", [s, g.const(np.array(np.sqrt(D), np.float32))])
        mask = np.where(keep, 0.0, -np.inf).astype(np.float32).reshape(1, 1, S, S)
        s = g.op("Add", [s, g.const(mask)])
    p = g.op("Softmax", [s], axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [p, vh])], perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const(np.array([B, S, H], np.int64))])
    return g.op("Add", [x, linear(g, ctx, H, H)])


def model(path, form, blocks, full_row, opset=17):
    g = G()
    x = "x"
    for _ in range(blocks):
        x = block(g, x, form, full_row)
    g.nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(g.nodes, form, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, H])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, H])], g.inits)
    m = helper.make_model_gen_version(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


d = sys.argv[1]
model(d + "/sep.onnx", "sep", 2, False)
model(d + "/where.onnx", "where", 1, True)
model(d + "/ninf.onnx", "sep", 1, True)
model(d + "/sep23.onnx", "sep", 2, False, 23)
model(d + "/where23.onnx", "where", 1, True, 23)
model(d + "/ninf23.onnx", "sep", 1, True, 23)
