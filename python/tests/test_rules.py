"""Tests of gwr.rules: Python pattern/replacement functions traced into the
.rules language (the expected texts are written by hand from SPEC/docs/rules.md),
compiled by the C parser and run by the C matcher."""

import io

import pytest

import gwr
import gwr.rules as R


def text_of(name, pattern, replacement, **kw):
    """The traced text, after checking that the C parser takes it."""
    r = R.rule(name, pattern, replacement, **kw)
    assert R.RuleSet([r]).names == [name]
    return r.text


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

    def concat(op, x, xs, a):
        return op.Relu(op.Concat(x, R.variadic(xs), axis=R.attr(a, default=0)))

    assert text_of("cc", concat, lambda op, x: op.Relu(x), where=lambda xs, a: (R.length(xs) == 0) & (a == 0)) == (
        "rule cc:\n  Relu(Concat<axis=a default 0>(x, xs...))  =>  Relu(x)\n  where (len(xs) == 0) and (a == 0)\n")
    # the C parser takes a variadic name in the pattern only
    with pytest.raises(gwr.ParseError, match="belongs in the pattern"):
        R.RuleSet([R.rule("cc2", concat, lambda op, x, xs: op.Concat(x, R.variadic(xs)))])

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
    # a DAG: the C matcher refuses one layer for two ops, so the rule could never fire
    def shared(op, x):
        d = op.Sub(x, op.ReduceMean(x))
        return op.Div(d, op.Sqrt(op.ReduceMean(op.Mul(d, d))))
    with pytest.raises(ValueError, match="output of Sub is read twice"):
        R.rule("r", shared, ok)

    # ... but one value in two alternatives is two tables, each a tree
    def alts(op, x):
        t = op.Neg(x)
        return op.Abs(R.either(op.Relu(t), op.Sigmoid(t)))
    assert text_of("alts", alts, lambda op, x: op.Abs(x)) == (
        "rule alts:\n  Abs((Relu(Neg(x)) | Sigmoid(Neg(x))))  =>  Abs(x)\n")
    with pytest.raises(ValueError, match="phase"):
        R.rule("r", ok, ok, phase="late")


# ---- compiled by the C parser, run by the C matcher ------------------------------

import numpy as np  # noqa: E402

from gwr import functional as F  # noqa: E402


def gemm_rule(benefit=10, **kw):
    def pattern(op, x, w, b):
        return op.Add(op.MatMul(x, w), b)

    def replacement(op, x, w, b):
        return op.Gemm(x, w, b)

    cons = {"x": R.constraint(rank=2), "w": R.const(rank=2), "b": R.const(rank=1)}
    return R.rule("matmul_add", pattern, replacement, benefit=benefit, constraints=cons, **kw)


def linear_net(rank=2, const_b=True, extra_reader=False, mm_output=False, seed=0):
    """x [3, 4] (or [2, 3, 4]) @ w [4, 5] + b [5] -> y; w and b random constants."""
    rng = np.random.default_rng(seed)
    net = gwr.Network("linear")
    shape = (3, 4) if rank == 2 else (2, 3, 4)
    x = net.add_input("x", gwr.float32, shape)
    wv = rng.standard_normal((4, 5)).astype(np.float32)
    bv = rng.standard_normal(5).astype(np.float32)
    with gwr.net_guard(net):
        w = F.constant(wv)
        b = F.constant(bv) if const_b else net.add_input("b", gwr.float32, (5,))
        mm = F.matmul(x, w)
        y = F.add(mm, b)
        y.name = "y"
        net.mark_output(y)
        if extra_reader:
            z = F.relu(mm)
            z.name = "z"
            net.mark_output(z)
        if mm_output:
            mm.name = "mm"
            net.mark_output(mm)
    return net, wv, bv


def run(net, feeds):
    return gwr.Session(net, optimize="raw").run(feeds)


def test_python_rule_fires_and_keeps_outputs():
    rs = R.RuleSet([gemm_rule()])
    assert len(rs) == 1 and rs.names == ["matmul_add"]
    assert rs["matmul_add"].benefit == 10 and rs[0].name == "matmul_add"
    net, wv, bv = linear_net()
    xv = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    before = run(net, {"x": xv})["y"]
    m = gwr.RewritePatternManager()
    m.add_rules(rs)
    s = m.rewrite(net)
    assert s["rewrites"] == 1
    assert [l.op for l in net.layers if l.op != "Constant"] == ["Gemm"]
    after = run(net, {"x": xv})["y"]
    # numpy, in float64, is the reference for both
    ref = xv.astype(np.float64) @ wv + bv
    np.testing.assert_allclose(before, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(after, ref, rtol=1e-5, atol=1e-5)
    assert m.stats()["matmul_add"]["rewrites"] == 1
    assert m.get("matmul_add") is rs


@pytest.mark.parametrize("case", ["rank3", "b_not_const", "mm_two_readers", "mm_is_output"])
def test_python_rule_does_not_fire_where_it_must_not(case):
    kw = {"rank3": dict(rank=3), "b_not_const": dict(const_b=False),
          "mm_two_readers": dict(extra_reader=True), "mm_is_output": dict(mm_output=True)}[case]
    net, _, _ = linear_net(**kw)
    ops_before = sorted(l.op for l in net.layers)
    m = gwr.RewritePatternManager()
    m.add_rules(R.RuleSet([gemm_rule()]))
    assert m.rewrite(net)["rewrites"] == 0
    assert sorted(l.op for l in net.layers) == ops_before


def test_where_function_gates_the_rule():
    # rank(x) == 3 never holds for the 2-D linear: no rewrite.
    net, _, _ = linear_net()
    m = gwr.RewritePatternManager()
    m.add_rules(R.RuleSet([gemm_rule(where=lambda x: R.rank(x) == 3)]))
    assert m.rewrite(net)["rewrites"] == 0
    net, _, _ = linear_net()
    m = gwr.RewritePatternManager()
    m.add_rules(R.RuleSet([gemm_rule(where=lambda x, w: (R.rank(x) == 2) & (R.shape(w)[0] == 4))]))
    assert m.rewrite(net)["rewrites"] == 1


def test_one_rule_under_a_label_and_the_set_outlives_its_name():
    rs = R.RuleSet([gemm_rule(), "rule relu_relu:\n  Relu(Relu(x))  =>  Relu(x)\n"])
    assert rs.names == ["matmul_add", "relu_relu"]
    assert [(r.name, r.benefit, r.index) for r in rs] == [("matmul_add", 10, 0), ("relu_relu", 10, 1)]
    assert rs[-1].name == "relu_relu" and rs[-1].ruleset is rs
    with pytest.raises(IndexError):
        rs[2]
    with pytest.raises(KeyError):
        rs["nope"]
    m = gwr.RewritePatternManager()
    m.add("mine", rs["matmul_add"], 3)
    assert m.labels == ["mine"] and m.benefits == {"mine": 3}
    del rs
    net, _, _ = linear_net()
    assert m.rewrite(net)["rewrites"] == 1
    with pytest.raises(TypeError, match="add_rules"):
        m.add("all", R.RuleSet([gemm_rule()]))


def test_add_rules_refuses_a_taken_name_whole():
    m = gwr.RewritePatternManager()
    m.add_rules(R.RuleSet([gemm_rule()]))
    rs2 = R.RuleSet(["rule relu_relu:\n  Relu(Relu(x))  =>  Relu(x)\n", gemm_rule()])
    with pytest.raises(gwr.DuplicateError, match="matmul_add"):
        m.add_rules(rs2)
    assert m.labels == ["matmul_add"]


def test_load_text_and_file(tmp_path):
    text = "# two Relus\nrule relu_relu benefit 5:\n  Relu(Relu(x))  =>  Relu(x)\n"
    rs = R.load(text)
    assert rs.names == ["relu_relu"] and rs[0].benefit == 5
    p = tmp_path / "r.rules"
    p.write_text(text)
    rs2 = R.load(str(p))
    assert rs2.names == ["relu_relu"] and rs2.text == text
    with pytest.raises(gwr.FileError):
        R.load(str(tmp_path / "missing.rules"))
    bad = tmp_path / "bad.rules"
    bad.write_text("rule a:\n  Relu(x)  =>  Foo(x)\n")
    with pytest.raises(gwr.ParseError) as ei:
        R.load(bad)  # a PathLike too
    assert ei.value.message == "%s:2:16: unknown op 'Foo'\n  Relu(x)  =>  Foo(x)\n               ^" % bad


def caret_col(msg):
    """The column the caret line of a C message points at (1-based)."""
    lines = msg.split("\n")
    return lines[2].index("^") + 1


def test_bad_rules_raise_with_the_position():
    # An unknown op: the C parser's message, line 2 of the traced text (the
    # header is line 1), column of the op; the caret under it.
    r = R.rule("bad", lambda op, x: op.Relu(x), lambda op, x: op.NoSuchOp(x))
    with pytest.raises(gwr.ParseError) as ei:
        R.RuleSet([r])
    e = ei.value
    msg = e.message
    line2 = "  Relu(x)  =>  NoSuchOp(x)"
    assert msg.startswith("<gwr.rules>:2:%d: " % (line2.index("NoSuchOp") + 1)), msg
    assert msg.split("\n")[1] == line2
    assert caret_col(msg) == line2.index("NoSuchOp") + 1
    assert "NoSuchOp" in msg
    assert e.rule == "bad" and e.line == 2
    assert any("Python rule bad" in n for n in e.__notes__)
    assert isinstance(e, ValueError)


def test_bad_rule_in_the_middle_of_a_set_names_its_line():
    good = gemm_rule()
    bad = R.rule("arity", lambda op, x: op.Relu(x), lambda op, x: op.Relu(x, x))
    with pytest.raises(gwr.ParseError) as ei:
        R.RuleSet([good, "rule relu_relu:\n  Relu(Relu(x))  =>  Relu(x)\n", bad])
    # good: 2 lines, the text rule 2 lines: bad's pattern is line 6
    assert ei.value.message.startswith("<gwr.rules>:6:"), ei.value.message
    assert ei.value.rule == "arity"


def test_syntax_error_in_load_text_has_the_caret():
    with pytest.raises(gwr.ParseError) as ei:
        R.load("rule r:\n  Relu(x  =>  Relu(x)\n")
    msg = ei.value.message
    assert msg.startswith("<string>:2:"), msg
    assert msg.split("\n")[1] == "  Relu(x  =>  Relu(x)"


def test_optimize_runs_python_rules_with_the_passes():
    # With a benefit above the built-in fuse_matmul_add's (35) the rule takes
    # the layers first: the report lists it after the passes, and the outputs
    # stay (numpy reference).
    net, wv, bv = linear_net()
    xv = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    rep = gwr.optimize(net, rules=R.RuleSet([gemm_rule(benefit=100)]))
    assert rep["passes"][-1]["label"] == "matmul_add"
    assert (rep["passes"][-1]["matches"], rep["passes"][-1]["rewrites"]) == (1, 1)
    assert {p["label"]: p["rewrites"] for p in rep["passes"]}["fuse_matmul_add"] == 0
    assert "Gemm" in [l.op for l in net.layers]
    np.testing.assert_allclose(run(net, {"x": xv})["y"], xv.astype(np.float64) @ wv + bv, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="RuleSet"):
        gwr.optimize(linear_net()[0], rules=[gemm_rule()])
    # two sets joined into one; the same name twice is refused by the parser
    both = R.RuleSet([R.RuleSet([gemm_rule()]), R.load("rule relu_relu:\n  Relu(Relu(x))  =>  Relu(x)\n")])
    assert both.names == ["matmul_add", "relu_relu"]
    with pytest.raises(gwr.ParseError, match="matmul_add"):
        R.RuleSet([R.RuleSet([gemm_rule()]), gemm_rule()])
    # a rule named as a built-in pass: refused before anything runs
    net, _, _ = linear_net()
    clash = R.RuleSet([R.rule("fuse_matmul_add", lambda op, x: op.Relu(op.Relu(x)), lambda op, x: op.Relu(x))])
    with pytest.raises(gwr.DuplicateError):
        gwr.optimize(net, rules=clash)
    assert "MatMul" in [l.op for l in net.layers]


def test_optimize_rules_enter_if_bodies():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    def branch(name):
        return helper.make_graph(
            [helper.make_node("Relu", ["x"], [name + "_r1"]), helper.make_node("Relu", [name + "_r1"], [name + "_y"])],
            name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, [4])])

    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=branch("then"), else_branch=branch("else"))], "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    net = gwr.onnx.load_bytes(model.SerializeToString())
    rs = R.RuleSet([R.rule("relu_relu", lambda op, x: op.Relu(op.Relu(x)), lambda op, x: op.Relu(x))])
    rep = gwr.optimize(net, only="compose_transposes", rules=rs)
    assert rep["passes"][-1]["label"] == "relu_relu" and rep["passes"][-1]["rewrites"] == 2
    out = onnx.load_from_string(gwr.onnx.save_bytes(net))
    for b in ("then_branch", "else_branch"):
        body = [a.g for a in out.graph.node[0].attribute if a.name == b][0]
        assert [n.op_type for n in body.node] == ["Relu"]


def gelu_net(c=np.sqrt(2.0), opset=20):
    """x * 0.5 * (1 + erf(x / c)) as exporters write it; x [2, 8]."""
    net = gwr.Network("gelu")
    net.set_opset("", opset)
    x = net.add_input("x", gwr.float32, (2, 8))
    with gwr.net_guard(net):
        y = F.mul(F.mul(x, 0.5), F.add(F.erf(F.div(x, float(c))), 1.0))
    y.name = "y"
    net.mark_output(y)
    return net


def gelu_rule():
    def pattern(op, x, c):
        return op.Mul(op.Mul(x, 0.5), op.Add(op.Erf(op.Div(x, c)), 1.0))

    return R.rule("gelu_erf", pattern, lambda op, x: op.Gelu(x), benefit=20,
                  constraints={"c": R.approx(1.4142135, tol=1e-4)})


def test_issue_gelu_rule_from_python_fires_and_keeps_outputs():
    import math
    xv = np.linspace(-3, 3, 16, dtype=np.float32).reshape(2, 8)
    ref = np.array([[0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in row] for row in xv.astype(np.float64)])
    net = gelu_net()
    np.testing.assert_allclose(run(net, {"x": xv})["y"], ref, rtol=1e-5, atol=1e-6)
    m = gwr.RewritePatternManager()
    m.add_rules(R.RuleSet([gelu_rule()]))
    assert m.rewrite(net)["rewrites"] == 1
    assert [l.op for l in net.layers if l.op != "Constant"] == ["Gelu"]
    np.testing.assert_allclose(run(net, {"x": xv})["y"], ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["constant_off", "opset_17"])
def test_issue_gelu_rule_does_not_fire(case):
    net = gelu_net(c=1.5) if case == "constant_off" else gelu_net(opset=17)
    m = gwr.RewritePatternManager()
    m.add_rules(R.RuleSet([gelu_rule()]))
    out = io.StringIO()
    m.trace(out, failures=True)
    assert m.rewrite(net)["rewrites"] == 0
    assert "Gelu" not in [l.op for l in net.layers]
    if case == "opset_17":
        assert "Gelu is not in opset 17" in out.getvalue()
