#!/bin/sh
# test_quantize_cli.sh GWR - `gwr quantize` on bad usage and bad input
# (issue 24): every option's bad value, calibration samples of the wrong
# name, dtype or shape (.npz from numpy.savez / savez_compressed, TensorProto
# directories from onnx.numpy_helper), an empty or missing calibration
# directory, a model already quantized, `--bits 3`: exit 2, one line naming
# the culprit, no output file (nor a temporary of it) left behind. Good
# calibration directories of each layout are shown to load: the run then
# stops at a later refusal (4-bit dynamic), not at the samples.
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23 and numpy (scripts/setup.sh)
. "$HERE/lib.sh"

# m.onnx: y = MatMul(x [1, 4] float32, W [4, 3]) + ids-free; q.onnx: already
# quantized (QuantizeLinear -> DequantizeLinear). Calibration directories:
#   good_npz (savez and savez_compressed), good_pb (test_data_set_N/input_0.pb,
#   output_0.pb beside), empty, name (an array 'foo'), dtype (x int32),
#   shape (x [2, 4]), missing (no arrays), trunc
#   (a .npz cut short), pbdtype (input_0.pb float64).
$PY - "$tmp" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
W = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 7, "W")
g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "m", [f("x", [1, 4])], [f("y", [1, 3])], [W])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, f"{d}/m.onnx")
sc = numpy_helper.from_array(np.array(0.1, np.float32), "sc")
zp = numpy_helper.from_array(np.array(128, np.uint8), "zp")
g = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "sc", "zp"], ["q"]),
                       helper.make_node("DequantizeLinear", ["q", "sc", "zp"], ["y"])],
                      "q", [f("x", [1, 4])], [f("y", [1, 4])], [sc, zp])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, f"{d}/q.onnx")
rng = np.random.default_rng(0)
x = lambda: rng.standard_normal((1, 4)).astype(np.float32)
for sub in ["good_npz", "good_pb", "empty", "name", "dtype", "shape", "missing", "trunc", "pbdtype"]:
    os.makedirs(f"{d}/{sub}")
np.savez(f"{d}/good_npz/s1.npz", x=x())
np.savez_compressed(f"{d}/good_npz/s2.npz", x=x())
for k in range(2):
    os.makedirs(f"{d}/good_pb/test_data_set_{k}")
    with open(f"{d}/good_pb/test_data_set_{k}/input_0.pb", "wb") as fh:
        fh.write(numpy_helper.from_array(x(), "x").SerializeToString())
    with open(f"{d}/good_pb/test_data_set_{k}/output_0.pb", "wb") as fh:
        fh.write(numpy_helper.from_array(np.zeros((1, 3), np.float32), "y").SerializeToString())
np.savez(f"{d}/name/s1.npz", x=x(), foo=x())
np.savez(f"{d}/dtype/s1.npz", x=np.zeros((1, 4), np.int32))
np.savez_compressed(f"{d}/shape/s1.npz", x=np.zeros((2, 4), np.float32))
np.savez(f"{d}/missing/s1.npz")  # no arrays at all
np.savez(f"{d}/trunc/s1.npz", x=x())
b = open(f"{d}/trunc/s1.npz", "rb").read()
open(f"{d}/trunc/s1.npz", "wb").write(b[: len(b) // 2])
os.makedirs(f"{d}/pbdtype/s0")
with open(f"{d}/pbdtype/s0/input_0.pb", "wb") as fh:
    fh.write(numpy_helper.from_array(np.zeros((1, 4), np.float64), "x").SerializeToString())
PYEOF
ok "the test models and samples" -- test -s "$tmp/good_pb/test_data_set_1/input_0.pb"

O="$tmp/out.onnx"
# bad usage: exit 2, one line naming the option, nothing written
bad() {  # bad DESCRIPTION NAME ARGS...: exit 2, one line naming NAME, no OUT
    desc=$1; name=$2; shift 2
    expect 2 "$desc" -- "$GWR" quantize "$@"
    errline "$name" "$desc"
    absent "$O" "$desc: no output"
}
bad "--bits 3" "--bits" "$tmp/m.onnx" -o "$O" --mode weight-only --bits 3
bad "--bits 3 (dynamic)" "--bits" "$tmp/m.onnx" -o "$O" --bits 3
bad "--bits without its value" "--bits" "$tmp/m.onnx" -o "$O" --bits
bad "an unknown mode" "--mode" "$tmp/m.onnx" -o "$O" --mode fast
bad "an unknown target" "--target" "$tmp/m.onnx" -o "$O" --target trt
bad "an unknown format" "--format" "$tmp/m.onnx" -o "$O" --format qlinear
bad "an unknown method" "--method" "$tmp/m.onnx" -o "$O" --method kl
bad "percentile 40" "--percentile" "$tmp/m.onnx" -o "$O" --mode static --percentile 40
bad "percentile not a number" "--percentile" "$tmp/m.onnx" -o "$O" --percentile 99x
bad "an unknown activation type" "--activations" "$tmp/m.onnx" -o "$O" --activations int4
bad "block size 24" "--block-size" "$tmp/m.onnx" -o "$O" --mode weight-only --block-size 24
bad "block size 8" "--block-size" "$tmp/m.onnx" -o "$O" --mode weight-only --block-size 8
bad "an unknown algorithm" "--algo" "$tmp/m.onnx" -o "$O" --mode weight-only --algo awq
bad "smoothquant 2" "--smoothquant" "$tmp/m.onnx" -o "$O" --smoothquant 2
bad "smoothquant 0" "--smoothquant" "$tmp/m.onnx" -o "$O" --smoothquant 0
bad "threads 0" "--threads" "$tmp/m.onnx" -o "$O" --threads 0
bad "samples 0" "--samples" "$tmp/m.onnx" -o "$O" --samples 0
bad "samples -3" "--samples" "$tmp/m.onnx" -o "$O" --samples -3
bad "an empty --exclude" "--exclude" "$tmp/m.onnx" -o "$O" --exclude ""
bad "--calibration without its value" "--calibration" "$tmp/m.onnx" -o "$O" --calibration
bad "--samples with --calibration" "--samples" "$tmp/m.onnx" -o "$O" --calibration "$tmp/good_npz" --samples 4
bad "--json without --report" "--json" "$tmp/m.onnx" -o "$O" --json
bad "an unknown option" "--fast" "$tmp/m.onnx" -o "$O" --fast
bad "two models" "q.onnx" "$tmp/m.onnx" "$tmp/q.onnx" -o "$O"
bad "no -o" "-o OUT" "$tmp/m.onnx"
bad "no model" "MODEL" -o "$O"
# refused by gwr_quantize itself: 4 bits are weight-only's
bad "4-bit dynamic" "4 bits" "$tmp/m.onnx" -o "$O" --bits 4

# bad input: exit 2, one line naming the file, nothing written
bad "a model already quantized" "already quantized" "$tmp/q.onnx" -o "$O"
hasf err "q.onnx" "a model already quantized: names the model"
bad "an empty calibration directory" "no calibration samples" "$tmp/m.onnx" -o "$O" --calibration "$tmp/empty"
hasf err "$tmp/empty" "an empty calibration directory: names it"
bad "a missing calibration directory" "nope: cannot open the directory" "$tmp/m.onnx" -o "$O" --calibration "$tmp/nope"
bad "an input of another name" "no input named 'foo' in the model" "$tmp/m.onnx" -o "$O" --calibration "$tmp/name"
hasf err "name/s1.npz" "an input of another name: names the file"
bad "an input of another dtype" "input 'x' is int32, the model takes float32" "$tmp/m.onnx" -o "$O" --calibration "$tmp/dtype"
hasf err "dtype/s1.npz" "an input of another dtype: names the file"
bad "an input of another shape" "input 'x' is float32[2,4], the model takes float32[1,4]" "$tmp/m.onnx" -o "$O" --calibration "$tmp/shape"
bad "a missing input" "input 'x' is missing" "$tmp/m.onnx" -o "$O" --calibration "$tmp/missing"
bad "a truncated .npz" "truncated zip" "$tmp/m.onnx" -o "$O" --calibration "$tmp/trunc"
hasf err "trunc/s1.npz" "a truncated .npz: names the file"
bad "a TensorProto of another dtype" "input 'x' is float64, the model takes float32" "$tmp/m.onnx" -o "$O" --calibration "$tmp/pbdtype"
hasf err "pbdtype/s0/input_0.pb" "a TensorProto of another dtype: names the file"
bad "a calibration directory for an already quantized model" "already quantized" "$tmp/q.onnx" -o "$O" --calibration "$tmp/good_npz"
expect 1 "a model that cannot be read" -- "$GWR" quantize "$tmp/none.onnx" -o "$O"
errline "none.onnx" "a model that cannot be read"
absent "$O" "a model that cannot be read: no output"

# good calibration directories load (savez, savez_compressed, test-data
# directories): the run goes past them to the option refusal
bad "good .npz samples, then 4-bit dynamic" "4 bits" "$tmp/m.onnx" -o "$O" --calibration "$tmp/good_npz" --bits 4
lacks err "calibration" "good .npz samples: not refused for them"
bad "good test-data samples, then 4-bit dynamic" "4 bits" "$tmp/m.onnx" -o "$O" --calibration "$tmp/good_pb" --bits 4
lacks err "calibration" "good test-data samples: not refused for them"
bad "random samples, then 4-bit dynamic" "4 bits" "$tmp/m.onnx" -o "$O" --samples 3 --bits 4

# A report file is written with the model or not at all.
expect_report() {  # the model and the report both, or neither
    if [ -e "$O" ]; then ok "$1: the report beside the model" -- test -s "$tmp/rep.txt"
    else absent "$tmp/rep.txt" "$1: no report without the model"; fi
}
"$GWR" quantize "$tmp/m.onnx" -o "$O" --report "$tmp/rep.txt" >"$tmp/out" 2>"$tmp/err"
code=$?
ok "dynamic --report FILE: exit 0" -- test $code -eq 0
hasf out "wrote $O: dynamic int8" "dynamic: the summary line"
hasf out "bytes" "dynamic: the summary names the weight bytes"
expect_report "dynamic --report FILE"
rm -f "$O" "$tmp/rep.txt"

# --shape / --seed: the random samples' shapes (the model's input is [1, 4])
bad "--shape of no input" "'y=1'" "$tmp/m.onnx" -o "$O" --mode static --shape y=1
bad "--shape with --calibration" "--shape" "$tmp/m.onnx" -o "$O" --calibration "$tmp/good_npz" --shape x=1,4
bad "--seed not a number" "--seed" "$tmp/m.onnx" -o "$O" --seed x
bad "--shape against a known dim" "x" "$tmp/m.onnx" -o "$O" --mode static --shape x=2,4
expect 0 "static with --shape and --seed" -- "$GWR" quantize "$tmp/m.onnx" -o "$O" --mode static --shape x=1,4 --seed 7
ok "static with --shape and --seed: the model" -- test -s "$O"
rm -f "$O"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
