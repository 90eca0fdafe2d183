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

echo "test_options.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
