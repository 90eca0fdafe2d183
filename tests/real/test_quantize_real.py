#!/usr/bin/env python3
"""`gwr quantize` in every mode, on generated models and on make test's real
models: what it writes is valid and runs alike on gwr and onnxruntime.

    .venv/bin/python tests/real/test_quantize_real.py GWR [--expected FILE]
        [--only MODEL,...] [--modes MODE,...] [--quantizer gwr|ort] [--keep DIR]

Models: two generated ones (an MLP of MatMul/Add/Relu/Gemm whose K is not a
multiple of the block size; a CNN of Conv/Relu/MaxPool/Conv/Flatten/Gemm,
seeded weights) and real ones of bench/real/models.txt with flag ci, from
the cache (bench/real/fetch.py --ci; a missing model is a failure, never a
skip): oww-alexa (Gemm head), orientation-cls (PP-LCNet CNN, a MatMul head).
Static modes get a calibration directory of 8 seeded samples (ONNX's
test-data layout). Modes (`gwr quantize MODEL -o OUT ...`):

  dynamic           --mode dynamic --target onnx
  dynamic-ort       --mode dynamic --target ort
  dynamic-qdq       --mode dynamic --format qdq --target onnx
  static-qdq        --mode static --format qdq --target onnx --calibration DIR
  static-qoperator  --mode static --format qoperator --target onnx --calibration DIR
  weight-only-ort   --mode weight-only --bits 4 --block-size 32 --target ort
  weight-only-onnx  --mode weight-only --bits 4 --block-size 32 --target onnx

Checks of each model and mode (CHECK names as --expected lists them):
  quantize   gwr quantize exits 0 and writes the file
  valid      onnx.checker.check_model(full_check=True) passes (target ort:
             with onnxruntime's contrib ops known) and onnxruntime loads it
  form       the file holds the mode's ops (dynamic: DynamicQuantizeLinear
             and MatMulInteger/ConvInteger; dynamic-ort: DynamicQuantizeMatMul,
             MatMulIntegerToFloat or MatMulInteger; qdq: QuantizeLinear or
             DynamicQuantizeLinear, and DequantizeLinear; qoperator:
             QLinearConv/QLinearMatMul; weight-only-ort: MatMulNBits;
             weight-only-onnx: a 4-bit constant through DequantizeLinear with
             block_size) and no float weight left on a layer it quantized
  agree      gwr run of the file matches onnxruntime's run (optimizations
             disabled, one thread) on seeded inputs, every output. onnxruntime
             runs the file's exact twin: each int8 weight of an integer op
             (MatMulInteger, ConvInteger, QLinear*, DynamicQuantizeMatMul,
             MatMulIntegerToFloat) moved to uint8 (w + 128, zero point + 128),
             the same integers, because its u8s8 AVX2 kernels saturate pairs of
             products in int16 where int8 weights exceed [-64, 64]
             (tests/cli/quant_ort.py) while the spec and gwr sum exactly; its
             u8u8 kernels do not (on orientation-cls quantized by onnxruntime's
             own tool, QOperator: 0.15 relative RMS error on the file, 0 on its
             twin). Relative RMS error |a-b|_2 / |b|_2 within
               1e-3  weight-only (both dequantize the same 4-bit weights to
                     float32 and sum in float32) and static-qoperator (the
                     same integer sums and the spec's float requantization)
               0.02  dynamic forms: each DynamicQuantizeLinear derives its
                     scale from its activation's min and max, so a float op
                     upstream one ulp apart moves the scale and through it
                     the codes (orientation-cls: onnxruntime's and gwr's
                     BatchNormalization differ by 5e-7, one scale by 4e-9,
                     the softmax by 0.9% after 33 quantized layers, with
                     both unoptimized; every integer sum is the same)
               0.02  qdq forms (static-qdq 0.03: orientation-cls, 33
                     requantized Convs, measured 0.020): onnxruntime computes DequantizeLinear -> float
                     op -> QuantizeLinear in float32, gwr fuses the groups into
                     its exact integer kernels; a requantized value may round
                     the other way (one step of uint8), over tens of layers
             integer outputs exactly
  fp32       sanity, not accuracy: each float output of the quantized file in
             onnxruntime has cosine >= 0.9 to the float32 model's (catches
             wrong scales, axes or layouts that gwr and onnxruntime would
             share)
--quantizer ort runs the same checks on onnxruntime's own quantizer's files
(the modes it has a counterpart for), which tests the harness itself.
Known failures: --expected FILE (tests/real/quantize_expected_failures.txt),
`MODEL CHECK REASON` with CHECK as `MODE:CHECK` (* and ? match), a listed
check that passes failing the test as stale, as in test_real_models.py.
"""
import argparse
import fnmatch
import logging
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "real"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, HERE)
import manifest  # noqa: E402
import run as realbench  # noqa: E402
from quantize import FeedReader, chdir, first_line, write_calibration  # noqa: E402
from test_real_models import load_expected  # noqa: E402

MODES = {
    "dynamic": ["--mode", "dynamic", "--target", "onnx"],
    "dynamic-ort": ["--mode", "dynamic", "--target", "ort"],
    "dynamic-qdq": ["--mode", "dynamic", "--format", "qdq", "--target", "onnx"],
    "static-qdq": ["--mode", "static", "--format", "qdq", "--target", "onnx"],
    "static-qoperator": ["--mode", "static", "--format", "qoperator", "--target", "onnx"],
    "weight-only-ort": ["--mode", "weight-only", "--bits", "4", "--block-size", "32",
                        "--target", "ort"],
    "weight-only-onnx": ["--mode", "weight-only", "--bits", "4", "--block-size", "32",
                         "--target", "onnx"],
}
TOL = {"weight-only-ort": 1e-3, "weight-only-onnx": 1e-3, "dynamic-qdq": 0.02,
       "static-qdq": 0.03, "dynamic": 0.02, "dynamic-ort": 0.02, "static-qoperator": 1e-3}
REAL = ("oww-alexa", "orientation-cls")
INTEGER_OPS = ("MatMulInteger", "ConvInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
               "QLinearConv", "QLinearMatMul", "MatMulNBits")
LAYER_OPS = ("MatMul", "Gemm", "Conv")


# ------------------------------------------------------------- models ---
def generated_models(d):
    """The generated float32 models: {name: path}."""
    import numpy as np
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh
    rng = np.random.default_rng(24)

    def w(name, *shape, scale=0.3):
        return nh.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    def save(name, nodes, inits, x_shape, out_shape):
        g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", T.FLOAT, x_shape)],
                         [h.make_tensor_value_info("y", T.FLOAT, out_shape)], initializer=inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
        onnx.checker.check_model(m, full_check=True)
        path = os.path.join(d, name + ".onnx")
        onnx.save(m, path)
        return path

    mlp = save("gen-mlp", [
        h.make_node("MatMul", ["x", "w1"], ["t1"]),
        h.make_node("Add", ["t1", "b1"], ["t2"]),
        h.make_node("Relu", ["t2"], ["t3"]),
        h.make_node("MatMul", ["t3", "w2"], ["t4"]),
        h.make_node("Add", ["t4", "b2"], ["t5"]),
        h.make_node("Relu", ["t5"], ["t6"]),
        h.make_node("Gemm", ["t6", "w3", "b3"], ["y"]),
    ], [w("w1", 40, 64), w("b1", 64), w("w2", 64, 48, scale=0.2), w("b2", 48),
        w("w3", 48, 10, scale=0.2), w("b3", 10)], [4, 40], [4, 10])
    cnn = save("gen-cnn", [
        h.make_node("Conv", ["x", "c1", "cb1"], ["t1"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["t1"], ["t2"]),
        h.make_node("MaxPool", ["t2"], ["t3"], kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["t3", "c2", "cb2"], ["t4"], pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["t4"], ["t5"]),
        h.make_node("Flatten", ["t5"], ["t6"]),
        h.make_node("Gemm", ["t6", "fw", "fb"], ["y"]),
    ], [w("c1", 16, 3, 3, 3), w("cb1", 16, scale=0.1), w("c2", 8, 16, 3, 3, scale=0.1),
        w("cb2", 8, scale=0.1), w("fw", 8 * 6 * 6, 5, scale=0.05), w("fb", 5)],
        [1, 3, 12, 12], [1, 5])
    return {"gen-mlp": mlp, "gen-cnn": cnn}


def seeded_feeds(path, model, seed):
    """Seeded inputs: the manifest's (real models) or uniform [-1, 1)."""
    import numpy as np
    import onnx
    from onnx import helper
    proto = onnx.load(path)
    if model is not None:
        return manifest.make_inputs(model, proto, seed=seed)
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in proto.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        feeds[vi.name] = rng.uniform(-1, 1, size=shape).astype(dtype)
    return feeds


def has_weight_only_layer(path):
    """A MatMul with a constant 2-D B, or a Gemm without transposes: what
    weight-only quantizes."""
    import onnx
    m = onnx.load(path)
    inits = {t.name: t for t in m.graph.initializer}
    for n in m.graph.node:
        if len(n.input) < 2 or n.input[1] not in inits or len(inits[n.input[1]].dims) != 2:
            continue
        attrs = {a.name: a.i for a in n.attribute}
        if n.op_type == "MatMul" or (n.op_type == "Gemm" and not attrs.get("transA")
                                     and not attrs.get("transB")):
            return True
    return False


# Integer ops' int8 weight inputs: {op: (weight index, zero point index)}.
INT8_WEIGHTS = {"MatMulInteger": (1, 3), "ConvInteger": (1, 3), "QLinearConv": (3, 5),
                "QLinearMatMul": (3, 5), "DynamicQuantizeMatMul": (1, 3),
                "MatMulIntegerToFloat": (1, 5)}


def exact_twin(src, dst):
    """src with every int8 weight of an integer op moved to uint8 (w + 128,
    zero point + 128): the same integers w - zero point, which onnxruntime's
    u8u8 kernels sum exactly (no int16 saturation), so its run of dst is the
    spec's exact arithmetic. Returns how many weights moved."""
    import numpy as np
    import onnx
    from onnx import numpy_helper as nh
    m = onnx.load(src)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    made, moved = {}, 0

    def u8(name, arr):
        if name not in made:
            g.initializer.append(nh.from_array(arr.astype(np.uint8), name))
            made[name] = True
        return name

    for n in g.node:
        if n.op_type not in INT8_WEIGHTS:
            continue
        wi, zi = INT8_WEIGHTS[n.op_type]
        if wi >= len(n.input) or n.input[wi] not in inits:
            continue
        w = nh.to_array(inits[n.input[wi]])
        if w.dtype != np.int8:
            continue
        zp_name = n.input[zi] if zi < len(n.input) and n.input[zi] else ""
        if zp_name and zp_name not in inits:
            continue
        if zp_name:
            zp = nh.to_array(inits[zp_name]).astype(np.int16)
        else:
            scale_shape = ()
            if n.op_type in ("QLinearConv", "QLinearMatMul"):
                scale_shape = tuple(inits[n.input[wi + 1]].dims) if n.input[wi + 1] in inits else ()
            zp = np.zeros(scale_shape, np.int16)
        while len(n.input) <= zi:
            n.input.append("")
        n.input[wi] = u8(n.input[wi] + "_u8", w.astype(np.int16) + 128)
        n.input[zi] = u8((zp_name or n.name + "_wzp") + "_u8", zp + 128)
        moved += 1
    onnx.save(m, dst)
    return moved


# ------------------------------------------------------------- checks ---
def form_problem(path, mode):
    """None when the file holds mode's ops and no layer it quantized kept a
    float weight, else a line saying what is wrong."""
    import onnx
    m = onnx.load(path)
    ops = {n.op_type for n in m.graph.node}
    want = {
        "dynamic": [{"DynamicQuantizeLinear"}, {"MatMulInteger", "ConvInteger"}],
        "dynamic-ort": [{"DynamicQuantizeMatMul", "MatMulIntegerToFloat", "MatMulInteger",
                         "ConvInteger"}],
        "dynamic-qdq": [{"DynamicQuantizeLinear"}, {"DequantizeLinear"}],
        "static-qdq": [{"QuantizeLinear"}, {"DequantizeLinear"}],
        "static-qoperator": [{"QLinearConv", "QLinearMatMul"}],
        "weight-only-ort": [{"MatMulNBits"}],
        "weight-only-onnx": [{"DequantizeLinear"}],
    }[mode]
    for group in want:
        if not ops & group:
            return f"no {' or '.join(sorted(group))} in the file (ops: {', '.join(sorted(ops))})"
    if mode == "weight-only-onnx":
        inits = {t.name: t for t in m.graph.initializer}
        blocked = [n for n in m.graph.node if n.op_type == "DequantizeLinear"
                   and any(a.name == "block_size" and a.i > 0 for a in n.attribute)
                   and n.input[0] in inits
                   and inits[n.input[0]].data_type in (onnx.TensorProto.INT4,
                                                       onnx.TensorProto.UINT4)]
        if not blocked:
            return "no DequantizeLinear with block_size of a 4-bit constant"
    if mode in ("dynamic-qdq", "static-qdq", "weight-only-onnx"):
        # every layer fed by a DequantizeLinear activation must get its weight the same way
        inits = {t.name for t in m.graph.initializer}
        prod = {o: n.op_type for n in m.graph.node for o in n.output}
        for n in m.graph.node:
            if n.op_type in LAYER_OPS and len(n.input) > 1 and n.input[1] in inits \
                    and prod.get(n.input[0]) == "DequantizeLinear":
                return f"{n.op_type} '{n.name}' takes a quantized input but a float weight"
    return None


def rel_rms(a, b):
    import numpy as np
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def agree_problem(got, ref, tol, errs=None):
    import numpy as np
    for name, b in ref.items():
        if name not in got:
            return f"gwr wrote no output '{name}'"
        a = got[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{name}: {a.dtype}{list(a.shape)}, onnxruntime {b.dtype}{list(b.shape)}"
        if not np.issubdtype(b.dtype, np.floating):
            bad = int(np.count_nonzero(a != b))
            if bad:
                return f"{name}: {bad} of {b.size} values differ"
            continue
        if not np.all(np.isfinite(a)):
            return f"{name}: not finite"
        e = rel_rms(a, b)
        if errs is not None:
            errs.append(e)
        if e > tol:
            return f"{name}: relative RMS error {e:.3g} > {tol}"
    return None


def fp32_problem(got, ref):
    import numpy as np
    for name, b in ref.items():
        if name not in got or not np.issubdtype(b.dtype, np.floating):
            continue
        a = got[name].astype(np.float64).ravel()
        b = b.astype(np.float64).ravel()
        c = float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))
        if c < 0.9:
            return f"{name}: cosine {c:.3f} to the float32 model's output (< 0.9)"
    return None


# --------------------------------------------------------- quantizers ---
def gwr_quantize(gwr, src, dst, mode, calib_dir):
    args = MODES[mode] + (["--calibration", calib_dir] if mode.startswith("static") else [])
    r = subprocess.run([gwr, "quantize", src, "-o", dst] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    if r.returncode != 0 or not os.path.exists(dst):
        lines = (r.stderr or r.stdout).strip().splitlines()
        return (lines[-1] if lines else f"exit {r.returncode}")[:300]
    return None


def ort_quantize(src, dst, mode, calib):
    """onnxruntime's quantizer in the nearest setting (the harness's own
    test); None when it has no counterpart of mode."""
    import onnx
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    class Reader(FeedReader, CalibrationDataReader):
        pass

    if mode == "dynamic":
        quantize_dynamic(src, dst, op_types_to_quantize=["MatMul", "Gemm"], per_channel=True,
                         weight_type=QuantType.QInt8)
    elif mode in ("static-qdq", "static-qoperator"):
        quantize_static(src, dst, Reader(calib), op_types_to_quantize=["Conv", "MatMul"],
                        quant_format=QuantFormat.QDQ if mode == "static-qdq"
                        else QuantFormat.QOperator, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    elif mode in ("weight-only-ort", "weight-only-onnx"):
        q = MatMulNBitsQuantizer(onnx.load(src), bits=4, block_size=32, is_symmetric=True,
                                 quant_format=QuantFormat.QOperator if mode == "weight-only-ort"
                                 else QuantFormat.QDQ)
        q.process()
        q.model.save_model_to_file(dst, False)
    else:
        return None
    return dst


def check_one(args, name, path, model, mode, work, fail):
    """Quantizes path in mode and runs the checks; fail(check, msg)."""
    calib = [seeded_feeds(path, model, seed=100 + i) for i in range(8)]
    calib_dir = write_calibration(calib, os.path.join(work, f"calib-{mode}"))
    dst = os.path.join(work, f"{mode}.onnx")
    if args.quantizer == "gwr":
        err = gwr_quantize(args.gwr, path, dst, mode, calib_dir)
        if err:
            fail("quantize", err)
            return
    else:
        try:
            with chdir(work):
                if ort_quantize(path, dst, mode, calib) is None:
                    return
        except Exception as e:  # noqa: BLE001
            fail("quantize", f"onnxruntime: {first_line(e, 200)}")
            return
    target = "ort" if mode.endswith("-ort") else "onnx"
    problem = realbench.check_file(dst, target=target)
    if problem:
        fail("valid", problem)
        return
    problem = form_problem(dst, mode)
    if problem:
        fail("form", problem)
    feeds = seeded_feeds(path, model, seed=0)
    twin = os.path.join(work, f"{mode}.twin.onnx")
    try:
        exact_twin(dst, twin)
        ref = realbench.ort_outputs(twin, feeds, "disable")
        fp32 = realbench.ort_outputs(path, feeds, "disable")
    except Exception as e:  # noqa: BLE001
        fail("agree", f"onnxruntime run: {first_line(e, 200)}")
        return
    got, _, err = realbench.gwr_run(args.gwr, dst, feeds, os.path.join(work, f"run-{mode}"),
                                    1, 300)
    if err:
        fail("agree", f"gwr run: {err}")
    else:
        errs = []
        problem = agree_problem(got, ref, TOL[mode], errs)
        if problem:
            fail("agree", problem)
        elif errs:
            print(f"{name} {mode}: gwr vs onnxruntime, relative RMS error {max(errs):.2g} "
                  f"(tolerance {TOL[mode]})")
    problem = fp32_problem(ref, fp32)
    if problem:
        fail("fp32", problem)


def main(argv=None):
    logging.disable(logging.INFO)  # onnxruntime's quantizers log every node
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gwr", help="the gwr executable")
    ap.add_argument("--expected", default=os.path.join(HERE, "quantize_expected_failures.txt"))
    ap.add_argument("--only", help="comma-separated models (gen-mlp, gen-cnn, " +
                    ", ".join(REAL) + ")")
    ap.add_argument("--modes", help="comma-separated modes (default: all)")
    ap.add_argument("--quantizer", choices=("gwr", "ort"), default="gwr")
    ap.add_argument("--keep", help="keep the files here")
    args = ap.parse_args(argv)
    args.gwr = os.path.abspath(args.gwr)
    modes = args.modes.split(",") if args.modes else list(MODES)
    bad = [m for m in modes if m not in MODES]
    if bad:
        print(f"FAIL: unknown mode(s) {', '.join(bad)}")
        return 2
    expected = load_expected(args.expected)
    catalog = {m.name: m for m in manifest.load()}
    for name in REAL:
        if name not in catalog or "ci" not in catalog[name].flags:
            print(f"FAIL: {name} is not a ci model of bench/real/models.txt")
            return 1

    failures, xfails, t_start = [], [], time.time()
    tmp = args.keep or tempfile.mkdtemp(prefix="gwr-quant-real-")
    os.makedirs(tmp, exist_ok=True)
    models = [(n, p, None) for n, p in generated_models(tmp).items()]
    for name in REAL:
        m = catalog[name]
        if not os.path.exists(m.path) or manifest.sha256_of(m.path) != m.sha256:
            failures.append(f"{name}: not in the cache {manifest.cache_dir()} (or another "
                            "sha256): run .venv/bin/python bench/real/fetch.py --ci")
            continue
        models.append((name, m.path, m))
    if args.only:
        models = [x for x in models if x[0] in args.only.split(",")]
    checked = 0
    for name, path, model in models:
        for mode in modes:
            if mode.startswith("weight-only") and not has_weight_only_layer(path):
                continue

            def fail(check, msg, name=name, mode=mode):
                tag = f"{mode}:{check}"
                hits = [e for e in expected
                        if e["model"] == name and fnmatch.fnmatchcase(tag, e["check"])]
                for e in hits:
                    e["hit"] = True
                (xfails if hits else failures).append(f"{name} {tag}: {msg}")

            work = os.path.join(tmp, name, mode)
            os.makedirs(work, exist_ok=True)
            t0 = time.time()
            check_one(args, name, path, model, mode, work, fail)
            checked += 1
            print(f"{name} {mode}: {time.time() - t0:.1f} s", flush=True)
    if not args.keep:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)

    for x in xfails:
        print(f"XFAIL {x}")
    names = {n for n, _, _ in models}
    for e in expected:
        if not e["hit"] and e["model"] in names:
            failures.append(f"{args.expected}:{e['line']}: '{e['model']} {e['check']}' now "
                            f"passes: remove the stale entry ({e['reason']})")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{checked} model-mode pairs ({args.quantizer}), {len(failures)} failures, "
          f"{len(xfails)} expected failures, {time.time() - t_start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
