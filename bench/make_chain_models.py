#!/usr/bin/python3
"""make_chain_models.py OUT N FAMILY...: one model per FAMILY with about N
layers, for the optimizer's scaling figure (bench/opt_scale.sh). Each
model repeats one small step N times (numpy values, opset 13, x float32):

  ew        Mul then Add by one shared scalar constant, alternating   x [4, 8]
  unsq      Unsqueeze then Squeeze on one shared axes constant [0]    x [4, 8]
  reshape   Reshape to [8, 4] then to [4, 8], two shared shape consts x [4, 8]
  relu      N identical Relu(x), summed by an Add chain               x [4, 8]
  transpose Transpose perm [1, 0] then Relu                           x [4, 8]
  cast      Cast to float16 then back to float32, then Neg            x [4, 8]
  convbn    Conv 1x1 (own weights) then BatchNormalization (own)      x [1, 2, 4, 4]
  shape     Shape, Gather(shared index), Unsqueeze, Concat with a
            shared [-1], Reshape: the exporters' flatten idiom        x [4, 8]
  concat    Concat(h, h) on axis 0, Slice of the first half with
            shared starts/ends/axes constants, then Relu              x [4, 8]
  fanout    N users of x, Add(x, c_i) with N distinct scalars, summed
            by an Add chain                                           x [4, 8]

The constants are initializers. Needs python3-onnx (Debian's /usr/bin/python3).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class M:
    def __init__(self):
        self.nodes, self.inits = [], []

    def const(self, arr):
        nm = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def op(self, t, ins, **attrs):
        out = f"t{len(self.nodes)}"
        self.nodes.append(helper.make_node(t, ins, [out], name=f"n{len(self.nodes)}", **attrs))
        return out


def build(fam, n):
    m, x, shape = M(), "x", [4, 8]
    h = x
    if fam == "ew":
        c = m.const(np.float32(0.999))
        for i in range(n):
            h = m.op("Mul" if i % 2 == 0 else "Add", [h, c])
    elif fam == "unsq":
        ax = m.const(np.array([0], np.int64))
        for i in range(n):
            h = m.op("Unsqueeze" if i % 2 == 0 else "Squeeze", [h, ax])
    elif fam == "reshape":
        a, b = m.const(np.array([8, 4], np.int64)), m.const(np.array([4, 8], np.int64))
        for i in range(n):
            h = m.op("Reshape", [h, a if i % 2 == 0 else b])
    elif fam == "relu":
        h = m.op("Relu", [x])
        for _ in range((n - 1) // 2):
            h = m.op("Add", [h, m.op("Relu", [x])])
    elif fam == "transpose":
        for i in range(n):
            h = m.op("Transpose", [h], perm=[1, 0]) if i % 2 == 0 else m.op("Relu", [h])
    elif fam == "cast":
        for i in range(n // 3):
            h = m.op("Cast", [h], to=TensorProto.FLOAT16)
            h = m.op("Cast", [h], to=TensorProto.FLOAT)
            h = m.op("Neg", [h])
    elif fam == "convbn":
        shape = [1, 2, 4, 4]
        rng = np.random.default_rng(7)
        for _ in range(n // 2):
            w = m.const(rng.uniform(0.5, 1.0, (2, 2, 1, 1)).astype(np.float32))
            h = m.op("Conv", [h, w], kernel_shape=[1, 1])
            ps = [m.const(rng.uniform(0.9, 1.1, 2).astype(np.float32)) for _ in range(2)]
            qs = [m.const(rng.uniform(-0.1, 0.1, 2).astype(np.float32)), m.const(rng.uniform(0.9, 1.1, 2).astype(np.float32))]
            h = m.op("BatchNormalization", [h, ps[0], qs[0], ps[1], qs[1]])
    elif fam == "shape":
        idx, axes, neg = m.const(np.int64(0)), m.const(np.array([0], np.int64)), m.const(np.array([-1], np.int64))
        for _ in range(n // 5):
            g = m.op("Gather", [m.op("Shape", [h]), idx], axis=0)
            s = m.op("Concat", [m.op("Unsqueeze", [g, axes]), neg], axis=0)
            h = m.op("Reshape", [h, s])
    elif fam == "concat":
        st, en, ax = (m.const(np.array([v], np.int64)) for v in (0, 4, 0))
        for _ in range(n // 3):
            h = m.op("Concat", [h, h], axis=0)
            h = m.op("Slice", [h, st, en, ax])
            h = m.op("Relu", [h])
    elif fam == "fanout":
        h = m.op("Add", [x, m.const(np.float32(0))])
        for i in range(1, (n + 1) // 2):
            h = m.op("Add", [h, m.op("Add", [x, m.const(np.float32(i * 1e-6))])])
    else:
        raise SystemExit(f"make_chain_models.py: unknown family {fam}")
    g = helper.make_graph(m.nodes, fam, [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(h, TensorProto.FLOAT, None)], m.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_chain_models")


def main():
    if len(sys.argv) < 4:
        raise SystemExit("usage: make_chain_models.py OUT N FAMILY...")
    out, n = sys.argv[1], int(sys.argv[2])
    for fam in sys.argv[3:]:
        onnx.save(build(fam, n), f"{out}/{fam}_{n}.onnx")


if __name__ == "__main__":
    main()
