#!/usr/bin/env python3
"""The second example of the graph rewriting module's documentation, in gwr.

A GPTAttention plugin is opaque to the graph, so it is re-created from the
call recorded when it was built (its FLayerInfo, through
FLayerInfoMemo.instance().get(layer.name)), with qkv replaced by a new,
packed input of shape (1, batch_size * in_len, hidden_size) and
remove_padding set. The shapes come from the manager's args (self.args).
GPTAttentionPluginRemovePaddingRewritePass follows the documentation's class
line by line; what gwr needs beyond it is marked "gwr:" (the plugin is
gwr::GPTAttention, namespace 'gwr', instead of TensorRT's PLUGIN_V2
'tensorrt_llm' plugin; float32 so that gwr's executor checks the numbers; the packed plugin is told
where each sequence starts; its context is reshaped back for the layers
that read the padded one).

The script builds a network whose input qkv (batch, in_len, 3*hidden) feeds
the plugin, runs it (gwr.Session against numpy), rewrites it, checks the new
plugin's FLayerInfo and inputs, and runs it again with the packed input:
the context must be the same. Exit status 0 when everything is as expected.
(The C version: examples/gpt_attention_remove_padding.c.)"""
import sys

import numpy as np

import gwr
from gwr import FLayerInfoMemo, Layer, LayerType, PatternRewriter, RewritePatternManager, Tensor, net_guard
from gwr.functional import constant, gpt_attention, reshape

from example_support import Checks, gpt_attention_reference

BATCH, IN_LEN, NUM_HEADS, HEAD_SIZE = 3, 5, 2, 4
HIDDEN = NUM_HEADS * HEAD_SIZE


class GPTAttentionPluginRemovePaddingRewritePass(PatternRewriter):
    """The documentation's second pattern: a GPTAttention plugin re-created in remove-padding mode."""

    def __init__(self):
        super().__init__('gpt_attention_plugin_remove_padding',
                         root_layer={LayerType.PLUGIN})

    def match_and_rewrite(self, layer: Layer) -> bool:
        """Re-creates a padded GPTAttention plugin over a packed qkv; True when it did."""
        if layer.as_layer().type != LayerType.PLUGIN or \
                layer.as_layer().plugin.plugin_namespace != 'gwr' or \
                layer.as_layer().plugin.plugin_type != 'GPTAttention':
            return False

        # Retrieve the FLayerInfo
        flayer = FLayerInfoMemo.instance().get(layer.name)
        assert flayer
        # Although the layer is a plugin, which is a black box, we get some high-level input information from the FLayerInfo.
        tensor_input: Tensor = flayer.get_input('qkv')
        if tensor_input.shape[0] == 1:  # Already in remove-padding mode
            return False

        # Some information could be passed in from external
        assert self.args is not None, "args should be passed in from RewritePatternManager.rewrite()"
        batch_size, in_len, hidden_size = self.args['batch_size'], self.args['in_len'], self.args['hidden_size']

        with net_guard(layer.network):
            new_inputs = flayer.clone_inputs()

            # Step 1: Create new inputs and replace the original arglist.
            # gwr: tensor names are unique in a network and the padded 'qkv' is
            # still one of its inputs, so the packed one is 'packed_qkv'.
            input = Tensor(
                name='packed_qkv',
                dtype=gwr.float32,
                shape=(1, batch_size * in_len, hidden_size),
            )
            new_inputs['qkv'] = input
            new_inputs['remove_padding'] = 1  # gwr: an argument of the plugin, not a build option
            # gwr: packed, the batch rows run together; the plugin is told the
            # length of each (TensorRT-LLM's context lengths) unless a mask does.
            if new_inputs.get('attention_mask') is None:
                new_inputs['attention_mask'] = constant(np.full(batch_size, in_len, dtype=np.int32))

            # Step 2: Create a new plugin instance.
            context, present = gpt_attention(**new_inputs)
            # gwr: the layers reading the context expect it padded, (batch, in_len, hidden).
            context = reshape(context, (batch_size, in_len, context.shape[-1]))
            new_outs = [context, present]

            # Step 3: Deprive all the users of the old plugin instance.
            flayer.replace_outputs_uses_with(layer.network, new_outs)

            # Step 4: Remove the old plugin instance.
            layer.mark_as_removed()

        return True


check = Checks()


def main():
    """Builds, rewrites and checks; returns the exit status."""
    net = gwr.Network('gpt_attention')
    with net_guard(net):
        qkv = Tensor(name='qkv', dtype=gwr.float32, shape=(BATCH, IN_LEN, 3 * HIDDEN))
        context, _present = gpt_attention(qkv=qkv, num_heads=NUM_HEADS, head_size=HEAD_SIZE)
    context.name = 'context'
    net.mark_output(context)

    plugin = context.get_parent()
    flayer = FLayerInfoMemo.instance().get(plugin.name, net)
    check(flayer is not None and flayer.get_input('qkv') is qkv, 'before: the plugin has an FLayerInfo reading qkv')
    print('before:', plugin, flayer.raw_inputs if flayer else None)

    rng = np.random.default_rng(15)
    qkv_value = rng.standard_normal((BATCH, IN_LEN, 3 * HIDDEN)).astype(np.float32)
    expected = gpt_attention_reference(qkv_value, NUM_HEADS, HEAD_SIZE)
    before = gwr.Session(net).run({'qkv': qkv_value})['context'].copy()
    check(before.shape == expected.shape and np.allclose(before, expected, rtol=1e-5, atol=1e-5),
          'before: the context matches numpy')

    manager = RewritePatternManager()
    manager.add('gpt_attention_plugin_remove_padding', GPTAttentionPluginRemovePaddingRewritePass(), 1)
    manager.trace(sys.stdout)
    manager.rewrite(net, args={'batch_size': BATCH, 'in_len': IN_LEN, 'hidden_size': 3 * HIDDEN})

    out = net.outputs[0]
    plugins = [l for l in net.layers if l.is_alive and not l.is_removed and l.op == 'GPTAttention']
    check(len(plugins) == 1, 'after: one GPTAttention plugin')
    new_plugin = plugins[0]
    new_flayer = FLayerInfoMemo.instance().get(new_plugin.name, net)
    packed = net.get_tensor('packed_qkv')
    check(new_flayer is not None and new_flayer.get_input('qkv') is packed and packed.is_input,
          "after: the new plugin's FLayerInfo reads the new input 'packed_qkv'")
    check(packed is not None and packed.shape == (1, BATCH * IN_LEN, 3 * HIDDEN), 'after: packed_qkv is (1, %d, %d)'
          % (BATCH * IN_LEN, 3 * HIDDEN))
    check(new_plugin.get_attr('remove_padding') == 1 and new_flayer.raw_inputs.get('remove_padding') == 1,
          'after: remove_padding is set on the plugin and in its FLayerInfo')
    check(new_plugin.get_inputs(0)[0] is packed, "after: the plugin's qkv input is packed_qkv")
    check(out.shape == (BATCH, IN_LEN, HIDDEN), 'after: the output is still (batch, in_len, hidden)')
    net.verify()

    feeds = {'qkv': qkv_value, 'packed_qkv': qkv_value.reshape(1, BATCH * IN_LEN, 3 * HIDDEN)}
    after = gwr.Session(net).run(feeds)[out.name]
    check(np.allclose(after, expected, rtol=1e-5, atol=1e-5), 'after: the packed network gives the same context')

    # A second run finds the plugin in remove-padding mode already.
    nlayers = net.num_layers
    manager.rewrite(net, args={'batch_size': BATCH, 'in_len': IN_LEN, 'hidden_size': 3 * HIDDEN})
    check(net.num_layers == nlayers, 'a second run changes nothing')
    net.close()
    return check.status()


if __name__ == '__main__':
    sys.exit(main())
