"""Facts about an ONNX model's main graph, read with the onnx package (independent of gwr), for
the browser tests of `gwr view` (tests/view/view_test.js): the nodes' names, ops and their integer
and string attributes, and the initializers' names (gwr imports each initializer as one Constant
layer of that name, so the model's layers are its nodes and its initializers), as JSON on stdout."""
import json
import sys

import onnx
from onnx import AttributeProto


def facts(path):
    m = onnx.load(path, load_external_data=False)
    nodes = []
    for n in m.graph.node:
        attrs = {}
        for a in n.attribute:
            if a.type == AttributeProto.INT:
                attrs[a.name] = str(a.i)
            elif a.type == AttributeProto.STRING:
                attrs[a.name] = a.s.decode("utf-8", "replace")
            elif a.type == AttributeProto.INTS:
                attrs[a.name] = list(a.ints)
        nodes.append({"name": n.name, "op": n.op_type, "attrs": attrs})
    weights = [w.name for w in m.graph.initializer]
    return {"nodes": nodes, "weights": weights, "layers": [n["name"] for n in nodes] + weights,
            "count": len(nodes) + len(weights)}


if __name__ == "__main__":
    json.dump(facts(sys.argv[1]), sys.stdout)
