#!/bin/sh
# gwr run on a model whose output is a sequence (issue 22, helper seq):
# it prints the sequence's tensors' types, and -o DIR (which writes
# TensorProto files) refuses it in one line naming the file, exit non-zero.
# The model is onnx 1.23's test_split_to_sequence_nokeepdims (a [3, 6]
# input split into 6 tensors of [3]). --input takes a SequenceProto file
# for a sequence input (test_sequence_map_identity_1_sequence: three
# tensors of [10] through SequenceMap's Identity body).
set -u
G=$1
M=$2/node/test_split_to_sequence_nokeepdims/model.onnx
fail() { echo "FAIL: $*"; exit 1; }
out=$("$G" run "$M" 2>&1) || fail "gwr run: $out"
echo "$out" | grep -q 'sequence(float32)\[6\] \[float32\[3\], float32\[3\]' || fail "no element types in: $out"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
if out=$("$G" run "$M" -o "$d/case" 2>&1); then fail "-o wrote a sequence as a tensor: $out"; fi
echo "$out" | grep -q "output_0.pb: gwr_value_to_weights: a sequence is not a tensor" || fail "unexpected: $out"
S=$2/node/test_sequence_map_identity_1_sequence
out=$("$G" run "$S/model.onnx" --input "x=$S/test_data_set_0/input_0.pb" 2>&1) || fail "gwr run --input sequence: $out"
echo "$out" | grep -q '^y: sequence(float32)\[3\] \[float32\[10\], float32\[10\], float32\[10\]\]' || fail "unexpected: $out"
echo "test_run_sequences: ok"
