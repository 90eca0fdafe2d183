"""gwr_run: `gwr run` on numpy inputs, its outputs read back, for the tests in tests/llm."""
import os
import subprocess

import onnx
from onnx import numpy_helper


def gwr_run(gwr, model, feeds, d, *options):
    """`gwr run MODEL OPTIONS... -o D/out` with feeds (numpy arrays by input name) written as
    TensorProto files in directory d (made if missing); the outputs by name. RuntimeError with
    gwr's message when the run fails."""
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, "out")
    args = [gwr, "run", model, *options, "-o", out]
    for k, v in feeds.items():
        p = os.path.join(d, k.replace("/", "_") + ".pb")
        with open(p, "wb") as fh:
            fh.write(numpy_helper.from_array(v, k).SerializeToString())
        args += ["--input", f"{k}={p}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"gwr run {model}: {r.stderr.strip() or r.stdout.strip()}")
    res = {}
    for fn in sorted(os.listdir(out)):
        if fn.startswith("output_"):
            t = onnx.TensorProto()
            with open(os.path.join(out, fn), "rb") as fh:
                t.ParseFromString(fh.read())
            res[t.name] = numpy_helper.to_array(t)
    return res
