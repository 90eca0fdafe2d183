#!/usr/bin/env python3
"""int8 transformer encoders on gwr's executor: latency against gwr's own
fp32 run of the same encoder and against onnxruntime's int8 run, one thread.

Usage (from the repository root, with the venv that has onnx and onnxruntime):
    .venv/bin/python bench/int8_encoder.py [--gwr build/gwr] [--repeat 20]
        [--models DIR] [--work DIR]

The encoders (bench/real/models.txt, cached by the real-model bench):
  t5-encoder-int8  dynamically quantized by its publisher (DynamicQuantizeLinear
                   + MatMulInteger + Cast + Mul, onnxruntime's quantize_dynamic
                   form), input_ids=1,64 attention_mask=1,64.
  minilm-int8      int8 WEIGHT-ONLY as published (int8 initializer -> Cast ->
                   Mul(scale) -> float MatMul: no integer arithmetic), so its
                   int8 row here is onnxruntime.quantization.quantize_dynamic
                   (QOperator, int8 weights) of the fp32 model below;
                   input_ids=1,128 attention_mask=1,128 token_type_ids=1,128.
fp32 versions, made here with onnx:
  t5: each DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(scales) group
      becomes MatMul(x, (W - W_zp) * W_scale) with the dequantized weight as a
      float32 initializer (the dead DynamicQuantizeLinear / scale Mul removed).
  minilm: each int8 initializer -> Cast -> Mul(constant scale) becomes the
      float32 initializer it computes.
Timing: gwr `run --threads 1 --repeat N` (best and median of N runs after its
own planning; session optimization on, the default; OPENBLAS_NUM_THREADS=1); onnxruntime 1.31
InferenceSession(intra_op_num_threads=1, inter_op_num_threads=1, all graph
optimizations), one warm-up run then N runs, best and median. Both get the same
inputs (seeded input_ids in the vocabulary, masks of ones), written as
TensorProto files for gwr. Besides wall time, CPU time per run (user +
system: gwr's from getrusage of `--repeat N` minus `--repeat 1` over N - 1,
onnxruntime's process time over its N runs), which a machine shared with
other work inflates much less than wall time. Best-of-N wall time is the
figure to compare on a quiet machine; the medians show the noise.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = "/work/wt/real/bench/real/cache/models"

ENCODERS = {
    "t5-encoder-int8": {"input_ids": ((1, 64), 32128), "attention_mask": ((1, 64), None)},
    "minilm-int8": {"input_ids": ((1, 128), 30522), "attention_mask": ((1, 128), None), "token_type_ids": ((1, 128), 0)},
}


def dce(g):
    """Remove nodes whose outputs nobody reads (graph outputs kept), and unused initializers."""
    while True:
        used = {o.name for o in g.output}
        for n in g.node:
            used.update(n.input)
        keep = [n for n in g.node if any(o in used for o in n.output)]
        if len(keep) == len(g.node):
            break
        del g.node[:]
        g.node.extend(keep)
    used = {o.name for o in g.output}
    for n in g.node:
        used.update(n.input)
    inits = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(inits)


def t5_to_fp32(m):
    """DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul groups into float MatMuls."""
    g = m.graph
    init = {i.name: i for i in g.initializer}
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    prod = {o: n for n in g.node for o in n.output}
    cons = {}
    for n in g.node:
        for i in n.input:
            cons.setdefault(i, []).append(n)

    def const(name):
        if name in init:
            return numpy_helper.to_array(init[name])
        if name in consts:
            return numpy_helper.to_array(consts[name].attribute[0].t)
        return None

    new_nodes, drop, added = [], set(), []
    for n in g.node:
        if n.op_type != "MatMulInteger":
            continue
        dql = prod[n.input[0]]
        assert dql.op_type == "DynamicQuantizeLinear"
        w = const(n.input[1]).astype(np.float32)
        wzp = const(n.input[3]).astype(np.float32) if len(n.input) > 3 and n.input[3] else 0.0
        cast = cons[n.output[0]][0]
        mul = cons[cast.output[0]][0]
        assert cast.op_type == "Cast" and mul.op_type == "Mul"
        sname = [i for i in mul.input if i != cast.output[0]][0]
        smul = prod[sname]  # Mul(x_scale, w_scale)
        wscale = [const(i) for i in smul.input if const(i) is not None][0].astype(np.float32)
        wf = ((w - wzp) * wscale).astype(np.float32)
        wname = n.input[1] + "_fp32"
        added.append(numpy_helper.from_array(wf, wname))
        new_nodes.append((mul, helper.make_node("MatMul", [dql.input[0], wname], [mul.output[0]], name=n.name + "_fp32")))
        drop.update([id(n), id(cast), id(mul)])
    repl = {id(a): b for a, b in new_nodes}
    nodes = []
    for n in g.node:
        if id(n) in repl:
            nodes.append(repl[id(n)])
        elif id(n) not in drop:
            nodes.append(n)
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(added)
    dce(g)
    return len(new_nodes)


def minilm_to_fp32(m):
    """int8 initializer -> Cast -> Mul(const scale) into the float32 initializer."""
    g = m.graph
    init = {i.name: i for i in g.initializer}
    cons = {}
    for n in g.node:
        for i in n.input:
            cons.setdefault(i, []).append(n)
    drop, added, k = set(), [], 0
    for n in g.node:
        if n.op_type != "Cast" or n.input[0] not in init or init[n.input[0]].data_type not in (2, 3):
            continue
        uses = cons.get(n.output[0], [])
        if len(uses) != 1 or uses[0].op_type != "Mul":
            continue
        mul = uses[0]
        other = [i for i in mul.input if i != n.output[0]][0]
        if other not in init:
            continue
        wf = (numpy_helper.to_array(init[n.input[0]]).astype(np.float32) * numpy_helper.to_array(init[other]).astype(np.float32)).astype(np.float32)
        added.append(numpy_helper.from_array(wf, mul.output[0]))
        drop.update([id(n), id(mul)])
        k += 1
    nodes = [n for n in g.node if id(n) not in drop]
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(added)
    dce(g)
    return k


def inputs_for(spec, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (shape, hi) in spec.items():
        if hi is None:
            feeds[name] = np.ones(shape, np.int64)
        elif hi == 0:
            feeds[name] = np.zeros(shape, np.int64)
        else:
            feeds[name] = rng.integers(0, hi, size=shape, dtype=np.int64)
    return feeds


def cpu_of(args):
    """Run args; its stdout and the user + system CPU seconds it took."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = p.communicate()
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return p.returncode, out, err, ru.ru_utime + ru.ru_stime


def gwr_time(gwr, model, feeds, work, repeat):
    """Best and median wall ms of gwr run --repeat N; CPU ms per run: (CPU
    of --repeat N) - (CPU of --repeat 1), over N - 1 (the planning cancels)."""
    args = [gwr, "run", model, "--threads", "1"]
    for name, v in feeds.items():
        f = os.path.join(work, name + ".pb")
        with open(f, "wb") as fh:
            fh.write(numpy_helper.from_array(v, name).SerializeToString())
        args += ["--input", f"{name}={f}"]
    cpu = []
    for n in (1, repeat):
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        rc, out, err, _ = cpu_of(args + ["--repeat", str(n)])
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if rc != 0:
            raise SystemExit(f"gwr run {model} failed: {err.strip()}")
        cpu.append((c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime))
    r = re.search(r"best ([0-9.]+) ms, median ([0-9.]+) ms", out)
    return float(r.group(1)), float(r.group(2)), (cpu[1] - cpu[0]) / (repeat - 1) * 1e3, " ".join(args + ["--repeat", str(repeat)])


def ort_time(model, feeds, repeat):
    """Best and median wall ms, and CPU ms per run (process time)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = {i.name for i in s.get_inputs()}
    f = {k: v for k, v in feeds.items() if k in names}
    s.run(None, f)
    ts = []
    c0 = time.process_time()
    for _ in range(repeat):
        t0 = time.perf_counter()
        s.run(None, f)
        ts.append((time.perf_counter() - t0) * 1e3)
    cpu = (time.process_time() - c0) / repeat * 1e3
    ts.sort()
    return ts[0], ts[len(ts) // 2], cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gwr", default=os.path.join(ROOT, "build", "gwr"))
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--work", default="/tmp/gwr_int8_encoder")
    ap.add_argument("--only", default=None, help="one encoder name")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    import onnxruntime as ort

    print(f"# int8 encoders, 1 thread, {a.repeat} runs; wall ms best / median, and CPU ms per run; onnxruntime {ort.__version__}")
    print("| encoder | gwr int8 | gwr fp32 | ort int8 | ort fp32 | gwr int8 / gwr fp32 (best; CPU) | gwr int8 / ort int8 (best; CPU) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    cmds = []
    for name, spec in ENCODERS.items():
        if a.only and name != a.only:
            continue
        src = os.path.join(a.models, name + ".onnx")
        fp32 = os.path.join(a.work, name + "-fp32.onnx")
        q8 = os.path.join(a.work, name + "-dyn.onnx") if name == "minilm-int8" else src
        if not os.path.exists(fp32):
            m = onnx.load(src)
            k = t5_to_fp32(m) if name == "t5-encoder-int8" else minilm_to_fp32(m)
            onnx.save(m, fp32)
            print(f"# {name}: fp32 version with {k} weights dequantized -> {fp32}")
        if q8 != src and not os.path.exists(q8):
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(fp32, q8, weight_type=QuantType.QInt8)
            print(f"# {name}: int8 by onnxruntime.quantization.quantize_dynamic(QInt8) -> {q8}")
        feeds = inputs_for(spec)
        gi, gim, gic, ci = gwr_time(a.gwr, q8, feeds, a.work, a.repeat)
        gf, gfm, gfc, cf = gwr_time(a.gwr, fp32, feeds, a.work, a.repeat)
        oi, oim, oic = ort_time(q8, feeds, a.repeat)
        of, ofm, ofc = ort_time(fp32, feeds, a.repeat)
        cell = lambda b, m, c: f"{b:.2f} / {m:.2f}; {c:.2f}"
        print(f"| {name} | {cell(gi, gim, gic)} | {cell(gf, gfm, gfc)} | {cell(oi, oim, oic)} | {cell(of, ofm, ofc)} "
              f"| {gi / gf:.2f}; {gic / gfc:.2f} | {gi / oi:.2f}; {gic / oic:.2f} |")
        cmds += [ci, cf]
    print("# gwr commands:")
    for c in cmds:
        print("#   " + c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
