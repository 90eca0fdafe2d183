#!/usr/bin/env python3
"""bench/optimize_profile.py - issue 26's optimizer profile figure: `gwr optimize
--profile` on real models (bench/real/fetch.py's cache), and per model the
passes that took the most layers away (removed - added over the rounds, from
the trace's "pass" events), their rewrites and time, the rounds and the
"layers" counter from start to end.

  bench/optimize_profile.py [GWR] [MODEL...]   (GWR: build/gwr; GWR_REAL_CACHE: bench/real/cache)

Prints one block per model; exit 1 when a profile is missing or its passes'
rewrites do not add up to its rounds'.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = ["layout-cdla", "ppocr-rec", "silero-vad-v6", "t5-encoder-int8"]


def main():
    gwr = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "gwr")
    models = sys.argv[2:] or DEFAULT
    cache = os.path.join(os.environ.get("GWR_REAL_CACHE", os.path.join(HERE, "real", "cache")), "models")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            model = os.path.join(cache, name + ".onnx")
            prof = os.path.join(tmp, name + ".json")
            t0 = time.perf_counter()
            p = subprocess.run([gwr, "optimize", model, "-o", os.path.join(tmp, "o.onnx"), "--profile", prof],
                               capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if p.returncode:
                print("%s: gwr optimize failed: %s" % (name, p.stderr.strip()))
                bad = 1
                continue
            ev = json.load(open(prof))["traceEvents"]
            rounds = [e for e in ev if e.get("cat") == "round"]
            passes = [e for e in ev if e.get("cat") == "pass"]
            layers = [e["args"]["layers"] for e in ev if e["ph"] == "C"]
            agg = {}
            for e in passes:
                a = agg.setdefault(e["name"], [0, 0, 0.0])
                a[0] += e["args"]["rewrites"]
                a[1] += e["args"]["layers_removed"] - e["args"]["layers_added"]
                a[2] += e["dur"] / 1e3
            if sum(a[0] for a in agg.values()) != sum(e["args"]["rewrites"] for e in rounds):
                print("%s: the passes' rewrites do not add up to the rounds'" % name)
                bad = 1
            top = sorted((kv for kv in agg.items() if kv[1][0]), key=lambda kv: (-kv[1][1], kv[0]))[:3]
            rest = layers[0] - layers[-1] - sum(a[1] for a in agg.values())
            print("%s: %d round%s, %d rewrites, layers %s, %.2f s wall, profile %d bytes" % (
                name, len(rounds), "" if len(rounds) == 1 else "s", sum(a[0] for a in agg.values()),
                " -> ".join(str(x) for x in layers), wall, os.path.getsize(prof)))
            for label, (rew, red, ms) in top:
                print("  %-34s %5d rewrites  %5d layers fewer  %8.2f ms" % (label, rew, red, ms))
            print("  %-34s %5s           %5d layers fewer" % ("(the final prune; bodies' layers)", "", rest))
    return bad


if __name__ == "__main__":
    sys.exit(main())
