#!/usr/bin/python3
"""make_opt_models.py OUTDIR: the small models of the optimizer benchmark
(bench/run_optimize_bench.sh), written as exporters write them, with seeded
random weights (numpy, seed 13):

  cnn_bn.onnx        opset 13: a ResNet-style stack with BatchNormalization
                     left in: stem Conv+BN+Relu, two residual blocks
                     (Conv+BN+Relu, Conv+BN, Add, Relu), a ConvTranspose+BN+Relu
                     head; x [1, 3, 32, 32]
  mbv3_op13.onnx     opset 13: a MobileNetV3-style stack: 1x1 expand Conv,
  mbv3_op14.onnx     opset 14: HardSwish as x * Clip(x + 3, 0, 6) / 6 (Clip with
                     min/max inputs), depthwise 3x3 Conv, HardSwish,
                     squeeze-excite (GlobalAveragePool, Conv 1x1, Relu, Conv 1x1,
                     HardSigmoid as Clip(x + 3, 0, 6) / 6, Mul), 1x1 project
                     Conv, residual Add; three blocks; x [1, 16, 32, 32]
  xformer.onnx       opset 17: two pre-norm transformer blocks on 2-D tokens
                     [64, 128]: the exporters' LayerNorm chain
                     (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add), single
                     -head attention, GELU in erf form
                     (x * 0.5 * (1 + Erf(x / sqrt(2)))), MatMul+Add linears.

the models of the executor benchmark (bench/run_exec_bench.sh, issue 14),
larger, so that a run is not trivially short:
  mbv3_bn.onnx       opset 14: a MobileNetV3-Small-style classifier as PyTorch
                     exports it with BatchNormalization left in, x [1, 3, 224,
                     224]: stem Conv+BN+HardSwish, eleven inverted-residual
                     blocks (1x1 expand Conv+BN+act, depthwise 3x3/5x5
                     Conv+BN+act, squeeze-excite with HardSigmoid, 1x1
                     project Conv+BN, residual Add), Conv+BN+HardSwish,
                     GlobalAveragePool, Flatten, Gemm+HardSwish, Gemm to 1000
  lstm_bench.onnx    lstm with T 128, input 128, hidden 256
  gpt_dec_s1.onnx    gpt_decoder with 6 blocks, hidden 512, 8 heads, at
  gpt_dec_s128.onnx  sequence 1 (a decode step) and 128 (the same weights)

and the models of the optimizer's proof sweep (tests/cli/test_optimize_models.sh,
which names them on the command line; each is described at its function):
  gpt_decoder.onnx, gpt_decoder_where.onnx, resnet_bn.onnx, deconv_bn.onnx, lstm.onnx, mbv3_forms.onnx

usage: make_opt_models.py OUTDIR [NAME...]   (NAME: a model above without
.onnx; none: the four of the benchmark). Every model is built from its own
generator seeded with 13, so each file is the same whatever else is made.

Needs python3-onnx and numpy (Debian's /usr/bin/python3).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(13)  # reseeded per model by main


class G:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def name(self, p):
        self.n += 1
        return f"{p}_{self.n}"

    def const(self, arr, p="w"):
        nm = self.name(p)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def op(self, t, ins, p=None, **attrs):
        out = self.name(p or t.lower())
        self.nodes.append(helper.make_node(t, ins, [out], name=out + "_n", **attrs))
        return out

    def constant(self, arr, p="k"):
        """A Constant node, as the PyTorch exporter writes shapes."""
        out = self.name(p)
        self.nodes.append(helper.make_node("Constant", [], [out], name=out + "_n",
                                           value=numpy_helper.from_array(np.asarray(arr))))
        return out

    def save(self, path, x_shape, y, y_shape, opset, outputs=None):
        outs = outputs or [(y, y_shape)]
        g = helper.make_graph(self.nodes, os.path.basename(path).split(".")[0],
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh) for n, sh in outs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="gwr-bench")
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save(m, path)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def conv(g, x, cin, cout, k, stride=1, group=1, bias=True):
    w = g.const(f32(cout, cin // group, k, k, scale=(2.0 / (cin // group * k * k)) ** 0.5))
    ins = [x, w] + ([g.const(f32(cout, scale=0.1))] if bias else [])
    return g.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride],
                pads=[k // 2] * 4, group=group)


def bn(g, x, c):
    return g.op("BatchNormalization",
                [x, g.const((1 + 0.1 * rng.standard_normal(c)).astype(np.float32)),
                 g.const(f32(c, scale=0.1)), g.const(f32(c, scale=0.1)),
                 g.const((0.5 + rng.random(c)).astype(np.float32))], epsilon=1e-5)


def cnn_bn(path):
    g = G()
    h = g.op("Relu", [bn(g, conv(g, "x", 3, 16, 3, bias=False), 16)])
    for _ in range(2):
        a = g.op("Relu", [bn(g, conv(g, h, 16, 16, 3, bias=False), 16)])
        b = bn(g, conv(g, a, 16, 16, 3, bias=False), 16)
        h = g.op("Relu", [g.op("Add", [b, h])])
    w = g.const(f32(16, 8, 2, 2, scale=0.3))  # ConvTranspose weights [C_in, C_out, k, k]
    t = g.op("ConvTranspose", [h, w, g.const(f32(8, scale=0.1))], kernel_shape=[2, 2], strides=[2, 2])
    y = g.op("Relu", [bn(g, t, 8)])
    g.save(path, [1, 3, 32, 32], y, [1, 8, 64, 64], 13)


def mbv3(path, opset):
    g = G()
    three, zero, six = (g.const(np.array(v, np.float32), "c") for v in (3.0, 0.0, 6.0))
    sixd = g.const(np.array(6.0, np.float32), "c")

    def hard_sigmoid(x):  # Clip(x + 3, 0, 6) / 6
        return g.op("Div", [g.op("Clip", [g.op("Add", [x, three]), zero, six]), sixd])

    def hard_swish(x):  # x * Clip(x + 3, 0, 6) / 6
        return g.op("Div", [g.op("Mul", [x, g.op("Clip", [g.op("Add", [x, three]), zero, six])]), sixd])

    h = "x"
    for _ in range(3):
        e = hard_swish(conv(g, h, 16, 64, 1))
        d = hard_swish(conv(g, e, 64, 64, 3, group=64))
        s = g.op("GlobalAveragePool", [d])
        s = g.op("Relu", [conv(g, s, 64, 16, 1)])
        s = hard_sigmoid(conv(g, s, 16, 64, 1))
        d = g.op("Mul", [d, s])
        h = g.op("Add", [conv(g, d, 64, 16, 1), h])
    g.save(path, [1, 16, 32, 32], h, [1, 16, 32, 32], opset)


def mbv3_forms(path):
    """opset 14: the other ways exporters write MobileNetV3's activations,
    one block (as mbv3's, x [1, 16, 32, 32]) each:
      A  PyTorch at opset 13 and below: hardswish as x * HardSigmoid(x;
         alpha 1/6, beta 0.5), the squeeze-excite gate a HardSigmoid node
         (14 nodes: expand Conv + 2, depthwise Conv + 2, GAP, Conv, Relu,
         Conv, HardSigmoid, Mul, project Conv, residual Add);
      B  the Mul-by-1/6 forms: x * Clip(x + 3, 0, 6) * (1/6) and
         Clip(x + 3, 0, 6) * (1/6) (20 nodes, as mbv3's blocks);
      C  PyTorch at opset 14: native HardSwish and HardSigmoid (12 nodes)."""
    g = G()
    three, zero, six = (g.const(np.array(v, np.float32), "c") for v in (3.0, 0.0, 6.0))
    sixth = g.const(np.array(1.0 / 6.0, np.float32), "c")

    def act(form, x, gate):
        if form == "A":
            hs = g.op("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)
            return hs if gate else g.op("Mul", [x, hs])
        if form == "B":
            c = g.op("Clip", [g.op("Add", [x, three]), zero, six])
            return g.op("Mul", [c, sixth]) if gate else g.op("Mul", [g.op("Mul", [x, c]), sixth])
        return g.op("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5) if gate else g.op("HardSwish", [x])

    h = "x"
    for form in "ABC":
        e = act(form, conv(g, h, 16, 64, 1), False)
        d = act(form, conv(g, e, 64, 64, 3, group=64), False)
        s = g.op("Relu", [conv(g, g.op("GlobalAveragePool", [d]), 64, 16, 1)])
        d = g.op("Mul", [d, act(form, conv(g, s, 16, 64, 1), True)])
        h = g.op("Add", [conv(g, d, 64, 16, 1), h])
    g.save(path, [1, 16, 32, 32], h, [1, 16, 32, 32], 14)


def xformer(path):
    g = G()
    D, F = 128, 512
    eps, two = g.const(np.array(1e-5, np.float32), "c"), g.const(np.array(2.0, np.float32), "c")
    half, one = g.const(np.array(0.5, np.float32), "c"), g.const(np.array(1.0, np.float32), "c")
    sqrt2 = g.const(np.array(np.sqrt(2.0), np.float32), "c")
    scale = g.const(np.array(np.sqrt(D), np.float32), "c")

    def layer_norm(x):
        m = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
        c = g.op("Sub", [x, m])
        v = g.op("ReduceMean", [g.op("Pow", [c, two])], axes=[-1], keepdims=1)
        n = g.op("Div", [c, g.op("Sqrt", [g.op("Add", [v, eps])])])
        n = g.op("Mul", [n, g.const((1 + 0.1 * rng.standard_normal(D)).astype(np.float32), "gamma")])
        return g.op("Add", [n, g.const(f32(D, scale=0.1), "beta")])

    def linear(x, i, o):
        return g.op("Add", [g.op("MatMul", [x, g.const(f32(i, o, scale=i ** -0.5))]), g.const(f32(o, scale=0.1), "b")])

    def gelu(x):  # x * 0.5 * (1 + erf(x / sqrt(2)))
        e = g.op("Erf", [g.op("Div", [x, sqrt2])])
        return g.op("Mul", [g.op("Mul", [x, half]), g.op("Add", [e, one])])

    h = "x"
    for _ in range(2):
        n = layer_norm(h)
        q, k, v = linear(n, D, D), linear(n, D, D), linear(n, D, D)
        s = g.op("Div", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[1, 0])]), scale])
        a = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
        h = g.op("Add", [h, linear(a, D, D)])
        n = layer_norm(h)
        h = g.op("Add", [h, linear(gelu(linear(n, D, F)), F, D)])
    g.save(path, [64, D], h, [64, D], 17)


def layer_norm(g, x, d, eps, two):
    """The exporters' LayerNorm chain, 9 nodes."""
    m = g.op("ReduceMean", [x], axes=[-1], keepdims=1)
    c = g.op("Sub", [x, m])
    v = g.op("ReduceMean", [g.op("Pow", [c, two])], axes=[-1], keepdims=1)
    n = g.op("Div", [c, g.op("Sqrt", [g.op("Add", [v, eps])])])
    n = g.op("Mul", [n, g.const((1 + 0.1 * rng.standard_normal(d)).astype(np.float32), "gamma")])
    return g.op("Add", [n, g.const(f32(d, scale=0.1), "beta")])


def gpt_decoder(path, blocks=2, T=16, D=64, H=4, where=False):
    """opset 17: a GPT decoder as PyTorch exports it, x [1, T, D]: per block
    pre-LN (LayerNorm chain, 9 nodes), q/k/v as three MatMul+Add on the LN
    output, heads split by Reshape [1,T,H,dh] (Constant shape) + Transpose
    (k straight to [0,2,3,1]), scores MatMul, Div by sqrt(dh), Add of a
    constant causal mask [1,1,T,T] (0 / float32 min), Softmax, MatMul with v,
    Transpose + Reshape back, output projection MatMul+Add, residual Add;
    then LN, MatMul+Add to 4D, GELU in erf form (5 nodes), MatMul+Add,
    residual Add: 50 nodes a block; a final LN (9). where=True
    (gpt_decoder_where): as Hugging Face's GPT-2 writes it, the scores Mul by
    1/sqrt(dh) and the mask a Where(constant causal bool, scores, float32
    min): the same 50 nodes a block."""
    g = G()
    dh = D // H
    eps, two = g.const(np.array(1e-5, np.float32), "c"), g.const(np.array(2.0, np.float32), "c")
    half, one = g.const(np.array(0.5, np.float32), "c"), g.const(np.array(1.0, np.float32), "c")
    sqrt2 = g.const(np.array(np.sqrt(2.0), np.float32), "c")
    if not where:
        scale = g.const(np.array(np.sqrt(dh), np.float32), "c")
        mask = np.triu(np.full((T, T), np.finfo(np.float32).min, np.float32), 1).reshape(1, 1, T, T)
        mask = g.const(mask, "mask")
    else:
        causal = g.const(np.tril(np.ones((T, T), bool)).reshape(1, 1, T, T), "causal")
        lowest = g.const(np.array(np.finfo(np.float32).min, np.float32), "c")
        rscale = g.const(np.array(1.0 / np.sqrt(dh), np.float32), "c")

    def linear(x, i, o):
        return g.op("Add", [g.op("MatMul", [x, g.const(f32(i, o, scale=i ** -0.5))]), g.const(f32(o, scale=0.1), "b")])

    def heads(x, perm):
        return g.op("Transpose", [g.op("Reshape", [x, g.constant(np.array([1, T, H, dh], np.int64))])], perm=perm)

    h = "x"
    for _ in range(blocks):
        n = layer_norm(g, h, D, eps, two)
        q = heads(linear(n, D, D), [0, 2, 1, 3])
        k = heads(linear(n, D, D), [0, 2, 3, 1])
        v = heads(linear(n, D, D), [0, 2, 1, 3])
        if where:
            s = g.op("Where", [causal, g.op("Mul", [g.op("MatMul", [q, k]), rscale]), lowest])
        else:
            s = g.op("Add", [g.op("Div", [g.op("MatMul", [q, k]), scale]), mask])
        a = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
        a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.constant(np.array([1, T, D], np.int64))])
        h = g.op("Add", [h, linear(a, D, D)])
        n = layer_norm(g, h, D, eps, two)
        f = linear(n, D, 4 * D)
        e = g.op("Erf", [g.op("Div", [f, sqrt2])])
        f = g.op("Mul", [g.op("Mul", [f, half]), g.op("Add", [e, one])])
        h = g.op("Add", [h, linear(f, 4 * D, D)])
    y = layer_norm(g, h, D, eps, two)
    g.save(path, [1, T, D], y, [1, T, D], 17)


def resnet_bn(path):
    """opset 13: a ResNet-style classifier with BatchNormalization left in,
    x [1, 3, 32, 32]: stem Conv+BN+Relu (16 ch); a basic block
    (Conv+BN+Relu, Conv+BN, Add, Relu); a downsampling block (stride 2, 32
    ch) whose shortcut is a 1x1 Conv+BN; GlobalAveragePool, Flatten, Gemm to
    10 classes. Convs without bias, as exporters write them before BN."""
    g = G()
    h = g.op("Relu", [bn(g, conv(g, "x", 3, 16, 3, bias=False), 16)])
    a = g.op("Relu", [bn(g, conv(g, h, 16, 16, 3, bias=False), 16)])
    h = g.op("Relu", [g.op("Add", [bn(g, conv(g, a, 16, 16, 3, bias=False), 16), h])])
    a = g.op("Relu", [bn(g, conv(g, h, 16, 32, 3, stride=2, bias=False), 32)])
    a = bn(g, conv(g, a, 32, 32, 3, bias=False), 32)
    sc = bn(g, conv(g, h, 16, 32, 1, stride=2, bias=False), 32)
    h = g.op("Relu", [g.op("Add", [a, sc])])
    f = g.op("Flatten", [g.op("GlobalAveragePool", [h])], axis=1)
    y = g.op("Gemm", [f, g.const(f32(10, 32, scale=32 ** -0.5)), g.const(f32(10, scale=0.1))], transB=1)
    g.save(path, [1, 3, 32, 32], y, [1, 10], 13)


def deconv_bn(path):
    """opset 13: a segmentation-style decoder head, x [1, 32, 8, 8]:
    Conv+BN+Relu, then two upsampling stages ConvTranspose(k2, s2, with
    bias)+BN+Relu (32->16->8 ch), and a 1x1 Conv classifier (4 classes)."""
    g = G()
    h = g.op("Relu", [bn(g, conv(g, "x", 32, 32, 3, bias=False), 32)])
    for cin, cout in ((32, 16), (16, 8)):
        w = g.const(f32(cin, cout, 2, 2, scale=(1.0 / cin) ** 0.5))  # [C_in, C_out, k, k]
        t = g.op("ConvTranspose", [h, w, g.const(f32(cout, scale=0.1))], kernel_shape=[2, 2], strides=[2, 2])
        h = g.op("Relu", [bn(g, t, cout)])
    y = conv(g, h, 8, 4, 1)
    g.save(path, [1, 32, 8, 8], y, [1, 4, 32, 32], 13)


def lstm(path, T=8, I=16, Hd=32):
    """opset 13: an LSTM tagger as PyTorch exports it, x [T, 1, I]: one
    forward LSTM (constant W, R, B; hidden Hd) whose Y [T, 1, 1, Hd] is
    Squeezed (axes as a Constant input) to [T, 1, Hd], Reshaped to [T, Hd],
    MatMul+Add, Relu, MatMul+Add to 5 tags; Y_h [1, 1, Hd] is a second
    output."""
    g = G()
    s = Hd ** -0.5
    w = g.const(f32(1, 4 * Hd, I, scale=s))
    r = g.const(f32(1, 4 * Hd, Hd, scale=s))
    b = g.const(f32(1, 8 * Hd, scale=0.1))
    y, yh = g.name("lstm_y"), g.name("lstm_h")
    g.nodes.append(helper.make_node("LSTM", ["x", w, r, b], [y, yh], name=y + "_n", hidden_size=Hd))
    q = g.op("Squeeze", [y, g.constant(np.array([1], np.int64))])
    q = g.op("Reshape", [q, g.constant(np.array([T, Hd], np.int64))])
    q = g.op("Add", [g.op("MatMul", [q, g.const(f32(Hd, 64, scale=s))]), g.const(f32(64, scale=0.1), "b")])
    q = g.op("Relu", [q])
    q = g.op("Add", [g.op("MatMul", [q, g.const(f32(64, 5, scale=0.125))]), g.const(f32(5, scale=0.1), "b")])
    g.save(path, [T, 1, I], None, None, 13, outputs=[(q, [T, 5]), (yh, [1, 1, Hd])])


def mbv3_bn(path):
    g = G()

    def cba(x, cin, cout, k, stride=1, group=1, act="Relu"):
        h = bn(g, conv(g, x, cin, cout, k, stride, group, bias=False), cout)
        return g.op(act, [h]) if act else h

    def se(x, c):
        s = g.op("GlobalAveragePool", [x])
        s = g.op("Relu", [conv(g, s, c, c // 4, 1)])
        s = g.op("HardSigmoid", [conv(g, s, c // 4, c, 1)], alpha=1.0 / 6.0, beta=0.5)
        return g.op("Mul", [x, s])

    h = cba("x", 3, 16, 3, 2, act="HardSwish")
    cin = 16
    # expand, out, kernel, stride, squeeze-excite, activation (MobileNetV3-Small)
    for e, c, k, st, use_se, act in ((16, 16, 3, 2, 1, "Relu"), (72, 24, 3, 2, 0, "Relu"),
                                     (88, 24, 3, 1, 0, "Relu"), (96, 40, 5, 2, 1, "HardSwish"),
                                     (240, 40, 5, 1, 1, "HardSwish"), (240, 40, 5, 1, 1, "HardSwish"),
                                     (120, 48, 5, 1, 1, "HardSwish"), (144, 48, 5, 1, 1, "HardSwish"),
                                     (288, 96, 5, 2, 1, "HardSwish"), (576, 96, 5, 1, 1, "HardSwish"),
                                     (576, 96, 5, 1, 1, "HardSwish")):
        x = h if e == cin else cba(h, cin, e, 1, act=act)
        x = cba(x, e, e, k, st, group=e, act=act)
        if use_se:
            x = se(x, e)
        x = cba(x, e, c, 1, act=None)
        h = g.op("Add", [x, h]) if st == 1 and cin == c else x
        cin = c
    h = cba(h, 96, 576, 1, act="HardSwish")
    f = g.op("Flatten", [g.op("GlobalAveragePool", [h])], axis=1)
    f = g.op("HardSwish", [g.op("Gemm", [f, g.const(f32(1024, 576, scale=576 ** -0.5)), g.const(f32(1024, scale=0.1))],
                                transB=1)])
    y = g.op("Gemm", [f, g.const(f32(1000, 1024, scale=1024 ** -0.5)), g.const(f32(1000, scale=0.1))], transB=1)
    g.save(path, [1, 3, 224, 224], y, [1, 1000], 14)


MODELS = {
    "cnn_bn": cnn_bn,
    "mbv3_op13": lambda p: mbv3(p, 13),
    "mbv3_op14": lambda p: mbv3(p, 14),
    "mbv3_forms": mbv3_forms,
    "xformer": xformer,
    "gpt_decoder": gpt_decoder,
    "gpt_decoder_where": lambda p: gpt_decoder(p, where=True),
    "resnet_bn": resnet_bn,
    "deconv_bn": deconv_bn,
    "lstm": lstm,
    "mbv3_bn": mbv3_bn,
    "lstm_bench": lambda p: lstm(p, T=128, I=128, Hd=256),
    "gpt_dec_s1": lambda p: gpt_decoder(p, blocks=6, T=1, D=512, H=8),
    "gpt_dec_s128": lambda p: gpt_decoder(p, blocks=6, T=128, D=512, H=8),
}


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    names = sys.argv[2:] or ["cnn_bn", "mbv3_op13", "mbv3_op14", "xformer"]
    os.makedirs(out, exist_ok=True)
    for nm in names:
        if nm not in MODELS:
            sys.exit(f"make_opt_models.py: no model '{nm}' (known: {', '.join(MODELS)})")
        rng = np.random.default_rng(13)
        MODELS[nm](f"{out}/{nm}.onnx")
