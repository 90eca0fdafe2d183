#!/bin/sh
# compare_builds.sh - the same figures from two builds of gwr, run in
# alternation in one session, so that a refactoring can be shown to cost
# nothing on a noisy machine: the 1,000,015-layer rewrite pass
# (bench_rewrite scale), `gwr convert` of a 1,000-block decoder, load and
# save of a model with 512 MiB of weights, and `gwr run` (one thread, best
# and median of 10) of the GPT-12 and ResNet-18-style models of
# run_exec_bench.sh.
# Usage: bench/compare_builds.sh BASE_BUILD NEW_BUILD [WORKDIR]
#   e.g. git worktree add /tmp/base <commit> && cmake -S /tmp/base -B /tmp/base/build
#        -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/base/build -j2, then
#        bench/compare_builds.sh /tmp/base/build build
#   ROUNDS=N   alternations (default 3)
# Needs ~1.2 GB free in WORKDIR. Not part of the tests.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BASE_BUILD NEW_BUILD [WORKDIR]" >&2; exit 2; }
B0=$1 B1=$2
W=${3:-$(mktemp -d)}
mkdir -p "$W"
[ -n "${3:-}" ] || trap 'rm -rf "$W"' EXIT
ROUNDS=${ROUNDS:-3}
echo "# base $B0 vs new $B1, $ROUNDS rounds; $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
"$B1/bench/bench_onnx" gen-gpt 1000 32 "$W/gpt1000.onnx" >/dev/null
"$B1/bench/bench_onnx" gen-big 512 "$W/big.onnx" >/dev/null
"$B1/bench/bench_exec" gen-gpt "$W/gpt12.onnx" >/dev/null
"$B1/bench/bench_exec" gen-resnet "$W/resnet.onnx" >/dev/null
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for b in "$B0" "$B1"; do
        [ "$b" = "$B0" ] && tag=base || tag=new
        echo "== round $r $tag"
        "$b/bench/bench_rewrite" scale --repeat 3 38462 2>&1 | grep "whole call on"
        "$b/bench/bench_onnx" convert "$W/gpt1000.onnx" "$W/out.onnx" 3 2>&1 | tail -n 1
        "$b/bench/bench_onnx" load "$W/big.onnx" 1 2>&1 | tail -n 1
        "$b/bench/bench_onnx" save "$W/big.onnx" "$W/big.out.onnx" 1 2>&1 | tail -n 1
        printf 'gpt12  '; "$b/gwr" run "$W/gpt12.onnx" --shape x=1,128,256 --random 1 --threads 1 --repeat 10 | grep '^run:'
        printf 'resnet '; "$b/gwr" run "$W/resnet.onnx" --shape x=1,3,224,224 --random 1 --threads 1 --repeat 10 | grep '^run:'
    done
    r=$((r + 1))
done
