#!/bin/sh
# Tests of `gwr analyze`: small ONNX models written here with ONNX's own
# Python package (/usr/bin/python3 for python3-onnx), their FLOPs, bytes,
# parameters and peak memory computed independently in Python from the
# shapes, then compared with what gwr prints; JSON validity; bad input.
# usage: test_analyze.sh path/to/gwr
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"

if ! $PY -c 'import onnx' 2>/dev/null; then
    echo "FAIL: need python3-onnx for $PY (scripts/setup.sh installs it)"
    exit 1
fi

# ---- the models ----
# mm.onnx: Y = Relu(A @ W) with A float[batch, 3] (symbolic), W an
# initializer float[3, 4]. conv.onnx: Relu(Conv of x [1,3,8,8] by w
# [4,3,3,3] and b [4], pads 1). Each comes with its expected figures, computed here
# from the shapes and the conventions of docs/api.md.
cat > "$tmp/make.py" <<'EOF'
import json, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]

def save(graph, name):
    m = helper.make_model_gen_version(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{name}.onnx")

# MatMul + Relu
K, N = 3, 4
W = numpy_helper.from_array(np.arange(K * N, dtype=np.float32).reshape(K, N), "W")
g = helper.make_graph(
    [helper.make_node("MatMul", ["A", "W"], ["H"], name="mm"), helper.make_node("Relu", ["H"], ["Y"], name="act")],
    "mm_graph",
    [helper.make_tensor_value_info("A", TensorProto.FLOAT, ["batch", K])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", N])],
    initializer=[W])
save(g, "mm")
expect = {}
for batch, key in ((1, "mm_unbound"), (2, "mm_b2")):
    mm = 2 * batch * N * K                     # 2*M*N*K
    relu = batch * N                           # one per output element
    a, h, y = 4 * batch * K, 4 * batch * N, 4 * batch * N
    # Network order: W (a Constant layer), mm, act. A lives [0,1], H [1,2], Y [2,2].
    peaks = [a, a + h, h + y]
    expect[key] = {"flops": mm + relu, "mm": mm, "params": K * N, "param_bytes": 4 * K * N,
                   "bytes_read": (a + 4 * K * N) + h, "bytes_written": h + y,
                   "peak": max(peaks), "peak_index": peaks.index(max(peaks)), "peak_layer": ["W", "mm", "act"][peaks.index(max(peaks))]}

# Conv with bias
n, cin, hw, cout, k = 1, 3, 8, 4, 3
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, cin, hw, hw])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, cout, hw, hw])
w = numpy_helper.from_array(np.ones((cout, cin, k, k), dtype=np.float32), "w")
b = numpy_helper.from_array(np.zeros((cout,), dtype=np.float32), "b")
# The Conv's output "c" has no type in the file: gwr infers it.
g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                       helper.make_node("Relu", ["c"], ["y"], name="act")],
                      "conv_graph", [x], [y], initializer=[w, b])
save(g, "conv")
out_elems = n * cout * hw * hw                 # pads 1, stride 1: same size
# 2 * N*Cout*H*W * Cin*kh*kw, + the bias, + the Relu.
expect["conv"] = {"flops": 2 * out_elems * cin * k * k + out_elems + out_elems, "params": cout * cin * k * k + cout}

json.dump(expect, open(f"{out}/expect.json", "w"))
EOF
ok "make the models" -- $PY "$tmp/make.py" "$tmp"
MM=$tmp/mm.onnx
CONV=$tmp/conv.onnx

# check FILE KEY: the JSON report in FILE matches the expectations KEY.
cat > "$tmp/check.py" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
exp = json.load(open(sys.argv[2]))[sys.argv[3]]
errs = []
def eq(what, got, want):
    if got != want:
        errs.append(f"{what}: {got!r}, expected {want!r}")
eq("flops", rep["flops"], exp["flops"])
eq("parameters.elements", rep["parameters"]["elements"], exp["params"])
if "param_bytes" in exp:
    eq("parameters.bytes", rep["parameters"]["bytes"], exp["param_bytes"])
    eq("bytes_read", rep["bytes_read"], exp["bytes_read"])
    eq("bytes_written", rep["bytes_written"], exp["bytes_written"])
    eq("memory.peak_bytes", rep["memory"]["peak_bytes"], exp["peak"])
    eq("memory.peak_index", rep["memory"]["peak_index"], exp["peak_index"])
    eq("memory.peak_layer", rep["memory"]["peak_layer"], exp["peak_layer"])
    eq("memory.order", rep["memory"]["order"], "network")
    top = rep["top_layers"][0]
    eq("top_layers[0].op", top["op"], "MatMul")
    eq("top_layers[0].flops", top["flops"], exp["mm"])
if errs:
    print("\n".join(errs))
    sys.exit(1)
EOF

# ---- help ----
expect 0 "analyze --help" -- "$GWR" analyze --help
hasf out "usage: gwr analyze MODEL" "analyze help"
expect 0 "help analyze" -- "$GWR" help analyze
hasf out "usage: gwr analyze MODEL" "help analyze"
expect 0 "--help lists analyze" -- "$GWR" --help
hasf out "analyze" "--help lists analyze"

# ---- text ----
expect 0 "analyze mm" -- "$GWR" analyze "$MM"
hasf out "model:          $MM" "text: the model"
hasf out "FLOPs:          28" "text: FLOPs with batch assumed 1"
hasf out "assumed dims:   batch (unbound, counted as 1)" "text: batch assumed"
hasf out "parameters:     1 tensor, 12 elements, 48 bytes" "text: parameters"
hasf out "top 3 layers by FLOPs:" "text: the top table"
hasf out "MatMul" "text: MatMul listed"
hasf out "at layer 'act' (position 2 of 3, network order)" "text: where the peak is"
expect 0 "analyze mm --shape batch=2" -- "$GWR" analyze "$MM" --shape batch=2
hasf out "FLOPs:          56" "text: FLOPs with batch=2"
hasf out "assumed dims:   (none)" "text: nothing assumed"
hasf out "bound dims:     batch=2" "text: bound dims"
hasf out "layers:         3 (3 with every dim known or bound)" "text: all known"
expect 0 "analyze --top 0" -- "$GWR" analyze --top 0 "$MM"
lacks out "by FLOPs" "--top 0: no table"
expect 2 "analyze --shape naming no input and no dim" -- "$GWR" analyze "$MM" --shape=batch=2 --shape seq=7
errline "the model has no input and no symbolic dim 'seq'" "analyze --shape naming no input and no dim"

# ---- JSON ----
expect 0 "analyze --json mm" -- "$GWR" analyze --json "$MM"
cp "$tmp/out" "$tmp/mm1.json"
ok "json mm: valid JSON" -- sh -c '"$0" -c "import json,sys; json.load(sys.stdin)" < "$1"' "$PY" "$tmp/mm1.json"
ok "json mm: the expected figures (batch assumed 1)" -- $PY "$tmp/check.py" "$tmp/mm1.json" "$tmp/expect.json" mm_unbound
hasf out '"assumed": ["batch"]' "json: batch assumed"
expect 0 "analyze --json mm --shape batch=2" -- "$GWR" analyze --json --shape batch=2 "$MM"
cp "$tmp/out" "$tmp/mm2.json"
ok "json mm batch=2: valid JSON" -- sh -c '"$0" -c "import json,sys; json.load(sys.stdin)" < "$1"' "$PY" "$tmp/mm2.json"
ok "json mm batch=2: the expected figures" -- $PY "$tmp/check.py" "$tmp/mm2.json" "$tmp/expect.json" mm_b2
expect 0 "analyze --json conv" -- "$GWR" analyze --json --top all "$CONV"
cp "$tmp/out" "$tmp/conv.json"
ok "json conv: valid JSON" -- sh -c '"$0" -c "import json,sys; json.load(sys.stdin)" < "$1"' "$PY" "$tmp/conv.json"
ok "json conv: the expected figures" -- $PY "$tmp/check.py" "$tmp/conv.json" "$tmp/expect.json" conv
# Models of ONNX's backend test data, when installed: valid JSON each.
DATA=/usr/share/libonnx-testdata/data
for m in node/test_matmul_3d node/test_gemm_default_single_elem_vector_bias node/test_if node/test_loop11 \
         simple/test_sequence_model1 pytorch-converted/test_ConvTranspose2d; do
    [ -f "$DATA/$m/model.onnx" ] || continue
    expect 0 "analyze --json $m" -- "$GWR" analyze --json "$DATA/$m/model.onnx"
    cp "$tmp/out" "$tmp/t.json"
    ok "analyze --json $m: valid JSON" -- sh -c '"$0" -c "import json,sys; json.load(sys.stdin)" < "$1"' "$PY" "$tmp/t.json"
done

# ---- bad input ----
mkdir "$tmp/adir"
head -c 20 "$MM" > "$tmp/truncated.onnx"
$PY -c 'import random, sys; random.seed(3); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(500)))' > "$tmp/random.onnx"
for m in "$tmp/missing.onnx" "$tmp/adir" "$tmp/truncated.onnx" "$tmp/random.onnx"; do
    expect 1 "analyze $(basename "$m")" -- "$GWR" analyze "$m"
    errline "$m" "analyze $(basename "$m")"
    expect 1 "analyze --json $(basename "$m")" -- "$GWR" analyze --json "$m"
    errline "$m" "analyze --json $(basename "$m")"
    lines out 0 "analyze --json $(basename "$m"): nothing on stdout"
done
for bad in batch "=4" "batch=" "batch=-1" "batch=four" "batch=1x" "batch=99999999999999999999"; do
    expect 2 "--shape '$bad'" -- "$GWR" analyze "$MM" --shape "$bad"
    errline "--shape '$bad'" "--shape '$bad'"
done
expect 2 "--shape bound twice" -- "$GWR" analyze "$MM" --shape batch=1 --shape batch=2
errline "batch=2" "--shape bound twice"
expect 2 "--shape without a value" -- "$GWR" analyze "$MM" --shape
errline "--shape" "--shape without a value"
expect 2 "--top bad" -- "$GWR" analyze "$MM" --top lots
errline "lots" "--top bad"
expect 2 "--top negative" -- "$GWR" analyze "$MM" --top -3
expect 2 "no MODEL" -- "$GWR" analyze
errline "missing MODEL" "no MODEL"
expect 2 "two models" -- "$GWR" analyze "$MM" "$CONV"
errline "$CONV" "two models"
expect 2 "unknown flag" -- "$GWR" analyze "$MM" --frob
errline "--frob" "unknown flag"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
