# lib.sh - the checks the CLI test scripts share; sourced by each. Counts
# checks in $pass and $fail; $tmp is a scratch directory removed at exit.
# The last command's stdout and stderr are $tmp/out and $tmp/err.
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
# hasf FILE STRING DESCRIPTION: the last command's FILE contains STRING (no regex).
hasf() {
    if grep -q -F -- "$2" "$tmp/$1"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $3: '$2' not in $1"; cat "$tmp/$1"; fi
}
# lacks FILE STRING DESCRIPTION: the last command's FILE does not contain STRING.
lacks() {
    if grep -q -F -- "$2" "$tmp/$1"; then
        fail=$((fail + 1)); echo "FAIL: $3: '$2' in $1"; cat "$tmp/$1"; else pass=$((pass + 1)); fi
}
# lines FILE N DESCRIPTION: the last command's FILE has N lines.
lines() {
    n=$(wc -l < "$tmp/$1")
    if [ "$n" -eq "$2" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $3: $n lines in $1, expected $2"; cat "$tmp/$1"; fi
}
# ok DESCRIPTION -- COMMAND...: COMMAND succeeds (its output is shown if not).
ok() {
    desc=$1; shift 2
    if "$@" >"$tmp/chk" 2>&1; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $desc"; cat "$tmp/chk"; fi
}
# absent PATH DESCRIPTION: neither PATH nor a temporary PATH.tmp.* exists.
absent() {
    if [ -e "$1" ] || ls "$1".tmp.* >/dev/null 2>&1; then
        fail=$((fail + 1)); echo "FAIL: $2: $1 (or a temporary of it) was left behind"; else
        pass=$((pass + 1)); fi
}
# errline NAME DESCRIPTION: the last stderr is one line that names NAME.
errline() {
    lines err 1 "$2: one line on stderr"
    hasf err "$1" "$2: the message names $1"
}
