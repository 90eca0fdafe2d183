#!/usr/bin/env python3
"""The first example of the graph rewriting module's documentation, in gwr.

Every elementwise SUM becomes a SUB with the same inputs and the same
consumers: NaivePatternRewriter_ReplaceAddWithSub is the documentation's
class, word for word but for the names (trt.LayerType -> gwr.LayerType,
trt.ElementWiseOperation -> gwr.ElementWiseOperation). The script builds a
small network, counts its elementwise layers with a PatternAnalyzer, applies
the pattern with a RewritePatternManager, checks the new structure, and runs
the network before and after with gwr.Session against numpy. Exit status 0
when everything is as expected.

Run from a build: PYTHONPATH=build/python /usr/bin/python3 examples/python/replace_add_with_sub.py
(the C version is examples/replace_add_with_sub.c, the pattern in C
src/passes/seed.c)."""
import sys

import numpy as np

import gwr
from gwr import (AnalysisPatternManager, ElementWiseOperation, Layer, LayerType, PatternAnalyzer, PatternRewriter,
                 RewritePatternManager, net_guard)

from example_support import Checks


class NaivePatternRewriter_ReplaceAddWithSub(PatternRewriter):
    """The documentation's first pattern: every elementwise SUM becomes a SUB of the same inputs."""

    def __init__(self):
        super().__init__('replace_add_with_sub',
                         root_layer={LayerType.ELEMENTWISE},
                         separate_match_rewrite=True)

    def match(self, layer: Layer):
        """True for an elementwise SUM."""
        # The rewriter will stop at the first matched layer, and then the Rewriter will enter the rewrite() to do the rewriting.
        # (gwr: layer.op is the ONNX op name, "Add"; the elementwise operation is layer.ew_op.)
        return layer.as_layer().ew_op == ElementWiseOperation.SUM

    def rewrite(self, layer: Layer) -> None:
        """Replaces the SUM by a SUB in the four stages of every rewrite."""
        # The layer here should be an Elementwise_SUM layer.
        with net_guard(layer.network):
            # Stage 1: Get the input tensors and output tensors of the subgraph to replace.
            # - For Elementwise_SUM, there are two inputs and one output.
            a, b = layer.get_inputs(0, 1)
            o = layer.get_outputs(0)[0]

            # Stage 2: Create a new subgraph that takes the old one's inputs.
            # - Here we insert an Elementwise_SUB layer, and 'c' is the output.
            c = a - b

            # Stage 3: Redirect all the layers depending on the outputs of the old subgraph to the new subgraph's.
            # - After this, the SUM is dangling; gwr's manager prunes it at the end of the run.
            o.replace_all_uses_with(c)

            # Stage 4: Mark all the layers in the old subgraph as removed.
            # - This helps the PatternRewriter to skip the removed layers.
            layer.mark_as_removed()


class CountElementWise(PatternAnalyzer):
    """Counts the elementwise layers of a network by operation (an analysis pattern)."""

    def __init__(self):
        super().__init__('count_elementwise', root_layer={LayerType.ELEMENTWISE})
        self.counts = {}

    def analyze(self, subgraph):
        """Counts each matched layer under its operation's name."""
        for layer in subgraph:
            op = layer.ew_op.name if layer.ew_op is not None else layer.op
            self.counts[op] = self.counts.get(op, 0) + 1


def count_elementwise(net):
    """{operation name: number of layers} of net's elementwise layers, by an AnalysisPatternManager."""
    counter = CountElementWise()
    am = AnalysisPatternManager()
    am.add('count', counter)
    am.analyze(net)
    return counter.counts


check = Checks()


def main():
    """Builds, rewrites and checks; returns the exit status."""
    # x, y -> a = x + y -> b = a * y -> out = b + x
    net = gwr.Network('add_to_sub')
    x = net.add_input('x', gwr.float32, (2, 3))
    y = net.add_input('y', gwr.float32, (2, 3))
    a = x + y
    b = a * y
    out = b + x
    out.name = 'out'
    net.mark_output(out)

    rng = np.random.default_rng(15)
    xv = rng.standard_normal((2, 3)).astype(np.float32)
    yv = rng.standard_normal((2, 3)).astype(np.float32)
    feeds = {'x': xv, 'y': yv}
    before = gwr.Session(net).run(feeds)['out'].copy()
    check(np.allclose(before, (xv + yv) * yv + xv, rtol=1e-6, atol=1e-6), 'before: out == (x + y) * y + x (numpy)')
    counts = count_elementwise(net)
    print('before:', counts)
    check(counts == {'SUM': 2, 'PROD': 1}, 'before: 2 SUM and 1 PROD layers')

    manager = RewritePatternManager()
    manager.add('replace_add_with_sub', NaivePatternRewriter_ReplaceAddWithSub(), 1)
    manager.trace(sys.stdout)
    summary = manager.rewrite(net)
    print('summary:', summary)

    counts = count_elementwise(net)
    print('after: ', counts)
    check(counts == {'SUB': 2, 'PROD': 1}, 'after: 2 SUB and 1 PROD layers, no SUM')
    check(manager.stats()['replace_add_with_sub']['rewrites'] == 2, 'the pattern rewrote twice')
    o = net.outputs[0]
    p = o.get_parent()
    check(o.name == 'out' and p.op == 'Sub' and p.get_inputs(1)[0] is net.get_tensor('x'),
          "the output 'out' is now Sub(b, x)")
    check(net.num_live_layers == 3, 'three live layers')
    net.verify()
    after = gwr.Session(net).run(feeds)[o.name]
    check(np.allclose(after, (xv - yv) * yv - xv, rtol=1e-6, atol=1e-6), 'after: out == (x - y) * y - x (numpy)')

    # A second run finds nothing left to rewrite.
    nlayers = net.num_layers
    manager.rewrite(net)
    check(net.num_layers == nlayers and count_elementwise(net) == counts, 'a second run changes nothing')
    net.close()
    return check.status()


if __name__ == '__main__':
    sys.exit(main())
