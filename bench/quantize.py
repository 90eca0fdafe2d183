#!/usr/bin/env python3
"""The quantization figures of issue 24, gwr against onnxruntime's quantizer.

    .venv/bin/python bench/quantize.py [--gwr build/gwr] [--inputs 100]
        [--calib 32] [--repeat 20] [--only size,accuracy,speed,precision]
        [--embedding NAME] [--cnn NAME] [--work DIR] [--json FILE]

The models are float32 real models of bench/real/models.txt (flag qbench),
fetched first with `.venv/bin/python bench/real/fetch.py --only
minilm-l3-fp32,orientation-cls`:

  embedding  minilm-l3-fp32: paraphrase-MiniLM-L3-v2 (3-layer BERT, mean-pooled
             sentence embedding [1,384]); inputs: 100 seeded "sentences" of
             6 to 60 word-piece ids drawn with Zipf frequencies from the
             vocabulary's word range, framed by [CLS] ... [SEP], zero-padded
             to 128 with the attention mask 0 on the padding.
  cnn        orientation-cls: the PP-LCNet text-orientation classifier (4
             classes, 224x224, ImageNet normalization); inputs: seeded
             synthetic document images (lines of dark word-like strokes on a
             light page) rotated by 0, 90, 180 or 270 degrees, so the
             classifier has real decisions to make. The calibration set is a
             separate seed.

Each mode is run through gwr (`gwr quantize`, docs/cli.md) and through
onnxruntime 1.31's quantization tool with the same settings:

  dynamic      int8 weights symmetric per output channel, uint8 activations
               at run time: gwr --mode dynamic vs quantize_dynamic(per_channel,
               QInt8 weights, MatMul/Gemm) after quant_pre_process
  weight-only  4-bit, block 32, symmetric, round to nearest: gwr --mode
               weight-only --bits 4 --block-size 32 vs MatMulNBitsQuantizer(
               bits 4, block 32, is_symmetric) with its default (RTN) config;
               gwr's --algo gptq is reported too
  static       QDQ, int8 weights per channel, uint8 activations, MinMax on
               the same calibration inputs: gwr --mode static --format qdq
               --method minmax --calibration DIR vs quantize_static(QDQ,
               per_channel, MinMax) after quant_pre_process

Figures (each printed for gwr and for onnxruntime's quantizer, same run):
  size      bytes of the MatMul/Gemm/Conv weights (the constant weight input,
            with the scales and zero points that go with it) over fp32
            (targets: int8 <= 0.27x, 4-bit <= 0.16x)
  accuracy  embedding: cosine of the quantized model's sentence embedding to
            fp32's, mean and minimum over the inputs (target >= 0.99);
            cnn: top-1 agreement with fp32 (target >= 98%); all run in
            onnxruntime (one thread), and every quantized model on gwr's
            executor too (exact integer sums, no int16 saturation)
  speed     best-of-N latency, one thread: onnxruntime on gwr's model vs on
            onnxruntime's quantizer's model, same mode; gwr's executor on
            gwr's int8 encoder vs gwr's fp32 (target <= 0.6x) and vs
            onnxruntime int8 (target <= 1.0x)
  precision bench/precision.py (`gwr precision --auto` vs onnxconverter-common's
            auto_convert_mixed_precision), run when it exists

Every gwr step fails soft: "gwr: not available: MESSAGE", and the run goes on,
so onnxruntime's half is measured whatever state gwr is in. Exit status 0
unless the models are missing or the usage is wrong (2).
"""
import argparse
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "real"))
import manifest  # noqa: E402
import run as realbench  # noqa: E402

# Ops whose constant weight input is what "the weights" of the size figure
# are: {op: indices of the inputs that are the weight, its scales and zero
# points}. A weight reached through DequantizeLinear (QDQ, blocked) counts
# with the DequantizeLinear's three inputs.
WEIGHT_INPUTS = {
    "MatMul": (1,), "Gemm": (1,), "Conv": (1,),
    "MatMulInteger": (1, 3), "ConvInteger": (1, 3),
    "DynamicQuantizeMatMul": (1, 2, 3), "MatMulIntegerToFloat": (1, 3, 5),
    "MatMulNBits": (1, 2, 3), "QLinearConv": (3, 4, 5), "QLinearMatMul": (3, 4, 5),
}
PASS_THROUGH = ("DequantizeLinear", "Transpose", "Reshape", "Cast", "Identity")

# Image normalization of the CNNs (mean, std per channel over [0,1] pixels).
CNN_NORM = {
    "orientation-cls": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    "ppocr-cls": ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
}

# The quantizers compared: gwr; onnxruntime's with gwr's settings; and
# onnxruntime's with reduce_range (7-bit weights), which its documentation
# recommends on AVX2 machines without VNNI, where its u8s8 kernels saturate
# pairs of products in int16 (docs: "quantization on x86-64 ... saturation").
TOOLS = {"gwr": "gwr", "ort": "onnxruntime", "ort-rr": "onnxruntime reduce_range"}

CLS, SEP, WORDS = 101, 102, (1996, 29612)  # bert-base-uncased: [CLS], [SEP], word pieces


@contextlib.contextmanager
def chdir(d):
    old = os.getcwd()
    os.chdir(d)
    try:
        yield
    finally:
        os.chdir(old)


def say(msg):
    print(msg, flush=True)


def first_line(e, n=200):
    """An exception as one line (its type where its message is empty)."""
    lines = str(e).strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:n]


def gwr_soft(msg):
    say(f"gwr: not available: {msg}")


# ------------------------------------------------------------- inputs ---
def sentence_feeds(proto, n, seed, seq=128):
    """n seeded token sequences shaped like tokenized sentences: [CLS],
    6..60 word pieces with Zipf frequencies, [SEP], zero padding masked out.
    Returns [{input: array}] for the inputs proto has (input_ids,
    attention_mask, token_type_ids)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    names = [i.name for i in proto.graph.input]
    lo, hi = WORDS
    feeds = []
    for _ in range(n):
        k = int(rng.integers(6, 61))
        words = lo + np.minimum(rng.zipf(1.3, k) - 1, hi - lo - 1)
        ids = np.zeros((1, seq), np.int64)
        ids[0, 0], ids[0, 1:k + 1], ids[0, k + 1] = CLS, words, SEP
        mask = np.zeros((1, seq), np.int64)
        mask[0, :k + 2] = 1
        f = {"input_ids": ids, "attention_mask": mask,
             "token_type_ids": np.zeros((1, seq), np.int64)}
        feeds.append({k2: v for k2, v in f.items() if k2 in names})
    return feeds


def document_image(rng, h, w):
    """A light page with lines of dark word-like strokes, pixels 0..255,
    [h, w, 3] float32."""
    import numpy as np
    img = np.full((h, w, 3), 255.0 * rng.uniform(0.85, 1.0), np.float32)
    y = int(rng.integers(4, max(5, h // 10)))
    while y < h - 12:
        lh = int(rng.integers(5, 11))
        x, end = int(rng.integers(2, 20)), w - int(rng.integers(2, max(3, w // 4)))
        while x < end:
            ww = min(int(rng.integers(4, 9)) * int(rng.integers(1, 4)), end - x)
            ink = float(rng.uniform(0, 60))
            for cx in range(x, x + ww, 3):
                top = y - (int(rng.integers(0, 4)) if rng.random() < 0.3 else 0)
                bot = y + lh + (int(rng.integers(0, 4)) if rng.random() < 0.15 else 0)
                img[max(top, 0):bot, cx:cx + 2, :] = ink
            img[y + lh // 2, x:x + ww, :] = ink
            x += ww + int(rng.integers(4, 9))
        y += lh + int(rng.integers(5, 13))
    return img


def image_feeds(model, proto, n, seed):
    """n seeded document images, rotated by multiples of 90 degrees (180
    only where the input is not square), normalized as the model expects."""
    import numpy as np
    rng = np.random.default_rng(seed)
    spec = model.inputs[0]
    _, c, h, w = spec.shape
    mean, std = CNN_NORM.get(model.name, CNN_NORM["orientation-cls"])
    mean, std = np.array(mean, np.float32), np.array(std, np.float32)
    name = proto.graph.input[0].name
    feeds = []
    for i in range(n):
        k = i % 4 if h == w else 2 * (i % 2)
        img = np.rot90(document_image(rng, h if k % 2 == 0 else w, w if k % 2 == 0 else h), k)
        x = ((img / 255.0 - mean) / std).transpose(2, 0, 1)[None, :c]
        feeds.append({name: np.ascontiguousarray(x, dtype=np.float32)})
    return feeds


def write_calibration(feeds, d):
    """The samples as ONNX's test-data layout: d/sample_NNN/input_K.pb."""
    from onnx import numpy_helper
    os.makedirs(d, exist_ok=True)
    for i, f in enumerate(feeds):
        sd = os.path.join(d, f"sample_{i:03d}")
        os.makedirs(sd, exist_ok=True)
        for k, (name, a) in enumerate(f.items()):
            with open(os.path.join(sd, f"input_{k}.pb"), "wb") as fh:
                fh.write(numpy_helper.from_array(a, name).SerializeToString())
    return d


# -------------------------------------------------------- quantizers ---
def gwr_quantize(gwr, src, dst, args, timeout=1800):
    """Runs `gwr quantize src -o dst ARGS`: (seconds, None) or (None, error)."""
    cmd = [gwr, "quantize", src, "-o", dst] + list(args)
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, first_line(e)
    secs = time.perf_counter() - t0
    if r.returncode != 0 or not os.path.exists(dst):
        lines = (r.stderr or r.stdout).strip().splitlines()
        return None, (lines[-1] if lines else f"exit {r.returncode}")[:300]
    return secs, None


def ort_preprocess(src, dst):
    """onnxruntime's recommended pre-processing before quantization (shape
    inference, its basic optimizations: Conv+BatchNormalization folded);
    the original where it fails."""
    from onnxruntime.quantization import quant_pre_process
    try:
        quant_pre_process(src, dst, skip_symbolic_shape=False)
        return dst
    except Exception as e:  # noqa: BLE001 - the peer's own failure is reported
        say(f"onnxruntime: quant_pre_process failed ({first_line(e, 120)}), "
            "quantizing the original")
        return src


def ort_dynamic(src, dst, work, reduce_range=False):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    pre = ort_preprocess(src, os.path.join(work, "ort-pre-dynamic.onnx"))
    t0 = time.perf_counter()
    quantize_dynamic(pre, dst, op_types_to_quantize=["MatMul", "Gemm"], per_channel=True,
                     reduce_range=reduce_range, weight_type=QuantType.QInt8)
    return time.perf_counter() - t0


def ort_nbits(src, dst, bits=4, block=32):
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    t0 = time.perf_counter()
    q = MatMulNBitsQuantizer(onnx.load(src), bits=bits, block_size=block, is_symmetric=True)
    q.process()
    q.model.save_model_to_file(dst, False)
    return time.perf_counter() - t0


class FeedReader:
    """onnxruntime's CalibrationDataReader over a list of feeds."""

    def __init__(self, feeds):
        self.feeds, self.i = feeds, 0

    def get_next(self):
        if self.i >= len(self.feeds):
            return None
        self.i += 1
        return self.feeds[self.i - 1]

    def rewind(self):
        self.i = 0


def ort_static(src, dst, calib, work, fmt="qdq", reduce_range=False):
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod,
                                          QuantFormat, QuantType, quantize_static)

    class Reader(FeedReader, CalibrationDataReader):
        pass

    def run(model):
        quantize_static(model, dst, Reader(calib),
                        quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                        per_channel=True, reduce_range=reduce_range,
                        activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, calibrate_method=CalibrationMethod.MinMax)

    pre = ort_preprocess(src, os.path.join(work, "ort-pre-static.onnx"))
    t0 = time.perf_counter()
    try:
        run(pre)
    except Exception as e:  # noqa: BLE001 - ppocr-cls: its pre-processed file fails
        if pre == src:
            raise
        say(f"onnxruntime: quantize_static of the pre-processed model failed "
            f"({first_line(e, 120)}), quantizing the original")
        t0 = time.perf_counter()
        run(src)
    return time.perf_counter() - t0


# ------------------------------------------------------------ figures ---
def weight_bytes(path):
    """Bytes of the constant weights of MatMul/Gemm/Conv (and their
    quantized forms) with their scales and zero points: the initializers
    reaching WEIGHT_INPUTS through DequantizeLinear/Transpose/Reshape/Cast."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    for n in g.node:  # Constant nodes count as initializers
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            inits[n.output[0]] = n.attribute[0].t
    producer = {o: n for n in g.node for o in n.output}
    seen, total = set(), 0

    def add(name):
        nonlocal total
        if not name or name in seen:
            return
        seen.add(name)
        if name in inits:
            t = inits[name]
            total += numpy_helper.to_array(t).nbytes if t.data_type != onnx.TensorProto.INT4 \
                and t.data_type != onnx.TensorProto.UINT4 else (int(_numel(t)) + 1) // 2
            return
        p = producer.get(name)
        if p is not None and p.op_type in PASS_THROUGH:
            for i, x in enumerate(p.input):
                if p.op_type in ("Reshape",) and i == 1:
                    continue
                add(x)

    for n in g.node:
        for i in WEIGHT_INPUTS.get(n.op_type, ()):
            if i < len(n.input):
                src = n.input[i]
                # only constant weights: an activation x activation MatMul has none
                if src in inits or (src in producer and producer[src].op_type in PASS_THROUGH
                                    and _const_root(src, producer, inits)):
                    add(src)
    return total


def _numel(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def _const_root(name, producer, inits, depth=0):
    if name in inits:
        return True
    p = producer.get(name)
    if p is None or p.op_type not in PASS_THROUGH or depth > 8 or not p.input:
        return False
    return _const_root(p.input[0], producer, inits, depth + 1)


def embedding_output(session):
    """The name of the sentence embedding: the first float output of rank 2."""
    for o in session.get_outputs():
        if o.type == "tensor(float)" and len(o.shape) == 2:
            return o.name
    for o in session.get_outputs():
        if o.type == "tensor(float)":
            return o.name
    raise ValueError("no float output")


def cosines(ref, got):
    import numpy as np
    out = []
    for a, b in zip(ref, got):
        a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
        out.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30)))
    return out


def ort_outputs_all(path, feeds, name):
    s = realbench.ort_session(path, "all")
    return [s.run([name], f)[0] for f in feeds]


def gwr_run(gwr, path, feed, work, repeat):
    """realbench.gwr_run, with a gwr that cannot be started an error line."""
    try:
        return realbench.gwr_run(gwr, path, feed, work, repeat, 600)
    except OSError as e:
        return None, None, str(e)


def gwr_outputs_all(gwr, path, feeds, name, work):
    outs = []
    for i, f in enumerate(feeds):
        o, _, err = gwr_run(gwr, path, f, os.path.join(work, f"s{i}"), 1)
        if err:
            return None, err
        if name not in o:
            return None, f"gwr run wrote no output '{name}'"
        outs.append(o[name])
    return outs, None


def agreement(ref, got):
    import numpy as np
    same = sum(int(np.argmax(a) == np.argmax(b)) for a, b in zip(ref, got))
    return same / max(1, len(ref))


def fmt(x, spec=".4f"):
    return "-" if x is None else format(x, spec)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


# --------------------------------------------------------------- main ---
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gwr", default=os.path.join(ROOT, "build", "gwr"))
    ap.add_argument("--inputs", type=int, default=100, help="evaluation inputs (default 100)")
    ap.add_argument("--calib", type=int, default=32, help="calibration samples (default 32)")
    ap.add_argument("--gwr-exec-inputs", type=int,
                    help="inputs run on gwr's executor for its accuracy (default: all)")
    ap.add_argument("--repeat", type=int, default=20, help="latency: best of N (default 20)")
    ap.add_argument("--only", default="size,accuracy,speed,precision")
    ap.add_argument("--embedding", default="minilm-l3-fp32")
    ap.add_argument("--cnn", default="orientation-cls")
    ap.add_argument("--work", help="keep the quantized models here (default: a temp dir)")
    ap.add_argument("--json", help="write the figures as JSON here")
    args = ap.parse_args(argv)
    if args.gwr_exec_inputs is None:
        args.gwr_exec_inputs = args.inputs
    logging.disable(logging.INFO)  # onnxruntime's quantizers log every node
    want = set(args.only.split(","))
    unknown = want - {"size", "accuracy", "speed", "precision"}
    if unknown:
        print(f"quantize.py: unknown figure(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    models = {m.name: m for m in manifest.load()}
    for name in (args.embedding, args.cnn):
        if name not in models:
            print(f"quantize.py: no model '{name}' in bench/real/models.txt", file=sys.stderr)
            return 2
        if not os.path.exists(models[name].path):
            print(f"quantize.py: {name} is not in the cache {manifest.cache_dir()}: run "
                  f".venv/bin/python bench/real/fetch.py --only {name}", file=sys.stderr)
            return 2
    gwr = os.path.abspath(args.gwr)
    if not os.access(gwr, os.X_OK):
        gwr_soft(f"{gwr} is not an executable (build it: cmake --build build --target gwr)")

    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="gwr-quant-bench-"))
    os.makedirs(work, exist_ok=True)
    try:
        res = run_all(args, want, models[args.embedding], models[args.cnn], gwr, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)
    return 0


def run_all(args, want, emb, cnn, gwr, work):
    import onnx
    import onnxruntime as ort
    res = {"onnxruntime": ort.__version__, "onnx": onnx.__version__, "gwr": gwr,
           "embedding": emb.name, "cnn": cnn.name, "inputs": args.inputs,
           "calibration": args.calib}
    say(f"# gwr quantization vs onnxruntime {ort.__version__}'s quantization tool "
        f"({emb.name}, {cnn.name}; {args.inputs} inputs, {args.calib} calibration samples)")
    emb_proto, cnn_proto = onnx.load(emb.path), onnx.load(cnn.path)
    emb_feeds = sentence_feeds(emb_proto, args.inputs, seed=1)
    emb_calib = sentence_feeds(emb_proto, args.calib, seed=2)
    cnn_feeds = image_feeds(cnn, cnn_proto, args.inputs, seed=1)
    cnn_calib = image_feeds(cnn, cnn_proto, args.calib, seed=2)
    cdir_emb = write_calibration(emb_calib, os.path.join(work, "calib-emb"))
    cdir_cnn = write_calibration(cnn_calib, os.path.join(work, "calib-cnn"))

    # (model, mode, tool) -> path of the quantized model (None: not made)
    made = {}
    jobs = [
        (emb, "dynamic", ["--mode", "dynamic", "--target", "ort"],
         {"ort": lambda s, d: ort_dynamic(s, d, work),
          "ort-rr": lambda s, d: ort_dynamic(s, d, work, reduce_range=True)}),
        (emb, "weight-only-4", ["--mode", "weight-only", "--target", "ort", "--bits", "4",
                                "--block-size", "32",
                                "--algo", "rtn"],
         {"ort": lambda s, d: ort_nbits(s, d, 4, 32)}),
        (emb, "weight-only-4-gptq", ["--mode", "weight-only", "--bits", "4", "--block-size",
                                     "32", "--algo", "gptq", "--calibration", cdir_emb], {}),
        (cnn, "static", ["--mode", "static", "--target", "ort", "--format", "qdq",
                         "--method", "minmax",
                         "--calibration", cdir_cnn],
         {"ort": lambda s, d: ort_static(s, d, cnn_calib, work),
          "ort-rr": lambda s, d: ort_static(s, d, cnn_calib, work, reduce_range=True)}),
    ]
    for model, mode, gargs, peers in jobs:
        dst = os.path.join(work, f"{model.name}.{mode}.gwr.onnx")
        secs, err = gwr_quantize(gwr, model.path, dst, gargs)
        if err:
            gwr_soft(f"gwr quantize {model.name} {' '.join(gargs[:2])}: {err}")
        else:
            made[(model.name, mode, "gwr")] = dst
            problem = realbench.check_file(dst, target="ort")
            say(f"gwr quantize {model.name} {mode}: {secs:.1f} s"
                + (f"; {problem}" if problem else "; checker and onnxruntime load: ok"))
        for tool, peer in peers.items():
            dst = os.path.join(work, f"{model.name}.{mode}.{tool}.onnx")
            try:
                # onnxruntime's tools leave temporary files in the current
                # directory: run them in the work directory
                with chdir(work):
                    secs = peer(model.path, dst)
                made[(model.name, mode, tool)] = dst
                say(f"{TOOLS[tool]} quantize {model.name} {mode}: {secs:.1f} s")
            except Exception as e:  # noqa: BLE001 - the peer's failure is a result
                say(f"{TOOLS[tool]} quantize {model.name} {mode}: FAILED "
                    f"{first_line(e, 200)}")

    if "size" in want:
        res["size"] = size_figure(made, emb, cnn)
    if "accuracy" in want:
        res["accuracy"] = accuracy_figure(args, made, emb, cnn, emb_feeds, cnn_feeds, gwr, work)
    if "speed" in want:
        res["speed"] = speed_figure(args, made, emb, cnn, emb_feeds[0], cnn_feeds[0], gwr, work)
    if "precision" in want:
        res["precision"] = precision_figure(gwr)
    return res


def tools_of(made, model, mode):
    return [t for t in TOOLS if (model.name, mode, t) in made]


def size_figure(made, emb, cnn):
    say("\n## Size of the MatMul/Gemm/Conv weights (with their scales and zero points; "
        "the scales applied after MatMulInteger, N floats a layer, are left out)")
    say("| model | mode | quantizer | fp32 bytes | bytes | / fp32 | target |")
    say("| --- | --- | --- | ---: | ---: | ---: | --- |")
    rows = []
    targets = {"dynamic": 0.27, "static": 0.27, "weight-only-4": 0.16, "weight-only-4-gptq": 0.16}
    for model, modes in ((emb, ("dynamic", "weight-only-4", "weight-only-4-gptq")),
                         (cnn, ("static",))):
        base = weight_bytes(model.path)
        for mode in modes:
            for tool in tools_of(made, model, mode):
                q = weight_bytes(made[(model.name, mode, tool)])
                rows.append({"model": model.name, "mode": mode, "tool": tool, "fp32": base,
                             "bytes": q, "ratio": ratio(q, base), "target": targets[mode]})
                say(f"| {model.name} | {mode} | {TOOLS[tool]} | {base} | {q} | "
                    f"{fmt(ratio(q, base), '.3f')}x | <= {targets[mode]}x |")
    return rows


def accuracy_rows(args, made, model, modes, feeds, out, ref, figure, gwr, work):
    """Rows of one model: each quantized model in onnxruntime over every
    input, and on gwr's executor over the first --gwr-exec-inputs."""
    import numpy as np

    def score(got, n):
        if figure == "cosine":
            cs = cosines(ref[:n], got)
            return float(np.mean(cs)), float(np.min(cs))
        return agreement(ref[:n], got), None

    rows = []
    for mode in modes:
        for tool in tools_of(made, model, mode):
            path = made[(model.name, mode, tool)]
            row = {"model": model.name, "mode": mode, "tool": tool, "runtime": "onnxruntime",
                   "figure": figure, "inputs": len(feeds)}
            try:
                row["mean"], row["min"] = score(ort_outputs_all(path, feeds, out), len(feeds))
            except Exception as e:  # noqa: BLE001
                row["error"] = first_line(e, 200)
            rows.append(row)
            n = min(args.gwr_exec_inputs, len(feeds))
            if n <= 0:
                continue
            got, err = gwr_outputs_all(gwr, path, feeds[:n], out,
                                       os.path.join(work, f"exec-{model.name}-{mode}-{tool}"))
            if err:
                gwr_soft(f"gwr run {os.path.basename(path)}: {err}")
                continue
            m, lo = score(got, n)
            rows.append({"model": model.name, "mode": mode, "tool": tool, "runtime": "gwr",
                         "figure": figure, "inputs": n, "mean": m, "min": lo})
    return rows


def accuracy_figure(args, made, emb, cnn, emb_feeds, cnn_feeds, gwr, work):
    import numpy as np
    say(f"\n## Accuracy against fp32 (fp32 in onnxruntime; each quantized model run in "
        f"onnxruntime, one thread, on {args.inputs} inputs, and on gwr's executor on the first "
        f"{args.gwr_exec_inputs})")
    s = realbench.ort_session(emb.path, "all")
    out = embedding_output(s)
    ref = [s.run([out], f)[0] for f in emb_feeds]
    rows = accuracy_rows(args, made, emb, ("dynamic", "weight-only-4", "weight-only-4-gptq"),
                         emb_feeds, out, ref, "cosine", gwr, work)
    s = realbench.ort_session(cnn.path, "all")
    out = s.get_outputs()[0].name
    ref = [s.run([out], f)[0] for f in cnn_feeds]
    classes = np.bincount([int(np.argmax(r)) for r in ref])
    top2 = [np.sort(r.ravel())[-2:] for r in ref]
    margin = float(np.median([b - a for a, b in top2]))
    say(f"(fp32 {cnn.name}'s top-1 over the inputs, per class: {classes.tolist()}; median "
        f"margin between its two highest outputs {margin:.3f})")
    rows += accuracy_rows(args, made, cnn, ("static",), cnn_feeds, out, ref, "top-1", gwr, work)
    say("| model | mode | quantizer | runtime | inputs | figure | mean | min | target |")
    say("| --- | --- | --- | --- | ---: | --- | ---: | ---: | --- |")
    for r in rows:
        if "error" in r:
            say(f"| {r['model']} | {r['mode']} | {TOOLS[r['tool']]} | {r['runtime']} | "
                f"{r['inputs']} | FAILED: {r['error']} | | | |")
            continue
        target = ">= 0.99" if r["figure"] == "cosine" else ">= 0.98"
        say(f"| {r['model']} | {r['mode']} | {TOOLS[r['tool']]} | {r['runtime']} | "
            f"{r['inputs']} | {r['figure']} | {fmt(r['mean'])} | {fmt(r['min'])} | {target} |")
    return rows


def speed_figure(args, made, emb, cnn, emb_feed, cnn_feed, gwr, work):
    rows = []
    say(f"\n## Latency, one thread, best of {args.repeat} (ms; onnxruntime with all its "
        "optimizations, gwr run with its own)")
    say("| model | mode | quantizer | onnxruntime ms | gwr executor ms |")
    say("| --- | --- | --- | ---: | ---: |")
    for model, feed, modes in ((emb, emb_feed, ("dynamic", "weight-only-4")),
                               (cnn, cnn_feed, ("static",))):
        entries = [("fp32", "-", model.path)]
        for mode in modes:
            entries += [(mode, t, made[(model.name, mode, t)]) for t in tools_of(made, model, mode)]
        for mode, tool, path in entries:
            row = {"model": model.name, "mode": mode, "tool": tool, "ort_ms": None,
                   "gwr_ms": None}
            try:
                s = realbench.ort_session(path, "all", realbench.dim_overrides(path, feed))
                s.run(None, feed)
                row["ort_ms"] = realbench.ort_best(s, feed, args.repeat)
            except Exception as e:  # noqa: BLE001
                row["ort_error"] = first_line(e, 200)
            _, ms, err = gwr_run(gwr, path, feed,
                                 os.path.join(work, f"speed-{model.name}-{mode}-{tool}"),
                                 args.repeat)
            if err:
                gwr_soft(f"gwr run {os.path.basename(path)}: {err}")
            row["gwr_ms"] = ms
            rows.append(row)
            say(f"| {model.name} | {mode} | {TOOLS.get(tool, '-')} | {fmt(row['ort_ms'], '.2f')} | "
                f"{fmt(row['gwr_ms'], '.2f')} |")

    def get(model, mode, tool, key):
        for r in rows:
            if r["model"] == model and r["mode"] == mode and r["tool"] == tool:
                return r[key]
        return None

    say("")
    for model, mode in ((emb.name, "dynamic"), (emb.name, "weight-only-4"), (cnn.name, "static")):
        r = ratio(get(model, mode, "gwr", "ort_ms"), get(model, mode, "ort", "ort_ms"))
        say(f"onnxruntime on gwr's {mode} model / on onnxruntime's: {fmt(r, '.2f')}x "
            "(target <= 1.0x)")
    r1 = ratio(get(emb.name, "dynamic", "gwr", "gwr_ms"), get(emb.name, "fp32", "-", "gwr_ms"))
    r2 = ratio(get(emb.name, "dynamic", "gwr", "gwr_ms"), get(emb.name, "dynamic", "ort", "ort_ms"))
    say(f"gwr executor, int8 encoder / its fp32: {fmt(r1, '.2f')}x (target <= 0.6x); "
        f"/ onnxruntime int8 (its quantizer's model): {fmt(r2, '.2f')}x (target <= 1.0x)")
    return rows


def precision_figure(gwr):
    path = os.path.join(HERE, "precision.py")
    say("\n## Automatic mixed precision (bench/precision.py)")
    if not os.path.exists(path):
        say("bench/precision.py is not there: skipped")
        return None
    try:
        h = subprocess.run([sys.executable, path, "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60).stdout
        cmd = [sys.executable, path] + (["--gwr", gwr] if "--gwr" in h else [gwr])
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=3600)
    except (OSError, subprocess.TimeoutExpired) as e:
        say(f"bench/precision.py: {e}")
        return None
    say(r.stdout.rstrip())
    return {"exit": r.returncode, "output": r.stdout}


if __name__ == "__main__":
    sys.exit(main())
