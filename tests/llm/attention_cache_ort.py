#!/usr/bin/env python3
"""fuse_attention's KV-cache form and its GroupQueryAttention lowering on
the stock decoder fixtures, judged by onnxruntime (the project venv).

    attention_cache_ort.py GWR [NAME...]

For each fixture (tests/llm/decoder_fixture.py; default llama-tiny,
qwen2-tiny, phi3-tiny, gpt2-tiny, llama-tiny-fp16: 2 layers each) it writes
`gwr optimize --target ort` and `--target gwr`, counts the fused ops (one
com.microsoft GroupQueryAttention, resp. one ONNX Attention with
past_key/past_value, per layer; no Softmax left), then runs a prefill
(batch 2, 5 tokens, no past) and a decode step (batch 2, 1 token, past 7)
with an all-ones attention_mask (GroupQueryAttention's assumption) and
compares logits and every present with the unfused model run by
onnxruntime: |a - b| <= 1e-4 + 1e-4 |b| (float16 outputs: 1e-3 + 4e-3 |b|,
two ulps; gwr's executor and onnxruntime differ by one on the unfused
float16 model already). The --target gwr file keeps the
model's opset 18; it is run by gwr's executor (`gwr run`) and onnxruntime
on a copy importing opset 23 (Attention's: both check a kernel's opset;
these graphs use no op that changed between the two).
Exit 1 on a failure.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from gwr_io import gwr_run

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-4


def ort_run(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    data = model if isinstance(model, bytes) else open(model, "rb").read()
    s = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, feeds)))


def feeds_for(model, batch, seq, past, seed):
    rng = np.random.default_rng(seed)
    g = model.graph
    vocab = None
    for init in g.initializer:
        if "embed_tokens" in init.name or init.name.endswith("wte.weight"):
            vocab = init.dims[0]
    f = {}
    for i in g.input:
        t = i.type.tensor_type
        dt = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        if i.name == "input_ids":
            f[i.name] = rng.integers(0, vocab or 100, (batch, seq)).astype(dt)
        elif i.name == "attention_mask":
            f[i.name] = np.ones((batch, past + seq), dt)
        elif i.name == "position_ids":
            f[i.name] = np.tile(np.arange(past, past + seq, dtype=dt), (batch, 1))
        elif i.name.startswith("past_key_values."):
            dims = [d.dim_value for d in t.shape.dim]
            f[i.name] = (0.5 * rng.standard_normal((batch, dims[1], past, dims[3]))).astype(dt)
        else:
            raise SystemExit(f"attention_cache_ort.py: unexpected input {i.name}")
    return f


def count(model, op, domain=""):
    return sum(1 for n in model.graph.node if n.op_type == op and n.domain in (domain, "ai.onnx" if not domain else domain))


def compare(tag, ref, got, fails):
    worst = 0.0
    for k, r in ref.items():
        if k not in got:
            fails.append(f"{tag}: output {k} missing")
            continue
        g = np.asarray(got[k], np.float64)
        r = np.asarray(r, np.float64)
        if g.shape != r.shape:
            fails.append(f"{tag}: {k} shape {g.shape} != {r.shape}")
            continue
        tol = (1e-3, 4e-3) if got[k].dtype == np.float16 else (TOL, TOL)  # float16: two ulps (2^-10 relative)
        bad = np.abs(g - r) > tol[0] + tol[1] * np.abs(r)
        worst = max(worst, float(np.max(np.abs(g - r))) if g.size else 0.0)
        if bad.any():
            fails.append(f"{tag}: {k} differs by {np.max(np.abs(g - r)):.3g}")
    print(f"{tag}: max abs difference {worst:.2e}")


def opset23(path):
    m = onnx.load(path)
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = max(o.version, 23)
    m.ir_version = max(m.ir_version, 10)
    return m.SerializeToString()


def check(gwr, name, tmp, fails):
    src = os.path.join(tmp, name + ".onnx")
    subprocess.run([sys.executable, os.path.join(HERE, "decoder_fixture.py"), name, src], check=True)
    orig = onnx.load(src)
    layers = sum(1 for i in orig.graph.input if i.name.endswith(".key"))
    out = {}
    for target in ("ort", "gwr"):
        out[target] = os.path.join(tmp, f"{name}.{target}.onnx")
        # gwr.SwiGLU is gwr's own op: without it the target-gwr file also runs in onnxruntime
        extra = ["--disable", "fuse_swiglu"] if target == "gwr" else []
        r = subprocess.run([gwr, "optimize", src, "-o", out[target], "--target", target] + extra, capture_output=True, text=True)
        if r.returncode:
            fails.append(f"{name} --target {target}: {r.stderr.strip()}")
            return
    mo, mg = onnx.load(out["ort"]), onnx.load(out["gwr"])
    gqa = count(mo, "GroupQueryAttention", "com.microsoft")
    att = sum(1 for n in mg.graph.node if n.op_type == "Attention" and n.domain in ("", "ai.onnx") and len(n.input) == 6)
    print(f"{name}: {layers} layers; --target ort: {gqa} GroupQueryAttention, --target gwr: {att} Attention with a cache")
    if gqa != layers or count(mo, "Softmax") or count(mo, "Attention"):
        fails.append(f"{name}: --target ort has {gqa} GroupQueryAttention of {layers}")
    if att != layers or count(mg, "Softmax"):
        fails.append(f"{name}: --target gwr has {att} Attention with a cache of {layers}")
    g23 = opset23(out["gwr"])
    p23 = os.path.join(tmp, f"{name}.gwr23.onnx")
    with open(p23, "wb") as fh:
        fh.write(g23)
    for step, (batch, seq, past) in (("prefill", (2, 5, 0)), ("decode", (2, 1, 7))):
        feeds = feeds_for(orig, batch, seq, past, 1)
        ref = ort_run(src, feeds)
        for tag, model in ((f"{name} {step} ort", out["ort"]), (f"{name} {step} gwr-in-ort", g23)):
            try:
                compare(tag, ref, ort_run(model, feeds), fails)
            except Exception as e:  # noqa: BLE001 - reported as a failure
                fails.append(f"{tag}: {e}")
        try:
            compare(f"{name} {step} gwr-run", ref, gwr_run(gwr, p23, feeds, os.path.join(tmp, f"{name}-{step}")), fails)
        except Exception as e:  # noqa: BLE001
            fails.append(f"{name} {step} gwr-run: {e}")


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    names = argv[2:] or ["llama-tiny", "qwen2-tiny", "phi3-tiny", "gpt2-tiny", "llama-tiny-fp16"]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            check(argv[1], n, tmp, fails)
    for f in fails:
        print("FAIL", f)
    print(f"{len(names)} models, {len(fails)} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
