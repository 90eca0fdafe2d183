#!/usr/bin/env python3
"""provenance_cli.py GWR - provenance through the gwr tool (issue 26).

An erf GELU (the five nodes of the ONNX spec's formula, named here) that
`gwr optimize` fuses into one Gelu: with --provenance the written node's
metadata_props (read by onnx 1.23, which checks the model) names rule
fuse_gelu and exactly those five nodes; onnxruntime loads the file; the
other node's own metadata_props survive; without --provenance nothing is
written; a second optimize of the file keeps the chain; `gwr explain`
prints the tree and --json, says when a layer is original, and refuses an
unknown node or a bad file with one line and exit 2."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

GWR = sys.argv[1]
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)


def gwr(*args):
    return subprocess.run([GWR, *args], capture_output=True, text=True)


GELU_NODES = ["Div_3", "Erf_4", "Add_5", "Mul_6", "Mul_7"]


def gelu_model(path):
    x = h.make_tensor_value_info("x", T.FLOAT, [2, 8])
    y = h.make_tensor_value_info("y", T.FLOAT, [2, 8])
    inits = [nh.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
             nh.from_array(np.array(1.0, np.float32), "one"),
             nh.from_array(np.array(0.5, np.float32), "half")]
    nodes = [h.make_node("Div", ["x", "sqrt2"], ["d"], name="Div_3"),
             h.make_node("Erf", ["d"], ["e"], name="Erf_4"),
             h.make_node("Add", ["e", "one"], ["a"], name="Add_5"),
             h.make_node("Mul", ["x", "a"], ["m"], name="Mul_6"),
             h.make_node("Mul", ["m", "half"], ["g"], name="Mul_7"),
             h.make_node("Relu", ["g"], ["y"], name="Relu_8")]
    relu = nodes[-1]
    relu.metadata_props.add(key="owner", value="team-a")
    g = h.make_graph(nodes, "g", [x], [y], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 20)], ir_version=10)
    onnx.checker.check_model(m)
    onnx.save(m, path)


def if_model(path):
    """The same GELU inside an If's then_branch (names prefixed t_)."""
    p = "t_"
    body = [h.make_node("Div", ["x", "sqrt2"], [p + "d"], name=p + "Div"),
            h.make_node("Erf", [p + "d"], [p + "e"], name=p + "Erf"),
            h.make_node("Add", [p + "e", "one"], [p + "a"], name=p + "Add"),
            h.make_node("Mul", ["x", p + "a"], [p + "m"], name=p + "Mul1"),
            h.make_node("Mul", [p + "m", "half"], ["tout"], name=p + "Mul2")]
    then_g = h.make_graph(body, "then", [], [h.make_tensor_value_info("tout", T.FLOAT, [2, 8])])
    else_g = h.make_graph([h.make_node("Relu", ["x"], ["eout"], name="e_Relu")], "else", [],
                          [h.make_tensor_value_info("eout", T.FLOAT, [2, 8])])
    inits = [nh.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
             nh.from_array(np.array(1.0, np.float32), "one"),
             nh.from_array(np.array(0.5, np.float32), "half")]
    g = h.make_graph([h.make_node("If", ["c"], ["y"], name="If_0", then_branch=then_g, else_branch=else_g)], "g",
                     [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [2, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 8])], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 20)], ir_version=10)
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return [n.name for n in body]


def meta(node):
    return {p.key: p.value for p in node.metadata_props}


with tempfile.TemporaryDirectory() as d:
    src, out, plain, again = (os.path.join(d, n) for n in ("gelu.onnx", "out.onnx", "plain.onnx", "again.onnx"))
    gelu_model(src)
    r = gwr("optimize", src, "-o", out, "--provenance")
    check(r.returncode == 0, "optimize --provenance: " + r.stderr)
    m = onnx.load(out)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    check(ops.count("Gelu") == 1 and "Erf" not in ops, "the GELU is fused: %s" % ops)
    gelu = next(n for n in m.graph.node if n.op_type == "Gelu")
    relu = next(n for n in m.graph.node if n.op_type == "Relu")
    prov = json.loads(meta(gelu).get("gwr.provenance", "null") or "null")
    check(prov == {"rule": "fuse_gelu", "from": GELU_NODES}, "Gelu's provenance: %s" % prov)
    check(meta(relu) == {"owner": "team-a"}, "Relu keeps its own metadata only: %s" % meta(relu))
    ort.InferenceSession(out, providers=["CPUExecutionProvider"])

    r = gwr("optimize", src, "-o", plain)
    check(r.returncode == 0, "optimize: " + r.stderr)
    pm = onnx.load(plain)
    check(all("gwr.provenance" not in meta(n) for n in pm.graph.node), "no provenance without --provenance")

    # Read back and written again: the chain is kept.
    r = gwr("rewrite", out, "-o", again, "--pattern", "replace_add_with_sub", "--provenance")
    check(r.returncode == 0, "rewrite --provenance: " + r.stderr)
    am = onnx.load(again)
    g2 = next(n for n in am.graph.node if n.op_type == "Gelu")
    check(meta(g2).get("gwr.provenance") == meta(gelu)["gwr.provenance"], "the chain survives a second run")

    r = gwr("explain", out, gelu.name)
    want = gelu.name + ": made by fuse_gelu from\n" + "".join("  %s (original)\n" % n for n in GELU_NODES)
    check(r.returncode == 0 and r.stdout == want, "explain text: %r" % r.stdout)
    r = gwr("explain", out, gelu.name, "--json")
    js = json.loads(r.stdout) if r.returncode == 0 else None
    check(js == {"name": gelu.name, "op": "Gelu", "provenance": prov}, "explain --json: %r" % r.stdout)
    r = gwr("explain", out, "Relu_8")
    check(r.returncode == 0 and "original layer" in r.stdout and "no provenance" not in r.stdout,
          "explain of an original layer: %r" % r.stdout)
    r = gwr("explain", plain, "Relu_8")
    check(r.returncode == 0 and "records no provenance" in r.stdout, "explain on a model without: %r" % r.stdout)
    r = gwr("explain", out, "Nope_1")
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and out in r.stderr and "Nope_1" in r.stderr,
          "explain of an unknown node: %d %r" % (r.returncode, r.stderr))
    bad = os.path.join(d, "bad.onnx")
    with open(bad, "wb") as f:
        f.write(b"\x08\x07garbage\xff\xff")
    r = gwr("explain", bad, "X")
    check(r.returncode == 2 and r.stderr.count("\n") == 1 and bad in r.stderr, "explain of a bad file: %r" % r.stderr)
    r = gwr("explain", os.path.join(d, "missing.onnx"), "X")
    check(r.returncode == 2 and r.stderr.count("\n") == 1, "explain of a missing file: %r" % r.stderr)
    r = gwr("explain", out)
    check(r.returncode == 2, "explain without NODE is bad usage")

    # A layer made inside an If body by the optimizer gets it too.
    ifm, ifout = os.path.join(d, "if.onnx"), os.path.join(d, "ifout.onnx")
    body = if_model(ifm)
    r = gwr("optimize", ifm, "-o", ifout, "--provenance")
    check(r.returncode == 0, "optimize If --provenance: " + r.stderr)
    im = onnx.load(ifout)
    onnx.checker.check_model(im, full_check=True)
    then_g = next(a.g for a in im.graph.node[0].attribute if a.name == "then_branch")
    bg = [n for n in then_g.node if n.op_type == "Gelu"]
    check(len(bg) == 1 and json.loads(meta(bg[0]).get("gwr.provenance", "null")) == {"rule": "fuse_gelu", "from": body},
          "the body's Gelu: %s" % [meta(n) for n in then_g.node])
    if bg:
        r = gwr("explain", ifout, bg[0].name)
        check(r.returncode == 0 and r.stdout.startswith(bg[0].name + ": made by fuse_gelu"), "explain in a body: %r" % r.stdout)
    ort.InferenceSession(ifout, providers=["CPUExecutionProvider"])

print("provenance_cli: %s" % ("FAILED " + str(len(FAILED)) if FAILED else "ok"))
sys.exit(1 if FAILED else 0)
