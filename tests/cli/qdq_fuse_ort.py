"""qdq_fuse_ort.py GWR - fuse_qdq (src/passes/fuse_qdq.c): the QDQ groups
onnxruntime's quantize_static writes (QDQ format) fused into QLinearConv /
QLinearMatMul / MatMulIntegerToFloat for target gwr, judged by onnxruntime
(the project's venv).

Models built here with onnx.helper, quantized by
onnxruntime.quantization.quantize_static (QDQ, uint8 activations, int8
weights, per tensor and per channel, 8 seeded calibration samples):
  mlp: MatMul -> Add -> Relu -> MatMul -> Add -> Tanh -> Gemm(transB, bias);
       the two MatMuls are followed by QuantizeLinear (QLinearMatMul), the
       Gemm has a bias (MatMulIntegerToFloat, its QuantizeLinear stays);
  mlp2: MatMul -> Gemm(transB, no bias) -> Sigmoid: QLinearMatMul twice,
       the Gemm's int8 weight transposed;
  cnn: Conv(bias) -> Relu -> MaxPool -> Conv(bias, stride 2) -> Sigmoid:
       QLinearConv twice, the int32 biases joined, at level all
       (fuse_qdq_conv); at level extended, what sessions run, the Convs stay.
And written here: x -> Q -> DQ -> MatMul / Conv / Gemm(alpha 2) by a DQ'd int8 weight with a
float output: the MatMul becomes MatMulIntegerToFloat, the Conv and the Gemm stay (must not fire),
each against onnxruntime within 1e-5 of the output's range.
For each quantize_static model:
  - `gwr optimize --target gwr` fires exactly as expected (op counts of the
    written file), and `--target onnx` does not fire (standard ONNX kept);
  - gwr's executor on the optimized file agrees with onnxruntime on the QDQ
    model with its graph optimizations off (the DQ -> op -> Q chain as
    written) and with gwr --no-optimize on the QDQ model (the same chain on
    gwr's executor); and `gwr run` on the QDQ model (the session optimizes,
    target gwr, level extended) with onnxruntime. Tolerance: the fused QLinear ops
    round the exact int32 sum once where the chain rounds float32 sums and
    then quantizes, so a quantized value may move by one step; through the
    next layers that is at most 2 steps of the output's quantization scale
    anywhere and 1 step on 99% of the elements or more.
"""
import collections
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
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

GWR = sys.argv[1]
rng = np.random.default_rng(24)
failures = []


def init(name, shape, scale):
    return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def model(nodes, inits, xshape, yname, yshape):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, xshape)], [h.make_tensor_value_info(yname, T.FLOAT, yshape)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def mlp():
    nodes = [
        h.make_node("MatMul", ["x", "W1"], ["m1"]), h.make_node("Add", ["m1", "b1"], ["a1"]), h.make_node("Relu", ["a1"], ["r1"]),
        h.make_node("MatMul", ["r1", "W2"], ["m2"]), h.make_node("Add", ["m2", "b2"], ["a2"]), h.make_node("Tanh", ["a2"], ["t2"]),
        h.make_node("Gemm", ["t2", "W3", "b3"], ["y"], transB=1),
    ]
    inits = [init("W1", (32, 64), 0.2), init("b1", (64,), 0.1), init("W2", (64, 16), 0.2), init("b2", (16,), 0.1), init("W3", (10, 16), 0.3),
             init("b3", (10,), 0.1)]
    return model(nodes, inits, [4, 32], "y", [4, 10]), (4, 32)


def mlp2():
    nodes = [h.make_node("MatMul", ["x", "W1"], ["m1"]), h.make_node("Gemm", ["m1", "W2"], ["g2"], transB=1), h.make_node("Sigmoid", ["g2"], ["y"])]
    return model(nodes, [init("W1", (24, 40), 0.2), init("W2", (12, 40), 0.2)], [3, 24], "y", [3, 12]), (3, 24)


def cnn():
    nodes = [
        h.make_node("Conv", ["x", "W1", "b1"], ["c1"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c1"], ["r1"]),
        h.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "W2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]), h.make_node("Sigmoid", ["c2"], ["y"]),
    ]
    inits = [init("W1", (8, 3, 3, 3), 0.3), init("b1", (8,), 0.1), init("W2", (16, 8, 3, 3), 0.2), init("b2", (16,), 0.1)]
    return model(nodes, inits, [1, 3, 16, 16], "y", [1, 16, 4, 4]), (1, 3, 16, 16)


class Reader(CalibrationDataReader):
    def __init__(self, shape):
        self.it = iter([{"x": rng.uniform(-1, 1, shape).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.it, None)


def counts(path):
    return collections.Counter(n.op_type for n in onnx.load(path).graph.node)


def optimize(src, dst, target, level="extended"):
    r = subprocess.run([GWR, "optimize", src, "--target", target, "--level", level, "-o", dst], capture_output=True, text=True)
    if r.returncode:
        sys.exit("gwr optimize failed: %s" % (r.stdout + r.stderr))
    return counts(dst)


def gwr_run(path, xin, out, opt):
    cmd = [GWR, "run", path, "--input", "x=" + xin, "-o", out] + ([] if opt else ["--no-optimize"])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("gwr run failed: %s\n%s" % (" ".join(cmd), r.stdout + r.stderr))
    t = onnx.TensorProto()
    with open(os.path.join(out, "output_0.pb"), "rb") as fh:
        t.ParseFromString(fh.read())
    return nh.to_array(t)


def reference(d, path, x):
    """x written for gwr (its file) and onnxruntime's output on path with its optimizations off."""
    xin = os.path.join(d, "x.pb")
    with open(xin, "wb") as fh:
        fh.write(nh.from_array(x, "x").SerializeToString())
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return xin, ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def out_scale(path):
    """The scale of the DequantizeLinear that writes the model's output."""
    m = onnx.load(path)
    inits = {i.name: nh.to_array(i) for i in m.graph.initializer}
    for n in m.graph.node:
        if n.output[0] == m.graph.output[0].name and n.op_type == "DequantizeLinear":
            return float(inits[n.input[1]])
    sys.exit("%s: the output is not a DequantizeLinear's" % path)


def close(what, got, want, step):
    d = np.abs(got.astype(np.float64) - want.astype(np.float64)) / step
    worst, share = float(d.max()), float(np.mean(d > 1.01))
    ok = worst <= 2.01 and share <= 0.01
    print("  %-40s worst %.2f steps, %.2f%% over 1 step: %s" % (what, worst, 100 * share, "ok" if ok else "FAIL"))
    if not ok:
        failures.append(what)


def case(d, name, build, per_channel, want, level="extended"):
    m, shape = build()
    f32 = os.path.join(d, name + ".onnx")
    onnx.save(m, f32)
    q = os.path.join(d, "%s_qdq%d.onnx" % (name, per_channel))
    quantize_static(f32, q, Reader(shape), quant_format=QuantFormat.QDQ, per_channel=per_channel, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    tag = "%s per-%s, level %s" % (name, "channel" if per_channel else "tensor", level)
    fused_path = os.path.join(d, "gwr.onnx")
    got = optimize(q, fused_path, "gwr", level)
    fused = {k: got.get(k, 0) for k in want}
    float_ops = {k: got.get(k, 0) for k in ("Conv", "MatMul", "Gemm")}
    if fused != want or any(v != want.get(k, 0) for k, v in float_ops.items()):
        failures.append(tag + " counts")
        print("  %s: gwr optimize --target gwr --level %s gave %s, want %s and no other Conv/MatMul/Gemm" % (tag, level, dict(got), want))
    onnx_counts = optimize(q, os.path.join(d, "onnx.onnx"), "onnx")
    if any(onnx_counts.get(k, 0) for k in ("QLinearConv", "QLinearMatMul", "MatMulIntegerToFloat")):
        failures.append(tag + " target onnx")
        print("  %s: target onnx fused: %s" % (tag, dict(onnx_counts)))
    xin, ref = reference(d, q, rng.uniform(-1, 1, shape).astype(np.float32))
    fusedv = gwr_run(fused_path, xin, os.path.join(d, "o1"), False)
    session = gwr_run(q, xin, os.path.join(d, "o3"), True)
    raw = gwr_run(q, xin, os.path.join(d, "o0"), False)
    step = out_scale(q)
    print("%s: fused %s" % (tag, fused))
    close(tag + ": gwr fused vs onnxruntime (no fusion)", fusedv, ref, step)
    close(tag + ": gwr fused vs gwr --no-optimize", fusedv, raw, step)
    close(tag + ": gwr run (session) vs onnxruntime", session, ref, step)


def handmade(d, name, op, want, absent):
    """x -> QuantizeLinear -> DequantizeLinear -> op(., DequantizeLinear(W_q int8)) with a float
    output (no QuantizeLinear after it), written here: MatMul fuses into MatMulIntegerToFloat
    (want), Conv and a Gemm with alpha 2 must not fuse (absent stays). Results against
    onnxruntime without its optimizations within 1e-5 of the output's range: float32 rounding."""
    if op == "Conv":
        wq = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
        xshape, attrs = [1, 3, 8, 8], {"pads": [1, 1, 1, 1]}
    else:
        wq = rng.integers(-127, 128, (16, 8)).astype(np.int8)
        xshape, attrs = [5, 16], ({"alpha": 2.0} if op == "Gemm" else {})
    inits = [nh.from_array(np.float32(0.01), "xs"), nh.from_array(np.uint8(120), "xz"), nh.from_array(wq, "wq"),
             nh.from_array((0.002 + 0.001 * rng.random(wq.shape[0 if op == "Conv" else 1])).astype(np.float32), "ws")]
    nodes = [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             h.make_node("DequantizeLinear", ["wq", "ws"], ["wd"], axis=0 if op == "Conv" else 1),
             h.make_node(op, ["xd", "wd"], ["y"], **attrs)]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, xshape)], [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(d, name + ".onnx")
    onnx.save(m, path)
    got = optimize(path, os.path.join(d, "gwr.onnx"), "gwr")
    ok = all(got.get(k, 0) == v for k, v in want.items()) and got.get(absent, 0) == 1
    print("%s: %s %s" % (name, dict(got), "ok" if ok else "FAIL (want %s and the %s kept)" % (want, absent)))
    if not ok:
        failures.append(name + " counts")
    xin, ref = reference(d, path, rng.uniform(-1, 1, xshape).astype(np.float32))
    y = gwr_run(path, xin, os.path.join(d, "o2"), True)
    err = float(np.max(np.abs(y - ref)) / (np.max(np.abs(ref)) or 1))
    print("  %s: gwr vs onnxruntime (no fusion): %.2g of the range %s" % (name, err, "ok" if err <= 1e-5 else "FAIL"))
    if err > 1e-5:
        failures.append(name + " values")


def main():
    with tempfile.TemporaryDirectory() as d:
        for pc in (0, 1):
            case(d, "mlp", mlp, pc, {"QLinearMatMul": 2, "MatMulIntegerToFloat": 1})
            case(d, "mlp2", mlp2, pc, {"QLinearMatMul": 2, "MatMulIntegerToFloat": 0})
            case(d, "cnn", cnn, pc, {"QLinearConv": 2}, "all")
            case(d, "cnn", cnn, pc, {"QLinearConv": 0, "Conv": 2})
        handmade(d, "matmul_float_out", "MatMul", {"MatMulIntegerToFloat": 1}, "QuantizeLinear")
        handmade(d, "conv_float_out", "Conv", {"QLinearConv": 0, "ConvInteger": 0}, "Conv")
        handmade(d, "gemm_alpha2", "Gemm", {"MatMulIntegerToFloat": 0, "QLinearMatMul": 0}, "Gemm")
    if failures:
        print("FAILED: " + ", ".join(failures))
        return 1
    print("all ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
