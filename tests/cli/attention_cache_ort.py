"""ONNX Attention (opset 23) on gwr's executor against onnxruntime 1.31's.

    .venv/bin/python tests/cli/attention_cache_ort.py build/gwr

The decoder forms gwr's float32 kernel (src/exec/kernels/attention_cache.c)
takes: 4-D Q, K, V with grouped-query heads, past_key / past_value,
is_causal, bool and additive masks, float32 and float16, one-row decode
steps and prefill blocks past 64 rows. Each model's inputs are written as
TensorProto files, `gwr run --input ... -o DIR` runs it, and onnxruntime
runs the same model on the same inputs; Y, present_key and present_value
must agree (float32: 1e-5 + 1e-4 |x|; float16: 2e-3 + 2e-3 |x|).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
from onnx import TensorProto, helper

GWR = sys.argv[1]
rng = np.random.default_rng(25)
# name, dtype, B, qh, kvh, S, P, D, mask ("", "bool", "float"), causal
CASES = [
    ("decode_gqa_128", np.float32, 1, 8, 2, 1, 128, 64, "", 1),
    ("decode_gqa_1024_mask", np.float32, 1, 8, 2, 1, 1024, 64, "float", 0),
    ("decode_batch2_boolmask", np.float32, 2, 4, 1, 1, 37, 16, "bool", 0),
    ("decode_4rows_causal", np.float32, 1, 6, 3, 4, 20, 8, "", 1),
    ("prefill_causal_empty_past", np.float32, 1, 8, 2, 70, 0, 32, "", 1),
    ("prefill_past_mask", np.float32, 2, 4, 2, 9, 30, 16, "float", 1),
    ("decode_fp16", np.float16, 1, 8, 2, 1, 300, 64, "", 1),
    ("prefill_fp16_boolmask", np.float16, 1, 4, 2, 66, 5, 32, "bool", 1),
]


def model(path, dt, with_mask, mask_dt, causal):
    t = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dt))
    names = ["Q", "K", "V", "mask", "past_key", "past_value"]
    ins = [helper.make_tensor_value_info(n, t, None) for n in names if n != "mask"]
    if with_mask:
        ins.insert(3, helper.make_tensor_value_info("mask", onnx.helper.np_dtype_to_tensor_dtype(np.dtype(mask_dt)), None))
    has_past = any(i.name == "past_key" for i in ins)
    node_in = ["Q", "K", "V", "mask" if with_mask else "", "past_key", "past_value"]
    outs = [helper.make_tensor_value_info(n, t, None) for n in ("Y", "present_key", "present_value")]
    node = helper.make_node("Attention", node_in, ["Y", "present_key", "present_value"], is_causal=causal)
    g = helper.make_graph([node], "att", ins, outs)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10), path)
    return has_past


def main():
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, dt, B, qh, kvh, S, P, D, mk, causal in CASES:
            T = P + S
            feeds = {"Q": rng.standard_normal((B, qh, S, D)).astype(dt), "K": rng.standard_normal((B, kvh, S, D)).astype(dt),
                     "V": rng.standard_normal((B, kvh, S, D)).astype(dt),
                     "past_key": rng.standard_normal((B, kvh, P, D)).astype(dt),
                     "past_value": rng.standard_normal((B, kvh, P, D)).astype(dt)}
            if mk == "bool":
                feeds["mask"] = rng.random((B, 1, S, T)) > 0.2
                feeds["mask"][..., 0] = True  # no row sees no key (onnxruntime gives NaN there, the spec zeros)
            elif mk == "float":
                feeds["mask"] = (rng.standard_normal((1, qh, S, T)) * 2).astype(dt)
            path = os.path.join(tmp, name + ".onnx")
            model(path, dt, bool(mk), feeds["mask"].dtype if mk else None, causal)
            args = [GWR, "run", path, "-o", os.path.join(tmp, name)]
            for n, v in feeds.items():
                f = os.path.join(tmp, f"{name}_{n}.pb")
                with open(f, "wb") as fh:
                    fh.write(onnx.numpy_helper.from_array(v, n).SerializeToString())
                args += ["--input", f"{n}={f}"]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode:
                print(f"FAIL {name}: gwr run: {r.stderr.strip() or r.stdout.strip()}")
                bad += 1
                continue
            want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
            tol = 1e-5 if dt == np.float32 else 2e-3
            case_bad = bad
            for i, w in enumerate(want):
                got = onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(tmp, name, f"output_{i}.pb")))
                w64, g64 = w.astype(np.float64), got.astype(np.float64)
                if got.shape != w.shape or not np.all(np.abs(g64 - w64) <= tol + tol * 10 * np.abs(w64)):
                    err = np.max(np.abs(g64 - w64)) if got.shape == w.shape else f"shape {got.shape} vs {w.shape}"
                    print(f"FAIL {name}: output {i} differs from onnxruntime's: {err}")
                    bad += 1
            if bad == case_bad:
                print(f"ok {name}")
    print(f"{len(CASES)} cases, {bad} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
