#!/bin/sh
# test_fuse_conv_ort.sh GWR - onnxruntime runs what `gwr optimize --target
# ort` makes of small CNNs: FusedConv with and without the residual Z (and
# with Clip, LeakyRelu, a grouped Conv, a BatchNormalization folded first)
# and FusedGemm, and gives the original model's outputs within 1e-4 (both
# sessions with onnxruntime's own optimizations off, so that its fused
# kernels run as written). --target onnx emits none of them.
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"

# x [1, 4, 6, 6], zz [1, 2, 3, 3]: Conv+Relu; Conv+BN, + x, Relu (a ResNet
# block); grouped Conv+Clip; a strided Conv + zz; Flatten; Gemm+LeakyRelu
# and Gemm+HardSigmoid.
$PY - "$tmp/m.onnx" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(1)
def init(name, shape, lo=-1.0, hi=1.0):
    return numpy_helper.from_array(rng.uniform(lo, hi, shape).astype(np.float32), name)
vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"]),
    helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c2", "g", "be", "mu", "var"], ["n2"]),
    helper.make_node("Add", ["x", "n2"], ["s2"]),
    helper.make_node("Relu", ["s2"], ["r2"]),
    helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=4),
    helper.make_node("Clip", ["c3", "lo", "hi"], ["r3"]),
    helper.make_node("Conv", ["r3", "w4"], ["c4"], strides=[2, 2]),
    helper.make_node("Add", ["c4", "zz"], ["s4"]),
    helper.make_node("Flatten", ["s4"], ["f"]),
    helper.make_node("Gemm", ["f", "g1", "gb"], ["gm"], transB=1),
    helper.make_node("LeakyRelu", ["gm"], ["y"], alpha=0.2),
    helper.make_node("Gemm", ["f", "g2"], ["h"]),
    helper.make_node("HardSigmoid", ["h"], ["y2"], alpha=0.3, beta=0.4),
]
inits = [init("w1", [4, 4, 3, 3]), init("b1", [4]), init("w2", [4, 4, 3, 3]),
         init("g", [4], 0.5, 1.5), init("be", [4]), init("mu", [4]), init("var", [4], 0.5, 2.0),
         init("w3", [4, 1, 3, 3]), numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
         numpy_helper.from_array(np.array(6.0, np.float32), "hi"), init("w4", [2, 4, 1, 1]),
         init("g1", [3, 18]), init("gb", [3]), init("g2", [18, 5])]
g = helper.make_graph(nodes, "cnn", [vi("x", [1, 4, 6, 6]), vi("zz", [1, 2, 3, 3])], [vi("y", [1, 3]), vi("y2", [1, 5])],
                      inits)
m = helper.make_model_gen_version(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
PYEOF
ok "make the model" -- test $? -eq 0

# op_type:inputs of every node, and the opset imports
ops() {
    $PY - "$1" <<'PYEOF'
import sys
import onnx
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    print("%s:%s:%d" % (n.domain, n.op_type, len(n.input)))
for o in m.opset_import:
    print("opset %s %d" % (o.domain, o.version))
PYEOF
}

expect 0 "optimize --target ort" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/ort.onnx" --target ort --verify --report
has out "^fuse_conv_activation  *[0-9]*  *[0-9]*  *3$" "three activations fused into FusedConv"
has out "^fuse_conv_add_activation  *[0-9]*  *[0-9]*  *2$" "two residual Adds fused into FusedConv"
has out "^fuse_gemm_activation  *[0-9]*  *[0-9]*  *2$" "two FusedGemm"
ops "$tmp/ort.onnx" >"$tmp/ops"
has ops "^com.microsoft:FusedConv:3$" "a FusedConv without Z"
has ops "^com.microsoft:FusedConv:4$" "a FusedConv with Z"
has ops "^com.microsoft:FusedGemm:3$" "a FusedGemm"
has ops "^opset com.microsoft 1$" "the model imports com.microsoft version 1"
lacks ops ":Relu:" "no Relu left"
lacks ops ":Add:" "no Add left"
lacks ops ":BatchNormalization:" "no BatchNormalization left"
expect 0 "seeded inputs" -- "$GWR" run "$tmp/m.onnx" --random 7 --shape x=1,4,6,6 --shape zz=1,2,3,3 -o "$tmp/io"
expect 0 "onnxruntime: the same outputs" -- "$PY" "$HERE/ort_check.py" same "$tmp/m.onnx" "$tmp/io" 1e-4 "$tmp/ort.onnx"
has out "ort.onnx: same, max abs difference" "ort_check.py same ran"

# the cost rule: the fused layers cost what the layers they replace did
expect 0 "only the CNN fusions" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/fused.onnx" --target ort \
    --only fuse_conv_activation,fuse_conv_add_activation,fuse_gemm_activation
expect 0 "analyze the original" -- "$GWR" analyze "$tmp/m.onnx"
grep "^FLOPs:" "$tmp/out" >"$tmp/flops_before"
expect 0 "analyze the fused model" -- "$GWR" analyze "$tmp/fused.onnx"
grep "^FLOPs:" "$tmp/out" >"$tmp/flops_after"
ok "the same FLOPs" -- cmp "$tmp/flops_before" "$tmp/flops_after"
has flops_after "^FLOPs: *[1-9]" "FLOPs counted"

# idempotent: a second run changes nothing
expect 0 "optimize the output again" -- "$GWR" optimize "$tmp/ort.onnx" -o "$tmp/ort2.onnx" --target ort
ok "the same bytes" -- cmp "$tmp/ort.onnx" "$tmp/ort2.onnx"

# target onnx: standard ops only; --only with a fusion is bad usage
expect 0 "optimize --target onnx" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/onnx.onnx" --level all
ops "$tmp/onnx.onnx" >"$tmp/ops"
lacks ops "com.microsoft" "no com.microsoft op for target onnx"
expect 2 "--only fuse_conv_activation --target onnx" -- "$GWR" optimize "$tmp/m.onnx" -o "$tmp/x.onnx" \
    --only fuse_conv_activation
has err "does not serve target onnx" "says why"

echo "test_fuse_conv_ort: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
