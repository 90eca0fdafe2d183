#!/bin/sh
# test_run.sh - gwr run, gwr verify and gwr test-onnx, judged by python3-onnx
# (Debian's /usr/bin/python3) and ONNX's own test data. Usage: test_run.sh GWR
G=$1
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
TD=/usr/share/libonnx-testdata/data/node
ID=$TD/test_identity

# Two models with the same input: y = x, and y = c (an initializer).
"$PY" - "$tmp" <<'PYEOF' || { echo "FAIL: python3-onnx could not make the models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
g1 = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "same", [x], [y])
c = numpy_helper.from_array(np.full((2, 3), 0.5, np.float32), "c")
g2 = helper.make_graph([helper.make_node("Identity", ["c"], ["y"])], "other", [x], [y], [c])
onnx.save(helper.make_model_gen_version(g1, opset_imports=[helper.make_opsetid("", 17)]), d + "/same.onnx")
onnx.save(helper.make_model_gen_version(g2, opset_imports=[helper.make_opsetid("", 17)]), d + "/other.onnx")
z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])
g3 = helper.make_graph([helper.make_node("Identity", ["z"], ["y"])], "zed", [z], [y])
onnx.save(helper.make_model_gen_version(g3, opset_imports=[helper.make_opsetid("", 17)]), d + "/zed.onnx")
onnx.save_tensor(numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "x"), d + "/x.pb")
# A conformance case whose expected output is wrong, for test-onnx.
import os
case = d + "/suite/test_wrong/test_data_set_0"
os.makedirs(case)
onnx.save(helper.make_model_gen_version(g1, opset_imports=[helper.make_opsetid("", 17)]), d + "/suite/test_wrong/model.onnx")
onnx.save_tensor(numpy_helper.from_array(np.ones((2, 3), np.float32), "x"), case + "/input_0.pb")
onnx.save_tensor(numpy_helper.from_array(np.full((2, 3), 2, np.float32), "y"), case + "/output_0.pb")
# Conv + Relu (a FusedConv for gwr's sessions) and its expected output by
# numpy; and y = Identity(Relu(x)) with x [2, 3] but y declared [3, 2],
# which the optimizer's interface guard refuses.
rng = np.random.default_rng(5)
W = rng.uniform(-1, 1, (3, 2, 3, 3)).astype(np.float32); B = rng.uniform(-1, 1, 3).astype(np.float32)
X = rng.uniform(-1, 1, (1, 2, 5, 5)).astype(np.float32)
cx = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])
cy = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 5, 5])
gc = helper.make_graph([helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
                        helper.make_node("Relu", ["c"], ["y"])], "convrelu", [cx], [cy],
                       [numpy_helper.from_array(W, "W"), numpy_helper.from_array(B, "B")])
onnx.save(helper.make_model_gen_version(gc, opset_imports=[helper.make_opsetid("", 17)]), d + "/convrelu.onnx")
onnx.save_tensor(numpy_helper.from_array(X, "x"), d + "/cx.pb")
P = np.pad(X[0], ((0, 0), (1, 1), (1, 1)))
Y = np.array([[[(P[:, i:i + 3, j:j + 3] * W[o]).sum() + B[o] for j in range(5)] for i in range(5)] for o in range(3)])
np.save(d + "/cy.npy", np.maximum(Y, 0)[None].astype(np.float32))
ly = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])
gl = helper.make_graph([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Identity", ["h"], ["y"])],
                       "lie", [x], [ly])
onnx.save(helper.make_model_gen_version(gl, opset_imports=[helper.make_opsetid("", 17)]), d + "/lie.onnx")
PYEOF

# ---- gwr run ----
expect 0 "run with a file input" -- "$G" run "$ID/model.onnx" --input "x=$ID/test_data_set_0/input_0.pb" -o "$tmp/o1"
hasf out "y: float32[1,1,2,2] [1, 2, 3, 4]" "run prints name, type and values"
has out "^run: [0-9.]* ms" "run prints the time"
has out "^memory: peak [0-9]* bytes" "run prints the memory plan"
ok "the written output equals ONNX's expected output, named" -- "$PY" -c "
import sys, onnx, numpy as np
from onnx import numpy_helper
a = onnx.load_tensor('$tmp/o1/output_0.pb'); b = onnx.load_tensor('$ID/test_data_set_0/output_0.pb')
assert a.name == 'y', a.name
assert np.array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))"
ok "-o also writes the inputs, named: a test case in ONNX's layout" -- "$PY" -c "
import onnx, numpy as np
from onnx import numpy_helper
a = onnx.load_tensor('$tmp/o1/input_0.pb'); b = onnx.load_tensor('$ID/test_data_set_0/input_0.pb')
assert a.name == 'x', a.name
assert np.array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))"
mkdir -p "$tmp/case/test_again" && cp "$ID/model.onnx" "$tmp/case/test_again/" && mv "$tmp/o1" "$tmp/case/test_again/test_data_set_0"
expect 0 "the written case passes gwr test-onnx" -- "$G" test-onnx "$tmp/case"
hasf out "1 passed, 0 failed" "the written case passes gwr test-onnx"
expect 0 "run with random inputs and a shape" -- "$G" run "$tmp/same.onnx" --random 7 --repeat 3
has out "^run: best [0-9.]* ms, median" "--repeat reports best and median"
"$G" run "$tmp/same.onnx" --random 7 >"$tmp/r1" 2>&1
"$G" run "$tmp/same.onnx" --random 7 >"$tmp/r2" 2>&1
"$G" run "$tmp/same.onnx" --random 8 >"$tmp/r3" 2>&1
ok "the same seed gives the same inputs" -- cmp -s "$(grep '^y' "$tmp/r1" >"$tmp/r1y"; echo "$tmp/r1y")" "$(grep '^y' "$tmp/r2" >"$tmp/r2y"; echo "$tmp/r2y")"
ok "another seed other inputs" -- sh -c "! cmp -s '$tmp/r1y' \"\$(grep '^y' '$tmp/r3' >'$tmp/r3y'; echo '$tmp/r3y')\""
expect 2 "run: --shape of the wrong rank" -- "$G" run "$ID/model.onnx" --shape x=2,2
errline "rank 4" "run: --shape of the wrong rank"
expect 2 "run: --shape of a known dim" -- "$G" run "$tmp/same.onnx" --shape x=3,3
errline "dim 0" "run: --shape contradicting a known dim"
expect 2 "run: --input for no such input" -- "$G" run "$ID/model.onnx" --input "nope=$tmp/x.pb"
errline "nope" "run: --input for no such input"
expect 2 "run: the same input twice" -- "$G" run "$ID/model.onnx" --input "x=$tmp/x.pb" --input "x=$tmp/x.pb"
errline "twice" "run: the same input twice"
expect 2 "run: an input file of the wrong shape" -- "$G" run "$ID/model.onnx" --input "x=$tmp/x.pb"
errline "input 'x'" "run: an input of the wrong shape"
expect 1 "run: an unreadable input file" -- "$G" run "$ID/model.onnx" --input "x=$tmp/none.pb"
errline "none.pb" "run: an unreadable input file"
expect 1 "run: a missing model" -- "$G" run "$tmp/none.onnx"
errline "none.onnx" "run: a missing model"
expect 2 "run: no model" -- "$G" run
expect 2 "run: --threads 0" -- "$G" run "$ID/model.onnx" --threads 0
expect 1 "run: -o into a file" -- "$G" run "$ID/model.onnx" -o "$tmp/x.pb"
errline "x.pb" "run: -o into a file"
# OpenBLAS is opened when a session first needs a GEMM: a model without one
# runs when the library cannot be loaded, one with a MatMul says why.
MM=$TD/test_matmul_2d
expect 0 "run: no GEMM, no OpenBLAS needed" -- env GWR_OPENBLAS=/nonexistent/libopenblas.so "$G" run "$ID/model.onnx"
expect 1 "run: a MatMul when OpenBLAS cannot be loaded" -- env GWR_OPENBLAS=/nonexistent/libopenblas.so "$G" run "$MM/model.onnx"
errline "cannot load OpenBLAS (/nonexistent/libopenblas.so)" "run: a MatMul when OpenBLAS cannot be loaded"
expect 0 "run: a MatMul with OpenBLAS" -- "$G" run "$MM/model.onnx"

# ---- gwr verify ----
expect 0 "verify a model against itself" -- "$G" verify "$tmp/same.onnx" "$tmp/same.onnx"
hasf out "y: float32[2,3], max abs error 0, max rel error 0" "verify prints the errors per output"
hasf out "outputs match" "verify says the outputs match"
expect 1 "verify two models that differ" -- "$G" verify "$tmp/same.onnx" "$tmp/other.onnx" --input "x=$tmp/x.pb"
hasf out "beyond tolerance" "verify flags the output"
has out "max abs error 4.5" "verify gives the largest error (5 - 0.5)"
expect 0 "verify with a tolerance wide enough" -- "$G" verify "$tmp/same.onnx" "$tmp/other.onnx" --input "x=$tmp/x.pb" --atol 5
expect 2 "verify: one model" -- "$G" verify "$tmp/same.onnx"
expect 2 "verify: a bad tolerance" -- "$G" verify "$tmp/same.onnx" "$tmp/same.onnx" --rtol -1
expect 1 "verify: models whose inputs disagree" -- "$G" verify "$tmp/same.onnx" "$ID/model.onnx"
errline "input 'x': rank 2, expected 4" "verify: models whose inputs disagree"
expect 1 "verify: a model lacking an input" -- "$G" verify "$tmp/same.onnx" "$tmp/zed.onnx"
errline "has no input 'x'" "verify: a model lacking an input"

# ---- sessions optimize a copy; --no-optimize runs the model as written ----
expect 0 "run optimized" -- "$G" run "$tmp/convrelu.onnx" --input "x=$tmp/cx.pb" -o "$tmp/co"
has out "^run: [0-9.]* ms (plan [0-9.]* ms optimized" "run says the session is optimized"
expect 0 "run --no-optimize" -- "$G" run "$tmp/convrelu.onnx" --input "x=$tmp/cx.pb" -o "$tmp/cr" --no-optimize
has out "^run: [0-9.]* ms (plan [0-9.]* ms as written" "--no-optimize: the session runs the model as written"
for o in co cr; do
    ok "$o: Conv+Relu equals numpy's" -- "$PY" -c "
import numpy as np, onnx
from onnx import numpy_helper
got = numpy_helper.to_array(onnx.load_tensor('$tmp/$o/output_0.pb')); want = np.load('$tmp/cy.npy')
assert got.shape == want.shape and np.abs(got - want).max() <= 1e-5 + 1e-4 * np.abs(want).max(), np.abs(got - want).max()"
done
expect 0 "run: the optimizer refuses the model, the run goes on" -- "$G" run "$tmp/lie.onnx" --input "x=$tmp/x.pb"
hasf out "y: float32[2,3] [0, 1, 2, 3, 4, 5]" "the model as written ran"
has out "plan [0-9.]* ms as written" "the plan says as written"
errline "running the model as written: optimizing: " "the reason is on stderr"
expect 0 "verify optimized" -- "$G" verify "$tmp/convrelu.onnx" "$tmp/convrelu.onnx" --input "x=$tmp/cx.pb"
expect 0 "verify --no-optimize" -- "$G" verify "$tmp/convrelu.onnx" "$tmp/convrelu.onnx" --no-optimize
expect 0 "test-onnx --no-optimize" -- "$G" test-onnx --no-optimize --filter test_identity "$TD"
has out "^[1-9][0-9]* passed, 0 failed" "test-onnx --no-optimize: identity passes"

# ---- gwr test-onnx ----
expect 0 "test-onnx on ONNX's identity test" -- "$G" test-onnx --filter test_identity "$TD"
has out "^[1-9][0-9]* passed, 0 failed" "test-onnx: identity passes"
expect 1 "test-onnx: a failure not listed" -- "$G" test-onnx "$tmp/suite"
hasf out "FAIL test_wrong: output 0 ('y'): 6 of 6 elements differ" "test-onnx names the failure and why"
hasf out "0 passed, 1 failed, 0 skipped" "test-onnx ends with the counts"
printf '# comment\ntest_wrong expected output is wrong on purpose\n' >"$tmp/exp.txt"
expect 0 "test-onnx: the failure is expected" -- "$G" test-onnx --expected "$tmp/exp.txt" "$tmp/suite"
hasf out "(expected)" "test-onnx marks an expected failure"
printf 'test_wrong x\ntest_gone was removed\n' >"$tmp/exp2.txt"
expect 1 "test-onnx: a stale entry" -- "$G" test-onnx --expected "$tmp/exp2.txt" "$tmp/suite"
hasf out "STALE test_gone" "test-onnx names the stale entry"
expect 0 "test-onnx: a looser tolerance" -- "$G" test-onnx --atol 1.5 "$tmp/suite"
expect 0 "test-onnx: --write-expected" -- "$G" test-onnx --write-expected "$tmp/w.txt" --expected "$tmp/exp.txt" "$tmp/suite"
ok "--write-expected lists the failure" -- grep -q "^test_wrong output 0" "$tmp/w.txt"
expect 0 "test-onnx: --table" -- "$G" test-onnx --table "$tmp/t.md" --filter test_identity "$TD"
ok "the table has a row for Identity" -- grep -q "^| Identity | " "$tmp/t.md"
expect 2 "test-onnx: no directory" -- "$G" test-onnx
expect 1 "test-onnx: not a directory" -- "$G" test-onnx "$tmp/x.pb"
errline "not a directory" "test-onnx: not a directory"
expect 1 "test-onnx: a missing expected file" -- "$G" test-onnx --expected "$tmp/none.txt" "$tmp/suite"

echo "test_run.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
