#!/bin/sh
# test_attention_ort.sh GWR BENCH_EXEC - fuse_attention's and lower_attention's output in
# onnxruntime: small PyTorch-style decoders (make_attention_models.py: an
# additive -inf mask, a Where mask with float32's lowest, query rows that
# see no key) and gen-gpt's GPT-12 (one q/k/v MatMul + Split, a computed
# causal mask) optimized with `gwr optimize --level all --target ort` must
# hold MultiHeadAttention (or, for one q/k/v MatMul + Split, Attention)
# layers, pass onnx's full checker, load in onnxruntime (tests/cli/ort_check.py) and give the
# original's outputs there (NaN rows matching), and optimizing again must
# change nothing; at opset 23 with --target onnx, ONNX Attention layers
# (fuse_attention alone) must do the same.
GWR=$1
BENCH_EXEC=$2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"
cd "$HERE/../.."

# MultiHeadAttention and Attention (com.microsoft) layers of a model
count_mha() {
    $PY -c "import onnx,sys; m=onnx.load(sys.argv[1]); print(sum(n.op_type in ('MultiHeadAttention', 'Attention') and n.domain=='com.microsoft' for n in m.graph.node))" "$1"
}

# check NAME WANT_MHA [RUN ARGS...]
check() {
    m=$1; want=$2; shift 2
    expect 0 "$m: optimize" -- "$GWR" optimize "$tmp/$m.onnx" -o "$tmp/${m}_ort.onnx" --level all --target ort --verify $EXTRA
    n=$(count_mha "$tmp/${m}_ort.onnx")
    if [ "$n" = "$want" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $m: $n MultiHeadAttention, expected $want"; fi
    expect 0 "$m: run" -- "$GWR" run "$tmp/$m.onnx" --random 5 -o "$tmp/in_$m" "$@"
    expect 0 "$m: onnxruntime gives the original's outputs" -- "$PY" tests/cli/ort_check.py same "$tmp/$m.onnx" "$tmp/in_$m" 1e-4 "$tmp/${m}_ort.onnx"
    cp "$tmp/out" "$tmp/ort_$m"
    expect 0 "$m: optimize again" -- "$GWR" optimize "$tmp/${m}_ort.onnx" -o "$tmp/${m}_again.onnx" --level all --target ort $EXTRA
    ok "$m: a second run changes nothing" -- cmp "$tmp/${m}_ort.onnx" "$tmp/${m}_again.onnx"
}

ok "make the models" -- $PY tests/cli/make_attention_models.py "$tmp"
EXTRA=
check sep 2
check where 1
check ninf 1
# the projections left apart: MultiHeadAttention instead of Attention
EXTRA="--disable merge_qkv_matmuls"
for m in sep where ninf; do cp "$tmp/$m.onnx" "$tmp/${m}_mha.onnx"; done
check sep_mha 2
check where_mha 1
check ninf_mha 1
has ort_ninf_mha "NaN in both" "ninf_mha: NaN rows before and after"
n=$($PY -c "import onnx,sys; m=onnx.load(sys.argv[1]); print(sum(n.op_type=='MultiHeadAttention' for n in m.graph.node))" "$tmp/sep_mha_ort.onnx")
[ "$n" = 2 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: sep_mha: $n MultiHeadAttention"; }
EXTRA=
has ort_ninf "NaN in both" "ninf: the rows that see no key are NaN before and after"
lacks ort_ninf " 0 NaN in both" "ninf: there are such rows"
# the mask must matter: a model whose mask was dropped differs
$PY - "$tmp/sep_ort.onnx" "$tmp/nomask.onnx" <<'PYEOF'
import sys, onnx
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    if n.op_type in ("MultiHeadAttention", "Attention"):
        del n.input[3:]
onnx.save(m, sys.argv[2])
PYEOF
expect 1 "a fused model without its mask differs in onnxruntime" -- "$PY" tests/cli/ort_check.py same "$tmp/sep.onnx" "$tmp/in_sep" 1e-4 "$tmp/nomask.onnx"

# opset 23, target onnx: fuse_attention alone, ONNX Attention kept (onnx's
# checker, onnxruntime gives the original's outputs); a mask hiding a whole
# query row (float32's lowest: onnxruntime's Attention gives zeros there,
# the model uniform weights; -inf: NaN) keeps the model unfused
for m in sep23:2 where23:0 ninf23:0; do
    n=${m#*:}; m=${m%:*}
    expect 0 "$m: optimize --target onnx" -- "$GWR" optimize "$tmp/$m.onnx" -o "$tmp/${m}_onnx.onnx" --target onnx --verify
    got=$($PY -c "import onnx,sys; m=onnx.load(sys.argv[1]); print(sum(n.op_type == 'Attention' and n.domain == '' for n in m.graph.node))" "$tmp/${m}_onnx.onnx")
    if [ "$got" = "$n" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $m: $got ONNX Attention, expected $n"; fi
    expect 0 "$m: run" -- "$GWR" run "$tmp/$m.onnx" --random 5 -o "$tmp/in_$m"
    expect 0 "$m: onnxruntime gives the original's outputs" -- "$PY" tests/cli/ort_check.py same "$tmp/$m.onnx" "$tmp/in_$m" 1e-4 "$tmp/${m}_onnx.onnx"
done
# and lowered for target ort at opset 23
check sep23 2
check where23 1

if [ -x "$BENCH_EXEC" ]; then
    ok "gen-gpt" -- "$BENCH_EXEC" gen-gpt "$tmp/gpt12.onnx"
    check gpt12 12 --shape x=2,8,256
else
    fail=$((fail + 1)); echo "FAIL: no bench_exec at '$BENCH_EXEC'"
fi

echo "test_attention_ort: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
