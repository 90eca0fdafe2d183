"""Facts about an ONNX model's main graph, read with the onnx package (independent of gwr), for
the browser tests of `gwr view` (tests/view/view_test.js): the nodes' names, ops and their integer
and string attributes, as JSON on stdout."""
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
    return {"nodes": nodes, "count": len(nodes)}


if __name__ == "__main__":
    json.dump(facts(sys.argv[1]), sys.stdout)
