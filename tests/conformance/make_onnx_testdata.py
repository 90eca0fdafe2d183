"""Writes onnx's backend test data into DIR, the layout of onnx/backend/test/data.

The onnx wheel (1.23) ships simple/, pytorch-converted/, pytorch-operator/,
light/ and real/ but not node/: the node tests are only the Python cases in
onnx/backend/test/case/node. This runs those cases (onnx's own reference
outputs) and writes DIR/node/<test>/model.onnx and test_data_set_N/{input,
output}_K.pb; the shipped suites are linked into DIR. numpy's global seed is
fixed first, so the random inputs are the same on every run.

usage: make_onnx_testdata.py DIR   (run with the project venv's python; does
nothing when DIR/VERSION names this onnx already)
"""
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

SHIPPED = ("simple", "pytorch-converted", "pytorch-operator", "light", "real")


def value_proto(value, vtype, name):
    """One input or output as the .pb the test data holds, by its graph type."""
    if vtype.HasField("sequence_type"):
        return numpy_helper.from_list(value, name)
    if vtype.HasField("optional_type"):
        return numpy_helper.from_optional(value, name)
    if vtype.HasField("map_type"):
        return numpy_helper.from_dict(value, name)
    if isinstance(value, onnx.TensorProto):
        return value
    return numpy_helper.from_array(value, name)


def write_case(case, root):
    d = os.path.join(root, case.name)
    os.makedirs(d)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, f"test_data_set_{i}")
        os.makedirs(ds)
        for kind, values, decls in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for k, v in enumerate(values):
                with open(os.path.join(ds, f"{kind}_{k}.pb"), "wb") as f:
                    f.write(value_proto(v, decls[k].type, decls[k].name).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    stamp = os.path.join(out, "VERSION")
    if os.path.exists(stamp) and open(stamp).read() == f"onnx {onnx.__version__}\n":
        print(f"{out}: current (onnx {onnx.__version__})")
        return
    if os.path.exists(out) and not os.path.exists(stamp):
        sys.exit(f"make_onnx_testdata.py: {out} exists and was not written by this script "
                 "(no VERSION): refusing to replace it")
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "node"))
    np.random.seed(0)
    warnings.simplefilter("ignore")
    import onnx.backend.test.case.node as node_cases  # runs every case's export()

    cases = node_cases.collect_testcases()
    for case in cases:
        write_case(case, os.path.join(tmp, "node"))
    shipped = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    for s in SHIPPED:
        if os.path.isdir(os.path.join(shipped, s)):
            os.symlink(os.path.join(shipped, s), os.path.join(tmp, s))
    with open(os.path.join(tmp, "VERSION"), "w") as f:
        f.write(f"onnx {onnx.__version__}\n")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    print(f"{out}: {len(cases)} node tests of onnx {onnx.__version__}")


if __name__ == "__main__":
    main()
