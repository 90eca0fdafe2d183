"""Rules written as ONNX FunctionProto text, the form onnxsim 0.8's
function_rewrite_rules take: the text comes from onnx's own printer
(onnx.printer.to_text) of FunctionProtos built with onnx.helper, parsed back
by onnx.parser.parse_function where the README writes them that way, and by
onnxscript's @script converter; each pair must convert to the .rules text
written here by hand (src/rules/function_text.c).

usage: fproto_cases.py FPROTO_TOOL
Runs in the project's venv (onnx 1.23, onnxscript)."""
import os
import re
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import parser, printer

TOOL = sys.argv[1]
OPS18 = [h.make_opsetid("", 18)]
failures = []


def fn(name, inputs, outputs, nodes, attributes=(), domain="com.example"):
    return h.make_function(domain, name, inputs, outputs, nodes, OPS18, attributes=list(attributes))


def ref(name, ref_name, typ):
    return onnx.AttributeProto(name=name, ref_attr_name=ref_name, type=typ)


def node(op, ins, outs, refs=(), **attrs):
    n = h.make_node(op, ins, outs, **attrs)
    for r in refs:
        n.attribute.append(r)
    return n


def emit(text):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run([TOOL, "emit", path], capture_output=True, text=True)
    finally:
        os.unlink(path)
    return p.returncode, p.stdout.replace(path, "FILE")


def check(case, pairs, expected):
    """pairs: [(pattern, replacement)] of FunctionProto; expected: the rules
    after the header comment, each 'name: PATTERN => REPLACEMENT'."""
    text = "".join(printer.to_text(p) + "\n" + printer.to_text(r) + "\n" for p, r in pairs)
    # the text is ONNX's: its own parser reads every function of it back
    for p, r in pairs:
        for f in (p, r):
            back = parser.parse_function(printer.to_text(f))
            assert back.name == f.name and len(back.node) == len(f.node), case
    rc, out = emit(text)
    got = [re.sub(r"\s+", " ", r).strip() for r in out.split("rule ")[1:]]
    want = [re.sub(r"\s+", " ", "%s" % e).strip() for e in expected]
    if rc != 0 or got != want:
        failures.append(case)
        print("FAIL %s\n--- text:\n%s--- got (rc %d):\n%s--- want:\n%s\n" % (case, text, rc, out, "\n".join(want)))
    else:
        print("ok   %s" % case)


# 1. onnxsim's README example, as written there (parse_function)
readme_p = parser.parse_function("""
<domain: "com.example", opset_import: ["" : 18]>
matmul_add_pattern (x, w, b) => (y)
{
    t = MatMul(x, w)
    y = Add(t, b)
}
""")
readme_r = parser.parse_function("""
<domain: "com.example", opset_import: ["" : 18]>
gemm_replacement (x, w, b) => (y)
{
    y = Gemm(x, w, b)
}
""")
check("readme_matmul_add", [(readme_p, readme_r)], ["matmul_add: Add(MatMul(x, w), b) => Gemm(x, w, b)"])

# 2. GELU (erf form): three spellings of a constant (scalar tensor,
# value_float, a one-element tensor), then the issue's own rule
gelu_p = fn("gelu_erf", ["x"], ["y"], [
    node("Constant", [], ["half"], value=h.make_tensor("", T.FLOAT, [], [0.5])),
    node("Mul", ["x", "half"], ["m"]),
    node("Constant", [], ["s2"], value_float=1.4142135),
    node("Div", ["x", "s2"], ["d"]),
    node("Erf", ["d"], ["e"]),
    node("Constant", [], ["one"], value=h.make_tensor("", T.FLOAT, [1], [1.0])),
    node("Add", ["e", "one"], ["a"]),
    node("Mul", ["m", "a"], ["y"]),
])
gelu_r = fn("gelu", ["x"], ["y"], [node("Gelu", ["x"], ["y"])])
check("gelu_constants", [(gelu_p, gelu_r)],
      ["gelu_erf: Mul(Mul(x, 0.5), Add(Erf(Div(x, 1.4142135)), 1.0)) => Gelu(x)"])

# 3. attribute references (@t): bound in the pattern, substituted in the
# replacement; upper-case ONNX names become v_ names
cast_p = fn("cast_cast_pattern", ["X"], ["Y"], [
    node("Cast", ["X"], ["C"], refs=[ref("to", "t", onnx.AttributeProto.INT)]),
    node("Cast", ["C"], ["Y"], refs=[ref("to", "t", onnx.AttributeProto.INT)]),
], attributes=["t"])
cast_r = fn("cast_once", ["X"], ["Y"], [node("Cast", ["X"], ["Y"], refs=[ref("to", "t", onnx.AttributeProto.INT)])],
            attributes=["t"])
check("attribute_refs", [(cast_p, cast_r)], ["cast_cast: Cast<to=t>(Cast<to=t>(v_X)) => Cast<to=t>(v_X)"])

# 4. two outputs of one node, an empty optional input, another domain,
# string / float / int list attributes; a replacement constant of int64
split_p = fn("split2", ["x"], ["a", "b"], [node("Split", ["x", ""], ["a", "b"], axis=1)])
split_r = fn("split2_r", ["x"], ["a", "b"], [
    node("Constant", [], ["s"], value=h.make_tensor("", T.INT64, [2], [3, 3])),
    node("Split", ["x", "s"], ["a", "b"], axis=1),
])
dom_p = fn("dom", ["x", "w"], ["y"], [
    node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], auto_pad="NOTSET"),
    node("LeakyRelu", ["c"], ["y"], alpha=0.25),
])
dom_r = fn("dom_r", ["x", "w"], ["y"], [
    h.make_node("FusedConv", ["x", "w"], ["y"], domain="com.microsoft", activation="LeakyRelu",
                activation_params=[0.25], pads=[1, 1, 1, 1]),
])
check("multi_output_domains_lists", [(split_p, split_r), (dom_p, dom_r)], [
    "split2: Split<axis=1>(x, none) => Split<axis=1>(x, cast([3, 3], i64))",
    'dom: LeakyRelu<alpha=0.25>(Conv<auto_pad="NOTSET", pads=[1, 1, 1, 1]>(x, w)) => '
    'com.microsoft::FusedConv<activation="LeakyRelu", activation_params=[0.25], pads=[1, 1, 1, 1]>(x, w)',
])

# 5. an elimination (the replacement returns its input) and a second
# output index (Split(...)[1] read by the root)
idt_p = fn("idt", ["x"], ["y"], [node("Identity", ["x"], ["y"])])
idt_r = fn("idt_r", ["x"], ["x"], [])
sec_p = fn("second", ["x"], ["y"], [node("Split", ["x"], ["a", "b"], axis=0), node("Relu", ["b"], ["y"])])
sec_r = fn("second_r", ["x"], ["y"], [node("Relu", ["x"], ["y"])])
check("elimination_and_output_index", [(idt_p, idt_r), (sec_p, sec_r)],
      ["idt: Identity(x) => x", "second: Relu(Split<axis=0>(x)[1]) => Relu(x)"])

# 6. onnxscript's form: @script functions turned into FunctionProtos
try:
    from onnxscript import script
    from onnxscript import opset18 as op

    @script()
    def lrelu_add(x, alpha: float):
        return op.Add(op.LeakyRelu(x, alpha=alpha), op.Constant(value_float=1.0))

    @script()
    def lrelu_add_r(x, alpha: float):
        return op.Add(op.Constant(value_float=1.0), op.LeakyRelu(x, alpha=alpha))

    check("onnxscript_script", [(lrelu_add.to_function_proto(), lrelu_add_r.to_function_proto())],
          ["lrelu_add: Add(LeakyRelu<alpha=alpha>(x), 1.0) => Add(1.0, LeakyRelu<alpha=alpha>(x))"])
except ImportError:
    failures.append("onnxscript not importable")

# 7. typed signatures, value infos and node names are read and ignored,
# as onnxsim ignores them; a float matrix constant in a replacement
typed = """
<domain: "com.example", opset_import: ["" : 18]>
typed_pattern (float[N, 4] x, float[4] b) => (float[N, 4] y) <float[N, 4] t>
{
   [add_node] t = Add (x, b)
   y = Relu (t)
}
typed_r (x, b) => (y)
{
   m = Constant <value: tensor = float[2, 2] {1, 0, 0, 1}> ()
   y = Relu (x)
}
"""
rc, out = emit(typed)
if rc == 0:
    failures.append("typed: a replacement node that leads nowhere must be refused")
    print("FAIL typed accepted:\n" + out)
else:
    print("ok   typed_refuses_dead_node")
rc, out = emit(typed.replace("   m = Constant <value: tensor = float[2, 2] {1, 0, 0, 1}> ()\n   y = Relu (x)",
                             "   m = Constant <value: tensor = float[2, 2] {1, 0, 0, 1}> ()\n   y = MatMul (x, m)"))
want = "typed: Relu(Add(x, b)) => MatMul(x, reshape([1.0, 0.0, 0.0, 1.0], [2, 2]))"
got = re.sub(r"\s+", " ", out.split("rule ")[-1]).strip()
if rc != 0 or got != want:
    failures.append("typed")
    print("FAIL typed\n got: %s\nwant: %s" % (out, want))
else:
    print("ok   typed")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
