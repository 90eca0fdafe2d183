"""nbits_bench.py GWR [--quick] - com.microsoft MatMulNBits: gwr's executor
against onnxruntime (the venv's, 1.31) on the same one-node models.

Weights [K, N] drawn from a normal law and quantized in numpy (4 bits,
block 32, asymmetric with packed uint8 zero points, as onnxruntime's
MatMulNBitsQuantizer writes them; tests/cli/nbits_ort.py's quantize()),
A [M, K] uniform in [-1, 1). For M = 1 (decode-style GEMV) and M = 128,
K x N = 2048 x 2048 and 4096 x 11008, on 1 and 2 threads: ROUNDS x REPEAT
runs after warm-up (the three runners interleaved round by round: the
machine may be shared), their best and median, for
  - onnxruntime at accuracy_level 0 (A in float32: what gwr computes) and
    at accuracy_level 4 (A quantized to int8 per block: faster, less exact),
  - gwr (`gwr run --repeat`: the median it prints),
and the ratios gwr / onnxruntime (accuracy_level 0), of the bests and of the
medians (gwr's median: the median of its rounds' medians). --quick: 2048 x 2048
only. Prints one line per shape and thread count."""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper as nh

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
import nbits_ort  # noqa: E402  (tests/cli: quantize() and model())

GWR = sys.argv[1]
QUICK = "--quick" in sys.argv
REPEAT = 5
ROUNDS = 3


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_times(sess, a):
    sess.run(None, {"a": a})  # warm-up
    t = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        sess.run(None, {"a": a})
        t.append(1e3 * (time.perf_counter() - t0))
    return t


def gwr_times(path, xin, threads):
    r = subprocess.run([GWR, "run", path, "--input", "a=" + xin, "--repeat", str(REPEAT), "--threads", str(threads)],
                       capture_output=True, text=True, check=True)
    best, med = re.search(r"best ([0-9.]+) ms, median ([0-9.]+) ms", r.stdout).groups()
    return [float(best), float(med)]


def main():
    shapes = [(2048, 2048)] + ([] if QUICK else [(4096, 11008)])
    print("%-20s %3s %9s %9s %9s %9s %9s %9s %6s %6s" % ("M x K x N", "thr", "ort best", "ort med", "al4 best", "al4 med",
                                                      "gwr best", "gwr med", "best", "med"))
    with tempfile.TemporaryDirectory() as d:
        for K, N in shapes:
            for M in (1, 128):
                m, _, _ = nbits_ort.model(K, N, 4, 32, "u8", False, (M, K))
                path, path4 = os.path.join(d, "m.onnx"), os.path.join(d, "m4.onnx")
                onnx.save(m, path)
                for a in m.graph.node[0].attribute:
                    if a.name == "accuracy_level":
                        a.i = 4
                onnx.save(m, path4)
                a = np.random.default_rng(0).uniform(-1, 1, (M, K)).astype(np.float32)
                xin = os.path.join(d, "a.pb")
                with open(xin, "wb") as fh:
                    fh.write(nh.from_array(a, "a").SerializeToString())
                for threads in (1, 2):
                    s0, s4 = ort_session(path, threads), ort_session(path4, threads)
                    o, o4, g = [], [], []
                    for _ in range(ROUNDS):  # interleaved, so that a busy spell of the machine falls on all three
                        o += ort_times(s0, a)
                        o4 += ort_times(s4, a)
                        g += gwr_times(path, xin, threads)
                    print("%-20s %3d %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %6.2f %6.2f" % (
                        "%d x %d x %d" % (M, K, N), threads, min(o), np.median(o), min(o4), np.median(o4), min(g[0::2]),
                        np.median(g[1::2]), min(g[0::2]) / min(o), np.median(g[1::2]) / np.median(o)), flush=True)

if __name__ == "__main__":
    main()
