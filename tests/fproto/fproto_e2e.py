"""Rules given as ONNX FunctionProto text rewrite a network as the same
rules written in .rules do, and as onnxsim 0.8 itself applies the same
FunctionProto pairs (onnxsim.simplify(function_rewrite_rules=...), its
other optimizations off). The function text is onnx.printer's; the
rewritten networks run on onnxruntime against the original. Bad function
text is refused at its place (file:line:col, the caret under it).

usage: fproto_e2e.py FPROTO_APPLY GWR
Runs in the project's venv (onnx, onnxruntime, onnxsim)."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
import onnxsim
from onnx import TensorProto as T
from onnx import helper as h
from onnx import parser, printer

TOOL, GWR = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="fproto_e2e_")
failures = []


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                     [h.make_tensor_value_info(n, t, s) for n, t, s in outputs], list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def apply(rules_path, m, tag):
    src = write(tag + "_in.onnx", "")
    onnx.save(m, src)
    out = os.path.join(TMP, tag + "_out.onnx")
    p = subprocess.run([TOOL, rules_path, src, out], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s: %s%s" % (tag, p.stdout, p.stderr))
    return onnx.load(out)


def ops(m, drop_constants=False):
    """The nodes as a sorted list of (domain, op, attributes), names left out."""
    rows = []
    for n in m.graph.node:
        if drop_constants and n.op_type == "Constant":
            continue
        attrs = tuple(sorted((a.name, str(h.get_attribute_value(a))) for a in n.attribute))
        rows.append((n.domain if n.domain != "ai.onnx" else "", n.op_type, len(n.input), attrs))
    return sorted(rows)


def run(m, feeds):
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def case(name, pairs, rules_text, m, feeds, expect_ops, onnxsim_ref=True, tol=1e-5):
    ftext = "".join(printer.to_text(p) + "\n" + printer.to_text(r) + "\n" for p, r in pairs)
    fpath = write(name + ".onnxtxt", ftext)
    rpath = write(name + ".rules", rules_text)
    try:
        by_fn = apply(fpath, m, name + "_fn")
        by_rules = apply(rpath, m, name + "_rules")
    except RuntimeError as e:
        failures.append(name)
        print("FAIL %s: %s" % (name, e))
        return
    problems = []
    if ops(by_fn) != ops(by_rules):
        problems.append("function text and .rules differ:\n  %s\n  %s" % (ops(by_fn), ops(by_rules)))
    got = [r[1] for r in ops(by_fn, True)]
    if got != sorted(expect_ops):
        problems.append("ops %s, expected %s" % (got, sorted(expect_ops)))
    if onnxsim_ref:
        ref, ok = onnxsim.simplify(m, function_rewrite_rules=list(pairs), perform_optimization=False)
        if ops(ref, True) != ops(by_fn, True):
            problems.append("onnxsim rewrote to %s, gwr to %s" % (ops(ref, True), ops(by_fn, True)))
    want = run(m, feeds)
    for label, rewritten in (("function text", by_fn), ("rules", by_rules)):
        for a, b in zip(want, run(rewritten, feeds)):
            if a.shape != b.shape or not np.allclose(a, b, rtol=tol, atol=tol):
                problems.append("%s: outputs differ from the original's" % label)
    if problems:
        failures.append(name)
        print("FAIL %s\n  %s\n--- function text:\n%s" % (name, "\n  ".join(problems), ftext))
    else:
        print("ok   %s" % name)


def fn(name, inputs, outputs, nodes, attributes=()):
    return h.make_function("com.example", name, inputs, outputs, nodes, [h.make_opsetid("", 18)],
                           attributes=list(attributes))


def ref(name, r, typ):
    return onnx.AttributeProto(name=name, ref_attr_name=r, type=typ)


rng = np.random.default_rng(7)
f32 = lambda *s: rng.standard_normal(s).astype(np.float32)

# 1. onnxsim's README rule, its text as the README writes it
p = parser.parse_function("""<domain: "com.example", opset_import: ["" : 18]>
matmul_add_pattern (x, w, b) => (y)
{
    t = MatMul(x, w)
    y = Add(t, b)
}""")
r = parser.parse_function("""<domain: "com.example", opset_import: ["" : 18]>
gemm_replacement (x, w, b) => (y)
{
    y = Gemm(x, w, b)
}""")
m = model([h.make_node("MatMul", ["X", "W"], ["t"]), h.make_node("Add", ["t", "B"], ["u"]),
           h.make_node("Relu", ["u"], ["Y"])],
          [("X", T.FLOAT, [2, 3]), ("W", T.FLOAT, [3, 4]), ("B", T.FLOAT, [4])], [("Y", T.FLOAT, [2, 4])])
case("matmul_add_gemm", [(p, r)], "rule matmul_add:\n  Add(MatMul(x, w), b)  =>  Gemm(x, w, b)\n", m,
     {"X": f32(2, 3), "W": f32(3, 4), "B": f32(4)}, ["Gemm", "Relu"])

# 2. GELU, erf form, its constants as initializers of the same dtype and
# shape as the pattern's Constants, stored the same way (onnxsim compares
# the serialized tensors: float_data, not raw_data)
gp = fn("gelu_erf", ["x"], ["y"], [
    h.make_node("Constant", [], ["half"], value=h.make_tensor("", T.FLOAT, [], [0.5])),
    h.make_node("Mul", ["x", "half"], ["m"]),
    h.make_node("Constant", [], ["s2"], value=h.make_tensor("", T.FLOAT, [], [1.4142135])),
    h.make_node("Div", ["x", "s2"], ["d"]),
    h.make_node("Erf", ["d"], ["e"]),
    h.make_node("Constant", [], ["one"], value=h.make_tensor("", T.FLOAT, [], [1.0])),
    h.make_node("Add", ["e", "one"], ["a"]),
    h.make_node("Mul", ["m", "a"], ["y"]),
])
gr = fn("gelu", ["x"], ["y"], [h.make_node("Gelu", ["x"], ["y"])])
inits = [h.make_tensor(n, T.FLOAT, [], [v]) for n, v in (("H", 0.5), ("S", 1.4142135), ("O", 1.0))]
m = model([h.make_node("Mul", ["X", "H"], ["m"]), h.make_node("Div", ["X", "S"], ["d"]),
           h.make_node("Erf", ["d"], ["e"]), h.make_node("Add", ["e", "O"], ["a"]),
           h.make_node("Mul", ["m", "a"], ["Y"])],
          [("X", T.FLOAT, [3, 5])], [("Y", T.FLOAT, [3, 5])], inits, opset=20)
case("gelu_erf", [(gp, gr)],
     "rule gelu_erf:\n  Mul(Mul(x, 0.5), Add(Erf(Div(x, 1.4142135)), 1.0))  =>  Gelu(x)\n", m,
     {"X": f32(3, 5)}, ["Gelu"])

# 3. an attribute reference: Cast<to=@t> twice is one Cast
cp = fn("cast_cast", ["x"], ["y"], [
    h.make_node("Cast", ["x"], ["c"]), h.make_node("Cast", ["c"], ["y"])], attributes=["t"])
cp.node[0].attribute.append(ref("to", "t", onnx.AttributeProto.INT))
cp.node[1].attribute.append(ref("to", "t", onnx.AttributeProto.INT))
cr = fn("cast_once", ["x"], ["y"], [h.make_node("Cast", ["x"], ["y"])], attributes=["t"])
cr.node[0].attribute.append(ref("to", "t", onnx.AttributeProto.INT))
m = model([h.make_node("Cast", ["X"], ["c"], to=T.FLOAT16), h.make_node("Cast", ["c"], ["d"], to=T.FLOAT16),
           h.make_node("Cast", ["d"], ["Y"], to=T.FLOAT)],
          [("X", T.FLOAT, [4])], [("Y", T.FLOAT, [4])])
case("attribute_ref", [(cp, cr)], "rule cast_cast:\n  Cast<to=t>(Cast<to=t>(x))  =>  Cast<to=t>(x)\n", m,
     {"X": f32(4)}, ["Cast", "Cast"])

# 4. two outputs of one node; a replacement constant of int64
sp = fn("split_even", ["x"], ["a", "b"], [h.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=2)])
sr = fn("split_sizes", ["x"], ["a", "b"], [
    h.make_node("Constant", [], ["s"], value=h.make_tensor("", T.INT64, [2], [2, 2])),
    h.make_node("Split", ["x", "s"], ["a", "b"], axis=1)])
m = model([h.make_node("Split", ["X"], ["a", "b"], axis=1, num_outputs=2), h.make_node("Relu", ["a"], ["Y"]),
           h.make_node("Sigmoid", ["b"], ["Z"])],
          [("X", T.FLOAT, [3, 4])], [("Y", T.FLOAT, [3, 2]), ("Z", T.FLOAT, [3, 2])])
case("two_outputs", [(sp, sr)],
     "rule split_even:\n  Split<axis=1, num_outputs=2>(x)  =>  Split<axis=1>(x, cast([2, 2], i64))\n", m,
     {"X": f32(3, 4)}, ["Split", "Relu", "Sigmoid"])

# 5. an elimination (the replacement returns its input; onnxsim would
# leave the readers of the removed value dangling, so no onnxsim reference)
tp = fn("transpose_twice", ["x"], ["y"], [h.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                                         h.make_node("Transpose", ["t"], ["y"], perm=[1, 0])])
tr = fn("nothing", ["x"], ["x"], [])
m = model([h.make_node("Transpose", ["X"], ["t"], perm=[1, 0]), h.make_node("Transpose", ["t"], ["u"], perm=[1, 0]),
           h.make_node("Relu", ["u"], ["Y"])],
          [("X", T.FLOAT, [2, 3])], [("Y", T.FLOAT, [2, 3])])
case("elimination", [(tp, tr)],
     "rule transpose_twice:\n  Transpose<perm=[1, 0]>(Transpose<perm=[1, 0]>(x))  =>  x\n", m,
     {"X": f32(2, 3)}, ["Relu"], onnxsim_ref=False)

# 5b. a value read twice (a DAG pattern): d = x - m squared as Mul(d, d);
# the .rules form names the node at its first read (d@Sub) and reads it
# again by name. Two Sub layers of the same operands are not one node.
dp = fn("square_diff", ["x", "m"], ["y"], [h.make_node("Sub", ["x", "m"], ["d"]), h.make_node("Mul", ["d", "d"], ["y"])])
dr = fn("pow_diff", ["x", "m"], ["y"], [
    h.make_node("Sub", ["x", "m"], ["d"]),
    h.make_node("Constant", [], ["two"], value=h.make_tensor("", T.FLOAT, [], [2.0])),
    h.make_node("Pow", ["d", "two"], ["y"])])
dag_text = "rule square_diff:\n  Mul(d@Sub(x, m), d)  =>  Pow(Sub(x, m), 2.0)\n"
m = model([h.make_node("Sub", ["X", "M"], ["d"]), h.make_node("Mul", ["d", "d"], ["u"]), h.make_node("Relu", ["u"], ["Y"])],
          [("X", T.FLOAT, [3, 5]), ("M", T.FLOAT, [5])], [("Y", T.FLOAT, [3, 5])])
case("dag_value_read_twice", [(dp, dr)], dag_text, m, {"X": f32(3, 5), "M": f32(5)}, ["Sub", "Pow", "Relu"])
m = model([h.make_node("Sub", ["X", "M"], ["d"]), h.make_node("Sub", ["X", "M"], ["e"]), h.make_node("Mul", ["d", "e"], ["u"]),
           h.make_node("Relu", ["u"], ["Y"])],
          [("X", T.FLOAT, [3, 5]), ("M", T.FLOAT, [5])], [("Y", T.FLOAT, [3, 5])])
case("dag_two_layers_no_match", [(dp, dr)], dag_text, m, {"X": f32(3, 5), "M": f32(5)}, ["Sub", "Sub", "Mul", "Relu"])
m = model([h.make_node("Sub", ["X", "M"], ["d"]), h.make_node("Mul", ["d", "d"], ["u"]), h.make_node("Add", ["u", "d"], ["Y"])],
          [("X", T.FLOAT, [3, 5]), ("M", T.FLOAT, [5])], [("Y", T.FLOAT, [3, 5])])
case("dag_outside_reader_no_match", [(dp, dr)], dag_text, m, {"X": f32(3, 5), "M": f32(5)}, ["Sub", "Mul", "Add"])


# 6. refusals, through gwr_rules_parse_file: the position is where the
# problem is in the function text (found here by searching the text)
def refused(name, text, needle, words):
    path = write(name + ".onnxtxt", text)
    p = subprocess.run([TOOL, "--check", path], capture_output=True, text=True)
    off = text.index(needle)
    line = text.count("\n", 0, off) + 1
    col = off - (text.rfind("\n", 0, off) + 1) + 1
    lines = p.stdout.split("\n")
    head = "%s:%d:%d: " % (path, line, col)
    ok = (p.returncode == 1 and lines[0].startswith(head) and all(w in lines[0] for w in words)
          and len(lines) >= 3 and lines[1] == text.split("\n")[line - 1] and lines[2] == " " * (col - 1) + "^")
    if ok:
        print("ok   refused %s: %s" % (name, lines[0][len(path):]))
    else:
        failures.append(name)
        print("FAIL refused %s: expected %s...%s, got rc %d:\n%s%s" % (name, head, words, p.returncode, p.stdout, p.stderr))


good_p = printer.to_text(p)
good_r = printer.to_text(r)
refused("syntax", good_p.replace("Add (t, b)", "Add (t, b"), "}", ["expected ')'"])
refused("unknown_op", good_p + "\n" + good_r.replace("Gemm", "Gemmm"), "Gemmm", ["Gemmm"])
refused("arity", good_p + "\n" + good_r.replace("Gemm (x, w, b)", "Relu (x, w, b)"), "Relu", ["Relu"])
refused("replacement_input", good_p + "\n" + good_r.replace("(x, w, b) =>", "(x, w, c) =>").replace("(x, w, b)\n", "(x, w, c)\n"),
        "c) =>", ["'c'", "not an input of the pattern"])
refused("unbound_attribute", printer.to_text(gp) + "\n" + printer.to_text(cr), "@t", ["'@t'"])
refused("odd", good_p, "matmul_add_pattern", ["no replacement"])

# 7. the CLI reads the same file: gwr rewrite --rules FILE.onnxtxt
src = os.path.join(TMP, "cli_in.onnx")
out = os.path.join(TMP, "cli_out.onnx")
m = model([h.make_node("MatMul", ["X", "W"], ["t"]), h.make_node("Add", ["t", "B"], ["Y"])],
          [("X", T.FLOAT, [2, 3]), ("W", T.FLOAT, [3, 4]), ("B", T.FLOAT, [4])], [("Y", T.FLOAT, [2, 4])])
onnx.save(m, src)
cli_rules = write("cli.onnxtxt", printer.to_text(p) + "\n" + printer.to_text(r))
pr = subprocess.run([GWR, "rewrite", src, "--rules", cli_rules, "-o", out], capture_output=True, text=True)
if pr.returncode or [n.op_type for n in onnx.load(out).graph.node] != ["Gemm"]:
    failures.append("cli")
    print("FAIL cli: rc %d %s%s" % (pr.returncode, pr.stdout, pr.stderr))
else:
    print("ok   cli gwr rewrite --rules FILE.onnxtxt")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
