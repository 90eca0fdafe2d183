"""rules_cli.py GWR - `gwr rewrite --rules FILE` and `gwr optimize --rules
FILE` on a model whose Loop body holds what the rules rewrite (rules apply
inside bodies like every pass), judged by onnxruntime (the project's venv):

  - the rules fire in the graph and in the Loop body (op counts of the
    written file; --report names the rule with its rewrites);
  - onnxruntime runs the written file to the original's outputs;
  - a rules file the language refuses exits 1 with one line
    "gwr: FILE:LINE:COL: message".
"""
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
HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "..", "rules", "spec_examples.rules")
FAILS = 0


def check(ok, what):
    global FAILS
    if not ok:
        FAILS += 1
        print("FAIL:", what)


def model():
    """y = Loop(3 trips) of v <- Neg(Neg(v)) * 0.5 + Transpose(Transpose(v, [1,0]), [1,0]);
    z = Transpose(Transpose(x, [1,0,2]), [0,2,1]) in the graph."""
    body = h.make_graph(
        [
            h.make_node("Neg", ["v_in"], ["n1"]),
            h.make_node("Neg", ["n1"], ["n2"]),
            h.make_node("Mul", ["n2", "half"], ["m"]),
            h.make_node("Transpose", ["v_in"], ["t1"], perm=[1, 0]),
            h.make_node("Transpose", ["t1"], ["t2"], perm=[1, 0]),
            h.make_node("Add", ["m", "t2"], ["v_out"]),
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
            h.make_tensor_value_info("v_in", T.FLOAT, [4, 4]),
        ],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("v_out", T.FLOAT, [4, 4])],
        [nh.from_array(np.array(0.5, np.float32), "half")],
    )
    g = h.make_graph(
        [
            h.make_node("Loop", ["trips", "cond", "v"], ["y"], body=body),
            h.make_node("Transpose", ["x"], ["xt1"], perm=[1, 0, 2]),
            h.make_node("Transpose", ["xt1"], ["z"], perm=[0, 2, 1]),
        ],
        "g",
        [h.make_tensor_value_info("v", T.FLOAT, [4, 4]), h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4, 4]), h.make_tensor_value_info("z", T.FLOAT, [3, 4, 2])],
        [nh.from_array(np.array(3, np.int64), "trips"), nh.from_array(np.array(True), "cond")],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


def ops(m):
    """Op counts of the graph and of the Loop body."""
    top, body = {}, {}
    for n in m.graph.node:
        top[n.op_type] = top.get(n.op_type, 0) + 1
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                for b in a.g.node:
                    body[b.op_type] = body.get(b.op_type, 0) + 1
    return top, body


def run(path, feeds):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def main():
    rng = np.random.default_rng(23)
    feeds = {"v": rng.standard_normal((4, 4)).astype(np.float32), "x": rng.standard_normal((2, 3, 4)).astype(np.float32)}
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "loop.onnx")
        onnx.save(model(), src)
        want = run(src, feeds)
        rules = os.path.join(d, "r.rules")
        with open(rules, "w") as f:
            f.write("# Neg(Neg(x)) is x\nrule drop_double_neg benefit 100:\n  Neg(Neg(x)) => x\n")
            f.write(open(SPEC).read())
        for cmd in (["rewrite", "--rules", rules], ["optimize", "--rules", rules, "--report", "--level", "basic"]):
            out = os.path.join(d, "out.onnx")
            p = subprocess.run([GWR, cmd[0], src, *cmd[1:], "-o", out], capture_output=True, text=True)
            check(p.returncode == 0, f"{cmd[0]}: exit {p.returncode}: {p.stderr}")
            if p.returncode:
                continue
            m = onnx.load(out)
            onnx.checker.check_model(m)
            top, body = ops(m)
            check(body.get("Neg", 0) == 0, f"{cmd[0]}: the Loop body keeps {body.get('Neg', 0)} Neg")
            check(body.get("Transpose", 0) <= 1, f"{cmd[0]}: the Loop body keeps {body.get('Transpose', 0)} Transposes")
            check(top.get("Transpose", 0) == 1, f"{cmd[0]}: the graph keeps {top.get('Transpose', 0)} Transposes")
            if cmd[0] == "optimize":
                line = [l for l in p.stdout.splitlines() if l.startswith("drop_double_neg")]
                check(line and int(line[0].split()[3]) >= 1, f"optimize --report: drop_double_neg line {line}")
            got = run(out, feeds)
            for w, g in zip(want, got):
                check(np.allclose(w, g, rtol=1e-6, atol=1e-6), f"{cmd[0]}: outputs differ ({np.abs(w - g).max()})")
        bad = os.path.join(d, "bad.rules")
        with open(bad, "w") as f:
            f.write("rule a:\n  Relu(x) => Foo(x)\n")
        for cmd in ("rewrite", "optimize"):
            p = subprocess.run([GWR, cmd, src, "--rules", bad, "-o", os.path.join(d, "o.onnx")], capture_output=True, text=True)
            check(p.returncode == 1, f"{cmd} bad rules: exit {p.returncode}")
            check(p.stderr == f"gwr: {bad}:2:14: unknown op 'Foo'\n", f"{cmd} bad rules: stderr {p.stderr!r}")
    print("rules_cli:", "ok" if not FAILS else f"{FAILS} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
