#!/bin/sh
# test_optimize_badinput.sh GWR - `gwr optimize` on bad usage and bad or
# awkward models (test_optimize.sh has the first usage errors): an unknown
# pass in --disable or among good ones, options without their value, a
# truncated or empty model, an output that cannot be written (exit 1, one
# line, no partial file), a model whose dynamic shapes cannot be folded
# (optimized anyway, written, verified, the Shape chain kept), and graph
# outputs an elimination must keep by name.
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"

# m.onnx: y = Identity(x) + 0 -> z, with y a graph output too (x [2, 3]).
# dyn.onnx: x [N, M, 4] reshaped to [M, N, 4] by Shape/Gather/Concat: two
# dims only known at run time, so no constant shape can replace the chain.
$PY - "$tmp" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
def save(nodes, ins, outs, inits, path, opset=17):
    g = helper.make_graph(nodes, "t", ins, outs, inits)
    m = helper.make_model_gen_version(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, path)
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
save([helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Add", ["y", "zero"], ["z"])],
     [f("x", [2, 3])], [f("y", [2, 3]), f("z", [2, 3])],
     [numpy_helper.from_array(np.zeros([], np.float32), "zero")], f"{d}/m.onnx")
i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
save([helper.make_node("Shape", ["x"], ["s"]),
      helper.make_node("Gather", ["s", "i0"], ["n"], axis=0),
      helper.make_node("Gather", ["s", "i1"], ["m"], axis=0),
      helper.make_node("Concat", ["m", "n", "four"], ["shape"], axis=0),
      helper.make_node("Reshape", ["x", "shape"], ["r"]),
      helper.make_node("Relu", ["r"], ["y"])],
     [f("x", ["N", "M", 4])], [f("y", ["M", "N", 4])],
     [i64("i0", [0]), i64("i1", [1]), i64("four", [4])], f"{d}/dyn.onnx")
# grow.onnx: y = x + zeros[2, 3] with x [1, 3] (a no-op on values that grows
# the shape: must stay), z = w * ones[3] with w [2, 3] (a true no-op).
save([helper.make_node("Add", ["x", "zeros"], ["y"]), helper.make_node("Mul", ["w", "ones"], ["z"])],
     [f("x", [1, 3]), f("w", [2, 3])], [f("y", [2, 3]), f("z", [2, 3])],
     [numpy_helper.from_array(np.zeros([2, 3], np.float32), "zeros"),
      numpy_helper.from_array(np.ones([3], np.float32), "ones")], f"{d}/grow.onnx")
# lie.onnx: y = Identity(Relu(x)) with x [2, 3] but y declared [3, 2]: once
# the Identity goes, y is what Relu computes and the declaration shows wrong.
save([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Identity", ["r"], ["y"])],
     [f("x", [2, 3])], [f("y", [3, 2])], [], f"{d}/lie.onnx")
PYEOF
ok "the test models" -- test -s "$tmp/dyn.onnx"

# bad usage: exit 2, one line naming the culprit, no output
expect 2 "unknown pass in --disable" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --disable fold_constantz
errline "fold_constantz" "unknown pass in --disable"
absent "$tmp/bad.onnx" "unknown pass in --disable: no output"
expect 2 "an unknown pass among known ones" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --only fold_constants,nope
errline "nope" "an unknown pass among known ones"
absent "$tmp/bad.onnx" "an unknown pass among known ones: no output"
expect 2 "--level without its value" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --level
errline "--level" "--level without its value"
expect 2 "--target without its value" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --target
errline "--target" "--target without its value"
expect 2 "empty --only" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --only ""
errline "--only" "empty --only"
expect 2 "unknown option" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/bad.onnx" --fast
errline "--fast" "unknown option"
expect 2 "two models" -- "$GWR" optimize "$tmp/m.onnx" "$tmp/dyn.onnx" -o "$tmp/bad.onnx"
errline "dyn.onnx" "two models"
absent "$tmp/bad.onnx" "no output file after bad usage"

# bad models: exit 1, one line naming the file, no output
size=$(wc -c <"$tmp/dyn.onnx")
head -c $((size / 2)) "$tmp/dyn.onnx" >"$tmp/trunc.onnx"
expect 1 "a truncated model" -- "$GWR" optimize "$tmp/trunc.onnx" -o "$tmp/bad.onnx"
errline "trunc.onnx" "a truncated model"
absent "$tmp/bad.onnx" "a truncated model: no output"
: >"$tmp/empty.onnx"
expect 1 "an empty model" -- "$GWR" optimize "$tmp/empty.onnx" -o "$tmp/bad.onnx"
errline "empty.onnx" "an empty model"
absent "$tmp/bad.onnx" "an empty model: no output"

# an output that cannot be written: exit 1, one line, nothing left behind
expect 1 "output under a file" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/m.onnx/o.onnx"
errline "o.onnx" "output under a file"
expect 1 "output in a missing directory" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/nodir/o.onnx"
errline "nodir/o.onnx" "output in a missing directory"
absent "$tmp/nodir/o.onnx" "output in a missing directory: nothing written"
mkdir "$tmp/adir"
expect 1 "output over a directory" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/adir" --verify
errline "adir" "output over a directory"
ok "output over a directory: the directory is untouched and empty" -- test -d "$tmp/adir"
absent "$tmp/adir/model.onnx" "output over a directory: nothing inside it"
if ls "$tmp"/adir.* >/dev/null 2>&1 || ls "$tmp"/.adir* >/dev/null 2>&1; then
    fail=$((fail + 1)); echo "FAIL: output over a directory: a temporary was left: $(ls -a "$tmp")"
else pass=$((pass + 1)); fi

# the interface guard: an output whose declared type the passes would change
# is refused (exit 1, one line naming the file and the output), nothing written
expect 1 "declared output type that the graph contradicts" -- "$GWR" optimize "$tmp/lie.onnx" -o "$tmp/lie.opt.onnx"
errline "$tmp/lie.onnx" "declared output type that the graph contradicts"
hasf err "output 'y' was float32[3,2] before the passes and is float32[2,3] after them" "the guard names the output and both types"
absent "$tmp/lie.opt.onnx" "declared output type that the graph contradicts"
# and an output whose producer a pass rewrote keeps the type the file declared
# (the Blackman window's y [10] comes from an Add the passes remove)
BW=/usr/share/libonnx-testdata/data/node/test_blackmanwindow_expanded/model.onnx
expect 0 "the Blackman window optimized" -- "$GWR" optimize "$BW" -o "$tmp/bw.onnx" --level basic
$PY -c 'import sys, onnx; o = onnx.load(sys.argv[1]).graph.output[0].type.tensor_type; print(o.elem_type, [d.dim_value for d in o.shape.dim])' "$tmp/bw.onnx" >"$tmp/bwtype"
hasf bwtype "1 [10]" "the optimized Blackman window still declares y float32[10]"

# dynamic shapes that cannot be folded: optimized, written and verified; the
# Shape chain stays (no constant can hold [M, N, 4]) and --report says why.
# (--shape would bind N and M in the model itself, and the chain would fold.)
for level in basic extended all; do
    expect 0 "dynamic shapes at $level" -- "$GWR" optimize "$tmp/dyn.onnx" -o "$tmp/dyn.$level.onnx" --level $level \
        --report --verify --debug
    has out "^verify: 1 output, max abs 0, max rel 0: same" "dynamic shapes at $level: verified"
    has out "^fold_constants " "dynamic shapes at $level: fold_constants ran (and left the chain)"
    has out "^fold_shape_dims .*dims not known: N, M (bind with --shape)" "dynamic shapes at $level: the reason in --report"
done
$PY - "$tmp/dyn.all.onnx" "$tmp/dyn.onnx" >"$tmp/ops" <<'PYEOF'
import sys
import onnx
m, o = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
onnx.checker.check_model(m, full_check=True)
print(sorted(n.op_type for n in m.graph.node))
print([(v.name, [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]) for v in m.graph.output])
print([(v.name, [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]) for v in m.graph.input])
PYEOF
ok "dynamic shapes: onnx.checker accepts the output" -- test $? -eq 0
has ops "'Reshape'" "dynamic shapes: the Reshape stays"
has ops "'Shape'" "dynamic shapes: the Shape stays"
hasf ops "[('y', ['M', 'N', 4])]" "dynamic shapes: the output keeps its symbolic shape"
hasf ops "[('x', ['N', 'M', 4])]" "dynamic shapes: the input keeps its symbolic shape"
expect 0 "dynamic shapes: other sizes" -- "$GWR" verify "$tmp/dyn.onnx" "$tmp/dyn.all.onnx" --shape x=5,1,4 --atol 0 --rtol 0
expect 0 "dynamic shapes: optimizing again changes nothing" -- "$GWR" optimize "$tmp/dyn.all.onnx" -o "$tmp/dyn.again.onnx" --level all
ok "dynamic shapes: the same bytes" -- cmp "$tmp/dyn.all.onnx" "$tmp/dyn.again.onnx"

# graph outputs keep their names: y (an Identity's output) and z (y + 0)
for level in basic extended; do
    expect 0 "graph outputs at $level" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/m.$level.onnx" --level $level --verify
    has out "^verify: 2 outputs, max abs 0" "graph outputs at $level: both outputs the same"
    $PY -c "import onnx, sys; m = onnx.load(sys.argv[1]); print([o.name for o in m.graph.output], [i.name for i in m.graph.input])" \
        "$tmp/m.$level.onnx" >"$tmp/names"
    hasf names "['y', 'z'] ['x']" "graph outputs at $level: names and order kept"
done

# a rewrite that would change an output's shape is not made: x + zeros[2, 3]
# keeps its Add (and y its [2, 3]); w * ones[3] goes, an Identity keeping
# the output z a name apart from the input w
expect 0 "a shape-growing no-op" -- "$GWR" optimize "$tmp/grow.onnx" -o "$tmp/grow.o.onnx" --level all --verify --report
has out "^verify: 2 outputs, max abs 0" "a shape-growing no-op: both outputs the same"
has out "^eliminate_noop_arith  *[0-9]*  *1  *1" "a shape-growing no-op: only the true no-op is removed"
$PY -c "
import onnx, sys
m = onnx.load(sys.argv[1])
print(sorted(n.op_type for n in m.graph.node), [(o.name, [d.dim_value for d in o.type.tensor_type.shape.dim]) for o in m.graph.output])
" "$tmp/grow.o.onnx" >"$tmp/grow"
hasf grow "['Add', 'Identity'] [('y', [2, 3]), ('z', [2, 3])]" "a shape-growing no-op: the Add stays, the Mul goes, output shapes kept"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
