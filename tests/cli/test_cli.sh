#!/bin/sh
# Tests of the gwr command-line tool: exit codes, help, errors.
# usage: test_cli.sh path/to/gwr
GWR=$1
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE DESCRIPTION -- COMMAND...: runs COMMAND, checks its exit code.
expect() {
    code=$1; desc=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    if [ "$got" -eq "$code" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $desc: exit $got, expected $code"; cat "$tmp/err"; fi
}
# has FILE PATTERN DESCRIPTION: the last command's FILE matches PATTERN.
has() {
    if grep -q -- "$2" "$tmp/$1"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $3: '$2' not in $1"; cat "$tmp/$1"; fi
}
lines() {
    n=$(wc -l < "$tmp/$1")
    if [ "$n" -eq "$2" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $3: $n lines in $1, expected $2"; cat "$tmp/$1"; fi
}

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
expect 0 "demo" -- "$GWR" demo
has out "network 'demo'" "demo prints the network"
has out "GPTAttention" "demo has the attention plugin"
has out "FLayerInfo of" "demo shows an FLayerInfo"
expect 0 "demo with ONNX attention" -- "$GWR" demo --onnx-attention --blocks 1
has out "Softmax" "ONNX attention has a Softmax"
expect 2 "demo bad --blocks" -- "$GWR" demo --blocks zero
has err "blocks" "bad --blocks message"
lines err 1 "bad --blocks: one line"
expect 2 "demo unknown flag" -- "$GWR" demo --frob
expect 0 "demo --dot" -- "$GWR" demo --dot "$tmp/d.dot"
if command -v dot >/dev/null 2>&1; then
    expect 0 "Graphviz accepts the demo's DOT" -- dot -Tsvg "$tmp/d.dot" -o "$tmp/d.svg"
else
    fail=$((fail + 1)); echo "FAIL: Graphviz 'dot' is not installed (scripts/setup.sh installs it)"
fi
expect 1 "demo --dot to an unwritable path" -- "$GWR" demo --dot "$tmp/no/such/dir/d.dot"
has err "no/such/dir/d.dot" "unwritable path named"
lines err 1 "unwritable path: one line"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
