"""qmatmul_ort.py GWR - the dynamically quantized MatMul fusions
(fuse_matmul_integer_to_float, fuse_dynamic_quantize_matmul) and their
kernels, judged by onnxruntime (the project's venv).

Each case is a small model in the form onnxruntime's quantize_dynamic
writes for MatMul (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by
a_scale * b_scale [-> Add bias]), with seeded random weights in [-64, 64]
(larger int8 weights make onnxruntime's u8s8 kernels saturate pairs of
products in int16, which the spec forbids and gwr does not do). For each:

  - `gwr optimize --target ort` must fire (or must not) as the case says:
    the op counts of the written file;
  - the written file passes onnx's checker and onnxruntime runs it to
    within 1e-5 (relative to the output's range) of onnxruntime on the
    original: onnxruntime's own MatMulIntegerToFloat / DynamicQuantizeMatMul
    kernels read what gwr wrote as gwr means it;
  - gwr's executor, on the written file as is (the fused kernels) and on
    the original (optimized in the session, target gwr), gives onnxruntime's
    result on the original bit for bit: the fused kernels compute what the
    unfused layers compute.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from quant_ort import run_gwr  # noqa: E402  (tests/cli, beside this file)

GWR = sys.argv[1]
rng = np.random.default_rng(22)
S, K, N = 16, 32, 24


def const(name, arr):
    return nh.from_array(np.asarray(arr), name)


def qmm(i, x, bias=False, wdt=np.int8, ws_shape=(), wz_shape=(), swap=False, scale_first=False):
    """Nodes and initializers of one quantized MatMul reading DynamicQuantizeLinear outputs x = (q, s, z)."""
    q, s, z = x
    w = rng.integers(-64, 65, (K, N)) + (128 if wdt == np.uint8 else 0)
    wz = rng.integers(-3, 4, wz_shape) + (128 if wdt == np.uint8 else 0)
    ws = (0.01 + 0.01 * rng.random(ws_shape)).astype(np.float32)
    inits = [const(f"w{i}", w.astype(wdt)), const(f"wz{i}", wz.astype(wdt)), const(f"ws{i}", ws)]
    nodes = [
        h.make_node("MatMulInteger", [q, f"w{i}", z, f"wz{i}"], [f"acc{i}"]),
        h.make_node("Cast", [f"acc{i}"], [f"accf{i}"], to=T.FLOAT),
        h.make_node("Mul", [f"ws{i}", s] if swap else [s, f"ws{i}"], [f"sc{i}"]),
        h.make_node("Mul", [f"sc{i}", f"accf{i}"] if scale_first else [f"accf{i}", f"sc{i}"], [f"y{i}"]),
    ]
    out = f"y{i}"
    if bias:
        inits.append(const(f"b{i}", (rng.standard_normal(N) * 0.1).astype(np.float32)))
        nodes.append(h.make_node("Add", [f"y{i}", f"b{i}"], [f"yb{i}"]))
        out = f"yb{i}"
    return nodes, inits, out


def dql(name="x"):
    return h.make_node("DynamicQuantizeLinear", [name], ["q", "s", "z"]), ("q", "s", "z")


def build(nodes, inits, outs, extra_outs=()):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, S, K])], [], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=10)
    known = {v.name: v for v in onnx.shape_inference.infer_shapes(m).graph.value_info}
    m.graph.output.extend(known[o] for o in list(outs) + list(extra_outs))
    onnx.checker.check_model(m, full_check=True)
    return m


def case_shared():
    """One DynamicQuantizeLinear read by three MatMuls (Q, K, V): three MatMulIntegerToFloat, the DQL stays;
    the scales' Mul in either order, the dequantizing Mul in either order, one with a bias."""
    d, x = dql()
    nodes, inits, outs = [d], [], []
    for i, kw in enumerate([dict(), dict(swap=True, bias=True), dict(scale_first=True, ws_shape=(N,))]):
        n, t, o = qmm(i, x, **kw)
        nodes += n
        inits += t
        outs.append(o)
    return build(nodes, inits, outs), {"MatMulIntegerToFloat": 3, "DynamicQuantizeLinear": 1, "MatMulInteger": 0,
                                       "Cast": 0, "Mul": 0, "Add": 0}


def case_single():
    """A DynamicQuantizeLinear read by one MatMul: DynamicQuantizeMatMul, uint8 weights with per-column
    b_scale and b_zero_point, the bias Add folded in."""
    d, x = dql()
    n, t, o = qmm(0, x, bias=True, wdt=np.uint8, ws_shape=(N,), wz_shape=(N,))
    return build([d] + n, t, [o]), {"DynamicQuantizeMatMul": 1, "DynamicQuantizeLinear": 0, "MatMulInteger": 0,
                                    "Add": 0}


def case_scale_2d():
    """Must not fire: b_scale of shape [1, N] (a 2-D scale is no per-column b_scale)."""
    d, x = dql()
    n, t, o = qmm(0, x, ws_shape=(1, N))
    return build([d] + n, t, [o]), {"MatMulInteger": 1, "MatMulIntegerToFloat": 0, "DynamicQuantizeMatMul": 0}


def case_row_zero_point():
    """Must not fire: a per-row a_zero_point (MatMulInteger takes one per row of A, MatMulIntegerToFloat not)."""
    d = h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"])
    x2 = h.make_node("Reshape", ["q", "shp"], ["q2"])
    inits = [const("xs", np.float32(0.05)), const("xz", np.uint8(128)), const("shp", np.array([S, K], np.int64)),
             const("azr", rng.integers(120, 136, (S,)).astype(np.uint8)), const("as", np.float32(0.05))]
    n, t, o = qmm(0, ("q2", "as", "azr"))
    m = build([d, x2] + n, inits + t, [o])
    arr = {i.name: nh.to_array(i) for i in m.graph.initializer}

    def exact(x):  # onnxruntime refuses a per-row a_zero_point: numpy, exact integers
        q = np.clip(np.rint(x / np.float32(0.05)) + 128, 0, 255).astype(np.int64).reshape(S, K)
        acc = (q - arr["azr"].astype(np.int64)[:, None]) @ (arr["w0"].astype(np.int64) - arr["wz0"].astype(np.int64))
        return {o: acc.astype(np.float32) * (np.float32(0.05) * arr["ws0"])}
    return m, {"MatMulInteger": 1, "MatMulIntegerToFloat": 0}, exact


def case_second_reader():
    """Must not fire: the Cast's output is also a graph output (a second reader of an intermediate);
    and with the DQL's scale also a graph output the MatMul next to it fuses but the DQL does not."""
    d, x = dql()
    n0, t0, o0 = qmm(0, x)
    return build([d] + n0, t0, [o0], extra_outs=["accf0", "s"]), {"MatMulInteger": 1, "MatMulIntegerToFloat": 0,
                                                                    "DynamicQuantizeMatMul": 0}


def case_dql_shared_scale():
    """The DQL's scale has another reader: MatMulIntegerToFloat fires, DynamicQuantizeMatMul does not."""
    d, x = dql()
    n0, t0, o0 = qmm(0, x)
    return build([d] + n0, t0, [o0], extra_outs=["s"]), {"MatMulIntegerToFloat": 1, "DynamicQuantizeLinear": 1,
                                                          "DynamicQuantizeMatMul": 0}


def counts(m):
    c = {}
    for nd in m.graph.node:
        c[nd.op_type] = c.get(nd.op_type, 0) + 1
    return c


def ort_run(path, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, {"x": x})))


def check(name, m, want_counts, d, ref=None):
    bad = 0
    path, opt = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".ort.onnx")
    onnx.save(m, path)
    r = subprocess.run([GWR, "optimize", "--target", "ort", path, "-o", opt], capture_output=True, text=True)
    if r.returncode:
        print("%s: gwr optimize failed: %s" % (name, r.stdout + r.stderr))
        return 1
    om = onnx.load(opt)
    got = counts(om)
    for op, n in want_counts.items():
        if got.get(op, 0) != n:
            print("%s: %d %s, expected %d (%s)" % (name, got.get(op, 0), op, n, got))
            bad += 1
    onnx.checker.check_model(om, full_check=True)
    x = (rng.standard_normal((1, S, K)) * 2).astype(np.float32)
    x[0, 0, 0] = 7.5  # a wide range: many uint8 values
    xin = os.path.join(d, name + "_x.pb")
    with open(xin, "wb") as fh:
        fh.write(nh.from_array(x, "x").SerializeToString())
    want = ref(x) if ref else ort_run(path, x)
    fused = ort_run(opt, x) if not ref else want
    for o, w in want.items():
        f = fused[o]
        tol = 1e-5 * max(1.0, float(np.abs(w).max()))
        if f.shape != w.shape or not np.allclose(f, w, rtol=0, atol=tol):
            print("%s %s: onnxruntime on gwr's file is %g off onnxruntime on the original" % (name, o, np.abs(f - w).max()))
            bad += 1
    for label, p, optimize in (("the fused file as is", opt, False), ("the original, optimized", path, True)):
        sub = os.path.join(d, name + ("_opt" if optimize else "_raw"))
        os.makedirs(sub, exist_ok=True)
        g = run_gwr(p, xin, sub, optimize)
        for o, w in want.items():
            if o not in g or g[o].dtype != w.dtype or g[o].shape != w.shape or g[o].tobytes() != w.tobytes():
                print("%s %s: gwr on %s differs from onnxruntime (max abs %s)" % (
                    name, o, label, np.abs(g[o].astype(np.float64) - w).max() if o in g and g[o].shape == w.shape else "-"))
                bad += 1
    print("%s: %s %s" % (name, "ok" if not bad else "FAILED", {k: got.get(k, 0) for k in want_counts}))
    return bad


def dq_lstm(d):
    """com.microsoft DynamicQuantizeLSTM (bidirectional, int8 W and R, per-direction and per-column scales):
    gwr runs it as LSTM on the dequantized weights. Checked against onnxruntime's ONNX LSTM on those
    weights dequantized by numpy (within 1e-5), and against onnxruntime's DynamicQuantizeLSTM, which also
    quantizes the activations to uint8 (within 2e-2 of the output range)."""
    T_, B_, I_, H_ = 5, 2, 12, 8
    G = 4 * H_
    w = rng.integers(-64, 65, (2, I_, G)).astype(np.int8)  # no int16 saturation in onnxruntime's u8s8 GEMM
    r = rng.integers(-64, 65, (2, H_, G)).astype(np.int8)
    ws = (0.002 + 0.002 * rng.random(2)).astype(np.float32)
    wz = np.zeros(2, np.int8)
    rs = (0.002 + 0.002 * rng.random((2, G))).astype(np.float32)
    rz = np.zeros((2, G), np.int8)  # onnxruntime requires zero zero points
    bias = (rng.standard_normal((2, 2 * G)) * 0.1).astype(np.float32)
    x = rng.standard_normal((T_, B_, I_)).astype(np.float32)
    xi = [h.make_tensor_value_info("x", T.FLOAT, [T_, B_, I_])]
    outs = [h.make_tensor_value_info("y", T.FLOAT, [T_, 2, B_, H_]), h.make_tensor_value_info("yh", T.FLOAT, [2, B_, H_]),
            h.make_tensor_value_info("yc", T.FLOAT, [2, B_, H_])]
    inits = [const("w", w), const("r", r), const("b", bias), const("ws", ws), const("wz", wz), const("rs", rs), const("rz", rz)]
    node = h.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "b", "", "", "", "", "ws", "wz", "rs", "rz"], ["y", "yh", "yc"],
                       domain="com.microsoft", hidden_size=H_, direction="bidirectional")
    m = h.make_model(h.make_graph([node], "g", xi, outs, initializer=inits),
                     opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)], ir_version=10)
    wf = ((w.astype(np.float32) - wz[:, None, None]) * ws[:, None, None]).transpose(0, 2, 1)
    rf = ((r.astype(np.float32) - rz[:, None, :]) * rs[:, None, :]).transpose(0, 2, 1)
    lstm = h.make_node("LSTM", ["x", "wf", "rf", "b"], ["y", "yh", "yc"], hidden_size=H_, direction="bidirectional")
    mf = h.make_model(h.make_graph([lstm], "g", xi, outs, initializer=[const("wf", wf), const("rf", rf), const("b", bias)]),
                      opset_imports=[h.make_opsetid("", 17)], ir_version=10)
    path, pf = os.path.join(d, "dq_lstm.onnx"), os.path.join(d, "dq_lstm_float.onnx")
    onnx.save(m, path)
    onnx.save(mf, pf)
    xin = os.path.join(d, "dq_lstm_x.pb")
    with open(xin, "wb") as fh:
        fh.write(nh.from_array(x, "x").SerializeToString())
    want_f, want_q = ort_run(pf, x), ort_run(path, x)
    bad = 0
    for optimize in (False, True):
        sub = os.path.join(d, "dq_lstm" + ("_opt" if optimize else "_raw"))
        os.makedirs(sub, exist_ok=True)
        g = run_gwr(path, xin, sub, optimize)
        for o in ("y", "yh", "yc"):
            ef = np.abs(g[o] - want_f[o]).max()
            eq = np.abs(g[o] - want_q[o]).max() / max(1e-6, float(np.abs(want_q[o]).max()))
            if g[o].shape != want_f[o].shape or ef > 1e-5 or eq > 2e-2:
                print("dq_lstm %s: %g off onnxruntime's float LSTM, %g (relative) off its DynamicQuantizeLSTM" % (o, ef, eq))
                bad += 1
    print("dq_lstm: %s" % ("ok" if not bad else "FAILED"))
    return bad


def main():
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        bad += dq_lstm(d)
        for case in (case_shared, case_single, case_scale_2d, case_row_zero_point, case_second_reader,
                     case_dql_shared_scale):
            r = case()
            bad += check(case.__name__[5:], *r[:2], d, *r[2:])
    sys.exit(1 if bad else 0)


main()
