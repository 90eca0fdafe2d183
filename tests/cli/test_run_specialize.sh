#!/bin/sh
# test_run_specialize.sh - gwr run plans its session for the shapes of the
# inputs it runs (issue 22, helper speed): symbolic and unknown unnamed dims
# of the inputs become the given extents before the session optimizes, so
# that the fusions needing known dims fire. Judged by numpy (the values)
# and by the profile's op table (the fused layer). Usage: test_run_specialize.sh GWR
G=$1
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}

# y = Tanh((x + 1) * 0.5) - x: a chain of element-wise layers that
# gwr::ElementwiseChain fuses only with known dims. x is [batch, n]
# (symbolic) in sym.onnx, [?, ?] (unknown, unnamed) in unk.onnx; two.onnx
# has inputs a [n] and b [n] (one symbol).
"$PY" - "$tmp" <<'PYEOF' || { echo "FAIL: onnx could not make the models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
d = sys.argv[1]
one = numpy_helper.from_array(np.array(1, np.float32), "one")
half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
def chain(dims, name):
    x = helper.make_tensor_value_info("x", T.FLOAT, dims)
    y = helper.make_tensor_value_info("y", T.FLOAT, None)
    nodes = [helper.make_node("Add", ["x", "one"], ["a"]), helper.make_node("Mul", ["a", "half"], ["m"]),
             helper.make_node("Tanh", ["m"], ["t"]), helper.make_node("Sub", ["t", "x"], ["y"])]
    g = helper.make_graph(nodes, name, [x], [y], [one, half])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, f"{d}/{name}.onnx")
chain(["batch", "n"], "sym")
chain([None, None], "unk")
a = helper.make_tensor_value_info("a", T.FLOAT, ["n"])
b = helper.make_tensor_value_info("b", T.FLOAT, ["n"])
y = helper.make_tensor_value_info("y", T.FLOAT, None)
g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Tanh", ["s"], ["y"])], "two",
                      [a, b], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, f"{d}/two.onnx")
X = np.random.default_rng(3).uniform(-2, 2, (3, 5)).astype(np.float32)
onnx.save_tensor(numpy_helper.from_array(X, "x"), f"{d}/x.pb")
np.save(f"{d}/y.npy", (np.tanh((X + np.float32(1)) * np.float32(0.5)) - X).astype(np.float32))
PYEOF

check_y() { # check_y DIR DESCRIPTION: DIR/output_0.pb is numpy's y
    ok "$2" -- "$PY" -c "
import sys, numpy as np, onnx
from onnx import numpy_helper
y = numpy_helper.to_array(onnx.load_tensor('$1/output_0.pb')); w = np.load('$tmp/y.npy')
sys.exit(0 if y.shape == w.shape and np.allclose(y, w, rtol=1e-6, atol=1e-6) else print(y, w) or 1)"
}

for m in sym unk; do
    expect 0 "$m: run" -- "$G" run "$tmp/$m.onnx" --input "x=$tmp/x.pb" -o "$tmp/o_$m" --profile "$tmp/p_$m.json"
    has out "^  ElementwiseChain " "$m: the chain is fused for the inputs' shapes"
    lacks out "  Tanh " "$m: no Tanh layer left"
    check_y "$tmp/o_$m" "$m: the values are numpy's"
    expect 0 "$m: --no-optimize" -- "$G" run "$tmp/$m.onnx" --input "x=$tmp/x.pb" -o "$tmp/r_$m" --profile "$tmp/q_$m.json" --no-optimize
    lacks out "ElementwiseChain" "$m: --no-optimize runs the layers as written"
    has out "^  Tanh " "$m: --no-optimize keeps Tanh"
    check_y "$tmp/r_$m" "$m: --no-optimize values are numpy's"
done
# --shape of a random input specializes the same way
expect 0 "sym: --shape" -- "$G" run "$tmp/sym.onnx" --shape x=2,7 --profile "$tmp/p3.json"
has out "^  ElementwiseChain " "sym --shape: the chain is fused"
hasf out "y: float32[2,7]" "sym --shape: the output has the given shape"
# Two inputs sharing a symbol: bound once, the model runs.
expect 0 "two: run" -- "$G" run "$tmp/two.onnx" --shape a=4 --shape b=4
hasf out "y: float32[4]" "two: the output has the given shape"

echo "test_run_specialize: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
