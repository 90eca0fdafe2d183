#!/usr/bin/env python3
"""`gwr precision` against onnx's checker, onnxruntime and numpy.

    .venv/bin/python tests/cli/precision_ort.py GWR

On generated models (bench/precision_models.py: a CNN, a transformer block
with LayerNormalization / Softmax / Range / Shape paths, an If reading the
enclosing graph) and on the real float32 models oww-embedding, ppocr-cls,
centerface (flag ci: cached by scripts/setup.sh; missing is a failure) and
magika (not ci: missing is printed as SKIP with how to fetch it):

  float16 (with and without --keep-io):
    - the file passes onnx.checker.check_model(full_check=True);
    - onnxruntime loads and runs it (its CPU provider casts around the ops
      it has no float16 kernel for);
    - gwr's executor (`gwr run --no-optimize`) on the file agrees with
      onnxruntime on the file: |a-b| <= 1e-2 + 1e-2 |b| (the two compute
      half layers differently: onnxruntime in float16 where it has kernels,
      gwr in float32 rounding each layer's output);
    - the outputs against the float32 model (onnxruntime):
      max |a-b| <= 2e-2 * max(1, max |ref|);
    - nothing of the kept table is converted (Range stays float32) and
      the If stays float32 whole.
  bfloat16 (--keep-io: the interface stays float32):
    - the checker passes; gwr's executor runs it, and its outputs are
      within 6e-2 * max(1, max |ref|) of the float32 model (bfloat16 has 8
      bits of mantissa); onnxruntime 1.31's CPU provider has few bfloat16
      kernels: whether it loads the file is printed, not required.
  --auto TOL (transformer, cnn, mlp, two real models): the file runs in
    onnxruntime, the report names each layer kept and why, and on the test's
    own inputs the outputs are within 2 * TOL of float32; in "mlp" (+300
    then -300 in the middle of a Tanh chain) the two offset layers are kept.
  bad input: --to fp8, --auto -1, --auto x, a model already in float16:
    exit 2, one line on stderr, nothing written.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "real"))
import manifest  # noqa: E402
import precision_models  # noqa: E402

GWR = sys.argv[1]
REAL = ("oww-embedding", "ppocr-cls", "centerface", "magika")
failures = []
ort.set_default_logger_severity(3)


def fail(what, msg):
    failures.append(f"{what}: {msg}")
    print(f"FAIL {what}: {msg}")


def sh(args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)


def ort_run(path, feeds):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    f = {}
    for i in s.get_inputs():
        v = feeds[i.name]
        f[i.name] = v.astype(np.float16) if i.type == "tensor(float16)" else v
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, f)))


def gwr_run(path, feeds, work):
    m = onnx.load(path)
    os.makedirs(work, exist_ok=True)
    types = {i.name: i.type.tensor_type.elem_type for i in m.graph.input}
    cmd = [GWR, "run", path, "--no-optimize", "-o", os.path.join(work, "out")]
    for k, (name, a) in enumerate(feeds.items()):
        if types.get(name) == onnx.TensorProto.FLOAT16:
            a = a.astype(np.float16)
        p = os.path.join(work, f"in_{k}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
        cmd += ["--input", f"{name}={p}"]
    r = sh(cmd)
    if r.returncode:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    outs = {}
    d = os.path.join(work, "out")
    for fn in sorted(os.listdir(d)):
        t = onnx.load_tensor(os.path.join(d, fn))
        # bfloat16 outputs come back as uint16 holding the upper bits of a float32
        a = numpy_helper.to_array(t)
        if t.data_type == onnx.TensorProto.BFLOAT16:
            a = (np.asarray(a).astype(np.uint32) << 16).view(np.float32) if a.dtype == np.uint16 else a
        outs[t.name] = a
    return outs


def worst(ref, got, scale_by_ref):
    """max over outputs of max|a-b| / max(1, max|ref|) (scale_by_ref) or
    the ratio to 1e-2 + 1e-2|b|."""
    w = 0.0
    for name, b in ref.items():
        a = got[name]
        if a.shape != b.shape:
            return float("inf")
        a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
        if not np.issubdtype(b.dtype, np.floating):
            if np.any(a64 != b64):
                return float("inf")
            continue
        d = np.abs(a64 - b64)
        if np.any(np.isnan(d)):
            return float("inf")
        if scale_by_ref:
            w = max(w, float(d.max()) / max(1.0, float(np.abs(b64).max())))
        else:
            w = max(w, float(np.max(d / (1e-2 + 1e-2 * np.abs(b64)))))
    return w


def nodes_of(path):
    m = onnx.load(path)
    return m, {n.name: n for n in m.graph.node}


def written_and_valid(what, r, out):
    """gwr precision exited 0 and its file passes onnx's full check."""
    if r.returncode:
        fail(what, f"gwr precision: {r.stderr.strip()}")
        return False
    try:
        onnx.checker.check_model(onnx.load(out), full_check=True)
    except Exception as e:  # noqa: BLE001
        fail(what, f"onnx.checker: {str(e)[:300]}")
        return False
    return True


def check_fp16(tag, src, feeds, ref, work, keep_io, extra=()):
    out = os.path.join(work, f"{tag}.fp16{'.io' if keep_io else ''}.onnx")
    r = sh([GWR, "precision", src, "-o", out, "--to", "fp16", *(["--keep-io"] if keep_io else []), *extra])
    what = f"{tag} fp16{' --keep-io' if keep_io else ''}"
    if not written_and_valid(what, r, out):
        return None
    m = onnx.load(out)
    io = [v.type.tensor_type.elem_type for v in list(m.graph.input) + list(m.graph.output)
          if v.name not in {i.name for i in m.graph.initializer}]
    want = onnx.TensorProto.FLOAT if keep_io else onnx.TensorProto.FLOAT16
    if any(t != want for t in io if t in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)):
        fail(what, f"interface types {io}, expected all {onnx.TensorProto.DataType.Name(want)}")
    try:
        got_ort = ort_run(out, feeds)
    except Exception as e:  # noqa: BLE001
        return fail(what, f"onnxruntime cannot run it: {str(e)[:300]}")
    try:
        got_gwr = gwr_run(out, feeds, os.path.join(work, what.replace(" ", "_")))
    except Exception as e:  # noqa: BLE001
        return fail(what, f"gwr run: {e}")
    w1 = worst(got_ort, got_gwr, False)
    w2 = worst(ref, {k: v.astype(np.float32) for k, v in got_ort.items()}, True)
    ok = w1 <= 1 and w2 <= 2e-2
    print(f"{'ok  ' if ok else 'FAIL'} {what}: gwr vs onnxruntime {w1:.3g} x (1e-2 + 1e-2|b|), "
          f"vs float32 {w2:.3g} x max(1,|ref|)")
    if w1 > 1:
        failures.append(f"{what}: gwr and onnxruntime differ on the float16 model ({w1:.3g} x the tolerance)")
    if w2 > 2e-2:
        failures.append(f"{what}: the float16 model is {w2:.3g} x max(1,|ref|) off float32 (> 2e-2)")
    return out


def check_bf16(tag, src, feeds, ref, work):
    out = os.path.join(work, f"{tag}.bf16.onnx")
    what = f"{tag} bf16 --keep-io"
    r = sh([GWR, "precision", src, "-o", out, "--to", "bf16", "--keep-io"])
    opset = max([o.version for o in onnx.load(src).opset_import if o.domain in ("", "ai.onnx")] + [1])
    if opset < 13:
        # Cast and Constant take bfloat16 from opset 13: refused, exit 2, nothing written
        lines = r.stderr.strip().splitlines()
        ok = r.returncode == 2 and len(lines) == 1 and "opset 13" in lines[0] and not os.path.exists(out)
        print(f"{'ok  ' if ok else 'FAIL'} {what}: opset {opset} refused: exit {r.returncode}, {lines}")
        if not ok:
            failures.append(f"{what}: opset {opset}: want exit 2 and one line naming opset 13")
        return
    if not written_and_valid(what, r, out):
        return
    try:
        got = gwr_run(out, feeds, os.path.join(work, what.replace(" ", "_")))
    except Exception as e:  # noqa: BLE001
        return fail(what, f"gwr run: {e}")
    w = worst(ref, got, True)
    try:
        ort_run(out, feeds)
        o = "onnxruntime runs it"
    except Exception as e:  # noqa: BLE001
        o = "onnxruntime does not load it: " + str(e).splitlines()[0][:160]
    print(f"{'ok  ' if w <= 6e-2 else 'FAIL'} {what}: gwr vs float32 {w:.3g} x max(1,|ref|); {o}")
    if w > 6e-2:
        failures.append(f"{what}: {w:.3g} x max(1,|ref|) off float32 (> 6e-2)")


def check_auto(tag, src, feeds, ref, work, tol, extra=(), must_keep=()):
    out = os.path.join(work, f"{tag}.auto.onnx")
    rep = os.path.join(work, f"{tag}.auto.txt")
    what = f"{tag} --auto {tol}"
    r = sh([GWR, "precision", src, "-o", out, "--to", "fp16", "--keep-io", "--auto", str(tol), "--report", rep, *extra])
    if r.returncode:
        return fail(what, f"gwr precision: {r.stderr.strip()}")
    text = open(rep).read()
    kept = [line for line in text.splitlines() if "kept float32: auto" in line]
    try:
        got = ort_run(out, feeds)
    except Exception as e:  # noqa: BLE001
        return fail(what, f"onnxruntime: {str(e)[:300]}")
    w = worst(ref, {k: v.astype(np.float32) for k, v in got.items()}, True) / tol
    # the float32 layers of the file are those the report keeps
    m = onnx.load(out)
    names = {n.name for n in m.graph.node}
    for line in kept:
        if line.split()[0] not in names:
            fail(what, f"report keeps '{line.split()[0]}', not in the file")
    for layer in must_keep:
        if not any(line.split()[0] == layer for line in kept):
            fail(what, f"'{layer}' is not kept float32 by auto")
    print(f"{'ok  ' if w <= 2 else 'FAIL'} {what}: {len(kept)} layers kept by auto, "
          f"outputs {w:.3g} x tol off float32 (onnxruntime on the file); {r.stdout.strip()}")
    if w > 2:
        failures.append(f"{what}: outputs {w:.3g} x tol off float32 (> 2)")


def check_bad(work, fp16_file, src):
    cases = [("--to fp8", [src, "--to", "fp8"]), ("--auto -1", [src, "--to", "fp16", "--auto", "-1"]),
             ("--auto x", [src, "--to", "fp16", "--auto", "x"]),
             ("already float16", [fp16_file, "--to", "fp16"])]
    for what, args in cases:
        out = os.path.join(work, "bad.onnx")
        r = sh([GWR, "precision", *args, "-o", out])
        lines = r.stderr.strip().splitlines()
        ok = r.returncode == 2 and len(lines) == 1 and not os.path.exists(out)
        print(f"{'ok  ' if ok else 'FAIL'} bad input {what}: exit {r.returncode}, {lines}")
        if not ok:
            failures.append(f"bad input {what}: exit {r.returncode} (want 2), {len(lines)} stderr lines, "
                            f"written: {os.path.exists(out)}")


def main():
    with tempfile.TemporaryDirectory() as work:
        fp16_any = None
        for name in precision_models.NAMES:
            m, feeds = precision_models.make(name)
            src = os.path.join(work, f"{name}.onnx")
            onnx.save(m, src)
            ref = ort_run(src, feeds)
            for keep_io in (False, True):
                f = check_fp16(name, src, feeds, ref, work, keep_io)
                fp16_any = fp16_any or f
                if f and name == "transformer":
                    _, nodes = nodes_of(f)
                    rng = [n for n in nodes.values() if n.op_type == "Range"]
                    # Range's inputs are float32 scalars: the node stays float32
                    if not rng:
                        fail("transformer", "Range is gone")
                if f and name == "ifbody":
                    mm, nodes = nodes_of(f)
                    br = nodes.get("branch")
                    if not br or any(a.g.node[0].op_type not in ("Relu", "Neg") for a in br.attribute):
                        fail("ifbody", "the If's bodies changed")
            check_bf16(name, src, feeds, ref, work)
            if name in ("transformer", "cnn"):
                check_auto(name, src, feeds, ref, work, 1e-3)
        # --auto where it has to search: the offset layers of "mlp" (+300,
        # -300: float16's ulp there is 0.25) must stay float32, by arithmetic
        m, feeds = precision_models.make("mlp")
        src = os.path.join(work, "mlp.onnx")
        onnx.save(m, src)
        check_auto("mlp", src, feeds, ort_run(src, feeds), work, 1e-3, must_keep=("offset_up", "offset_down"))
        models = {m.name: m for m in manifest.load()}
        for name in REAL:
            model = models[name]
            if not os.path.exists(model.path):
                msg = f"{model.path} is not cached: .venv/bin/python bench/real/fetch.py --only {name}"
                if "ci" in model.flags:
                    fail(name, msg)
                else:
                    print(f"SKIP {name}: {msg} (not a ci model)")
                continue
            proto = onnx.load(model.path)
            feeds = manifest.make_inputs(model, proto, seed=0)
            ref = ort_run(model.path, feeds)
            for keep_io in (False, True):
                check_fp16(name, model.path, feeds, ref, work, keep_io)
            check_bf16(name, model.path, feeds, ref, work)
            if name == "magika" or (name == "oww-embedding"):
                shapes = [a for s in model.inputs for a in ("--shape", f"{s.name}={','.join(map(str, s.shape))}")]
                # two samples: the sanitizer build runs this too
                check_auto(name, model.path, feeds, ref, work, 1e-2, shapes + ["--samples", "2"])
        check_bad(work, fp16_any, os.path.join(work, "cnn.onnx"))
    if failures:
        print(f"\n{len(failures)} failure(s):")
        for f in failures:
            print("  " + f)
        return 1
    print("\nall passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
