"""gwr.rules: rewrite rules, as ``.rules`` text or as Python functions, run
by gwr's C matcher.

    >>> import gwr, gwr.rules as R
    >>> def pattern(op, x, w, b):
    ...     return op.Add(op.MatMul(x, w), b)
    >>> def replacement(op, x, w, b):
    ...     return op.Gemm(x, w, b)
    >>> r = R.rule("matmul_add", pattern, replacement, benefit=10,
    ...            constraints={"x": R.constraint(rank=2), "w": R.const(rank=2), "b": R.const(rank=1)})
    >>> r.text
    'rule matmul_add benefit 10:\\n  Add(MatMul(x: rank 2, w: const rank 2), b: const rank 1)  =>  Gemm(x, w, b)\\n'

A pattern function is called once, when the rule is made, with a recording
``op`` builder and one placeholder per parameter; what it returns is written
as the pattern side of a rule in the language of docs/rules.md. The
replacement function is called the same way for the right side. A
``RuleSet`` hands the text of all its rules to the C parser once: the rules
then match in C like rules loaded from a file (``gwr.rules.load``), and the
Python functions are never called again.

In a pattern or replacement function:

- ``op.Name(inputs..., attr=value, ...)``: an op of the default domain;
  ``_domain="com.microsoft"`` another domain; ``_outputs=n`` returns the n
  outputs of a multi-output op (``op.Split(x, _outputs=2)[1]``);
  ``_name="n"`` names the node (its attributes are ``n.attr`` in ``where``
  and in the replacement, and ``op.Conv(..., _copy=n)`` copies them all).
  ``op.any("Relu", "Sigmoid")(x)`` is either op; ``either(p1, p2)`` either
  sub-pattern.
- inputs: a parameter (a tensor; the same parameter twice is the same
  tensor), a Python number (a constant equal to it everywhere), ``None`` (the
  input must be absent), ``optional(x)`` (may be absent), ``variadic(xs)``
  (the rest of the inputs), ``ANY`` (any tensor), ``approx(v, tol)`` (a
  constant within tol of v).
- attribute values: a literal (int, float, str, list of them) is required;
  a parameter captures the attribute (``attr(p, default=...)`` with a
  default for an absent one); ``ABSENT`` requires it absent. In the
  replacement an attribute is any expression over captures:
  ``compose(p1, p2)``, ``inverse(p)``, ``length(p)``, ``p[0]``, arithmetic.
- constants computed by the replacement: arithmetic on bound constants
  (``c * 2.0``), ``sqrt``, ``reshape``, ``transpose``, ``concat``, ``cast``.

``where`` is an expression string of the language, or a function of bound
names returning a condition (or a list of them) built with ``rank``,
``dtype``, ``shape``, ``numel``, ``value``, ``is_const``, ``length``,
comparisons and ``&`` (and), ``|`` (or), ``~`` (not): Python's ``and``,
``or`` and ``not`` cannot be traced and raise TypeError.
"""

import inspect
import json
import math
import numbers
import os

from gwr import _gwr

__all__ = [
    "load", "rule", "Rule", "RuleSet",
    "constraint", "const", "approx", "optional", "variadic", "either", "attr", "ANY", "ABSENT",
    "rank", "dtype", "shape", "numel", "value", "is_const", "length",
    "compose", "inverse", "sqrt", "reshape", "transpose", "concat", "cast",
    "f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "boolean", "float_",
]

# Words of the language a binding may not be called (docs/rules.md).
_RESERVED = frozenset("""rule benefit phase target opset tol where and or not none const rank shape
default f32 f16 bf16 f64 i64 i32 i16 i8 u8 u16 u32 u64 bool float int""".split())


# ---- expressions: where clauses, attribute and constant expressions ---------


def _lit(v):
    """The text of a Python literal (number, str, list of them) in the language."""
    if isinstance(v, _Expr):
        return v._text(True)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        if not math.isfinite(f):
            raise ValueError("gwr.rules: a constant must be finite, not %r" % f)
        return repr(f)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_lit(e) for e in v) + "]"
    if hasattr(v, "tolist") and hasattr(v, "dtype"):  # numpy scalars and small arrays
        return _lit(v.tolist())
    raise TypeError("gwr.rules: cannot write %s as a constant or attribute value" % type(v).__name__)


def _expr(v):
    return v if isinstance(v, _Expr) else _Lit(v)


class _Expr:
    """An expression traced from Python operators. ``and``/``or``/``not``
    cannot be overloaded: use ``&``, ``|``, ``~``."""

    __hash__ = object.__hash__

    def _text(self, top=False):
        raise NotImplementedError

    def __str__(self):
        return self._text(True)

    def __repr__(self):
        return "<gwr.rules expression %s>" % self._text(True)

    def __bool__(self):
        raise TypeError("gwr.rules: %s is traced, it has no truth value here: combine conditions with "
                        "& (and), | (or), ~ (not), not Python's and/or/not or an if" % self._text(True))

    def _bin(self, o, sym, rev=False):
        a, b = (_expr(o), self) if rev else (self, _expr(o))
        return _Bin(sym, a, b)

    def __add__(self, o): return self._bin(o, "+")
    def __radd__(self, o): return self._bin(o, "+", True)
    def __sub__(self, o): return self._bin(o, "-")
    def __rsub__(self, o): return self._bin(o, "-", True)
    def __mul__(self, o): return self._bin(o, "*")
    def __rmul__(self, o): return self._bin(o, "*", True)
    def __truediv__(self, o): return self._bin(o, "/")
    def __rtruediv__(self, o): return self._bin(o, "/", True)
    def __neg__(self): return _Un("-", self)
    def __eq__(self, o): return self._bin(o, "==")
    def __ne__(self, o): return self._bin(o, "!=")
    def __lt__(self, o): return self._bin(o, "<")
    def __le__(self, o): return self._bin(o, "<=")
    def __gt__(self, o): return self._bin(o, ">")
    def __ge__(self, o): return self._bin(o, ">=")
    def __and__(self, o): return self._bin(o, "and")
    def __rand__(self, o): return self._bin(o, "and", True)
    def __or__(self, o): return self._bin(o, "or")
    def __ror__(self, o): return self._bin(o, "or", True)
    def __invert__(self): return _Un("not ", self)

    def __getitem__(self, i):
        return _Index(self, _expr(i))


class _Lit(_Expr):
    def __init__(self, v):
        _lit(v)  # refuses what cannot be written, now
        self.v = v

    def _text(self, top=False):
        return _lit(self.v)


class _Bin(_Expr):
    def __init__(self, sym, a, b):
        self.sym, self.a, self.b = sym, a, b

    def _text(self, top=False):
        t = "%s %s %s" % (self.a._text(), self.sym, self.b._text())
        return t if top else "(" + t + ")"


class _Un(_Expr):
    def __init__(self, sym, a):
        self.sym, self.a = sym, a

    def _text(self, top=False):
        t = self.sym + self.a._text()
        return t if top else "(" + t + ")"


class _Index(_Expr):
    def __init__(self, a, i):
        self.a, self.i = a, i

    def _text(self, top=False):
        return "%s[%s]" % (self.a._text(), self.i._text(True))


class _Call(_Expr):
    def __init__(self, fn, *args):
        self.fn, self.args = fn, [_expr(a) for a in args]

    def _text(self, top=False):
        return "%s(%s)" % (self.fn, ", ".join(a._text(True) for a in self.args))


class _Word(_Expr):
    """A bare word of the language: a dtype (f32) or a node's attribute (n.axis)."""

    def __init__(self, word):
        self.word = word

    def _text(self, top=False):
        return self.word


class _DtypeExpr(_Call):
    """dtype(x): compared with a str or a gwr.DataType, writes the dtype's word."""

    def _bin(self, o, sym, rev=False):
        if sym in ("==", "!=") and not isinstance(o, _Expr):
            o = _dtype_word(o)
        return _Expr._bin(self, o, sym, rev)


# The dtypes as the language writes them.
_DTYPE_WORDS = {
    "FLOAT32": "f32", "FLOAT16": "f16", "BFLOAT16": "bf16", "FLOAT64": "f64", "INT64": "i64",
    "INT32": "i32", "INT16": "i16", "INT8": "i8", "UINT8": "u8", "BOOL": "bool",
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool", "float": "float",
    "half": "f16", "double": "f64",
}


def _dtype_word(d):
    """'f32', gwr.float32, 'float32', numpy.float32 -> 'f32'."""
    if isinstance(d, _Word):
        return d
    if isinstance(d, str):
        w = d if d in _DTYPE_WORDS.values() else _DTYPE_WORDS.get(d)
    else:
        name = getattr(d, "name", None) or getattr(d, "__name__", None)
        w = _DTYPE_WORDS.get(name) if isinstance(name, str) else None
    if not w:
        raise ValueError("gwr.rules: unknown dtype %r (f32, f16, bf16, f64, i64, i32, i16, i8, u8, bool, "
                         "float or a gwr.DataType)" % (d,))
    return _Word(w)


f32, f16, bf16, f64 = (_Word(w) for w in ("f32", "f16", "bf16", "f64"))
i64, i32, i16, i8, u8 = (_Word(w) for w in ("i64", "i32", "i16", "i8", "u8"))
boolean = _Word("bool")
float_ = _Word("float")  # any real float


# where functions
def rank(x):
    """rank(x) in a where condition: the rank of bound tensor x."""
    return _Call("rank", x)


def dtype(x):
    """dtype(x): compare it with a dtype (f32, 'f16', gwr.float32): dtype(x) == f32."""
    return _DtypeExpr("dtype", x)


def shape(x):
    """shape(x): index it, shape(x)[-1] == shape(w)[0]."""
    return _Call("shape", x)


def numel(x):
    """numel(c): the number of elements of bound tensor c."""
    return _Call("numel", x)


def value(c):
    """value(c): the value of a one-element constant (in where conditions and attribute expressions)."""
    return _Call("value", c)


def is_const(x):
    """is_const(w): w is a constant."""
    return _Call("is_const", x)


def length(p):
    """len(p): the length of a captured list attribute (Python's len cannot be traced)."""
    return _Call("len", p)


# attribute expressions
def compose(p1, p2):
    """The permutation applying p1 then p2 (out[i] = p1[p2[i]])."""
    return _Call("compose", p1, p2)


def inverse(p):
    """The inverse permutation of a captured perm."""
    return _Call("inverse", p)


# constants computed at rewrite time
def sqrt(c):
    """A new constant: the square root of bound constant c, element by element."""
    return _Call("sqrt", c)


def reshape(c, shape_):
    """A new constant: bound constant c reshaped (a list of ints, -1 and 0 as Reshape's)."""
    return _Call("reshape", c, shape_)


def transpose(c, perm):
    """A new constant: bound constant c transposed by perm (a list, or a captured perm)."""
    return _Call("transpose", c, perm)


def cast(c, to):
    """A new constant: bound constant c converted to dtype to."""
    return _Call("cast", c, _dtype_word(to))


def concat(items, axis):
    """A new constant: bound constants concatenated along axis."""
    return _Call("concat", _List(items), axis)


class _List(_Expr):
    def __init__(self, items):
        self.items = [_expr(i) for i in items]

    def _text(self, top=False):
        return "[" + ", ".join(i._text(True) for i in self.items) + "]"


# ---- placeholders ----------------------------------------------------------------


class _Var(_Expr):
    """A parameter of a pattern function: a tensor where it is an input, an
    attribute capture where it is an attribute value."""

    def __init__(self, name):
        self.name = name
        self.kind = None  # "tensor" or "attr", set by the first use

    def _text(self, top=False):
        return self.name

    def __repr__(self):
        return "<gwr.rules %s %s>" % (self.kind or "placeholder", self.name)


class _Node(_Expr):
    """A named node (op.X(..., _name="n")): n.attr is its attribute."""

    def __init__(self, name):
        self.name = name

    def __getattr__(self, a):
        if a.startswith("__"):
            raise AttributeError(a)
        return _Word("%s.%s" % (self.name, a))

    def _text(self, top=False):
        return self.name


class _Wrap:
    """optional(x), variadic(xs), attr(p, default), approx(v, tol), ANY, ABSENT."""

    def __init__(self, kind, var=None, extra=None):
        self.kind, self.var, self.extra = kind, var, extra

    def __repr__(self):
        return "<gwr.rules %s>" % self.kind


ANY = _Wrap("any")
ABSENT = _Wrap("absent")


def optional(x):
    """An optional input: matches whether it is there or not (``Clip(x, lo?, hi?)``)."""
    return _Wrap("optional", x)


def variadic(xs):
    """The rest of the inputs (``Concat(xs...)``)."""
    return _Wrap("variadic", xs)


def attr(p, default=None):
    """Captures an attribute into p; with a default, an absent one binds the default."""
    return _Wrap("attr", p, default)


def approx(v, tol=None, name=None):
    """A constant every element of which is within tol of v (``c ~ v tol t``).
    As a constraint its name is the parameter's; used inline, name it or one is made."""
    return _Wrap("approx", name, (float(v), tol))


def either(*alternatives):
    """Either sub-pattern (``(P1 | P2)``)."""
    if len(alternatives) < 2:
        raise ValueError("either: give two or more alternatives")
    return _Either(alternatives)


class _Either:
    def __init__(self, alts):
        self.alts = alts


class _Constraint:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return "<gwr.rules constraint %s>" % self.text


def constraint(dtype=None, rank=None, shape=None, const=False):
    """A constraint on a bound tensor: dtype (one, or a tuple of alternatives;
    'float' is any real float), rank (an int, or a (lo, hi) pair), shape (a
    list of ints, dim names that bind, and '_'), const (a constant)."""
    parts = []
    if const:
        parts.append("const")
    if dtype is not None:
        ds = dtype if isinstance(dtype, (tuple, list, set, frozenset)) else (dtype,)
        parts.append("|".join(_dtype_word(d).word for d in ds))
    if rank is not None:
        if isinstance(rank, (tuple, list)):
            lo, hi = rank
            parts.append("rank %d..%d" % (lo, hi))
        else:
            parts.append("rank %d" % rank)
    if shape is not None:
        dims = []
        for d in shape:
            if isinstance(d, str):
                if not d.isidentifier():
                    raise ValueError("constraint: dim name %r is not an identifier" % d)
                dims.append(d)
            else:
                dims.append(str(int(d)))
        parts.append("shape [" + ", ".join(dims) + "]")
    if not parts:
        raise ValueError("constraint: give dtype, rank, shape or const")
    return _Constraint(" ".join(parts))


def const(dtype=None, rank=None, shape=None):
    """A constant tensor (constraint(const=True, ...))."""
    return constraint(dtype, rank, shape, const=True)


# ---- the recording op builder -------------------------------------------------


class _OpNode:
    def __init__(self, op, domain, inputs, attrs, nout, name, copy):
        self.op, self.domain, self.inputs, self.attrs = op, domain, inputs, attrs
        self.nout, self.name, self.copy = nout, name, copy


class _Value:
    """An output of a recorded op."""

    def __init__(self, node, index):
        self.node, self.index = node, index

    def __repr__(self):
        return "<gwr.rules value of %s>" % self.node.op

    def __bool__(self):
        raise TypeError("gwr.rules: a traced value has no truth value")


class _OpBuilder:
    """The ``op`` of a pattern or replacement function: ``op.Name(...)``
    records a node."""

    def __init__(self, side):
        self._side = side

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if not (name[:1].isupper() or "|" in name):
            raise AttributeError("op.%s: ONNX ops start with a capital letter (op.%s)" % (name, name.capitalize()))
        return lambda *inputs, **kw: self._make(name, inputs, kw)

    def any(self, *names):  # noqa: A003
        """Either of the ops: ``op.any("Relu", "Sigmoid")(x)``."""
        if self._side != "pattern":
            raise TypeError("op.any: alternatives are for the pattern side")
        if len(names) < 2 or not all(isinstance(n, str) and n[:1].isupper() for n in names):
            raise ValueError("op.any: give two or more op names")
        return lambda *inputs, **kw: self._make("|".join(names), inputs, kw)

    def _make(self, name, inputs, kw):
        domain = kw.pop("_domain", None)
        nout = kw.pop("_outputs", 1)
        nname = kw.pop("_name", None)
        copy = kw.pop("_copy", None)
        for k in kw:
            if k.startswith("_"):
                raise TypeError("op.%s: unknown option %s (_domain, _outputs, _name, _copy)" % (name, k))
        if domain is not None and not isinstance(domain, str):
            raise TypeError("op.%s: _domain must be a str" % name)
        if not isinstance(nout, int) or isinstance(nout, bool) or nout < 1:
            raise ValueError("op.%s: _outputs must be an int >= 1" % name)
        if nname is not None:
            if self._side != "pattern":
                raise TypeError("op.%s: _name names a node of the pattern" % name)
            if not isinstance(nname, str) or not nname.isidentifier() or not nname[:1].islower():
                raise ValueError("op.%s: _name must be a lowercase identifier, not %r" % (name, nname))
        if copy is not None:
            if self._side != "replacement":
                raise TypeError("op.%s: _copy copies a matched node's attributes in the replacement" % name)
            if not isinstance(copy, _Node):
                raise TypeError("op.%s: _copy must be a node named with _name in the pattern" % name)
        node = _OpNode(name, domain or "", list(inputs), kw, nout, nname, copy)
        if nout == 1:
            return _Value(node, None)
        return tuple(_Value(node, i) for i in range(nout))


# ---- tracing ----------------------------------------------------------------


def _where_from(fn):
    try:
        f = inspect.getsourcefile(fn)
        _, line = inspect.getsourcelines(fn)
        return "%s:%d" % (os.path.basename(f), line)
    except (TypeError, OSError):
        return getattr(fn, "__qualname__", "?")


class _Writer:
    """Writes one side of a rule as text, keeping what it binds."""

    def __init__(self, side, rule_name, constraints, taken):
        self.side, self.rule = side, rule_name
        self.constraints = constraints  # name -> text (pattern side)
        self.constrained = set()
        self.taken = taken  # names in use (for made-up constant names)
        self.bound = {}  # name -> "tensor" | "attr" | "node" | "const"
        self.nodes = {}  # node name -> _Node
        self.written = set()  # id() of the pattern's op nodes written so far

    def err(self, msg, exc=ValueError):
        return exc("rule %s (%s): %s" % (self.rule, self.side, msg))

    def fresh(self, base):
        i = 1
        while "%s%d" % (base, i) in self.taken:
            i += 1
        n = "%s%d" % (base, i)
        self.taken.add(n)
        return n

    def bind(self, name, kind):
        old = self.bound.get(name)
        if old and old != kind:
            raise self.err("%s is used as a %s and as a %s" % (name, old, kind))
        self.bound[name] = kind

    def tensor_var(self, v):
        if v.kind == "attr":
            raise self.err("%s captures an attribute; it cannot also be an input" % v.name)
        v.kind = "tensor"
        if self.side == "replacement":
            return v.name
        self.bind(v.name, "tensor")
        c = self.constraints.get(v.name)
        if c is not None and v.name not in self.constrained:
            self.constrained.add(v.name)
            if isinstance(c, _Wrap):  # approx
                self.bound[v.name] = "const"
                return self.approx_text(v.name, c)
            return "%s: %s" % (v.name, c)
        return v.name

    def approx_text(self, name, w):
        val, tol = w.extra
        t = "%s ~ %s" % (name, _lit(val))
        if tol is not None:
            t += " tol %s" % _lit(float(tol))
        return t

    def input(self, a):
        if a is None:
            return "none"
        if isinstance(a, _Value):
            return self.value(a)
        if isinstance(a, _Var):
            return self.tensor_var(a)
        if isinstance(a, _Wrap):
            if a.kind == "any":
                if self.side != "pattern":
                    raise self.err("ANY is for the pattern side")
                return "_"
            if a.kind in ("optional", "variadic"):
                if not isinstance(a.var, _Var):
                    raise self.err("%s() takes a parameter of the function" % a.kind, TypeError)
                t = self.tensor_var(a.var)
                if a.kind == "variadic":
                    return t + "..."
                return t + "?" if self.side == "pattern" else t
            if a.kind == "approx":
                if self.side != "pattern":
                    raise self.err("approx() is for the pattern side")
                name = a.var or self.fresh("k")
                if not name.isidentifier() or not name[:1].islower():
                    raise self.err("approx: name must be a lowercase identifier, not %r" % name)
                self.bind(name, "const")
                self.taken.add(name)
                return self.approx_text(name, a)
            raise self.err("%s is not an input" % a.kind, TypeError)
        if isinstance(a, _Either):
            if self.side != "pattern":
                raise self.err("either() is for the pattern side")
            # each alternative is a table of its own: a value may appear in several
            before, texts, after = set(self.written), [], set()
            for x in a.alts:
                self.written = set(before)
                texts.append(self.input(x))
                after |= self.written
            self.written = after
            return "(" + " | ".join(texts) + ")"
        if isinstance(a, _Node):
            raise self.err("node %s is not a tensor: name the output (op.X(..., _name=...)) and use the value"
                           % a.name, TypeError)
        if isinstance(a, _Expr):
            if self.side == "pattern":
                raise self.err("an expression (%s) as an input: the pattern side takes parameters, ops and "
                               "numbers" % a._text(True), TypeError)
            return a._text(True)
        if isinstance(a, (numbers.Real, list, tuple)) or hasattr(a, "dtype"):
            if isinstance(a, (list, tuple)) and self.side == "pattern":
                raise self.err("a list as an input: give a number (a constant equal to it)", TypeError)
            return _lit(a)
        raise self.err("cannot use %s as an input" % type(a).__name__, TypeError)

    def attr(self, k, v):
        if self.side == "pattern":
            if isinstance(v, _Var):
                if v.kind == "tensor":
                    raise self.err("%s is an input; it cannot also capture attribute %s" % (v.name, k))
                v.kind = "attr"
                self.bind(v.name, "attr")
                return "%s=%s" % (k, v.name)
            if isinstance(v, _Wrap) and v.kind == "absent":
                return "%s=!" % k
            if isinstance(v, _Wrap) and v.kind == "attr":
                if not isinstance(v.var, _Var):
                    raise self.err("attr() takes a parameter of the function", TypeError)
                v.var.kind = "attr"
                self.bind(v.var.name, "attr")
                if v.extra is None:
                    return "%s=%s" % (k, v.var.name)
                return "%s=%s default %s" % (k, v.var.name, _lit(v.extra))
            if isinstance(v, (_Expr, _Wrap, _Value)):
                raise self.err("attribute %s: the pattern takes a literal, a parameter (a capture), attr(p, "
                               "default) or ABSENT" % k, TypeError)
            return "%s=%s" % (k, _lit(v))
        if isinstance(v, (_Wrap, _Value)):
            raise self.err("attribute %s: the replacement takes a literal or an expression" % k, TypeError)
        return "%s=%s" % (k, _lit(v))

    def value(self, val):
        n = val.node
        if self.side == "pattern":
            if id(n) in self.written:
                raise self.err("the output of %s is read twice; the rule language matches a pattern as a tree, "
                               "and one layer cannot match two of its ops, so this rule could never fire "
                               "(a shared sub-pattern, as the centred input of a LayerNorm chain, is not "
                               "expressible yet)" % n.op)
            self.written.add(id(n))
        head = n.op
        if n.domain:
            head = "%s::%s" % (n.domain, head)
        if n.name:
            if n.name in self.nodes and self.nodes[n.name] is not n:
                raise self.err("two nodes are named %s" % n.name)
            self.bind(n.name, "node")
            self.nodes[n.name] = n
            head = "%s@%s" % (n.name, head)
        attrs = []
        if n.copy is not None:
            attrs.append("..." + n.copy.name)
        attrs += [self.attr(k, v) for k, v in n.attrs.items()]
        t = head
        if attrs:
            t += "<" + ", ".join(attrs) + ">"
        t += "(" + ", ".join(self.input(a) for a in n.inputs) + ")"
        if val.index is not None:
            t += "[%d]" % val.index
        return t

    def result(self, r):
        if isinstance(r, (list, tuple)):
            if len(r) != 1:
                raise self.err("returns %d values; a rule has one root (select an output: "
                               "op.X(..., _outputs=n)[i])" % len(r))
            r = r[0]
        if isinstance(r, _Value):
            return self.value(r)
        if self.side == "replacement":
            if isinstance(r, _Var):
                return r.name
            if isinstance(r, (_Expr, numbers.Real)):
                return _lit(r)
        raise self.err("must return a traced op (op.Name(...))%s, not %r"
                       % (" or a bound name" if self.side == "replacement" else "", r), TypeError)


def _params(fn, what):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise TypeError("%s: %r is not a function" % (what, fn))
    ps = list(sig.parameters.values())
    return ps


def _call_with(fn, what, first, available, rule_name):
    """Calls fn(first, name=placeholder...) for the names fn declares (all of
    them for **kwargs)."""
    ps = _params(fn, what)
    args, kwargs = [], {}
    rest = ps
    if first is not None:
        if not ps or ps[0].kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            raise TypeError("rule %s: the %s function's first parameter is op" % (rule_name, what))
        args.append(first)
        rest = ps[1:]
    for p in rest:
        if p.kind == inspect.Parameter.VAR_KEYWORD:
            for k, v in available.items():
                if k not in kwargs:
                    kwargs[k] = v
        elif p.kind == inspect.Parameter.VAR_POSITIONAL:
            raise TypeError("rule %s: the %s function cannot take *%s" % (rule_name, what, p.name))
        elif p.name in available:
            kwargs[p.name] = available[p.name]
        elif p.default is inspect.Parameter.empty:
            raise ValueError("rule %s: the %s function's parameter %s is not bound by the pattern (bound: %s)"
                             % (rule_name, what, p.name, ", ".join(sorted(available)) or "nothing"))
    return fn(*args, **kwargs)


class Rule:
    """One rule: its name, options and the text traced from its functions (``.text``)."""

    def __init__(self, name, text, origin=None):
        """Made by gwr.rules.rule(); origin: where its pattern and replacement functions are defined."""
        self.name, self.text, self.origin = name, text, origin

    def __repr__(self):
        return "<gwr.rules.Rule %s>" % self.name

    def __str__(self):
        return self.text


_PHASES = ("cleanup", "fold", "fuse", "lower")
_TARGETS = ("onnx", "ort", "gwr")


def rule(name, pattern, replacement, benefit=None, *, where=None, constraints=None, phase=None, target=None,
         opset=None, tol=None):
    """A rule from a pattern function and a replacement function (traced now).

    name: an identifier. benefit: higher is tried first. where: a condition
    string of the language, a function of bound names returning a traced
    condition, or a list of them. constraints: {parameter: constraint(...) |
    const(...) | approx(v, tol) | "text"}, written where the parameter first
    appears. phase ('cleanup', 'fold', 'fuse', 'lower'), target ('onnx', 'ort',
    'gwr' or a list), opset (the least default-domain opset), tol (the rule's
    declared numeric tolerance, for ``gwr rules check``)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError("rule: the name must be an identifier, not %r" % (name,))
    head = "rule " + name
    if benefit is not None:
        head += " benefit %d" % _int(benefit, "benefit")
    if phase is not None:
        if phase not in _PHASES:
            raise ValueError("rule %s: phase must be one of %s, not %r" % (name, ", ".join(_PHASES), phase))
        head += " phase " + phase
    if target is not None:
        ts = [target] if isinstance(target, str) else list(target)
        for t in ts:
            if t not in _TARGETS:
                raise ValueError("rule %s: target must be among %s, not %r" % (name, ", ".join(_TARGETS), t))
        head += " target " + ",".join(ts)
    if opset is not None:
        head += " opset %d" % _int(opset, "opset")
    if tol is not None:
        head += " tol " + _lit(float(tol))

    cons = {}
    for k, c in (constraints or {}).items():
        if isinstance(c, _Constraint):
            cons[k] = c.text
        elif isinstance(c, str):
            cons[k] = c
        elif isinstance(c, _Wrap) and c.kind == "approx":
            cons[k] = c
        else:
            raise TypeError("rule %s: constraints[%r] must be constraint(...), const(...), approx(...) or a str"
                            % (name, k))

    # The pattern.
    ps = _params(pattern, "pattern")
    if not ps:
        raise TypeError("rule %s: the pattern function's first parameter is op" % name)
    placeholders = {}
    for p in ps[1:]:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError("rule %s: the pattern function cannot take *args or **kwargs" % name)
        if not p.name[:1].islower() or p.name in _RESERVED:
            raise ValueError("rule %s: pattern parameter %s: bound names are lowercase identifiers and not "
                             "words of the language (%s)" % (name, p.name, ", ".join(sorted(_RESERVED))))
        placeholders[p.name] = _Var(p.name)
    for k in cons:
        if k not in placeholders:
            raise ValueError("rule %s: constraints name %s, which is not a parameter of the pattern" % (name, k))
    pw = _Writer("pattern", name, cons, set(placeholders))
    ptext = pw.result(_call_with(pattern, "pattern", _OpBuilder("pattern"), placeholders, name))
    for k in cons:
        if k not in pw.constrained:
            raise ValueError("rule %s: constraint on %s, which the pattern does not use as an input" % (name, k))

    bound = {}
    for k, kind in pw.bound.items():
        if kind == "node":
            bound[k] = _Node(k)
        else:
            bound[k] = placeholders[k] if k in placeholders else _Var(k)

    # The replacement.
    rw = _Writer("replacement", name, {}, set(pw.taken))
    rtext = rw.result(_call_with(replacement, "replacement", _OpBuilder("replacement"), bound, name))

    text = "%s:\n  %s  =>  %s\n" % (head, ptext, rtext)
    for w in ([] if where is None else where if isinstance(where, (list, tuple)) else [where]):
        for cond in _where_texts(w, bound, name):
            text += "  where %s\n" % cond
    return Rule(name, text, (_where_from(pattern), _where_from(replacement)))


def _int(v, what):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("rule: %s must be an int, not %r" % (what, v))
    return int(v)


def _where_texts(w, bound, name):
    if isinstance(w, str):
        if "\n" in w:
            raise ValueError("rule %s: a where string is one line" % name)
        return [w.strip()]
    if callable(w):
        r = _call_with(w, "where", None, bound, name)
        rs = r if isinstance(r, (list, tuple)) else [r]
        out = []
        for c in rs:
            if not isinstance(c, _Expr):
                raise TypeError("rule %s: the where function must return traced conditions (rank(x) == 2, ...), "
                                "not %r" % (name, c))
            out.append(c._text(True))
        return out
    raise TypeError("rule %s: where must be a str, a function or a list of them" % name)


# ---- rule sets ----------------------------------------------------------------

_RuleSetBase = getattr(_gwr, "RuleSet", object)


class RuleSet(_RuleSetBase):
    """Rules compiled once by gwr's C parser into its matcher.

    ``RuleSet([rule(...), "rule r2: ... => ...", other_set, ...])``: Rule
    objects, chunks of ``.rules`` text and other RuleSets (their text), in
    order. ``.text`` is the whole text handed
    to the parser, ``.names`` the rules' names, ``len()`` their number.
    ``manager.add(label, ruleset)`` adds every rule to a
    RewritePatternManager under its own name and benefit;
    ``gwr.optimize(net, rules=ruleset)`` runs them with the built-in passes.
    A rule the parser refuses raises gwr.ParseError (a ValueError) with its
    message (file:line:col, the line and a caret), with a note naming the
    Python rule and its functions."""

    def __init__(self, rules=(), *, filename=None):
        """rules: Rule objects and .rules text, in order; filename: the name errors give the text."""
        parts, spans, line = [], [], 1
        if isinstance(rules, (Rule, str)):
            rules = [rules]
        for r in rules:
            if isinstance(r, Rule):
                t = r.text
            elif isinstance(r, str):
                t = r if r.endswith("\n") else r + "\n"
            elif isinstance(r, RuleSet):
                t = r.text if r.text.endswith("\n") or not r.text else r.text + "\n"
            else:
                raise TypeError("RuleSet: give Rule objects (gwr.rules.rule), .rules text and RuleSets, not %s"
                                % type(r).__name__)
            n = t.count("\n")
            spans.append((line, line + n - 1, r))
            parts.append(t)
            line += n
        self.text = "".join(parts)
        self._spans = spans
        self.filename = filename or "<gwr.rules>"
        if _RuleSetBase is object:
            raise NotImplementedError("gwr.rules: this gwr._gwr has no rules engine")
        try:
            self._compile(self.text, self.filename)
        except _gwr.Error as e:
            self._note(e)
            raise

    def _note(self, e):
        """Names the Python rule an error's line falls in."""
        msg = getattr(e, "message", None) or str(e)
        prefix = self.filename + ":"
        if not msg.startswith(prefix):
            return
        try:
            ln = int(msg[len(prefix):].split(":", 1)[0])
        except ValueError:
            return
        e.line = ln
        for lo, hi, r in self._spans:
            if lo <= ln <= hi and isinstance(r, Rule):
                e.rule = r.name
                if r.origin:
                    e.add_note("in Python rule %s (pattern %s, replacement %s); RuleSet.text has the traced text"
                               % (r.name, r.origin[0], r.origin[1]))

    def __repr__(self):
        return "<gwr.rules.RuleSet of %d rules>" % len(self)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def load(path_or_text):
    """A RuleSet from a .rules file, or from text (a str with a newline or
    '=>', as gwr_rules_load decides)."""
    if not isinstance(path_or_text, (str, os.PathLike)):
        raise TypeError("load: give a path or .rules text, not %s" % type(path_or_text).__name__)
    s = os.fspath(path_or_text)
    if isinstance(path_or_text, str) and ("\n" in s or "=>" in s):
        return RuleSet([s], filename="<string>")
    # The C library reads the file (gwr_rules_parse_file): its messages name the path.
    rs = RuleSet.__new__(RuleSet)
    rs._spans, rs.filename = [], s
    rs._compile_file(s)
    with open(s, encoding="utf-8", errors="replace") as f:
        rs.text = f.read()
    return rs
