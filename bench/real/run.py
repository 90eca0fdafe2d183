#!/usr/bin/env python3
"""gwr against its peers on the real models of bench/real/models.txt.

    .venv/bin/python bench/real/run.py [--only NAME,...] [--ci] [--repeat N]
                                       [--gwr build/gwr] [--json FILE] [--no-latency]

For every model in the cache (bench/real/fetch.py puts them there) one row:
the nodes of the original; of onnxruntime's basic and extended sessions
(optimized_model_filepath; extended may hold contrib ops); of onnxruntime's
transformers optimizer (transformer models only); of onnxsim, onnxslim and
onnxscript's optimizer (+ its default rewrite rules); of `gwr optimize
--target onnx` and `--target ort` (level extended). Nodes are counted over
the graph and every If/Loop/Scan body, Constant nodes included.

Then whether both gwr outputs pass onnx.checker.check_model(full_check=True)
and load in onnxruntime; whether a second `gwr optimize` of gwr's own output
leaves the node count unchanged; numerics of the written files (run in
onnxruntime) and of gwr's executor (`gwr run`) against onnxruntime on the
original with optimizations disabled, on the manifest's seeded inputs; and
latency, one thread: gwr's executor (`gwr run --threads 1 --repeat N`, which
optimizes privately first and times the runs only) against onnxruntime `all`
and onnxruntime with optimizations disabled (ORT_DISABLE_ALL), intra- and
inter-op threads 1, sessions made and warmed once. The three take turns for
--rounds rounds of --repeat runs, and each reports its best run: on a shared
machine load only adds time, and taking turns spreads it evenly.

A peer that fails or takes longer than --peer-timeout seconds is one cell
"err" (the JSON has its message), never the end of the run: the Python peers
run in child processes (`run.py --peer ...`).

Prints a Markdown table (for docs/benchmarks.md), the geometric means and the
figures of issue 22, and the gaps; --json FILE writes every number.
"""
import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import manifest  # noqa: E402

PEERS = ["ort-basic", "ort-extended", "ort-transformers", "onnxsim", "onnxslim", "onnxscript"]
TOL = {"default": (1e-4, 1e-3), "fp16": (1e-2, 1e-2)}  # (atol, rtol)


# ---------------------------------------------------------------- peers ---
def run_peer(peer, src, dst, model_type=None):
    """One peer, in this (child) process: optimize src into dst."""
    import onnx
    if peer in ("ort-basic", "ort-extended"):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
                                       if peer == "ort-basic"
                                       else ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
        so.optimized_model_filepath = dst
        so.intra_op_num_threads = 1
        ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    elif peer == "ort-transformers":
        import logging
        logging.disable(logging.WARNING)
        try:
            import torch  # noqa: F401
        except ImportError:
            # optimize_by_onnxruntime imports torch.version only to ask
            # torch_version.hip when use_gpu; the CPU path never reads it
            import types
            torch = types.ModuleType("torch")
            torch.version = types.SimpleNamespace(hip=None, cuda=None)
            sys.modules["torch"] = torch
        from onnxruntime.transformers.optimizer import optimize_model
        m = optimize_model(src, model_type=model_type)
        m.save_model_to_file(dst)
    elif peer == "onnxsim":
        import onnxsim
        m, _ = onnxsim.simplify(onnx.load(src), check_n=0, include_subgraph=True)
        onnx.save(m, dst)
    elif peer == "onnxslim":
        import onnxslim
        onnx.save(onnxslim.slim(onnx.load(src)), dst)
    elif peer == "onnxscript":
        import onnxscript.optimizer
        import onnxscript.rewriter
        m = onnxscript.optimizer.optimize(onnx.load(src))
        m = onnxscript.rewriter.rewrite(m)
        onnx.save(m, dst)
    else:
        raise ValueError(f"unknown peer {peer}")


def peer_child(peer, src, dst, model_type, timeout):
    """Runs one peer in a child process; returns None or an error line."""
    cmd = [sys.executable, os.path.abspath(__file__), "--peer", peer, src, dst]
    if model_type:
        cmd += ["--model-type", model_type]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timeout after {timeout} s"
    if r.returncode != 0 or not os.path.exists(dst):
        lines = [ln for ln in r.stdout.strip().splitlines() if ln.strip()]
        return (lines[-1] if lines else f"exit {r.returncode}")[:300]
    return None


# ---------------------------------------------------------------- onnx ---
def count_nodes(model_or_path):
    import onnx
    m = onnx.load(model_or_path) if isinstance(model_or_path, str) else model_or_path

    def walk(g):
        n = 0
        for node in g.node:
            n += 1
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    n += walk(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    n += sum(walk(s) for s in a.graphs)
        return n
    return walk(m.graph)


def check_file(path, load=True, target="onnx"):
    """None when path passes the checker (full) and (load) loads in
    onnxruntime, else the first problem in one line. A file of target ort or
    gwr is checked with onnxruntime's default-domain ops added to ONNX's
    registry (ort_schemas.py), as onnxruntime's own optimized files need."""
    import onnx
    from ort_schemas import ort_registry
    try:
        with (ort_registry() if target in ("ort", "gwr") else contextlib.nullcontext()):
            onnx.checker.check_model(onnx.load(path), full_check=True)
    except Exception as e:  # noqa: BLE001 - any checker complaint is the answer
        return "checker: " + str(e).strip().splitlines()[0][:200]
    if not load:
        return None
    try:
        ort_session(path, "disable")
    except Exception as e:  # noqa: BLE001
        return "onnxruntime: " + str(e).strip().splitlines()[0][:200]
    return None


def dim_overrides(path, feeds):
    """{dim_param: value} of the graph inputs' named dims in these feeds, so
    that onnxruntime plans for the same shapes as gwr's session (gwr run
    binds every dim of the inputs it runs; onnxruntime can be told only the
    named ones)."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    out, clash = {}, set()
    for vi in m.graph.input:
        if vi.name not in feeds or not vi.type.HasField("tensor_type"):
            continue
        shape = feeds[vi.name].shape
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_param") and d.dim_param and i < len(shape):
                if out.setdefault(d.dim_param, int(shape[i])) != int(shape[i]):
                    clash.add(d.dim_param)
    # A symbol the feeds give two values (ppocr-cls names its height and
    # width alike) is left to onnxruntime, which would refuse the override.
    return {k: v for k, v in out.items() if k not in clash}


def ort_session(path, level, dims=None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    for name, value in (dims or {}).items():
        so.add_free_dimension_override_by_name(name, value)
    so.graph_optimization_level = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_outputs(path, feeds, level="disable"):
    s = ort_session(path, level)
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, feeds)))


def compare(ref, got, atol, rtol):
    """(ok, worst) over the outputs of ref: worst is {output, max_abs,
    ratio} where ratio = max |a-b| / (atol + rtol |b|) (<= 1 passes), or a
    line saying what is missing or differs in shape or dtype."""
    import numpy as np
    worst = {"output": None, "max_abs": 0.0, "ratio": 0.0}
    for name, b in ref.items():
        if name not in got:
            return False, f"output {name} missing"
        a = got[name]
        if a.shape != b.shape:
            return False, f"{name}: shape {list(a.shape)}, expected {list(b.shape)}"
        if a.dtype != b.dtype:
            return False, f"{name}: dtype {a.dtype}, expected {b.dtype}"
        if a.size == 0:
            continue
        if not np.issubdtype(b.dtype, np.floating):
            bad = int(np.count_nonzero(a != b))
            if bad:
                return False, f"{name}: {bad} of {b.size} values differ"
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        same_nan = np.isnan(a64) & np.isnan(b64)
        if np.any(np.isnan(a64) != np.isnan(b64)):
            return False, f"{name}: NaN where the reference has none (or the reverse)"
        d = np.where(same_nan, 0.0, np.abs(a64 - b64))
        d = np.where(np.isinf(b64) & (a64 == b64), 0.0, d)
        ratio = float(np.max(d / (atol + rtol * np.abs(np.where(same_nan, 0, b64)))))
        if ratio > worst["ratio"] or worst["output"] is None:
            worst = {"output": name, "max_abs": float(np.max(d)), "ratio": ratio}
    return worst["ratio"] <= 1.0, worst


# ----------------------------------------------------------------- gwr ---
def gwr_optimize(gwr, src, dst, level, target, timeout):
    cmd = [gwr, "optimize", src, "-o", dst, "--level", level, "--target", target]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timeout after {timeout} s"
    if r.returncode != 0 or not os.path.exists(dst):
        lines = (r.stderr or r.stdout).strip().splitlines()
        return (lines[-1] if lines else f"exit {r.returncode}")[:300]
    return None


def gwr_run(gwr, src, feeds, workdir, repeat, timeout, optimize=True):
    """Runs src on gwr's executor with feeds (optimize=False: as written,
    --no-optimize): (outputs {name: ndarray}, best ms of the runs, error line)."""
    import onnx
    from onnx import numpy_helper
    os.makedirs(workdir, exist_ok=True)
    cmd = [gwr, "run", src, "--threads", "1", "--repeat", str(max(1, repeat)),
           "-o", os.path.join(workdir, "out")] + ([] if optimize else ["--no-optimize"])
    for i, (name, a) in enumerate(feeds.items()):
        p = os.path.join(workdir, f"in_{i}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(a, name).SerializeToString())
        cmd += ["--input", f"{name}={p}"]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"timeout after {timeout} s"
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        return None, None, (lines[-1] if lines else f"exit {r.returncode}")[:300]
    ms = None
    for line in r.stdout.splitlines():
        if line.startswith("run:"):
            # "run: best B ms, median M ms of N (...)" or "run: T ms (...)"
            words = line.split()
            ms = float(words[2] if words[1] == "best" else words[1])
    outs = {}
    d = os.path.join(workdir, "out")
    for fn in sorted(os.listdir(d)):
        if fn.startswith("output_"):
            t = onnx.load_tensor(os.path.join(d, fn))
            outs[t.name] = numpy_helper.to_array(t)
    return outs, ms, None


def ort_best(session, feeds, repeat):
    """The best of repeat runs of an onnxruntime session, in ms."""
    best = None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        session.run(None, feeds)
        ms = (time.perf_counter() - t0) * 1e3
        best = ms if best is None else min(best, ms)
    return best


# --------------------------------------------------------------- model ---
def tolerance(model):
    return TOL["fp16"] if "fp16" in model.flags else TOL["default"]


def measure(model, args, work):
    import onnx
    row = {"name": model.name, "family": model.family, "flags": sorted(model.flags),
           "nodes": {}, "errors": {}, "valid": {}, "second": {}, "numerics": {}, "ms": {}}
    src = model.path
    proto = onnx.load(src)
    row["nodes"]["original"] = count_nodes(proto)
    feeds = manifest.make_inputs(model, proto, seed=args.seed)
    atol, rtol = tolerance(model)
    try:
        ref = ort_outputs(src, feeds, "disable")
    except Exception as e:  # noqa: BLE001
        ref = None
        row["errors"]["reference"] = str(e).splitlines()[0][:300]

    for peer in [] if args.no_peers else PEERS:
        if peer == "ort-transformers" and not model.transformer_type:
            continue
        dst = os.path.join(work, f"{peer}.onnx")
        err = peer_child(peer, src, dst, model.transformer_type, args.peer_timeout)
        if err:
            row["errors"][peer] = err
        else:
            try:
                row["nodes"][peer] = count_nodes(dst)
            except Exception as e:  # noqa: BLE001
                row["errors"][peer] = "unreadable output: " + str(e)[:200]
                continue
            # A peer's count is a yardstick only if its model still computes
            # what the original does (onnxslim, for one, can trust a
            # declared output shape that the graph contradicts).
            if ref is not None:
                try:
                    ok, worst = compare(ref, ort_outputs(dst, feeds, "disable"), atol, rtol)
                except Exception as e:  # noqa: BLE001
                    ok, worst = False, "onnxruntime run: " + str(e).splitlines()[0][:200]
                if not ok:
                    row.setdefault("peer_wrong", {})[peer] = worst

    levels = ["basic", "extended", "all"] if args.all_levels else ["extended"]
    targets = ["onnx", "ort", "gwr"] if args.all_levels else ["onnx", "ort"]
    for level in levels:
        for target in targets:
            key = f"gwr-{target}" if level == "extended" else f"gwr-{target}-{level}"
            dst = os.path.join(work, key + ".onnx")
            err = gwr_optimize(args.gwr, src, dst, level, target, args.peer_timeout)
            if err:
                row["errors"][key] = err
                continue
            row["nodes"][key] = count_nodes(dst)
            # a second optimize of gwr's own output changes nothing
            dst2 = os.path.join(work, key + ".again.onnx")
            err = gwr_optimize(args.gwr, dst, dst2, level, target, args.peer_timeout)
            row["second"][key] = ("err: " + err) if err else count_nodes(dst2) - row["nodes"][key]
            if target == "gwr":
                continue  # gwr's own ops: onnxruntime need not load it
            problem = check_file(dst, target=target)
            row["valid"][key] = problem or "ok"
            if problem is None and ref is not None:
                try:
                    ok, worst = compare(ref, ort_outputs(dst, feeds, "disable"), atol, rtol)
                    row["numerics"][key] = worst if ok else {"fail": worst}
                except Exception as e:  # noqa: BLE001
                    row["numerics"][key] = {"fail": "onnxruntime run: " + str(e).splitlines()[0][:200]}

    # gwr's executor: numerics (the first round's outputs) and latency.
    # The machine may be shared: the runtimes take turns, --rounds rounds
    # of --repeat runs each, and each reports its best run over all rounds
    # (load only ever adds time).
    ort_sessions = {}
    if not args.no_latency:
        for level in ("all", "disable"):
            try:
                ort_sessions[level] = ort_session(src, level, dim_overrides(src, feeds))
                for _ in range(2):
                    ort_sessions[level].run(None, feeds)
            except Exception as e:  # noqa: BLE001
                row["errors"][f"ort-{level}-latency"] = str(e).splitlines()[0][:300]
    rounds = 1 if args.no_latency else args.rounds
    for rnd in range(rounds):
        outs, ms, err = gwr_run(args.gwr, src, feeds, os.path.join(work, "run"),
                                0 if args.no_latency else args.repeat, args.peer_timeout)
        if err:
            row["errors"]["gwr-run"] = err
            if rnd == 0:
                ms = None
        else:
            if rnd == 0 and ref is not None:
                ok, worst = compare(ref, outs, atol, rtol)
                row["numerics"]["gwr-run"] = worst if ok else {"fail": worst}
            if not args.no_latency and ms is not None:
                row["ms"]["gwr"] = min(ms, row["ms"].get("gwr", ms))
        for level, s in ort_sessions.items():
            best = ort_best(s, feeds, args.repeat)
            key = f"ort-{level}"
            row["ms"][key] = min(best, row["ms"].get(key, best))
    return row


# -------------------------------------------------------------- report ---
def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def cell(row, key):
    if key in row["nodes"]:
        return str(row["nodes"][key]) + (" (wrong)" if key in row.get("peer_wrong", {}) else "")
    if key in row["errors"]:
        return "err"
    return "-"


def num_cell(row, key):
    v = row["numerics"].get(key)
    if v is None:
        return "err" if key in row["errors"] or key == "gwr-run" else "-"
    if "fail" in v:
        f = v["fail"]
        return "FAIL " + (f"{f['max_abs']:.2g}" if isinstance(f, dict) else "(shape)")
    return f"{v['max_abs']:.1g}" if v["max_abs"] else "0"


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def markdown(rows):
    out = []
    hdr = ["model", "family", "orig", "ort basic", "ort ext", "ort tf", "onnxsim", "onnxslim",
           "onnxscript", "gwr onnx", "gwr ort", "valid", "2nd opt", "num file", "num exec",
           "gwr ms", "ort all ms", "ort off ms", "gwr/all", "gwr/off"]
    out.append("| " + " | ".join(hdr) + " |")
    out.append("|" + "|".join(["---"] * 2 + ["---:"] * 9 + ["---"] * 4 + ["---:"] * 5) + "|")
    for r in rows:
        valid = [k for k in ("gwr-onnx", "gwr-ort") if r["valid"].get(k, "err") != "ok"]
        second = [k for k, v in r["second"].items() if v != 0]
        nf = [num_cell(r, k) for k in ("gwr-onnx", "gwr-ort")]
        numf = nf[0] if nf[0] == nf[1] else f"{nf[0]} / {nf[1]}"
        g, a, d = r["ms"].get("gwr"), r["ms"].get("ort-all"), r["ms"].get("ort-disable")
        out.append("| " + " | ".join([
            r["name"], r["family"], str(r["nodes"]["original"]),
            cell(r, "ort-basic"), cell(r, "ort-extended"), cell(r, "ort-transformers"),
            cell(r, "onnxsim"), cell(r, "onnxslim"), cell(r, "onnxscript"),
            cell(r, "gwr-onnx"), cell(r, "gwr-ort"),
            "ok" if not valid else "FAIL " + ",".join(v.replace("gwr-", "") for v in valid),
            "ok" if not second else "CHANGES " + ",".join(
                f"{k.replace('gwr-', '')} {r['second'][k]}" for k in second),
            numf, num_cell(r, "gwr-run"),
            fmt(g, ".3f"), fmt(a, ".3f"), fmt(d, ".3f"),
            fmt(ratio(g, a)), fmt(ratio(g, d))]) + " |")
    return "\n".join(out)


def figures(rows):
    """The figures of issue 22 and the gaps, as Markdown lines."""
    lines = []
    n_ort = [ratio(r["nodes"].get("gwr-ort"), r["nodes"].get("ort-extended")) for r in rows]
    lat = [ratio(r["ms"].get("gwr"), r["ms"].get("ort-all")) for r in rows]
    lat_cnn = [ratio(r["ms"].get("gwr"), r["ms"].get("ort-all")) for r in rows if "cnn" in r["flags"]]
    files = [(r["name"], k, v) for r in rows for k, v in r["valid"].items()]
    ok_files = sum(1 for _, _, v in files if v == "ok")
    gm = geomean(n_ort)
    lines.append(f"- Files valid (checker full + onnxruntime loads): {ok_files} of {len(files)}"
                 f" (figure: 100%)")
    lines.append(f"- Nodes `--target ort` / onnxruntime extended, geometric mean: {fmt(gm, '.3f')}x"
                 f" over {len([x for x in n_ort if x])} models (figure: <= 0.85x, and <= 1 on every model)")
    gl, glc = geomean(lat), geomean(lat_cnn)
    worst_cnn = max([x for x in lat_cnn if x], default=None)
    lines.append(f"- Executor / onnxruntime `all`, one thread, geometric mean: {fmt(gl, '.3f')}x over "
                 f"{len([x for x in lat if x])} models; CNNs: {fmt(glc, '.3f')}x, worst "
                 f"{fmt(worst_cnn, '.2f')}x (figures: <= 1.0x, worst CNN <= 1.3x)")
    gaps = []
    for r in rows:
        n = r["nodes"]
        wrong = r.get("peer_wrong", {})
        if "gwr-ort" in n and "ort-extended" in n and "ort-extended" not in wrong and n["gwr-ort"] > n["ort-extended"]:
            gaps.append(f"{r['name']}: --target ort {n['gwr-ort']} nodes > onnxruntime extended {n['ort-extended']}")
        if "gwr-ort" in n and "ort-transformers" in n and "ort-transformers" not in wrong and n["gwr-ort"] > n["ort-transformers"]:
            gaps.append(f"{r['name']}: --target ort {n['gwr-ort']} nodes > transformers optimizer {n['ort-transformers']}")
        for peer, w in wrong.items():
            gaps.append(f"{r['name']}: (not a gap) {peer}'s output differs from the original's, so its "
                        f"{n.get(peer)} nodes are no yardstick: " + (
                            f"output {w['output']} max abs {w['max_abs']:.3g}" if isinstance(w, dict) else str(w)))
        for peer in ("onnxsim", "onnxslim"):
            if "gwr-onnx" in n and peer in n and peer not in wrong and n["gwr-onnx"] > n[peer]:
                gaps.append(f"{r['name']}: --target onnx {n['gwr-onnx']} nodes > {peer} {n[peer]}")
        g, a, d = r["ms"].get("gwr"), r["ms"].get("ort-all"), r["ms"].get("ort-disable")
        if g and a and g / a > 1.0:
            gaps.append(f"{r['name']}: executor {g / a:.2f}x onnxruntime all"
                        + (" (> 1.3x)" if g / a > 1.3 else ""))
        if g and d and g > d:
            gaps.append(f"{r['name']}: executor slower than onnxruntime with optimizations disabled ({g / d:.2f}x)")
        for k, v in r["valid"].items():
            if v != "ok":
                gaps.append(f"{r['name']}: {k} output invalid: {v}")
        for k, v in r["second"].items():
            if v != 0:
                gaps.append(f"{r['name']}: a second optimize ({k}) changes the node count by {v}")
        for k, v in r["numerics"].items():
            if "fail" in v:
                f = v["fail"]
                gaps.append(f"{r['name']}: numerics {k}: " + (
                    f"output {f['output']} max abs {f['max_abs']:.3g} ({f['ratio']:.3g}x the tolerance)"
                    if isinstance(f, dict) else f))
        for k, v in r["errors"].items():
            if k.startswith("gwr") or k == "reference":
                gaps.append(f"{r['name']}: {k} failed: {v}")
    return lines, gaps


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--ci", action="store_true", help="only make test's subset")
    ap.add_argument("--gwr", default=os.path.join(ROOT, "build", "gwr"))
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per round, model and runtime")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds in which gwr and onnxruntime take turns")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peer-timeout", type=int, default=300)
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--no-peers", action="store_true", help="gwr only (the peers' cells: -)")
    ap.add_argument("--all-levels", action="store_true",
                    help="every gwr level (basic, extended, all) and target (onnx, ort, gwr)")
    ap.add_argument("--json", help="write every number to this file")
    ap.add_argument("--keep", help="keep the optimized files in this directory")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--model-type", help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peer:
        run_peer(args.peer, args.files[0], args.files[1], args.model_type)
        return 0

    import onnxruntime
    models = manifest.load()
    if args.ci:
        models = [m for m in models if "ci" in m.flags]
    if args.only:
        want = args.only.split(",")
        models = [m for m in models if m.name in want]
    missing = [m.name for m in models if not os.path.exists(m.path)]
    models = [m for m in models if os.path.exists(m.path)]
    if missing:
        print(f"run: not in the cache (bench/real/fetch.py): {', '.join(missing)}", file=sys.stderr)
    if not models:
        print("run: no model in the cache", file=sys.stderr)
        return 1
    if not os.access(args.gwr, os.X_OK):
        print(f"run: {args.gwr}: not an executable (build gwr first)", file=sys.stderr)
        return 1

    rows = []
    tmp = args.keep or tempfile.mkdtemp(prefix="gwr-real-")
    try:
        for m in models:
            work = os.path.join(tmp, m.name)
            os.makedirs(work, exist_ok=True)
            t0 = time.time()
            try:
                row = measure(m, args, work)
            except Exception as e:  # noqa: BLE001 - one model's failure is one row
                row = {"name": m.name, "family": m.family, "flags": sorted(m.flags),
                       "nodes": {"original": 0}, "errors": {"measure": str(e)[:300]},
                       "valid": {}, "second": {}, "numerics": {}, "ms": {}}
            row["seconds"] = round(time.time() - t0, 1)
            rows.append(row)
            print(f"run: {m.name} done in {row['seconds']} s", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    gwr_version = subprocess.run([args.gwr, "--version"], stdout=subprocess.PIPE,
                                 text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    how = (f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}; "
           f"{gwr_version} at {commit}, onnxruntime {onnxruntime.__version__}; "
           f"one thread (gwr run --threads 1; onnxruntime intra/inter-op 1, sequential), "
           f"latency the best of {args.rounds} rounds x {args.repeat} runs, the runtimes taking turns "
           f"(load average {os.getloadavg()[0]:.1f} at the end); "
           f"inputs: the manifest's shapes, seed {args.seed}.")
    print(how)
    print()
    print(markdown(rows))
    print()
    lines, gaps = figures(rows)
    print("\n".join(lines))
    print()
    print("Gaps:" if gaps else "Gaps: none")
    for g in gaps:
        print(f"- {g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"how": how, "rows": rows, "figures": lines, "gaps": gaps}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
