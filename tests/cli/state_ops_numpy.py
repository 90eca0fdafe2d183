#!/usr/bin/env python3
"""state_ops_numpy.py GWR: the opset 24-28 ops (Swish, SwiGLU, TensorScatter,
CausalConvWithState, LinearAttention) and ai.onnx.preview FlexAttention
against numpy, beyond onnx's node tests: GQA, per-key-dim decay with a past
state, a circular cache write, subgraph modifiers, and bad input (wrong
ranks, heads that do not divide, missing or forbidden optional inputs,
modifiers that change the shape), which must fail with a message naming the
problem, never a crash.

Each case is a one-node model written with onnx.helper and run by `gwr run
--no-optimize` on TensorProto inputs; numpy's side is the op's formula as its
ONNX schema states it, written out here in float64 (not onnx's reference
implementation). Exit status 1 when a case is off by more than its tolerance,
gwr fails where it should run, or runs / crashes where it should refuse.
Needs the venv's onnx (opsets 24-28)."""
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper

GWR = sys.argv[1]
rng = np.random.default_rng(27)
failures = []
TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.float64: TensorProto.DOUBLE,
         np.int64: TensorProto.INT64}


def run(name, op, inputs, attrs, nout=1, domain="", opset=28, tol=1e-5, want=None, error=None):
    """Runs op on inputs (name -> array, None for an absent optional input);
    compares output i with want[i], or expects gwr to refuse with `error` in
    its message."""
    names = list(inputs)
    node = helper.make_node(op, [n if inputs[n] is not None else "" for n in names],
                            ["y%d" % i for i in range(nout)], domain=domain, **attrs)
    vin = [helper.make_tensor_value_info(n, TYPES[inputs[n].dtype.type], inputs[n].shape)
           for n in names if inputs[n] is not None]
    vout = [helper.make_tensor_value_info("y%d" % i, TensorProto.UNDEFINED, None) for i in range(nout)]
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(helper.make_graph([node], name, vin, vout), opset_imports=ops)
    model.ir_version = 10
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        args = [GWR, "run", path, "--no-optimize", "-o", os.path.join(d, "out")]
        for n in names:
            if inputs[n] is None:
                continue
            p = os.path.join(d, n + ".pb")
            with open(p, "wb") as f:
                f.write(numpy_helper.from_array(inputs[n], n).SerializeToString())
            args += ["--input", "%s=%s" % (n, p)]
        r = subprocess.run(args, capture_output=True, text=True)
        msg = (r.stdout + r.stderr).strip().splitlines()
        last = msg[-1] if msg else ""
        if error is not None:
            if r.returncode != 1 or error not in r.stdout + r.stderr:
                failures.append("%s: want exit 1 and '%s', got exit %d: %s" % (name, error, r.returncode, last))
            else:
                print("ok %s (refused: %s)" % (name, last))
            return
        if r.returncode != 0:
            failures.append("%s: gwr failed (exit %d): %s" % (name, r.returncode, last))
            return
        outs = {}
        for f in os.listdir(os.path.join(d, "out")):
            if f.startswith("output_"):
                t = TensorProto()
                with open(os.path.join(d, "out", f), "rb") as fh:
                    t.ParseFromString(fh.read())
                outs[t.name] = numpy_helper.to_array(t)
    for i, w in enumerate(want):
        got = outs.get("y%d" % i)
        if got is None or got.shape != w.shape:
            failures.append("%s: output %d shape %s, want %s" % (name, i, None if got is None else got.shape, w.shape))
            continue
        err = np.max(np.abs(got.astype(np.float64) - w), initial=0.0)
        if not err <= tol * max(1.0, np.max(np.abs(w), initial=0.0)):
            failures.append("%s: output %d off by %g" % (name, i, err))
            return
    print("ok %s" % name)


def f32(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def sig(x):
    return 1.0 / (1.0 + np.exp(-x))


# ---- Swish, SwiGLU ----
x = f32(3, 5) * 4
run("swish alpha 0.5", "Swish", {"x": x}, {"alpha": 0.5}, want=[x * sig(0.5 * x.astype(np.float64))])
a, b = f32(2, 7) * 3, f32(2, 7)
run("swiglu", "SwiGLU", {"a": a, "b": b}, {"alpha": 1.702},
    want=[a * sig(1.702 * a.astype(np.float64)) * b])
ah, bh = a.astype(np.float16), b.astype(np.float16)
run("swiglu float16", "SwiGLU", {"a": ah, "b": bh}, {}, tol=2e-3,
    want=[ah.astype(np.float64) * sig(ah.astype(np.float64)) * bh])
run("swiglu broadcast refused", "SwiGLU", {"a": a, "b": f32(1, 7)}, {}, error="no broadcasting")

# ---- TensorScatter ----
past, upd = f32(2, 3, 6, 4), f32(2, 3, 2, 4)
wi = np.array([1, 4], np.int64)
want = past.copy()
for bi in range(2):
    for s in range(2):
        want[bi, :, wi[bi] + s] = upd[bi, :, s]
run("tensorscatter linear", "TensorScatter", {"past": past, "update": upd, "wi": wi}, {}, want=[want])
wi = np.array([5, 0], np.int64)
want = past.copy()
for bi in range(2):
    for s in range(2):
        want[bi, :, (wi[bi] + s) % 6] = upd[bi, :, s]
run("tensorscatter circular", "TensorScatter", {"past": past, "update": upd, "wi": wi}, {"mode": "circular"}, want=[want])
u1 = f32(2, 1, 6, 4)
w1 = past.copy()
w1[:, 0] = u1[:, 0]
run("tensorscatter axis 1 no indices", "TensorScatter", {"past": past, "update": u1}, {"axis": 1}, want=[w1])
run("tensorscatter past the end refused", "TensorScatter",
    {"past": past, "update": upd, "wi": np.array([5, 0], np.int64)}, {}, error="does not fit")
run("tensorscatter batch axis refused", "TensorScatter", {"past": past, "update": past}, {"axis": 0}, error="axis")
run("tensorscatter update too long refused", "TensorScatter", {"past": past, "update": f32(2, 3, 7, 4)}, {},
    error="update")


# ---- CausalConvWithState ----
def causal_conv(x, w, bias, past, act):
    B, C, L = x.shape
    K = w.shape[2]
    pad = np.zeros((B, C, K - 1)) if past is None else past.astype(np.float64)
    p = np.concatenate([pad, x.astype(np.float64)], 2)
    y = np.zeros((B, C, L))
    for t in range(L):
        y[:, :, t] = np.sum(p[:, :, t:t + K] * w[None, :, 0, :], axis=2)
    if bias is not None:
        y += bias[None, :, None]
    if act:
        y = y * sig(y)
    return y, p[:, :, p.shape[2] - (K - 1):]


x, w, bias, st = f32(2, 3, 5), f32(3, 1, 4), f32(3), f32(2, 3, 3)
run("causalconv past bias silu", "CausalConvWithState", {"x": x, "w": w, "b": bias, "s": st}, {"activation": "silu"},
    nout=2, want=list(causal_conv(x, w, bias, st, True)))
run("causalconv no past short input", "CausalConvWithState", {"x": x[:, :, :2], "w": w, "b": None, "s": None}, {},
    nout=2, want=list(causal_conv(x[:, :, :2], w, None, None, False)))
run("causalconv weight refused", "CausalConvWithState", {"x": x, "w": f32(3, 2, 4)}, {}, nout=2, error="weight")
run("causalconv past shape refused", "CausalConvWithState", {"x": x, "w": w, "b": None, "s": f32(2, 3, 2)}, {},
    nout=2, error="past_state")
run("causalconv rank refused", "CausalConvWithState", {"x": f32(3, 5), "w": w}, {}, nout=2, error="input")
run("causalconv activation refused", "CausalConvWithState", {"x": x, "w": w}, {"activation": "relu"}, nout=2,
    error="activation")


# ---- LinearAttention ----
def linear_attention(q, k, v, past, decay, beta, qh, kvh, rule, scale=0.0):
    B, T, _ = q.shape
    dk, dv = q.shape[2] // qh, v.shape[2] // kvh
    q4 = q.astype(np.float64).reshape(B, T, qh, dk)
    k4 = k.astype(np.float64).reshape(B, T, kvh, dk)
    v4 = v.astype(np.float64).reshape(B, T, kvh, dv)
    S = np.zeros((B, kvh, dk, dv)) if past is None else past.astype(np.float64).copy()
    scale = scale or 1 / np.sqrt(dk)
    out = np.zeros((B, T, qh, dv))
    for b in range(B):
        for h in range(kvh):
            for t in range(T):
                kt, vt = k4[b, t, h], v4[b, t, h].copy()
                if rule in ("gated", "gated_delta"):
                    g = decay[b, t, h] if decay.shape[2] == kvh else decay[b, t, h * dk:(h + 1) * dk]
                    S[b, h] *= np.exp(np.broadcast_to(g, (dk,)))[:, None]
                if rule in ("delta", "gated_delta"):
                    be = beta[b, t, h if beta.shape[2] > 1 else 0]
                    vt = be * (vt - S[b, h].T @ kt)
                S[b, h] += np.outer(kt, vt)
                for hq in range(h * (qh // kvh), (h + 1) * (qh // kvh)):
                    out[b, t, hq] = scale * (q4[b, t, hq] @ S[b, h])
    return out.reshape(B, T, qh * dv), S


B, T, qh, kvh, dk, dv = 2, 5, 4, 2, 3, 2
q, k, v = f32(B, T, qh * dk), f32(B, T, kvh * dk), f32(B, T, kvh * dv)
past = f32(B, kvh, dk, dv)
decay = (-rng.uniform(0, 1, (B, T, kvh * dk))).astype(np.float32)
beta = rng.uniform(0, 1, (B, T, kvh)).astype(np.float32)
A = {"q_num_heads": qh, "kv_num_heads": kvh}
run("linear_attention gated_delta gqa per-dim decay past", "LinearAttention",
    {"q": q, "k": k, "v": v, "s": past, "g": decay, "beta": beta}, dict(A, update_rule="gated_delta"), nout=2,
    want=list(linear_attention(q, k, v, past, decay, beta, qh, kvh, "gated_delta")))
run("linear_attention linear no past scale", "LinearAttention", {"q": q, "k": k, "v": v},
    dict(A, update_rule="linear", scale=0.25), nout=2,
    want=list(linear_attention(q, k, v, None, None, None, qh, kvh, "linear", 0.25)))
run("linear_attention delta beta scalar", "LinearAttention",
    {"q": q, "k": k, "v": v, "s": None, "g": None, "beta": beta[:, :, :1]}, dict(A, update_rule="delta"), nout=2,
    want=list(linear_attention(q, k, v, None, None, beta[:, :, :1], qh, kvh, "delta")))
run("linear_attention gated needs decay", "LinearAttention", {"q": q, "k": k, "v": v},
    dict(A, update_rule="gated"), nout=2, error="decay")
run("linear_attention linear takes no beta", "LinearAttention",
    {"q": q, "k": k, "v": v, "s": None, "g": None, "beta": beta}, dict(A, update_rule="linear"), nout=2, error="beta")
run("linear_attention heads refused", "LinearAttention", {"q": q, "k": k, "v": v},
    {"q_num_heads": 3, "kv_num_heads": 2, "update_rule": "linear"}, nout=2, error="multiple")
run("linear_attention rank refused", "LinearAttention", {"q": q.reshape(B, T, qh, dk), "k": k, "v": v},
    dict(A, update_rule="linear"), nout=2, error="3-D")
run("linear_attention past shape refused", "LinearAttention", {"q": q, "k": k, "v": v, "s": f32(B, kvh, dv, dk)},
    dict(A, update_rule="linear"), nout=2, error="past_state")
run("linear_attention key heads refused", "LinearAttention", {"q": q, "k": f32(B, T, 5), "v": v},
    dict(A, update_rule="linear"), nout=2, error="kv heads")


# ---- FlexAttention ----
def flex(q, k, v, scale=None, score=None, prob=None):
    B, Hq, L, E = q.shape
    g = Hq // k.shape[1]
    kk, vv = np.repeat(k.astype(np.float64), g, 1), np.repeat(v.astype(np.float64), g, 1)
    s = q.astype(np.float64) @ kk.transpose(0, 1, 3, 2) * (scale if scale is not None else 1 / np.sqrt(E))
    if score is not None:
        s = score(s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if prob is not None:
        p = prob(p)
    return p @ vv


def mod_graph(name, op, const):
    c = numpy_helper.from_array(np.array(const, np.float32), "c")
    return helper.make_graph([helper.make_node(op, ["s", "c"], ["o"])], name,
                             [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)], [c])


q, k, v = f32(2, 4, 3, 5), f32(2, 2, 6, 5), f32(2, 2, 6, 7)
bias = f32(6)
run("flexattention gqa score_mod prob_mod scale", "FlexAttention", {"q": q, "k": k, "v": v},
    {"scale": 0.3, "score_mod": mod_graph("add", "Add", bias), "prob_mod": mod_graph("mul", "Mul", 2.0)},
    domain="ai.onnx.preview", tol=1e-5, want=[flex(q, k, v, 0.3, lambda s: s + bias, lambda p: 2 * p)])
run("flexattention double", "FlexAttention", {"q": q.astype(np.float64), "k": k.astype(np.float64),
                                              "v": v.astype(np.float64)}, {}, domain="ai.onnx.preview",
    tol=1e-6, want=[flex(q, k, v)])
bad = helper.make_graph([helper.make_node("ReduceSum", ["s"], ["o"], keepdims=1)], "sum",
                        [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
                        [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
run("flexattention score_mod shape refused", "FlexAttention", {"q": q, "k": k, "v": v}, {"score_mod": bad},
    domain="ai.onnx.preview", error="score_mod")
run("flexattention heads refused", "FlexAttention", {"q": f32(2, 3, 3, 5), "k": k, "v": v}, {},
    domain="ai.onnx.preview", error="multiple")
run("flexattention rank refused", "FlexAttention", {"q": f32(2, 3, 5), "k": k, "v": v}, {},
    domain="ai.onnx.preview", error="4-D")
run("flexattention head size refused", "FlexAttention", {"q": q, "k": f32(2, 2, 6, 4), "v": v}, {},
    domain="ai.onnx.preview", error="head size")

for f in failures:
    print("FAIL " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
