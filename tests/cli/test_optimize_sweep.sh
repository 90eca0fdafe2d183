#!/bin/sh
# Every model of ONNX's backend test data through `gwr optimize --level
# basic --debug` (the network verified after every rewrite): each must exit
# 0. Where any pass of the level fires (a report line of a pass that ran,
# with rewrites), the output must give the original's outputs exactly (`gwr verify --atol 0 --rtol 0`; a model gwr
# cannot run even against itself is only counted) and a second run must
# rewrite nothing.
# usage: test_optimize_sweep.sh path/to/gwr
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=/usr/share/libonnx-testdata/data
. "$HERE/lib.sh"
if [ ! -d "$DATA" ]; then
    echo "FAIL: $DATA is missing (scripts/setup.sh installs libonnx-testdata)"
    exit 1
fi
ELIM='^[a-z_]+ +[0-9]+ +[0-9]+ +[0-9]+$' # a pass that ran: label attempts matches rewrites
models=0 fired=0 norun=0
for m in $(find "$DATA" -name model.onnx | sort); do
    models=$((models + 1))
    expect 0 "optimize $m" -- "$GWR" optimize "$m" -o "$tmp/o.onnx" --level basic --report --debug
    n=$(grep -E "$ELIM" "$tmp/out" | awk '{s += $4} END {print s + 0}')
    [ "$n" -gt 0 ] || continue
    fired=$((fired + 1))
    grep -E "$ELIM" "$tmp/out" | awk '$4 > 0 {print $1}' >>"$tmp/passes"
    if "$GWR" verify "$m" "$tmp/o.onnx" --atol 0 --rtol 0 >"$tmp/ver" 2>&1; then
        pass=$((pass + 1))
    elif ! "$GWR" verify "$m" "$m" --atol 0 --rtol 0 >/dev/null 2>&1; then
        norun=$((norun + 1))
    else
        fail=$((fail + 1)); echo "FAIL: $m: the optimized model's outputs differ"; cat "$tmp/ver"
    fi
    expect 0 "optimize the optimized $m" -- "$GWR" optimize "$tmp/o.onnx" -o "$tmp/o2.onnx" --level basic --report
    n=$(grep -E "$ELIM" "$tmp/out" | awk '{s += $4} END {print s + 0}')
    ok "a second run of $m rewrites nothing" -- test "$n" -eq 0
done
echo "$models models, the basic passes fired in $fired ($norun not runnable by gwr); by pass:"
sort "$tmp/passes" | uniq -c
[ "$models" -gt 1000 ] || { echo "FAIL: only $models models"; fail=$((fail + 1)); }
[ "$fired" -ge 70 ] || { echo "FAIL: the basic passes fired in only $fired models"; fail=$((fail + 1)); }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
