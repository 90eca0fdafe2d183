#!/bin/sh
# test_optimize.sh GWR - `gwr optimize`: folding inside If/Loop bodies, the
# report, idempotence (a second run writes the same bytes), numerics against
# the original (`gwr verify`), onnx.checker on the output, and bad usage.
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"

# x -> If(cond): then = x + (c1 + c2), else = x * (c1 * c2), with c1, c2
# constants inside each branch: the folds happen in the bodies only.
$PY - "$tmp/m.onnx" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
def branch(name, op, op2):
    c1 = helper.make_node("Constant", [], [name + "_c1"], value=numpy_helper.from_array(np.array([1.0, 2.0], np.float32)))
    c2 = helper.make_node("Constant", [], [name + "_c2"], value=numpy_helper.from_array(np.array([0.5, -3.0], np.float32)))
    k = helper.make_node(op2, [name + "_c1", name + "_c2"], [name + "_k"])
    y = helper.make_node(op, ["x", name + "_k"], [name + "_y"])
    return helper.make_graph([c1, c2, k, y], name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [2])])
g = helper.make_graph(
    [helper.make_node("If", ["cond"], ["y"], then_branch=branch("t", "Add", "Add"), else_branch=branch("e", "Mul", "Mul"))],
    "opt", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
m = helper.make_model_gen_version(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
PYEOF

expect 0 "optimize --help" -- "$GWR" optimize --help
has out "usage: gwr optimize" "optimize help"
expect 0 "optimize --list" -- "$GWR" optimize --list
has out "^fold_constants " "--list names fold_constants"
expect 0 "optimize --report" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/o1.onnx" --report --debug
has out "^fold_constants  *[0-9][0-9]*  *2  *2" "the report: two folds, one per body"
has out "skipped: not an optimization" "tutorial patterns are skipped, with the reason"
has out "(3 networks)" "the graph and its two bodies"
# the bodies lost their Add/Mul of constants; onnx.checker accepts the output
$PY - "$tmp/o1.onnx" >"$tmp/ops" <<'PYEOF'
import sys
import onnx
m = onnx.load(sys.argv[1])
onnx.checker.check_model(m)
for a in m.graph.node[0].attribute:
    print(a.name, sorted(n.op_type for n in a.g.node), len(a.g.initializer) + sum(n.op_type == "Constant" for n in a.g.node))
PYEOF
ok "onnx.checker" -- test $? -eq 0
has ops "then_branch \['Add'\] 1$" "then body: one Add of x and one folded constant"
has ops "else_branch \['Mul'\] 1$" "else body: one Mul of x and one folded constant"
expect 0 "verify: same outputs" -- "$GWR" verify "$tmp/m.onnx" "$tmp/o1.onnx" --atol 0 --rtol 0
expect 0 "optimize again" -- "$GWR" optimize "$tmp/o1.onnx" -o "$tmp/o2.onnx"
ok "idempotent and deterministic: the same bytes" -- cmp "$tmp/o1.onnx" "$tmp/o2.onnx"
expect 0 "optimize --disable fold_constants" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/o3.onnx" --disable fold_constants --report
has out "skipped: disabled" "disabled pass named in the report"

# --verify: the model before and after on the same seeded inputs
expect 0 "optimize --verify" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/v1.onnx" --verify --seed 7
has out "^verify: 1 output, max abs 0, max rel 0: same" "--verify: a fold changes nothing"
# a pass that changes the numbers on purpose: --verify names the output, exits 1, writes nothing
expect 1 "optimize --verify catches a change" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/v2.onnx" --verify --only replace_add_with_sub
has out "DIFFER (worst 'y')" "--verify names the worst output"
errline "output 'y' differs" "--verify failure"
absent "$tmp/v2.onnx" "--verify failure writes nothing"
expect 2 "bad --shape" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --verify --shape batch
errline "SYMBOL=N" "bad --shape"
expect 2 "bad --seed" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --verify --seed -1
errline "--seed" "bad --seed"

# bad usage: one line, exit 2, no output file
expect 2 "unknown pass" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --only fold_constant
errline "fold_constant" "unknown pass"
absent "$tmp/bad.onnx" "unknown pass: no output"
expect 2 "bad level" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --level max
errline "--level" "bad level"
expect 2 "bad target" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --target trt
errline "--target" "bad target"
expect 2 "a pass that does not serve the target" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --only fuse_attention_with_bias
errline "does not serve target onnx" "pass outside its targets"
expect 2 "missing -o" -- "$GWR" optimize "$tmp/m.onnx"
errline "missing -o OUT" "missing -o"
expect 1 "unreadable model" -- "$GWR" optimize "$tmp/nothere.onnx" -o "$tmp/bad.onnx"
errline "nothere.onnx" "unreadable model"
absent "$tmp/bad.onnx" "no output file after any failure"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
