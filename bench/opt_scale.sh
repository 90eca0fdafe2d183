#!/bin/sh
# opt_scale.sh - is `gwr optimize` linear in the number of layers? For each
# op family of bench/make_chain_models.py (element-wise by a shared scalar,
# Unsqueeze/Squeeze and Reshape on shared constants, N identical Relu(x),
# Transpose, Cast, Conv+BatchNormalization, the Shape/Gather/Concat/Reshape
# idiom, Concat/Slice, a fan-out of x to N readers) and N in SIZES, times
# `gwr optimize` (whole process, best of REPEAT) and prints the cost per
# layer (us/layer) per N, the same for `gwr run`'s planning (the session
# optimizes at planning; its "plan ... ms" figure), and the ratios largest/
# smallest N (the figure: flat within 2x). For the largest N also every
# level x target (basic, extended, all x onnx, ort).
# Usage: bench/opt_scale.sh [WORKDIR]   (default: a temp dir, removed after)
#   BUILD=<dir>        build folder (default build)
#   SIZES="1000 10000 100000"
#   FAMILIES="ew unsq ..."  a subset (default all)
#   REPEAT=N           repeats of each timing (default 3)
#   LIMIT=S            seconds before a run counts as not finishing (default 120)
# Needs /usr/bin/python3 with onnx and numpy (Debian's). Not part of the tests.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SIZES=${SIZES:-1000 10000 100000}
FAMILIES=${FAMILIES:-ew unsq reshape relu transpose cast convbn shape concat fanout}
REPEAT=${REPEAT:-3}
LIMIT=${LIMIT:-120}
PY=${PY:-/usr/bin/python3}
. bench/lib.sh
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" --target gwr -j "$(nproc)" >/dev/null
bench_workdir "${1:-}"
GWR=./$BUILD/gwr

now() { date +%s.%N; }
# best OUT ARGS...: best-of-REPEAT wall seconds of `gwr ARGS`, "timeout"
# past LIMIT, "fail" on an error
best() {
    b=""
    i=0
    while [ "$i" -lt "$REPEAT" ]; do
        t0=$(now)
        if timeout "$LIMIT" $GWR "$@" >"$W/last.txt" 2>&1; then
            t1=$(now)
            b=$(awk "BEGIN{d = $t1 - $t0; b = \"$b\"; printf \"%.3f\", (b == \"\" || d < b + 0) ? d : b}")
        else
            rc=$?
            [ "$rc" -eq 124 ] && echo timeout || echo fail
            return
        fi
        i=$((i + 1))
    done
    echo "$b"
}
# layers F: the model's layer count (the "wrote ...: A -> B layers" line)
layers() { sed -n 's/^wrote .*: \([0-9]*\) -> \([0-9]*\) layers.*/\1 \2/p' "$W/last.txt"; }
us() { awk "BEGIN{ if (\"$1\" ~ /^[0-9.]+$/) printf \"%.2f\", $1 * 1e6 / $2; else print \"$1\" }"; }
ratio() { awk "BEGIN{ if (\"$1\" ~ /^[0-9.]+$/ && \"$2\" ~ /^[0-9.]+$/) printf \"%.2f\", $2 / $1; else print \"-\" }"; }
# plan_us M LAYERS: `gwr run M`'s planning (the session's optimize, shape
# inference, order and memory plan: its "plan X ms" figure) per layer, best
# of REPEAT; "timeout" past LIMIT, "fail" on an error
plan_us() {
    b=""
    i=0
    while [ "$i" -lt "$REPEAT" ]; do
        if ! timeout "$LIMIT" $GWR run "$1" --random 1 >"$W/run.txt" 2>&1; then
            [ $? -eq 124 ] && echo timeout || echo fail
            return
        fi
        p=$(sed -n "s/.*(plan \([0-9.]*\) ms.*/\1/p" "$W/run.txt" | head -n 1)
        b=$(awk "BEGIN{b = \"$b\"; print (b == \"\" || $p < b + 0) ? $p : b}")
        i=$((i + 1))
    done
    us "$(awk "BEGIN{print $b / 1000}")" "$2"
}

echo "# gwr optimize: cost per layer from 10^3 to 10^5 layers"
echo
echo "- command: \`bench/opt_scale.sh\` (SIZES=\"$SIZES\"); $(bench_build_desc), $(date -u +%Y-%m-%d)"
echo "- machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- time: wall clock of the whole \`gwr optimize M -o OUT\` process (load, optimize, save), best of $REPEAT; per layer: divided by the model's layers (initializers included)"
echo

hdr="| family |"
sep="|---|"
for n in $SIZES; do
    hdr="$hdr N=$n layers | s | us/layer | run: plan us/layer |"
    sep="$sep---:|---:|---:|---:|"
done
echo "$hdr ratio | run: ratio |"
echo "$sep---:|---:|"
largest=""
for n in $SIZES; do largest=$n; done
first=${SIZES%% *}
for f in $FAMILIES; do
    row="| $f |"
    u0=""
    u1=""
    p0=""
    p1=""
    for n in $SIZES; do
        m=$W/${f}_$n.onnx
        [ -f "$m" ] || "$PY" bench/make_chain_models.py "$W" "$n" "$f"
        t=$(best optimize "$m" -o "$W/out.onnx")
        set -- $(layers) 0 0
        L=$1
        [ "$L" -gt 0 ] || L=$n
        u=$(us "$t" "$L")
        p=$(plan_us "$m" "$L")
        [ "$n" = "$first" ] && u0=$u && p0=$p
        [ "$n" = "$largest" ] && u1=$u && p1=$p
        row="$row $L -> $2 | $t | $u | $p |"
    done
    echo "$row $(ratio "$u0" "$u1") | $(ratio "$p0" "$p1") |"
done

echo
echo "### N=$largest: \`gwr optimize\` at every level and target (us/layer)"
echo
echo "| family | basic/onnx | extended/onnx | all/onnx | basic/ort | extended/ort | all/ort |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for f in $FAMILIES; do
    m=$W/${f}_$largest.onnx
    row="| $f |"
    L=$largest
    for tgt in onnx ort; do
        for lvl in basic extended all; do
            t=$(best optimize "$m" -o "$W/out.onnx" --level "$lvl" --target "$tgt")
            set -- $(layers) 0
            [ "$1" -gt 0 ] && L=$1
            row="$row $(us "$t" "$L") |"
        done
    done
    echo "$row"
done
