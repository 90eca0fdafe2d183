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
