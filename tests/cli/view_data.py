"""gwr view's page and data (contract 3 of issue 26, docs/cli.md "gwr view"):
the markers of tools/view/view.html replaced by the style, the data and the
scripts (dagre and view.js), nothing loaded from the network, the JSON valid
(python's json) with the model's layer count (ONNX nodes + initializers,
counted by the onnx package), every group and the top level bounded by 200
direct children, a decoder's blocks grouped with equal signatures, a named
model grouped by its names, a trace and profiles read, the diff of two models
agreeing with the trace, `gwr rewrite --view` / `gwr optimize --view`, and bad
input refused with one line, exit 2 and no file.

usage: view_data.py GWR BENCH_ONNX SOURCE_DIR
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

GWR, BENCH, SRC = sys.argv[1:4]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def gwr(*args):
    return subprocess.run([GWR, *args], capture_output=True, text=True)


def page_data(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="gwr-data" type="application/json">(.*?)</script>', text, re.S)
    check(m is not None, f"{path}: a #gwr-data script")
    return text, json.loads(m.group(1))


def onnx_layers(path):
    m = onnx.load(path)
    return len(m.graph.node) + len(m.graph.initializer)


def children(model):
    """Direct children (layers + groups) of each group and of the top (-1)."""
    c = collections.Counter()
    for l in model["layers"]:
        c[l["group"]] += 1
    for g in model["groups"]:
        c[g["parent"]] += 1
    return c


def check_groups(model, what):
    c = children(model)
    check(max(c.values()) <= 200, f"{what}: at most 200 direct children per group (got {max(c.values())})")
    groups = model["groups"]
    for i, g in enumerate(groups):
        check(-1 <= g["parent"] < len(groups), f"{what}: group {i} parent in range")
    # "layers" counts the layers inside, recursively
    inside = collections.Counter()
    for l in model["layers"]:
        g = l["group"]
        while g >= 0:
            inside[g] += 1
            g = groups[g]["parent"]
    for i, g in enumerate(groups):
        check(g["layers"] == inside[i], f"{what}: group {g['name']} counts {g['layers']} layers, holds {inside[i]}")


tmp_dir = tempfile.TemporaryDirectory(prefix="gwr-view-")
tmp = tmp_dir.name
os.chdir(tmp)

# ---- a decoder without hierarchical names: blocks found by structure ----
for n in (2, 8):
    r = subprocess.run([BENCH, "gen-gpt", str(n), "32", f"gpt{n}.onnx", "--static"], capture_output=True, text=True)
    check(r.returncode == 0, f"gen-gpt {n}: {r.stderr}")
per_block = (onnx_layers("gpt8.onnx") - onnx_layers("gpt2.onnx")) // 6
r = gwr("view", "gpt8.onnx", "-o", "gpt8.html")
check(r.returncode == 0, f"view gpt8: {r.stderr}")
text, data = page_data("gpt8.html")
for marker in ("<!--GWR:STYLE-->", "<!--GWR:DATA-->", "<!--GWR:SCRIPT-->"):
    check(marker not in text, f"marker {marker} replaced")
check("<style>" in text, "the style inlined")
css = open(os.path.join(SRC, "tools/view/view.css"), encoding="utf-8").read()
js = open(os.path.join(SRC, "tools/view/view.js"), encoding="utf-8").read().replace("</script", "<\\/script")
dagre = open(os.path.join(SRC, "node_modules/@dagrejs/dagre/dist/dagre.min.js"), encoding="utf-8").read()
check(css in text, "view.css inlined whole")
check(js in text, "view.js inlined whole")
check(dagre.replace("</script", "<\\/script") in text, "dagre.min.js inlined whole")
# nothing from the network: no src/href/url()/@import naming another place
ext = re.findall(r'''(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import''', text, re.I)
check(not ext, f"no external resource in the page (found {ext[:3]})")
check(text.count("</script>") == 3, "three script elements, none cut short")
check(data["version"] == 1 and data["title"] == "gpt8.onnx", "version and title")
check(data["trace"] is None and data["profile"] is None, "no trace, no profile")
m0 = data["models"][0]
check(len(data["models"]) == 1, "one model")
check(len(m0["layers"]) == onnx_layers("gpt8.onnx"), f"layer count {len(m0['layers'])} = ONNX nodes + initializers")
check(m0["file"] == "gpt8.onnx" and m0["inputs"][0]["shape"] == "1x128x32", "file and input shape text")
check_groups(m0, "gpt8")
blocks = [g for g in m0["groups"] if g["parent"] == -1]
check(len(blocks) == 8, f"8 blocks found by structure (got {len(blocks)})")
check(len({g["sig"] for g in blocks}) == 1, "the 8 blocks have one signature")
check([g["repeat"] for g in blocks] == list(range(1, 9)), "repeat 1..8")
check(all(g["layers"] == per_block for g in blocks), f"each block holds {per_block} layers")
# layers in topological order: every input tensor's producer comes first
for i, l in enumerate(m0["layers"]):
    for t in l["in"]:
        if t >= 0:
            check(m0["tensors"][t]["producer"] < i, f"layer {l['name']} after its producers")
kinds = collections.Counter(t["kind"] for t in m0["tensors"])
check(kinds["input"] == 1 and kinds["weight"] + kinds["const"] == onnx.load("gpt8.onnx").graph.initializer.__len__(),
      f"tensor kinds {dict(kinds)}")
mm = [l for l in m0["layers"] if l["op"] == "MatMul" and l["params"] > 0]
check(mm and all(l["flops"] > 0 for l in mm), "MatMuls with weights have FLOPs and params")

r = gwr("view", "gpt2.onnx", "-o", "gpt2.html")
_, data = page_data("gpt2.html")
blocks = [g for g in data["models"][0]["groups"] if g["parent"] == -1]
check(len(blocks) == 2 and blocks[0]["sig"] == blocks[1]["sig"] and blocks[0]["layers"] == per_block,
      "gpt2: its 2 blocks found, of one signature")

# ---- the 1,000-block decoder: bounded levels, equal signatures ----
subprocess.run([BENCH, "gen-gpt", "1000", "32", "gpt1000.onnx", "--static"], capture_output=True, check=True)
r = gwr("view", "gpt1000.onnx", "-o", "gpt1000.html")
check(r.returncode == 0, f"view gpt1000: {r.stderr}")
_, data = page_data("gpt1000.html")
m = data["models"][0]
check(len(m["layers"]) == onnx_layers("gpt1000.onnx"), "gpt1000 layer count")
check_groups(m, "gpt1000")
blocks = [g for g in m["groups"] if re.fullmatch(r"block\.\d+", g["name"])]
check(len(blocks) == 1000 and len({g["sig"] for g in blocks}) == 1, "1000 blocks of one signature")

# ---- a flat chain of 1,000 layers: range groups keep every level <= 200 ----
nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"Relu_{i}") for i in range(1000)]
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [4])],
                      [helper.make_tensor_value_info("t1000", TensorProto.FLOAT, [4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "chain.onnx")
r = gwr("view", "chain.onnx", "-o", "chain.html")
check(r.returncode == 0, f"view chain: {r.stderr}")
_, data = page_data("chain.html")
m = data["models"][0]
check(len(m["layers"]) == 1000, "chain: 1000 layers")
check_groups(m, "chain")
check(children(m)[-1] <= 200 and len(m["groups"]) >= 5, "chain: range groups")

# ---- names with a hierarchy (torch style): groups from the names ----
nodes, prev = [], "x"
for i in range(4):
    for part, op in (("self_attn/q_proj", "Relu"), ("self_attn/k_proj", "Sigmoid"), ("mlp", "Tanh")):
        out = f"/model/layers.{i}/{part}/{op}_output_0"
        nodes.append(helper.make_node(op, [prev], [out], name=f"/model/layers.{i}/{part}/{op}"))
        prev = out
nodes.append(helper.make_node("Relu", [prev], ["y"], name="/model/norm/Relu"))
g = helper.make_graph(nodes, "named", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "named.onnx")
r = gwr("view", "named.onnx", "-o", "named.html")
check(r.returncode == 0, f"view named: {r.stderr}")
_, data = page_data("named.html")
m = data["models"][0]
check_groups(m, "named")
names = [g["name"] for g in m["groups"]]
layers_g = [g for g in m["groups"] if g["name"].startswith("layers.")]
check([g["name"] for g in layers_g] == [f"layers.{i}" for i in range(4)], f"groups layers.0..3 (got {names})")
check(len({g["sig"] for g in layers_g}) == 1 and [g["repeat"] for g in layers_g] == [1, 2, 3, 4],
      "layers.0..3: one signature, repeat 1..4")
check(all(g["layers"] == 3 for g in layers_g), "layers.N hold 3 layers each")
top = [g for g in m["groups"] if g["parent"] == -1]
check([g["name"] for g in top] == ["model"] and top[0]["layers"] == 13, "one top group 'model' of 13 layers")
check(m["inputs"][0]["shape"] == "batchx4", "symbolic dims by name in shape text")

# one prefix on every name (paddle2onnx's "p2o.Relu.3") is no hierarchy: no group "p2o"
nodes = [helper.make_node("Relu" if i % 2 else "Sigmoid", [f"t{i}"], [f"t{i + 1}"], name=f"p2o.Op.{i}") for i in range(300)]
g = helper.make_graph(nodes, "p2o", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [4])],
                      [helper.make_tensor_value_info("t300", TensorProto.FLOAT, [4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "p2o.onnx")
r = gwr("view", "p2o.onnx", "-o", "p2o.html")
check(r.returncode == 0, f"view p2o: {r.stderr}")
_, data = page_data("p2o.html")
check_groups(data["models"][0], "p2o")
check("p2o" not in [g["name"] for g in data["models"][0]["groups"]], "p2o: one common prefix makes no group")

# ---- an If: its two bodies, each a model of its own reading the outer x ----
then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [],
                           [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4])])
else_g = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["e"], name="else_sigmoid")], "else", [],
                           [helper.make_tensor_value_info("e", TensorProto.FLOAT, [4])])
g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=then_g, else_branch=else_g)],
                      "cond", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "if.onnx")
r = gwr("view", "if.onnx", "-o", "if.html")
check(r.returncode == 0, f"view if: {r.stderr}")
_, data = page_data("if.html")
l = data["models"][0]["layers"][0]
check(l["op"] == "If" and sorted(b["attr"] for b in l["bodies"]) == ["else_branch", "then_branch"], "If: two bodies")
body = [b["model"] for b in l["bodies"] if b["attr"] == "then_branch"][0]
check("file" not in body and [x["name"] for x in body["layers"]] == ["then_relu"], "then body: its layer")
xin = body["layers"][0]["in"][0]
check(body["tensors"][xin]["name"] == "x" and body["tensors"][xin]["kind"] == "outer", "then body reads the outer x")
check(data["models"][0]["inputs"][0]["shape"] == "", "a scalar's shape is empty text")

# ---- two models and a trace (gwr demo's rewrite): the diff agrees with the trace ----
subprocess.run([GWR, "demo", "--dir", tmp], capture_output=True, check=True)
r = gwr("rewrite", "demo.onnx", "--pattern", "fuse_attention_with_bias", "--pattern", "replace_add_with_sub",
        "-o", "demo.rw.onnx", "--trace-json")
check(r.returncode == 0, f"rewrite: {r.stderr}")
open("trace.jsonl", "w").write(r.stdout)  # the trace, then gwr rewrite's "wrote ..." line
events = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
r = gwr("view", "demo.onnx", "demo.rw.onnx", "--trace", "trace.jsonl", "-o", "demo.html")
check(r.returncode == 0, f"view two models + trace: {r.stderr}")
_, data = page_data("demo.html")
check(data["title"] == "demo.onnx -> demo.rw.onnx", "title of two models")
check(len(data["models"]) == 2, "two models")
check([e["label"] for e in data["trace"]] == [e["label"] for e in events] and
      [e["seq"] for e in data["trace"]] == list(range(1, len(events) + 1)), "the trace's rewrites, numbered")
removed = {n for e in events for n in e["removed"]}
added = {n for e in events for n in e["added"]}
a, b = data["models"]
check(len(a["layers"]) == onnx_layers("demo.onnx") and len(b["layers"]) == onnx_layers("demo.rw.onnx"), "layer counts")
check({l["name"] for l in a["layers"] if l["diff"] == "removed"} == removed & {l["name"] for l in a["layers"]},
      "model 0: removed = the trace's removed layers")
check({l["name"] for l in b["layers"] if l["diff"] == "added"} == added & {l["name"] for l in b["layers"]},
      "model 1: added = the trace's added layers")
for l in a["layers"]:
    if l["diff"] in ("same", "changed"):
        check(b["layers"][l["match"]]["name"] == l["name"], f"match of {l['name']}")

# ---- --view on gwr rewrite and gwr optimize ----
r = gwr("rewrite", "demo.onnx", "--pattern", "replace_add_with_sub", "-o", "rw.onnx", "--view", "rw.html")
check(r.returncode == 0, f"rewrite --view: {r.stderr}")
_, data = page_data("rw.html")
nsub = sum(1 for n in onnx.load("rw.onnx").graph.node if n.op_type == "Sub")
check(len(data["models"]) == 2 and len(data["trace"]) == nsub and nsub > 0, "rewrite --view: before, after, trace")
check({l["name"] for l in data["models"][1]["layers"] if l["diff"] == "added"} ==
      {n for e in data["trace"] for n in e["added"]}, "rewrite --view: added = the trace's")
r = gwr("optimize", "gpt8.onnx", "-o", "opt.onnx", "--view", "opt.html")
check(r.returncode == 0, f"optimize --view: {r.stderr}")
_, data = page_data("opt.html")
check(len(data["models"][0]["layers"]) == onnx_layers("gpt8.onnx") and
      len(data["models"][1]["layers"]) == onnx_layers("opt.onnx") and data["trace"], "optimize --view")
check(data["profile"] is None, "optimize --view without --profile: no profile")
# With --profile too, the page holds the passes of the file written beside it.
r = gwr("optimize", "gpt8.onnx", "-o", "opt2.onnx", "--view", "opt2.html", "--profile", "opt2.json")
check(r.returncode == 0, f"optimize --view --profile: {r.stderr}")
_, data = page_data("opt2.html")
pass_events = [e for e in json.load(open("opt2.json"))["traceEvents"] if e.get("cat") == "pass"]
check(data["profile"] is not None and data["profile"]["kind"] == "optimize" and
      [p["name"] for p in data["profile"]["passes"]] == [e["name"] for e in pass_events] and
      sum(p["rewrites"] for p in data["profile"]["passes"]) == len(data["trace"]),
      "optimize --view --profile: the page's passes are the profile's, their rewrites the trace's")

# ---- profiles ----
r = gwr("run", "gpt2.onnx", "--profile", "run.json")
check(r.returncode == 0, f"run --profile: {r.stderr}")
run_events = [e for e in json.load(open("run.json"))["traceEvents"] if e.get("cat") == "layer"]
r = gwr("view", "gpt2.onnx", "--profile", "run.json", "-o", "prof.html")
check(r.returncode == 0, f"view --profile: {r.stderr}")
_, data = page_data("prof.html")
p = data["profile"]
check(p["kind"] == "run" and p["passes"] == [], "run profile: kind run")
check(set(p["layers"]) == {e["name"] for e in run_events}, "run profile: one entry per profiled layer")
e0 = run_events[0]
check(abs(p["layers"][e0["name"]]["us"] - sum(e["dur"] for e in run_events if e["name"] == e0["name"])) < 1e-3,
      "run profile: total microseconds")
opt = {"traceEvents": [
    {"name": "round 0", "cat": "round", "ph": "X", "ts": 0, "dur": 50, "pid": 1, "tid": 0, "args": {}},
    {"name": "fuse_gelu", "cat": "pass", "ph": "X", "ts": 1, "dur": 12.5, "pid": 1, "tid": 0,
     "args": {"round": 0, "rewrites": 3, "matches": 3, "attempts": 40, "layers_before": 100, "layers_after": 94}},
    {"name": "layers", "ph": "C", "ts": 2, "pid": 1, "args": {"layers": 94}}]}
json.dump(opt, open("opt.json", "w"))
r = gwr("view", "gpt2.onnx", "--profile", "opt.json", "-o", "prof2.html")
check(r.returncode == 0, f"view optimize profile: {r.stderr}")
_, data = page_data("prof2.html")
check(data["profile"]["kind"] == "optimize" and data["profile"]["passes"] == [
    {"name": "fuse_gelu", "round": 0, "us": 12.5, "rewrites": 3, "layers_before": 100, "layers_after": 94,
     "matches": 3, "attempts": 40}], f"optimize profile: passes {data['profile']['passes']}")

# ---- bad input: one line naming the file, exit 2, no file ----
open("notonnx.onnx", "w").write("hello\n")
open("bad.jsonl", "w").write(open("trace.jsonl").read().splitlines()[0] + "\nnot json\n")
open("other.jsonl", "w").write('{"event":"rewrite","seq":1,"label":"p","root":"no_such_layer","op":"Add","added":["zz_1"],"removed":[]}\n')
open("notchrome.json", "w").write('{"a": 1}\n')
open("notjson.json", "w").write('{"traceEvents": [\n')
cases = [
    (["missing.onnx"], "missing.onnx"),
    (["notonnx.onnx"], "notonnx.onnx"),
    (["demo.onnx", "--trace", "bad.jsonl"], "bad.jsonl: line 2"),
    (["demo.onnx", "--trace", "other.jsonl"], "other.jsonl"),
    (["demo.onnx", "--trace", "missing.jsonl"], "missing.jsonl"),
    (["demo.onnx", "--profile", "notchrome.json"], "notchrome.json"),
    (["demo.onnx", "--profile", "notjson.json"], "notjson.json"),
]
for args, name in cases:
    r = gwr("view", *args, "-o", "bad.html")
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2, f"{args}: exit 2 (got {r.returncode})")
    check(len(lines) == 1 and name in lines[0], f"{args}: one line naming {name} (got {r.stderr!r})")
    check(not any(f.startswith("bad.html") for f in os.listdir(".")), f"{args}: no output file")
for args in (["demo.onnx"], [], ["a.onnx", "b.onnx", "c.onnx", "-o", "x.html"], ["demo.onnx", "--bogus", "-o", "x.html"]):
    r = gwr("view", *args)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, f"usage {args}: exit 2, one line")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("view_data: all checks passed")
