"""gwr.functional: build layers from Python, the way TensorRT-LLM's functional.py does.

Every builder takes its network from its Tensor arguments (or, for those that
take none, from ``with gwr.net_guard(net):``) and returns the new Tensor(s).
Python numbers mixed with Tensors become rank-0 constants of the Tensor's
dtype. Shapes and dtypes are inferred by gwr (NumPy broadcasting, symbolic
dims); a mismatch raises gwr.ShapeError with gwr's message.
"""

import numbers

import numpy as np

from gwr import _gwr

__all__ = [
    "gpt_attention", "constant", "matmul", "gemm", "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "mod", "equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_xor", "logical_not", "where", "abs", "neg", "exp", "log", "sqrt", "reciprocal", "floor", "ceil",
    "sin", "cos", "erf", "relu", "sigmoid", "tanh", "softplus", "hard_swish", "leaky_relu", "elu", "gelu",
    "silu", "softmax", "layer_norm", "reshape", "transpose", "concat", "split", "slice", "gather", "squeeze",
    "unsqueeze", "expand", "cast", "shape", "conv", "global_avg_pool", "global_max_pool", "reduce_sum",
    "reduce_mean", "reduce_max", "op", "call",
]

# gwr dtype numbers (ONNX's) -> numpy dtypes, for constants.
_NP = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
    9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64, 14: np.complex64,
    15: np.complex128,
}
_FROM_NP = {np.dtype(v): k for k, v in _NP.items()}


def _is_scalar(x):
    """True for a Python or numpy number (what becomes a rank-0 constant)."""
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, _gwr.Tensor)


def _scalar_like(x, like):
    """A rank-0 constant of like's dtype holding x."""
    dt = int(like.dtype)
    if dt not in _NP:
        raise TypeError(f"cannot make a {like.dtype!r} constant from the Python number {x!r}")
    return constant(np.asarray(x, dtype=_NP[dt]), network=like.network)


def _pair(a, b, name):
    """The two operands of a binary builder as Tensors (a number takes the other's dtype)."""
    if isinstance(a, _gwr.Tensor) and _is_scalar(b):
        b = _scalar_like(b, a)
    elif isinstance(b, _gwr.Tensor) and _is_scalar(a):
        a = _scalar_like(a, b)
    elif not isinstance(a, _gwr.Tensor) or not isinstance(b, _gwr.Tensor):
        raise TypeError(f"{name}: expected Tensors (or a Tensor and a number), got "
                        f"{type(a).__name__} and {type(b).__name__}")
    return a, b


def constant(value, dtype=None, network=None):
    """A CONSTANT layer holding a copy of value (a numpy array, nested lists or a scalar).

    dtype: any gwr dtype spelling (gwr.float16, "float32", np.int64, ...); None keeps the
    array's own (Python floats become float32, ints int64 unless an array says otherwise).
    network: where to build it; None means the current network (gwr.net_guard).
    Strings: a str or nested lists of str (dtype "string").
    """
    if dtype is not None:
        dtype = _gwr._f_dtype(dtype)
    if dtype == _gwr.DataType.STRING or (dtype is None and _all_str(value)):
        arr = np.asarray(value, dtype=object)
        return _gwr._f_constant([str(s) for s in arr.reshape(-1)], _gwr.DataType.STRING, arr.shape, network)
    if dtype is None:
        arr = np.asarray(value)
        if not isinstance(value, np.ndarray) and arr.dtype == np.float64:
            arr = arr.astype(np.float32)  # Python floats: the common network dtype
        if arr.dtype not in _FROM_NP:
            raise TypeError(f"constant: numpy dtype {arr.dtype} has no gwr dtype")
        dtype = _gwr.DataType(_FROM_NP[arr.dtype])
    else:
        if int(dtype) not in _NP:
            raise _gwr.UnsupportedError(f"constant: dtype {dtype.name.lower()} cannot be built from numpy data")
        arr = np.asarray(value, dtype=_NP[int(dtype)])
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    return _gwr._f_constant(arr, dtype, arr.shape, network)


def _all_str(value):
    """True for a str or non-empty nested lists of str."""
    if isinstance(value, str):
        return True
    if isinstance(value, (list, tuple)) and value:
        return all(_all_str(v) for v in value)
    return False


def _binary(name):
    """A two-operand builder calling gwr's of that name."""
    def f(a, b):
        a, b = _pair(a, b, name)
        return _gwr._f_binary(name, a, b)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{name}(a, b) -> Tensor: the element-wise {name} with NumPy broadcasting (a number is a constant)."
    return f


def _unary(name, doc):
    """A one-Tensor builder calling gwr's of that name."""
    def f(x):
        return _gwr._f_unary(name, x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{name}(x) -> Tensor: {doc}"
    return f


add, sub, mul, div, pow, maximum, minimum, mod = (_binary(n) for n in (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod"))
equal, less, less_equal, greater, greater_equal = (_binary(n) for n in (
    "equal", "less", "less_equal", "greater", "greater_equal"))
logical_and, logical_or, logical_xor = (_binary(n) for n in ("logical_and", "logical_or", "logical_xor"))

abs = _unary("abs", "|x|")
neg = _unary("neg", "-x")
exp = _unary("exp", "e**x")
log = _unary("log", "the natural logarithm")
sqrt = _unary("sqrt", "the square root")
reciprocal = _unary("reciprocal", "1/x")
floor = _unary("floor", "rounded down")
ceil = _unary("ceil", "rounded up")
sin = _unary("sin", "the sine")
cos = _unary("cos", "the cosine")
erf = _unary("erf", "the error function")
relu = _unary("relu", "max(x, 0)")
sigmoid = _unary("sigmoid", "1 / (1 + e**-x)")
tanh = _unary("tanh", "the hyperbolic tangent")
softplus = _unary("softplus", "log(1 + e**x)")
hard_swish = _unary("hard_swish", "x * relu6(x + 3) / 6")
silu = _unary("silu", "x * sigmoid(x) (two layers: Sigmoid and Mul)")
logical_not = _unary("logical_not", "not x (bool)")
global_avg_pool = _unary("global_avg_pool", "the mean over every spatial dim (N, C, 1, ...)")
global_max_pool = _unary("global_max_pool", "the max over every spatial dim (N, C, 1, ...)")
shape = _unary("shape_of", "ONNX Shape: x's dims as a 1-D int64 tensor")
shape.__name__ = shape.__qualname__ = "shape"


def matmul(a, b):
    """matmul(a, b) -> Tensor: NumPy's matmul (batched, broadcast)."""
    return _gwr._f_binary("matmul", a, b)


def gemm(a, b, c=None, alpha=1.0, beta=1.0, trans_a=False, trans_b=False):
    """gemm(a, b, c=None, alpha=1.0, beta=1.0, trans_a=False, trans_b=False) -> Tensor: alpha*A'B' + beta*C."""
    return _gwr._f_gemm(a, b, c, float(alpha), float(beta), bool(trans_a), bool(trans_b))


def where(condition, x, y):
    """where(condition, x, y) -> Tensor: x where condition (bool) holds, else y; numbers become constants."""
    ref = x if isinstance(x, _gwr.Tensor) else y
    if _is_scalar(x):
        x = _scalar_like(x, ref)
    if _is_scalar(y):
        y = _scalar_like(y, ref)
    return _gwr._f_where(condition, x, y)


def leaky_relu(x, alpha=0.01):
    """leaky_relu(x, alpha=0.01) -> Tensor: x, or alpha*x below zero."""
    return _gwr._f_alpha("leaky_relu", x, float(alpha))


def elu(x, alpha=1.0):
    """elu(x, alpha=1.0) -> Tensor: x, or alpha*(e**x - 1) below zero."""
    return _gwr._f_alpha("elu", x, float(alpha))


def gelu(x, approximate="none"):
    """gelu(x, approximate="none") -> Tensor: x * Phi(x) (erf form), or its "tanh" approximation."""
    return _gwr._f_gelu(x, approximate)


def softmax(x, axis=-1):
    """softmax(x, axis=-1) -> Tensor: e**x normalized along axis."""
    return _gwr._f_softmax(x, int(axis))


def layer_norm(x, scale, bias=None, axis=-1, epsilon=1e-5):
    """layer_norm(x, scale, bias=None, axis=-1, epsilon=1e-5) -> Tensor: normalized over axis.. last, then scaled."""
    return _gwr._f_layer_norm(x, scale, bias, int(axis), float(epsilon))


def reshape(x, shape):
    """reshape(x, shape) -> Tensor: ONNX Reshape (0 copies x's dim, one -1 is inferred)."""
    return _gwr._f_reshape(x, list(shape))


def transpose(x, perm=None):
    """transpose(x, perm=None) -> Tensor: axes permuted (None: reversed)."""
    return _gwr._f_ints("transpose", x, None if perm is None else list(perm))


def squeeze(x, axes=None):
    """squeeze(x, axes=None) -> Tensor: drops the given size-1 axes (None: every dim known to be 1)."""
    return _gwr._f_ints("squeeze", x, _axes(axes))


def unsqueeze(x, axes):
    """unsqueeze(x, axes) -> Tensor: inserts size-1 axes at the given output positions."""
    return _gwr._f_ints("unsqueeze", x, _axes(axes))


def expand(x, shape):
    """expand(x, shape) -> Tensor: broadcast to shape (ONNX Expand)."""
    return _gwr._f_ints("expand", x, list(shape))


def _axes(axes):
    """None, an int or a sequence of ints as None or a list."""
    if axes is None:
        return None
    if isinstance(axes, numbers.Integral):
        return [int(axes)]
    return list(axes)


def concat(xs, axis=0):
    """concat(xs, axis=0) -> Tensor: the tensors of xs joined along axis."""
    return _gwr._f_concat(list(xs), int(axis))


def split(x, axis, n_or_sizes):
    """split(x, axis, n | sizes) -> list[Tensor]: n equal parts, or parts of the given sizes, along axis."""
    if isinstance(n_or_sizes, numbers.Integral):
        return _gwr._f_split(x, int(axis), int(n_or_sizes), None)
    sizes = list(n_or_sizes)
    return _gwr._f_split(x, int(axis), len(sizes), sizes)


def slice(x, starts, ends, axes=None, steps=None):
    """slice(x, starts, ends, axes=None, steps=None) -> Tensor: ONNX Slice (axes default 0.., steps 1)."""
    return _gwr._f_slice(x, list(starts), list(ends), None if axes is None else list(axes),
                         None if steps is None else list(steps))


def gather(x, indices, axis=0):
    """gather(x, indices, axis=0) -> Tensor: ONNX Gather (indices a Tensor, or ints made a constant)."""
    if not isinstance(indices, _gwr.Tensor):
        indices = constant(np.asarray(indices, dtype=np.int64), network=x.network)
    return _gwr._f_gather(x, indices, int(axis))


def cast(x, dtype):
    """cast(x, dtype) -> Tensor: x converted to dtype (any gwr dtype spelling)."""
    return _gwr._f_cast(x, dtype)


def conv(x, weight, bias=None, strides=None, pads=None, dilations=None, group=1, auto_pad=None):
    """conv(x, weight, bias=None, strides=None, pads=None, dilations=None, group=1, auto_pad=None) -> Tensor.

    ONNX Conv over x's spatial dims; pads lists all begins then all ends."""
    return _gwr._f_conv(x, weight, bias, strides, pads, dilations, int(group), auto_pad)


def _reduce(name):
    """A reduction builder calling gwr's of that name."""
    def f(x, axes=None, keepdims=True):
        return _gwr._f_reduce(name, x, _axes(axes), bool(keepdims))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{name}(x, axes=None, keepdims=True) -> Tensor: ONNX {name} (axes None: all)."
    return f


reduce_sum, reduce_mean, reduce_max = (_reduce(n) for n in ("reduce_sum", "reduce_mean", "reduce_max"))


def op(op, inputs, attrs=None, domain="", noutputs=1):
    """op(op, inputs, attrs=None, domain="", noutputs=1) -> list[Tensor]: a layer of any op (gwr_op_call).

    inputs: Tensors (None for an absent optional one); attrs: a dict of int, float, str and lists of
    them. An op gwr does not know becomes a PLUGIN-class layer (unknown output shapes)."""
    return _gwr._f_op(op, list(inputs), attrs, domain, int(noutputs))


def call(kind, **args):
    """call(kind, **args) -> tuple[Tensor] | Tensor: runs a registered functional (gwr_call), recording its
    FLayerInfo on the last layer it creates."""
    return _gwr._call(kind, args)


def gpt_attention(qkv, qkv_bias=None, attention_mask=None, num_heads=None, head_size=None, remove_padding=0):
    """gpt_attention(qkv, qkv_bias=None, attention_mask=None, num_heads, head_size, remove_padding=0)
    -> (context, present): a GPTAttention plugin layer (domain "gwr") with its FLayerInfo recorded.

    qkv: (batch, seq, 3*hidden), or (1, tokens, 3*hidden) with remove_padding=1."""
    if num_heads is None or head_size is None:
        raise TypeError("gpt_attention: num_heads and head_size are required")
    args = dict(qkv=qkv, qkv_bias=qkv_bias, attention_mask=attention_mask, num_heads=int(num_heads),
                head_size=int(head_size), remove_padding=int(remove_padding))
    return tuple(_gwr._call("gpt_attention", args))


def build_gpt(network, blocks, hidden=64, heads=4, ffn=0, use_plugin=True, share_weights=False, seed=0):
    """build_gpt(network, blocks, hidden=64, heads=4, ffn=0, use_plugin=True, share_weights=False, seed=0) -> Tensor.

    A GPT-style decoder of `blocks` pre-LayerNorm transformer blocks built into `network` (which should
    be empty), over an input "x" of float32[batch, seq, hidden] ("batch" and "seq" symbolic), output
    "y" (returned). Attention is the GPTAttention plugin through the recorded gpt_attention functional
    when use_plugin, else plain ONNX ops (so the network exports and runs anywhere). ffn 0 means
    4*hidden; weights are deterministic pseudo-random values from seed, shared between blocks with
    share_weights. The model generator of gwr's demo and benchmarks (gwr_build_gpt)."""
    return _gwr._build_gpt(network, int(blocks), int(hidden), int(heads), int(ffn), bool(use_plugin),
                           bool(share_weights), int(seed))


def register_plugin(domain, type, noutputs, infer):
    """register_plugin(domain, type, noutputs, infer)

    Registers a plugin kind, process-wide (TensorRT's plugin registry): layers of op `type` in
    `domain` get their output types from `infer(inputs, fields)`, called with a list of
    (gwr.DataType, shape) per input slot (None for an absent one; shapes as Tensor.shape gives
    them) and the layer's attributes, and returning one (dtype, shape) pair per output. It is
    called wherever gwr infers types: plugin() below, gwr.functional.op, gwr.onnx.load with
    infer_shapes, the passes. An exception raised by it is reported as the layer's failure
    (the status of a gwr.Error, else InvalidArgumentError), with its text. A kind cannot be
    registered twice (DuplicateError) and stays registered for the process's life. gwr's
    executor has no kernel for such plugins: a Session refuses the network, naming the layer."""
    _gwr._register_plugin(domain, type, int(noutputs), infer)


def plugin(domain, type, inputs, fields=None, name=None):
    """plugin(domain, type, inputs, fields=None, name=None) -> tuple of Tensors

    A layer of a registered plugin kind (register_plugin, or gwr's own "gwr" plugins) reading
    `inputs` (Tensors, None for an absent slot), with `fields` (a dict) as its attributes. The
    outputs are typed by the kind's infer function; NotFoundError for a kind not registered."""
    return _gwr._plugin(domain, type, list(inputs), fields, name)
