#!/usr/bin/env python
"""Node counts on real exporters' forms (issue 22, helper onnxn): each case
builds a model with PyPI's onnx as the exporter writes it, optimizes it, and
checks the nodes left and, through passes_real.py's helpers, that every
output passes onnx.checker (full) and runs in onnxruntime with onnxruntime's
results on the original; a second optimize changes nothing.

  node_counts_real.py GWR CASE [WORKDIR]
"""
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import passes_real as pr  # noqa: E402


def inputs_of(path):
    return [i.name for i in onnx.load(path).graph.input]


def ops_of(path):
    return sorted(n.op_type for n in onnx.load(path).graph.node)


# ---- initializers listed as graph inputs (CenterFace: every weight, IR 4)

def defaults_model(path, ir):
    """ConvTranspose -> BatchNormalization, every weight an initializer that
    the graph also lists as an input (as old PyTorch exports do), plus an
    unread one (num_batches_tracked)."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 4, 2, 2)).astype(np.float32)
    c = 4
    inits = {
        "w": w,
        "scale": rng.uniform(0.5, 1.5, c).astype(np.float32),
        "bias": rng.standard_normal(c).astype(np.float32),
        "mean": rng.standard_normal(c).astype(np.float32),
        "var": rng.uniform(0.5, 2.0, c).astype(np.float32),
        "bn.num_batches_tracked": np.array(7, np.int64),
    }
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])
    listed = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
              for k, v in inits.items()]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 10, 10])
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["ct"], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["ct", "scale", "bias", "mean", "var"], ["y"])]
    g = helper.make_graph(nodes, "g", [x] + listed, [y], [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)], ir_version=ir)
    return pr.save(m, path)


def case_input_defaults(gwr, work):
    src = defaults_model(os.path.join(work, "defaults.onnx"), 4)
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 3, 5, 5)).astype(np.float32)}
    runs = [  # (options, inputs expected, BatchNormalization folded)
        (("--target", "onnx"), ["x"], True),                               # auto: fold for onnx
        (("--target", "ort"), None, False),                                # auto: onnxruntime's rule, keep
        (("--target", "gwr", "--verify"), None, False),                    # auto: sessions keep them
        (("--target", "ort", "--input-defaults", "fold"), ["x"], True),
        (("--target", "onnx", "--input-defaults", "keep"), None, False),
        (("--target", "onnx", "--disable", "fold_input_defaults"), None, False),
    ]
    for i, (args, want_inputs, folded) in enumerate(runs):
        what = "input_defaults %s" % " ".join(args)
        dst = os.path.join(work, "d%d.onnx" % i)
        if not pr.optimize(gwr, src, dst, *args):
            continue
        if "gwr" not in args:
            pr.check_output(src, dst, feeds, what)
        got = inputs_of(dst)
        if got != (want_inputs or inputs_of(src)):
            pr.fail("%s: inputs %s, expected %s" % (what, got, want_inputs or inputs_of(src)))
        if ("BatchNormalization" in ops_of(dst)) == folded:
            pr.fail("%s: BatchNormalization %s" % (what, "kept" if folded else "folded"))
        pr.second_optimize_same(gwr, src, work, args, what)
    # the report says why the pass did not run
    r = pr.optimize(gwr, src, os.path.join(work, "r.onnx"), "--target", "ort", "--report")
    if r and "fold_input_defaults" not in r.stdout + r.stderr or r and "overridable" not in r.stdout + r.stderr:
        pr.fail("--target ort --report does not say that fold_input_defaults kept the inputs overridable")
    # IR 3: every initializer had to be an input; nothing moves
    src3 = defaults_model(os.path.join(work, "defaults3.onnx"), 3)
    dst = os.path.join(work, "d3.onnx")
    if pr.optimize(gwr, src3, dst, "--target", "onnx"):
        pr.check_output(src3, dst, feeds, "IR 3 --target onnx")
        if inputs_of(dst) != inputs_of(src3):
            pr.fail("IR 3: inputs %s, expected %s" % (inputs_of(dst), inputs_of(src3)))
    # an input that is also a graph output stays one
    m = onnx.load(src)
    m.graph.output.append(helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4]))
    src_o = pr.save(m, os.path.join(work, "defaults_out.onnx"))
    dst = os.path.join(work, "do.onnx")
    if pr.optimize(gwr, src_o, dst, "--target", "onnx"):
        pr.check_output(src_o, dst, feeds, "defaulted input that is an output")
        if "bias" not in inputs_of(dst):
            pr.fail("an input that is also a graph output was folded")


# ---- x.view(x.size(0), x.size(1), ...) on dims no one knows: a Reshape
# entry that is the reshaped tensor's own dim at the same place is a 0 (copy)

def dims_of(src_name, idx, tag, opset):
    """Shape(src) -> Gather(idx) -> Unsqueeze: one entry of a Reshape target."""
    nodes = [helper.make_node("Shape", [src_name], [tag + "_s"]),
             pr.const(tag + "_i", np.array(idx, np.int64)),
             helper.make_node("Gather", [tag + "_s", tag + "_i"], [tag + "_g"], axis=0)]
    if opset >= 13:
        return nodes + [pr.const(tag + "_ax", np.array([0], np.int64)),
                        helper.make_node("Unsqueeze", [tag + "_g", tag + "_ax"], [tag + "_u"])]
    return nodes + [helper.make_node("Unsqueeze", [tag + "_g"], [tag + "_u"], axes=[0])]


def view_model(path, via, other, allowzero=False):
    """y = Reshape(t, [s.shape[0], s.shape[1], -1]) with t = Relu(x) (via
    relu), MatMul(x, W) (via matmul) or MatMul(x, B) with a batched B (via
    bmm: t's dim 0 need not be x's), s = t (other False) or an unrelated
    input z of the same dims (other True). Two entries no one knows beside a
    -1: only copies (0) make it constant."""
    opset = 14 if allowzero else 11
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [None, None, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None, 4])
    nodes = []
    ins = [x]
    if via == "relu":
        nodes.append(helper.make_node("Relu", ["x"], ["t"]))
    elif via == "bmm":  # B's batch dim broadcasts: t's dim 0 need not be x's
        ins.append(helper.make_tensor_value_info("B", TensorProto.FLOAT, [None, 4, 4]))
        nodes.append(helper.make_node("MatMul", ["x", "B"], ["t"]))
    else:
        nodes += [pr.const("W", np.arange(16, dtype=np.float32).reshape(4, 4) / 16),
                  helper.make_node("MatMul", ["x", "W"], ["t"])]
    src = "z" if other else ("x" if via in ("matmul", "bmm") else "t")
    nodes += dims_of(src, 0, "a", opset) + dims_of(src, 1, "b", opset)
    nodes += [pr.const("k", np.array([-1], np.int64)),
              helper.make_node("Concat", ["a_u", "b_u", "k"], ["shape"], axis=0)]
    kw = {"allowzero": 1} if allowzero else {}
    nodes.append(helper.make_node("Reshape", ["t", "shape"], ["y"], **kw))
    ins += [z] if other else []
    return pr.save(pr.model(nodes, ins, [y], opset=opset), path)


def case_reshape_own_dims(gwr, work):
    rng = np.random.default_rng(3)
    for via, other, allowzero, want in (("relu", False, False, 2), ("matmul", False, False, 2),
                                        ("relu", True, False, None), ("relu", False, True, None),
                                        ("bmm", False, False, None)):
        what = "reshape_own_dims via %s%s%s" % (via, " of another input" if other else "",
                                              " allowzero" if allowzero else "")
        src = view_model(os.path.join(work, "view.onnx"), via, other, allowzero)
        feeds = []
        for n, m in ((2, 3), (5, 1)):
            f = {"x": rng.standard_normal((n, m, 4)).astype(np.float32)}
            if other:
                f["z"] = rng.standard_normal((n, m, 3)).astype(np.float32)
            if via == "bmm":
                f["B"] = rng.standard_normal((n, 4, 4)).astype(np.float32)
            feeds.append(f)
        before = pr.count_nodes(src)
        for t in ("onnx", "ort"):
            dst = os.path.join(work, "view_%s.onnx" % t)
            if not pr.optimize(gwr, src, dst, "--target", t):
                continue
            pr.check_output(src, dst, feeds, "%s --target %s" % (what, t))
            got = pr.count_nodes(dst)
            if want is not None and got != want:
                pr.fail("%s --target %s: %d nodes, expected %d (%s)" % (what, t, got, want, ops_of(dst)))
            if want is None and "Shape" not in ops_of(dst):
                pr.fail("%s --target %s: the Shape chain was folded (%d -> %d nodes)" % (what, t, before, got))
            pr.second_optimize_same(gwr, src, work, ("--target", t), what)


def case_reshape_same_symbol(gwr, work):
    """Reshape(z, [x.shape[0], -1]): z's dim 0 is x's when both are the
    symbol 'batch' (a dim_param names one value in a model): [0, -1]; with
    z's dim 0 another symbol, the Shape chain stays."""
    rng = np.random.default_rng(4)
    for zsym, want in (("batch", 1), ("other", None)):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
        z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [zsym, 3, 2])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [zsym, 6])
        nodes = dims_of("x", 0, "a", 11) + [pr.const("k", np.array([-1], np.int64)),
                                            helper.make_node("Concat", ["a_u", "k"], ["shape"], axis=0),
                                            helper.make_node("Reshape", ["z", "shape"], ["y"])]
        src = pr.save(pr.model(nodes, [x, z], [y], opset=11), os.path.join(work, "sym_%s.onnx" % zsym))
        feeds = [{"x": rng.standard_normal((n, 4)).astype(np.float32),
                  "z": rng.standard_normal((n, 3, 2)).astype(np.float32)} for n in (1, 3)]
        what = "reshape_same_symbol z[%s]" % zsym
        for t in ("onnx", "ort"):
            dst = os.path.join(work, "sym_%s_%s.onnx" % (zsym, t))
            if not pr.optimize(gwr, src, dst, "--target", t):
                continue
            pr.check_output(src, dst, feeds, "%s --target %s" % (what, t))
            got = pr.count_nodes(dst)
            if want is not None and got != want:
                pr.fail("%s --target %s: %d nodes, expected %d (%s)" % (what, t, got, want, ops_of(dst)))
            if want is None and "Shape" not in ops_of(dst):
                pr.fail("%s --target %s: the Shape chain was folded" % (what, t))
            pr.second_optimize_same(gwr, src, work, ("--target", t), what)


# ---- Slices: YOLOX's Focus (Slice of Slice on other axes) and YOLOv8's
# x[:, :2], x[:, 2:4] (Slices cutting one axis: a Split)

def slice_node(x, y, tag, st, en, ax, sp=None):
    ins = [x, tag + "_s", tag + "_e", tag + "_a"] + ([tag + "_p"] if sp is not None else [])
    consts = [pr.const(tag + "_s", np.array(st, np.int64)), pr.const(tag + "_e", np.array(en, np.int64)),
              pr.const(tag + "_a", np.array(ax, np.int64))]
    if sp is not None:
        consts.append(pr.const(tag + "_p", np.array(sp, np.int64)))
    return consts + [helper.make_node("Slice", ins, [y])]


def case_slices(gwr, work):
    big = pr.INT64_MAX
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 8, 6])
    models = {}
    # Focus: four Slices of two, each reading a shared one: 6 Slices -> 4
    nodes = slice_node("x", "r0", "r0", [0], [big], [2], [2]) + slice_node("x", "r1", "r1", [1], [big], [2], [2])
    nodes += slice_node("r0", "a", "a", [0], [big], [3], [2]) + slice_node("r0", "b", "b", [1], [big], [3], [2])
    nodes += slice_node("r1", "c", "c", [0], [big], [3], [2]) + slice_node("r1", "d", "d", [1], [big], [3], [2])
    nodes.append(helper.make_node("Concat", ["a", "c", "b", "d"], ["y"], axis=1))
    models["focus"] = (nodes, 5, [12, 4, 3])
    # the same axis twice: not composed
    nodes = slice_node("x", "r0", "r0", [0], [big], [2], [2]) + slice_node("r0", "y", "a", [1], [big], [-2], [2])
    models["same_axis"] = (nodes, 2, [3, 2, 6])
    # x[:, :1], x[:, 1:3] of axis 1 (extent 3; the second end past it): one Split
    nodes = slice_node("x", "p", "p", [0], [1], [1]) + slice_node("x", "q", "q", [1], [big], [-3])
    nodes += [helper.make_node("ReduceSum", ["q"], ["qs"], axes=[1], keepdims=1),
              helper.make_node("Add", ["p", "qs"], ["y"])]
    models["split"] = (nodes, 3, [1, 8, 6])
    # a gap ([0, 1) and [2, 3)): not a Split
    nodes = slice_node("x", "p", "p", [0], [1], [1]) + slice_node("x", "q", "q", [2], [3], [1])
    nodes.append(helper.make_node("Add", ["p", "q"], ["y"]))
    models["gap"] = (nodes, 3, [1, 8, 6])
    # steps of 2: not a Split
    nodes = slice_node("x", "p", "p", [0], [4], [2], [2]) + slice_node("x", "q", "q", [4], [6], [2])
    nodes.append(helper.make_node("Add", ["p", "q"], ["y"]))
    models["step"] = (nodes, 3, [3, 2, 6])
    slice_cases(gwr, work, x, models)
    # x[:, :1] in both branches of an If, x[:, 1:] in the main graph: the
    # parts are in different graphs, so no Split (this failed the optimize)
    def branch(tag):
        out = helper.make_tensor_value_info(tag + "_o", TensorProto.FLOAT, ["n", 1, 8, 6])
        return helper.make_graph(slice_node("x", tag + "_o", tag, [0], [1], [1]), tag, [], [out])
    nodes = [helper.make_node("If", ["c"], ["p"], then_branch=branch("t"), else_branch=branch("e"))]
    nodes += slice_node("x", "q", "q", [1], [3], [1])
    nodes += [helper.make_node("ReduceSum", ["q"], ["qs"], axes=[1], keepdims=1),
              helper.make_node("Add", ["p", "qs"], ["y"])]
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1, 8, 6])
    src = pr.save(pr.model(nodes, [x, c], [y], opset=11), os.path.join(work, "slices_if.onnx"))
    rng = np.random.default_rng(6)
    feeds = [{"x": rng.standard_normal((2, 3, 8, 6)).astype(np.float32), "c": np.array(v)} for v in (True, False)]
    for t in ("onnx", "ort"):
        dst = os.path.join(work, "slices_if_%s.onnx" % t)
        if pr.optimize(gwr, src, dst, "--target", t):
            pr.check_output(src, dst, feeds, "slices in an If and the main graph --target %s" % t)


def slice_cases(gwr, work, x, models):
    rng = np.random.default_rng(5)
    feeds = [{"x": rng.standard_normal((n, 3, 8, 6)).astype(np.float32)} for n in (1, 2)]
    for name, (nodes, want, dims) in models.items():
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"] + dims)
        src = pr.save(pr.model(nodes, [x], [y], opset=11), os.path.join(work, "slices_%s.onnx" % name))
        for t in ("onnx", "ort"):
            dst = os.path.join(work, "slices_%s_%s.onnx" % (name, t))
            what = "slices %s --target %s" % (name, t)
            if not pr.optimize(gwr, src, dst, "--target", t):
                continue
            pr.check_output(src, dst, feeds, what)
            got = pr.count_nodes(dst)
            if got != want:
                pr.fail("%s: %d nodes, expected %d (%s)" % (what, got, want, ops_of(dst)))
            pr.second_optimize_same(gwr, src, work, ("--target", t), what)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    gwr, case = sys.argv[1], sys.argv[2]
    fn = globals().get("case_" + case)
    if not fn:
        print("node_counts_real.py: no case '%s'" % case)
        return 2
    with tempfile.TemporaryDirectory() as work:
        fn(gwr, sys.argv[3] if len(sys.argv) > 3 else work)
    print("%s: %s" % (case, "%d failures" % len(pr.failures) if pr.failures else "ok"))
    return 1 if pr.failures else 0


if __name__ == "__main__":
    sys.exit(main())
