#!/bin/sh
# test_optimize_opset.sh GWR - `gwr optimize --opset N` and `--shape`:
# raising the opset converts what changed (Squeeze axes, Split's split,
# ReduceMean axes) and lets a gated pass fire (HardSwish at 14), onnx.checker
# and onnxruntime accept the result and give the same outputs as the original;
# an op whose schema changes in between (Softmax 13) refuses with one line
# naming it and exit 2; lowering is refused; without --opset the opset is
# kept; --shape binds a dim so that a shape chain folds; Constant nodes
# become initializers of the same names.
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"

# opset 11: y = HardSwish written out (x * Clip(x+3, 0, 6) / 6) of
# Squeeze(Unsqueeze(x)), plus Split (split attribute) and ReduceMean (axes
# attribute) outputs; soft.onnx adds a Softmax (changes at 13).
$PY - "$tmp" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh
def f(v): return nh.from_array(np.array(v, np.float32))
def model(path, softmax):
    n = [h.make_node("Unsqueeze", ["x"], ["u"], axes=[0]), h.make_node("Squeeze", ["u"], ["s"], axes=[0]),
         h.make_node("Constant", [], ["k3"], value=f(3)), h.make_node("Constant", [], ["k0"], value=f(0)),
         h.make_node("Constant", [], ["k6"], value=f(6)),
         h.make_node("Add", ["s", "k3"], ["a"]), h.make_node("Clip", ["a", "k0", "k6"], ["c"]),
         h.make_node("Mul", ["s", "c"], ["m"]), h.make_node("Div", ["m", "k6"], ["y"]),
         h.make_node("Split", ["x"], ["p1", "p2"], axis=1, split=[1, 3]),
         h.make_node("ReduceMean", ["x"], ["r"], axes=[1], keepdims=1)]
    outs = [("y", [2, 4]), ("p1", [2, 1]), ("p2", [2, 3]), ("r", [2, 1])]
    if softmax:
        n.append(h.make_node("Softmax", ["x"], ["sm"], axis=1))
        outs.append(("sm", [2, 4]))
    g = h.make_graph(n, "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                     [h.make_tensor_value_info(o, T.FLOAT, d) for o, d in outs])
    m = h.make_model_gen_version(g, opset_imports=[h.make_opsetid("", 11)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, path)
model(sys.argv[1] + "/m.onnx", False)
model(sys.argv[1] + "/soft.onnx", True)
# opset 10: Clip's bounds and Dropout's ratio are attributes
n = [h.make_node("Constant", [], ["k3"], value=f(3)), h.make_node("Constant", [], ["k6"], value=f(6)),
     h.make_node("Add", ["x", "k3"], ["a"]), h.make_node("Clip", ["a"], ["c"], min=0.0, max=6.0),
     h.make_node("Mul", ["x", "c"], ["m"]), h.make_node("Div", ["m", "k6"], ["y"]),
     h.make_node("Clip", ["x"], ["z"]), h.make_node("Dropout", ["x"], ["d"], ratio=0.3)]
g = h.make_graph(n, "g10", [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
                 [h.make_tensor_value_info(o, T.FLOAT, [2, 4]) for o in ("y", "z", "d")])
m = h.make_model_gen_version(g, opset_imports=[h.make_opsetid("", 10)])
m.ir_version = 5
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1] + "/m10.onnx")
# If bodies: then = Reshape(Reshape(x, [6, 4]), [24]) of the outer x, else =
# Squeeze(Unsqueeze(x, [0]), [0]) flattened by a Reshape to [24]
def i64(name, v): return nh.from_array(np.array(v, np.int64), name)
def body(name, nodes, inits):
    return h.make_graph(nodes, name, [], [h.make_tensor_value_info(name + "_y", T.FLOAT, [24])], inits)
then_g = body("t", [h.make_node("Reshape", ["x", "t_s1"], ["t_a"]), h.make_node("Reshape", ["t_a", "t_s2"], ["t_y"])],
              [i64("t_s1", [6, 4]), i64("t_s2", [24])])
else_g = body("e", [h.make_node("Unsqueeze", ["x", "e_ax"], ["e_u"]), h.make_node("Squeeze", ["e_u", "e_ax"], ["e_s"]),
                    h.make_node("Reshape", ["e_s", "e_s2"], ["e_y"])], [i64("e_ax", [0]), i64("e_s2", [24])])
g = h.make_graph([h.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)], "ifs",
                 [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4]), h.make_tensor_value_info("cond", T.BOOL, [])],
                 [h.make_tensor_value_info("y", T.FLOAT, [24])])
m = h.make_model_gen_version(g, opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1] + "/ifs.onnx")
# Reshape(x, Concat(Shape(x)[1:2], Shape(x)[0:1], [20])) of x [batch, seq, 4, 5]: the dims change
# places, so no entry is x's own dim at its own place (which fold_shape_dims would turn into 0)
g = h.make_graph([h.make_node("Shape", ["x"], ["sh"]), h.make_node("Slice", ["sh", "one", "two"], ["s"]),
                  h.make_node("Slice", ["sh", "zero", "one"], ["b"]),
                  h.make_node("Concat", ["s", "b", "c"], ["t"], axis=0), h.make_node("Reshape", ["x", "t"], ["y"])],
                 "d", [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 4, 5])],
                 [h.make_tensor_value_info("y", T.FLOAT, ["seq", "batch", 20])],
                 [nh.from_array(np.array([0], np.int64), "zero"), nh.from_array(np.array([1], np.int64), "one"),
                  nh.from_array(np.array([2], np.int64), "two"), nh.from_array(np.array([20], np.int64), "c")])
m = h.make_model_gen_version(g, opset_imports=[h.make_opsetid("", 13)])
onnx.save(m, sys.argv[1] + "/dyn.onnx")
PYEOF

opset_and_ops() {
    $PY - "$1" <<'PYEOF'
import sys
import onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
print("opset", [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")][0])
print("ops", " ".join(sorted(n.op_type for n in m.graph.node if n.op_type != "Constant")))
print("constant nodes", sum(n.op_type == "Constant" for n in m.graph.node))
print("initializers", " ".join(sorted(i.name for i in m.graph.initializer)))
PYEOF
}

# absent: the opset is kept, and no HardSwish at 11
expect 0 "optimize without --opset" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/o11.onnx"
opset_and_ops "$tmp/o11.onnx" >"$tmp/ops"
has ops "^opset 11$" "without --opset the opset stays 11"
lacks ops "HardSwish" "no HardSwish at opset 11"
has ops "^ops HardSigmoid Mul ReduceMean Split$" "at opset 11 the HardSwish chain became x * HardSigmoid(x)"
has ops "^constant nodes 0$" "constants_to_initializers: no Constant node left"
expect 0 "optimize without fuse_hard_swish" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/o11k.onnx" --disable fuse_hard_swish
opset_and_ops "$tmp/o11k.onnx" >"$tmp/ops"
has ops "^constant nodes 0$" "constants_to_initializers: no Constant node left"
has ops "^initializers k0 k3 k6$" "the Constant nodes became initializers of the same names"

# raise to 14: converted, HardSwish made, same numbers (gwr and onnxruntime)
expect 0 "optimize --opset 14" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/o14.onnx" --opset 14 --verify
has out "^verify: 4 outputs.*: same" "--opset 14: the executor agrees"
opset_and_ops "$tmp/o14.onnx" >"$tmp/ops"
ok "onnx.checker accepts the raised model" -- test -s "$tmp/ops"
has ops "^opset 14$" "the opset is 14"
has ops "HardSwish" "HardSwish made once opset 14 is allowed"
lacks ops "Squeeze" "Squeeze(Unsqueeze) cancelled"
$PY - "$tmp/o14.onnx" <<'PYEOF' >"$tmp/ops"
import sys
import onnx
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    if n.op_type in ("Split", "ReduceMean"):
        print(n.op_type, len(n.input), sorted(a.name for a in n.attribute))
PYEOF
has ops "^Split 2 \['axis'\]$" "Split's split attribute became an input"
has ops "^ReduceMean 1 \['axes', 'keepdims'\]$" "ReduceMean keeps its axes attribute at 14"
expect 0 "optimize --opset 18" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/o18.onnx" --opset 18 --verify
$PY - "$tmp/o18.onnx" <<'PYEOF' >"$tmp/ops"
import sys
import onnx
m = onnx.load(sys.argv[1])  # checker and onnxruntime: ort_check.py below
for n in m.graph.node:
    if n.op_type in ("Split", "ReduceMean"):
        print(n.op_type, len(n.input), sorted(a.name for a in n.attribute))
PYEOF
has ops "^ReduceMean 2 \['keepdims'\]$" "ReduceMean's axes became an input at 18"
for v in 14 18; do
    expect 0 "run the original" -- "$GWR" run "$tmp/m.onnx" --random 5 -o "$tmp/ref$v"
    expect 0 "onnxruntime on --opset $v's output" -- "$PY" "$HERE/ort_check.py" compare "$tmp/m.onnx" "$tmp/ref$v" "$tmp/o$v.onnx"
    has out "loads, max abs difference from the original \(0\.00e+0\|[0-9.]*e-\([6-9]\|[1-9][0-9]\)\)$" "onnxruntime: --opset $v's output gives the original's numbers (within 1e-5)"
done

# opset 10 -> 14: Clip's bounds and Dropout's ratio become inputs, HardSwish made
expect 0 "optimize --opset 14 of an opset 10 model" -- "$GWR" optimize "$tmp/m10.onnx" -o "$tmp/o10.onnx" --opset 14 --verify
has out "^verify: 3 outputs.*: same" "--opset 10 -> 14: the executor agrees"
opset_and_ops "$tmp/o10.onnx" >"$tmp/ops"
has ops "^ops Clip HardSwish Identity$" "HardSwish made, the bare Clip kept, the Dropout an Identity carrying output d"
expect 0 "run the opset 10 original" -- "$GWR" run "$tmp/m10.onnx" --random 5 -o "$tmp/ref10"
expect 0 "onnxruntime on its output" -- "$PY" "$HERE/ort_check.py" compare "$tmp/m10.onnx" "$tmp/ref10" "$tmp/o10.onnx"
has out "loads, max abs difference from the original \(0\.00e+0\|[0-9.]*e-\([6-9]\|[1-9][0-9]\)\)$" "onnxruntime: the opset 10 model raised gives the same numbers"

# blocked: Softmax changes at 13
expect 2 "optimize --opset 13 with a Softmax" -- "$GWR" optimize "$tmp/soft.onnx" -o "$tmp/bad.onnx" --opset 13
errline "Softmax" "a blocking op"
hasf err "changes at opset 13" "the message says the version"
absent "$tmp/bad.onnx" "nothing written when blocked"
# lowering, and a bad value
expect 2 "optimize --opset 9 (lower)" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --opset 9
errline "lowering" "lowering is refused"
expect 2 "optimize --opset x" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --opset x
absent "$tmp/bad.onnx" "no output file after any failure"

# the shape passes inside If bodies: one Reshape left in each branch
expect 0 "optimize If bodies" -- "$GWR" optimize "$tmp/ifs.onnx" -o "$tmp/ifs_o.onnx" --level basic --report --debug
has out "^compose_reshapes  *[0-9][0-9]*  *[0-9][0-9]*  *2$" "compose_reshapes fired once per body"
$PY - "$tmp/ifs_o.onnx" >"$tmp/ops" <<'PYEOF'
import sys
import onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
for a in m.graph.node[0].attribute:
    print(a.name, sorted(n.op_type for n in a.g.node if n.op_type != "Constant"))
PYEOF
has ops "^then_branch \['Reshape'\]$" "then body: one Reshape of the outer x"
has ops "^else_branch \['Reshape'\]$" "else body: Squeeze(Unsqueeze) gone, one Reshape"
expect 0 "If bodies: same outputs" -- "$GWR" verify "$tmp/ifs.onnx" "$tmp/ifs_o.onnx" --atol 0 --rtol 0

# --shape: the report names the dims; binding them folds the chain
expect 0 "optimize a dynamic Reshape" -- "$GWR" optimize "$tmp/dyn.onnx" -o "$tmp/d1.onnx" --level basic --report
has out "^fold_shape_dims .*skipped: 1 Shape and 1 Reshape layers left computing shapes at run time.*batch, seq" "the report says what to bind"
expect 0 "optimize --shape seq=3" -- "$GWR" optimize "$tmp/dyn.onnx" -o "$tmp/d2.onnx" --level basic --shape seq=3 --verify --shape batch=2
opset_and_ops "$tmp/d2.onnx" >"$tmp/ops"
has ops "^ops Reshape$" "bound: the shape chain folded into one Reshape"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
