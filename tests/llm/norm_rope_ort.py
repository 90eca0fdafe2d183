"""Issue 25, helper norm-rope: `gwr optimize` on the decoder fixtures (tests/llm/decoder_fixture.py,
the real exporters' graphs with seeded weights) against onnxruntime 1.31 running the unfused model.

For each fixture and target: the optimized file (target ort on onnxruntime, target gwr on gwr's
executor, `gwr run --no-optimize`) gives the logits and present.* of the unfused model
(onnxruntime) for a prefill (past length 0, 5
tokens) and a decode step (past length 6, one token, batch 2 with a left-padded row); the
counts of the fused ops are asserted: 2L+1 RMSNorms as 1 SimplifiedLayerNormalization + 2L
SkipSimplifiedLayerNormalization, no ReduceMean left, 2L rotary embeddings (q and k of each
layer) as ONNX RotaryEmbedding (target gwr: the file carries it; target ort: what onnxruntime
runs, com.microsoft RotaryEmbedding when the model's opset is below 23), and no Sin/Cos
computed per layer.

usage: norm_rope_ort.py GWR [FIXTURE...]
"""
import collections
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
import onnxruntime as ort
from gwr_io import gwr_run

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = ["llama-tiny", "llama-tiny-fp16", "qwen2-tiny", "phi3-tiny", "gptj-tiny"]
# GPT-J: LayerNorm (no RMSNorm), the interleaved rotary (rotate_every_two) on the first 8 of each
# head's 16, sin/cos gathered from a table by position_ids
INTERLEAVED = {"gptj-tiny": 8}
LAYERS = 2


def counts(path):
    m = onnx.load(path)
    return collections.Counter((n.domain + "::" if n.domain else "") + n.op_type for n in m.graph.node), m


def feeds(model, batch, past, seq, seed, pad=True):
    rng = np.random.default_rng(seed)
    dt = {1: np.float32, 10: np.float16}
    f = {}
    ins = {i.name: i for i in model.graph.input}
    vocab = 512
    f["input_ids"] = rng.integers(0, vocab, size=(batch, seq)).astype(np.int64)
    mask = np.ones((batch, past + seq), np.int64)
    pos = np.tile(np.arange(past, past + seq, dtype=np.int64), (batch, 1))
    if pad and batch > 1 and past > 2:  # row 1 left-padded by 2: its positions start at 0 after the padding
        mask[1, :2] = 0
        pos[1] -= 2
    f["attention_mask"] = mask
    if "position_ids" in ins:
        f["position_ids"] = pos
    for name, i in ins.items():
        if name.startswith("past_key_values"):
            shp = [d.dim_value for d in i.type.tensor_type.shape.dim]
            heads, hd = shp[1], shp[3]
            f[name] = (rng.standard_normal((batch, heads, past, hd)) * 0.5).astype(dt[i.type.tensor_type.elem_type])
    return f


def run(path, f):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, f)))


def run_gwr(gwr, path, f, d):
    """gwr run --no-optimize on the inputs f; the outputs by name."""
    return gwr_run(gwr, path, f, d, "--no-optimize")


def partial_model(path, opset):
    """Partial rotary as GPT-NeoX / Phi write it: q (B, N, S, 12), the first 8 rotated (rotate-half, the caches
    from F (B, S, 4) as Cos/Sin(Concat(F, F))), the last 4 passed, Concat'ed back."""
    from onnx import TensorProto as T, helper as h

    def c(name, v, dt=np.int64):
        return h.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, dt), name))

    nodes = [c("z", [0]), c("r", [8]), c("e", [12]), c("m1", [-1]), c("h", [4]), c("ax1", [1]),
             h.make_node("Concat", ["f", "f"], ["ff"], axis=-1),
             h.make_node("Cos", ["ff"], ["cos"]), h.make_node("Sin", ["ff"], ["sin"]),
             h.make_node("Unsqueeze", ["cos", "ax1"], ["cu"]), h.make_node("Unsqueeze", ["sin", "ax1"], ["su"]),
             h.make_node("Slice", ["q", "z", "r", "m1"], ["qr"]), h.make_node("Slice", ["q", "r", "e", "m1"], ["qp"]),
             h.make_node("Slice", ["qr", "z", "h", "m1"], ["x1"]), h.make_node("Slice", ["qr", "h", "r", "m1"], ["x2"]),
             h.make_node("Neg", ["x2"], ["nx2"]), h.make_node("Concat", ["nx2", "x1"], ["rh"], axis=-1),
             h.make_node("Mul", ["qr", "cu"], ["a"]), h.make_node("Mul", ["rh", "su"], ["b"]),
             h.make_node("Add", ["a", "b"], ["rot"]), h.make_node("Concat", ["rot", "qp"], ["y"], axis=-1)]
    g = h.make_graph(nodes, "partial", [h.make_tensor_value_info("q", T.FLOAT, ["B", 3, "S", 12]),
                                         h.make_tensor_value_info("f", T.FLOAT, ["B", "S", 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["B", 3, "S", 12])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 9
    onnx.save(m, path)


def cached_model(path, opset):
    """The cached form (older exports, Phi-2): cos = Gather(cos_cached (32, 8), position_ids), the tables
    computed ahead as Cos/Sin(Concat(freqs, freqs)); q (B, 3, S, 8) rotated by rotate-half."""
    from onnx import TensorProto as T, helper as h

    def c(name, v, dt=np.int64):
        return h.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(v, dt), name))

    freqs = np.outer(np.arange(32), 1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)
    emb = np.concatenate([freqs, freqs], -1)
    nodes = [c("z", [0]), c("h", [4]), c("e", [8]), c("m1", [-1]), c("ax1", [1]),
             c("tc", np.cos(emb), np.float32), c("ts", np.sin(emb), np.float32),
             h.make_node("Gather", ["tc", "position_ids"], ["cos"]), h.make_node("Gather", ["ts", "position_ids"], ["sin"]),
             h.make_node("Unsqueeze", ["cos", "ax1"], ["cu"]), h.make_node("Unsqueeze", ["sin", "ax1"], ["su"]),
             h.make_node("Slice", ["q", "z", "h", "m1"], ["x1"]), h.make_node("Slice", ["q", "h", "e", "m1"], ["x2"]),
             h.make_node("Neg", ["x2"], ["nx2"]), h.make_node("Concat", ["nx2", "x1"], ["rh"], axis=-1),
             h.make_node("Mul", ["q", "cu"], ["a"]), h.make_node("Mul", ["rh", "su"], ["b"]), h.make_node("Add", ["a", "b"], ["y"])]
    g = h.make_graph(nodes, "cached", [h.make_tensor_value_info("q", T.FLOAT, ["B", 3, "S", 8]),
                                       h.make_tensor_value_info("position_ids", T.INT64, ["B", "S"])],
                     [h.make_tensor_value_info("y", T.FLOAT, ["B", 3, "S", 8])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 9
    onnx.save(m, path)


def check_forms(gwr, tmp, fails):
    """partial rotary and the cached tables, opsets 18 and 23, both targets"""
    rng = np.random.default_rng(5)
    pos = np.array([[3, 4, 5, 6, 7], [0, 1, 2, 3, 4]], np.int64)
    forms = {"partial": (partial_model, {"q": rng.standard_normal((2, 3, 5, 12)).astype(np.float32),
                                         "f": rng.standard_normal((2, 5, 4)).astype(np.float32) * 3}, 12, 8),
             "cached": (cached_model, {"q": rng.standard_normal((2, 3, 5, 8)).astype(np.float32), "position_ids": pos}, 6, 0)}
    for form, (make, f, most, rd) in forms.items():
        for opset in (18, 23):
            src = os.path.join(tmp, f"{form}{opset}.onnx")
            make(src, opset)
            want = run(src, f)["y"]
            for target in ("ort", "gwr"):
                out = os.path.join(tmp, f"{form}{opset}.{target}.onnx")
                r = subprocess.run([gwr, "optimize", "--target", target, src, "-o", out], capture_output=True, text=True)
                if r.returncode:
                    fails.append(f"{form} rotary opset {opset} {target}: gwr optimize exit {r.returncode}: {r.stderr.strip()}")
                    continue
                m = onnx.load(out)
                res = [n for n in m.graph.node if n.op_type == "RotaryEmbedding"]
                dims = [a.i for n in res for a in n.attribute if a.name == "rotary_embedding_dim"] or [0]
                if len(m.graph.node) > most or len(res) != 1 or dims != [rd]:
                    fails.append(f"{form} rotary opset {opset} {target}: {len(m.graph.node)} nodes, RotaryEmbedding {len(res)} "
                                 f"with rotary_embedding_dim {dims}, want one with {rd}")
                try:
                    got = run(out, f)["y"] if target == "ort" or opset >= 23 else run_gwr(gwr, out, f, os.path.join(tmp, f"{form}{opset}"))["y"]
                except Exception as e:  # noqa: BLE001 - reported as a failure
                    fails.append(f"{form} rotary opset {opset} {target}: the file does not run: {e}")
                    continue
                d = float(np.abs(got - want).max())
                print(f"{form} rotary opset {opset} {target}: {len(m.graph.node)} nodes, worst difference {d:.3g}")
                if not d <= 1e-5:
                    fails.append(f"{form} rotary opset {opset} {target}: differs by {d}")


def main():
    gwr = sys.argv[1]
    names = sys.argv[2:] or FIXTURES
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            src = os.path.join(tmp, name + ".onnx")
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "decoder_fixture.py"), name, src],
                           check=True)
            base_counts, base = counts(src)
            half = "fp16" in name
            tol = 2e-2 if half else 1e-4
            for target in ("ort", "gwr"):
                out = os.path.join(tmp, f"{name}.{target}.onnx")
                r = subprocess.run([gwr, "optimize", "--target", target, src, "-o", out], capture_output=True, text=True)
                if r.returncode:
                    fails.append(f"{name} {target}: gwr optimize exit {r.returncode}: {r.stderr.strip()}")
                    continue
                c, om = counts(out)
                want = {
                    "SimplifiedLayerNormalization": 1,
                    "com.microsoft::SkipSimplifiedLayerNormalization": 2 * LAYERS,
                    "ReduceMean": 0,
                } if name not in INTERLEAVED else {"ReduceMean": 0}
                if name in INTERLEAVED:  # every rotary interleaved, over the first R of each head
                    for n in om.graph.node:
                        if n.op_type == "RotaryEmbedding":
                            a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
                            if a.get("interleaved") != 1 or a.get("rotary_embedding_dim") != INTERLEAVED[name]:
                                fails.append(f"{name} {target}: {n.domain or 'ONNX'} RotaryEmbedding with {a}")
                rot = c["RotaryEmbedding"] + c["com.microsoft::RotaryEmbedding"]
                for op, n in want.items():
                    if c[op] != n:
                        fails.append(f"{name} {target}: {c[op]} {op}, want {n}")
                if rot != 2 * LAYERS:
                    fails.append(f"{name} {target}: {rot} RotaryEmbedding, want {2 * LAYERS}")
                if c["Sin"] + c["Cos"] > 2 or c["Neg"]:
                    fails.append(f"{name} {target}: {c['Sin']} Sin, {c['Cos']} Cos, {c['Neg']} Neg left")
                print(f"{name} {target}: {sum(base_counts.values())} -> {sum(c.values())} nodes; "
                      f"SimplifiedLayerNormalization {c['SimplifiedLayerNormalization']}, "
                      f"SkipSimplifiedLayerNormalization {c['com.microsoft::SkipSimplifiedLayerNormalization']}, "
                      f"RotaryEmbedding {c['RotaryEmbedding']} (com.microsoft {c['com.microsoft::RotaryEmbedding']})")
                for case, (batch, past, seq) in {"prefill": (1, 0, 5), "decode": (2, 6, 1)}.items():
                    # target ort's attention is GroupQueryAttention, which (as onnxruntime's own
                    # optimizer assumes, docs/optimize.md) holds only for unpadded / right-padded rows
                    f = feeds(base, batch, past, seq, 7, pad=target == "gwr")
                    want_o = run(src, f)
                    try:  # the ort file on onnxruntime, the gwr file (its own ops) on gwr's executor
                        got = run(out, f) if target == "ort" else run_gwr(gwr, out, f, os.path.join(tmp, f"{name}.{case}"))
                    except Exception as e:  # noqa: BLE001 - reported as a failure
                        fails.append(f"{name} {target} {case}: the file does not run: {e}")
                        break
                    for k, w in want_o.items():
                        g = got[k].astype(np.float32)
                        w = w.astype(np.float32)
                        d = float(np.abs(g - w).max()) if g.shape == w.shape else float("inf")
                        lim = tol * max(1.0, float(np.abs(w).max()))
                        if not d <= lim:
                            fails.append(f"{name} {target} {case}: {k} differs by {d} (> {lim}), shapes {g.shape} {w.shape}")
        check_forms(gwr, tmp, fails)
    for f in fails:
        print("FAIL", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
