"""geometry_ort.py GWR: gwr's kernels of issue 22's geometry ops against
independent implementations on seeded random inputs, in forms ONNX's node
tests do not reach: DeformConv with groups, offset groups, strides, pads,
dilations, a mask and a bias; Col2Im in 3-D; AffineGrid; GridSample on 5-D
input in every padding mode; CenterCropPad cropping and padding together;
CumProd on a 3-D tensor in every mode.

The expected outputs come from onnxruntime 1.31 (PyPI, the project venv);
for Col2Im with dilations from onnx's reference evaluator, because
onnxruntime 1.31 disagrees with it there (dilations [1, 1, 2]: up to 6 off)
while a plain numpy loop agrees with the reference. The cases are written
as backend test cases (model.onnx, test_data_set_0/) into a temporary
directory and run with `GWR test-onnx --atol 1e-5` (rtol 1e-3, as the
backend tests; the atol allows float32 sums of products in another order).
Exit 0 when every case passes.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh
from onnx.reference import ReferenceEvaluator


def write_case(root, name, node, inputs, opset, use_reference=False):
    ins = [h.make_tensor_value_info(k, TP.FLOAT if v.dtype == np.float32 else TP.INT64, v.shape)
           for k, v in inputs.items()]
    g = h.make_graph([node], name, ins, [h.make_tensor_value_info("y", TP.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)
    if use_reference:
        out = ReferenceEvaluator(m).run(None, inputs)[0].astype(np.float32)
    else:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        out = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate(inputs.items()):
        onnx.save_tensor(nh.from_array(v, k), os.path.join(d, "test_data_set_0", "input_%d.pb" % i))
    onnx.save_tensor(nh.from_array(out, "y"), os.path.join(d, "test_data_set_0", "output_0.pb"))


def main(gwr):
    rng = np.random.default_rng(22)

    def f(*s):
        return rng.standard_normal(s).astype(np.float32)

    with tempfile.TemporaryDirectory() as root:
        # DeformConv: X (2, 4, 7, 6), W (6, 2, 3, 2), group 2, offset_group 2
        oh, ow = (7 + 2 - 5) // 2 + 1, (6 + 1 - 2) // 1 + 1
        write_case(root, "deform_conv_groups",
                   h.make_node("DeformConv", ["x", "w", "off", "b", "m"], ["y"], group=2, offset_group=2,
                               strides=[2, 1], pads=[1, 0, 1, 1], dilations=[2, 1]),
                   {"x": f(2, 4, 7, 6), "w": f(6, 2, 3, 2), "off": f(2, 24, oh, ow) * 1.5, "b": f(6),
                    "m": rng.random((2, 12, oh, ow)).astype(np.float32)}, 22)
        # Col2Im 3-D: image (4, 5, 4), block (2, 2, 2): 4 x 3 x 3 = 36 blocks
        write_case(root, "col2im_3d",
                   h.make_node("Col2Im", ["x", "i", "b"], ["y"], strides=[1, 2, 1], pads=[0, 1, 1, 1, 0, 0],
                               dilations=[1, 1, 2]),
                   {"x": f(2, 24, 36), "i": np.array([4, 5, 4]), "b": np.array([2, 2, 2])}, 18, use_reference=True)
        write_case(root, "affine_grid_3d", h.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=0),
                   {"t": f(2, 3, 4), "s": np.array([2, 3, 4, 5, 6])}, 20)
        write_case(root, "affine_grid_2d_align", h.make_node("AffineGrid", ["t", "s"], ["y"], align_corners=1),
                   {"t": f(3, 2, 3), "s": np.array([3, 1, 5, 7])}, 20)
        for pm in ("zeros", "border", "reflection"):
            for md in ("linear", "nearest"):
                for ac in (0, 1):
                    write_case(root, "grid_sample_5d_%s_%s_%d" % (pm, md, ac),
                               h.make_node("GridSample", ["x", "g"], ["y"], mode=md, padding_mode=pm, align_corners=ac),
                               {"x": f(2, 3, 4, 5, 6), "g": f(2, 3, 4, 5, 3) * 1.3}, 20)
        write_case(root, "center_crop_pad_mixed", h.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[0, 2]),
                   {"x": f(5, 3, 4), "s": np.array([8, 1])}, 18)
        x = f(3, 4, 5) * 0.5 + 1
        for rv in (0, 1):
            for ex in (0, 1):
                write_case(root, "cumprod_%d%d" % (rv, ex),
                           h.make_node("CumProd", ["x", "a"], ["y"], reverse=rv, exclusive=ex),
                           {"x": x, "a": np.array(1)}, 26)
        r = subprocess.run([gwr, "test-onnx", "--atol", "1e-5", root], capture_output=True, text=True)
        sys.stdout.write(r.stdout + r.stderr)
        return r.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
