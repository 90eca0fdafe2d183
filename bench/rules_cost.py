#!/usr/bin/env python3
"""rules_cost.py: issue 23's first figure, the matching cost of a rule set against today's
hand-written passes, per visited layer, and `gwr optimize` against onnxruntime's extended
session creation, measured in one run.

  bench/rules_cost.py [--gwr build/gwr] [--baseline-gwr PATH | --baseline-rev REV] [--passes P,...]
                      [--rules FILE] [--repeat N] [--cache DIR] [--skip-million] [--skip-ort]

Models (generated once by build/bench/bench_onnx, cached in --cache, default bench/cache/):
  decoder  `bench_onnx gen-gpt 1000 32 FILE --static`: the 1,000-block decoder of issue 4 and
           issue 13 (45,011 layers, 51 MiB; the issue's "48k-layer decoder");
  million  `bench_onnx gen-gpt 22222 8 FILE --static`: the same decoder at 22,222 blocks,
           hidden 8, 1,000,001 layers (~140 MiB), the 10^6-layer network as an ONNX file.
           (bench_rewrite's own million-layer network lives only in memory, with the
           GPTAttention plugin and the seed patterns; a rule set cannot be given to it.)

Parts:
 1. Matching cost. `BASELINE rewrite MODEL --pattern P ... --stats` (hand-written passes,
    default the passes below) and, when the binary has the flag, `GWR rewrite MODEL --rules
    FILE --stats` (the same work as rules). From the statistics gwr prints (the "N layers
    visited, R rewrites, ..., T ms" line and the per-pattern time column) it reports, best of
    --repeat by the run's loop time: layers visited, matches, rewrites, the loop's ns per
    visited layer, the patterns' own ns per visited layer (their summed `time ms`), and the
    ratio rules / hand-written (the target: <= 1.3x). --baseline-gwr is the binary of today's
    hand-written passes (default: --gwr): once passes are migrated, give the gwr of a build of
    480c578 (or main before the merge) here, or --baseline-rev REV to have the script extract REV
    (git archive) into the cache and build its gwr there (RelWithDebInfo, ccache when present).
 2. `GWR optimize DECODER -o OUT` (whole process, level extended, target onnx; with --rules
    FILE too when `gwr optimize` has the flag) against onnxruntime's session creation with
    ORT_ENABLE_EXTENDED on the same file, one intra-op thread, from .venv/bin/python (the
    target: onnxruntime / gwr >= 50x).
Says on stdout whether each binary supports --rules. Not part of the tests.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# The passes the issue migrates that find work or are tried on the decoder: eliminations,
# activation and normalization fusions, the MatMul + Add fusion.
DEFAULT_PASSES = ("eliminate_identity,eliminate_noop_arith,compose_transposes,fuse_hard_swish,fuse_gelu,"
                  "fuse_clip_chains,fuse_layer_norm,fuse_matmul_add,fuse_silu,fuse_bias_gelu")
MODELS = {"decoder": (1000, 32), "million": (22222, 8)}
STATS_RE = re.compile(r"^(\d+) layers visited, (\d+) rewrites, (\d+) -> (\d+) live layers.*?, ([0-9.]+) ms\s*$", re.M)
PAT_RE = re.compile(r"^(\S+)\s+(-?\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([0-9.]+)\s*$", re.M)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def ensure_models(build, cache, names):
    os.makedirs(cache, exist_ok=True)
    gen = os.path.join(build, "bench", "bench_onnx")
    paths = {}
    for name in names:
        blocks, hidden = MODELS[name]
        path = os.path.join(cache, f"gpt_{blocks}x{hidden}_static.onnx")
        if not os.path.exists(path):
            if not os.path.exists(gen):
                r = run(["cmake", "--build", build, "--target", "bench_onnx", "-j2"])
                if r.returncode:
                    sys.exit(f"rules_cost.py: cannot build bench_onnx:\n{r.stdout}{r.stderr}")
            tmp = path + f".tmp.{os.getpid()}.onnx"
            r = run([gen, "gen-gpt", str(blocks), str(hidden), tmp, "--static"])
            if r.returncode:
                sys.exit(f"rules_cost.py: bench_onnx gen-gpt failed: {r.stderr.strip()}")
            os.replace(tmp, path)
        paths[name] = path
    return paths


def build_baseline(rev, cache):
    """The gwr of revision rev, extracted with git archive into cache/base-<sha> and built there."""
    r = run(["git", "-C", ROOT, "rev-parse", "--short=12", rev + "^{commit}"])
    if r.returncode:
        sys.exit(f"rules_cost.py: --baseline-rev {rev}: not a commit of this repository")
    src = os.path.join(cache, "base-" + r.stdout.strip())
    gwr = os.path.join(src, "build", "gwr")
    if os.access(gwr, os.X_OK):
        return gwr
    os.makedirs(src, exist_ok=True)
    arch = subprocess.Popen(["git", "-C", ROOT, "archive", r.stdout.strip()], stdout=subprocess.PIPE)
    tar = subprocess.run(["tar", "-x", "-C", src], stdin=arch.stdout)
    if arch.wait() or tar.returncode:
        sys.exit(f"rules_cost.py: cannot extract {rev} into {src}")
    env = dict(os.environ)
    if run(["sh", "-c", "command -v ccache"]).returncode == 0:
        env.setdefault("CMAKE_C_COMPILER_LAUNCHER", "ccache")
    b = os.path.join(src, "build")
    for cmd in (["cmake", "-S", src, "-B", b, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                ["cmake", "--build", b, "--target", "gwr", "-j2"]):
        r = run(cmd, env=env)
        if r.returncode:
            sys.exit(f"rules_cost.py: building {rev} failed:\n{(r.stdout + r.stderr)[-2000:]}")
    return gwr


def supports_rules(gwr, cmd):
    r = run([gwr, cmd, "--help"])
    return "--rules" in (r.stdout + r.stderr)


def rewrite_stats(gwr, model, how, out, repeat):
    """Best-of-repeat (by loop ms) statistics of one `gwr rewrite` run; None and the message on failure."""
    best = None
    for _ in range(repeat):
        r = run([gwr, "rewrite", model, *how, "--stats", "-o", out])
        if r.returncode:
            return None, (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:]
        m = STATS_RE.search(r.stdout)
        if not m:
            return None, [f"no statistics line in: {r.stdout[-300:]!r}"]
        pats = PAT_RE.findall(r.stdout)
        s = {"visited": int(m.group(1)), "rewrites": int(m.group(2)), "before": int(m.group(3)),
             "after": int(m.group(4)), "loop_ms": float(m.group(5)),
             "attempts": sum(int(p[2]) for p in pats), "matches": sum(int(p[3]) for p in pats),
             "pattern_ms": sum(float(p[5]) for p in pats), "npatterns": len(pats)}
        if best is None or s["loop_ms"] < best["loop_ms"]:
            best = s
    return best, None


def best_wall(cmd, repeat):
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = run(cmd)
        dt = time.perf_counter() - t0
        if r.returncode:
            return None, (r.stderr.strip() or r.stdout.strip())[-300:]
        best = dt if best is None else min(best, dt)
    return best, None


ORT_SNIPPET = r"""
import sys, time
import onnxruntime as ort
path, rep = sys.argv[1], int(sys.argv[2])
best = None
for _ in range(rep):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    t0 = time.perf_counter()
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    dt = time.perf_counter() - t0
    del s
    best = dt if best is None else min(best, dt)
print(ort.__version__, best)
"""


def ns(ms, n):
    return ms * 1e6 / n if n else float("nan")


def main():
    ap = argparse.ArgumentParser(description="issue 23: rule-set matching cost and gwr optimize vs onnxruntime")
    ap.add_argument("--gwr", default=os.path.join(ROOT, "build", "gwr"), help="gwr binary with the rules (default build/gwr)")
    ap.add_argument("--baseline-gwr", help="gwr binary of today's hand-written passes (default: --gwr)")
    ap.add_argument("--baseline-rev", help="build the baseline gwr from this revision (e.g. 480c578) in --cache")
    ap.add_argument("--passes", default=DEFAULT_PASSES, help="hand-written passes to time (comma-separated)")
    ap.add_argument("--rules", help="rules file to time against them (default: src/passes/rules/*.rules, joined)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing, best reported (default 3)")
    ap.add_argument("--cache", default=os.path.join(ROOT, "bench", "cache"), help="where the models are kept")
    ap.add_argument("--skip-million", action="store_true", help="only the 1,000-block decoder")
    ap.add_argument("--skip-ort", action="store_true", help="no onnxruntime timing")
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"), help="python with onnxruntime")
    a = ap.parse_args()
    gwr = os.path.abspath(a.gwr)
    if a.baseline_gwr and a.baseline_rev:
        sys.exit("rules_cost.py: give --baseline-gwr or --baseline-rev, not both")
    base = os.path.abspath(build_baseline(a.baseline_rev, a.cache) if a.baseline_rev else (a.baseline_gwr or a.gwr))
    for b in {gwr, base}:
        if not os.access(b, os.X_OK):
            sys.exit(f"rules_cost.py: {b}: no such executable (build it: cmake --build build --target gwr)")
    build = os.path.dirname(gwr) if os.path.basename(os.path.dirname(gwr)) != "bench" else os.path.dirname(os.path.dirname(gwr))
    names = ["decoder"] + ([] if a.skip_million else ["million"])
    models = ensure_models(build if os.path.isdir(os.path.join(build, "CMakeFiles")) else os.path.join(ROOT, "build"),
                           a.cache, names)
    rules = a.rules
    tmpdir = tempfile.mkdtemp(prefix="rules_cost.")
    if not rules:
        rdir = os.path.join(ROOT, "src", "passes", "rules")
        files = sorted(f for f in os.listdir(rdir) if f.endswith(".rules")) if os.path.isdir(rdir) else []
        if files:
            rules = os.path.join(tmpdir, "builtin.rules")
            with open(rules, "w") as out:
                for f in files:
                    with open(os.path.join(rdir, f)) as src:
                        out.write(src.read().rstrip("\n") + "\n\n")
    rw_rules, opt_rules = supports_rules(gwr, "rewrite"), supports_rules(gwr, "optimize")
    head = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()
    print("# issue 23: rule-set matching cost, gwr optimize vs onnxruntime")
    print()
    print(f"- command: `bench/rules_cost.py {' '.join(sys.argv[1:])}`".rstrip() + f"; commit {head}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    print(f"- machine: {os.cpu_count()} cores, load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(f"- gwr: {gwr}; baseline (hand-written passes): {base}")
    print(f"- `gwr rewrite --rules`: {'supported' if rw_rules else 'NOT supported by this binary'}; "
          f"`gwr optimize --rules`: {'supported' if opt_rules else 'NOT supported by this binary'}")
    print(f"- rules file: {rules or 'none (no --rules and no src/passes/rules/*.rules)'}")
    print(f"- hand-written passes: {a.passes}")
    print(f"- times: best of {a.repeat}; per visited layer = the rewrite loop's ms (gwr's statistics line) / layers visited")
    print()
    print("## 1. Matching cost per visited layer")
    print()
    print("| model | side | layers | visited | attempts | matches | rewrites | loop ms | loop ns/visited | patterns ns/visited |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    out = os.path.join(tmpdir, "out.onnx")
    ratios = []
    for name in names:
        m = models[name]
        hand_args = [x for p in a.passes.split(",") if p for x in ("--pattern", p)]
        sides = [("hand-written", base, hand_args)]
        if rules and rw_rules:
            sides.append(("rules", gwr, ["--rules", rules]))
        got = {}
        for side, binary, how in sides:
            s, err = rewrite_stats(binary, m, how, out, a.repeat)
            if s is None:
                print(f"| {name} | {side} | failed: {' '.join(err)} | | | | | | | |")
                continue
            got[side] = s
            print(f"| {name} | {side} | {s['before']} -> {s['after']} | {s['visited']} | {s['attempts']} | {s['matches']} | "
                  f"{s['rewrites']} | {s['loop_ms']:.1f} | {ns(s['loop_ms'], s['visited']):.0f} | "
                  f"{ns(s['pattern_ms'], s['visited']):.0f} |")
        if "hand-written" in got and "rules" in got:
            h, r = got["hand-written"], got["rules"]
            ratios.append((name, ns(r["loop_ms"], r["visited"]) / ns(h["loop_ms"], h["visited"]),
                           ns(r["pattern_ms"], r["visited"]) / max(ns(h["pattern_ms"], h["visited"]), 1e-9)))
    print()
    if ratios:
        for name, lr, pr in ratios:
            print(f"- {name}: rules / hand-written, loop per visited layer **{lr:.2f}x**, patterns' own time {pr:.2f}x "
                  f"(target <= 1.3x): {'PASS' if lr <= 1.3 else 'FAIL'}")
    elif not rules:
        print("- no rules file: only the hand-written side was measured")
    elif not rw_rules:
        print("- this gwr has no `rewrite --rules`: only the hand-written side was measured")
    print()
    print("## 2. `gwr optimize` of the 1,000-block decoder vs onnxruntime's extended session creation")
    print()
    dec = models["decoder"]
    t_opt, err = best_wall([base, "optimize", dec, "-o", out], a.repeat)
    rows = [("gwr optimize (hand-written passes, baseline binary)", t_opt, err)]
    if gwr != base:
        rows.append(("gwr optimize (gwr binary)", *best_wall([gwr, "optimize", dec, "-o", out], a.repeat)))
    if rules and opt_rules:
        rows.append(("gwr optimize --rules FILE", *best_wall([gwr, "optimize", dec, "--rules", rules, "-o", out], a.repeat)))
    t_ort, ort_ver = None, None
    if not a.skip_ort:
        r = run([a.python, "-c", ORT_SNIPPET, dec, str(a.repeat)])
        if r.returncode:
            print(f"onnxruntime failed: {(r.stderr.strip() or r.stdout.strip())[-300:]}")
        else:
            ort_ver, t = r.stdout.split()
            t_ort = float(t)
    print("| what | seconds | onnxruntime / gwr |")
    print("| --- | ---: | ---: |")
    for what, t, err in rows:
        if t is None:
            print(f"| {what} | failed: {err} | |")
        else:
            print(f"| {what} | {t:.3f} | {t_ort / t:.1f}x |" if t_ort else f"| {what} | {t:.3f} | - |")
    if t_ort is not None:
        print(f"| onnxruntime {ort_ver} session creation, ORT_ENABLE_EXTENDED, 1 thread | {t_ort:.3f} | |")
    print()
    if t_ort is not None:
        for what, t, _ in rows:
            if t:
                print(f"- {what}: {t_ort / t:.1f}x (target >= 50x): {'PASS' if t_ort / t >= 50 else 'FAIL'}")


if __name__ == "__main__":
    main()
