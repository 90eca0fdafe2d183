#!/bin/sh
# Every model of ONNX's backend test data through `gwr rewrite` with all
# three seed patterns in debug mode (the network is verified after every
# rewrite, and patterns that misreport their changes fail the run): each
# must exit 0 and write a file that gwr loads again. Under the sanitizer
# build this also proves the driver clean on If/Loop/Scan bodies, sequences
# and every element type.
# usage: test_rewrite_sweep.sh path/to/gwr
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=/usr/share/libonnx-testdata/data
. "$HERE/lib.sh"
if [ ! -d "$DATA" ]; then
    echo "FAIL: $DATA is missing (scripts/setup.sh installs libonnx-testdata)"
    exit 1
fi
for m in $(find "$DATA" -name model.onnx | sort); do
    expect 0 "rewrite $m" -- "$GWR" rewrite "$m" --pattern replace_add_with_sub --pattern fuse_attention_with_bias \
        --pattern gpt_attention_remove_padding --arg batch_size=1 --arg in_len=1 --arg hidden_size=3 --debug \
        -o "$tmp/out.onnx"
    expect 0 "reload the rewrite of $m" -- "$GWR" inspect "$tmp/out.onnx"
done
[ "$pass" -gt 2000 ] || { echo "FAIL: only $pass checks ran"; fail=$((fail + 1)); }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
