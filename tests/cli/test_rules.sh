#!/bin/sh
# test_rules.sh GWR - `gwr rules check|lint|print` (tools/gwr/cmd_rules.c):
# a right rule passes check and a wrong one fails with its instance and
# seed; lint finds a self-loop, a pair that undoes itself and a shadowed
# rule, and nothing in a clean file; a file error is one line,
# file:line:col; bad usage exits 2 in one line.
GWR=$1
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

cat > "$tmp/good.rules" <<'R'
# x * 2 is x + x exactly
rule mul2_to_add:
  Mul(x, 2.0) => Add(x, x)
rule neg_neg benefit 20:
  Neg(Neg(x)) => x
R
cat > "$tmp/wrong.rules" <<'R'
rule mul2_to_add:
  Mul(x, 2.0) => Add(x, x)
# wrong: x * 3 is not x + x
rule mul3_to_add:
  Mul(x, 3.0) => Add(x, x)
R
cat > "$tmp/loop.rules" <<'R'
rule swap_add:
  Add(a, b) => Add(b, a)
R
cat > "$tmp/undo.rules" <<'R'
rule double_to_add:
  Mul(x, 2.0) => Add(x, x)
rule add_to_double:
  Add(x, x) => Mul(x, 2.0)
R
cat > "$tmp/shadow.rules" <<'R'
rule neg_neg benefit 20:
  Neg(Neg(x)) => x
rule neg_neg_identity:
  Neg(Neg(x)) => Identity(x)
R
printf 'rule broken:\n  Mul(x, 2.0) => Nope(x)\n' > "$tmp/bad.rules"

# check: the right rules pass, one line each
expect 0 "check good.rules" -- "$GWR" rules check "$tmp/good.rules"
hasf out "good.rules:2: rule mul2_to_add: ok: 5 instances" "check: a line per rule"
hasf out "good.rules:4: rule neg_neg: ok: 5 instances" "check: a line per rule"
hasf out "2 rules, 2 passed, 0 failed" "check: the summary"
expect 0 "check --instances 2 --seed 9" -- "$GWR" rules check "$tmp/good.rules" --instances 2 --seed 9
hasf out "ok: 2 instances" "--instances"

# the wrong rule fails with its instance and the inputs' seed
expect 1 "check wrong.rules" -- "$GWR" rules check "$tmp/wrong.rules"
hasf out "wrong.rules:1: rule mul2_to_add: ok" "check: the right rule of the file passes"
hasf out "wrong.rules:4: rule mul3_to_add: FAIL: instance 0: output" "check: the wrong rule fails"
hasf out "beyond tol" "check: the tolerance"
hasf out "  instance (seed " "check: the instance"
hasf out " = Mul(x: float32[" "check: the instance's layers and shapes"
hasf out "  inputs: seeded random, seed " "check: the inputs' seed"
hasf out "2 rules, 1 passed, 1 failed" "check: the summary"
"$GWR" rules check "$tmp/wrong.rules" --seed 5 > "$tmp/a" 2>&1
"$GWR" rules check "$tmp/wrong.rules" --seed 5 > "$tmp/b" 2>&1
ok "the same seed, the same report" -- cmp "$tmp/a" "$tmp/b"

# a rule wrong only where its input is not positive: the NaN of Log(x < 0) against x
printf 'rule exp_log:\n  Exp(Log(x)) => x\n' > "$tmp/nan.rules"
expect 1 "check nan.rules" -- "$GWR" rules check "$tmp/nan.rules"
hasf out "rule exp_log: FAIL: instance 0: output" "check: exp_log fails"
hasf out "(a NaN or an infinity against a number)" "check: the NaN named"

# lint
expect 0 "lint good.rules" -- "$GWR" rules lint "$tmp/good.rules"
hasf out "2 rules, 0 findings" "lint: clean"
expect 1 "lint loop.rules" -- "$GWR" rules lint "$tmp/loop.rules"
hasf out "loop.rules:1: rule swap_add loops" "lint: a self-loop"
hasf out "loop.rules: 1 rule, 1 finding" "lint: one rule, one finding"
expect 1 "lint undo.rules" -- "$GWR" rules lint "$tmp/undo.rules"
hasf out "undo.rules:1: rules double_to_add and add_to_double (" "lint: an undo pair"
hasf out "undo.rules:3) undo each other" "lint: the pair's second rule's line"
expect 1 "lint shadow.rules" -- "$GWR" rules lint "$tmp/shadow.rules"
hasf out "shadow.rules:3: rule neg_neg_identity is shadowed by rule neg_neg (" "lint: a shadowed rule"
hasf out "2 rules, 1 finding" "lint: one finding"

# print: the parsed rules
expect 0 "print good.rules" -- "$GWR" rules print "$tmp/good.rules"
hasf out "rule mul2_to_add" "print: the rule"
hasf out "Mul(x, 2" "print: the pattern"
hasf out "=>  Add(x, x)" "print: the replacement"

# print parses back to itself (every syntax form the header, pattern and where take)
cat > "$tmp/forms.rules" <<'R'
rule r1 benefit 3 phase fuse target ort,gwr opset 13 tol 1e-3:
  Relu|Sigmoid(Add(x: f32|f16 rank 2..3, b: const shape [N]))  =>  Relu(x)
  where shape(x)[-1] == N and not (rank(x) == 2 or value(b) > 0)
  where 1 - (2 - 3) * 4 / -5 > 0
rule r2:
  n@Transpose<perm=p default [1, 0], foo=!>(Split(x)[1])  =>  Transpose<...n, perm=inverse(p)>(Split(x)[1])
rule gelu_erf benefit 20:
  Mul(Mul(x, 0.5), Add(Erf(Div(x, c ~ 1.4142135 tol 1e-4)), 1.0))  =>  Gelu(x)
R
expect 0 "print forms.rules" -- "$GWR" rules print "$tmp/forms.rules"
grep -v '^#' "$tmp/out" > "$tmp/p1"
hasf out "rule r1 benefit 3 phase fuse target ort,gwr opset 13 tol 0.001:" "print: the whole header"
hasf out "  where shape(x)[-1] == N and not (rank(x) == 2 or value(b) > 0)" "print: a where clause"
cp "$tmp/out" "$tmp/printed.rules"
expect 0 "print the printed rules" -- "$GWR" rules print "$tmp/printed.rules"
grep -v '^#' "$tmp/out" > "$tmp/p2"
ok "print parses back to the same rules" -- cmp "$tmp/p1" "$tmp/p2"

# file errors: exit 1, one line, file:line:col
for sub in check lint print; do
  expect 1 "$sub of a bad file" -- "$GWR" rules $sub "$tmp/bad.rules"
  errline "bad.rules:2:18: unknown op 'Nope'" "$sub: file:line:col naming the op"
  expect 1 "$sub of a missing file" -- "$GWR" rules $sub "$tmp/missing.rules"
  errline "missing.rules" "$sub: a missing file"
done

# bad usage: exit 2, one line
expect 2 "no subcommand" -- "$GWR" rules
errline "check, lint or print" "no subcommand"
expect 2 "unknown subcommand" -- "$GWR" rules prove "$tmp/good.rules"
errline "prove" "unknown subcommand"
expect 2 "no file" -- "$GWR" rules check
errline "FILE" "no file"
expect 2 "two files" -- "$GWR" rules lint "$tmp/good.rules" "$tmp/loop.rules"
errline "one FILE" "two files"
expect 2 "bad --instances" -- "$GWR" rules check "$tmp/good.rules" --instances 0
errline "--instances" "bad --instances"
expect 2 "bad --seed" -- "$GWR" rules check "$tmp/good.rules" --seed x
errline "--seed" "bad --seed"
expect 2 "--seed without a value" -- "$GWR" rules check "$tmp/good.rules" --seed
errline "--seed" "--seed without a value"
expect 2 "unknown option" -- "$GWR" rules check "$tmp/good.rules" --fast
errline "--fast" "unknown option"
expect 2 "print takes no --seed" -- "$GWR" rules print "$tmp/good.rules" --seed 1
errline "--seed" "print takes no --seed"
expect 0 "help" -- "$GWR" rules --help
hasf out "gwr rules check FILE" "help"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
