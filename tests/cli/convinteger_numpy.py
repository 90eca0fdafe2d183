#!/usr/bin/python3
"""convinteger_numpy.py GWR: ConvInteger (conv.c's exact integer path on
igemm.c) against numpy's int64 arithmetic, on one-layer models that `gwr
run` executes: uint8 and int8 inputs and weights, scalar and per-channel
zero points, groups, strides, dilations, asymmetric padding (which holds
the input's zero point, i.e. contributes nothing), 1-D, 2-D and 3-D.

numpy's side: x and w minus their zero points as int64, the padded input's
windows (sliding_window_view) contracted with the weights by einsum, then
wrapped to int32 as the spec's int32 accumulation does. Exit status 1 when
a case differs or gwr fails. Needs Debian's python3-onnx and numpy."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper, numpy_helper

GWR = sys.argv[1]
rng = np.random.default_rng(11)


def ref(x, xz, w, wz, strides, pads, dil, group):
    sp = x.ndim - 2
    xi = x.astype(np.int64) - xz
    wi = w.astype(np.int64) - wz.reshape((-1,) + (1,) * (sp + 1))
    xp = np.pad(xi, [(0, 0), (0, 0)] + [(pads[a], pads[a + sp]) for a in range(sp)])
    m, cg = w.shape[0], w.shape[1]
    mg = m // group
    # dilated windows: a window of extent (k-1)*d+1, every d-th tap
    ext = [(w.shape[2 + a] - 1) * dil[a] + 1 for a in range(sp)]
    out = []
    for g in range(group):
        win = sliding_window_view(xp[:, g * cg:(g + 1) * cg], ext, axis=tuple(range(2, 2 + sp)))
        sl = (slice(None), slice(None)) + tuple(slice(None, None, strides[a]) for a in range(sp))
        sl += tuple(slice(None, None, dil[a]) for a in range(sp))
        win = win[sl]
        letters = "xyz"[:sp]
        kl = "ijk"[:sp]
        eq = f"nc{letters}{kl},mc{kl}->nm{letters}"
        out.append(np.einsum(eq, win, wi[g * mg:(g + 1) * mg]))
    y = np.concatenate(out, axis=1)
    return ((y + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)


def run_case(tmp, idx, xdt, wdt, c, m, k, spatial, s, pads, dil, group, xzp, wzp):
    sp = len(spatial)
    lo = lambda dt: (0, 256) if dt == np.uint8 else (-128, 128)
    x = rng.integers(*lo(xdt), size=(2, c) + tuple(spatial)).astype(xdt)
    w = rng.integers(*lo(wdt), size=(m, c // group) + (k,) * sp).astype(wdt)
    xz = np.array(rng.integers(*lo(xdt)), xdt) if xzp else None
    wz = rng.integers(*lo(wdt), size=(m,) if wzp == "per" else ()).astype(wdt) if wzp else None
    elem = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if xz is not None or wz is not None:
        ins.append("xz" if xz is not None else "")
        if xz is not None:
            inits.append(numpy_helper.from_array(xz, "xz"))
    if wz is not None:
        ins.append("wz")
        inits.append(numpy_helper.from_array(wz, "wz"))
    node = helper.make_node("ConvInteger", ins, ["y"], strides=[s] * sp, pads=list(pads), dilations=[dil] * sp,
                            group=group)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem[xdt], list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)], inits)
    path = os.path.join(tmp, "m%d.onnx" % idx)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    xin = os.path.join(tmp, "x%d.pb" % idx)
    with open(xin, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    out = os.path.join(tmp, "o%d" % idx)
    desc = "case %d: x %s w %s C%d M%d k%d %s s%d pads %s d%d group %d zp %s/%s" % (
        idx, np.dtype(xdt).name, np.dtype(wdt).name, c, m, k, spatial, s, pads, dil, group, xzp, wzp)
    r = subprocess.run([GWR, "run", path, "--input", "x=" + xin, "-o", out], capture_output=True, text=True)
    if r.returncode:
        print("FAIL %s: gwr exit %d: %s" % (desc, r.returncode, r.stderr.strip()))
        return False
    got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output_0.pb")))
    want = ref(x, 0 if xz is None else int(xz), w, np.zeros(m, np.int64) if wz is None else
               np.broadcast_to(wz.astype(np.int64), (m,)), [s] * sp, pads, [dil] * sp, group)
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = "shape %s vs %s" % (got.shape, want.shape) if got.shape != want.shape else \
            "%d of %d differ" % (np.count_nonzero(got != want), got.size)
        print("FAIL %s: %s" % (desc, bad))
        return False
    return True


CASES = [
    # (x dtype, w dtype, C, M, k, spatial, stride, pads, dilation, group, x zp, w zp)
    (np.uint8, np.int8, 3, 5, 3, (9, 11), 1, (1, 1, 1, 1), 1, 1, True, "per"),
    (np.uint8, np.uint8, 4, 6, 3, (8, 8), 2, (1, 0, 0, 2), 1, 2, True, "scalar"),
    (np.int8, np.int8, 6, 6, 3, (10, 7), 1, (2, 2, 2, 2), 2, 3, True, None),
    (np.int8, np.uint8, 2, 3, 1, (5, 6), 1, (0, 0, 0, 0), 1, 1, False, "per"),
    (np.uint8, np.int8, 8, 4, 5, (6, 13), 3, (2, 1, 0, 2), 1, 1, False, None),
    (np.uint8, np.int8, 3, 4, 3, (17,), 2, (1, 2), 1, 1, True, "per"),             # 1-D
    (np.uint8, np.int8, 2, 4, 2, (4, 5, 6), 1, (1, 0, 1, 0, 1, 1), 1, 2, True, "per"),  # 3-D
    (np.uint8, np.int8, 64, 8, 3, (12, 16), 1, (1, 1, 1, 1), 1, 1, True, "per"),   # K = 576, odd tiles
]


def main():
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            ok &= run_case(tmp, i, *case)
    print("%d cases, %s" % (len(CASES), "all exact" if ok else "FAILURES"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
