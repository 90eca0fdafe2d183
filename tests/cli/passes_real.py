#!/usr/bin/env python
"""Real exporters' idioms through `gwr optimize`, checked against PyPI's onnx
(checker, full) and onnxruntime (issue 22). Run by the project's venv python.

  passes_real.py GWR CASE [WORKDIR]

CASE is one of the functions named case_*. Each builds an ONNX model with
onnx.helper, optimizes it at every level and target (or the ones the case
names), and checks that the output passes onnx.checker.check_model
(full_check=True), loads and runs in onnxruntime with the same outputs
(shape and values) as onnxruntime's run of the original, and whatever the
case asks besides. Exit 0 when every check holds; 1 with one line per
failure.
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


def every(gwr, src, feeds, work, targets=TARGETS, levels=LEVELS):
    """src optimized at every level and target, each output checked."""
    outs = {}
    for t in targets:
        for lv in levels:
            dst = os.path.join(work, "%s_%s_%s.onnx" % (os.path.basename(src)[:-5], t, lv))
            if optimize(gwr, src, dst, "--target", t, "--level", lv) and \
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
