#!/usr/bin/env python
"""`gwr bisect` and `gwr optimize --profile` (issue 26). Run by the project's
venv python (PyPI onnx and onnxruntime, the independent references).

  bisect_profile.py GWR

Models are built here with onnx.helper, so the culprit is known by
construction: the one layer a deliberately wrong rewrite can touch.
- --pattern mode: the tutorial pattern replace_add_with_sub mixed with exact
  patterns; the culprit must be it, at the model's only Add; before.onnx
  must compute what the model does and after.onnx must not (onnxruntime
  against numpy), after.onnx holds a Sub where before.onnx holds the Add.
- rules mode: a plausible but wrong rule (Relu(a + b) => Relu(a) + Relu(b))
  in a normal optimize; the culprit must be it at the model's Relu.
- a wrong rule that makes the result fail to run: that rewrite is named.
- nothing differs: exit 0, nothing written.
- bad input: exit 2, one line naming the file, nothing written.
- the replays stay within ceil(log2 N) + 2.
- gwr optimize --profile: valid JSON (python json), one "X" event per round
  and one per pass that ran per round, whose rewrites add up to --report's,
  and a "layers" counter ending at the written model's layer count.
Exit 0 when every check holds; 1 with one line per failure.
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def check(cond, msg):
    if not cond:
        fail(msg)


def gwr(*args):
    p = subprocess.run([GWR] + [str(a) for a in args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def save(model, path):
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def vin(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def pattern_model(path):
    """y = Relu(Neg(Neg(Identity(x))) + b) * 1: exact rewrites around the one Add."""
    nodes = [
        helper.make_node("Identity", ["x"], ["i"], name="the_identity"),
        helper.make_node("Neg", ["i"], ["n1"], name="neg1"),
        helper.make_node("Neg", ["n1"], ["n2"], name="neg2"),
        helper.make_node("Add", ["n2", "b"], ["s"], name="the_add"),
        helper.make_node("Relu", ["s"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "one"], ["y"], name="times_one"),
    ]
    g = helper.make_graph(nodes, "g", [vin("x", [2, 3]), vin("b", [2, 3])], [vin("y", [2, 3])],
                          [numpy_helper.from_array(np.ones((1,), np.float32), "one")])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def rules_model(path):
    """y = Transpose(Transpose(Relu(x + b))) + Identity: optimize has work, the wrong rule one match."""
    nodes = [
        helper.make_node("Identity", ["x"], ["xi"], name="id0"),
        helper.make_node("Add", ["xi", "b"], ["s"], name="sum"),
        helper.make_node("Relu", ["s"], ["r"], name="the_relu"),
        helper.make_node("Transpose", ["r"], ["t1"], name="t1", perm=[1, 0]),
        helper.make_node("Transpose", ["t1"], ["t2"], name="t2", perm=[1, 0]),
        helper.make_node("Identity", ["t2"], ["y"], name="id1"),
    ]
    g = helper.make_graph(nodes, "g", [vin("x", [2, 3]), vin("b", [2, 3])], [vin("y", [2, 3])])
    return save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


WRONG_RULE = """# plausible but wrong: Relu does not distribute over a sum
rule relu_of_sum phase fuse:
  Relu(Add(x, y)) => Add(Relu(x), Relu(y))
"""


def ort_run(path, feeds):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def parse_bisect(out):
    n = re.search(r"the run makes (\d+) rewrite", out)
    r = re.search(r"replays: (\d+) \(at most ceil\(log2 (\d+)\) \+ 2 = (\d+)\)", out)
    c = re.search(r"first rewrite after which the outputs differ: #(\d+) of (\d+), (\S+) at '([^']*)' \((\w+)\)", out)
    return (int(n.group(1)) if n else None, r, c)


def bound(n):
    return math.ceil(math.log2(n)) + 2 if n > 1 else 2


def test_pattern_mode(tmp):
    model = pattern_model(os.path.join(tmp, "p.onnx"))
    out_dir = os.path.join(tmp, "pout")
    rc, out, err = gwr("bisect", model, "--pattern", "eliminate_identity", "--pattern", "rules_cleanup",
                       "--pattern", "replace_add_with_sub", "--pattern", "eliminate_noop_arith", "-o", out_dir)
    check(rc == 1, "pattern mode: exit %d, expected 1 (a culprit): %s %s" % (rc, out, err))
    n, r, c = parse_bisect(out)
    # identity, the Neg pair, Add -> Sub, x * 1: four rewrites by construction
    check(n == 4, "pattern mode: %s rewrites, expected 4: %s" % (n, out))
    check(c is not None and c.group(3) == "replace_add_with_sub" and c.group(4) == "the_add" and c.group(5) == "Add",
          "pattern mode: the culprit is not replace_add_with_sub at 'the_add': %s" % out)
    check(r is not None and int(r.group(1)) <= bound(n or 1), "pattern mode: too many replays: %s" % out)
    before, after = os.path.join(out_dir, "before.onnx"), os.path.join(out_dir, "after.onnx")
    check(os.path.exists(before) and os.path.exists(after), "pattern mode: before/after not written")
    if failures:
        return
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal((2, 3)).astype(np.float32)
    want = np.maximum(x + b, 0)
    feeds = {"x": x, "b": b}
    check(np.allclose(ort_run(model, feeds), want, atol=1e-6), "onnxruntime on the model disagrees with numpy")
    check(np.allclose(ort_run(before, feeds), want, atol=1e-6), "before.onnx does not compute the model's outputs")
    check(not np.allclose(ort_run(after, feeds), want, atol=1e-3), "after.onnx computes the model's outputs")
    ops_b = [nd.op_type for nd in onnx.load(before).graph.node]
    ops_a = [nd.op_type for nd in onnx.load(after).graph.node]
    check("Add" in ops_b and "Sub" not in ops_b, "before.onnx ops %s: expected the Add" % ops_b)
    check("Sub" in ops_a and "Add" not in ops_a, "after.onnx ops %s: expected the Sub" % ops_a)
    onnx.checker.check_model(onnx.load(after), full_check=True)


def test_rules_mode(tmp):
    model = rules_model(os.path.join(tmp, "r.onnx"))
    rules = os.path.join(tmp, "wrong.rules")
    with open(rules, "w") as f:
        f.write(WRONG_RULE)
    out_dir = os.path.join(tmp, "rout")
    rc, out, err = gwr("bisect", model, "--rules", rules, "--random", "3", "-o", out_dir)
    check(rc == 1, "rules mode: exit %d, expected 1: %s %s" % (rc, out, err))
    n, r, c = parse_bisect(out)
    check(n is not None and n >= 3, "rules mode: %s rewrites, expected the optimizer's and the rule's" % n)
    check(c is not None and c.group(3) == "relu_of_sum" and c.group(4) == "the_relu",
          "rules mode: the culprit is not relu_of_sum at 'the_relu': %s" % out)
    check(r is not None and int(r.group(1)) <= bound(n or 1), "rules mode: too many replays: %s" % out)
    # the same model without the wrong rule: nothing differs, exit 0, nothing written
    clean_dir = os.path.join(tmp, "clean")
    rc, out, err = gwr("bisect", model, "-o", clean_dir)
    check(rc == 0 and "nothing to bisect" in out, "clean optimize: exit %d: %s %s" % (rc, out, err))
    check(not os.path.exists(clean_dir), "clean optimize: %s was written" % clean_dir)


def test_run_fails(tmp):
    """A wrong rule that leaves the types alone and breaks the run: Gather's
    index + 1 goes out of range. The culprit is where the rewritten model
    stops running; the exact Neg pair before it changes nothing."""
    nodes = [
        helper.make_node("Neg", ["x"], ["n1"], name="neg1"),
        helper.make_node("Neg", ["n1"], ["n2"], name="neg2"),
        helper.make_node("Identity", ["i"], ["ii"], name="id"),
        helper.make_node("Gather", ["n2", "ii"], ["y"], name="the_gather", axis=0),
    ]
    g = helper.make_graph(nodes, "g", [vin("x", [3, 4]), helper.make_tensor_value_info("i", TensorProto.INT64, [1])],
                          [vin("y", [1, 4])])
    model = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                 os.path.join(tmp, "g.onnx"))
    idx = os.path.join(tmp, "i.pb")
    with open(idx, "wb") as f:
        f.write(numpy_helper.from_array(np.array([2], np.int64), "i").SerializeToString())
    rules = os.path.join(tmp, "g.rules")
    with open(rules, "w") as f:
        f.write("rule next_row phase cleanup benefit 100:\n  Gather(x, Identity(i)) => Gather(x, Add(i, 1))\n")
    rc, out, err = gwr("bisect", model, "--pattern", "rules_cleanup", "--rules", rules, "--input", "i=" + idx,
                       "-o", os.path.join(tmp, "gout"))
    n, r, c = parse_bisect(out)
    check(rc == 1 and n == 2 and c is not None and c.group(3) == "next_row" and c.group(4) == "the_gather",
          "run fails: exit %d, expected the culprit next_row at 'the_gather': %s %s" % (rc, out, err))
    check("after it: it fails to run" in out and "out of range" in out, "run fails: the failure is not named: %s" % out)


def test_bad_input(tmp):
    out_dir = os.path.join(tmp, "bad")
    good = pattern_model(os.path.join(tmp, "good.onnx"))
    garbage = os.path.join(tmp, "garbage.onnx")
    with open(garbage, "wb") as f:
        f.write(b"\x0a\xff\xff\xff not a model")
    bad_rules = os.path.join(tmp, "bad.rules")
    with open(bad_rules, "w") as f:
        f.write("rule broken:\n  Relu(x => x\n")
    cases = [
        ([os.path.join(tmp, "missing.onnx"), "-o", out_dir], "missing.onnx"),
        ([garbage, "-o", out_dir], "garbage.onnx"),
        ([good, "--rules", bad_rules, "-o", out_dir], "bad.rules"),
        ([good, "--pattern", "no_such_pattern", "-o", out_dir], "no_such_pattern"),
        ([good, "--input", "x=" + os.path.join(tmp, "nope.pb"), "-o", out_dir], "nope.pb"),
        ([good, "--pattern", "replace_add_with_sub", "--only", "eliminate_identity"], "--pattern"),
        ([good, "--opset", "0", "-o", out_dir], "--opset"),
        ([good, "--input-defaults", "sometimes", "-o", out_dir], "--input-defaults"),
    ]
    # The optimizer's --opset and --input-defaults are taken (nothing differs here).
    rc, out, err = gwr("bisect", good, "--opset", "21", "--input-defaults", "keep", "-o", out_dir)
    check(rc == 0 and "nothing to bisect" in out, "bisect --opset 21 --input-defaults keep: exit %d %r" % (rc, err))
    check(not os.path.exists(out_dir), "nothing to bisect: %s was written" % out_dir)
    for args, name in cases:
        rc, out, err = gwr("bisect", *args)
        lines = [l for l in err.splitlines() if l.strip()]
        check(rc == 2, "bad input %s: exit %d, expected 2 (%s)" % (name, rc, err.strip()))
        check(len(lines) == 1 and name in lines[0], "bad input %s: stderr is not one line naming it: %r" % (name, err))
        check(not os.path.exists(out_dir), "bad input %s: %s was written" % (name, out_dir))


def test_profile(tmp):
    model = rules_model(os.path.join(tmp, "prof.onnx"))
    prof = os.path.join(tmp, "prof.json")
    rc, out, err = gwr("optimize", model, "-o", os.path.join(tmp, "prof.opt.onnx"), "--report", "--profile", prof)
    check(rc == 0, "optimize --profile: exit %d: %s" % (rc, err))
    if rc:
        return
    with open(prof) as f:
        trace = json.load(f)
    ev = trace["traceEvents"]
    rounds = [e for e in ev if e.get("cat") == "round" and e["ph"] == "X"]
    passes = [e for e in ev if e.get("cat") == "pass" and e["ph"] == "X"]
    counters = [e for e in ev if e["ph"] == "C" and e["name"] == "layers"]
    # --report: "label attempts matches rewrites" for the passes that ran
    ran = {}
    for line in out.splitlines():
        m = re.match(r"(\S+)\s+(\d+)\s+(\d+)\s+(\d+)", line)
        if m:
            ran[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    check(len(rounds) >= 1, "profile: no round event")
    check(len(passes) == len(rounds) * len(ran),
          "profile: %d pass events, expected %d rounds x %d passes" % (len(passes), len(rounds), len(ran)))
    for label, (att, mat, rew) in ran.items():
        evs = [e for e in passes if e["name"] == label]
        for key, want in (("attempts", att), ("matches", mat), ("rewrites", rew)):
            got = sum(e["args"][key] for e in evs)
            check(got == want, "profile: %s %s %d, --report says %d" % (label, key, got, want))
        for e in evs:
            check(all(k in e["args"] for k in ("layers_removed", "layers_added")) and e["dur"] >= 0 and e["tid"] == 1,
                  "profile: pass event %s lacks its args" % e)
    check(sum(e["args"]["rewrites"] for e in rounds) == sum(v[2] for v in ran.values()),
          "profile: the rounds' rewrites do not add up to the passes'")
    m = re.search(r"wrote \S+: (\d+) -> (\d+) layers", out)
    check(m is not None and counters and counters[0]["args"]["layers"] == int(m.group(1))
          and counters[-1]["args"]["layers"] == int(m.group(2)),
          "profile: the layers counter %s does not go from the model's to the result's count (%s)"
          % ([c["args"]["layers"] for c in counters], m.group(0) if m else out))
    # 6 layers; the Identities and the Transpose pair removed: the removals add up
    removed = sum(e["args"]["layers_removed"] - e["args"]["layers_added"] for e in passes)
    check(removed == 6 - int(m.group(2)) if m else False,
          "profile: removed - added over the passes is %d, the model lost %s layers" % (removed, m and 6 - int(m.group(2))))
    check(not [f for f in os.listdir(tmp) if ".tmp." in f], "profile: a temporary file was left")
    # a profile that cannot be written: one line naming it, exit 1
    bad = os.path.join(tmp, "no", "such", "dir", "p.json")
    rc, out, err = gwr("optimize", model, "-o", os.path.join(tmp, "p2.onnx"), "--profile", bad)
    check(rc == 1 and len(err.strip().splitlines()) == 1 and bad in err, "unwritable profile: exit %d %r" % (rc, err))


def main():
    global GWR
    GWR = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        for t in (test_pattern_mode, test_rules_mode, test_run_fails, test_bad_input, test_profile):
            sub = os.path.join(tmp, t.__name__)
            os.mkdir(sub)
            t(sub)
    print("%d failure(s)" % len(failures) if failures else "all bisect/profile checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
