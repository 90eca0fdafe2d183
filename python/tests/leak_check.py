"""Memory stays flat over many cycles of everything the package does.

Not a pytest file: ctest runs it in the plain build only (python/memory_flat).
Under the ASan build, LeakSanitizer cannot be used (CPython's own start-up
allocations are never freed and run through the interpreter, so a
suppression would hide ours too), and ASan's quarantine keeps freed memory
on purpose, so RSS says nothing there.

Two measures after a warm-up (caches, interned strings, numpy's and the
executor's first allocations):
- tracemalloc's traced size: every Python object the extension makes
  (Layer, Tensor, FLayerInfo, dicts, arrays) goes through Python's
  allocator, so a reference leaked per cycle shows as growth;
- the process's resident size: gwr's own allocations (networks, sessions,
  values, buffers) go through malloc, so a network or session leaked per
  cycle shows there.
Each cycle builds and rewrites a network from Python, records and re-creates
a plugin through its FLayerInfo, runs it, saves and loads it, runs rules
(gwr.rules) on it, optimizes it, raises from inside a pattern, and closes
the network with objects still held.
Exit status 1 when either measure grows past its bound.
"""
import gc
import io
import os
import sys
import tracemalloc

import numpy as np

import gwr
import gwr.functional as F
import gwr.rules

# The warm-up is long: CPython's interned-string table settles (it is
# resized once, by ~1 MB, after some 600 cycles) before the count starts.
# Caches that churn (freelists, the interned-string table) move the traced
# size by up to ~26 KB between two ends of the run: the bound is above that
# and below what one object leaked per cycle costs once it is 80 bytes or
# more (a Network object leaked per cycle: +135 KB, checked by breaking
# Layer's dealloc on purpose).
CYCLES, WARMUP = 800, 800
PY_BOUND = 64 * 1024          # bytes of Python objects: under 80 bytes a cycle
RSS_BOUND = 2 * 1024 * 1024   # bytes of resident memory: under 2.6 KB a cycle (a network is far more)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class AddToSub(gwr.PatternRewriter):
    def __init__(self):
        super().__init__("add_to_sub", root_layer={gwr.LayerType.ELEMENTWISE})

    def match(self, layer):
        return layer.op == "Add"

    def rewrite(self, layer):
        with gwr.net_guard(layer.network):
            a, b = layer.get_inputs(0, 1)
            o = layer.get_outputs(0)[0]
            o.replace_all_uses_with(a - b)
            layer.mark_as_removed()


class Boom(gwr.PatternRewriter):
    def __init__(self):
        super().__init__("boom", root_layer={"Sub"})

    def match(self, layer):
        raise ValueError("boom")


@gwr.record_signature
def scaled(x, k=2.0):
    return F.mul(x, k)


def cycle(i):
    net = gwr.Network(f"n{i}")
    x = net.add_input("x", gwr.float32, (2, 8, 12))
    h = F.relu(x + x * 0.5)
    h = scaled(h, k=1.5)
    ctx, present = F.gpt_attention(h, num_heads=2, head_size=2)
    y = F.softmax(ctx + 1.0, axis=-1)
    net.mark_output(y)
    layer = ctx.get_parent()
    info = gwr.FLayerInfoMemo.instance().get(layer, net)
    new_ctx, _ = F.gpt_attention(**info.clone_inputs())
    info.replace_outputs_uses_with(net, [new_ctx, _])
    layer.mark_as_removed()
    _ = [l.attrs for l in net.layers]
    m = gwr.RewritePatternManager()
    m.add("add_to_sub", AddToSub(), 1)
    m.trace(io.StringIO(), format="json")
    m.rewrite(net)
    m.stats()
    out = gwr.Session(net, optimize="raw").run({"x": np.full((2, 8, 12), 0.25, np.float32)})
    assert next(iter(out.values())).shape == (2, 8, 4)
    net2 = gwr.onnx.load_bytes(gwr.onnx.save_bytes(net))
    # rules traced from Python, compiled in C, run by a manager and by optimize
    rs = gwr.rules.RuleSet([gwr.rules.rule("neg_neg", lambda op, x: op.Neg(op.Neg(x)), lambda op, x: x),
                            "rule relu_relu:\n  Relu(Relu(x))  =>  Relu(x)\n"])
    rm = gwr.RewritePatternManager()
    rm.add_rules(rs)
    rm.add("one", rs["relu_relu"], 1)
    rm.rewrite(net2)
    try:
        gwr.rules.load("rule r:\n  Relu(x)  =>  NoSuchOp(x)\n")
    except gwr.ParseError:
        pass
    gwr.optimize(net2, level="extended", rules=rs)
    gwr.Session(net2).run({"x": np.ones((2, 8, 12), np.float32)})
    bad = gwr.RewritePatternManager()
    bad.add("boom", Boom())
    try:
        bad.rewrite(net2)
    except ValueError:
        pass
    kept = net.layers[0]
    net.close()
    net2.close()
    try:
        kept.name
    except gwr.LifetimeError:
        pass


def main():
    tracemalloc.start()
    for i in range(WARMUP):
        cycle(i)
    gc.collect()
    py0, rss0 = tracemalloc.get_traced_memory()[0], rss()
    for i in range(CYCLES):
        cycle(WARMUP + i)
    gc.collect()
    dpy, drss = tracemalloc.get_traced_memory()[0] - py0, rss() - rss0
    print(f"{CYCLES} cycles after {WARMUP} of warm-up: Python objects {dpy:+d} bytes (bound {PY_BOUND}), "
          f"resident {drss / 1024:+.0f} KiB (bound {RSS_BOUND // 1024} KiB)")
    return 0 if dpy < PY_BOUND and drss < RSS_BOUND else 1


if __name__ == "__main__":
    sys.exit(main())
