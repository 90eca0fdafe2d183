"""Property: random rewrites done from Python leave a network that verifies
and computes what it computed before.

Each case builds a random network of element-wise layers (Add, Sub, Mul,
Neg, Abs, scalar products) over one input, with a numpy model of it built
alongside (the independent oracle), then runs Python patterns that rewrite
into equal forms, each deciding at random (from the case's seed) whether to
fire, with the manager visiting layers in a shuffled order. Afterwards the
network must verify, keep its interface, and give the numpy model's numbers
on gwr's executor. The rewrites are exact in IEEE arithmetic (a + b ==
a - (-b), a * b == b * a, --x == x, ||x|| == |x|), so the comparison is
bit for bit.
"""
import random

import numpy as np
import pytest

import gwr


def random_network(rng, n_layers):
    """A random element-wise network and a numpy model of its outputs."""
    net = gwr.Network("random")
    x = net.add_input("x", gwr.float32, (3, 5))
    xv = np.linspace(-2.0, 2.0, 15, dtype=np.float32).reshape(3, 5)
    pool = [(x, xv)]
    for _ in range(n_layers):
        a, av = rng.choice(pool)
        b, bv = rng.choice(pool)
        op = rng.choice(["add", "sub", "mul", "neg", "abs", "scale", "negneg", "absabs"])
        if op == "add":
            t, v = a + b, av + bv
        elif op == "sub":
            t, v = a - b, av - bv
        elif op == "mul":
            t, v = a * b, av * bv
        elif op == "neg":
            t, v = -a, -av
        elif op == "abs":
            t, v = abs(a), np.abs(av)
        elif op == "scale":
            k = rng.choice([0.5, 2.0, -1.5])
            t, v = a * k, av * np.float32(k)
        elif op == "negneg":
            t, v = -(-a), av.copy()
        else:
            t, v = abs(abs(a)), np.abs(av)
        # keep values bounded so that products do not overflow
        if np.max(np.abs(v)) > 1e6:
            t, v = abs(t) * 0.0, np.abs(v) * np.float32(0.0)
        pool.append((t, v))
    outs = rng.sample(pool[1:], k=min(3, len(pool) - 1))
    marked = []
    for t, v in outs:
        if any(t is m for m, _ in marked):
            continue
        net.mark_output(t)
        marked.append((t, v))
    return net, xv, [v for _, v in marked]


class RandomFire:
    """Mixin: fire on a layer when the case's coin says so (deterministic
    per layer name, so match and rewrite agree)."""

    def __init__(self, seed, prob):
        self.seed, self.prob = seed, prob

    def coin(self, layer):
        return random.Random(f"{self.seed}:{self.name}:{layer.name}").random() < self.prob


class AddToSubNeg(gwr.PatternRewriter, RandomFire):
    def __init__(self, seed, prob):
        gwr.PatternRewriter.__init__(self, "add_to_sub_neg", root_layer={gwr.LayerType.ELEMENTWISE})
        RandomFire.__init__(self, seed, prob)

    def match(self, layer):
        return layer.op == "Add" and self.coin(layer)

    def rewrite(self, layer):
        with gwr.net_guard(layer.network):
            a, b = layer.get_inputs(0, 1)
            o = layer.get_outputs(0)[0]
            c = a - (-b)
            o.replace_all_uses_with(c)
            layer.mark_as_removed()


class MulCommute(gwr.PatternRewriter, RandomFire):
    def __init__(self, seed, prob):
        gwr.PatternRewriter.__init__(self, "mul_commute", root_layer={"Mul"}, separate_match_rewrite=False)
        RandomFire.__init__(self, seed, prob)
        self.done = set()

    def match_and_rewrite(self, layer):
        # each new Mul is swapped at most once, or this would never end
        if layer.name in self.done or not self.coin(layer):
            return False
        a, b = layer.get_inputs(0, 1)
        o = layer.get_outputs(0)[0]
        c = b * a
        self.done.add(c.get_parent().name)
        o.replace_all_uses_with(c)
        layer.mark_as_removed()
        return True


class FoldPair(gwr.PatternRewriter, RandomFire):
    """--x -> x and ||x|| -> |x|."""

    def __init__(self, seed, prob):
        gwr.PatternRewriter.__init__(self, "fold_pair", root_layer={"Neg", "Abs"})
        RandomFire.__init__(self, seed, prob)

    def match(self, layer):
        (x,) = layer.get_inputs(0)
        inner = x.get_parent()
        return inner is not None and inner.op == layer.op and not inner.is_removed and self.coin(layer)

    def rewrite(self, layer):
        (x,) = layer.get_inputs(0)
        inner = x.get_parent()
        o = layer.get_outputs(0)[0]
        o.replace_all_uses_with(inner.get_inputs(0)[0] if layer.op == "Neg" else x)
        layer.mark_as_removed()


@pytest.mark.parametrize("seed", range(40))
def test_random_python_rewrites_keep_the_network_valid_and_equal(seed):
    rng = random.Random(seed)
    net, xv, want = random_network(rng, rng.randint(4, 40))
    interface = ([t.name for t in net.inputs], [(t.name, t.dtype, t.shape) for t in net.outputs])
    net.verify()

    m = gwr.RewritePatternManager()
    prob = rng.choice([0.3, 0.7, 1.0])
    m.add("add_to_sub_neg", AddToSubNeg(seed, prob), rng.randint(0, 3))
    m.add("mul_commute", MulCommute(seed, prob), rng.randint(0, 3))
    m.add("fold_pair", FoldPair(seed, prob), rng.randint(0, 3))
    summary = m.rewrite(net, shuffle_seed=seed + 1, debug=bool(seed % 2))

    net.verify()
    assert ([t.name for t in net.inputs], [(t.name, t.dtype, t.shape) for t in net.outputs]) == interface
    assert summary["rewrites"] == sum(s["rewrites"] for s in m.stats().values())
    # no Add survives where the coin always fires
    if prob == 1.0:
        assert not any(l.op == "Add" for l in net.layers)

    got = gwr.Session(net, optimize="raw").run({"x": xv})
    assert list(got) == [t.name for t in net.outputs]
    for g, w in zip(got.values(), want):
        np.testing.assert_array_equal(g, w)


def test_random_rewrites_stopped_midway_leave_a_valid_network():
    """A pattern that raises after some rewrites: the network verifies and
    still computes the same (every completed rewrite was an equal form)."""
    rng = random.Random(7)
    net, xv, want = random_network(rng, 60)

    class Flaky(AddToSubNeg):
        count = 0

        def rewrite(self, layer):
            Flaky.count += 1
            if Flaky.count == 3:
                raise RuntimeError("stop here")
            super().rewrite(layer)

    m = gwr.RewritePatternManager()
    m.add("flaky", Flaky(7, 1.0))
    assert sum(l.op == "Add" for l in net.layers) >= 3  # so that the third rewrite happens
    with pytest.raises(RuntimeError, match="stop here"):
        m.rewrite(net)
    net.verify()
    net.prune()
    got = gwr.Session(net, optimize="raw").run({"x": xv})
    for g, w in zip(got.values(), want):
        np.testing.assert_array_equal(g, w)

