#!/usr/bin/python3
"""What test_cli.sh asks of ONNX's own Python package (Debian python3-onnx),
so that gwr's output is checked against an independent reader.

  onnx_check.py make-model PATH              write a model with what the test data
                                             lacks: initializers, metadata, symbolic
                                             dims, a custom domain, a 4 KiB weight
  onnx_check.py make-odd-model PATH          names and metadata with quotes, backslashes,
                                             control characters and non-ASCII text
  onnx_check.py inspect MODEL JSON           gwr inspect --json output vs the model
  onnx_check.py inspect-text MODEL TEXT      the text output's key lines
  onnx_check.py same-nodes IN OUT            OUT passes onnx.checker and holds IN's
                                             graph: nodes, inputs, outputs, initializers
  onnx_check.py external IN OUT              OUT keeps its big tensors in a side file,
                                             and they load back equal to IN's

Exit status 0 when the check holds; 1 with one line saying what differs.
"""
import collections
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

DTYPE = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
         9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 14: "complex64",
         15: "complex128", 16: "bfloat16"}
ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 14: 8, 15: 16, 16: 2}


def fail(msg):
    print("onnx_check: " + msg)
    sys.exit(1)


def expect(what, got, want):
    if got != want:
        fail("%s: gwr says %r, onnx says %r" % (what, got, want))


def dom(d):
    return "" if d == "ai.onnx" else d


def numel(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.g
        elif a.type == onnx.AttributeProto.GRAPHS:
            yield from a.graphs


def params(g):
    """(elements, bytes or None when strings make bytes ill-defined) of every
    initializer (defaults included) and Constant 'value', subgraphs too."""
    n, b = 0, 0
    tensors = list(g.initializer)
    for node in g.node:
        if node.op_type == "Constant" and dom(node.domain) == "":
            tensors += [a.t for a in node.attribute if a.name == "value"]
        for sg in subgraphs(node):
            sn, sb = params(sg)
            n += sn
            b = None if b is None or sb is None else b + sb
    for t in tensors:
        n += numel(t)
        if b is not None:
            b = None if t.data_type not in ITEMSIZE else b + numel(t) * ITEMSIZE[t.data_type]
    return n, b


def domains(g):
    for node in g.node:
        yield node.domain
        for sg in subgraphs(node):
            yield from domains(sg)


def value_type(tp):
    """The JSON value_type gwr should print for an ONNX TypeProto."""
    which = tp.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        tt = getattr(tp, which)
        shape = None
        if tt.HasField("shape"):
            shape = [d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param") else None
                     for d in tt.shape.dim]
        return {"kind": "tensor" if which == "tensor_type" else "sparse_tensor",
                "dtype": DTYPE.get(tt.elem_type, "undefined"), "shape": shape}
    if which == "sequence_type":
        return {"kind": "sequence", "elem": value_type(tp.sequence_type.elem_type)}
    if which == "optional_type":
        return {"kind": "optional", "elem": value_type(tp.optional_type.elem_type)}
    if which == "map_type":
        return {"kind": "map", "key": DTYPE[tp.map_type.key_type], "value": value_type(tp.map_type.value_type)}
    # No type at all: the IR has nothing better than an undefined tensor of unknown rank.
    return {"kind": "tensor", "dtype": "undefined", "shape": None}


def expected(path):
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    inames = {i.name for i in g.input}
    consts = [t for t in g.initializer if t.name not in inames]
    hist = collections.Counter()
    for node in g.node:
        d = dom(node.domain)
        hist[(d + "::" if d else "") + node.op_type] += 1
    if consts or g.sparse_initializer:
        hist["Constant"] += len(consts) + len(g.sparse_initializer)
    ops = sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))
    n, b = params(g)
    custom = {dom(o.domain) for o in m.opset_import} | {dom(d) for d in domains(g)}
    inits = {t.name for t in g.initializer}
    return {
        "ir_version": m.ir_version,
        "producer": {"name": m.producer_name, "version": m.producer_version},
        "graph_name": g.name,
        "opsets": [{"domain": dom(o.domain), "version": o.version} for o in m.opset_import],
        "inputs": [{"name": v.name, "value_type": value_type(v.type), "has_default": v.name in inits}
                   for v in g.input],
        "outputs": [{"name": v.name, "value_type": value_type(v.type)} for v in g.output],
        "layers": len(g.node) + len(consts) + len(g.sparse_initializer),
        "ops": ops,
        "parameters": n,
        "parameter_bytes": b,
        "custom_domains": sorted(custom - {"", "ai.onnx.ml"}),
        "metadata": {p.key: p.value for p in m.metadata_props},
    }


def check_inspect(model, json_path):
    with open(json_path, encoding="utf-8") as f:
        got = json.load(f)
    want = expected(model)
    expect("file", got["file"], model)
    expect("ir_version", got["ir_version"], want["ir_version"])
    expect("producer name", got["producer"]["name"] or "", want["producer"]["name"])
    expect("producer version", got["producer"]["version"] or "", want["producer"]["version"])
    expect("graph name", got["graph_name"], want["graph_name"])
    expect("opsets", got["opsets"], want["opsets"])
    expect("number of inputs", len(got["inputs"]), len(want["inputs"]))
    for g, w in zip(got["inputs"], want["inputs"]):
        expect("input name", g["name"], w["name"])
        expect("input '%s' type" % w["name"], g["value_type"], w["value_type"])
        expect("input '%s' has_default" % w["name"], g["has_default"], w["has_default"])
    expect("number of outputs", len(got["outputs"]), len(want["outputs"]))
    for g, w in zip(got["outputs"], want["outputs"]):
        expect("output name", g["name"], w["name"])
        expect("output '%s' type" % w["name"], g["value_type"], w["value_type"])
    expect("layers", got["layers"], want["layers"])
    expect("op histogram (in order)", list(got["ops"].items()), want["ops"])
    expect("parameters", got["parameters"], want["parameters"])
    if want["parameter_bytes"] is not None:
        expect("parameter_bytes", got["parameter_bytes"], want["parameter_bytes"])
    expect("custom domains", got["custom_domains"], want["custom_domains"])
    expect("metadata", got["metadata"], want["metadata"])


def check_inspect_text(model, text_path):
    with open(text_path, encoding="utf-8", errors="replace") as f:
        lines = [line.rstrip("\n") for line in f]
    want = expected(model)

    def field(name):
        for line in lines:
            if line.startswith(name + ":"):
                return line[len(name) + 1:].strip()
        fail("no '%s:' line" % name)

    expect("ir_version line", field("ir_version"), str(want["ir_version"]))
    expect("layers line", field("layers").split()[0], str(want["layers"]))
    expect("parameters line", field("parameters").split()[0], str(want["parameters"]))
    expect("inputs line", field("inputs"), str(len(want["inputs"])))
    expect("outputs line", field("outputs"), str(len(want["outputs"])))
    start = lines.index(next(line for line in lines if line.startswith("ops:")))
    rows = [line.split() for line in lines[start + 1:start + 1 + len(want["ops"])]]
    expect("op histogram rows", [(r[1], int(r[0])) for r in rows], want["ops"])


def graph_summary(g):
    def tensor(t):  # by value: gwr writes raw_data where the file had typed fields
        return (t.name, t.data_type, list(t.dims), numpy_helper.to_array(t).tobytes())

    def attr(a):
        if a.type == onnx.AttributeProto.TENSOR:
            return (a.name, a.type, tensor(a.t))
        if a.type == onnx.AttributeProto.TENSORS:
            return (a.name, a.type, [tensor(t) for t in a.tensors])
        return (a.name, a.type, a.SerializeToString())

    def attrs(node):
        return sorted(attr(a) for a in node.attribute
                      if a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS))
    return {
        "nodes": [(n.op_type, dom(n.domain), n.name, list(n.input), list(n.output), attrs(n),
                   [graph_summary(sg) for sg in subgraphs(n)]) for n in g.node],
        "inputs": [(v.name, v.type.SerializeToString()) for v in g.input],
        "outputs": [(v.name, v.type.SerializeToString()) for v in g.output],
        "initializers": [tensor(t) for t in g.initializer],
    }


def check_same_nodes(a_path, b_path):
    b_model = onnx.load(b_path)
    try:
        onnx.checker.check_model(b_model, full_check=True)
    except Exception as e:  # noqa: BLE001 - any checker complaint is the failure
        fail("onnx.checker rejects %s: %s" % (b_path, str(e).splitlines()[0]))
    a, b = graph_summary(onnx.load(a_path).graph), graph_summary(b_model.graph)
    for key in ("inputs", "outputs", "initializers"):
        expect("graph " + key, [x[0] for x in b[key]], [x[0] for x in a[key]])
        expect("graph %s (types and values)" % key, b[key], a[key])
    expect("number of nodes", len(b["nodes"]), len(a["nodes"]))
    for i, (x, y) in enumerate(zip(b["nodes"], a["nodes"])):
        expect("node %d" % i, x, y)


def check_external(a_path, b_path):
    raw = onnx.load(b_path, load_external_data=False)
    ext = [t.name for t in raw.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    if not ext:
        fail("%s has no tensor with external data" % b_path)
    locations = {e.value for t in raw.graph.initializer for e in t.external_data if e.key == "location"}
    for loc in locations:
        if not os.path.isfile(os.path.join(os.path.dirname(b_path), loc)):
            fail("side file %s is missing" % loc)
    try:
        onnx.checker.check_model(b_path, full_check=True)
    except Exception as e:  # noqa: BLE001
        fail("onnx.checker rejects %s: %s" % (b_path, str(e).splitlines()[0]))
    a = onnx.load(a_path)
    b = onnx.load(b_path)  # load_external_data=True
    want = {t.name: numpy_helper.to_array(t) for t in a.graph.initializer}
    got = {t.name: numpy_helper.to_array(t) for t in b.graph.initializer}
    expect("initializer names", sorted(got), sorted(want))
    for k in want:
        if want[k].dtype != got[k].dtype or want[k].shape != got[k].shape or not np.array_equal(want[k], got[k]):
            fail("initializer '%s' differs after the round trip" % k)


def make_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])
    aux = helper.make_tensor_value_info("aux", TensorProto.INT64, [2])
    w = numpy_helper.from_array(np.arange(32 * 32, dtype=np.float32).reshape(32, 32) / 7, "w")  # 4 KiB
    b = numpy_helper.from_array(np.ones(32, dtype=np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="mm"),
        helper.make_node("Add", ["xw", "b"], ["h"], name="bias"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Constant", [], ["two"], name="two", value=numpy_helper.from_array(
            np.array([2, 3], dtype=np.int64))),
        helper.make_node("Identity", ["two"], ["aux"], name="aux_id"),
        helper.make_node("Scale", ["r"], ["y"], name="custom", domain="com.example", factor=0.5),
    ]
    g = helper.make_graph(nodes, "cli_model", [x], [y, aux], initializer=[w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)],
                          producer_name="gwr-cli-test", producer_version="2.5")
    m.ir_version = 8
    helper.set_model_props(m, {"author": "gwr \"tests\"", "purpose": "line one\nline two"})
    onnx.save(m, path)


def make_odd_model(path):
    odd_in = 'in "quoted"\\back\tslash\nnewline\x01'
    odd_out = "sortie \u00e9t\u00e9 \u65e5\u672c \U0001f600"
    x = helper.make_tensor_value_info(odd_in, TensorProto.FLOAT, ['dim "q"\n', 3])
    y = helper.make_tensor_value_info(odd_out, TensorProto.FLOAT, ['dim "q"\n', 3])
    g = helper.make_graph([helper.make_node("Relu", [odd_in], [odd_out], name="n\"\\")], 'graph "g"\n', [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name='p\x7f"\\',
                          producer_version="\t1\r")
    m.ir_version = 8
    helper.set_model_props(m, {'k"\n': 'v\\\x1f\u2028', "": ""})
    onnx.save(m, path)


def count_ops(g):
    c = {}
    for n in g.node:
        c[n.op_type] = c.get(n.op_type, 0) + 1
    return c


def check_add_to_sub(a_path, b_path):
    """b is a with every two-input Add replaced by a Sub on the same inputs,
    read by the same consumers; the interface is unchanged."""
    a, b = onnx.load(a_path), onnx.load(b_path)
    ca, cb = count_ops(a.graph), count_ops(b.graph)
    expect("Add nodes after", cb.get("Add", 0), 0)
    expect("Sub nodes after", cb.get("Sub", 0), ca.get("Sub", 0) + ca.get("Add", 0))
    expect("other nodes", {k: v for k, v in cb.items() if k not in ("Add", "Sub")},
           {k: v for k, v in ca.items() if k not in ("Add", "Sub")})
    expect("inputs", [i.name for i in b.graph.input], [i.name for i in a.graph.input])
    expect("outputs", [o.name for o in b.graph.output], [o.name for o in a.graph.output])
    # Same dataflow: map each tensor to its expression with Add read as Sub.
    def exprs(g, rename):
        prod = {o: n for n in g.node for o in n.output}
        memo = {}
        def e(t):
            if t in memo:
                return memo[t]
            n = prod.get(t)
            if n is None:
                r = t
            elif n.op_type == "Constant" or not n.input:
                r = n.op_type
            else:
                r = rename.get(n.op_type, n.op_type) + "(" + ",".join(e(i) for i in n.input) + ")"
            memo[t] = r
            return r
        sys.setrecursionlimit(100000)
        return [e(o.name) for o in g.output]
    expect("dataflow", exprs(b.graph, {}), exprs(a.graph, {"Add": "Sub"}))


def check_fused_attention(a_path, b_path, nplugins):
    """b has every GPTAttention with its qkv bias folded in and remove_padding set."""
    a, b = onnx.load(a_path), onnx.load(b_path)
    ca, cb = count_ops(a.graph), count_ops(b.graph)
    n = int(nplugins)
    expect("GPTAttention nodes", cb.get("GPTAttention", 0), n)
    expect("Add nodes", cb.get("Add", 0), ca.get("Add", 0) - n)
    inits = {t.name: list(t.dims) for t in b.graph.initializer}
    prod = {o: nd for nd in b.graph.node for o in nd.output}
    for nd in b.graph.node:
        if nd.op_type != "GPTAttention":
            continue
        expect("plugin domain", nd.domain, "gwr")
        attrs = {x.name: onnx.helper.get_attribute_value(x) for x in nd.attribute}
        expect("remove_padding", attrs.get("remove_padding"), 1)
        bias = nd.input[1] if len(nd.input) > 1 else ""
        if bias in inits:
            expect("bias dims", inits[bias], [3 * attrs["num_heads"] * attrs["head_size"]])
        elif bias in prod and prod[bias].op_type == "Constant":
            pass
        else:
            fail("plugin %s: qkv_bias %r is not a constant" % (nd.name, bias))
        expect("qkv producer", prod[nd.input[0]].op_type, "Reshape")
    expect("outputs", [o.name for o in b.graph.output], [o.name for o in a.graph.output])


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"make-model": make_model, "make-odd-model": make_odd_model, "inspect": check_inspect, "inspect-text": check_inspect_text,
     "same-nodes": check_same_nodes, "external": check_external, "add-to-sub": check_add_to_sub,
     "fused-attention": check_fused_attention}[cmd](*args)


if __name__ == "__main__":
    main()
