#!/usr/bin/env python3
"""What a Python pattern costs per layer, against a C pattern (issue 15).

    PYTHONPATH=build/python /usr/bin/python3 bench/py_pattern_cost.py [LAYERS] [REPEAT]

Builds one network of LAYERS (default 100000) Neg layers in a chain (building
is not timed) and times RewritePatternManager.rewrite over it, best of REPEAT
(default 5) runs, with time.perf_counter around the call, for:

  empty      a manager with no pattern: the driver's own walk (and the
             Python-side setup of rewrite()).
  c          the built-in fold_constants (rooted on every layer; no input here
             is constant, so it never matches): a C pattern's per-layer cost.
             bench_rewrite has no single-no-op-pattern mode, so this stands
             in for "the same pattern in C".
  py         a PatternRewriter rooted on every layer whose match() returns
             False: one trampoline call, one Layer lookup and one Python
             method call per layer.
  py_m&r     the same with separate_match_rewrite=False.

Nothing matches, so every run visits each layer once and the network is not
changed. Prints seconds per run and ns per visited layer, and the cost over
the empty manager.
"""

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
    net = build(n)
    # Wrap every layer once first: the first run of a Python pattern creates
    # the Layer objects, later runs find them (what a real session sees
    # after its first pass).
    _ = net.layers
    managers = []
    m = gwr.RewritePatternManager()
    managers.append(("empty", m))
    m = gwr.RewritePatternManager()
    m.add_builtin("fold_constants")
    managers.append(("c", m))
    m = gwr.RewritePatternManager()
    m.add("never", NeverPy())
    managers.append(("py", m))
    m = gwr.RewritePatternManager()
    m.add("never", NeverPy(separate=False))
    managers.append(("py_m&r", m))
    print(f"{n} Neg layers, best of {repeat} runs")
    print(f"{'manager':<8} {'seconds':>10} {'visited':>9} {'ns/layer':>9} {'over empty':>11}")
    base = None
    for name, m in managers:
        t, visited = time_manager(net, m, repeat)
        per = t / max(visited, 1) * 1e9
        if base is None:
            base = per
        print(f"{name:<8} {t:10.4f} {visited:9d} {per:9.1f} {per - base:11.1f}")


if __name__ == "__main__":
    main()
