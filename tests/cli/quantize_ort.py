"""quantize_ort.py GWR DRIVER - gwr_quantize's dynamic and weight-only modes
and SmoothQuant on whole models, judged by onnx 1.23 (checker, reference
evaluator) and onnxruntime 1.31 (the project's venv).

Three float models made here with onnx.helper (seeded weights): an MLP
(MatMul + bias, Relu, Gemm with transB and C, MatMul), a CNN (two Conv +
bias, Relu, GlobalAveragePool, Gemm) and a transformer block
(Q/K/V/O projections, attention, a LayerNormalization with outlier
channels into the FFN; the same once more without value_info, so that gwr
loads its intermediate tensors untyped). Each is quantized by DRIVER
(tests/quant/quantize_driver.c: the C API, gwr_quantize) in the modes and
targets of CONFIGS, and the written model must:

  - pass onnx.checker (full) and hold the ops the mode writes, no float
    MatMul/Gemm/Conv with a constant weight left (bar --exclude, and Conv in
    weight-only mode);
  - give under `gwr run` what onnx's reference evaluator gives on the same
    file (standard-domain forms; relative RMS difference <= 1e-5 for
    weight-only, <= 1e-3 where activations are quantized at run time: a
    LayerNormalization one ulp apart upstream may move a uint8 by one), and
    what gwr gives on the target onnx form of the same codes (<= 1e-6; the
    com.microsoft forms), close to the float model (cosine >= 0.99 for
    int8 per channel; 0.98 per tensor, 0.95 for 4 bits);
  - load and run in onnxruntime, giving within 1e-4 what gwr gives for
    weight-only models (onnxruntime told to keep accuracy_level 0 when it
    fuses DequantizeLinear into MatMulNBits). Where activations are
    quantized at run time onnxruntime's u8s8 AVX2 kernels saturate pairs of
    products in int16 (255 * 127 * 2 > 32767) where the spec and gwr compute
    exact sums (check_saturation shows it accumulator for accumulator, and
    the reference evaluator agrees with gwr): with int8 weights per channel,
    which reach +-127 in every column, that parts the two by as much as the
    data makes it (up to 0.26 relative here), so only a cosine of
    0.9 to the float model is asked of onnxruntime there; per tensor, 5e-2.
    Target ort (the default) writes weights within [-64, 64], where no
    pair of products can saturate: there onnxruntime and gwr agree within
    1e-3, as gwr and the reference evaluator do;
  - onnxruntime's MatMulNBits (target ort) and its DequantizeLinear with
    block_size (target onnx) of the same codes agree within 1e-5: the
    packing is onnxruntime's;
  - MatMul/Gemm/Conv weight bytes, counted from the file by the ops that
    read them, equal to what gwr_quantize reported, and <= 0.27x float32
    for int8 and <= 0.16x for 4 bits (MLP and transformer).
Where gwr's executor has no MatMulNBits kernel yet, the gwr runs of those
files are skipped and the summary says so.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from onnx.reference import ReferenceEvaluator

GWR, DRIVER = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(24)
failures = []


def fail(msg):
    print("FAIL " + msg)
    failures.append(msg)
    return None


def init(name, arr):
    return nh.from_array(np.asarray(arr, dtype=np.float32), name)


def randw(*shape, scale=None):
    fan_in = shape[0] if len(shape) == 2 else int(np.prod(shape[1:]))
    return rng.standard_normal(shape) * (scale or 1 / np.sqrt(fan_in))


def model(name, nodes, inits, xshape, yname="y"):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", T.FLOAT, xshape)],
                     [h.make_tensor_value_info(yname, T.FLOAT, None)], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10)
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m, full_check=True)
    return m


def mlp():
    nodes = [h.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"), h.make_node("Add", ["h1", "b1"], ["h2"]),
             h.make_node("Relu", ["h2"], ["h3"]),
             h.make_node("Gemm", ["h3", "w2", "c2"], ["h4"], name="fc2", transB=1),
             h.make_node("MatMul", ["h4", "w3"], ["y"], name="fc3")]
    inits = [init("w1", randw(128, 128)), init("b1", randw(128, scale=0.1)), init("w2", randw(96, 128)),
             init("c2", randw(96, scale=0.1)), init("w3", randw(96, 64))]
    return model("mlp", nodes, inits, [4, 128])


def cnn():
    nodes = [h.make_node("Conv", ["x", "k1", "kb1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             h.make_node("Relu", ["c1"], ["r1"]),
             h.make_node("Conv", ["r1", "k2", "kb2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
             h.make_node("Relu", ["c2"], ["r2"]), h.make_node("GlobalAveragePool", ["r2"], ["p"]),
             h.make_node("Flatten", ["p"], ["f"]), h.make_node("Gemm", ["f", "w3", "c3"], ["y"], name="fc", transB=1)]
    inits = [init("k1", randw(16, 3, 3, 3)), init("kb1", randw(16, scale=0.1)), init("k2", randw(32, 16, 3, 3)),
             init("kb2", randw(32, scale=0.1)), init("w3", randw(10, 32)), init("c3", randw(10, scale=0.1))]
    return model("cnn", nodes, inits, [1, 3, 16, 16])


def transformer():
    S, D, H, F = 16, 64, 4, 256
    g2 = 1 + 0.1 * rng.standard_normal(D)
    g2[[5, 40]] = [30, -20]  # outlier channels into the FFN, where SmoothQuant helps
    nodes = [h.make_node("LayerNormalization", ["x", "g1", "be1"], ["n1"], name="ln1", axis=-1)]
    inits = [init("g1", 1 + 0.1 * rng.standard_normal(D)), init("be1", randw(D, scale=0.1)),
             nh.from_array(np.array([1, S, H, D // H], np.int64), "heads"),
             nh.from_array(np.array([1, S, D], np.int64), "merged"), init("inv", np.float32(1 / np.sqrt(D // H)))]
    for p in "qkv":
        nodes += [h.make_node("MatMul", ["n1", "w" + p], [p + "0"], name=p + "_proj"),
                  h.make_node("Add", [p + "0", "b" + p], [p + "1"]),
                  h.make_node("Reshape", [p + "1", "heads"], [p + "2"]),
                  h.make_node("Transpose", [p + "2"], [p + "3"], perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3])]
        inits += [init("w" + p, randw(D, D)), init("b" + p, randw(D, scale=0.1))]
    nodes += [h.make_node("MatMul", ["q3", "k3"], ["s0"]), h.make_node("Mul", ["s0", "inv"], ["s1"]),
              h.make_node("Softmax", ["s1"], ["a"], axis=-1), h.make_node("MatMul", ["a", "v3"], ["c0"]),
              h.make_node("Transpose", ["c0"], ["c1"], perm=[0, 2, 1, 3]),
              h.make_node("Reshape", ["c1", "merged"], ["c2"]),
              h.make_node("MatMul", ["c2", "wo"], ["o0"], name="o_proj"), h.make_node("Add", ["o0", "bo"], ["o1"]),
              h.make_node("Add", ["o1", "x"], ["r"]),
              h.make_node("LayerNormalization", ["r", "g2", "be2"], ["n2"], name="ln2", axis=-1),
              h.make_node("MatMul", ["n2", "wf1"], ["f0"], name="ffn_up"), h.make_node("Add", ["f0", "bf1"], ["f1"]),
              h.make_node("Relu", ["f1"], ["f2"]),
              h.make_node("MatMul", ["f2", "wf2"], ["f3"], name="ffn_down"), h.make_node("Add", ["f3", "bf2"], ["f4"]),
              h.make_node("Add", ["f4", "r"], ["y"])]
    inits += [init("wo", randw(D, D)), init("bo", randw(D, scale=0.1)), init("g2", g2),
              init("be2", randw(D, scale=0.1)), init("wf1", randw(D, F)), init("bf1", randw(F, scale=0.1)),
              init("wf2", randw(F, D)), init("bf2", randw(D, scale=0.1))]
    return model("transformer", nodes, inits, [1, S, D])


# ---- what a file holds -------------------------------------------------------

BITS = {T.FLOAT: 32, T.INT8: 8, T.UINT8: 8, T.INT4: 4, T.UINT4: 4, T.INT32: 32}


def tensor_bytes(t):
    return (int(np.prod(t.dims, dtype=np.int64)) * BITS[t.data_type] + 7) // 8


def weight_bytes(m):
    """Bytes of the initializers that are MatMul/Gemm/Conv weights, found by the ops reading them: a float
    weight (input 1 of MatMul/Gemm/Conv), a quantized one with its scales and zero points (MatMulNBits 1-3,
    MatMulInteger/ConvInteger 1 and 3, MatMulIntegerToFloat 1, 3, 5, DynamicQuantizeMatMul 1-3, the inputs of a
    DequantizeLinear of an integer initializer), and the weight scale that a Mul multiplies a
    DynamicQuantizeLinear's scale by."""
    inits = {i.name: i for i in m.graph.initializer}
    dql_scales = {n.output[1] for n in m.graph.node if n.op_type == "DynamicQuantizeLinear"}
    slots = {"MatMul": [1], "Gemm": [1], "Conv": [1], "MatMulNBits": [1, 2, 3], "MatMulInteger": [1, 3],
             "ConvInteger": [1, 3], "MatMulIntegerToFloat": [1, 3, 5], "DynamicQuantizeMatMul": [1, 2, 3]}
    names = set()
    for n in m.graph.node:
        ins = list(n.input)
        for s in slots.get(n.op_type, []):
            if s < len(ins) and ins[s] in inits:
                names.add(ins[s])
        if n.op_type == "DequantizeLinear" and ins[0] in inits and inits[ins[0]].data_type != T.FLOAT:
            names.update(i for i in ins if i in inits)
        if n.op_type == "Mul" and any(i in dql_scales for i in ins):
            names.update(i for i in ins if i in inits)
    return sum(tensor_bytes(inits[k]) for k in names)


def op_counts(m):
    c = {}
    for n in m.graph.node:
        c[n.op_type] = c.get(n.op_type, 0) + 1
    return c


def float_weight_layers(m):
    inits = {i.name: i for i in m.graph.initializer}
    return [n.name for n in m.graph.node
            if n.op_type in ("MatMul", "Gemm", "Conv") and n.input[1] in inits and inits[n.input[1]].data_type == T.FLOAT]


# ---- running -------------------------------------------------------------------


def ort_run(path, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    # DequantizeLinear -> MatMul fused into MatMulNBits keeps float activations
    so.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "0")
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def reference_run(m, x):
    """onnx's reference evaluator on m (its DequantizeLinear needs opset 19 or later: the default-domain
    import of a copy is raised, which changes none of the ops used here); None for com.microsoft ops."""
    if any(n.domain not in ("", "ai.onnx") for n in m.graph.node):
        return None
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    for o in m2.opset_import:
        if o.domain in ("", "ai.onnx") and o.version < 19:
            o.version = 21
    return ReferenceEvaluator(m2).run(None, {"x": x})[0]


def gwr_run(path, x, d):
    """gwr run's output, or (None, message) when it cannot run the model."""
    xin, out = os.path.join(d, "x.pb"), os.path.join(d, "gwr_out")
    with open(xin, "wb") as fh:
        fh.write(nh.from_array(x, "x").SerializeToString())
    r = subprocess.run([GWR, "run", path, "--input", "x=" + xin, "-o", out], capture_output=True, text=True)
    if r.returncode:
        return None, (r.stdout + r.stderr).strip()
    for f in sorted(os.listdir(out)):
        if f.startswith("output_"):
            t = onnx.TensorProto()
            with open(os.path.join(out, f), "rb") as fh:
                t.ParseFromString(fh.read())
            return nh.to_array(t), ""
    return None, "no output written"


def rel(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---- the cases ---------------------------------------------------------------------

# name, driver arguments, ops that must be there, weight bytes bound, cosine bound (gwr's output against the
# float model's), the target onnx config of the same codes
CONFIGS = [
    ("dyn_onnx", ["--mode", "dynamic", "--target", "onnx"], ["DynamicQuantizeLinear", "MatMulInteger"], 0.27, 0.99,
     None),
    # target ort: weights within [-64, 64] (gwr_q_weight_qmax), other codes than dyn_onnx's
    ("dyn_ort", ["--mode", "dynamic", "--target", "ort"], [], 0.27, 0.99, None),
    ("dyn_qdq", ["--mode", "dynamic", "--format", "qdq"], ["DynamicQuantizeLinear", "DequantizeLinear"], 0.27, 0.99,
     None),
    ("dyn_per_tensor", ["--mode", "dynamic", "--target", "onnx", "--per-tensor"], ["MatMulInteger"], 0.27, 0.98, None),
    ("wo4_onnx", ["--mode", "weight-only", "--target", "onnx"], ["DequantizeLinear"], 0.16, 0.95, None),
    ("wo4_ort", ["--mode", "weight-only", "--target", "ort"], ["MatMulNBits"], 0.16, 0.95, "wo4_onnx"),
    # 8 bits in blocks of 32: 1 + 4/32 bytes a weight
    ("wo8_onnx", ["--mode", "weight-only", "--target", "onnx", "--bits", "8"], ["DequantizeLinear"], 0.29, 0.99, None),
    ("wo8_ort", ["--mode", "weight-only", "--target", "ort", "--bits", "8"], ["MatMulNBits"], 0.29, 0.99, "wo8_onnx"),
    ("wo4_gptq_onnx", ["--mode", "weight-only", "--target", "onnx", "--algo", "gptq"], ["DequantizeLinear"], 0.16, 0.95,
     None),
    ("wo4_gptq_ort", ["--mode", "weight-only", "--target", "ort", "--algo", "gptq"], ["MatMulNBits"], 0.16, 0.95,
     "wo4_gptq_onnx"),
    ("sq_dyn", ["--mode", "dynamic", "--target", "onnx", "--smoothquant", "0.5"], ["DynamicQuantizeLinear"], 0.27, 0.99,
     None),
]


def quantize(src, dst, args):
    r = subprocess.run([DRIVER, src, dst] + args, capture_output=True, text=True)
    if r.returncode:
        return None, r.stdout + r.stderr
    first = r.stdout.split("\n")[0].split()
    return (int(first[1]), int(first[2])), r.stdout


def check_config(mname, m, src, xs, ref, cname, args, must, bound, cos_min, twin, d, outs):
    """One model in one configuration; outs[cname] gets (onnxruntime's outputs, gwr's or None)."""
    tag = "%s/%s" % (mname, cname)
    dst = os.path.join(d, "%s_%s.onnx" % (mname, cname))
    rep, text = quantize(src, dst, args)
    if rep is None:
        return fail("%s: quantize_driver failed: %s" % (tag, text))
    q = onnx.load(dst)
    try:
        onnx.checker.check_model(q, full_check=True)
    except Exception as e:  # noqa: BLE001 (the checker raises several kinds)
        fail("%s: onnx checker: %s" % (tag, e))
    ops, weight_only = op_counts(q), "weight-only" in args
    left = [n for n in float_weight_layers(q) if not (weight_only and n.startswith("conv"))]
    if left:
        fail("%s: float weights left in %s" % (tag, left))
    for op in must:
        if not ops.get(op):
            fail("%s: no %s in %s" % (tag, op, ops))
    if cname == "dyn_ort" and mname != "cnn" and not (ops.get("DynamicQuantizeMatMul") or ops.get("MatMulIntegerToFloat")):
        fail("%s: target ort made no DynamicQuantizeMatMul / MatMulIntegerToFloat: %s" % (tag, ops))
    if "onnx" in args and weight_only:
        opset = [o.version for o in q.opset_import if o.domain in ("", "ai.onnx")]
        if opset != [21]:
            fail("%s: opset %s, not 21" % (tag, opset))
    before, after = weight_bytes(m), weight_bytes(q)
    if (before, after) != rep:
        fail("%s: weight bytes in the file %s, reported %s" % (tag, (before, after), rep))
    ratio = after / before
    if mname != "cnn" and ratio > bound:
        fail("%s: weights %.4fx float32 > %.2fx" % (tag, ratio, bound))
    got = [ort_run(dst, x) for x in xs]
    gw = [gwr_run(dst, x, d) for x in xs]
    if any(g is None for g, _ in gw):
        why = [w for g, w in gw if g is None][0]
        if "MatMulNBits" not in why:
            fail("%s: gwr run: %s" % (tag, why))
        outs[cname] = (got, None)
        cos = min(cosine(g, r) for g, r in zip(got, ref))
        err = float(np.mean([rel(g, r) for g, r in zip(got, ref)]))
        note = "(onnxruntime's; gwr has no MatMulNBits kernel yet)"
    else:
        gw = [g for g, _ in gw]
        outs[cname] = (got, gw)
        cos = min(cosine(g, r) for g, r in zip(gw, ref))
        err = float(np.mean([rel(g, r) for g, r in zip(gw, ref)]))
        diff = max(rel(g, o) for g, o in zip(gw, got))
        note = "gwr vs ort %.1e" % diff
        # int8 weights per channel reach +-127 in every column: onnxruntime's saturating sums (SATURATION) part
        # from the spec's there, by as much as the data makes them; per tensor, rarely. Target ort (the
        # default) keeps the weights within [-64, 64], where no pair saturates: the two agree as gwr and
        # the reference evaluator do
        ort_target = "--target" not in args or args[args.index("--target") + 1] == "ort"
        tol = 1e-4 if weight_only else 1e-3 if ort_target else 5e-2 if "--per-tensor" in args else None
        if tol is not None and diff > tol:
            fail("%s: gwr and onnxruntime differ by %.3e > %g" % (tag, diff, tol))
        ocos = min(cosine(o, r) for o, r in zip(got, ref))
        if ocos < 0.9:
            fail("%s: onnxruntime's output is far from the float model's: cosine %.4f" % (tag, ocos))
        r0 = reference_run(q, xs[0])
        if r0 is not None:
            # a float op before a DynamicQuantizeLinear (LayerNormalization) one ulp apart may move a uint8 by one
            rtol = 1e-5 if weight_only else 1e-3
            note += ", vs onnx reference %.1e" % rel(gw[0], r0)
            if rel(gw[0], r0) > rtol:
                fail("%s: gwr and onnx's reference evaluator differ by %.3e > %g" % (tag, rel(gw[0], r0), rtol))
        if twin and outs.get(twin, (None, None))[1]:
            diff = max(rel(a, b) for a, b in zip(gw, outs[twin][1]))
            note += ", vs %s %.1e" % (twin, diff)
            if diff > 1e-6:
                fail("%s: gwr gives %.3e apart from the same codes in form %s" % (tag, diff, twin))
    if twin and weight_only and twin in outs:  # onnxruntime reads MatMulNBits as the DequantizeLinear form
        diff = max(rel(a, b) for a, b in zip(got, outs[twin][0]))
        note += ", ort vs ort %s %.1e" % (twin, diff)
        if diff > 1e-5:
            fail("%s: onnxruntime's MatMulNBits and DequantizeLinear forms differ by %.3e" % (tag, diff))
    if cos < cos_min:
        fail("%s: cosine to float32 %.5f < %.2f" % (tag, cos, cos_min))
    return "%-28s weights %.4fx  rel.err %.4f  cos %.5f  %s" % (tag, ratio, err, cos, note)


def check_saturation(src, d):
    """SATURATION: onnxruntime's int32 accumulators of a MatMulInteger with int8 weights per channel are the
    spec's sums with each pair of products (k, k + 1) saturated to int16, as its u8s8 AVX2 kernel
    (vpmaddubsw) computes; gwr's are the spec's exact sums. The MLP's first layer alone quantized. On a
    CPU where onnxruntime computes exactly (VNNI) the first kind matches too, and no more is asked."""
    dst = os.path.join(d, "mlp_fc1.onnx")
    rep, text = quantize(src, dst, ["--mode", "dynamic", "--target", "onnx", "--exclude", "fc2,fc3"])
    if rep is None:
        return fail("saturation: quantize_driver failed: %s" % text)
    q = onnx.load(dst)
    mmi = [n for n in q.graph.node if n.op_type == "MatMulInteger"][0]
    q.graph.output.insert(0, h.make_tensor_value_info(mmi.output[0], T.INT32, None))
    onnx.save(q, dst)
    x = rng.standard_normal((4, 128)).astype(np.float32)
    got = ort.InferenceSession(dst, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    mine = gwr_run(dst, x, d)[0]
    w = nh.to_array([i for i in q.graph.initializer if i.name == mmi.input[1]][0]).astype(np.int64)
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    s = np.float32(np.float32(hi - lo) / np.float32(255))
    z = int(np.clip(np.rint(-lo / s), 0, 255))
    xq = np.clip(np.rint(x / s) + z, 0, 255).astype(np.int64)
    exact = (xq - z) @ w
    prod = xq[:, :, None] * w[None, :, :]
    pairs = prod[:, 0::2, :] + prod[:, 1::2, :]
    saturated = np.clip(pairs, -32768, 32767).sum(1) - z * w.sum(0)[None, :]
    if mine is None or not np.array_equal(mine, exact):
        fail("saturation: gwr's accumulators are not the spec's exact sums")
    if not (np.array_equal(got, exact) or np.array_equal(got, saturated)):
        fail("saturation: onnxruntime's accumulators are neither the exact nor the int16-saturated sums")
    return "mlp/saturation: %d of %d onnxruntime accumulators saturated" % (int(np.sum(got != exact)), got.size)


def main():
    summary = []
    with tempfile.TemporaryDirectory() as d:
        models = [("mlp", mlp()), ("cnn", cnn()), ("transformer", transformer())]
        untyped = onnx.ModelProto()
        untyped.CopyFrom(models[2][1])
        untyped.graph.ClearField("value_info")  # the intermediate tensors load untyped
        for mname, m in models + [("untyped", untyped)]:
            src = os.path.join(d, mname + ".onnx")
            onnx.save(m, src)
            xs = [rng.standard_normal([int(v.dim_value) for v in m.graph.input[0].type.tensor_type.shape.dim])
                  .astype(np.float32) for _ in range(4)]
            ref = [ort_run(src, x) for x in xs]
            outs = {}
            for cname, args, must, bound, cos_min, twin in CONFIGS:
                line = check_config(mname, m, src, xs, ref, cname, args, must, bound, cos_min, twin, d, outs)
                if line:
                    summary.append(line)
        src = os.path.join(d, "mlp.onnx")
        summary.append(check_saturation(src, d) or "mlp/saturation: failed")
        # --exclude: the Gemm stays float32
        dst = os.path.join(d, "mlp_excl.onnx")
        rep, text = quantize(src, dst, ["--mode", "dynamic", "--exclude", "Gemm"])
        q = onnx.load(dst) if rep else None
        if not q or float_weight_layers(q) != ["fc2"] or "kept float32: --exclude" not in text:
            fail("mlp/exclude: the Gemm is not the one float layer left: %s" % text)
    print("\n".join(summary))
    if failures:
        sys.exit("%d failures" % len(failures))
    print("all quantized models check, load and agree")


if __name__ == "__main__":
    main()
