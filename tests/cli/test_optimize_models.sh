#!/bin/sh
# test_optimize_models.sh GWR - `gwr optimize` on whole models: the models of
# bench/make_opt_models.py (a GPT decoder with plain-ONNX attention and a
# constant causal mask, additive or by Where, a ResNet-style CNN and a
# ConvTranspose decoder head with BatchNormalization left in, MobileNetV3-style CNNs at opsets 13 and
# 14 and in the other export forms (x * HardSigmoid(x), Mul by 1/6, native
# ops), an LSTM tagger, the benchmark's cnn_bn and xformer) at every level
# (basic, extended, all) and target (onnx, ort, gwr). For each:
#  - `gwr optimize --verify` passes (the executor, seeded inputs; --debug
#    verifies the network after every rewrite);
#  - deterministic: a second process on the same input writes the same bytes;
#  - idempotent: optimizing the output again with the same options rewrites
#    nothing and writes the same bytes (bytes, not only the graph: the
#    writer is deterministic, so anything less would hide a change);
#  - node counts and op facts as tests/cli/optimize_models_expected.txt says,
#    counted by python3-onnx (tests/cli/check_opt_models.py), with
#    onnx.checker on every --target onnx output, and no level or target
#    leaving more nodes than a lower level or the onnx target;
#  - onnx's full checker and onnxruntime (one process for all, tests/cli/ort_check.py models) load
#    every onnx and ort output and gives the original's outputs: bit for bit
#    where only exact passes fired, else within 1e-5 + 1e-4|b| (the
#    --verify tolerance) where an approximate pass (--list: "within") or
#    fold_constants (gwr's kernels computed its constants) fired,
#    and again with onnxruntime's own optimizations at 'all' on top;
#    Target gwr outputs are for gwr's executor (Gelu below opset 20): only
#    --verify judges them.
# To update the expectations after a pass lands: a failure prints the counts
# as they are, in the file's format; OPT_MODELS_DIR=DIR keeps the models
# (generated and optimized) in DIR to look at.
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
. "$HERE/lib.sh"
MODELS="gpt_decoder gpt_decoder_where resnet_bn deconv_bn lstm cnn_bn mbv3_op13 mbv3_op14 mbv3_forms xformer"
M=${OPT_MODELS_DIR:-$tmp/models}
expect 0 "generate the models" -- "$PY" "$ROOT/bench/make_opt_models.py" "$M" $MODELS
# the approximate passes, by label (their numerics column says "within")
"$GWR" optimize --list | awk '$5 == "within" {print $1}' >"$tmp/approx"
ok "the pass table names approximate passes" -- test -s "$tmp/approx"
: >"$tmp/ortlist"
for m in $MODELS; do
    for level in basic extended all; do
        for target in onnx ort gwr; do
            o=$M/$m.$level.$target.onnx
            args="--level $level --target $target"
            expect 0 "optimize $m $args --verify" -- "$GWR" optimize "$M/$m.onnx" -o "$o" $args --verify --debug --report
            hasf out "verify: " "$m $args: --verify ran"
            # the passes that rewrote something: report lines 'label attempts matches rewrites' with rewrites > 0
            awk 'NF == 4 && $4 ~ /^[0-9]+$/ && $4 > 0 {print $1}' "$tmp/out" >"$tmp/fired"
            expect 0 "optimize $m $args again" -- "$GWR" optimize "$M/$m.onnx" -o "$tmp/again.onnx" $args
            ok "deterministic: $m $args writes the same bytes twice" -- cmp "$o" "$tmp/again.onnx"
            expect 0 "optimize the optimized $m $args" -- "$GWR" optimize "$o" -o "$tmp/twice.onnx" $args --report
            n=$(awk 'NF == 4 && $4 ~ /^[0-9]+$/ {s += $4} END {print s + 0}' "$tmp/out")
            ok "idempotent: a second optimize of $m $args rewrites nothing (rewrote $n)" -- test "$n" -eq 0
            ok "idempotent: $m $args optimized twice is the same bytes" -- cmp "$o" "$tmp/twice.onnx"
            [ "$target" = gwr ] && continue
            # fold_constants is exact on gwr's executor, but its constants are
            # gwr's kernels' results, which onnxruntime's may round otherwise
            if grep -q -x -F -f "$tmp/approx" "$tmp/fired" || grep -q -x fold_constants "$tmp/fired"; then
                tol="1e-5 1e-4"
            else
                tol="0 0"
            fi
            echo "$M/$m.onnx $o $tol" >>"$tmp/ortlist"
        done
    done
done
# gwr_session_new's default runs what `gwr optimize --target gwr` (level
# extended) writes: the same outputs, bit for bit
for m in $MODELS; do
    expect 0 "run $m in an optimized session" -- "$GWR" run "$M/$m.onnx" -o "$tmp/s_$m"
    has out "plan [0-9.]* ms optimized" "$m: the session is optimized"
    expect 0 "run $m.extended.gwr as written" -- "$GWR" run "$M/$m.extended.gwr.onnx" --no-optimize -o "$tmp/w_$m"
    ok "the session of $m runs its --target gwr optimization" -- sh -c \
        'for f in "$1"/output_*.pb; do cmp "$f" "$2/${f##*/}" || exit 1; done' - "$tmp/s_$m" "$tmp/w_$m"
done
expect 0 "node counts and op facts (check_opt_models.py)" -- "$PY" "$HERE/check_opt_models.py" "$HERE/optimize_models_expected.txt" "$M"
cat "$tmp/out"
if [ -z "${GWR_SKIP_ORT:-}" ]; then
    expect 0 "onnxruntime gives the original's outputs (ort_check.py models)" -- "$PY" "$HERE/ort_check.py" models "$tmp/ortlist"
    tail -n 1 "$tmp/out"
    grep -v '^ok ' "$tmp/out" | grep -v 'passed,' || :
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
