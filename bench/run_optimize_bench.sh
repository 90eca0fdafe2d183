#!/bin/sh
# run_optimize_bench.sh - the optimizer's figures (issue 13) against
# onnxruntime, measured in the same run, per model:
#  1. compute nodes (every node of the top-level graph but Constant, counted
#     with python's onnx) of the original, of `gwr optimize` at basic/onnx,
#     extended/onnx, extended/ort (the default level) and all/ort, and of onnxruntime's own optimized graph at
#     basic and extended (session option optimizedModelFilePath,
#     bench/ort_optimize.js; com.microsoft contrib ops count as nodes);
#  2. numerics: `gwr optimize --verify` on every gwr output, and onnxruntime
#     (optimizations disabled) on each gwr output against the original, same
#     seeded inputs (`gwr run -o DIR`, bench/ort_compare.js);
#  3. time: `gwr optimize --level extended` (whole process) against
#     onnxruntime's session creation with 'extended' optimizations on the
#     same file (bench/ort_session.js FILE REPEAT extended), and the cost per
#     layer of `gwr optimize` on decoders of ~10^3, 10^4, 10^5 layers;
#  4. onnxruntime's inference latency (bench/ort_latency.js, the sessions
#     taking turns on the same inputs): the `--target ort` output with
#     onnxruntime's optimizations disabled against the original at
#     'extended', and both at 'all' (gwr first, then onnxruntime's own).
# Models: bench_exec gen-gpt (GPT-12) and gen-resnet (ResNet-18-style, BN
# folded), bench_onnx gen-gpt 1000 32 --static (the 1,000-block decoder), and
# bench/make_opt_models.py's cnn_bn, mbv3_op13, mbv3_op14, xformer, and the
# proof sweep's gpt_decoder, gpt_decoder_where, resnet_bn, deconv_bn, lstm, mbv3_forms.
# Usage: bench/run_optimize_bench.sh [WORKDIR]   (default: a temp dir, removed after)
#   BUILD=<dir>   build folder (default build)
#   REPEAT=N      repeats of each timing (default 3; best of N reported)
#   SCALE="23 227 2273"  decoder blocks for the per-layer figure (~44 layers a block)
#   MODELS="name:shape ..."  a subset of the models below (default all)
#   ROUNDS=N      inference rounds per session for the latency figure (default 20; median reported)
# Needs ~400 MB free in WORKDIR, node with onnxruntime-node, and /usr/bin/python3
# with onnx and numpy. Not part of the tests.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-3}
SCALE=${SCALE:-23 227 2273}
ROUNDS=${ROUNDS:-20}
PY=${PY:-/usr/bin/python3}
. bench/lib.sh
bench_build bench_exec bench_onnx gwr
bench_workdir "${1:-}"
GWR=./$BUILD/gwr

now() { date +%s.%N; }
# best_gwr OUTFILE ARGS...: best-of-REPEAT wall time of the whole `gwr` process
best_gwr() {
    out=$1
    shift
    best=""
    i=0
    while [ "$i" -lt "$REPEAT" ]; do
        rm -f "$out"
        t0=$(now)
        $GWR "$@" -o "$out" >/dev/null
        t1=$(now)
        best=$(awk "BEGIN{d = $t1 - $t0; b = \"$best\"; print (b == \"\" || d < b + 0) ? d : b}")
        i=$((i + 1))
    done
    echo "$best"
}

echo "# gwr optimizer benchmark"
echo
echo "- command: \`bench/run_optimize_bench.sh\`; $(bench_build_desc), $(date -u +%Y-%m-%d)"
echo "- machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- onnxruntime-node $(node -p "require('onnxruntime-node/package.json').version"), one intra-op thread"
echo "- times: wall clock of the whole process (gwr) / of InferenceSession.create (onnxruntime), best of $REPEAT"
echo

# name:run-shape (gwr run --shape for the inputs of the latency and
# onnxruntime comparisons)
MODELS=${MODELS:-"gpt12:x=1,128,256 resnet:x=1,3,224,224 gpt1000:x=1,128,32 cnn_bn:x=1,3,32,32 mbv3_op13:x=1,16,32,32 mbv3_op14:x=1,16,32,32 xformer:x=64,128 gpt_decoder:x=1,16,64 gpt_decoder_where:x=1,16,64 resnet_bn:x=1,3,32,32 deconv_bn:x=1,32,8,8 lstm:x=8,1,16 mbv3_forms:x=1,16,32,32"}
./$BUILD/bench/bench_exec gen-gpt "$W/gpt12.onnx" >/dev/null
./$BUILD/bench/bench_exec gen-resnet "$W/resnet.onnx" >/dev/null
./$BUILD/bench/bench_onnx gen-gpt 1000 32 "$W/gpt1000.onnx" --static >/dev/null
"$PY" bench/make_opt_models.py "$W" cnn_bn mbv3_op13 mbv3_op14 xformer gpt_decoder gpt_decoder_where resnet_bn deconv_bn lstm mbv3_forms

fails=0
: >"$W/numerics.md"
: >"$W/time.md"
: >"$W/latency.md"
for m in $MODELS; do
    name=${m%%:*}
    shape=${m#*:}
    f=$W/$name.onnx
    # no --shape: it would bind the GPT-12's batch and seq in gwr's output, and
    # onnxruntime would then run a specialized model against a dynamic one
    # 1. gwr's three outputs, each verified, with their reports
    vlines=""
    for v in basic:onnx extended:onnx extended:ort all:ort; do
        lvl=${v%%:*}
        tgt=${v#*:}
        o=$W/$name.gwr_${lvl}_$tgt.onnx
        if $GWR optimize "$f" -o "$o" --level "$lvl" --target "$tgt" --report --verify >"$W/$name.gwr_${lvl}_$tgt.txt" 2>&1; then
            vl=$(sed -n 's/^verify: [0-9]* outputs\{0,1\}, max abs \([^,]*\),.*: \([a-zA-Z]*\).*/\2 (\1)/p' "$W/$name.gwr_${lvl}_$tgt.txt")
        else
            fails=$((fails + 1))
            vl="FAIL: $(grep -m1 -e '^verify' -e 'gwr' "$W/$name.gwr_${lvl}_$tgt.txt" || tail -n 1 "$W/$name.gwr_${lvl}_$tgt.txt")"
        fi
        vlines="$vlines | $vl"
    done
    # onnxruntime's own optimized graphs
    node bench/ort_optimize.js "$f" basic "$W/$name.ort_basic.onnx" >/dev/null
    node bench/ort_optimize.js "$f" extended "$W/$name.ort_extended.onnx" >/dev/null
    # 2. onnxruntime on gwr's outputs against the original, same inputs
    $GWR run "$f" --random 1 --shape "$shape" -o "$W/$name.io" >/dev/null
    gouts=""
    for v in basic_onnx extended_onnx extended_ort all_ort; do
        [ -f "$W/$name.gwr_$v.onnx" ] && gouts="$gouts $W/$name.gwr_$v.onnx"
    done
    # shellcheck disable=SC2086
    node bench/ort_compare.js "$f" "$W/$name.io" $gouts >"$W/$name.cmp.txt" || fails=$((fails + 1))
    olines=""
    for v in basic_onnx extended_onnx extended_ort all_ort; do
        ol=$(sed -n "s/^$name.gwr_$v.onnx: loads, max abs difference from the original \(.*\)/\1/p; s/^$name.gwr_$v.onnx: \(FAILS.*\)/\1/p" "$W/$name.cmp.txt")
        olines="$olines | ${ol:-not written}"
    done
    echo "| $name$vlines$olines |" >>"$W/numerics.md"
    # 3. time: gwr optimize extended (whole process) vs onnxruntime extended session creation
    g=$(best_gwr "$W/$name.t.onnx" optimize "$f" --level extended --target onnx)
    ort=$(node bench/ort_session.js "$f" "$REPEAT" extended | sed -n 's/.*: \([0-9.]*\) s$/\1/p')
    awk "BEGIN{printf \"| %s | %.3f s | %.3f s | %.1fx |\n\", \"$name\", $g, $ort, $ort / $g}" >>"$W/time.md"
    # 4. onnxruntime latency: original at extended and all, gwr's all/ort output disabled and at all
    a=$W/$name.gwr_extended_ort.onnx
    if [ -f "$a" ] && node bench/ort_latency.js "$W/$name.io" "$ROUNDS" "$f:extended" "$a:disabled" "$f:all" "$a:all" \
        >"$W/$name.lat.txt" 2>&1; then
        sed -n 's/.*: median \([0-9.]*\) ms.*/\1/p' "$W/$name.lat.txt" | tr '\n' ' ' |
            awk -v n="$name" '{printf "| %s | %.3f ms | %.3f ms | %.2fx | %.3f ms | %.3f ms | %.2fx |\n", n, $1, $2, $2 / $1, $3, $4, $4 / $3}' \
            >>"$W/latency.md"
    else
        fails=$((fails + 1))
        echo "| $name | FAIL: $(tail -n 1 "$W/$name.lat.txt") | | | | | |" >>"$W/latency.md"
    fi
done

echo "## 1. compute nodes (all but Constant, top-level graph)"
echo
"$PY" - "$W" $(for m in $MODELS; do printf '%s ' "${m%%:*}"; done) <<'EOF'
import collections, sys
import onnx
w, names = sys.argv[1], sys.argv[2:]
cols = [("", "original"), (".gwr_basic_onnx", "gwr basic/onnx"), (".gwr_extended_onnx", "gwr extended/onnx"),
        (".gwr_extended_ort", "gwr extended/ort"), (".gwr_all_ort", "gwr all/ort"), (".ort_basic", "ort basic"),
        (".ort_extended", "ort extended")]
ops = {}
print("| model | " + " | ".join(c[1] for c in cols) + " |")
print("| --- |" + " ---: |" * len(cols))
for n in names:
    row = []
    for suf, _ in cols:
        try:
            g = onnx.load(f"{w}/{n}{suf}.onnx").graph
        except Exception:
            row.append("-")
            continue
        c = collections.Counter((x.domain + "." if x.domain not in ("", "ai.onnx") else "") + x.op_type
                                for x in g.node if x.op_type != "Constant")
        ops[(n, suf)] = c
        row.append(str(sum(c.values())))
    print(f"| {n} | " + " | ".join(row) + " |")
print()
print("Op types where gwr extended/onnx, gwr extended/ort and ort extended differ (gwr ext / gwr ext-ort / ort ext):")
print()
for n in names:
    a, b, c = (ops.get((n, s), collections.Counter()) for s in (".gwr_extended_onnx", ".gwr_extended_ort", ".ort_extended"))
    diff = sorted(k for k in set(a) | set(b) | set(c) if not (a[k] == b[k] == c[k]))
    print(f"- {n}: " + (", ".join(f"{k} {a[k]}/{b[k]}/{c[k]}" for k in diff) or "same op counts"))
print()
import math
def total(n, s):
    return sum(ops.get((n, s), collections.Counter()).values())
def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
for lvl in ("extended", "all"):
    g = f".gwr_{lvl}_ort"
    ok = [n for n in names if total(n, g) and total(n, ".ort_extended")]
    r = [total(n, g) / total(n, ".ort_extended") for n in ok]
    worse = [n for n in ok if total(n, g) > total(n, ".ort_extended")]
    print(f"gwr {lvl}/ort over ort extended, geometric mean of the node-count ratios: {geo(r):.3f} "
          f"({len(ok)} models; above ort extended on: {', '.join(worse) or 'none'})")
ok = [n for n in names if total(n, ".gwr_extended_onnx") and total(n, ".ort_basic")]
worse = [n for n in ok if total(n, ".gwr_extended_onnx") > total(n, ".ort_basic")]
print(f"gwr extended/onnx (the default level) above ort basic on: {', '.join(worse) or 'none'}")
EOF
echo
echo "## 2. numerics"
echo
echo "gwr optimize --verify (gwr's executor, before vs after; max abs), then onnxruntime (optimizations disabled) on gwr's output vs on the original, same seeded inputs (max abs difference):"
echo
echo "| model | verify basic/onnx | verify extended/onnx | verify extended/ort | verify all/ort | ort basic/onnx | ort extended/onnx | ort extended/ort | ort all/ort |"
echo "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |"
cat "$W/numerics.md"
echo
echo "### passes that rewrote (gwr optimize --report)"
echo
for m in $MODELS; do
    name=${m%%:*}
    for v in extended_onnx all_ort; do
        printf -- '- %s %s: %s\n' "$name" "$v" "$(awk '$1 ~ /^[a-z_]+$/ && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/ && $4 > 0 {printf "%s%s %s", s, $1, $4; s = ", "} /^layers / {l = $2 " -> " $4} END {printf "%s (layers %s)", (s ? "" : "none"), l}' "$W/$name.gwr_$v.txt")"
    done
done
echo
echo "## 3a. gwr optimize --level extended (whole process) vs onnxruntime 'extended' session creation, same file"
echo
echo "| model | gwr optimize | onnxruntime session (extended) | onnxruntime / gwr |"
echo "| --- | ---: | ---: | ---: |"
cat "$W/time.md"
echo
echo "## 3b. gwr optimize --level extended per layer (bench_onnx gen-gpt N 32 --static)"
echo
echo "| blocks | layers | gwr optimize (whole process) | ns per layer |"
echo "| ---: | ---: | ---: | ---: |"
for b in $SCALE; do
    ./$BUILD/bench/bench_onnx gen-gpt "$b" 32 "$W/scale$b.onnx" --static >/dev/null
    t=$(best_gwr "$W/scale$b.opt.onnx" optimize "$W/scale$b.onnx" --level extended)
    layers=$($GWR optimize "$W/scale$b.onnx" --level extended -o "$W/scale$b.opt.onnx" | sed -n 's/.*: \([0-9]*\) -> [0-9]* layers$/\1/p')
    awk "BEGIN{printf \"| %d | %d | %.3f s | %.0f |\n\", $b, $layers, $t, $t * 1e9 / $layers}"
    rm -f "$W/scale$b.onnx" "$W/scale$b.opt.onnx"
done
echo
echo "## 4. onnxruntime inference latency: gwr first (--target ort, the default level extended) vs onnxruntime alone"
echo
echo "bench/ort_latency.js, one intra-op thread, the four sessions taking turns, median of $ROUNDS runs each:"
echo "A = the original at 'extended', B = gwr's extended/ort output with onnxruntime's optimizations disabled,"
echo "C = the original at 'all', D = gwr's extended/ort output at 'all'."
echo
echo "| model | A orig extended | B gwr, ort disabled | B / A | C orig all | D gwr, ort all | D / C |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
cat "$W/latency.md"
echo
awk -F'|' '$4 ~ /ms/ {n++; a += log($5 + 0); b += log($8 + 0)} END {if (n) printf "geometric mean over %d models: B / A %.3f, D / C %.3f\n", n, exp(a / n), exp(b / n)}' "$W/latency.md"
echo
echo "failures (verify or onnxruntime): $fails"
