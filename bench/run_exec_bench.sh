#!/bin/sh
# run_exec_bench.sh - the executor figures of issue 14: latency of
# `gwr run` against onnxruntime-node 1.30 (its default graph optimization
# level, `all`) on the same models and the same inputs, measured in the
# same run, at one thread and at two:
#   gpt12         a 12-block GPT-style decoder, hidden 256, sequence 128
#                 (bench_exec gen-gpt)
#   resnet18      a ResNet-18-style CNN, 224x224 (bench_exec gen-resnet)
#   mbv3_bn       a MobileNetV3-Small-style CNN, 224x224, depthwise convs,
#                 HardSwish, squeeze-excite, BatchNormalization left in
#   lstm          an LSTM tagger, 128 steps, input 128, hidden 256
#   gpt_dec_s1    a 6-block GPT decoder (hidden 512, 8 heads) as PyTorch
#   gpt_dec_s128  exports it, at sequence 1 (a decode step) and 128
#                 (the last four: bench/make_opt_models.py)
# Per model: best and median of REPEAT runs for both runtimes, the ratio
# gwr / onnxruntime, the speed-up of two threads over one for both;
# gwr's planning time (gwr_session_new) beside onnxruntime's session
# creation; gwr's memory plan peak (gwr_session_peak_bytes) and the sum of
# its intermediate values (gwr_session_total_bytes); the peak RSS
# of the one-thread run of each runtime (GNU time's maximum resident set
# size, the kernel's ru_maxrss of the child, for `gwr run` and for the
# node process alike); the largest difference between their outputs.
# Then the geometric mean and the worst ratio at one thread (targets
# <= 1.0x and <= 1.25x), on medians and on bests. When `gwr run` has
# --no-optimize, the raw graph's median is shown too.
# Usage: bench/run_exec_bench.sh [WORKDIR]   (default: a temp dir, removed after)
#   BUILD=<dir>   build folder (default build)
#   REPEAT=N      timed runs of each model and runtime in a round (default 20)
#   ROUNDS=N      rounds (default 3): each runs gwr and onnxruntime in turn, so
#                 that a change in the machine's load touches both alike; shown:
#                 the best of all runs, the median of the rounds' medians
#   MODELS="..."  a subset of the models above
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-20}
ROUNDS=${ROUNDS:-3}
MODELS=${MODELS:-gpt12 resnet18 mbv3_bn lstm gpt_dec_s1 gpt_dec_s128}
. bench/lib.sh
bench_build bench_exec gwr
bench_workdir "${1:-}"
[ -x /usr/bin/time ] || { echo "run_exec_bench.sh: needs GNU time (/usr/bin/time) for the peak RSS" >&2; exit 1; }
GWR=./$BUILD/gwr
RAW=
! $GWR run --help 2>&1 | grep -q -- --no-optimize || RAW=1

echo "# gwr executor benchmark (issue 14)"
echo
echo "- command: \`bench/run_exec_bench.sh\`; $(bench_build_desc)"
echo "- machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo "- onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version"), graph optimization level all, N intra-op threads, one inter-op thread; gwr run --threads N"
echo "- latency: $ROUNDS rounds, each of $REPEAT timed runs of a session per runtime and thread count, in turn (planning and loading not counted; onnxruntime runs once to warm up first, gwr's first timed run is its first); best of all runs, median of the rounds' medians; planning, memory and RSS: median / median / largest over the rounds"
echo "- peak RSS: GNU time's maximum resident set size of the whole one-thread process (gwr run; node + onnxruntime-node, $(/usr/bin/time -f %M node -e "require('onnxruntime-node')" 2>&1 >/dev/null | awk '{printf "%.0f MiB", $1/1024}') of it with the module loaded and no session)"
echo

for m in $MODELS; do
    case $m in
    gpt12) ./$BUILD/bench/bench_exec gen-gpt "$W/$m.onnx" >/dev/null ;;
    resnet18) ./$BUILD/bench/bench_exec gen-resnet "$W/$m.onnx" >/dev/null ;;
    lstm) /usr/bin/python3 bench/make_opt_models.py "$W" lstm_bench && mv "$W/lstm_bench.onnx" "$W/$m.onnx" ;;
    *) /usr/bin/python3 bench/make_opt_models.py "$W" "$m" ;;
    esac
done

# stat FILE PATTERN min|med: the least or the median of the numbers after
# PATTERN on FILE's lines (one line a round).
stat() {
    sed -n "s/.*$2 \([0-9.e+-]*\).*/\1/p" "$1" | sort -g |
        awk -v how="$3" '{ v[NR] = $1 } END { print how == "min" ? v[1] : v[int((NR + 1) / 2)] }'
}

printf '| model | gwr 1t best / median ms | ort 1t best / median ms | gwr/ort median | gwr/ort best |'
[ -z "$RAW" ] || printf ' raw gwr median ms |'
printf ' gwr 2t median ms (speed-up) | ort 2t median ms (speed-up) | plan gwr / ort create ms | memory plan peak / sum MiB | peak RSS gwr / ort MiB | max abs diff |\n'
printf '|---|---|---|---|---|'
[ -z "$RAW" ] || printf '%s' '---|'
printf '%s\n' '---|---|---|---|---|---|'
: >"$W/ratios"
for m in $MODELS; do
    shape=
    case $m in gpt12) shape="--shape x=1,128,256" ;; resnet18) shape="--shape x=1,3,224,224" ;; esac
    rm -f "$W/$m".[go][12] "$W/$m".[go]1.rss "$W/$m.raw"
    r=0
    while [ "$r" -lt "$ROUNDS" ]; do
        r=$((r + 1))
        # One thread: gwr writes the inputs that onnxruntime then reads.
        # shellcheck disable=SC2086
        /usr/bin/time -a -f %M -o "$W/$m.g1.rss" $GWR run "$W/$m.onnx" $shape --random 1 --threads 1 --repeat "$REPEAT" -o "$W/$m.io" >>"$W/$m.g1"
        /usr/bin/time -a -f %M -o "$W/$m.o1.rss" node bench/ort_exec.js "$W/$m.onnx" "$W/$m.io" "$REPEAT" 1 >>"$W/$m.o1"
        # shellcheck disable=SC2086
        $GWR run "$W/$m.onnx" $shape --random 1 --threads 2 --repeat "$REPEAT" >>"$W/$m.g2"
        node bench/ort_exec.js "$W/$m.onnx" "$W/$m.io" "$REPEAT" 2 >>"$W/$m.o2"
        # shellcheck disable=SC2086
        [ -z "$RAW" ] || $GWR run "$W/$m.onnx" $shape --random 1 --threads 1 --repeat "$REPEAT" --no-optimize >>"$W/$m.raw"
    done
    gb=$(stat "$W/$m.g1" "run: best" min) gm=$(stat "$W/$m.g1" "median" med) gp=$(stat "$W/$m.g1" "(plan" med)
    ob=$(stat "$W/$m.o1" "best" min) om=$(stat "$W/$m.o1" "median" med) oc=$(stat "$W/$m.o1" "create" med)
    g2=$(stat "$W/$m.g2" "median" med) o2=$(stat "$W/$m.o2" "median" med)
    peak=$(stat "$W/$m.g1" "memory: peak" med) total=$(stat "$W/$m.g1" "values;" med)
    err=$(sed -n 's/.*max abs difference //p' "$W/$m.o1" | sort -g | tail -n 1)
    echo "$m $gm $om $gb $ob" >>"$W/ratios"
    printf '| %s | %s / %s | %s / %s | %.2fx | %.2fx |' "$m" "$gb" "$gm" "$ob" "$om" \
        "$(awk "BEGIN{print $gm / $om}")" "$(awk "BEGIN{print $gb / $ob}")"
    if [ -n "$RAW" ]; then
        printf ' %s |' "$(stat "$W/$m.raw" "median" med)"
    fi
    printf ' %s (%.2fx) | %s (%.2fx) | %s / %s | %.2f / %.2f | %.0f / %.0f | %s |\n' \
        "$g2" "$(awk "BEGIN{print $gm / $g2}")" "$o2" "$(awk "BEGIN{print $om / $o2}")" "$gp" "$oc" \
        "$(awk "BEGIN{print $peak / 1048576}")" "$(awk "BEGIN{print $total / 1048576}")" "$(sort -n "$W/$m.g1.rss" | tail -n 1 | awk '{print $1 / 1024}')" \
        "$(sort -n "$W/$m.o1.rss" | tail -n 1 | awk '{print $1 / 1024}')" "$err"
done
echo
awk '{ lm += log($2 / $3); lb += log($4 / $5); n++
       if ($2 / $3 > wm) { wm = $2 / $3; wmn = $1 }
       if ($4 / $5 > wb) { wb = $4 / $5; wbn = $1 } }
     END { printf "one thread, gwr / onnxruntime over %d models: geometric mean %.2fx (median) %.2fx (best), target <= 1.0x; ", n, exp(lm / n), exp(lb / n)
           printf "worst %.2fx (median, %s) %.2fx (best, %s), target <= 1.25x\n", wm, wmn, wb, wbn }' "$W/ratios"
