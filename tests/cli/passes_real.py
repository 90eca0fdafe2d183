#!/usr/bin/env python
"""Real exporters' idioms through `gwr optimize`, checked against PyPI's onnx
(checker, full) and onnxruntime (issue 22). Run by the project's venv python.

  passes_real.py GWR CASE [WORKDIR]

CASE is one of the functions named case_*. Each builds an ONNX model with
onnx.helper, optimizes it at every level and target (or the ones the case
names), and checks that the output passes onnx.checker.check_model
(full_check=True), loads and runs in onnxruntime with the same outputs
(shape and values) as onnxruntime's run of the original, and whatever the
case asks besides. A --target gwr output that uses gwr's own ops is checked
by `--verify` (gwr's executor) instead of onnxruntime. Exit 0 when every
check holds; 1 with one line per failure.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

INT64_MAX = np.iinfo(np.int64).max
LEVELS = ("basic", "extended", "all")
TARGETS = ("onnx", "ort", "gwr")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name + "_v"))


def save(model, path):
    onnx.save(model, path)
    onnx.checker.check_model(onnx.load(path), full_check=True)  # the input itself is valid
    return path


def ort_run(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def optimize(gwr, src, dst, *args):
    r = subprocess.run([gwr, "optimize", src, "-o", dst, *args], capture_output=True, text=True)
    if r.returncode:
        fail("gwr optimize %s %s: exit %d: %s" % (os.path.basename(src), " ".join(args), r.returncode,
                                                 r.stderr.strip()))
        return None
    return r


def check_output(src, dst, feeds, what, tol=1e-4):
    """dst passes the full checker and runs in onnxruntime like src (feeds:
    one dict of inputs, or a list of them)."""
    if isinstance(feeds, list):
        return all(check_output(src, dst, f, what, tol) for f in feeds)
    try:
        onnx.checker.check_model(onnx.load(dst), full_check=True)
    except Exception as e:  # noqa: BLE001 - the checker's message is the report
        fail("%s: onnx.checker: %s" % (what, str(e).splitlines()[0]))
        return False
    if uses_gwr_domain(dst):  # --target gwr: gwr's own ops, checked by --verify on gwr's executor instead
        return True
    try:
        got = ort_run(dst, feeds)
    except Exception as e:  # noqa: BLE001
        fail("%s: onnxruntime: %s" % (what, str(e).splitlines()[0]))
        return False
    want = ort_run(src, feeds)
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            fail("%s: output %d has shape %s, the model gives %s" % (what, i, g.shape, w.shape))
            return False
        if not np.allclose(g, w, rtol=tol, atol=tol):
            fail("%s: output %d differs by %g" % (what, i, float(np.max(np.abs(g - w)))))
            return False
    return True


def uses_gwr_domain(path):
    def walk(g):
        for n in g.node:
            if n.domain == "gwr":
                return True
            if any(a.type == onnx.AttributeProto.GRAPH and walk(a.g) for a in n.attribute):
                return True
        return False
    return walk(onnx.load(path).graph)


def every(gwr, src, feeds, work, targets=TARGETS, levels=LEVELS):
    """src optimized at every level and target, each output checked."""
    outs = {}
    for t in targets:
        for lv in levels:
            dst = os.path.join(work, "%s_%s_%s.onnx" % (os.path.basename(src)[:-5], t, lv))
            verify = ("--verify",) if t == "gwr" else ()
            if optimize(gwr, src, dst, "--target", t, "--level", lv, *verify) and \
                    check_output(src, dst, feeds, "%s --target %s --level %s" % (os.path.basename(src), t, lv)):
                outs[(t, lv)] = dst
    return outs


def model(nodes, inputs, outputs, opset=17, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


# ---- 1. x.shape[1:]: Shape -> Slice(1, INT64_MAX) -> Concat([-1], .) -> Reshape

def case_shape_tail(gwr, work):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 4])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        const("st", [1]), const("en", [INT64_MAX]),
        helper.make_node("Slice", ["s", "st", "en"], ["tail"]),
        const("m1", [-1]),
        helper.make_node("Concat", ["m1", "tail"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    src = save(model(nodes, [x], [y]), os.path.join(work, "shape_tail.onnx"))
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)}
    if ort_run(src, feeds)[0].shape != (2, 3, 4):
        fail("onnxruntime's own run is not (2, 3, 4)")
    every(gwr, src, feeds, work)


# ---- 2. If-branch outputs the file left untyped

def untyped(name):
    v = onnx.ValueInfoProto()
    v.name = name
    return v


def case_if_untyped(gwr, work):
    """y1 = If(c) of Relu/Neg(x), left untyped; y = If(c) of Reshape(y1, [6])
    (then Sigmoid): the second If's branch outputs have a known rank and,
    without y1's dtype, no element type, which must not be written as 0."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])
    t1 = helper.make_graph([helper.make_node("Relu", ["x"], ["a"])], "t1", [], [untyped("a")])
    e1 = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "e1", [], [untyped("b")])
    t2 = helper.make_graph([const("k6", [6]), helper.make_node("Reshape", ["y1", "k6"], ["r"])], "t2", [],
                           [untyped("r")])
    e2 = helper.make_graph([const("k6e", [6]), helper.make_node("Reshape", ["y1", "k6e"], ["r2"]),
                            helper.make_node("Sigmoid", ["r2"], ["s"])], "e2", [], [untyped("s")])
    nodes = [helper.make_node("If", ["c"], ["y1"], then_branch=t1, else_branch=e1),
             helper.make_node("If", ["c"], ["y"], then_branch=t2, else_branch=e2)]
    src = save(model(nodes, [x, c], [y]), os.path.join(work, "if_untyped.onnx"))
    xv = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    every(gwr, src, [{"x": xv, "c": np.array(True)}, {"x": xv, "c": np.array(False)}], work)


# ---- 3. names made by passes, unique across the graph and its bodies

def reshape_chain(tag, src_name, out):
    """Flatten(src) then Reshape to [4, 6] then Relu: compose_reshapes makes a
    new Reshape and a new constant here, wherever "here" is."""
    return [helper.make_node("Flatten", [src_name], [tag + "_f"], axis=2),
            const(tag + "_k", [4, 6]),
            helper.make_node("Reshape", [tag + "_f", tag + "_k"], [tag + "_r"]),
            helper.make_node("Relu", [tag + "_r"], [out])]


def case_if_names(gwr, work):
    """The same foldable chain in the main graph and in both branches of an
    If (and in an If nested in a branch): the layers the passes make in each
    must not share names (onnxruntime: 'Graph must be in single static
    assignment (SSA) form')."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 6])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 6])
    inner_t = helper.make_graph(reshape_chain("it", "x", "it_o"), "it", [], [untyped("it_o")])
    inner_e = helper.make_graph(reshape_chain("ie", "x", "ie_o"), "ie", [], [untyped("ie_o")])
    then_b = helper.make_graph(reshape_chain("t", "x", "t_o") +
                               [helper.make_node("If", ["c"], ["t_in"], then_branch=inner_t, else_branch=inner_e),
                                helper.make_node("Add", ["t_o", "t_in"], ["t_sum"])], "then", [], [untyped("t_sum")])
    else_b = helper.make_graph(reshape_chain("e", "x", "e_o"), "else", [], [untyped("e_o")])
    nodes = reshape_chain("m", "x", "z") + [helper.make_node("If", ["c"], ["y"], then_branch=then_b,
                                                             else_branch=else_b)]
    src = save(model(nodes, [x, c], [y, z]), os.path.join(work, "if_names.onnx"))
    xv = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 2, 6)
    every(gwr, src, [{"x": xv, "c": np.array(True)}, {"x": xv, "c": np.array(False)}], work)


def count_ops(path, op):
    """Nodes of type op in the graph and every body in it."""
    def walk(g):
        return sum((n.op_type == op) + sum(walk(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
                   for n in g.node)
    return walk(onnx.load(path).graph)


def case_if_const(gwr, work):
    """Silero VAD's idiom: If(Equal(sr, 16000)) on a constant sr. The
    condition folds, the If is replaced by the branch it takes (with an If
    nested in it on a real input, kept), and the If's output stays a
    network output under its name; the other If, reading the first's output
    inside its branch, is folded too (an outer-scope read of a copied
    tensor)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 4])
    inner_t = helper.make_graph([helper.make_node("Sigmoid", ["t_r"], ["it_o"])], "it", [], [untyped("it_o")])
    inner_e = helper.make_graph([helper.make_node("Neg", ["x"], ["ie_o"])], "ie", [], [untyped("ie_o")])
    then_b = helper.make_graph([const("two", np.float32(2)), helper.make_node("Relu", ["x"], ["t_r"]),
                                helper.make_node("Mul", ["t_r", "two"], ["t_m"]),
                                helper.make_node("If", ["c"], ["t_in"], then_branch=inner_t, else_branch=inner_e),
                                helper.make_node("Add", ["t_m", "t_in"], ["t_o"])], "then", [], [untyped("t_o")])
    else_b = helper.make_graph([helper.make_node("Neg", ["x"], ["e_o"])], "else", [], [untyped("e_o")])
    z_t = helper.make_graph([helper.make_node("Abs", ["x"], ["zt_o"])], "zt", [], [untyped("zt_o")])
    z_e = helper.make_graph([helper.make_node("Sub", ["y", "x"], ["ze_o"])], "ze", [], [untyped("ze_o")])
    nodes = [const("sr", np.int64(8000)), const("k", np.int64(16000)), helper.make_node("Equal", ["sr", "k"], ["is16"]),
             helper.make_node("Not", ["is16"], ["is8"]),
             helper.make_node("If", ["is8"], ["y"], then_branch=then_b, else_branch=else_b),
             helper.make_node("If", ["is16"], ["z"], then_branch=z_t, else_branch=z_e)]
    src = save(model(nodes, [x, c], [y, z]), os.path.join(work, "if_const.onnx"))
    xv = np.linspace(-1, 1, 4, dtype=np.float32).reshape(1, 4)
    outs = every(gwr, src, [{"x": xv, "c": np.array(True)}, {"x": xv, "c": np.array(False)}], work)
    if len(outs) != len(TARGETS) * len(LEVELS):
        fail("if_const: %d of %d optimizes checked" % (len(outs), len(TARGETS) * len(LEVELS)))
    for (t, lv), dst in outs.items():
        m = onnx.load(dst)
        if [o.name for o in m.graph.output] != ["y", "z"]:
            fail("if_const --target %s --level %s: outputs %s" % (t, lv, [o.name for o in m.graph.output]))
        if count_ops(dst, "If") != 1:  # only the If on the real input c stays
            fail("if_const --target %s --level %s: %d If left, want 1" % (t, lv, count_ops(dst, "If")))


# ---- 4. fusions gated by the target, not the model's opset

def layer_norm_chain(tag, x, d, gamma, beta):
    """The exporters' LayerNormalization over the last axis (opset 13: axes
    an attribute)."""
    return [helper.make_node("ReduceMean", [x], [tag + "_m"], axes=[-1]),
            helper.make_node("Sub", [x, tag + "_m"], [tag + "_d"]),
            const(tag + "_two", np.array(2.0, np.float32)),
            helper.make_node("Pow", [tag + "_d", tag + "_two"], [tag + "_p"]),
            helper.make_node("ReduceMean", [tag + "_p"], [tag + "_v"], axes=[-1]),
            const(tag + "_eps", np.array(1e-5, np.float32)),
            helper.make_node("Add", [tag + "_v", tag + "_eps"], [tag + "_ve"]),
            helper.make_node("Sqrt", [tag + "_ve"], [tag + "_s"]),
            helper.make_node("Div", [tag + "_d", tag + "_s"], [tag + "_n"]),
            helper.make_node("Mul", [tag + "_n", gamma], [tag + "_g"]),
            helper.make_node("Add", [tag + "_g", beta], [d])]


def gelu_chain(tag, x, y):
    """GELU, erf form: 0.5 * x * (1 + erf(x / sqrt(2)))."""
    return [const(tag + "_r2", np.array(np.sqrt(2.0), np.float32)),
            helper.make_node("Div", [x, tag + "_r2"], [tag + "_a"]),
            helper.make_node("Erf", [tag + "_a"], [tag + "_e"]),
            const(tag + "_one", np.array(1.0, np.float32)),
            helper.make_node("Add", [tag + "_e", tag + "_one"], [tag + "_b"]),
            helper.make_node("Mul", [x, tag + "_b"], [tag + "_c"]),
            const(tag + "_half", np.array(0.5, np.float32)),
            helper.make_node("Mul", [tag + "_c", tag + "_half"], [y])]


def transformer_13(path):
    """An opset-13 block: LayerNorm, MatMul + bias, GELU, MatMul + bias,
    residual, LayerNorm."""
    rng = np.random.default_rng(7)
    h, f = 16, 32

    def init(name, *shape, scale=0.2):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
    inits = [init("g1", h, scale=1), init("b1", h), init("w1", h, f), init("c1", f), init("w2", f, h), init("c2", h),
             init("g2", h, scale=1), init("b2", h)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, h])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, h])
    nodes = layer_norm_chain("ln1", "x", "n1", "g1", "b1") + [
        helper.make_node("MatMul", ["n1", "w1"], ["m1"]), helper.make_node("Add", ["m1", "c1"], ["a1"])] + \
        gelu_chain("gelu", "a1", "act") + [
        helper.make_node("MatMul", ["act", "w2"], ["m2"]), helper.make_node("Add", ["m2", "c2"], ["a2"]),
        helper.make_node("Add", ["a2", "x"], ["res"])] + layer_norm_chain("ln2", "res", "y", "g2", "b2")
    g = helper.make_graph(nodes, "block", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return save(m, path)


def op_types(path):
    return [n.op_type for n in onnx.load(path).graph.node]


def case_opset13_fusions(gwr, work):
    src = transformer_13(os.path.join(work, "block13.onnx"))
    feeds = {"x": np.random.default_rng(3).standard_normal((2, 4, 16)).astype(np.float32)}
    for t, lv in (("ort", "extended"), ("ort", "all"), ("gwr", "extended"), ("gwr", "all")):
        dst = os.path.join(work, "block13_%s_%s.onnx" % (t, lv))
        if not optimize(gwr, src, dst, "--target", t, "--level", lv, "--verify"):
            continue
        ops = op_types(dst)
        if "ReduceMean" in ops or not any("LayerNormalization" in o for o in ops):
            fail("--target %s at opset 13: LayerNormalization not fused: %s" % (t, ops))
        if "Erf" in ops:
            fail("--target %s at opset 13: GELU not fused: %s" % (t, ops))
        if lv == "all" and "SkipLayerNormalization" not in ops:
            fail("--target %s --level all at opset 13: no SkipLayerNormalization: %s" % (t, ops))
        if t == "ort":
            # onnx.checker knows no LayerNormalization at opset 13 (onnxruntime registers its own
            # from opset 1): onnxruntime is the judge here, against its own run of the original
            try:
                got, want = ort_run(dst, feeds)[0], ort_run(src, feeds)[0]
                if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
                    fail("--target ort: onnxruntime's outputs differ by %g" % float(np.max(np.abs(got - want))))
            except Exception as e:  # noqa: BLE001
                fail("--target ort: onnxruntime: %s" % str(e).splitlines()[0])
    dst = os.path.join(work, "block13_onnx.onnx")
    if optimize(gwr, src, dst, "--target", "onnx") and check_output(src, dst, feeds, "--target onnx"):
        ops = op_types(dst)
        if "LayerNormalization" in ops or "ReduceMean" not in ops:
            fail("--target onnx at opset 13: LayerNormalization fused, which the opset lacks: %s" % ops)


# ---- 5. one optimize reaches the fixpoint

def count_nodes(path):
    """Nodes of the graph and of every body in it."""
    def walk(g):
        return sum(1 + sum(walk(a.g) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH) +
                   sum(walk(b) for a in n.attribute if a.type == onnx.AttributeProto.GRAPHS for b in a.graphs)
                   for n in g.node)
    return walk(onnx.load(path).graph)


def second_optimize_same(gwr, src, work, args, what):
    """Optimizing gwr's own output of src again with the same options leaves
    as many nodes."""
    one, two = os.path.join(work, "once.onnx"), os.path.join(work, "twice.onnx")
    if not optimize(gwr, src, one, *args) or not optimize(gwr, one, two, *args):
        return False
    a, b = count_nodes(one), count_nodes(two)
    if a != b:
        fail("%s %s: a second optimize of the output goes from %d to %d nodes" % (what, " ".join(args), a, b))
        return False
    return True


def case_pad_fixpoint(gwr, work):
    """PyTorch's F.pad: the pads computed (Concat with ConstantOfShape,
    Reshape, a reversing Slice, Transpose, Reshape, Cast), a reflect Pad, a
    Conv, and x.view(-1, *x.shape[1:]) of its output. Import cannot infer
    the Pad's output dims; they become known when fold_constants folds the
    pads, after which fold_shape_dims must fold the view in the same run."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])
    i64 = np.int64
    nodes = [
        const("pk", np.array([1, 1, 1, 1], i64)), const("zs", np.array([4], i64)),
        helper.make_node("ConstantOfShape", ["zs"], ["zeros"], value=numpy_helper.from_array(np.array([0], i64))),
        helper.make_node("Concat", ["pk", "zeros"], ["p8"], axis=0),
        const("r2", np.array([-1, 2], i64)), helper.make_node("Reshape", ["p8", "r2"], ["p42"]),
        const("st", np.array([-1], i64)), const("en", np.array([np.iinfo(i64).min], i64)),
        const("ax", np.array([0], i64)), const("sp", np.array([-1], i64)),
        helper.make_node("Slice", ["p42", "st", "en", "ax", "sp"], ["rev"]),
        helper.make_node("Transpose", ["rev"], ["tr"], perm=[1, 0]),
        const("m1", np.array([-1], i64)), helper.make_node("Reshape", ["tr", "m1"], ["flat"]),
        helper.make_node("Cast", ["flat"], ["pads"], to=TensorProto.INT64),
        helper.make_node("Pad", ["x", "pads"], ["xp"], mode="reflect"),
        helper.make_node("Conv", ["xp", "w"], ["c"], kernel_shape=[3, 3]),
        helper.make_node("Shape", ["c"], ["s"]), const("i123", np.array([1, 2, 3], i64)),
        helper.make_node("Gather", ["s", "i123"], ["tail"], axis=0),
        helper.make_node("Concat", ["m1", "tail"], ["sh"], axis=0),
        helper.make_node("Reshape", ["c", "sh"], ["y"]),
    ]
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph(nodes, "g", [x], [y], [w])
    src = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
               os.path.join(work, "pad_fixpoint.onnx"))
    feeds = [{"x": np.random.default_rng(1).standard_normal((n, 3, 8, 8)).astype(np.float32)} for n in (1, 3)]
    outs = every(gwr, src, feeds, work)
    for (t, lv), dst in outs.items():
        if lv != "basic" and any(op in ("Shape", "Reshape") for op in op_types(dst)):
            fail("--target %s --level %s: the view is left: %s" % (t, lv, op_types(dst)))
        second_optimize_same(gwr, src, work, ("--target", t, "--level", lv), "pad_fixpoint")


def case_second_optimize(gwr, work):
    """Every model of the other optimize tests' generators (make_nlp_models.py,
    make_attention_models.py; bench/make_opt_models.py's are checked by
    test_optimize_models.sh): a second optimize of the output at the same
    level and target leaves as many nodes."""
    here = os.path.dirname(os.path.abspath(__file__))
    models = []
    for gen in ("make_nlp_models.py", "make_attention_models.py"):
        d = os.path.join(work, gen[:-3])
        os.makedirs(d, exist_ok=True)
        r = subprocess.run([sys.executable, os.path.join(here, gen), d], capture_output=True, text=True)
        if r.returncode:
            fail("%s: %s" % (gen, r.stderr.strip()[-300:]))
        models += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".onnx"))
    if len(models) < 10:
        fail("only %d models generated" % len(models))
    for m in models:
        for t in TARGETS:
            for lv in LEVELS:
                second_optimize_same(gwr, m, work, ("--target", t, "--level", lv), os.path.basename(m))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    gwr, case = sys.argv[1], sys.argv[2]
    fn = globals().get("case_" + case)
    if not fn:
        print("passes_real.py: no case '%s'" % case)
        return 2
    with tempfile.TemporaryDirectory() as work:
        fn(gwr, sys.argv[3] if len(sys.argv) > 3 else work)
    print("%s: %s" % (case, "%d failures" % len(failures) if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
