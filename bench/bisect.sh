#!/bin/sh
# bench/bisect.sh - issue 26's bisect figure: `gwr bisect` finds a
# deliberately wrong rewrite injected into a real model's optimize run of a
# few hundred rewrites, in at most ceil(log2 N) + 2 replays.
#
#   bench/bisect.sh [WORKDIR]       (BUILD=build, GWR_REAL_CACHE=bench/real/cache)
#
# The wrong rewrite is a plausible rule mixed into the default optimize
# (`--rules`): Sigmoid(x) => HardSigmoid(x) on silero-vad-v6 (If bodies: the
# rule fires in both branches of the sample-rate If, only the taken branch
# matters), HardSigmoid(x) => Sigmoid(x) on ppocr-det. The models come from
# bench/real/fetch.py's cache (bench/real/models.txt; their inputs as
# there). Prints per case N (the run's rewrites), the culprit, the replays,
# the bound ceil(log2 N) + 2 and the wall time of the whole bisect (the
# logged run, the executor runs and the replays; best of 3). Exit 1 when a
# case misses the bound or names another rule.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
. bench/lib.sh
[ -x "$BUILD/gwr" ] || cmake --build "$BUILD" --target gwr -j "$(nproc)" >/dev/null
GWR=$BUILD/gwr
CACHE=${GWR_REAL_CACHE:-bench/real/cache}/models
bench_workdir "${1:-}"

# sr = 16000, an int64 scalar (TensorProto), for silero-vad's If
${PYTHON:-/usr/bin/python3} -c "
import numpy as np
from onnx import numpy_helper
open('$W/sr.pb', 'wb').write(numpy_helper.from_array(np.array(16000, dtype=np.int64), 'sr').SerializeToString())
"
printf 'rule sigmoid_as_hard_sigmoid phase fuse:\n  Sigmoid(x) => HardSigmoid(x)\n' >"$W/sigmoid.rules"
printf 'rule hard_sigmoid_as_sigmoid phase fuse:\n  HardSigmoid(x) => Sigmoid(x)\n' >"$W/hard.rules"

echo "gwr bisect, $(bench_build_desc), $(nproc) cores"
printf '%-14s %6s  %-70s %7s %7s %8s\n' model N "culprit (#seq rule at layer)" replays bound seconds
fails=0
# case NAME RULE-NAME RULES-FILE ARGS...
run_case() {
    name=$1 rule=$2 rules=$3
    shift 3
    model=$CACHE/$name.onnx
    if [ ! -f "$model" ]; then
        echo "$name: not in $CACHE (python3 bench/real/fetch.py)"
        fails=1
        return
    fi
    best=
    for i in 1 2 3; do
        t0=$(date +%s.%N)
        rc=0
        "$GWR" bisect "$model" --rules "$rules" -o "$W/$name" "$@" >"$W/$name.out" 2>&1 || rc=$?
        t1=$(date +%s.%N)
        t=$(echo "$t1 - $t0" | bc)
        if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
    done
    n=$(sed -n 's/.*the run makes \([0-9]*\) rewrite.*/\1/p' "$W/$name.out")
    replays=$(sed -n 's/^replays: \([0-9]*\) .*/\1/p' "$W/$name.out")
    bound=$(sed -n 's/^replays: .* = \([0-9]*\))$/\1/p' "$W/$name.out")
    culprit=$(sed -n "s/^first rewrite after which the outputs differ: \(#[0-9]*\) of [0-9]*, \(.*\)$/\1 \2/p" "$W/$name.out")
    printf '%-14s %6s  %-70.70s %7s %7s %8.3f\n' "$name" "$n" "$culprit" "$replays" "$bound" "$best"
    if [ "$rc" != 1 ] || [ -z "$replays" ] || [ "$replays" -gt "$bound" ] || ! echo "$culprit" | grep -q " $rule at "; then
        echo "  FAIL (exit $rc):"
        sed 's/^/  /' "$W/$name.out"
        fails=1
    fi
}
run_case silero-vad-v6 sigmoid_as_hard_sigmoid "$W/sigmoid.rules" --input sr="$W/sr.pb" --shape input=1,512 \
    --shape state=2,1,128
run_case ppocr-det hard_sigmoid_as_sigmoid "$W/hard.rules" --shape x=1,3,256,256
exit $fails
