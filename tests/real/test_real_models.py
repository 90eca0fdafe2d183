#!/usr/bin/env python3
"""make test's subset of the real models (bench/real/models.txt, flag ci).

    .venv/bin/python tests/real/test_real_models.py GWR [--expected FILE] [--only NAME,...]

The models come from the cache bench/real/fetch.py --ci filled at setup
(scripts/setup.sh); nothing is downloaded here, and a model missing from the
cache is a failure that says how to fetch it, never a skip. For every model,
at every level (basic, extended, all) and target (onnx, ort, gwr):

  write:LEVEL:TARGET     `gwr optimize` writes the file
  valid:LEVEL:TARGET     onnx.checker.check_model(full_check=True) passes and
                         onnxruntime loads it (a file for target gwr may hold
                         gwr's own ops, docs/optimize.md: the checker only)
  numerics:LEVEL:TARGET  its outputs match onnxruntime's on the original
                         (targets onnx and ort: run in onnxruntime; target gwr:
                         `gwr run --no-optimize`), on the manifest's seeded inputs
  second:LEVEL:TARGET    a second `gwr optimize` of that file leaves the node count
                         (graph and bodies) unchanged
and once per model
  exec                   `gwr run` of the original matches onnxruntime.

The reference is onnxruntime on the original with optimizations disabled; the
tolerance |a-b| <= 1e-4 + 1e-3 |b| (float16 models: 1e-2 + 1e-2 |b|), bench/real/run.py's.
Known failures are listed in tests/real/expected_failures.txt, one a line,
`MODEL CHECK REASON` (CHECK may hold * and ?); a listed check that passes
fails the test as a stale entry, so the list shrinks as the bugs are fixed.
"""
import argparse
import fnmatch
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "real"))
import manifest  # noqa: E402
import run as bench  # noqa: E402

LEVELS = ("basic", "extended", "all")
TARGETS = ("onnx", "ort", "gwr")


def load_expected(path):
    entries = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3:
                raise ValueError(f"{path}:{lineno}: expected `MODEL CHECK REASON`")
            entries.append({"model": parts[0], "check": parts[1], "reason": parts[2],
                            "line": lineno, "hit": False})
    return entries


def check_model(model, gwr, work, fail):
    """Runs every check of one model; fail(check, message) records a failure."""
    import onnx
    proto = onnx.load(model.path)
    feeds = manifest.make_inputs(model, proto, seed=0)
    atol, rtol = bench.tolerance(model)
    try:
        ref = bench.ort_outputs(model.path, feeds, "disable")
    except Exception as e:  # noqa: BLE001
        fail("reference", f"onnxruntime cannot run the original: {e}")
        return

    def numerics(check, got):
        ok, worst = bench.compare(ref, got, atol, rtol)
        if not ok:
            fail(check, worst if isinstance(worst, str) else
                 f"output {worst['output']}: max abs {worst['max_abs']:.3g} "
                 f"({worst['ratio']:.3g}x the tolerance)")

    outs, _, err = bench.gwr_run(gwr, model.path, feeds, os.path.join(work, "exec"), 1, 300)
    if err:
        fail("exec", f"gwr run: {err}")
    else:
        numerics("exec", outs)

    for level in LEVELS:
        for target in TARGETS:
            tag = f"{level}:{target}"
            dst = os.path.join(work, f"{level}-{target}.onnx")
            err = bench.gwr_optimize(gwr, model.path, dst, level, target, 300)
            if err:
                fail(f"write:{tag}", err)
                continue
            nodes = bench.count_nodes(dst)
            again = os.path.join(work, f"{level}-{target}.again.onnx")
            err = bench.gwr_optimize(gwr, dst, again, level, target, 300)
            if err:
                fail(f"second:{tag}", f"gwr optimize of its own output: {err}")
            elif bench.count_nodes(again) != nodes:
                fail(f"second:{tag}", f"{nodes} nodes, then {bench.count_nodes(again)}")
            if target == "gwr":
                problem = bench.check_file(dst, load=False, target=target)
                if problem:
                    fail(f"valid:{tag}", problem)
                outs, _, err = bench.gwr_run(gwr, dst, feeds, os.path.join(work, f"run-{tag}"),
                                             1, 300, optimize=False)
                if err:
                    fail(f"numerics:{tag}", f"gwr run --no-optimize: {err}")
                else:
                    numerics(f"numerics:{tag}", outs)
                continue
            problem = bench.check_file(dst, target=target)
            if problem:
                fail(f"valid:{tag}", problem)
                continue
            try:
                got = bench.ort_outputs(dst, feeds, "disable")
            except Exception as e:  # noqa: BLE001
                fail(f"numerics:{tag}", f"onnxruntime run: {str(e).splitlines()[0]}")
                continue
            numerics(f"numerics:{tag}", got)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gwr", help="the gwr executable")
    ap.add_argument("--expected", default=os.path.join(HERE, "expected_failures.txt"))
    ap.add_argument("--only", help="comma-separated model names (default: every ci model)")
    args = ap.parse_args(argv)

    models = [m for m in manifest.load() if "ci" in m.flags]
    if args.only:
        models = [m for m in models if m.name in args.only.split(",")]
    if len(models) < 6 and not args.only:
        print(f"FAIL: the manifest has {len(models)} ci models, fewer than 6")
        return 1
    expected = load_expected(args.expected)
    known = {m.name for m in manifest.load()}
    for e in expected:
        if e["model"] not in known:
            print(f"FAIL: {args.expected}:{e['line']}: no model '{e['model']}' in the manifest")
            return 1

    failures, xfails = [], []
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="gwr-real-test-") as tmp:
        for m in models:
            if not os.path.exists(m.path):
                failures.append(f"{m.name}: not in the cache {manifest.cache_dir()}: run "
                                f"scripts/setup.sh (or .venv/bin/python bench/real/fetch.py --ci)")
                continue
            if manifest.sha256_of(m.path) != m.sha256:
                failures.append(f"{m.name}: the cached file's sha256 is not the manifest's")
                continue

            def fail(check, msg, name=m.name):
                hits = [e for e in expected
                        if e["model"] == name and fnmatch.fnmatchcase(check, e["check"])]
                for e in hits:
                    e["hit"] = True
                (xfails if hits else failures).append(f"{name} {check}: {msg}")

            work = os.path.join(tmp, m.name)
            os.makedirs(work)
            t0 = time.time()
            check_model(m, args.gwr, work, fail)
            print(f"{m.name}: checked in {time.time() - t0:.1f} s", flush=True)

    for x in xfails:
        print(f"XFAIL {x}")
    stale = [e for e in expected if not e["hit"] and e["model"] in {m.name for m in models}]
    for e in stale:
        failures.append(f"{args.expected}:{e['line']}: '{e['model']} {e['check']}' now passes: "
                        f"remove the stale entry ({e['reason']})")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{len(models)} real models, {len(failures)} failures, {len(xfails)} expected failures, "
          f"{time.time() - t_start:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
