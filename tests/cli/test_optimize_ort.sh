#!/bin/sh
# The transformer fusions against onnxruntime: each model of
# make_nlp_models.py (exporters' spellings of a pre-LN residual, bias +
# GELU, SiLU, scaled q @ k^T, Transpose into Gemm) through `gwr optimize
# --target ort --debug --verify` must hold the contrib op it names, fewer
# layers, pass onnx's full checker and give onnxruntime (optimizations disabled, so that each
# graph runs as written) the original's outputs within 1e-4; a second run
# rewrites nothing; `--target onnx` emits no com.microsoft op.
# usage: test_optimize_ort.sh path/to/gwr   (run from the source root)
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"

# ops MODEL: "domain::op" (or "op") of every node but Constant, one a line
ops() {
    "$PY" -c 'import sys, onnx
for n in onnx.load(sys.argv[1]).graph.node:
    if n.op_type != "Constant": print((n.domain + "::" if n.domain else "") + n.op_type)' "$1"
}

expect 0 "make the models" -- "$PY" "$HERE/make_nlp_models.py" "$tmp/m"
cp "$tmp/out" "$tmp/list"
[ -s "$tmp/list" ] || { echo "FAIL: no models"; exit 1; }
while read -r name want; do
    m=$tmp/m/$name.onnx o=$tmp/m/$name.ort.onnx
    expect 0 "optimize $name for ort" -- "$GWR" optimize "$m" -o "$o" --target ort --level all --debug --verify
    ops "$m" >"$tmp/before"
    ops "$o" >"$tmp/after"
    ok "$name: the optimized model holds $want" -- grep -qx -- "$want" "$tmp/after"
    ok "$name: fewer layers" -- test "$(wc -l <"$tmp/after")" -lt "$(wc -l <"$tmp/before")"
    expect 0 "run $name" -- "$GWR" run "$m" -o "$tmp/m/$name.d"
    expect 0 "onnxruntime loads and runs $name optimized" -- \
        "$PY" "$HERE/ort_check.py" compare "$m" "$tmp/m/$name.d" "$o"
    err=$(sed -n 's/.*max abs difference from the original \([^ ]*\).*/\1/p' "$tmp/out")
    ok "$name: onnxruntime's outputs within 1e-4 (got ${err:-none})" -- \
        awk -v e="${err:-x}" 'BEGIN { exit !(e != "x" && e + 0 <= 1e-4) }'
    expect 0 "optimize $name again" -- "$GWR" optimize "$o" -o "$tmp/m/$name.2.onnx" --target ort --level all --report
    n=$(grep -E '^[a-z_]+ +[0-9]+ +[0-9]+ +[0-9]+$' "$tmp/out" | awk '{s += $4} END {print s + 0}')
    ok "$name: a second run rewrites nothing" -- test "$n" -eq 0
    expect 0 "optimize $name for onnx" -- "$GWR" optimize "$m" -o "$tmp/m/$name.onnx.onnx" --target onnx
    ops "$tmp/m/$name.onnx.onnx" >"$tmp/onnx"
    ok "$name: no com.microsoft op for target onnx" -- sh -c "! grep -q '^com.microsoft::' '$tmp/onnx'"
done <"$tmp/list"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
