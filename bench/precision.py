#!/usr/bin/env python3
"""Automatic mixed precision: `gwr precision --auto TOL` against
onnxconverter-common's auto_convert_mixed_precision, at the same tolerance.

    .venv/bin/python bench/precision.py [--gwr build/gwr] [--tol 1e-2,1e-3] [--only NAME,...]
                                        [--json FILE]

Both keep the interface float32 (--keep-io / keep_io_types=keep_io) and judge
the outputs by the same criterion, max |a - b| <= TOL * max(1, max |a|) of
the float32 model's outputs a: onnxconverter-common through its validate_fn
on one sample (the manifest's seeded inputs; its API takes one feed),
gwr on the same sample written as a calibration directory when
gwr_calib_load reads it, else on 8 seeded random samples of the manifest's
shapes (printed in the `samples` column). Each tool's time is the
wall-clock time of the whole search (onnxconverter-common: the Python call;
gwr: the process, loading and writing included), one thread.

"fp32 layers" counts, in each output file by the same function, the nodes
other than Cast, Constant, Shape and Size whose first input or first output
is float32 (types from onnx's shape inference). Models: generated
(bench/precision_models.py: cnn, transformer) and the real float32 models
oww-embedding, ppocr-cls, centerface, magika from the real-model cache
($GWR_REAL_CACHE or bench/real/cache/).
"""
import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "real"))
import manifest  # noqa: E402
import precision_models  # noqa: E402

REAL = ("oww-embedding", "ppocr-cls", "centerface", "magika")
GENERATED = ("cnn", "transformer", "mlp")


def fp32_layers(model):
    m = onnx.shape_inference.infer_shapes(model)
    g = m.graph
    ty = {}
    for v in list(g.input) + list(g.output) + list(g.value_info):
        ty[v.name] = v.type.tensor_type.elem_type
    for t in g.initializer:
        ty[t.name] = t.data_type
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    ty[n.output[0]] = a.t.data_type
    count = 0
    for n in g.node:
        if n.op_type in ("Cast", "Constant", "Shape", "Size"):
            continue
        # the data: the first input or the first output (not Resize's scales)
        if any(ty.get(x) == onnx.TensorProto.FLOAT for x in (n.input[:1] + n.output[:1]) if x):
            count += 1
    return count


def within(tol):
    def ok(ref, got):
        for a, b in zip(ref, got):
            a = np.asarray(a, np.float64)
            b = np.asarray(b, np.float64)
            if a.shape != b.shape:
                return False
            if a.size and not (np.abs(a - b).max() <= tol * max(1.0, np.abs(a).max())):
                return False
        return True
    return ok


def run_occ(model, feeds, tol, keep_io=True):
    from onnxconverter_common import auto_mixed_precision
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        out = auto_mixed_precision.auto_convert_mixed_precision(model, feeds, validate_fn=within(tol),
                                                                keep_io_types=keep_io)
    return time.perf_counter() - t0, out


def write_calib(feeds, d):
    s = os.path.join(d, "sample_0")
    os.makedirs(s, exist_ok=True)
    for i, (name, a) in enumerate(feeds.items()):
        with open(os.path.join(s, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())


def run_gwr(gwr, src, out, tol, feeds, shapes, work, keep_io=True):
    calib = os.path.join(work, "calib")
    write_calib(feeds, calib)
    base = [gwr, "precision", src, "-o", out, "--to", "fp16", "--auto", str(tol), "--threads", "1"] + \
        (["--keep-io"] if keep_io else [])
    t0 = time.perf_counter()
    r = subprocess.run(base + ["--calibration", calib], capture_output=True, text=True)
    samples = "the same 1"
    if r.returncode:
        # gwr_calib_load not there yet: seeded random samples of the manifest's shapes
        t0 = time.perf_counter()
        r = subprocess.run(base + [a for s in shapes for a in ("--shape", s)], capture_output=True, text=True)
        samples = "8 random"
    dt = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(r.stderr.strip())
    return dt, samples, r.stdout.strip()


def models(only):
    for name in GENERATED:
        if only and name not in only:
            continue
        m, feeds = precision_models.make(name)
        shapes = [f"{k}={','.join(map(str, v.shape))}" for k, v in feeds.items()]
        yield name, m, feeds, shapes
    ms = {m.name: m for m in manifest.load()}
    for name in REAL:
        if only and name not in only:
            continue
        model = ms[name]
        if not os.path.exists(model.path):
            print(f"{name}: not cached ({model.path}); .venv/bin/python bench/real/fetch.py --only {name}")
            continue
        proto = onnx.load(model.path)
        feeds = manifest.make_inputs(model, proto, seed=0)
        shapes = [f"{s.name}={','.join(map(str, s.shape))}" for s in model.inputs]
        yield name, proto, feeds, shapes


def main():
    onnxruntime.set_default_logger_severity(3)
    ap = argparse.ArgumentParser()
    ap.add_argument("--gwr", default=os.path.join(HERE, "..", "build", "gwr"))
    ap.add_argument("--tol", default="1e-2,1e-3")
    ap.add_argument("--only", default="")
    ap.add_argument("--json")
    ap.add_argument("--half-io", action="store_true",
                    help="the interface converted too (no --keep-io / keep_io_types=False)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    rows = []
    print(f"{'model':15} {'tol':>6} {'layers':>6} {'occ s':>8} {'gwr s':>7} {'ratio':>7} "
          f"{'occ fp32':>8} {'gwr fp32':>8}  gwr samples")
    with tempfile.TemporaryDirectory() as work:
        for name, m, feeds, shapes in models(only):
            src = os.path.join(work, f"{name}.onnx")
            onnx.save(m, src)
            total = fp32_layers(m)
            for tol in map(float, args.tol.split(",")):
                row = {"model": name, "tol": tol, "fp32_layers_before": total}
                try:
                    t_occ, out_occ = run_occ(onnx.load(src), feeds, tol, not args.half_io)
                    row["occ_s"], row["occ_fp32"] = t_occ, fp32_layers(out_occ)
                except Exception as e:  # noqa: BLE001
                    row["occ_error"] = str(e).splitlines()[0][:120]
                dst = os.path.join(work, f"{name}.gwr.onnx")
                try:
                    t_gwr, samples, line = run_gwr(args.gwr, src, dst, tol, feeds, shapes, work,
                                                           not args.half_io)
                    row["gwr_s"], row["gwr_fp32"], row["gwr_samples"] = t_gwr, fp32_layers(onnx.load(dst)), samples
                except Exception as e:  # noqa: BLE001
                    row["gwr_error"] = str(e).splitlines()[0][:120] if str(e) else "failed"
                rows.append(row)
                ratio = row["occ_s"] / row["gwr_s"] if "occ_s" in row and "gwr_s" in row else float("nan")
                print(f"{name:15} {tol:>6g} {total:>6} {row.get('occ_s', float('nan')):>8.2f} "
                      f"{row.get('gwr_s', float('nan')):>7.2f} {ratio:>6.1f}x {row.get('occ_fp32', '-'):>8} "
                      f"{row.get('gwr_fp32', '-'):>8}  {row.get('gwr_samples', '')}"
                      + (f"  occ: {row['occ_error']}" if "occ_error" in row else "")
                      + (f"  gwr: {row['gwr_error']}" if "gwr_error" in row else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
