"""onnxruntime's kernels in the default (ONNX) domain that ONNX's own
registry lacks, as schemas for onnx's checker.

A file gwr writes for target ort (or gwr) may hold two such ops, exactly as
onnxruntime's own optimizer writes them: LayerNormalization at a default
opset below 17 (onnxruntime registers its kernel from version 1) and
SimplifiedLayerNormalization (RMSNorm; onnxruntime registers it only in the
default domain, version 1, and refuses it in com.microsoft). onnx's checker
refuses both ("No Op registered ... with domain_version of 13"), so the
files are checked with these schemas added, as onnxruntime declares the ops
(inputs X, scale[, B]; outputs Y and the optional mean and inverse standard
deviation; attributes axis -1, epsilon 1e-5, stash_type 1), and only while
checking a file of those targets: a target-onnx file is checked against
ONNX's registry alone. `with ort_registry(): onnx.checker.check_model(...)`.
"""
import contextlib

_FLOATS = ["tensor(float)", "tensor(float16)", "tensor(double)", "tensor(bfloat16)"]
_OPS = (("LayerNormalization", ("X", "Scale", "B")),
        ("SimplifiedLayerNormalization", ("X", "scale")))


def _schema(name, inputs):
    from onnx import defs, helper
    opt, single = defs.OpSchema.FormalParameterOption.Optional, defs.OpSchema.FormalParameterOption.Single
    param = defs.OpSchema.FormalParameter
    return defs.OpSchema(
        name, "", 1, doc="onnxruntime's default-domain kernel (CPU execution provider)",
        inputs=[param(n, "T" if i == 0 else "V", param_option=opt if i >= 2 else single)
                for i, n in enumerate(inputs)],
        outputs=[param("Y", "V"), param("Mean", "U", param_option=opt), param("InvStdDev", "U", param_option=opt)],
        type_constraints=[("T", _FLOATS, ""), ("V", _FLOATS, ""), ("U", ["tensor(float)", "tensor(double)", "tensor(bfloat16)"], "")],
        attributes=[defs.OpSchema.Attribute("axis", helper.make_attribute("axis", -1), ""),
                    defs.OpSchema.Attribute("epsilon", helper.make_attribute("epsilon", 1e-5), ""),
                    defs.OpSchema.Attribute("stash_type", helper.make_attribute("stash_type", 1), "")])


@contextlib.contextmanager
def ort_registry():
    """ONNX's registry plus onnxruntime's default-domain ops, for the block."""
    from onnx import defs
    added = []
    try:
        for name, inputs in _OPS:
            if not defs.has(name, 1, ""):
                defs.register_schema(_schema(name, inputs))
                added.append(name)
        yield
    finally:
        for name in added:
            defs.deregister_schema(name, 1, "")
