#!/bin/sh
# run_exec_bench.sh - the executor figures of issue 5: single-thread latency
# of `gwr run` against onnxruntime-node (one intra-op thread, its default
# graph optimizations) on the same models and inputs, measured in the same
# run, on a 12-block GPT-style decoder (hidden 256, sequence 128) and a
# ResNet-18-style CNN (224x224); target: at most 3x onnxruntime's latency.
# Also the memory plan's peak against the sum of all tensor sizes, and
# the largest difference between the two runtimes' outputs.
# Usage: bench/run_exec_bench.sh [WORKDIR]   (default: a temp dir, removed after)
#   BUILD=<dir>   build folder (default build)
#   REPEAT=N      timed runs of each model (default 10; best and median shown)
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-10}
. bench/lib.sh
bench_build bench_exec gwr
bench_workdir "${1:-}"

echo "# gwr executor benchmark"
echo
echo "- command: \`bench/run_exec_bench.sh\`; $(bench_build_desc)"
echo "- machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version"), one intra-op thread; gwr run --threads 1"
echo "- latency: one warm-up run, then $REPEAT timed runs of the session (planning and loading not counted)"
echo
./$BUILD/bench/bench_exec gen-gpt "$W/gpt12.onnx"
./$BUILD/bench/bench_exec gen-resnet "$W/resnet.onnx"
echo
fails=0
for m in gpt12:x=1,128,256 resnet:x=1,3,224,224; do
    name=${m%%:*}
    shape=${m#*:}
    echo "## $name"
    ./$BUILD/gwr run "$W/$name.onnx" --shape "$shape" --random 1 --threads 1 --repeat "$REPEAT" -o "$W/$name.io" >"$W/$name.gwr.txt"
    sed -n '/^run:/p; /^memory:/p' "$W/$name.gwr.txt"
    node bench/ort_run.js "$W/$name.onnx" "$W/$name.io" "$REPEAT" | tee "$W/$name.ort.txt"
    g=$(sed -n 's/^run: best \([0-9.]*\) ms.*/\1/p' "$W/$name.gwr.txt")
    o=$(sed -n 's/.*: best \([0-9.]*\) ms.*/\1/p' "$W/$name.ort.txt")
    peak=$(sed -n 's/^memory: peak \([0-9]*\) bytes.*; \([0-9]*\) bytes.*/\1 \2/p' "$W/$name.gwr.txt")
    r=$(awk "BEGIN{print $g / $o}")
    verdict=$(awk "BEGIN{print ($r <= 3) ? \"PASS\" : \"FAIL\"}")
    [ "$verdict" = PASS ] || fails=$((fails + 1))
    printf 'gwr / onnxruntime (best): %.2fx -> %s (target <= 3x)\n' "$r" "$verdict"
    echo "$peak" | awk '{printf "memory plan: peak %.1f MiB of %.1f MiB of intermediate values (%.0f%%)\n", $1/1048576, $2/1048576, 100*$1/$2}'
    echo
done
echo "models at most 3x onnxruntime's latency: $((2 - fails)) of 2"
