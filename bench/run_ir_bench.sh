#!/bin/sh
# run_ir_bench.sh - builds and runs bench/bench_ir.c: IR build time and
# memory per layer for 1,000,000 Add layers, and the per-call cost of
# tensor_parent / tensor_user / find_tensor / replace_all_uses_with on
# networks of 10^3 .. 10^6 layers. Not part of the tests.
#
# Usage: bench/run_ir_bench.sh [max_layers]
#   BUILD=<dir>  build folder (default: build); configured RelWithDebInfo
#                (the Makefile's default) when it has no CMakeCache.txt yet.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$BUILD" --target bench_ir -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt")
sanitize=$(sed -n 's/^GWR_SANITIZE:BOOL=//p' "$BUILD/CMakeCache.txt")
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo "# gwr IR benchmark"
echo
args=${*:+ $*}
echo "- command: \`BUILD=$BUILD bench/run_ir_bench.sh$args\` (runs \`./$BUILD/bench/bench_ir$args\`)"
echo "- build: $BUILD, CMAKE_BUILD_TYPE=${build_type:-?}, GWR_SANITIZE=${sanitize:-OFF}"
echo "- machine: ${cpu:-unknown CPU}, $(nproc 2>/dev/null || echo '?') cores, $(uname -sr)"
echo "- time: clock_gettime(CLOCK_MONOTONIC) around the calls; memory: growth of"
echo "  mallinfo2() uordblks + hblkhd (allocated heap, incl. mmap'd blocks) while building"
echo
"./$BUILD/bench/bench_ir" "$@"
