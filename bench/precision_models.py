"""Generated float32 models for `gwr precision` (bench/precision.py and
tests/cli/precision_ort.py): a CNN, a transformer block whose paths go
through LayerNormalization, Softmax, Range and Shape arithmetic, and a model
with an If whose branches read the enclosing graph.

    make(name) -> (onnx.ModelProto, {input name: numpy array})   (seeded)
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NAMES = ("cnn", "transformer", "ifbody")  # and "mlp", for --auto


def _w(rng, name, shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def cnn(rng):
    inits = [
        _w(rng, "c1_w", (8, 3, 3, 3)), _w(rng, "c1_b", (8,), 0.1),
        numpy_helper.from_array((1 + 0.1 * rng.standard_normal(8)).astype(np.float32), "bn_s"),
        _w(rng, "bn_b", (8,), 0.1), _w(rng, "bn_m", (8,), 0.1),
        numpy_helper.from_array((1 + 0.2 * rng.random(8)).astype(np.float32), "bn_v"),
        _w(rng, "c2_w", (16, 8, 3, 3)), _w(rng, "c2_b", (16,), 0.1),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "rs_scales"),
        _w(rng, "fc_w", (10, 16)), _w(rng, "fc_b", (10,), 0.1),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "c1_w", "c1_b"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], name="bn1"),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Resize", ["p1", "", "rs_scales"], ["up"], mode="nearest", name="resize"),
        helper.make_node("Conv", ["up", "c2_w", "c2_b"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1, name="softmax"),
    ]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [2, 10]),
                           helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return m, {"x": rng.uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)}


def transformer(rng):
    d, h, f = 32, 4, 64
    dh = d // h
    inits = [
        _w(rng, "ln_s", (d,), 0.1), _w(rng, "ln_b", (d,), 0.1),
        _w(rng, "wq", (d, d)), _w(rng, "wk", (d, d)), _w(rng, "wv", (d, d)), _w(rng, "wo", (d, d)),
        _w(rng, "w1", (d, f)), _w(rng, "b1", (f,), 0.1), _w(rng, "w2", (f, d)),
        _w(rng, "pos_w", (d,), 0.05),
        numpy_helper.from_array(np.array([0, h, dh], np.int64), "qkv_shape_tail"),
        numpy_helper.from_array(np.array([0, 0, d], np.int64), "merge_shape"),
        numpy_helper.from_array(np.array(1, np.int64), "one_i"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero_f"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one_f"),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(dh), np.float32), "scale"),
        numpy_helper.from_array(np.array(np.sqrt(0.5), np.float32), "rsqrt2"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        numpy_helper.from_array(np.array([1], np.int64), "ax1"),
        numpy_helper.from_array(np.array([0], np.int64), "ax0"),
    ]
    N = helper.make_node
    nodes = [
        # position term: Range over the sequence length (float), from Shape arithmetic
        N("Shape", ["x"], ["xs"], name="shape_x"),
        N("Gather", ["xs", "one_i"], ["seq"], axis=0, name="seq_len"),
        N("Cast", ["seq"], ["seq_f"], to=TensorProto.FLOAT, name="seq_float"),
        N("Range", ["zero_f", "seq_f", "one_f"], ["pos"], name="range_pos"),
        N("Unsqueeze", ["pos", "ax1"], ["pos2"], name="pos_col"),
        N("Mul", ["pos2", "pos_w"], ["pos_e"], name="pos_scale"),
        N("Add", ["x", "pos_e"], ["x0"], name="add_pos"),
        # a float fill of x's shape (ConstantOfShape's value is a dtype-typed attribute)
        N("ConstantOfShape", ["xs"], ["fill"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.25]),
          name="fill"),
        N("Add", ["x0", "fill"], ["x0f"], name="add_fill"),
        N("LayerNormalization", ["x0f", "ln_s", "ln_b"], ["ln"], axis=-1, epsilon=1e-5, name="ln1"),
        N("MatMul", ["ln", "wq"], ["q"], name="q_proj"),
        N("MatMul", ["ln", "wk"], ["k"], name="k_proj"),
        N("MatMul", ["ln", "wv"], ["v"], name="v_proj"),
        # [B, S, D] -> [B, S, H, Dh] with the shape from Shape arithmetic
        N("Shape", ["ln"], ["lns"], name="shape_ln"),
        N("Slice", ["lns", "ax0", "ax1+1"], ["lns_b"], name="batch_dim"),
        N("Concat", ["lns_b", "qkv_shape_tail"], ["qshape"], axis=0, name="qshape"),
        N("Reshape", ["q", "qshape"], ["q4"], name="q_reshape"),
        N("Reshape", ["k", "qshape"], ["k4"], name="k_reshape"),
        N("Reshape", ["v", "qshape"], ["v4"], name="v_reshape"),
        N("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3], name="q_t"),
        N("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1], name="k_t"),
        N("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3], name="v_t"),
        N("MatMul", ["qt", "kt"], ["sc"], name="scores"),
        N("Mul", ["sc", "scale"], ["scs"], name="scores_scale"),
        N("Softmax", ["scs"], ["att"], axis=-1, name="softmax"),
        N("MatMul", ["att", "vt"], ["ctx"], name="context"),
        N("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3], name="ctx_t"),
        N("Reshape", ["ctxt", "merge_shape"], ["ctx3"], name="ctx_merge"),
        N("MatMul", ["ctx3", "wo"], ["o"], name="o_proj"),
        N("Add", ["x0", "o"], ["x1"], name="residual1"),
        N("MatMul", ["x1", "w1"], ["f1"], name="ffn1"),
        N("Add", ["f1", "b1"], ["f1b"], name="ffn1_bias"),
        # Gelu as erf
        N("Mul", ["f1b", "rsqrt2"], ["g0"], name="gelu_div"),
        N("Erf", ["g0"], ["g1"], name="gelu_erf"),
        N("Add", ["g1", "one_f"], ["g2"], name="gelu_add"),
        N("Mul", ["f1b", "g2"], ["g3"], name="gelu_mul"),
        N("Mul", ["g3", "half"], ["g4"], name="gelu_half"),
        N("MatMul", ["g4", "w2"], ["f2"], name="ffn2"),
        N("Add", ["x1", "f2"], ["y"], name="residual2"),
        N("ReduceMean", ["y"], ["ym"], axes=[-1], keepdims=0, name="pool"),
    ]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "ax1+1"))
    g = helper.make_graph(nodes, "transformer",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16, d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16, d]),
                           helper.make_tensor_value_info("ym", TensorProto.FLOAT, ["batch", 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return m, {"x": rng.uniform(-1, 1, (2, 16, d)).astype(np.float32)}


def ifbody(rng):
    """An If whose branches read a tensor the enclosing graph computes (a
    converted MatMul's output): gwr keeps the If float32 whole."""
    inits = [_w(rng, "w", (8, 8)), _w(rng, "b", (8,), 0.1),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    then_g = helper.make_graph([helper.make_node("Relu", ["h"], ["t_out"], name="then_relu")], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["h"], ["e_out"], name="else_neg")], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
        helper.make_node("Add", ["m", "b"], ["h"], name="bias"),
        helper.make_node("ReduceMean", ["h"], ["hm"], keepdims=0, name="mean"),
        helper.make_node("Greater", ["hm", "zero"], ["c"], name="cond"),
        helper.make_node("If", ["c"], ["r"], then_branch=then_g, else_branch=else_g, name="branch"),
        helper.make_node("Tanh", ["r"], ["y"], name="tanh"),
    ]
    g = helper.make_graph(nodes, "ifbody", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return m, {"x": rng.uniform(-1, 1, (4, 8)).astype(np.float32)}


def mlp(rng):
    """A chain of 12 MatMul + Add + Tanh layers with an offset in the middle
    (+300, -300: values where float16's ulp is 0.25, float32's 3e-5): float16 everywhere
    misses a tolerance of 1e-3, so --auto has to search."""
    d = 64
    inits, nodes, x = [], [], "x"
    for i in range(12):
        inits += [_w(rng, f"w{i}", (d, d), 1.0 / np.sqrt(d)), _w(rng, f"b{i}", (d,), 0.1)]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"bias{i}"),
                  helper.make_node("Tanh", [f"a{i}"], [f"t{i}"], name=f"tanh{i}")]
        x = f"t{i}"
        if i == 5:
            # two constants, not one shared: onnxconverter-common's search
            # fails on a weight shared by a blocked and a converted node
            inits += [numpy_helper.from_array(np.array(300.0, np.float32), "big_up"),
                      numpy_helper.from_array(np.array(300.0, np.float32), "big_down")]
            nodes += [helper.make_node("Add", [x, "big_up"], ["up"], name="offset_up"),
                      helper.make_node("Sub", ["up", "big_down"], ["down"], name="offset_down")]
            x = "down"
    nodes.append(helper.make_node("Identity", [x], ["y"], name="out"))
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, d])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return m, {"x": rng.uniform(-1, 1, (8, d)).astype(np.float32)}


def make(name, seed=0):
    rng = np.random.default_rng(seed)
    m, feeds = {"cnn": cnn, "transformer": transformer, "ifbody": ifbody, "mlp": mlp}[name](rng)
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m, feeds
