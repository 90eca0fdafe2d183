#!/usr/bin/env python3
"""What a Python pattern costs per layer, against a C pattern (issue 15).

    PYTHONPATH=build/python /usr/bin/python3 bench/py_pattern_cost.py [LAYERS] [REPEAT]

Builds one network of LAYERS (default 100000) Neg layers in a chain (building
is not timed) and times RewritePatternManager.rewrite over it, best of REPEAT
(default 5) runs, with time.perf_counter around the call, for:

  empty      a manager with no pattern: the driver's own walk (and the
             Python-side setup of rewrite()).
  c_fold     the built-in fold_constants (rooted on every layer; no input
             here is constant, so it never matches): a real C pattern.
  py         a PatternRewriter rooted on every layer whose match() returns
             False: one trampoline call, one Layer lookup and one Python
             method call per layer. The Layer objects already exist (the
             script holds net.layers), as after a first pass.
  py_m&r     the same with separate_match_rewrite=False.
  py_fresh   `py` with no Layer object alive: each visit creates the Layer
             object and frees it (what a first pass costs).

The same pattern in C (match reads the op and returns 0) is timed by
build/bench/bench_never_match on the same number of layers, run by this
script in the same run when it is there (BENCH_DIR, default build/bench).

Nothing matches, so every run visits each layer once and the network is not
changed. Prints seconds per run and ns per visited layer, and the cost over
the empty manager.
"""

import os
import subprocess
import sys
import time

import gwr


class NeverPy(gwr.PatternRewriter):
    """Offered every layer; never matches."""

    def __init__(self, separate=True):
        super().__init__("never_py", root_layer=None, separate_match_rewrite=separate)

    def match(self, layer):
        return False

    def rewrite(self, layer):
        raise AssertionError("never matched")

    def match_and_rewrite(self, layer):
        return False


def build(n):
    net = gwr.Network("chain")
    y = net.add_input("x", gwr.float32, (4,))
    for _ in range(n):
        y = -y
    net.mark_output(y)
    return net


def time_manager(net, m, repeat):
    best, visited = None, 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        s = m.rewrite(net)
        dt = time.perf_counter() - t0
        assert s["rewrites"] == 0
        visited = s["visited"]
        best = dt if best is None or dt < best else best
    return best, visited


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    exe = os.path.join(os.environ.get("BENCH_DIR", "build/bench"), "bench_never_match")
    if os.path.exists(exe):
        # The C side first, in its own process, on the same network size.
        print(subprocess.run([exe, str(n), str(repeat)], check=True, capture_output=True, text=True).stdout)
    else:
        print(f"({exe} not built: no C figure in this run)")
    net = build(n)
    managers = []
    m = gwr.RewritePatternManager()
    managers.append(("empty", m, True))
    m = gwr.RewritePatternManager()
    m.add_builtin("fold_constants")
    managers.append(("c_fold", m, True))
    m = gwr.RewritePatternManager()
    m.add("never", NeverPy())
    managers.append(("py", m, True))
    m = gwr.RewritePatternManager()
    m.add("never", NeverPy(separate=False))
    managers.append(("py_m&r", m, True))
    m = gwr.RewritePatternManager()
    m.add("never", NeverPy())
    managers.append(("py_fresh", m, False))
    print(f"{n} Neg layers, best of {repeat} runs (Python {sys.version.split()[0]})")
    print(f"{'manager':<8} {'seconds':>10} {'visited':>9} {'ns/layer':>9} {'over empty':>11}")
    base = None
    for name, m, keep in managers:
        held = net.layers if keep else None  # the Layer objects stay alive, or not
        t, visited = time_manager(net, m, repeat)
        del held
        per = t / max(visited, 1) * 1e9
        if base is None:
            base = per
        print(f"{name:<8} {t:10.4f} {visited:9d} {per:9.1f} {per - base:11.1f}")


if __name__ == "__main__":
    main()
