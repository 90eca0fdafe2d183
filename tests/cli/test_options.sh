#!/bin/sh
# test_options.sh - options that cannot lie (issue 22): values past int64,
# thread counts past the limit, input files of the wrong dtype or shape are
# refused in one line with exit 2. Usage: test_options.sh GWR
G=$1
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

"$PY" - "$tmp" <<'PYEOF' || { echo "FAIL: python3-onnx could not make the models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
op = [helper.make_opsetid("", 17)]
# y = Relu(x), x [batch, 3]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
onnx.save(helper.make_model(g, opset_imports=op), d + "/relu.onnx")
onnx.save_tensor(numpy_helper.from_array(np.ones((2, 3), np.float64), "x"), d + "/f64.pb")
onnx.save_tensor(numpy_helper.from_array(np.ones((2, 4), np.float32), "x"), d + "/wide.pb")
onnx.save_tensor(numpy_helper.from_array(np.ones((2, 3, 1), np.float32), "x"), d + "/rank3.pb")
onnx.save_tensor(numpy_helper.from_array(np.ones((2, 3), np.float32), "x"), d + "/good.pb")
PYEOF
M=$tmp/relu.onnx
BIG=99999999999999999999

# ---- values past int64 are refused, not clamped ----
expect 2 "run: --shape past int64" -- "$G" run "$M" --shape "x=2,$BIG"
errline "past int64" "run: --shape past int64"
hasf err "--shape 'x=2,$BIG'" "run: the message names the option"
expect 2 "optimize: --shape past int64" -- "$G" optimize "$M" -o "$tmp/o.onnx" --shape "batch=$BIG"
errline "past int64" "optimize: --shape past int64"
absent "$tmp/o.onnx" "optimize: nothing written"
expect 2 "analyze: --shape past int64" -- "$G" analyze "$M" --shape "batch=$BIG"
errline "past int64" "analyze: --shape past int64"
expect 0 "optimize: --shape at INT64_MAX is a value" -- "$G" optimize "$M" -o "$tmp/o.onnx" --shape "batch=9223372036854775807"
expect 2 "run: --repeat past int64" -- "$G" run "$M" --repeat "$BIG"
errline "past int64" "run: --repeat past int64"

# ---- --threads: at most GWR_SESSION_MAX_THREADS (256) ----
expect 2 "run: --threads 100000" -- "$G" run "$M" --threads 100000
errline "--threads '100000': at most 256" "run: --threads past the limit"
expect 2 "run: --threads 257" -- "$G" run "$M" --threads 257
expect 2 "run: --threads past int" -- "$G" run "$M" --threads 4294967297
expect 2 "run: --threads 0" -- "$G" run "$M" --threads 0
errline "below 1" "run: --threads 0"
expect 0 "run: --threads 4" -- "$G" run "$M" --threads 4
hasf out "4 threads" "run: --threads 4 runs on 4 threads"

# ---- --input files of the wrong dtype or shape: exit 2, naming the file ----
expect 2 "run: an input file of the wrong dtype" -- "$G" run "$M" --input "x=$tmp/f64.pb"
errline "f64.pb" "run: wrong dtype"
hasf err "dtype float64, expected float32" "run: wrong dtype says which"
expect 2 "run: an input file of the wrong dim" -- "$G" run "$M" --input "x=$tmp/wide.pb"
errline "wide.pb" "run: wrong dim"
hasf err "dim 1 is 4, expected 3" "run: wrong dim says which"
expect 2 "run: an input file of the wrong rank" -- "$G" run "$M" --input "x=$tmp/rank3.pb"
errline "rank 3, expected 2" "run: wrong rank"
expect 2 "verify: an input file of the wrong dtype" -- "$G" verify "$M" "$M" --input "x=$tmp/f64.pb"
errline "f64.pb" "verify: wrong dtype"
expect 0 "run: the right file" -- "$G" run "$M" --input "x=$tmp/good.pb"

# ---- one --shape for every command: INPUT=D0,D1,... or SYM=N, decided by the model ----
"$PY" - "$tmp" <<'PYEOF' || { echo "FAIL: python3-onnx could not make the models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
op = [helper.make_opsetid("", 17)]
# x [1, 1, ?] (an unknown, unnamed dim) -> Conv with a kernel of 512
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, None])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
W = numpy_helper.from_array(np.full((1, 1, 512), 0.5, np.float32), "W")
g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"])], "conv", [x], [y], [W])
onnx.save(helper.make_model(g, opset_imports=op), d + "/unk.onnx")
# an input named like a symbolic dim
b = helper.make_tensor_value_info("batch", TensorProto.FLOAT, ["batch", 2])
yb = helper.make_tensor_value_info("yb", TensorProto.FLOAT, ["batch", 2])
g = helper.make_graph([helper.make_node("Relu", ["batch"], ["yb"])], "both", [b], [yb])
onnx.save(helper.make_model(g, opset_imports=op), d + "/both.onnx")
PYEOF
U=$tmp/unk.onnx
expect 2 "run: an unknown unnamed dim and no --shape" -- "$G" run "$U"
errline "input 'x' dim 2 is unknown (unnamed): give --shape x=1,1,D2" "run: names the input and the dim"
expect 2 "verify: an unknown unnamed dim and no --shape" -- "$G" verify "$U" "$U"
errline "input 'x' dim 2 is unknown" "verify: names the input and the dim"
expect 2 "optimize --verify: an unknown unnamed dim and no --shape" -- "$G" optimize "$U" -o "$tmp/u.onnx" --verify
errline "input 'x' dim 2 is unknown" "optimize --verify: names the input and the dim"
absent "$tmp/u.onnx" "optimize --verify: nothing written"
expect 0 "optimize without --verify needs no dim" -- "$G" optimize "$U" -o "$tmp/u0.onnx"
expect 0 "run --shape x=1,1,1024" -- "$G" run "$U" --shape x=1,1,1024
hasf out "y: float32[1,1,513]" "run: the whole shape gives y of 1024 - 512 + 1"
expect 0 "verify --shape x=1,1,1024" -- "$G" verify "$U" "$U" --shape x=1,1,1024
expect 0 "optimize --verify --shape x=1,1,1024" -- "$G" optimize "$U" -o "$tmp/u.onnx" --verify --shape x=1,1,1024
ok "optimize: the whole shape is the written input's" -- "$PY" -c "
import onnx
m = onnx.load('$tmp/u.onnx')
assert [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == [1, 1, 1024], m.graph.input[0]"
expect 0 "analyze --shape x=1,1,1024" -- "$G" analyze "$U" --shape x=1,1,1024
# Conv: 2 * 513 outputs * 512 terms (docs/api.md: a multiply-add is 2 FLOPs)
has out "^FLOPs: *525312 " "analyze: FLOPs of the whole shape"
hasf out "unknown dims:   0 tensors" "analyze: no unknown dim left"

# the same meaning in every command: x=4,3 binds batch=4, as batch=4 does
for form in "x=4,3" "batch=4"; do
    expect 0 "run --shape $form" -- "$G" run "$M" --shape "$form"
    hasf out "y: float32[4,3]" "run --shape $form"
    expect 0 "verify --shape $form" -- "$G" verify "$M" "$M" --shape "$form"
    hasf out "y: float32[4,3]" "verify --shape $form"
    expect 0 "optimize --shape $form" -- "$G" optimize "$M" -o "$tmp/b.onnx" --shape "$form" --verify
    ok "optimize --shape $form: x is [4, 3]" -- "$PY" -c "
import onnx
m = onnx.load('$tmp/b.onnx')
assert [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == [4, 3], m.graph.input[0]"
    expect 0 "analyze --shape $form" -- "$G" analyze "$M" --shape "$form"
    has out "^FLOPs: *12$" "analyze --shape $form: Relu of 4 x 3"
    hasf out "bound dims:     batch=4" "analyze --shape $form: batch bound"
done
expect 2 "a name both an input and a dim" -- "$G" run "$tmp/both.onnx" --shape batch=2
errline "'batch' is both an input and a symbolic dim" "both: refused"
expect 2 "a name neither" -- "$G" optimize "$M" -o "$tmp/n.onnx" --shape nope=2
errline "the model has no input and no symbolic dim 'nope'" "neither: refused"
expect 2 "two extents for a symbol" -- "$G" run "$M" --shape batch=2,3
errline "'batch' is a symbolic dim: give one extent" "a symbol: one extent"
expect 2 "a whole shape disagreeing with a binding" -- "$G" analyze "$M" --shape batch=2 --shape x=4,3
errline "makes dim 'batch' 4, but --shape 'batch=2' makes it 2" "disagreeing: both named"
expect 2 "a whole shape of the wrong rank" -- "$G" optimize "$M" -o "$tmp/n.onnx" --shape x=4
errline "input 'x' has rank 2, not 1" "wrong rank: refused"
expect 2 "a whole shape contradicting a known dim" -- "$G" analyze "$M" --shape x=4,5
errline "dim 1 of input 'x' is 3, not 5" "known dim: refused"
expect 2 "--shape and --input of one input" -- "$G" run "$M" --shape x=2,3 --input "x=$tmp/good.pb"
errline "comes from --input" "--shape and --input: refused"

# ---- gwr run --profile FILE.json: a Chrome trace and the top of it ----
"$PY" - "$tmp" <<'PYEOF' || { echo "FAIL: python3-onnx could not make the models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
op = [helper.make_opsetid("", 17)]
# c (bool) ? (x @ W -> Relu -> Add b) : Neg(x); then Sigmoid. Named nodes.
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 4])
e = helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 4])
W = numpy_helper.from_array(np.eye(4, dtype=np.float32), "W")
B = numpy_helper.from_array(np.ones(4, np.float32), "b")
then = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
                          helper.make_node("Relu", ["m"], ["r"], name="relu"),
                          helper.make_node("Add", ["r", "b"], ["t"], name="add")], "then", [], [t])
other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="neg")], "else", [], [e])
g = helper.make_graph([helper.make_node("If", ["c"], ["i"], name="if", then_branch=then, else_branch=other),
                       helper.make_node("Sigmoid", ["i"], ["y"], name="sig")], "prof", [x, c], [y], [W, B])
onnx.save(helper.make_model(g, opset_imports=op), d + "/prof.onnx")
onnx.save_tensor(numpy_helper.from_array(np.array(True), "c"), d + "/true.pb")
PYEOF
P=$tmp/prof.onnx
cat >"$tmp/check_profile.py" <<'PYEOF'
import json, sys
path, repeat, optimized = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
doc = json.load(open(path))
ev = doc["traceEvents"]
for e in ev:
    assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0, e
    assert set(e) >= {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}, e
phases = [e["name"] for e in ev if e["cat"] == "phase"]
assert sorted(phases) == sorted(["load", "plan"] + (["optimize"] if optimized else [])), phases
runs = [e for e in ev if e["cat"] == "run"]
assert len(runs) == repeat, runs
layers = [e for e in ev if e["cat"] == "layer"]
top = [e["name"] for e in layers if e["args"]["depth"] == 0]
body = [e["name"] for e in layers if e["args"]["depth"] == 1]
if not optimized:
    # as written: the two initializers (Constant layers), If, Sigmoid each run;
    # the then-branch's three layers inside the If, once per run
    assert sorted(top) == sorted(["W", "b", "if", "sig"] * repeat), top
    assert sorted(body) == sorted(["mm", "relu", "add"] * repeat), body
    mm = [e for e in layers if e["name"] == "mm"][0]
    assert mm["args"]["op"] == "MatMul" and mm["args"]["shapes"] == "float32[2,4], float32[4,4] -> float32[2,4]", mm
else:
    assert len(top) % repeat == 0 and len(top) > 0 and len(body) % repeat == 0, (top, body)
# the layers of a run lie within it
for r in runs:
    inside = [e for e in layers if r["ts"] - 0.001 <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"] + 0.002]
    assert len(inside) == len(layers) // repeat, (r, len(inside), len(layers))
PYEOF
expect 0 "run --profile, as written" -- "$G" run "$P" --input "c=$tmp/true.pb" --no-optimize --repeat 3 --profile "$tmp/p.json"
ok "the profile is a Chrome trace with one event per executed layer" -- "$PY" "$tmp/check_profile.py" "$tmp/p.json" 3 0
has out "^profile: 3 runs, [0-9.]* ms in the network's layers" "the table's head"
has out "^  If  *[0-9.]*  *[0-9.]*  *3  *1$" "by op: If, 3 calls, 1 layer"
has out "^  MatMul  *[0-9.]*  *[0-9.]*  *3  *1$" "by op: the body's MatMul counted"
has out "^  mm  *MatMul  *[0-9.]*  *[0-9.]*  *3$" "by layer: mm, 3 calls"
hasf out "wrote the profile to $tmp/p.json" "says where"
expect 0 "run --profile, optimized" -- "$G" run "$P" --input "c=$tmp/true.pb" --profile "$tmp/p2.json"
ok "the optimized profile has the optimize phase" -- "$PY" "$tmp/check_profile.py" "$tmp/p2.json" 1 1
expect 1 "run --profile into a missing directory" -- "$G" run "$P" --input "c=$tmp/true.pb" --profile "$tmp/no/p.json"
errline "$tmp/no/p.json" "an unwritable profile is named"
absent "$tmp/no/p.json" "no profile left"

echo "test_options.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
