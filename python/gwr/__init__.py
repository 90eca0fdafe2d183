"""gwr: rewrite neural-network graphs from Python.

The Graph Rewriting API of TensorRT-LLM, as its documentation writes it, over
gwr's C library: networks of layers and tensors (``Network``, ``Layer``,
``Tensor``), patterns (``PatternRewriter``, ``PatternAnalyzer``) kept in
managers (``RewritePatternManager``, ``AnalysisPatternManager``), recorded
signatures of functionals (``FLayerInfo``, ``FLayerInfoMemo``,
``record_signature``), the builders (``gwr.functional``), ONNX files
(``gwr.onnx``) and a CPU executor (``Session``). docs/python.md is the tour.
"""

from gwr import _gwr
from gwr._gwr import (  # noqa: F401
    Network,
    Layer,
    Tensor,
    net_guard,
    current_network,
    DataType,
    LayerType,
    ElementWiseOperation,
    Error,
    LifetimeError,
    InvalidArgumentError,
    NotFoundError,
    DtypeError,
    ShapeError,
    DuplicateError,
    CycleError,
    InvalidGraphError,
    OutOfMemoryError,
    FileError,
    ParseError,
    UnsupportedError,
    NotConvergedError,
    StateError,
)

__version__ = _gwr.__version__

# The dtypes under their NumPy-style names (the seed writes trt.float16).
float32 = DataType.FLOAT32
float16 = DataType.FLOAT16
bfloat16 = DataType.BFLOAT16
float64 = DataType.FLOAT64
int64 = DataType.INT64
int32 = DataType.INT32
int16 = DataType.INT16
int8 = DataType.INT8
uint8 = DataType.UINT8
bool_ = DataType.BOOL


def _export(names):
    """Re-exports what the other parts of the extension define."""
    for name in names:
        if hasattr(_gwr, name):
            globals()[name] = getattr(_gwr, name)


_export([
    # patterns.c
    "PatternRewriter", "PatternAnalyzer", "RewritePatternManager", "AnalysisPatternManager",
    "BuiltinPattern", "optimize",
    # analysis.c
    "analyze",
    # functional.c / session.c
    "FLayerInfo", "Session",
    # quant.c
    "quantize", "precision", "Calib",
    # generate.c
    "generate",
])

# The pure-Python parts: the memo and the decorator of the seed, the
# builders, ONNX files.
from gwr._flayer import FLayerInfoMemo, record_signature  # noqa: E402,F401
from gwr import functional, onnx, passes, rules  # noqa: E402,F401
