#!/bin/sh
# test_analyze_bodies.sh - gwr analyze counts If/Loop/Scan bodies (issue
# 22): FLOPs summed over both If branches and a Loop body times its
# constant trip count (once, and said so, when the count is not a
# constant); peak memory with the worst body. Expected figures computed
# here from the shapes and docs/api.md's conventions (a multiply-add is 2
# FLOPs). Usage: test_analyze_bodies.sh GWR
G=$1
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

"$PY" - "$tmp" <<'PYEOF' || { echo "FAIL: python3-onnx could not make the models"; exit 1; }
import json, sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as T
d = sys.argv[1]
op = [helper.make_opsetid("", 17)]
f32 = lambda n, v: numpy_helper.from_array(np.asarray(v, np.float32), n)
i64 = lambda n, v: numpy_helper.from_array(np.asarray(v, np.int64), n)
vi = helper.make_tensor_value_info
# then: Conv x [1,2,8,8] * W [4,2,3,3] -> [1,4,6,6], flattened to [1,144]
then = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["c"]),
                          helper.make_node("Reshape", ["c", "s144"], ["t"])], "then", [],
                         [vi("t", T.FLOAT, [1, 144])], value_info=[vi("c", T.FLOAT, [1, 4, 6, 6])])
# else: MatMul xr [1,128] x W2 [128,144] -> [1,144]
other = helper.make_graph([helper.make_node("MatMul", ["xr", "W2"], ["e"])], "else", [],
                          [vi("e", T.FLOAT, [1, 144])])
# Loop body: s [1,144] x W3 [144,144] per iteration
body = helper.make_graph([helper.make_node("Identity", ["cond"], ["cond_out"]),
                          helper.make_node("MatMul", ["s", "W3"], ["s_out"])], "body",
                         [vi("i", T.INT64, []), vi("cond", T.BOOL, []), vi("s", T.FLOAT, [1, 144])],
                         [vi("cond_out", T.BOOL, []), vi("s_out", T.FLOAT, [1, 144])])
def model(trip_const):
    nodes = [helper.make_node("Reshape", ["x", "s128"], ["xr"]),
             helper.make_node("If", ["c0"], ["i0"], then_branch=then, else_branch=other),
             helper.make_node("Loop", ["M", "", "i0"], ["y"], body=body)]
    inits = [f32("W", np.ones((4, 2, 3, 3))), f32("W2", np.ones((128, 144))), f32("W3", np.ones((144, 144))),
             i64("s144", [1, 144]), i64("s128", [1, 128])]
    inputs = [vi("x", T.FLOAT, [1, 2, 8, 8]), vi("c0", T.BOOL, [])]
    if trip_const: inits.append(i64("M", 3))
    else: inputs.append(vi("M", T.INT64, []))
    g = helper.make_graph(nodes, "bodies", inputs, [vi("y", T.FLOAT, [1, 144])], inits,
                          value_info=[vi("i0", T.FLOAT, [1, 144])])
    return helper.make_model(g, opset_imports=op)
onnx.save(model(True), d + "/loop3.onnx")
onnx.save(model(False), d + "/loopm.onnx")
conv = 2 * (1 * 4 * 6 * 6) * (2 * 3 * 3)   # each output a dot product of Cin*kh*kw terms
mm_else = 2 * 1 * 144 * 128
mm_body = 2 * 1 * 144 * 144
json.dump({"loop3": conv + mm_else + 3 * mm_body, "loopm": conv + mm_else + mm_body,
           "bodies": conv + mm_else + mm_body,
           # At the If: x (512 bytes), c0 (1), xr (512) and the If's output (576) are live,
           # and the worse branch, then, holds c [1,4,6,6] and t [1,144] at its Reshape
           # (576 + 576; else holds 576). At the Loop: its input and output (576 + 576)
           # and the body's i (8), cond (1), s (576), cond_out (1), s_out (576): less.
           "peak": 512 + 1 + 512 + 576 + (576 + 576)}, open(d + "/expect.json", "w"))
PYEOF
E=$tmp/expect.json
expect 0 "analyze --json: a Loop of 3 after an If" -- "$G" analyze --json "$tmp/loop3.onnx"
cp "$tmp/out" "$tmp/a.json"
ok "FLOPs: both branches and the body times 3" -- "$PY" -c "
import json
a = json.load(open('$tmp/a.json')); e = json.load(open('$E'))
assert a['flops'] == e['loop3'], (a['flops'], e['loop3'])
assert a['subgraphs'] == {'layers': 5, 'flops': e['loop3'], 'loops_counted_once': 0}, a['subgraphs']
assert a['memory']['peak_bytes'] == e['peak'] and a['memory']['peak_layer'] == 'If_1', a['memory']"
expect 0 "analyze: a Loop whose trip count is an input" -- "$G" analyze --json "$tmp/loopm.onnx"
cp "$tmp/out" "$tmp/m.json"
ok "FLOPs: the body once, and said so" -- "$PY" -c "
import json
a = json.load(open('$tmp/m.json')); e = json.load(open('$E'))
assert a['flops'] == e['loopm'], (a['flops'], e['loopm'])
assert a['subgraphs']['loops_counted_once'] == 1, a['subgraphs']"
expect 0 "analyze (text)" -- "$G" analyze "$tmp/loopm.onnx"
has out "^subgraphs:      5 layers in If/Loop/Scan bodies" "text: the bodies' layers"
hasf out "1 loop without a constant trip count counted once" "text: the loop counted once"

echo "test_analyze_bodies.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
