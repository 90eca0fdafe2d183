"""quant_ort.py GWR - whole quantized networks in gwr and in onnxruntime.

Three chains of quantized layers with seeded random weights, each run by
`gwr run` (optimized and as written) and by onnxruntime (the project's
venv, 1.31), every requantization an output:

  dynamic:  20 x (DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul by
            x_scale * w_scale -> Add bias -> Relu), the form onnxruntime's
            quantize_dynamic writes for Conv; uint8 weights and int8 ones
  ort_tool: a float CNN of 12 Conv + Relu quantized by onnxruntime's own
            onnxruntime.quantization.quantize_dynamic (uint8 weights)
  qlinear:  QuantizeLinear -> 10 x QLinearConv (int8 per-channel weights,
            int32 bias) -> QLinearMatMul x 2 -> DequantizeLinear

Every integer tensor (the uint8 activations, scales' zero points, the
int32 accumulators) must equal onnxruntime's exactly, and every float one
bit for bit: the ops are the spec's float32 formulas, so one float step
off (issue 22: DynamicQuantizeLinear's scale) flips uint8 values that
compound over the chain. The int8 weights stay within [-64, 64]: with
larger ones onnxruntime's u8s8 kernels saturate pairs of products in int16
(255 * 127 * 2 > 32767), which the spec forbids ("the production MUST never
overflow") and gwr does not do (tests/unit/test_exec_quant.c checks the
exact sums).
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

GWR = sys.argv[1]
rng = np.random.default_rng(22)
C, H, W = 8, 12, 12


def const(name, arr):
    return nh.from_array(np.asarray(arr), name)


def model(nodes, inits, outputs, opset=21):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, C, H, W])], [], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)
    return with_outputs(m, [o for o, _ in outputs])


def with_outputs(m, names):
    """m with graph outputs names (typed by shape inference), checked."""
    known = {v.name: v for v in onnx.shape_inference.infer_shapes(m).graph.value_info}
    known.update({v.name: v for v in m.graph.output})
    del m.graph.output[:]
    m.graph.output.extend(known[n] for n in names)
    onnx.checker.check_model(m, full_check=True)
    return m


def dynamic_chain(n=20):
    nodes, inits, outs, x = [], [], [], "x"
    for i in range(n):
        u8 = i % 2 == 0
        w = rng.integers(0, 256, (C, C, 3, 3)) if u8 else rng.integers(-64, 65, (C, C, 3, 3))
        wdt = np.uint8 if u8 else np.int8
        wzp = 128 if u8 else 0
        ws = np.float32(0.02 / np.sqrt(C * 9) * (1 + 0.1 * i))
        inits += [const(f"w{i}", w.astype(wdt)), const(f"wz{i}", np.array(wzp, wdt)), const(f"ws{i}", ws),
                  const(f"b{i}", (rng.standard_normal(C) * 0.1).astype(np.float32).reshape(1, C, 1, 1))]
        nodes += [
            h.make_node("DynamicQuantizeLinear", [x], [f"q{i}", f"s{i}", f"z{i}"]),
            h.make_node("ConvInteger", [f"q{i}", f"w{i}", f"z{i}", f"wz{i}"], [f"acc{i}"], pads=[1, 1, 1, 1]),
            h.make_node("Cast", [f"acc{i}"], [f"accf{i}"], to=T.FLOAT),
            h.make_node("Mul", [f"s{i}", f"ws{i}"], [f"m{i}"]),
            h.make_node("Mul", [f"accf{i}", f"m{i}"], [f"deq{i}"]),
            h.make_node("Add", [f"deq{i}", f"b{i}"], [f"pre{i}"]),
            h.make_node("Relu", [f"pre{i}"], [f"r{i}"]),
        ]
        outs += [(f"q{i}", T.UINT8), (f"s{i}", T.FLOAT), (f"z{i}", T.UINT8), (f"acc{i}", T.INT32)]
        x = f"r{i}"
    return model(nodes, inits, outs + [(x, T.FLOAT)], opset=13)


def ort_tool_chain(d, n=12):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    nodes, inits, x = [], [], "x"
    for i in range(n):
        inits += [const(f"w{i}", (rng.standard_normal((C, C, 3, 3)) / np.sqrt(C * 9) * 1.5).astype(np.float32)),
                  const(f"b{i}", (rng.standard_normal(C) * 0.1).astype(np.float32))]
        nodes += [h.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  h.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
    fp = os.path.join(d, "float.onnx")
    onnx.save(model(nodes, inits, [(x, T.FLOAT)], opset=13), fp)
    qp = os.path.join(d, "ort_tool.onnx")
    quantize_dynamic(fp, qp, weight_type=QuantType.QUInt8)
    m = onnx.load(qp)
    assert sum(nd.op_type == "ConvInteger" for nd in m.graph.node) == n, "quantize_dynamic did not write ConvInteger"
    # every requantization an output too
    names = [nd.output[i] for nd in m.graph.node if nd.op_type in ("DynamicQuantizeLinear", "ConvInteger")
             for i in range(len(nd.output))]
    return with_outputs(m, names + [o.name for o in m.graph.output])


def qlinear_chain(n=10):
    nodes, inits, outs = [], [], []
    xs, xz = np.float32(0.02), np.uint8(128)
    inits += [const("xs", xs), const("xz", xz)]
    nodes.append(h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]))
    outs.append(("q", T.UINT8))
    x, s_in, z_in = "q", "xs", "xz"
    for i in range(n):
        w = rng.integers(-64, 65, (C, C, 3, 3)).astype(np.int8)
        ws = (rng.uniform(0.5, 1.5, C) * 0.02 / 3).astype(np.float32)
        ys = np.float32(0.03 + 0.002 * i)
        yz = np.uint8(rng.integers(100, 156))
        b = rng.integers(-3000, 3000, C).astype(np.int32)
        inits += [const(f"w{i}", w), const(f"ws{i}", ws), const(f"wz{i}", np.zeros(C, np.int8)),
                  const(f"ys{i}", ys), const(f"yz{i}", yz), const(f"b{i}", b)]
        nodes.append(h.make_node("QLinearConv", [x, s_in, z_in, f"w{i}", f"ws{i}", f"wz{i}", f"ys{i}", f"yz{i}", f"b{i}"],
                                 [f"qc{i}"], pads=[1, 1, 1, 1]))
        outs.append((f"qc{i}", T.UINT8))
        x, s_in, z_in = f"qc{i}", f"ys{i}", f"yz{i}"
    inits.append(const("shape", np.array([C * H, W], np.int64)))
    nodes.append(h.make_node("Reshape", [x, "shape"], ["flat"]))
    x = "flat"
    for j, (k, nout) in enumerate([(W, 16), (16, 10)]):
        bm = rng.integers(-64, 65, (k, nout)).astype(np.int8)
        bs = np.float32(0.01)
        ys, yz = np.float32(0.05 * (j + 1)), np.uint8(120)
        inits += [const(f"mb{j}", bm), const(f"mbs{j}", bs), const(f"mbz{j}", np.int8(0)),
                  const(f"mys{j}", ys), const(f"myz{j}", yz)]
        nodes.append(h.make_node("QLinearMatMul", [x, s_in, z_in, f"mb{j}", f"mbs{j}", f"mbz{j}", f"mys{j}", f"myz{j}"],
                                 [f"qm{j}"]))
        outs.append((f"qm{j}", T.UINT8))
        x, s_in, z_in = f"qm{j}", f"mys{j}", f"myz{j}"
    nodes.append(h.make_node("DequantizeLinear", [x, s_in, z_in], ["y"]))
    return model(nodes, inits, outs + [("y", T.FLOAT)])


def run_gwr(path, xin, d, optimize):
    out = os.path.join(d, "gwr_out" + ("" if optimize else "_raw"))
    cmd = [GWR, "run", path, "--input", "x=" + xin, "-o", out] + ([] if optimize else ["--no-optimize"])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("gwr run failed: %s\n%s" % (" ".join(cmd), r.stdout + r.stderr))
    res = {}
    for f in sorted(os.listdir(out)):
        if f.startswith("output_"):
            t = onnx.TensorProto()
            with open(os.path.join(out, f), "rb") as fh:
                t.ParseFromString(fh.read())
            res[t.name] = nh.to_array(t)
    return res


def compare(name, m, d, x):
    path = os.path.join(d, name + ".onnx")
    onnx.save(m, path)
    xin = os.path.join(d, name + "_x.pb")
    with open(xin, "wb") as fh:
        fh.write(nh.from_array(x, "x").SerializeToString())
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    want = dict(zip(names, sess.run(None, {"x": x})))
    bad = 0
    for optimize in (True, False):
        got = run_gwr(path, xin, d, optimize)
        for o in names:
            g, w = got.get(o), want[o]
            if g is None or g.dtype != w.dtype or g.shape != w.shape:
                print("%s %s: %s, onnxruntime %s %s" % (name, o, None if g is None else (g.dtype, g.shape), w.dtype, w.shape))
                bad += 1
                continue
            same = g.tobytes() == w.tobytes()  # bit for bit, floats included
            if not same:
                diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
                print("%s%s %s: %d of %d elements differ (max abs %g)" % (
                    name, "" if optimize else " (as written)", o, int(np.count_nonzero(diff)), g.size, diff.max()))
                bad += 1
    n_int = sum(1 for o in names if want[o].dtype.kind in "iu")
    print("%s: %d outputs (%d integer), %s" % (name, len(names), n_int, "identical to onnxruntime" if not bad else "DIFFER"))
    return bad


def main():
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        x = rng.standard_normal((1, C, H, W)).astype(np.float32)
        bad += compare("dynamic", dynamic_chain(), d, x)
        bad += compare("ort_tool", ort_tool_chain(d), d, x)
        bad += compare("qlinear", qlinear_chain(), d, x)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
