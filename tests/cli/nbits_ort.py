"""nbits_ort.py GWR - com.microsoft MatMulNBits on gwr's executor, judged by
onnxruntime (the project's venv, 1.31).

Each case is a one-node model built with onnx.helper: a float weight matrix
quantized here in numpy, block by block along K (round to nearest; symmetric
with the default zero point 2^(bits-1), or asymmetric with packed uint8 or
float zero points), 4 or 8 bits, K a multiple of block_size or not (the last
block padded), with and without bias, batch dims, one row and several. For
each:

  - onnxruntime and `gwr run` (as written, and optimized in the session) agree
    within 1e-4 of the output's largest magnitude (float32; float16 cases
    within 4e-3, float16's own rounding: the two runtimes round the
    intermediate steps differently);
  - the result agrees with the numpy reference (dequantize, then matmul in
    float64) within the same bound, so that the two runtimes are not merely
    agreeing with each other;
  - `gwr optimize --target ort` and `--target gwr` keep the node: one
    MatMulNBits of domain com.microsoft in the written file, which passes
    onnx's checker and which onnxruntime runs to the same result.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

GWR = None  # the gwr binary (argv[1]); bench/nbits_bench.py imports quantize() and model() without it
rng = np.random.default_rng(24)


def quantize(w, bits, bs, zp_mode):
    """w [K, N] float32 -> (B [N, kb, blob] uint8, scales [N, kb], zero_points or None, dequantized [K, N] float64)."""
    K, N = w.shape
    kb = (K + bs - 1) // bs
    wt = np.zeros((N, kb * bs), np.float32)
    wt[:, :K] = w.T
    blk = wt.reshape(N, kb, bs).astype(np.float64)
    qmax = (1 << bits) - 1
    if zp_mode == "none":
        z = np.full((N, kb), 1 << (bits - 1), np.float64)
        s = np.abs(blk).max(axis=2) / (1 << (bits - 1))
    else:
        lo, hi = np.minimum(blk.min(axis=2), 0), np.maximum(blk.max(axis=2), 0)
        s = (hi - lo) / qmax
        z = np.clip(np.round(-lo / np.where(s > 0, s, 1)), 0, qmax)
    s = np.where(s > 0, s, 1.0).astype(np.float32)
    if zp_mode == "float":
        z = z + rng.uniform(-0.5, 0.5, z.shape)  # a fractional zero point
        z = z.astype(np.float32)
    q = np.clip(np.round(blk / s[:, :, None].astype(np.float64) + z[:, :, None]), 0, qmax).astype(np.uint8)
    deq = (q.astype(np.float64) - z[:, :, None].astype(np.float64)) * s[:, :, None].astype(np.float64)
    deq = deq.reshape(N, kb * bs)[:, :K].T
    if bits == 4:
        b = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    else:
        b = q
    zp = None
    if zp_mode == "u8":
        zi = z.astype(np.uint8)
        if bits == 4:
            if kb % 2:
                zi = np.concatenate([zi, np.zeros((N, 1), np.uint8)], axis=1)
            zi = (zi[:, 0::2] | (zi[:, 1::2] << 4)).astype(np.uint8)
        zp = zi
    elif zp_mode == "float":
        zp = z
    return b, s, zp, deq


def model(K, N, bits, bs, zp_mode, bias, ashape, dt=np.float32):
    w = rng.standard_normal((K, N)).astype(np.float32) * 0.1
    b, s, zp, deq = quantize(w, bits, bs, zp_mode)
    ttype = T.FLOAT16 if dt == np.float16 else T.FLOAT
    inits = [nh.from_array(b, "B"), nh.from_array(s.astype(dt), "scales")]
    names = ["a", "B", "scales"]
    if zp is not None:
        inits.append(nh.from_array(zp.astype(dt) if zp.dtype != np.uint8 else zp, "zp"))
        names.append("zp")
    bvec = None
    if bias:
        bvec = (rng.standard_normal(N) * 0.5).astype(dt)
        inits.append(nh.from_array(bvec, "bias"))
        names += [""] * (5 - len(names)) + ["bias"]
    node = h.make_node("MatMulNBits", names, ["y"], domain="com.microsoft", K=K, N=N, bits=bits, block_size=bs, accuracy_level=0)
    g = h.make_graph([node], "nbits", [h.make_tensor_value_info("a", ttype, list(ashape))],
                     [h.make_tensor_value_info("y", ttype, list(ashape[:-1]) + [N])], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)], ir_version=10)
    return m, deq, bvec


def run_ort(path, a):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"a": a})[0]


def run_gwr(path, xin, out, extra):
    cmd = [GWR, "run", path, "--input", "a=" + xin, "-o", out] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("gwr run failed: %s\n%s" % (" ".join(cmd), r.stdout + r.stderr))
    t = onnx.TensorProto()
    with open(os.path.join(out, "output_0.pb"), "rb") as fh:
        t.ParseFromString(fh.read())
    return nh.to_array(t)


def rel(x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    return np.abs(x - y).max() / max(np.abs(y).max(), 1e-30)


CASES = [  # K, N, bits, block_size, zero points, bias, A's shape
    (64, 32, 4, 32, "none", False, (1, 64)),
    (100, 40, 4, 32, "u8", True, (2, 3, 100)),
    (96, 24, 4, 16, "u8", False, (1, 96)),
    (130, 33, 4, 64, "float", True, (1, 130)),
    (200, 50, 4, 128, "float", False, (7, 200)),
    (48, 20, 8, 16, "u8", True, (1, 7, 48)),
    (200, 64, 8, 64, "none", True, (5, 200)),
    (70, 30, 8, 32, "u8", False, (1, 70)),
    (256, 300, 4, 32, "u8", True, (1, 256)),
    (256, 300, 4, 32, "u8", True, (9, 256)),
    (100, 40, 4, 32, "u8", True, (3, 100), np.float16),
    (64, 32, 8, 32, "none", False, (1, 64), np.float16),
]


def main():
    global GWR
    GWR = sys.argv[1]
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for i, case in enumerate(CASES):
            K, N, bits, bs, zpm, bias, ashape = case[:7]
            dt = case[7] if len(case) > 7 else np.float32
            tol = 4e-3 if dt == np.float16 else 1e-4
            m, deq, bvec = model(K, N, bits, bs, zpm, bias, ashape, dt)
            path = os.path.join(d, "m%d.onnx" % i)
            onnx.save(m, path)
            a = rng.uniform(-1, 1, ashape).astype(dt)
            xin = os.path.join(d, "a%d.pb" % i)
            with open(xin, "wb") as fh:
                fh.write(nh.from_array(a, "a").SerializeToString())
            want = run_ort(path, a)
            ref = a.astype(np.float64) @ deq + (bvec.astype(np.float64) if bias else 0)
            label = "case %d (K %d N %d bits %d block %d zp %s bias %d A %s %s)" % (
                i, K, N, bits, bs, zpm, bias, ashape, np.dtype(dt).name)
            if rel(want, ref) > tol:
                print("%s: onnxruntime %g off the numpy reference" % (label, rel(want, ref)))
                bad += 1
            for extra in ([], ["--no-optimize"], ["--threads", "2"]):
                got = run_gwr(path, xin, os.path.join(d, "o%d" % i), extra)
                if got.dtype != want.dtype or got.shape != want.shape:
                    print("%s %s: gwr %s %s, onnxruntime %s %s" % (label, extra, got.dtype, got.shape, want.dtype, want.shape))
                    bad += 1
                    continue
                e, er = rel(got, want), rel(got, ref)
                if e > tol or er > tol:
                    print("%s %s: %g off onnxruntime, %g off the numpy reference (tolerance %g)" % (label, extra, e, er, tol))
                    bad += 1
            # the optimizer keeps the node, and the exporter writes it in com.microsoft
            if i < 3:
                for target in ("ort", "gwr"):
                    out = os.path.join(d, "m%d_%s.onnx" % (i, target))
                    r = subprocess.run([GWR, "optimize", path, "-o", out, "--target", target], capture_output=True, text=True)
                    if r.returncode:
                        print("%s: gwr optimize --target %s failed: %s" % (label, target, r.stdout + r.stderr))
                        bad += 1
                        continue
                    om = onnx.load(out)
                    nodes = [(n.op_type, n.domain) for n in om.graph.node]
                    if nodes != [("MatMulNBits", "com.microsoft")]:
                        print("%s: gwr optimize --target %s wrote %s" % (label, target, nodes))
                        bad += 1
                        continue
                    onnx.checker.check_model(om)
                    e = rel(run_ort(out, a), want)
                    if e > 1e-6:
                        print("%s: onnxruntime on gwr optimize --target %s's output is %g off" % (label, target, e))
                        bad += 1
    print("nbits_ort: %d cases, %d failures" % (len(CASES), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
