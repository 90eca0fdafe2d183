#!/bin/sh
# Tests of the gwr command-line tool: exit codes, help, errors; inspect,
# convert and dot on real models, checked against ONNX's own Python package
# (tests/cli/onnx_check.py, run with /usr/bin/python3 for python3-onnx).
# usage: test_cli.sh path/to/gwr
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${GWR_VENV_PY:-$HERE/../../.venv/bin/python}  # onnx 1.23, onnxruntime 1.31 (scripts/setup.sh)
DATA=/usr/share/libonnx-testdata/data
. "$HERE/lib.sh"

expect 0 "--version" -- "$GWR" --version
has out "^gwr [0-9]*\.[0-9]*\.[0-9]*$" "version line"
expect 0 "--help" -- "$GWR" --help
has out "usage: gwr" "help usage"
has out "demo" "help lists demo"
expect 2 "no arguments" -- "$GWR"
expect 2 "unknown command" -- "$GWR" frobnicate
has err "unknown command 'frobnicate'" "unknown command message"
lines err 1 "unknown command: one line"
expect 0 "demo --help" -- "$GWR" demo --help
has out "usage: gwr demo" "demo help"
expect 0 "help demo" -- "$GWR" help demo
has out "usage: gwr demo" "help demo"
mkdir "$tmp/demo"
expect 0 "demo" -- "$GWR" demo --dir "$tmp/demo"
has out "network 'demo'" "demo prints the network"
has out "GPTAttention" "demo has the attention plugin"
has out "FLayerInfo of" "demo shows an FLayerInfo"
has out "^#1 fuse_attention_with_bias at 'Add_6' (Add): +GPTAttention_" "demo traces the fusion first"
has out "^#2 gpt_attention_remove_padding at 'GPTAttention_" "then remove-padding on the new plugin"
has out "^replace_add_with_sub  *[0-9][0-9]*  *27  *10  *10 " "demo statistics"
has out "converged" "demo converges"
for f in demo.onnx demo.rewritten.onnx demo.dot demo.rewritten.dot demo.view.html; do
    ok "demo wrote $f" -- test -s "$tmp/demo/$f"
done
ok "demo.view.html holds the data of both networks" -- grep -q '"title":"demo.onnx -> demo.rewritten.onnx"' "$tmp/demo/demo.view.html"
# The demo's second rewrite re-creates the plugin the first one made: its
# provenance nests, back to the original Add and plugin (the trace names them).
fused=$(sed -n "s/^#1 fuse_attention_with_bias at 'Add_6' (Add): +\(GPTAttention_[0-9]*\) .*/\1/p" "$tmp/out")
padded=$(sed -n "s/^#2 gpt_attention_remove_padding at '$fused' .* +\(GPTAttention_[0-9]*\) .*/\1/p" "$tmp/out")
expect 0 "explain the re-created plugin" -- "$GWR" explain "$tmp/demo/demo.rewritten.onnx" "$padded"
has out "^$padded: made by gpt_attention_remove_padding from" "explain: the last rule first"
has out "^  $fused: made by fuse_attention_with_bias from" "explain: the earlier rewrite nested"
has out "^    Add_6 (original)" "explain: back to the original layers"
expect 0 "demo --onnx-attention" -- "$GWR" demo --onnx-attention --blocks 1 --dir "$tmp/demo"
has out "Softmax" "ONNX attention has a Softmax"
expect 2 "demo bad --blocks" -- "$GWR" demo --blocks zero
has err "blocks" "bad --blocks message"
lines err 1 "bad --blocks: one line"
expect 2 "demo unknown flag" -- "$GWR" demo --frob
if command -v dot >/dev/null 2>&1; then
    expect 0 "Graphviz accepts the demo's DOT" -- dot -Tsvg "$tmp/demo/demo.rewritten.dot" -o "$tmp/d.svg"
    expect 0 "demo --svg" -- "$GWR" demo --svg --dir "$tmp/demo"
    ok "demo --svg wrote SVG" -- grep -q "<svg" "$tmp/demo/demo.rewritten.svg"
else
    fail=$((fail + 1)); echo "FAIL: Graphviz 'dot' is not installed (scripts/setup.sh installs it)"
fi
expect 1 "demo into a missing directory" -- "$GWR" demo --dir "$tmp/no/such/dir"
has err "no/such/dir/demo.onnx" "missing directory named"
lines err 1 "missing directory: one line"

# bad_inputs DESCRIPTION OUTPUT CMD...: CMD with each broken model appended
# (missing, a directory, truncated, random bytes) exits 1 with one line
# naming the model and leaves OUTPUT (may be "") absent.
bad_inputs() {
    desc=$1; output=$2; shift 2
    for m in "$tmp/missing.onnx" "$tmp/adir" "$tmp/truncated.onnx" "$tmp/random.onnx"; do
        expect 1 "$desc: $(basename "$m")" -- "$@" "$m"
        errline "$m" "$desc: $(basename "$m")"
        [ -n "$output" ] && absent "$output" "$desc: $(basename "$m")"
    done
}

model_tests() {
    ADD=$DATA/node/test_add/model.onnx
    CONVT=$DATA/pytorch-converted/test_ConvTranspose2d/model.onnx
    IF=$DATA/node/test_if/model.onnx
    LOOP=$DATA/node/test_loop11/model.onnx
    SEQ=$DATA/simple/test_sequence_model1/model.onnx
    ADAGRAD=$DATA/node/test_adagrad/model.onnx
    GEN=$tmp/gen.onnx # initializers, metadata, symbolic dims, a custom domain, a 4 KiB weight
    ok "make the generated model" -- $PY "$HERE/onnx_check.py" make-model "$GEN"

    # Broken inputs shared by every command.
    mkdir "$tmp/adir"
    size=$(wc -c < "$GEN")
    head -c $((size / 2)) "$GEN" > "$tmp/truncated.onnx"
    $PY -c 'import random, sys; random.seed(7); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(1000)))' > "$tmp/random.onnx"
    : > "$tmp/afile"

    # ---- inspect ----
    expect 0 "inspect --help" -- "$GWR" inspect --help
    has out "usage: gwr inspect" "inspect help"
    expect 0 "help inspect" -- "$GWR" help inspect
    has out "usage: gwr inspect" "help inspect"
    expect 0 "inspect test_add" -- "$GWR" inspect "$ADD"
    has out "^ir_version: *7$" "test_add: ir_version"
    has out "^producer: *backend-test$" "test_add: producer"
    has out "^opsets: *ai.onnx 14$" "test_add: opsets"
    hasf out "  x  float32[3,4,5]" "test_add: input x"
    hasf out "  sum  float32[3,4,5]" "test_add: output sum"
    has out "^layers: *1$" "test_add: layers"
    has out "^ *1  Add$" "test_add: histogram"
    has out "^custom domains: (none)$" "test_add: no custom domains"
    expect 0 "inspect generated model" -- "$GWR" inspect "$GEN"
    hasf out "x  float32[batch,32]" "symbolic dims by name"
    hasf out "com.example::Scale" "custom op in the histogram"
    has out "^custom domains: com.example$" "custom domains"
    has out "^parameters: *1058 (4240 bytes" "parameter count and bytes"
    hasf out "author: gwr \"tests\"" "metadata"
    hasf out "purpose: line one\nline two" "metadata newline escaped"
    expect 0 "inspect test_adagrad" -- "$GWR" inspect "$ADAGRAD"
    has out "^custom domains: ai.onnx.preview.training$" "adagrad custom domain"
    for m in "$ADD" "$CONVT" "$IF" "$LOOP" "$SEQ" "$ADAGRAD" "$GEN"; do
        name=$(basename "$(dirname "$m")")
        [ "$m" = "$GEN" ] && name=generated
        expect 0 "inspect --json $name" -- "$GWR" inspect --json "$m"
        cp "$tmp/out" "$tmp/inspect.json"
        ok "inspect --json $name: valid JSON" -- $PY -m json.tool "$tmp/inspect.json"
        ok "inspect --json $name: matches onnx" -- $PY "$HERE/onnx_check.py" inspect "$m" "$tmp/inspect.json"
        expect 0 "inspect $name" -- "$GWR" inspect "$m"
        cp "$tmp/out" "$tmp/inspect.txt"
        ok "inspect $name: text matches onnx" -- $PY "$HERE/onnx_check.py" inspect-text "$m" "$tmp/inspect.txt"
    done
    # Names, symbols and metadata with quotes, backslashes, control characters
    # and non-ASCII text; a model with every kind of value type; one with a
    # function, a sparse initializer and an If reading outer tensors.
    ODD=$tmp/odd.onnx
    ok "make the odd model" -- $PY "$HERE/onnx_check.py" make-odd-model "$ODD"
    FUZZ=$HERE/../fuzz/corpus
    for m in "$ODD" "$FUZZ/any_sequence_map_types.onnx" "$FUZZ/ok_rich.onnx"; do
        name=$(basename "$m")
        expect 0 "inspect --json $name" -- "$GWR" inspect --json "$m"
        cp "$tmp/out" "$tmp/inspect.json"
        ok "inspect --json $name: valid JSON" -- $PY -m json.tool "$tmp/inspect.json"
        ok "inspect --json $name: matches onnx" -- $PY "$HERE/onnx_check.py" inspect "$m" "$tmp/inspect.json"
    done
    expect 0 "inspect odd model" -- "$GWR" inspect "$ODD"
    hasf out 'in "quoted"\\back\x09slash\nnewline\x01  float32[dim "q"\n,3]' "odd names escaped in text"
    expect 0 "inspect ok_rich" -- "$GWR" inspect "$FUZZ/ok_rich.onnx"
    has out "^layers: *12 (and 2 in subgraphs)$" "subgraph layers counted apart"
    bad_inputs "inspect" "" "$GWR" inspect
    bad_inputs "inspect --json" "" "$GWR" inspect --json
    expect 2 "inspect without MODEL" -- "$GWR" inspect
    lines err 1 "inspect without MODEL: one line"
    expect 2 "inspect unknown flag" -- "$GWR" inspect --frob "$ADD"
    hasf err "--frob" "inspect unknown flag named"
    lines err 1 "inspect unknown flag: one line"
    expect 2 "inspect two models" -- "$GWR" inspect "$ADD" "$ADD"

    # ---- convert ----
    expect 0 "convert --help" -- "$GWR" convert --help
    has out "usage: gwr convert" "convert help"
    for m in "$ADD" "$CONVT" "$IF" "$LOOP" "$SEQ" "$GEN"; do
        name=$(basename "$(dirname "$m")")
        [ "$m" = "$GEN" ] && name=generated
        rm -f "$tmp/conv.onnx"
        expect 0 "convert $name" -- "$GWR" convert "$m" "$tmp/conv.onnx"
        ok "convert $name: checker passes, same graph" -- $PY "$HERE/onnx_check.py" same-nodes "$m" "$tmp/conv.onnx"
    done
    [ -e "$tmp/conv.onnx.data" ] && { fail=$((fail + 1)); echo "FAIL: convert wrote external data unasked"; }
    mkdir "$tmp/ext"
    expect 0 "convert --external-data" -- "$GWR" convert "$GEN" "$tmp/ext/e.onnx" --external-data
    ok "convert --external-data: side file" -- test -s "$tmp/ext/e.onnx.data"
    ok "convert --external-data: onnx loads it" -- $PY "$HERE/onnx_check.py" external "$GEN" "$tmp/ext/e.onnx"
    ok "convert --external-data: same graph" -- $PY "$HERE/onnx_check.py" same-nodes "$GEN" "$tmp/ext/e.onnx"
    expect 0 "convert --external-threshold 1" -- "$GWR" convert --external-threshold 1 "$CONVT" "$tmp/ext/t.onnx"
    ok "convert --external-threshold: side file" -- test -s "$tmp/ext/t.onnx.data"
    ok "convert --external-threshold: onnx loads it" -- $PY "$HERE/onnx_check.py" external "$CONVT" "$tmp/ext/t.onnx"
    # A model with external data converted onto itself: its tensors are read
    # before the side file is rewritten.
    expect 0 "convert external model onto itself" -- "$GWR" convert "$tmp/ext/e.onnx" "$tmp/ext/e.onnx" --external-data
    ok "convert onto itself: onnx loads it" -- $PY "$HERE/onnx_check.py" external "$GEN" "$tmp/ext/e.onnx"
    expect 0 "convert external model back to one file" -- "$GWR" convert "$tmp/ext/e.onnx" "$tmp/ext/one.onnx"
    ok "convert back to one file: same graph" -- $PY "$HERE/onnx_check.py" same-nodes "$GEN" "$tmp/ext/one.onnx"
    bad_inputs "convert" "$tmp/bad_out.onnx" sh -c '"$0" convert "$2" "$1"' "$GWR" "$tmp/bad_out.onnx"
    expect 1 "convert into a missing folder" -- "$GWR" convert "$ADD" "$tmp/no/such/dir/o.onnx"
    errline "$tmp/no/such/dir/o.onnx" "convert into a missing folder"
    absent "$tmp/no/such/dir/o.onnx" "convert into a missing folder"
    expect 1 "convert under a regular file" -- "$GWR" convert "$ADD" "$tmp/afile/o.onnx"
    errline "$tmp/afile/o.onnx" "convert under a regular file"
    expect 1 "convert onto a directory" -- "$GWR" convert "$ADD" "$tmp/adir"
    errline "$tmp/adir" "convert onto a directory"
    ok "convert onto a directory: still a directory" -- test -d "$tmp/adir"
    if [ "$(id -u)" -ne 0 ]; then
        mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
        expect 1 "convert into a read-only folder" -- "$GWR" convert "$ADD" "$tmp/ro/o.onnx"
        errline "$tmp/ro/o.onnx" "convert into a read-only folder"
        absent "$tmp/ro/o.onnx" "convert into a read-only folder"
    fi
    expect 2 "convert without arguments" -- "$GWR" convert
    lines err 1 "convert without arguments: one line"
    expect 2 "convert without OUT" -- "$GWR" convert "$ADD"
    hasf err "OUT" "convert without OUT: says so"
    expect 2 "convert unknown flag" -- "$GWR" convert "$ADD" "$tmp/u.onnx" --frob
    absent "$tmp/u.onnx" "convert unknown flag"
    expect 2 "convert bad threshold" -- "$GWR" convert "$ADD" "$tmp/u.onnx" --external-threshold lots
    hasf err "lots" "convert bad threshold named"
    expect 2 "convert threshold without value" -- "$GWR" convert "$ADD" "$tmp/u.onnx" --external-threshold
    expect 2 "convert three paths" -- "$GWR" convert "$ADD" "$tmp/u.onnx" "$tmp/v.onnx"
    absent "$tmp/u.onnx" "convert usage errors"

    # ---- dot ----
    expect 0 "dot --help" -- "$GWR" dot --help
    has out "usage: gwr dot" "dot help"
    for m in "$ADD" "$LOOP" "$GEN"; do
        name=$(basename "$(dirname "$m")")
        [ "$m" = "$GEN" ] && name=generated
        expect 0 "dot $name .dot" -- "$GWR" dot "$m" -o "$tmp/g.dot"
        ok "dot $name .dot: starts with digraph" -- grep -q "^digraph" "$tmp/g.dot"
        ok "dot $name .dot: Graphviz accepts it" -- dot -Tsvg "$tmp/g.dot" -o "$tmp/check.svg"
        expect 0 "dot $name .svg" -- "$GWR" dot "$m" -o "$tmp/g.svg"
        ok "dot $name .svg: is SVG" -- grep -q "<svg" "$tmp/g.svg"
        expect 0 "dot $name .png" -- "$GWR" dot -o "$tmp/g.png" "$m"
        ok "dot $name .png: PNG magic" -- sh -c '[ "$(od -An -tx1 -N8 "$0" | tr -d " ")" = 89504e470d0a1a0a ]' "$tmp/g.png"
    done
    # A file that leaves its intermediate tensors untyped: dot infers their
    # types, so every edge carries one (Relu then Neg keep x's [2, 3]).
    "$PY" -c 'import sys; from onnx import TensorProto as T, helper as h, save
v = lambda n: h.make_tensor_value_info(n, T.FLOAT, [2, 3])
save(h.make_model(h.make_graph([h.make_node("Relu", ["x"], ["r"]), h.make_node("Neg", ["r"], ["y"])], "g", [v("x")], [v("y")]),
     opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])' "$tmp/untyped.onnx"
    expect 0 "dot of a model without value_info" -- "$GWR" dot "$tmp/untyped.onnx" -o "$tmp/u.dot"
    ok "dot: the intermediate edge is typed too" -- sh -c '[ "$(grep -c "float32\[2,3\]" "$0")" = 3 ] && ! grep -q undefined "$0"' "$tmp/u.dot"
    if command -v file >/dev/null 2>&1; then
        ok "file(1) sees SVG" -- sh -c 'file "$0" | grep -q SVG' "$tmp/g.svg"
        ok "file(1) sees PNG" -- sh -c 'file "$0" | grep -q PNG' "$tmp/g.png"
    fi
    mkdir "$tmp/nodot"
    expect 1 "dot .svg without Graphviz" -- env PATH="$tmp/nodot" "$GWR" dot "$ADD" -o "$tmp/n.svg"
    hasf err "gwr: $tmp/n.svg: Graphviz 'dot' not found (apt-get install graphviz)" "no Graphviz message"
    lines err 1 "no Graphviz: one line"
    absent "$tmp/n.svg" "dot .svg without Graphviz"
    expect 0 "dot .dot needs no Graphviz" -- env PATH="$tmp/nodot" "$GWR" dot "$ADD" -o "$tmp/n.dot"
    mkdir "$tmp/fakebin"
    printf '#!/bin/sh\necho "Error: something broke" >&2\necho "second line" >&2\nexit 3\n' > "$tmp/fakebin/dot"
    chmod +x "$tmp/fakebin/dot"
    expect 1 "dot with a failing Graphviz" -- env PATH="$tmp/fakebin" "$GWR" dot "$ADD" -o "$tmp/f.png"
    errline "$tmp/f.png" "dot with a failing Graphviz"
    hasf err "something broke" "Graphviz's own message passed on"
    absent "$tmp/f.png" "dot with a failing Graphviz"
    bad_inputs "dot" "$tmp/bad.svg" sh -c '"$0" dot -o "$1" "$2"' "$GWR" "$tmp/bad.svg"
    bad_inputs "dot .dot" "$tmp/bad.dot" sh -c '"$0" dot -o "$1" "$2"' "$GWR" "$tmp/bad.dot"
    expect 1 "dot into a missing folder" -- "$GWR" dot "$ADD" -o "$tmp/no/such/dir/g.svg"
    errline "$tmp/no/such/dir/g.svg" "dot into a missing folder"
    expect 1 "dot .dot under a regular file" -- "$GWR" dot "$ADD" -o "$tmp/afile/g.dot"
    errline "$tmp/afile/g.dot" "dot .dot under a regular file"
    expect 2 "dot bad extension" -- "$GWR" dot "$ADD" -o "$tmp/g.jpg"
    hasf err "g.jpg" "bad extension named"
    lines err 1 "bad extension: one line"
    absent "$tmp/g.jpg" "dot bad extension"
    expect 2 "dot without -o" -- "$GWR" dot "$ADD"
    expect 2 "dot -o without FILE" -- "$GWR" dot "$ADD" -o
    expect 2 "dot without MODEL" -- "$GWR" dot -o "$tmp/m.svg"
    absent "$tmp/m.svg" "dot without MODEL"
    expect 2 "dot unknown flag" -- "$GWR" dot "$ADD" -o "$tmp/u.svg" --frob
    hasf err "--frob" "dot unknown flag named"
    absent "$tmp/u.svg" "dot unknown flag"
    ok "no temporaries left in the test folder" -- sh -c '! ls "$0"/*.tmp.* "$0"/*/*.tmp.* 2>/dev/null | grep -q .' "$tmp"
}

if [ -d "$DATA" ] && $PY -c 'import onnx' 2>/dev/null && command -v dot >/dev/null 2>&1; then
    model_tests
else
    fail=$((fail + 1)); echo "FAIL: need $DATA, python3-onnx and Graphviz (scripts/setup.sh installs them)"
fi

# ---- gwr rewrite ----
expect 0 "rewrite --help" -- "$GWR" rewrite --help
has out "usage: gwr rewrite" "rewrite help"
expect 0 "rewrite --list" -- "$GWR" rewrite --list
for p in replace_add_with_sub fuse_attention_with_bias gpt_attention_remove_padding; do has out "^$p " "--list names $p"; done
has out "^fold_constants  *fold  *basic  *onnx,ort,gwr  *exact " "--list gives phase, level, targets and numerics"
has out "^fuse_skip_layer_norm  *lower  *all/gwr:extended  *ort,gwr " "--list gives target gwr's level"
# the rows in phase order: the first a cleanup pass, the last the kernel phase's
ok "--list starts with cleanup" -- sh -c "sed -n 2p '$tmp/out' | grep -q ' cleanup '"
ok "--list ends with kernel" -- sh -c "tail -n 1 '$tmp/out' | grep -q ' kernel '"
expect 0 "rewrite --list --markdown" -- "$GWR" rewrite --list --markdown
# docs/api.md's passes table is the one the pass table prints
sed -n '/^<!-- passes table/,/^<!-- end of passes table/p' "$HERE/../../docs/api.md" | sed '1d;$d' >"$tmp/doc_table"
ok "docs/api.md's passes table is --list --markdown" -- cmp -s "$tmp/out" "$tmp/doc_table"
expect 2 "rewrite --list --bogus" -- "$GWR" rewrite --list --bogus
errline "--list takes only --markdown" "--list with a bad flag"
D="$tmp/demo/demo.onnx"
"$GWR" demo --dir "$tmp/demo" >/dev/null 2>&1
expect 2 "rewrite without MODEL" -- "$GWR" rewrite --pattern replace_add_with_sub -o "$tmp/r.onnx"
errline "missing MODEL" "rewrite without MODEL"
expect 2 "rewrite without -o" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub
errline "missing -o OUT" "rewrite without -o"
expect 2 "rewrite without --pattern" -- "$GWR" rewrite "$D" -o "$tmp/r.onnx"
errline "no --pattern" "rewrite without --pattern"
expect 2 "rewrite unknown pattern" -- "$GWR" rewrite "$D" --pattern nope -o "$tmp/r.onnx"
errline "no built-in pattern 'nope'" "rewrite unknown pattern"
expect 2 "rewrite pattern twice" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub --pattern replace_add_with_sub -o "$tmp/r.onnx"
expect 2 "rewrite bad --arg" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub --arg batch -o "$tmp/r.onnx"
errline "NAME=INTEGER" "rewrite bad --arg"
expect 2 "rewrite bad --max-rewrites" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub --max-rewrites 0 -o "$tmp/r.onnx"
expect 1 "rewrite missing model" -- "$GWR" rewrite "$tmp/none.onnx" --pattern replace_add_with_sub -o "$tmp/r.onnx"
errline "$tmp/none.onnx" "rewrite missing model"
absent "$tmp/r.onnx" "rewrite missing model"
printf 'not a model' > "$tmp/junk.onnx"
expect 1 "rewrite junk model" -- "$GWR" rewrite "$tmp/junk.onnx" --pattern replace_add_with_sub -o "$tmp/r.onnx"
errline "$tmp/junk.onnx" "rewrite junk model"
absent "$tmp/r.onnx" "rewrite junk model"
expect 0 "rewrite add->sub" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub -o "$tmp/r.onnx" --trace --stats
has out "^#1 replace_add_with_sub at '" "rewrite --trace"
has out "^#12 replace_add_with_sub" "rewrite traces 12 rewrites"
has out "^replace_add_with_sub  *[0-9][0-9]* " "rewrite --stats"
has out "^wrote $tmp/r.onnx: 12 rewrites, 55 -> 55 layers" "rewrite summary line"
ok "rewrite add->sub: onnx sees every Add turned into a Sub, same dataflow" -- $PY "$HERE/onnx_check.py" add-to-sub "$D" "$tmp/r.onnx"
expect 0 "rewrite --trace-json" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub -o "$tmp/r2.onnx" --trace-json
ok "trace-json lines are JSON" -- $PY -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]; n=sum(1 for l in open(sys.argv[1]) if l.startswith("{\"event\":\"rewrite\"")); sys.exit(n != 12)' "$tmp/out"
expect 0 "rewrite --explain" -- "$GWR" rewrite "$D" --pattern fuse_attention_with_bias -o "$tmp/r2.onnx" --explain
has out "does not match 'Add_11': read by 'Add_12', not a GPTAttention" "explain gives reasons"
expect 1 "rewrite remove padding without args" -- "$GWR" rewrite "$D" --pattern gpt_attention_remove_padding -o "$tmp/r3.onnx"
errline "batch_size, in_len and hidden_size" "remove padding without args"
absent "$tmp/r3.onnx" "remove padding without args"
expect 0 "rewrite fuse + remove padding on the ONNX file" -- "$GWR" rewrite "$D" --pattern fuse_attention_with_bias --pattern gpt_attention_remove_padding --arg batch_size=2 --arg in_len=16 --arg hidden_size=192 -o "$tmp/r3.onnx"
has out "4 rewrites" "fuse + remove padding: 4 rewrites"
ok "fuse + remove padding: onnx sees fused plugins" -- $PY "$HERE/onnx_check.py" fused-attention "$D" "$tmp/r3.onnx" 2
expect 1 "rewrite that does not converge" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub --max-rewrites 3 -o "$tmp/r4.onnx"
errline "no fixpoint after 4 rewrites (limit 3)" "rewrite limit"
absent "$tmp/r4.onnx" "rewrite limit"
expect 1 "rewrite to a missing directory" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub -o "$tmp/no/dir/r.onnx"
errline "$tmp/no/dir/r.onnx" "rewrite to a missing directory"
expect 0 "rewrite --single-pass --debug --seed" -- "$GWR" rewrite "$D" --pattern replace_add_with_sub --single-pass --debug --seed 3 -o "$tmp/r5.onnx"
ok "seeded single pass: same result" -- $PY "$HERE/onnx_check.py" add-to-sub "$D" "$tmp/r5.onnx"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
