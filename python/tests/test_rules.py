"""Tests of gwr.rules: Python pattern/replacement functions traced into the
.rules language (the expected texts are written by hand from SPEC/docs/rules.md),
compiled by the C parser and run by the C matcher."""

import pytest

import gwr
import gwr.rules as R


def text_of(name, pattern, replacement, **kw):
    return R.rule(name, pattern, replacement, **kw).text


# ---- tracing: the text of each feature, written out by hand ---------------------


def test_matmul_add_to_gemm_text():
    def pattern(op, x, w, b):
        return op.Add(op.MatMul(x, w), b)

    def replacement(op, x, w, b):
        return op.Gemm(x, w, b)

    assert text_of("matmul_add", pattern, replacement, benefit=10,
                   constraints={"x": R.constraint(rank=2), "w": R.const(rank=2), "b": R.const(rank=1)}) == (
        "rule matmul_add benefit 10:\n"
        "  Add(MatMul(x: rank 2, w: const rank 2), b: const rank 1)  =>  Gemm(x, w, b)\n")


def test_the_two_rules_of_the_issue():
    # SPEC.md's two rules, written as functions, give its text (tolerance
    # spelled 0.0001, Python's repr of 1e-4).
    def gelu(op, x, c):
        return op.Mul(op.Mul(x, 0.5), op.Add(op.Erf(op.Div(x, c)), 1.0))

    assert text_of("gelu_erf", gelu, lambda op, x: op.Gelu(x), benefit=20,
                   constraints={"c": R.approx(1.4142135, tol=1e-4)}) == (
        "rule gelu_erf benefit 20:\n"
        "  Mul(Mul(x, 0.5), Add(Erf(Div(x, c ~ 1.4142135 tol 0.0001)), 1.0))  =>  Gelu(x)\n")

    def tt(op, x, p1, p2):
        return op.Transpose(op.Transpose(x, perm=p1), perm=p2)

    def t(op, x, p1, p2):
        return op.Transpose(x, perm=R.compose(p1, p2))

    assert text_of("fold_transposes", tt, t) == (
        "rule fold_transposes:\n"
        "  Transpose<perm=p2>(Transpose<perm=p1>(x))  =>  Transpose<perm=compose(p1, p2)>(x)\n")


def test_attributes_domains_outputs_header():
    def pattern(op, x, w, a):
        s = op.Split(x, axis=a, _outputs=3, _name="s")
        return op.FusedConv(s[2], w, activation="Relu", alpha=0.5, pads=[1, 1, 1, 1], group=R.ABSENT,
                            _domain="com.microsoft")

    def replacement(op, x, w, s):
        return op.Conv(x, w, _copy=s, axis=s.axis + 1, pads=[0, 0])

    assert text_of("r1", pattern, replacement, phase="fuse", target=["ort", "gwr"], opset=13, tol=1e-3) == (
        "rule r1 phase fuse target ort,gwr opset 13 tol 0.001:\n"
        "  com.microsoft::FusedConv<activation=\"Relu\", alpha=0.5, pads=[1, 1, 1, 1], group=!>"
        "(s@Split<axis=a>(x)[2], w)  =>  Conv<...s, axis=s.axis + 1, pads=[0, 0]>(x, w)\n")


def test_optional_variadic_absent_any_alternatives():
    def pattern(op, x, lo, hi):
        return op.any("Relu", "Sigmoid")(op.Clip(x, R.optional(lo), R.optional(hi)))

    assert text_of("clip_act", pattern, lambda op, x: op.Relu(x)) == (
        "rule clip_act:\n  Relu|Sigmoid(Clip(x, lo?, hi?))  =>  Relu(x)\n")

    def concat(op, xs, a):
        return op.Concat(R.variadic(xs), axis=R.attr(a, default=0))

    assert text_of("cc", concat, lambda op, xs, a: op.Concat(R.variadic(xs), axis=a)) == (
        "rule cc:\n  Concat<axis=a default 0>(xs...)  =>  Concat<axis=a>(xs...)\n")

    def drop(op, x):
        return op.Add(R.either(op.Dropout(x, None), op.Identity(x)), R.ANY)

    assert text_of("dr", drop, lambda op, x: x) == (
        "rule dr:\n  Add((Dropout(x, none) | Identity(x)), _)  =>  x\n")


def test_where_strings_functions_and_constant_expressions():
    def pattern(op, x, c, d):
        return op.Mul(op.Mul(x, c), d)

    def replacement(op, x, c, d):
        return op.Mul(x, R.sqrt(c * d) + 1.0)

    w = [lambda c, d: (R.numel(c) == 1) & (R.numel(d) == 1),
         "value(c) > 0",
         lambda x: [~(R.rank(x) < 2) | (R.dtype(x) == gwr.float16), R.shape(x)[-1] == 4]]
    assert text_of("mm", pattern, replacement, constraints={"c": R.const(), "d": "const f32|f16"}, where=w) == (
        "rule mm:\n"
        "  Mul(Mul(x, c: const), d: const f32|f16)  =>  Mul(x, sqrt(c * d) + 1.0)\n"
        "  where (numel(c) == 1) and (numel(d) == 1)\n"
        "  where value(c) > 0\n"
        "  where (not (rank(x) < 2)) or (dtype(x) == f16)\n"
        "  where shape(x)[-1] == 4\n")


def test_constraint_forms():
    assert R.constraint(dtype=("f32", gwr.float16), rank=(3, 4)).text == "f32|f16 rank 3..4"
    assert R.const(shape=["_", "n", 3]).text == "const shape [_, n, 3]"
    assert R.constraint(dtype="float").text == "float"
    with pytest.raises(ValueError, match="unknown dtype"):
        R.constraint(dtype="f33")


def test_inline_approx_and_reshape_concat_cast():
    def pattern(op, x, w):
        return op.Div(op.MatMul(x, w), R.approx(8.0, tol=1e-3))

    def replacement(op, x, w, k1):
        return op.MatMul(x, R.cast(R.reshape(R.concat([w / k1, w], 0), [-1, 4]), "f16"))

    assert text_of("sc", pattern, replacement) == (
        "rule sc:\n  Div(MatMul(x, w), k1 ~ 8.0 tol 0.001)  =>  "
        "MatMul(x, cast(reshape(concat([w / k1, w], 0), [-1, 4]), f16))\n")


def test_tracing_refusals():
    ok = lambda op, x: op.Relu(x)  # noqa: E731
    with pytest.raises(TypeError, match="and/or/not"):
        R.rule("r", ok, ok, where=lambda x: R.rank(x) == 2 and R.rank(x) == 3)
    with pytest.raises(ValueError, match="parameter q is not bound"):
        R.rule("r", ok, lambda op, q: op.Relu(q))
    with pytest.raises(ValueError, match="used as a tensor and as a attr|captures an attribute"):
        R.rule("r", lambda op, x: op.Transpose(x, perm=x), ok)
    with pytest.raises(ValueError, match="lowercase"):
        R.rule("r", lambda op, X: op.Relu(X), ok)
    with pytest.raises(ValueError, match="words of the language"):
        R.rule("r", lambda op, shape: op.Relu(shape), ok)
    with pytest.raises(ValueError, match="not a parameter"):
        R.rule("r", ok, ok, constraints={"y": R.const()})
    with pytest.raises(TypeError, match="must return a traced op"):
        R.rule("r", lambda op, x: x, ok)
    with pytest.raises(ValueError, match="one root"):
        R.rule("r", lambda op, x: op.Split(x, _outputs=2), ok)
    with pytest.raises(AttributeError, match="capital"):
        R.rule("r", lambda op, x: op.relu(x), ok)
    with pytest.raises(ValueError, match="identifier"):
        R.rule("not a name", ok, ok)
    with pytest.raises(ValueError, match="phase"):
        R.rule("r", ok, ok, phase="late")
