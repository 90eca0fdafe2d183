#!/usr/bin/env python3
"""gwr optimize --target gwr on the decoder fixtures (tests/llm/decoder_fixture.py):
the gated MLPs become one MatMul of [W_gate | W_up] and gwr::SwiGLU
(merge_gate_up_matmuls, fuse_swiglu; Phi-3's fused gate_up_proj + Slices
too), every layer's, and gwr's executor runs the optimized model to
onnxruntime's results on the model as exported (a decode step over a
cache and a prefill), within 1e-4 in float32; at 1 and 2 threads with the
same bits. gwr optimize --target ort merges the gate and up projections
too (SiLU kept), and onnxruntime runs that model to the same results.

    test_swiglu_e2e.py GWR
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
GWR = sys.argv[1]
FAILS = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILS.append(what)


def inputs(model, past, seq, rng):
    feeds = {}
    for inp in model.graph.input:
        tt = inp.type.tensor_type
        dims = [d.dim_value for d in tt.shape.dim]
        if inp.name == "input_ids":
            feeds[inp.name] = rng.integers(0, 100, (1, seq)).astype(np.int64)
        elif inp.name == "attention_mask":
            feeds[inp.name] = np.ones((1, past + seq), np.int64)
        elif inp.name == "position_ids":
            feeds[inp.name] = np.arange(past, past + seq, dtype=np.int64)[None, :]
        else:
            dt = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
            feeds[inp.name] = (0.5 * rng.standard_normal((1, dims[1], past, dims[3]))).astype(dt)
    return feeds


def one(name, tmp):
    src = os.path.join(tmp, name + ".onnx")
    opt = os.path.join(tmp, name + ".gwr.onnx")
    subprocess.run([sys.executable, os.path.join(HERE, "decoder_fixture.py"), name, src], check=True)
    subprocess.run([GWR, "optimize", src, "-o", opt, "--target", "gwr"], check=True, stdout=subprocess.DEVNULL)
    m0, m1 = onnx.load(src), onnx.load(opt)
    layers = sum(1 for n in m0.graph.node if n.op_type == "MatMul" and "down_proj" in n.name)
    swiglu = [n for n in m1.graph.node if n.domain == "gwr" and n.op_type == "SwiGLU"]
    check(layers > 0 and len(swiglu) == layers, f"{name}: {len(swiglu)} gwr::SwiGLU for {layers} MLPs")
    left = [n.op_type for n in m1.graph.node if n.op_type in ("Sigmoid", "QuickGelu")]
    check(not left, f"{name}: no SiLU left ({left})")
    mm0 = sum(1 for n in m0.graph.node if n.op_type == "MatMul")
    mm1 = sum(1 for n in m1.graph.node if n.op_type == "MatMul")
    merged = "phi3" not in name  # Phi-3 exports gate_up_proj merged already
    check(mm1 <= mm0 - (layers if merged else 0), f"{name}: MatMuls {mm0} -> {mm1}")
    opt_ort = os.path.join(tmp, name + ".ort.onnx")
    subprocess.run([GWR, "optimize", src, "-o", opt_ort, "--target", "ort"], check=True, stdout=subprocess.DEVNULL)
    m2 = onnx.load(opt_ort)
    mm2 = sum(1 for n in m2.graph.node if n.op_type == "MatMul")
    check(not any(n.domain == "gwr" for n in m2.graph.node), f"{name}: no gwr ops for target ort")
    if merged:
        gu = [n for n in m2.graph.node if n.op_type == "MatMul" and ("gate_proj" in n.name or "up_proj" in n.name)]
        check(not gu and mm2 <= mm0 - layers, f"{name}: target ort merged the gate and up projections (MatMuls {mm0} -> {mm2})")
    sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    sess_ort = ort.InferenceSession(opt_ort, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    for past, seq in ((9, 1), (0, 5), (6, 3)):
        feeds = inputs(m0, past, seq, rng)
        want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        got1 = gwr_run(GWR, opt, feeds, tempfile.mkdtemp(dir=tmp), "--no-optimize", "--threads", "1")
        got2 = gwr_run(GWR, opt, feeds, tempfile.mkdtemp(dir=tmp), "--no-optimize", "--threads", "2")
        worst = max(float(np.max(np.abs(got1[k].astype(np.float64) - want[k].astype(np.float64)))) for k in want)
        check(set(got1) == set(want) and worst <= 1e-4, f"{name} past {past} seq {seq}: |gwr - onnxruntime| {worst:.2e} <= 1e-4")
        # the fixture's logits are small (weights N(0, 0.02)): relative to their scale too
        rel = float(np.max(np.abs(got1["logits"] - want["logits"])) / np.max(np.abs(want["logits"])))
        check(rel <= 2e-5, f"{name} past {past} seq {seq}: logits within {rel:.2e} <= 2e-5 of their largest")
        check(all(np.array_equal(got1[k], got2[k]) for k in got1), f"{name} past {past} seq {seq}: same bits on 1 and 2 threads")
        got3 = dict(zip([o.name for o in sess_ort.get_outputs()], sess_ort.run(None, feeds)))
        worst = max(float(np.max(np.abs(got3[k].astype(np.float64) - want[k].astype(np.float64)))) for k in want)
        check(worst <= 1e-4, f"{name} past {past} seq {seq}: onnxruntime on the target-ort model {worst:.2e} <= 1e-4")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("llama-tiny", "qwen2-tiny", "phi3-tiny"):
            one(name, tmp)
    if FAILS:
        print(f"{len(FAILS)} failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
