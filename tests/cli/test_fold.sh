#!/bin/sh
# test_fold.sh GWR [TESTDATA] - fold_constants on every model of onnx 1.23's backend test data
# must change no output: each model is folded with `gwr rewrite --pattern
# fold_constants --debug` into a copy of its test case (the data sets are
# linked, not copied), and `gwr test-onnx` must then give the folded models
# the results the originals get (tests/conformance/expected_failures.txt).
G=$1
. "$(dirname "$0")/lib.sh"
TD=${2:-$(cd "$(dirname "$0")/../.." && pwd)/build/onnx-testdata}  # tests/conformance/make_onnx_testdata.py
EXP=$(cd "$(dirname "$0")/../conformance" && pwd)/expected_failures.txt
folded=0
for d in node simple pytorch-converted pytorch-operator; do
    for c in "$TD/$d"/*/; do
        c=${c%/}
        [ -f "$c/model.onnx" ] || continue
        n=$(basename "$c")
        mkdir -p "$tmp/$d/$n"
        for s in "$c"/test_data_set_*; do [ -d "$s" ] && ln -s "$s" "$tmp/$d/$n/"; done
        if "$G" rewrite "$c/model.onnx" --pattern fold_constants --debug -o "$tmp/$d/$n/model.onnx" >"$tmp/fold.txt" 2>&1; then
            grep -q "^wrote .*: 0 rewrites" "$tmp/fold.txt" || folded=$((folded + 1))
        else
            # A model gwr cannot load fails the same way in test-onnx: keep it.
            grep -q "cannot\|not a valid\|unsupported\|invalid\|unknown elem_type" "$tmp/fold.txt" && cp "$c/model.onnx" "$tmp/$d/$n/" ||
                { fail=$((fail + 1)); echo "FAIL: folding $d/$n: $(cat "$tmp/fold.txt")"; }
        fi
    done
done
echo "fold_constants changed $folded models"
expect 0 "the folded models pass what the originals pass" -- "$G" test-onnx --expected "$EXP" "$tmp/node" "$tmp/simple" "$tmp/pytorch-converted" "$tmp/pytorch-operator"
[ "$(tail -n 1 "$tmp/out")" != "" ] && tail -n 2 "$tmp/out"
if [ "$folded" -gt 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: no model was folded: the test proves nothing"; fi
echo "test_fold.sh: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
