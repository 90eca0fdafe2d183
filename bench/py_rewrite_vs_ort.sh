#!/bin/sh
# py_rewrite_vs_ort.sh - issue 15's figure: the Python replace_add_with_sub
# (the seed example's pattern class, run by gwr.RewritePatternManager from
# Python: load, rewrite, save) on the 1,000-block decoder vs onnxruntime's
# session creation with 'basic' optimizations on the same file, same run:
# target >= 10x. The decoder is the one of run_rewrite_bench.sh part 2
# (`bench_onnx gen-gpt 1000 32 FILE --static`: input fixed to [1, 128, 32],
# see there why), and `gwr rewrite --pattern replace_add_with_sub` (C) is
# timed beside it. The Python output is checked against the C one: the same
# op counts, no Add left.
# Usage: bench/py_rewrite_vs_ort.sh [WORKDIR]   (default: a temp dir, removed after)
#   BUILD=<dir>   build folder (default build)     REPEAT=N  best of N (default 3)
# Needs node with onnxruntime-node and /usr/bin/python3 with numpy and onnx.
# Not part of the tests.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-3}
PY=${PY:-/usr/bin/python3}
. bench/lib.sh
bench_build bench_onnx gwr gwr_python
bench_workdir "${1:-}"
export PYTHONPATH="$PWD/$BUILD/python"

# best_of N CMD...: the best wall time of N runs of CMD (whole process), in s.
best_of() {
    n=$1; shift
    best=""
    i=0
    while [ "$i" -lt "$n" ]; do
        t0=$(date +%s.%N)
        "$@" >/dev/null
        t1=$(date +%s.%N)
        best=$(awk "BEGIN{d=$t1 - $t0; b=\"$best\"; print (b == \"\" || d < b + 0) ? d : b}")
        i=$((i + 1))
    done
    echo "$best"
}

echo "# Python replace_add_with_sub vs onnxruntime 'basic' session creation"
echo
echo "- command: \`bench/py_rewrite_vs_ort.sh\`; $(bench_build_desc)"
echo "- machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- $("$PY" --version), numpy $("$PY" -c 'import numpy; print(numpy.__version__)'); onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version"), one intra-op thread"
echo "- times: best of $REPEAT"
echo
./$BUILD/bench/bench_onnx gen-gpt 1000 32 "$W/gpt1000.onnx" --static
echo "file: $(du -h "$W/gpt1000.onnx" | cut -f1)"
"$PY" bench/py_rewrite_vs_ort.py "$W/gpt1000.onnx" "$W/gpt1000.py.onnx" "$REPEAT" | tee "$W/py.txt"
py_proc=$(best_of "$REPEAT" "$PY" bench/py_rewrite_vs_ort.py "$W/gpt1000.onnx" "$W/gpt1000.py.onnx" 1)
printf 'python, whole process (interpreter start, import gwr, load, rewrite, save; best of %s): %.3f s\n' "$REPEAT" "$py_proc"
c_proc=$(best_of "$REPEAT" ./$BUILD/gwr rewrite "$W/gpt1000.onnx" --pattern replace_add_with_sub -o "$W/gpt1000.c.onnx")
printf 'gwr rewrite (C), whole process (best of %s): %.3f s\n' "$REPEAT" "$c_proc"
node bench/ort_session.js "$W/gpt1000.onnx" "$REPEAT" basic | sed "s|$W/||" | tee "$W/ort.txt"
ort=$(sed -n 's/.*: \([0-9.]*\) s$/\1/p' "$W/ort.txt")
py_lib=$(sed -n 's/^python load+rewrite+save [^:]*: \([0-9.]*\) s,.*/\1/p' "$W/py.txt")
ratio=$(awk "BEGIN{print $ort / $py_proc}")
printf 'ratio onnxruntime basic session / Python whole process: %.1fx -> %s (target >= 10x)\n' "$ratio" \
    "$(awk "BEGIN{print ($ratio >= 10) ? \"PASS\" : \"FAIL\"}")"
printf 'ratio onnxruntime basic session / Python load+rewrite+save in process: %.1fx\n' "$(awk "BEGIN{print $ort / $py_lib}")"
printf 'Python / C (whole process): %.2fx\n' "$(awk "BEGIN{print $py_proc / $c_proc}")"
echo
echo "### the Python output against the C one"
"$PY" - "$W/gpt1000.onnx" "$W/gpt1000.py.onnx" "$W/gpt1000.c.onnx" <<'PYEOF'
import collections, sys
import onnx
src, py, c = (onnx.load(p, load_external_data=False) for p in sys.argv[1:4])
count = lambda m: collections.Counter(n.op_type for n in m.graph.node)
a, p, k = count(src), count(py), count(c)
print("input: %d Add, %d Sub; Python: %d Add, %d Sub; C: %d Add, %d Sub; %d / %d / %d nodes"
      % (a["Add"], a["Sub"], p["Add"], p["Sub"], k["Add"], k["Sub"], sum(a.values()), sum(p.values()), sum(k.values())))
ok = p == k and p["Add"] == 0 and p["Sub"] == a["Sub"] + a["Add"] and a["Add"] > 0
print("Python and C outputs have the same op counts, every Add now a Sub:", "yes" if ok else "NO")
sys.exit(0 if ok else 1)
PYEOF
