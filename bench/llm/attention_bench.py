"""The decode step of one attention layer: gwr vs onnxruntime.

    .venv/bin/python bench/llm/attention_bench.py [--gwr-bench build/bench/bench_attention]
        [--caches 128,1024] [--threads 1,2] [--heads 8] [--kv-heads 2] [--head-size 64] [--dtype float16]

One query token against a cache of P keys, qh query heads sharing kvh key
heads (GQA). gwr runs an ONNX Attention (opset 23) layer on its executor
(bench/bench_attention.c: the cache a gwr KV-cache value fed back step after
step, appended in place; and, for comparison, plain tensors of length P,
which the kernel copies into a new cache every step). onnxruntime 1.31 runs
com.microsoft GroupQueryAttention (query/key/value (1, 1, N*D), past of
length P, seqlens_k, total_sequence_length), the same ONNX Attention
model, and the exporters' unfused form (Concat, repeat_kv by Expand,
MatMul, Softmax, MatMul), both with past given as a tensor of length P each step (present is a
new tensor of P + 1) through IOBinding with inputs bound once; its Python
call overhead is measured on an Identity model and reported apart. Times
are the median step in microseconds over a few thousand steps; each figure
is measured in its own process-free loop on the same machine, one after the
other.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper
import onnxruntime as ort


def step_io(qh, kvh, D, f):
    """One decode step's graph inputs (Q, K, V, past_key, past_value) and outputs (Y, presents), (B, heads, S, D)."""
    ins = [helper.make_tensor_value_info("Q", f, [1, qh, 1, D]),
           helper.make_tensor_value_info("K", f, [1, kvh, 1, D]),
           helper.make_tensor_value_info("V", f, [1, kvh, 1, D]),
           helper.make_tensor_value_info("past_key", f, [1, kvh, "P", D]),
           helper.make_tensor_value_info("past_value", f, [1, kvh, "P", D])]
    outs = [helper.make_tensor_value_info("Y", f, [1, qh, 1, D]),
            helper.make_tensor_value_info("present_key", f, [1, kvh, "T", D]),
            helper.make_tensor_value_info("present_value", f, [1, kvh, "T", D])]
    return ins, outs


def attention_model(path, qh, kvh, D, f=TensorProto.FLOAT):
    ins, outs = step_io(qh, kvh, D, f)
    node = helper.make_node("Attention", ["Q", "K", "V", "", "past_key", "past_value"], ["Y", "present_key", "present_value"],
                            is_causal=1)
    g = helper.make_graph([node], "attention_step", ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    onnx.save(m, path)


def gqa_model(path, qh, kvh, D, f=TensorProto.FLOAT):
    i32 = TensorProto.INT32
    ins = [helper.make_tensor_value_info("query", f, [1, 1, qh * D]),
           helper.make_tensor_value_info("key", f, [1, 1, kvh * D]),
           helper.make_tensor_value_info("value", f, [1, 1, kvh * D]),
           helper.make_tensor_value_info("past_key", f, [1, kvh, "P", D]),
           helper.make_tensor_value_info("past_value", f, [1, kvh, "P", D]),
           helper.make_tensor_value_info("seqlens_k", i32, [1]),
           helper.make_tensor_value_info("total_sequence_length", i32, [])]
    outs = [helper.make_tensor_value_info("output", f, [1, 1, qh * D]),
            helper.make_tensor_value_info("present_key", f, [1, kvh, "T", D]),
            helper.make_tensor_value_info("present_value", f, [1, kvh, "T", D])]
    node = helper.make_node("GroupQueryAttention", [i.name for i in ins], [o.name for o in outs], domain="com.microsoft",
                            num_heads=qh, kv_num_heads=kvh)
    g = helper.make_graph([node], "gqa_step", ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
                          ir_version=10)
    onnx.save(m, path)


def unfused_model(path, qh, kvh, D, f=TensorProto.FLOAT):
    """The exporters' form: Concat past and new, repeat_kv (Unsqueeze, Expand, Reshape), MatMul, scale, Softmax, MatMul."""
    ins, outs = step_io(qh, kvh, D, f)
    i64 = TensorProto.INT64
    inits = [helper.make_tensor("ax2", i64, [1], [2]), helper.make_tensor("rep", i64, [5], [1, kvh, qh // kvh, 1, 1]),
             helper.make_tensor("shp", i64, [4], [1, qh, -1, D]),
             helper.make_tensor("scale", f, [], [1.0 / np.sqrt(D)])]
    nodes = [helper.make_node("Concat", ["past_key", "K"], ["present_key"], axis=2),
             helper.make_node("Concat", ["past_value", "V"], ["present_value"], axis=2)]
    for n in ("key", "value"):
        nodes += [helper.make_node("Unsqueeze", [f"present_{n}", "ax2"], [f"{n}5"]),
                  helper.make_node("Expand", [f"{n}5", "rep"], [f"{n}x"]),
                  helper.make_node("Reshape", [f"{n}x", "shp"], [f"{n}r"])]
    nodes += [helper.make_node("Transpose", ["keyr"], ["kt"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["Q", "kt"], ["s"]), helper.make_node("Mul", ["s", "scale"], ["ss"]),
              helper.make_node("Softmax", ["ss"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "valuer"], ["Y"])]
    g = helper.make_graph(nodes, "unfused_step", ins, outs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)


def identity_model(path):
    f = TensorProto.FLOAT
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "id",
                          [helper.make_tensor_value_info("x", f, [1])], [helper.make_tensor_value_info("y", f, [1])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)


def ort_step_us(path, feeds, outs, threads, seconds=1.5):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    io = sess.io_binding()
    for k, v in feeds.items():
        io.bind_ortvalue_input(k, ort.OrtValue.ortvalue_from_numpy(v))
    for o in outs:
        io.bind_output(o, "cpu")
    for _ in range(20):
        sess.run_with_iobinding(io)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 200:
        a = time.perf_counter_ns()
        sess.run_with_iobinding(io)
        times.append((time.perf_counter_ns() - a) / 1e3)
    return float(np.median(times))


def gwr_step_us(exe, model, P, threads, dense):
    args = [exe, model, str(P), str(threads), "32", "100"] + (["dense"] if dense else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return float(out.split()[1])


def check_against_ort(gwr, att, unf, P, tmp):
    """gwr's Attention on random inputs (gwr run -o) against onnxruntime's unfused model: max |diff| of Y and present."""
    out = os.path.join(tmp, f"check{P}")
    subprocess.run([gwr, "run", att, "--random", "1", "--shape", f"P={P}", "-o", out], check=True, capture_output=True)
    load = lambda f: onnx.numpy_helper.to_array(onnx.load_tensor(os.path.join(out, f)))
    feeds = {n: load(f"input_{i}.pb") for i, n in enumerate(["Q", "K", "V", "past_key", "past_value"])}
    want = ort.InferenceSession(unf, providers=["CPUExecutionProvider"]).run(["Y", "present_key", "present_value"], feeds)
    return max(float(np.max(np.abs(load(f"output_{i}.pb").astype(np.float64) - w.astype(np.float64)))) for i, w in enumerate(want))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gwr-bench", default="build/bench/bench_attention")
    ap.add_argument("--gwr", default="build/gwr")
    ap.add_argument("--caches", default="128,1024")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-size", type=int, default=64)
    ap.add_argument("--dtype", choices=["float32", "float16"], default="float32")
    a = ap.parse_args()
    tp, npt = (TensorProto.FLOAT, np.float32) if a.dtype == "float32" else (TensorProto.FLOAT16, np.float16)
    qh, kvh, D = a.heads, a.kv_heads, a.head_size
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        att, gqa, unf, idm = (os.path.join(tmp, n) for n in ("attention.onnx", "gqa.onnx", "unfused.onnx", "identity.onnx"))
        attention_model(att, qh, kvh, D, tp)
        gqa_model(gqa, qh, kvh, D, tp)
        unfused_model(unf, qh, kvh, D, tp)
        identity_model(idm)
        print(f"decode step, one layer, {a.dtype}: {qh} query heads, {kvh} kv heads, head size {D}; onnxruntime {ort.__version__}")
        print("| cache | threads | gwr Attention (cache in place) | gwr Attention (dense past) | ort GroupQueryAttention "
              "| ort Attention-23 | ort unfused | ort Python call (Identity) | gwr / ort GQA |")
        print("|---|---|---|---|---|---|---|---|---|")
        for P in (int(x) for x in a.caches.split(",")):
            print(f"cache {P}: gwr's Y and present against onnxruntime's unfused model: max |diff| "
                  f"{check_against_ort(a.gwr, att, unf, P, tmp):.2e}", file=sys.stderr)
            r = lambda *s: rng.standard_normal(s).astype(npt)
            gq = {"query": r(1, 1, qh * D), "key": r(1, 1, kvh * D), "value": r(1, 1, kvh * D),
                  "past_key": r(1, kvh, P, D), "past_value": r(1, kvh, P, D),
                  "seqlens_k": np.array([P], np.int32), "total_sequence_length": np.array(P + 1, np.int32)}
            at = {"Q": r(1, qh, 1, D), "K": r(1, kvh, 1, D), "V": r(1, kvh, 1, D),
                  "past_key": r(1, kvh, P, D), "past_value": r(1, kvh, P, D)}
            for t in (int(x) for x in a.threads.split(",")):
                g_in = gwr_step_us(a.gwr_bench, att, P, t, False)
                g_dn = gwr_step_us(a.gwr_bench, att, P, t, True)
                o_gqa = ort_step_us(gqa, gq, ["output", "present_key", "present_value"], t)
                try:
                    o_att = ort_step_us(att, at, ["Y", "present_key", "present_value"], t)
                except Exception as e:  # noqa: BLE001 - an ORT without the op
                    print(f"(ort Attention-23: {str(e).splitlines()[0]})", file=sys.stderr)
                    o_att = float("nan")
                o_unf = ort_step_us(unf, at, ["Y", "present_key", "present_value"], t)
                o_id = ort_step_us(idm, {"x": np.zeros(1, np.float32)}, ["y"], t, seconds=0.5)
                print(f"| {P} | {t} | {g_in:.1f} | {g_dn:.1f} | {o_gqa:.1f} | {o_att:.1f} | {o_unf:.1f} | {o_id:.1f} | {g_in / o_gqa:.2f}x |")


if __name__ == "__main__":
    main()
