"""Bad input never crashes: every public method and function of the package
called with wrong arguments (wrong types, None, dead objects, objects of
another network, huge and negative numbers) raises a Python exception or
returns; it never aborts or corrupts memory (the ASan build runs this file
too).

The calls are generated, seeded: for each callable, every argument count
from 0 to 3 over a pool of bad values, each call on fresh objects so that a
call that closes or prunes something cannot hide the next one's outcome."""
import inspect
import random

import numpy as np
import pytest

import gwr
import gwr.functional as F
import gwr.onnx
import gwr.passes


def fresh():
    """A small network with every kind of object, and a dead layer/tensor."""
    net = gwr.Network("misuse")
    x = net.add_input("x", gwr.float32, (2, 12))
    y = F.relu(x + 1.0)
    ctx, present = F.gpt_attention(F.reshape(y, (1, 2, 12)), num_heads=2, head_size=2)
    net.mark_output(ctx)
    other = gwr.Network("other")
    o = other.add_input("o", gwr.float32, (2, 12))
    gone = gwr.Network("gone")
    g = gone.add_input("g", gwr.float32, (1,))
    dead_layer = (g * 2.0).get_parent()
    gone.close()
    return net, x, y, ctx, o, dead_layer, g


def bad_values(objs):
    net, x, y, ctx, o, dead_layer, g = objs
    return [None, 0, -1, 2**63, -(2**70), 1.5, float("nan"), "", "x", "no_such::Op", b"\xff", [], [None],
            [1, "a"], {}, {"k": object()}, (1, 2, 3), object(), np.zeros((0,)), np.ones((2, 2), np.float64),
            gwr.float32, gwr.LayerType.PLUGIN, o, o.get_parent(), dead_layer, g, x, y.get_parent(), net,
            ctx.get_parent()]


def targets(objs):
    """(name, callable) for every public method of every object and every
    public function of the package's modules."""
    net, x, y, ctx, o, dead_layer, g = objs
    info = gwr.FLayerInfoMemo.instance().get(ctx.get_parent(), net)
    rm, am = gwr.RewritePatternManager(), gwr.AnalysisPatternManager()
    session = gwr.Session(net, optimize="raw")
    owners = {"Network": net, "Tensor": x, "Layer": y.get_parent(), "FLayerInfo": info,
              "RewritePatternManager": rm, "AnalysisPatternManager": am, "Session": session,
              "PatternRewriter": gwr.PatternRewriter("p"), "PatternAnalyzer": gwr.PatternAnalyzer("a", root_layer={"Add"})}
    out = []
    for kind, obj in owners.items():
        for name in dir(obj):
            if name.startswith("_") or name in ("close",):
                continue
            attr = getattr(obj, name, None)
            if callable(attr):
                out.append((f"{kind}.{name}", attr))
    for mod in (gwr, F, gwr.onnx, gwr.passes):
        for name, v in vars(mod).items():
            if name.startswith("_") or inspect.isclass(v) or inspect.ismodule(v) or not callable(v):
                continue
            out.append((f"{mod.__name__}.{name}", v))
    for cls in (gwr.Network, gwr.Tensor, gwr.net_guard, gwr.Session, gwr.RewritePatternManager,
                gwr.PatternRewriter, gwr.PatternAnalyzer):
        out.append((cls.__name__, cls))
    return out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy: bool() of an empty array given as a flag
def test_every_callable_survives_bad_arguments():
    rng = random.Random(15)
    names = [n for n, _ in targets(fresh())]
    assert len(names) > 120  # the package's surface, not a handful
    calls = raised = 0
    for name in names:
        for nargs in range(4):
            for _ in range(8 if nargs else 1):
                objs = fresh()
                fn = dict(targets(objs))[name]
                pool = bad_values(objs)
                args = [rng.choice(pool) for _ in range(nargs)]
                calls += 1
                try:
                    fn(*args)
                except (Exception, KeyboardInterrupt) as e:  # any Python exception is a fine answer
                    raised += 1
                    assert str(e) is not None
                for n in (objs[0],):
                    if not n.closed:
                        n.verify()  # whatever happened, the network is still valid
    assert raised > calls // 2  # most of these calls are wrong, and said so


def test_keyword_misuse_of_the_builders():
    net, x, *_ = fresh()
    for name, fn in vars(F).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != "gwr.functional":
            continue
        for kw in ({"nope": 1}, {"x": None}, {"axis": "a"}, {"dtype": "bogus"}):
            try:
                fn(x, **kw)
            except Exception:
                pass
    net.verify()


@pytest.mark.parametrize("seed", range(3))
def test_random_call_sequences_on_one_network(seed):
    """Calls that change the network, one after another on the same objects:
    whatever fails, the network verifies after each call."""
    rng = random.Random(seed)
    objs = fresh()
    net = objs[0]
    pool = bad_values(objs)
    fns = [(n, f) for n, f in targets(objs) if n.startswith(("Network.", "Tensor.", "Layer.", "FLayerInfo."))]
    for _ in range(300):
        name, fn = rng.choice(fns)
        try:
            fn(*[rng.choice(pool) for _ in range(rng.randint(0, 2))])
        except Exception:
            pass
        if net.closed:
            break
        net.verify()
