#!/bin/sh
# make_pictures.sh - redraws docs/optimize.md's before/after pictures: two
# small models written with python3-onnx (as exporters write them), optimized
# by `gwr optimize`, each side drawn by `gwr dot` (Graphviz).
#   docs/img/make_pictures.sh [BUILD]    (default build)
set -eu
cd "$(dirname "$0")/../.."
GWR=./${1:-build}/gwr
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 - "$T" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
t = sys.argv[1]
r = np.random.default_rng(5)
def init(n, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), n)
def model(nodes, inits, x, y, opset, path):
    g = helper.make_graph(nodes, path, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    save(m, f"{t}/{path}.onnx")
# ConvTranspose + BatchNormalization + Relu (a decoder head): fold_batchnorm
model([helper.make_node("ConvTranspose", ["x", "w", "b"], ["up"], name="up", strides=[2, 2]),
       helper.make_node("BatchNormalization", ["up", "g", "beta", "mean", "var"], ["bn"], name="bn"),
       helper.make_node("Relu", ["bn"], ["y"], name="relu")],
      [init("w", r.standard_normal((4, 2, 2, 2))), init("b", r.standard_normal(2)), init("g", r.random(2) + .5),
       init("beta", r.standard_normal(2)), init("mean", r.standard_normal(2)), init("var", r.random(2) + .5)],
      [1, 4, 8, 8], [1, 2, 16, 16], 13, "convt_bn")
# the exporters' LayerNorm chain over the last axis: fuse_layer_norm
c = lambda n, v: helper.make_node("Constant", [], [n], name=n, value=numpy_helper.from_array(np.float32(v), n))
model([helper.make_node("ReduceMean", ["x"], ["mu"], name="mean", axes=[-1]),
       helper.make_node("Sub", ["x", "mu"], ["d"], name="sub"),
       c("two", 2.0), helper.make_node("Pow", ["d", "two"], ["sq"], name="pow"),
       helper.make_node("ReduceMean", ["sq"], ["var"], name="var", axes=[-1]),
       c("eps", 1e-5), helper.make_node("Add", ["var", "eps"], ["ve"], name="add_eps"),
       helper.make_node("Sqrt", ["ve"], ["sd"], name="sqrt"),
       helper.make_node("Div", ["d", "sd"], ["n"], name="div"),
       helper.make_node("Mul", ["n", "gamma"], ["s"], name="gamma_mul"),
       helper.make_node("Add", ["s", "beta"], ["y"], name="beta_add")],
      [init("gamma", r.random(16) + .5), init("beta", r.standard_normal(16))],
      [2, 8, 16], [2, 8, 16], 17, "layer_norm")
PY
for m in convt_bn layer_norm; do
    "$GWR" optimize "$T/$m.onnx" -o "$T/$m.opt.onnx" --verify >/dev/null
    "$GWR" dot "$T/$m.onnx" -o "docs/img/${m}_before.svg"
    "$GWR" dot "$T/$m.opt.onnx" -o "docs/img/${m}_after.svg"
done
echo "docs/img: convt_bn_{before,after}.svg, layer_norm_{before,after}.svg"
