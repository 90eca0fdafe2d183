"""diff_cli.py GWR - `gwr diff A B` on real rewrite runs, judged by onnx:

  - a model with MatMul + Add (fuse_matmul_add) and the erf form of GELU
    (fuse_gelu), rewritten by `gwr rewrite --trace-json` and by
    `gwr optimize --report`: the layers diff calls removed (added) are
    exactly the node names of A not in B (of B not in A), read with onnx,
    Constant nodes aside (they are weights); their counts are the trace's
    net removals and additions and the report's rewrites account for them;
    exit 1;
  - a model against itself: "identical", exit 0;
  - a weight changed by 1e-4: within --atol 1e-3 identical, beyond it a
    "values" change; a retyped input and a removed output are named;
  - --json is one JSON object with those fields;
  - bad input: a missing file, a file that is not a model, bad usage:
    exit 2 and one line on stderr naming the file or the problem.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

GWR = sys.argv[1]
FAILED = []


def check(ok, what):
    if not ok:
        FAILED.append(what)
        print("FAIL:", what)


def gwr(*args):
    p = subprocess.run([GWR, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def model(path, w_delta=0.0, x_cols=8, extra_output=False):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((x_cols, 16)).astype(np.float32)
    w[0, 0] += np.float32(w_delta)
    inits = [nh.from_array(w, "W"), nh.from_array(rng.standard_normal(16).astype(np.float32), "B"),
             nh.from_array(rng.standard_normal((16, 4)).astype(np.float32), "W2"),
             nh.from_array(np.array(1.4142135, np.float32), "sqrt2"), nh.from_array(np.array(1.0, np.float32), "one"),
             nh.from_array(np.array(0.5, np.float32), "half")]
    nodes = [
        h.make_node("MatMul", ["x", "W"], ["mm"], name="mm"),
        h.make_node("Add", ["mm", "B"], ["hb"], name="bias"),
        h.make_node("Div", ["hb", "sqrt2"], ["d"], name="div"),
        h.make_node("Erf", ["d"], ["e"], name="erf"),
        h.make_node("Add", ["e", "one"], ["a"], name="add1"),
        h.make_node("Mul", ["hb", "a"], ["m1"], name="mul1"),
        h.make_node("Mul", ["m1", "half"], ["g"], name="mul2"),
        h.make_node("MatMul", ["g", "W2"], ["y0"], name="mm2"),
        h.make_node("Relu", ["y0"], ["y"], name="relu"),
        h.make_node("Constant", [], ["c3"], name="c3", value=nh.from_array(np.array(3.0, np.float32))),
        h.make_node("Mul", ["y", "c3"], ["z"], name="scale"),
    ]
    outs = [h.make_tensor_value_info("z", T.FLOAT, [2, 4])]
    if extra_output:
        outs.append(h.make_tensor_value_info("y", T.FLOAT, [2, 4]))
    g = h.make_graph(nodes, "m", [h.make_tensor_value_info("x", T.FLOAT, [2, x_cols])], outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 20)])
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def node_names(path):
    """Names of the nodes other than Constant (weights, for gwr diff)."""
    return {n.name for n in onnx.load(path).graph.node if n.op_type != "Constant"}


def diff_sets(a, b, label):
    """gwr diff --json a b: its removed and added names against onnx's."""
    rc, out, err = gwr("diff", a, b, "--json")
    check(rc == 1, f"{label}: exit 1 when the models differ (got {rc}: {err})")
    try:
        d = json.loads(out)
    except ValueError as e:
        check(False, f"{label}: --json is not JSON: {e}")
        return None
    removed = {l["name"] for l in d["layers"] if l["kind"] == "removed"}
    added = {l["name"] for l in d["layers"] if l["kind"] == "added"}
    na, nb = node_names(a), node_names(b)
    check(removed == na - nb, f"{label}: removed {sorted(removed)} vs onnx {sorted(na - nb)}")
    check(added == nb - na, f"{label}: added {sorted(added)} vs onnx {sorted(nb - na)}")
    check(d["counts"]["removed"] == len(removed) and d["counts"]["added"] == len(added), f"{label}: counts")
    same_changed = d["counts"]["same"] + d["counts"]["changed"]
    check(same_changed == len(na & nb), f"{label}: same + changed {same_changed} vs {len(na & nb)} names in both")
    return d


with tempfile.TemporaryDirectory() as tmp:
    A, R, O = (os.path.join(tmp, f) for f in ("a.onnx", "r.onnx", "o.onnx"))
    model(A)

    # gwr rewrite with the trace: the net removals and additions of the run
    rc, out, err = gwr("rewrite", A, "--pattern", "fuse_matmul_add", "--pattern", "fuse_gelu", "-o", R, "--trace-json")
    check(rc == 0, f"gwr rewrite: {err}")
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    rem = set().union(*(e["removed"] for e in events)) if events else set()
    add = set().union(*(e["added"] for e in events)) if events else set()
    check(len(events) == 2, f"two rewrites traced, got {len(events)}")
    d = diff_sets(A, R, "rewrite")
    if d:
        nodes_a, nodes_r = node_names(A), node_names(R)
        check({l["name"] for l in d["layers"] if l["kind"] == "removed"} == (rem - add) & nodes_a,
              "rewrite: removed = the trace's net removals")
        check({l["name"] for l in d["layers"] if l["kind"] == "added"} == (add - rem) & nodes_r,
              "rewrite: added = the trace's net additions")
        changed = {l["name"]: l["why"] for l in d["layers"] if l["kind"] == "changed"}
        check(changed == {"mm2": "inputs"}, f"rewrite: mm2 redirected to the Gelu, got {changed}")
        gone = {w["name"] for w in d["weights"] if w["change"] == "removed"}
        check(gone == {"sqrt2", "one", "half"}, f"rewrite: the Gelu form's constants removed, got {gone}")

    # gwr optimize with the report: each rewrite there is one fusion here
    rc, out, err = gwr("optimize", A, "-o", O, "--report")
    check(rc == 0, f"gwr optimize: {err}")
    rewrites = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+) +\d+ +\d+ +(\d+)", out, re.M)}
    d = diff_sets(A, O, "optimize")
    if d:
        fused = {l["op"] for l in d["layers"] if l["kind"] == "added"}
        # constants_to_initializers turns the Constant node c3 into an
        # initializer: a weight of the same name and value, no layer change
        layer_rewrites = sum(n for p, n in rewrites.items() if p != "constants_to_initializers")
        check(rewrites.get("constants_to_initializers") == 1 and not d["weights"][3:],
              f"optimize: c3 made an initializer, same weight ({d['weights']})")
        check(layer_rewrites == len([l for l in d["layers"] if l["kind"] == "added"]),
              f"optimize: one added layer per fusing rewrite of the report ({rewrites}, added {fused})")
        check(rewrites.get("fuse_gelu") == 1 and "Gelu" in fused, "optimize: fuse_gelu's rewrite is the added Gelu")
        rc, text, _ = gwr("diff", A, O)
        check(re.search(r"^layers: \d+ same, \d+ changed, %d removed, %d added$" % (d["counts"]["removed"], d["counts"]["added"]),
                        text, re.M), "text summary: the counts line")
        check(re.search(r"^  \+ \S+ \(Gelu\) new$", text, re.M), "text summary: the Gelu added")
        check(re.search(r"^  - div \(Div\) gone$", text, re.M), "text summary: div removed")

    # provenance written into the file (gwr optimize --provenance, helper
    # prov's part of issue 26; checked once that flag exists): each fused
    # layer is made by its rule from the layers of A its record names
    if "--provenance" in gwr("optimize", "--help")[1]:
        P = os.path.join(tmp, "p.onnx")
        rc, out, err = gwr("optimize", A, "-o", P, "--provenance")
        check(rc == 0, f"gwr optimize --provenance: {err}")
        d = diff_sets(A, P, "provenance")
        if d:
            records = {n.name: json.loads(e.value) for n in onnx.load(P).graph.node
                       for e in n.metadata_props if e.key == "gwr.provenance"}

            def names(tree):
                for x in tree.get("from", []):
                    if isinstance(x, str):
                        yield x
                    else:
                        yield x["name"]
                        yield from names(x)
            def layers(path):  # nodes and initializers: gwr's layers
                g = onnx.load(path).graph
                return {n.name for n in g.node} | {i.name for i in g.initializer}
            nodes_a = layers(A) - layers(P)  # what the records may name
            added = {l["name"]: l for l in d["layers"] if l["kind"] == "added"}
            check(set(records) == set(added), f"provenance: the added layers are those with a record ({sorted(records)})")
            for name, rec in records.items():
                want = [n for n in dict.fromkeys(names(rec)) if n in nodes_a]
                got = added.get(name, {})
                check(got.get("rule") == rec["rule"] and got.get("from") == want,
                      f"provenance: {name} made by {rec['rule']} from {want}, diff says {got}")
            gelu = [l for l in added.values() if l["op"] == "Gelu"]
            check(gelu and {"div", "erf", "add1", "mul1", "mul2"} <= set(gelu[0].get("from", [])),
                  "provenance: the Gelu comes from the erf form's layers")
            removed = [l for l in d["layers"] if l["kind"] == "removed"]
            check(all(l.get("by") in added for l in removed), "provenance: every removed layer names what replaced it")
            rc, text, _ = gwr("diff", A, P)
            check(re.search(r"^  \+ \S+ \(Gelu\) made by fuse_gelu from ", text, re.M), "provenance: the text line")

    # identical
    rc, out, err = gwr("diff", A, A)
    check(rc == 0 and "identical" in out, f"a model against itself: exit 0, identical ({rc}, {out})")
    rc, out, err = gwr("diff", A, A, "--json")
    check(rc == 0 and json.loads(out)["identical"] is True, "--json identical")

    # a weight within and beyond the tolerance; interface changes
    W = os.path.join(tmp, "w.onnx")
    model(W, w_delta=1e-4)
    rc, out, err = gwr("diff", A, W, "--atol", "1e-3")
    check(rc == 0, f"W within --atol 1e-3: identical ({rc}, {out})")
    rc, out, err = gwr("diff", A, W, "--atol", "1e-6", "--json")
    w = json.loads(out)["weights"] if rc == 1 else []
    check(len(w) == 1 and w[0]["name"] == "W" and w[0]["change"] == "values" and w[0]["beyond"] == 1
          and abs(w[0]["max_abs"] - 1e-4) < 1e-6, f"W beyond --atol 1e-6: one value changed ({rc}, {w})")
    I = os.path.join(tmp, "i.onnx")
    model(I, x_cols=8, extra_output=True)
    rc, out, err = gwr("diff", I, A)
    check(rc == 1 and re.search(r"^  - output y float32\[2,4\]$", out, re.M), f"output y removed ({out})")

    # bad input
    bad = os.path.join(tmp, "bad.onnx")
    with open(bad, "w") as f:
        f.write("not a model\n")
    for args, name in (([os.path.join(tmp, "missing.onnx"), A], "missing.onnx"), ([A, bad], "bad.onnx"),
                       ([A], "missing the second model"), ([A, A, "--rtol", "-1"], "--rtol"),
                       ([A, A, "--frob"], "unknown option")):
        rc, out, err = gwr("diff", *args)
        check(rc == 2 and len(err.strip().splitlines()) == 1 and name in err and not out,
              f"bad input {args}: exit 2, one line naming {name} (got {rc}, {err!r})")

print(f"{len(FAILED)} failed" if FAILED else "ok")
sys.exit(1 if FAILED else 0)
