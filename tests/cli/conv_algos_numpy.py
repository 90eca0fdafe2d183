#!/usr/bin/python3
"""conv_algos_numpy.py GWR: conv.c's algorithms (direct depthwise, 1x1 on the
input as it lies, im2col) and their epilogue (bias, FusedConv's Z and
activation) against numpy, on one-layer models that `gwr run` executes with
seeded random inputs (`-o DIR` writes them beside its outputs).

numpy's side is the ONNX Conv formula on a zero-padded input, window tap by
window tap, in float64; the activations from their ONNX definitions. Exit
status 1 when a case is off by more than its tolerance or gwr fails.
Needs Debian's python3-onnx and numpy."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

GWR = sys.argv[1]
rng = np.random.default_rng(7)


def conv_ref(x, w, b, strides, pads, dil, group):
    """y[n, m] = b[m] + sum over its group's channels and the window."""
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - ((kh - 1) * dil + 1)) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - ((kw - 1) * dil + 1)) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for mi in range(m):
        g = mi // mg
        for ci in range(cg):
            for ky in range(kh):
                for kx in range(kw):
                    ys, xs = ky * dil, kx * dil
                    tap = xp[:, g * cg + ci, ys:ys + strides[0] * (oh - 1) + 1:strides[0],
                             xs:xs + strides[1] * (ow - 1) + 1:strides[1]]
                    y[:, mi] += w[mi, ci, ky, kx] * tap
    if b is not None:
        y += b[None, :, None, None]
    return y


def act_ref(name, p, v):
    if name is None:
        return v
    if name == "Relu":
        return np.maximum(v, 0)
    if name == "Tanh":
        return np.tanh(v)
    if name == "Sigmoid":
        return 1 / (1 + np.exp(-v))
    if name == "LeakyRelu":
        return np.where(v < 0, p[0] * v, v)
    if name == "Clip":
        return np.minimum(np.maximum(v, p[0]), p[1])
    if name == "HardSigmoid":
        return np.maximum(0, np.minimum(1, p[0] * v + p[1]))
    raise ValueError(name)


def run_case(tmp, idx, c, k, s, pads, dil, group, m, hw, act=None, params=(), z=False, dtype=np.float32):
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.DOUBLE
    h, wd = hw
    w = rng.uniform(-1, 1, (m, c // group, k, k)).astype(dtype)
    b = rng.uniform(-1, 1, (m,)).astype(dtype)
    fused = act is not None or z
    ins = ["x", "w", "b"] + (["z"] if z else [])
    attrs = dict(strides=[s, s], pads=list(pads), dilations=[dil, dil], group=group)
    if act:
        attrs["activation"] = act
        if params:
            attrs["activation_params"] = list(params)
    node = helper.make_node("FusedConv" if fused else "Conv", ins, ["y"], domain="com.microsoft" if fused else "", **attrs)
    oh = (h + pads[0] + pads[2] - ((k - 1) * dil + 1)) // s + 1
    ow = (wd + pads[1] + pads[3] - ((k - 1) * dil + 1)) // s + 1
    inputs = [helper.make_tensor_value_info("x", elem, [2, c, h, wd])]
    if z:
        inputs.append(helper.make_tensor_value_info("z", elem, [2, m, oh, ow]))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", elem, [2, m, oh, ow])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid("com.microsoft", 1)] if fused else [])
    model = helper.make_model(graph, opset_imports=opsets)
    path = os.path.join(tmp, "m%d.onnx" % idx)
    out = os.path.join(tmp, "o%d" % idx)
    onnx.save(model, path)
    r = subprocess.run([GWR, "run", path, "--random", str(idx), "-o", out], capture_output=True, text=True)
    desc = "case %d: %s k%d s%d pads %s d%d group %d C%d M%d %dx%d %s%s %s" % (
        idx, node.op_type, k, s, pads, dil, group, c, m, h, wd, "+Z " if z else "", act or "", np.dtype(dtype).name)
    if r.returncode:
        print("FAIL %s: gwr exit %d: %s" % (desc, r.returncode, r.stderr.strip()))
        return False
    load = lambda f: numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f)))
    x = load("input_0.pb").astype(np.float64)
    want = conv_ref(x, w.astype(np.float64), b.astype(np.float64), (s, s), pads, dil, group)
    if z:
        want = want + load("input_1.pb").astype(np.float64)
    want = act_ref(act, params, want)
    got = load("output_0.pb").astype(np.float64)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    err = np.max(np.abs(got - want) / (1 + np.abs(want))) if got.shape == want.shape else np.inf
    if not err <= tol:
        print("FAIL %s: shape %s vs %s, relative error %g" % (desc, got.shape, want.shape, err))
        return False
    return True


CASES = [
    # depthwise: direct
    dict(c=3, k=3, s=1, pads=(1, 1, 1, 1), dil=1, group=3, m=3, hw=(13, 11)),
    dict(c=2, k=3, s=2, pads=(1, 1, 1, 1), dil=1, group=2, m=2, hw=(15, 9)),
    dict(c=2, k=3, s=2, pads=(0, 0, 1, 1), dil=1, group=2, m=2, hw=(16, 16)),
    dict(c=3, k=3, s=1, pads=(1, 0, 0, 2), dil=1, group=3, m=3, hw=(7, 10)),
    dict(c=2, k=3, s=1, pads=(1, 1, 1, 1), dil=1, group=2, m=2, hw=(12, 37)),
    dict(c=2, k=5, s=1, pads=(2, 2, 2, 2), dil=1, group=2, m=2, hw=(11, 13)),
    dict(c=2, k=5, s=2, pads=(2, 1, 1, 2), dil=1, group=2, m=2, hw=(17, 19)),
    dict(c=2, k=5, s=1, pads=(2, 2, 2, 2), dil=1, group=2, m=2, hw=(2, 3)),
    dict(c=3, k=3, s=1, pads=(1, 1, 1, 1), dil=1, group=3, m=6, hw=(11, 9)),  # multiplier 2
    # fall back to im2col
    dict(c=3, k=3, s=1, pads=(2, 2, 2, 2), dil=2, group=3, m=3, hw=(12, 12)),
    dict(c=3, k=3, s=3, pads=(1, 1, 1, 1), dil=1, group=3, m=3, hw=(11, 9)),
    dict(c=4, k=3, s=1, pads=(1, 1, 1, 1), dil=1, group=2, m=4, hw=(9, 9)),
    dict(c=3, k=3, s=2, pads=(1, 1, 1, 1), dil=1, group=3, m=3, hw=(9, 10), dtype=np.float64),
    # 1x1: the GEMM on the input as it lies, grouped, strided (gathered), padded
    dict(c=8, k=1, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=12, hw=(5, 7)),
    dict(c=8, k=1, s=1, pads=(0, 0, 0, 0), dil=1, group=4, m=12, hw=(5, 7)),
    dict(c=8, k=1, s=2, pads=(0, 0, 0, 0), dil=1, group=1, m=12, hw=(5, 7)),
    dict(c=8, k=1, s=1, pads=(1, 0, 0, 1), dil=1, group=1, m=12, hw=(5, 7)),
    dict(c=2, k=1, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=12, hw=(80, 81), act="Relu", z=True),
    dict(c=16, k=3, s=1, pads=(1, 1, 1, 1), dil=1, group=1, m=8, hw=(64, 64), act="Clip", params=(-0.5, 0.5), z=True),
]
# few output positions (2 to 7 on AVX2; 1 and 8 stay on the usual path): W^T packed at planning,
# the transposed product (conv.c narrow_gemm); im2col and 1x1, odd M, strides, epilogues
CASES += [
    dict(c=5, k=3, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=37, hw=(3, 4)),
    dict(c=5, k=3, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=37, hw=(3, 9)),
    dict(c=5, k=3, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=37, hw=(3, 10)),
    dict(c=5, k=3, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=37, hw=(3, 3)),
    dict(c=7, k=3, s=2, pads=(1, 0, 0, 1), dil=1, group=1, m=9, hw=(5, 7), act="Tanh"),
    dict(c=8, k=1, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=13, hw=(1, 5), act="Relu", z=True),
    dict(c=300, k=1, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=1, hw=(2, 3)),
    dict(c=6, k=3, s=1, pads=(1, 1, 1, 1), dil=1, group=2, m=8, hw=(1, 3)),
]
ACTS = [("Relu", ()), ("Tanh", ()), ("Sigmoid", ()), ("LeakyRelu", (0.1,)), ("Clip", (-0.25, 0.75)),
        ("HardSigmoid", (0.2, 0.5))]
for shape in (dict(c=3, k=3, s=1, pads=(1, 1, 1, 1), dil=1, group=3, m=3, hw=(9, 11)),
              dict(c=5, k=1, s=1, pads=(0, 0, 0, 0), dil=1, group=1, m=6, hw=(6, 7)),
              dict(c=4, k=3, s=2, pads=(1, 0, 1, 1), dil=1, group=1, m=5, hw=(7, 6))):
    for act, params in ACTS:
        for z in (False, True):
            CASES.append(dict(shape, act=act, params=params, z=z))

with tempfile.TemporaryDirectory() as tmp:
    ok = sum(run_case(tmp, i, **case) for i, case in enumerate(CASES))
print("%d of %d cases match numpy" % (ok, len(CASES)))
sys.exit(0 if ok == len(CASES) else 1)
