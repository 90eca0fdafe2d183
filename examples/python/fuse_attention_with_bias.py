#!/usr/bin/env python3
"""The documentation's "real example", FuseAttentionWithBiasPass, in gwr.

An Add of a tensor and a constant 1-D bias, read only by a GPTAttention
plugin as its qkv, is folded into the plugin: the plugin is re-created from
its FLayerInfo with qkv = the Add's other input and qkv_bias = the bias, its
users moved to the new plugin's outputs, and the Add and the old plugin
marked as removed. The pattern uses the documentation's tools throughout
(FLayerInfoMemo, clone_inputs, gpt_attention(**new_inputs),
replace_outputs_uses_with) with the checks of gwr's C version
(src/passes/seed.c, fuse_attention_with_bias).

The script builds two attention blocks, qkv = x @ w + b then
gpt_attention(qkv), from gwr.functional: in the first the Add is read only
by the plugin (fused), in the second it is also a network output (left
alone). It runs the network before and after (gwr.Session, against numpy),
checks the structure, and checks that the context is the same. Exit status 0
when everything is as expected. (The C version:
examples/fuse_attention_with_bias.c.)"""
import sys

import numpy as np

import gwr
from gwr import ElementWiseOperation, FLayerInfoMemo, Layer, LayerType, PatternRewriter, RewritePatternManager, net_guard
from gwr.functional import constant, gpt_attention, matmul

from example_support import Checks, gpt_attention_reference

SEQ, MODEL, NUM_HEADS, HEAD_SIZE = 5, 8, 2, 4
HIDDEN = NUM_HEADS * HEAD_SIZE


def is_constant(tensor):
    """True when tensor is the output of a Constant layer."""
    parent = tensor.get_parent()
    return parent is not None and parent.type == LayerType.CONSTANT


def is_gpt_attention(layer):
    """True for gwr's GPTAttention plugin."""
    return layer.type == LayerType.PLUGIN and layer.domain == 'gwr' and layer.op == 'GPTAttention'


class FuseAttentionWithBiasPass(PatternRewriter):
    """The documentation's real example: a constant bias Add before GPTAttention moves into qkv_bias."""

    def __init__(self):
        super().__init__('fuse_attention_with_bias',
                         root_layer={LayerType.ELEMENTWISE},
                         separate_match_rewrite=False)

    def match_and_rewrite(self, layer: Layer) -> bool:
        """Folds the Add rooted at layer into the plugin reading it; True when it did."""
        if layer.as_layer().ew_op != ElementWiseOperation.SUM or layer.num_inputs != 2:
            return self.no_match('not a two-input SUM')
        o = layer.get_outputs(0)[0]
        if o.is_output:
            return self.no_match("'%s' is a network output" % o.name)
        users = o.get_users()
        if len(users) != 1 or not is_gpt_attention(users[0]):
            return self.no_match("'%s' is not read by one GPTAttention plugin only" % o.name)
        plugin = users[0]

        # Retrieve the FLayerInfo of the plugin the Add feeds.
        flayer = FLayerInfoMemo.instance().get(plugin.name)
        if flayer is None:
            return self.no_match("'%s' has no FLayerInfo" % plugin.name)
        if flayer.get_input('qkv') is not o:
            return self.no_match("not the plugin's qkv")
        if flayer.get_input('qkv_bias') is not None:
            return self.no_match('qkv_bias is already set')

        a, b = layer.get_inputs(0, 1)
        if is_constant(a) == is_constant(b):
            return self.no_match('not one constant and one computed input')
        x, bias = (a, b) if is_constant(b) else (b, a)
        # The bias must be 1-D over qkv's last dim, and x of qkv's shape already
        # (an Add that broadcasts x cannot move into the plugin).
        if len(bias.shape or ()) != 1 or bias.shape[0] != o.shape[-1] or x.shape != o.shape or x.dtype != bias.dtype:
            return self.no_match("the bias is not a 1-D constant over qkv's last dim")

        with net_guard(layer.network):
            new_inputs = flayer.clone_inputs()

            # Step 1: The plugin reads x and adds the bias itself.
            new_inputs['qkv'] = x
            new_inputs['qkv_bias'] = bias

            # Step 2: Create a new plugin instance.
            new_outs = gpt_attention(**new_inputs)

            # Step 3: Deprive all the users of the old plugin instance.
            flayer.replace_outputs_uses_with(layer.network, new_outs)

            # Step 4: Remove the old plugin instance and the Add.
            plugin.mark_as_removed()
            layer.mark_as_removed()
        return True


def attention_block(x, w, b):
    """qkv = x @ w + b, then the plugin: returns (context, qkv)."""
    qkv = matmul(x, constant(w)) + constant(b)
    context, _present = gpt_attention(qkv=qkv, num_heads=NUM_HEADS, head_size=HEAD_SIZE)
    return context, qkv


check = Checks()


def live_plugins(net):
    """The GPTAttention layers of net not marked as removed."""
    return [l for l in net.layers if l.is_alive and not l.is_removed and is_gpt_attention(l)]


def main():
    """Builds, rewrites and checks; returns the exit status."""
    rng = np.random.default_rng(15)
    w1, w2 = (rng.standard_normal((MODEL, 3 * HIDDEN)).astype(np.float32) * 0.5 for _ in range(2))
    b1, b2 = (rng.standard_normal(3 * HIDDEN).astype(np.float32) for _ in range(2))

    net = gwr.Network('fuse')
    with net_guard(net):
        x = net.add_input('x', gwr.float32, (1, SEQ, MODEL))
        ctx1, _ = attention_block(x, w1, b1)
        ctx2, qkv2 = attention_block(x, w2, b2)
    ctx1.name, ctx2.name, qkv2.name = 'ctx1', 'ctx2', 'qkv2'
    for t in (ctx1, ctx2, qkv2):  # qkv2 is also read as an output: its Add must stay
        net.mark_output(t)

    xv = rng.standard_normal((1, SEQ, MODEL)).astype(np.float32)
    x64 = xv.astype(np.float64)
    want1 = gpt_attention_reference(x64 @ w1, NUM_HEADS, HEAD_SIZE, qkv_bias=b1)
    want2 = gpt_attention_reference(x64 @ w2, NUM_HEADS, HEAD_SIZE, qkv_bias=b2)
    got = gwr.Session(net).run({'x': xv})
    check(np.allclose(got['ctx1'], want1, rtol=1e-4, atol=1e-4) and np.allclose(got['ctx2'], want2, rtol=1e-4,
                                                                                  atol=1e-4),
          'before: both contexts match numpy')
    layers_before = net.num_live_layers

    manager = RewritePatternManager()
    manager.add('fuse_attention_with_bias', FuseAttentionWithBiasPass(), 1)
    manager.trace(sys.stdout, failures=True)  # match failures too, with their reasons
    manager.rewrite(net)

    out1, out2 = net.outputs[0], net.outputs[1]
    p1, p2 = out1.get_parent(), out2.get_parent()
    f1 = FLayerInfoMemo.instance().get(p1.name, net)
    print('%s: qkv=%s qkv_bias=%s' % (p1.name, p1.get_inputs(0)[0].name, p1.get_inputs(1)[0]))
    print('%s: qkv=%s qkv_bias=%s' % (p2.name, p2.get_inputs(0)[0].name, p2.get_inputs(1)[0]))
    print('layers: %d -> %d' % (layers_before, net.num_live_layers))
    check(len(live_plugins(net)) == 2, 'two plugins still')
    check(f1 is not None and p1.get_inputs(1)[0] is not None and f1.get_input('qkv_bias') is p1.get_inputs(1)[0],
          'the first plugin has a qkv_bias, in its layer and its FLayerInfo')
    check(p1.get_inputs(0)[0].get_parent().op == 'MatMul', "the first plugin's qkv is the MatMul's output")
    check(is_constant(p1.get_inputs(1)[0]), "the first plugin's qkv_bias is the constant")
    check(p2.get_inputs(1)[0] is None and p2.get_inputs(0)[0] is net.get_tensor('qkv2'),
          'the second plugin is untouched (its Add is a network output)')
    check(net.num_live_layers == layers_before - 1, 'one layer fewer (the Add)')
    check(out1.name == 'ctx1' and out2.name == 'ctx2', 'the outputs keep their names')
    net.verify()

    got = gwr.Session(net).run({'x': xv})
    check(np.allclose(got['ctx1'], want1, rtol=1e-4, atol=1e-4) and np.allclose(got['ctx2'], want2, rtol=1e-4,
                                                                                  atol=1e-4),
          'after: both contexts still match numpy')
    net.close()
    return check.status()


if __name__ == '__main__':
    sys.exit(main())
