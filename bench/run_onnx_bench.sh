#!/bin/sh
# run_onnx_bench.sh - the ONNX figures of issue 3, each against its target:
#  1. `gwr convert` of a 1,000-block GPT-style decoder vs onnxruntime's
#     session creation (optimizations disabled) on the same file, same run;
#  2. load and save of a model with ~1 GiB of embedded weights (GB/s, peak RSS);
#  3. load of the same model with its weights in external data.
# Usage: bench/run_onnx_bench.sh [WORKDIR]   (default: a temp dir, removed after)
# Needs ~3.5 GB of free disk in WORKDIR. Not part of the tests.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. bench/lib.sh
bench_build bench_onnx gwr
bench_workdir "${1:-}"
B=./$BUILD/bench/bench_onnx

echo "# gwr ONNX benchmark"
echo
echo "- command: \`bench/run_onnx_bench.sh\`; build $BUILD ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt"))"
echo "- machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
echo "- onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version"), one intra-op thread"
echo

echo "## 1. convert a 1,000-block decoder vs onnxruntime session creation"
$B gen-gpt 1000 32 "$W/gpt1000.onnx"
t0=$(date +%s.%N); ./$BUILD/gwr convert "$W/gpt1000.onnx" "$W/gpt1000.out.onnx"; t1=$(date +%s.%N)
cli=$(awk "BEGIN{print $t1 - $t0}")
$B convert "$W/gpt1000.onnx" "$W/gpt1000.out2.onnx" 3 | tee "$W/conv.txt"
node bench/ort_session.js "$W/gpt1000.onnx" 3 disabled | tee "$W/ort.txt"
lib=$(sed -n 's/.*: \([0-9.]*\) s,.*/\1/p' "$W/conv.txt")
ort=$(sed -n 's/.*: \([0-9.]*\) s$/\1/p' "$W/ort.txt")
printf 'gwr convert (whole process, once): %.3f s\n' "$cli"
printf 'ratio onnxruntime session / gwr convert (library, best of 3): %.1fx (target >= 5x)\n' "$(awk "BEGIN{print $ort / $lib}")"
printf 'ratio onnxruntime session / gwr convert (whole process): %.1fx\n' "$(awk "BEGIN{print $ort / $cli}")"
echo

echo "## 2. ~1 GiB of embedded weights: load and save"
$B gen-big 1024 "$W/big.onnx"
$B load "$W/big.onnx" 1
$B save "$W/big.onnx" "$W/big.out.onnx" 1
rm -f "$W/big.out.onnx"
echo "(targets: load and save >= 0.7 GB/s; peak RSS of load <= 2x the file)"
echo

echo "## 3. ~1 GiB of external data: load"
$B gen-big 1024 "$W/ext.onnx" --external
$B load "$W/ext.onnx" 3
echo "(target: < 0.050 s, the weights memory-mapped)"
