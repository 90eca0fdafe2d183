"""Tests of gwr's pattern side: PatternRewriter/PatternAnalyzer subclasses,
the two managers, built-in passes (gwr.passes) and gwr.optimize."""

import _thread
import gc
import io
import json
import os
import signal
import sys
import weakref

import pytest

import gwr
import gwr.passes
from gwr import (AnalysisPatternManager, LayerType, PatternAnalyzer, PatternRewriter,
                 RewritePatternManager, net_guard)


# ---- helpers -------------------------------------------------------------------


def live(net):
    return [l for l in net.layers if not l.is_removed]


def ops(net):
    return [l.op for l in live(net)]


def add_net(n_adds=3):
    """x -> x + x -> (+ x) ... : n_adds Add layers in a chain, the last one an output."""
    net = gwr.Network("adds")
    x = net.add_input("x", gwr.float32, (2, 3))
    y = x
    for _ in range(n_adds):
        y = y + x
    y.name = "out"
    net.mark_output(y)
    return net


def neg_chain(n):
    """An input and n Neg layers in a chain (n live layers)."""
    net = gwr.Network("chain")
    y = net.add_input("x", gwr.float32, (4,))
    for _ in range(n):
        y = -y
    net.mark_output(y)
    return net


# The seed's example, as examples/python/replace_add_with_sub.py writes it
# from the reference text (with gwr's names).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
from replace_add_with_sub import NaivePatternRewriter_ReplaceAddWithSub  # noqa: E402


class AddToSubOneStep(PatternRewriter):
    """The same rewrite as one match_and_rewrite."""

    def __init__(self):
        super().__init__("add_to_sub_1", root_layer={"Add"}, separate_match_rewrite=False)
        self.calls = 0

    def match_and_rewrite(self, layer):
        self.calls += 1
        a, b = layer.get_inputs(0, 1)
        (o,) = layer.get_outputs(0)
        o.replace_all_uses_with(a - b)
        layer.mark_as_removed()
        return True


class Recorder(PatternRewriter):
    """Never matches; records the layers it is offered."""

    def __init__(self, name="recorder", root_layer=None, log=None):
        super().__init__(name, root_layer=root_layer)
        self.seen = []
        self.log = log

    def match(self, layer):
        self.seen.append(layer)
        if self.log is not None:
            self.log.append((self.name, layer.name))
        return False

    def rewrite(self, layer):  # pragma: no cover - never matched
        raise AssertionError("rewrite called without a match")


# ---- the seed example and the basic contract -------------------------------------


def test_replace_add_with_sub_seed_example():
    net = add_net(3)
    out_name = net.outputs[0].name
    m = RewritePatternManager()
    m.add("replace_add_with_sub", NaivePatternRewriter_ReplaceAddWithSub())
    summary = m.rewrite(net)
    assert "Add" not in ops(net)
    assert ops(net).count("Sub") == 3
    assert net.outputs[0].name == out_name
    net.verify()
    assert summary["rewrites"] == 3
    assert summary["converged"] is True
    assert summary["layers_before"] == 3 and summary["layers_after"] == 3
    assert summary["pruned"] == 3
    assert summary["seconds"] >= 0.0
    assert m.summary() == {**summary, "seconds": m.summary()["seconds"]}


def test_replace_add_with_sub_numbers():
    """x + x + x + x became ((x - x) - x) - x: run it (helper F's Session), check against numpy."""
    import numpy as np
    net = add_net(3)
    m = RewritePatternManager()
    m.add("replace_add_with_sub", NaivePatternRewriter_ReplaceAddWithSub())
    m.rewrite(net)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    got = gwr.Session(net).run({"x": xv})["out"]
    np.testing.assert_array_equal(got, ((xv - xv) - xv) - xv)


def test_builtin_replace_add_with_sub_agrees_with_python_one():
    a, b = add_net(4), add_net(4)
    m1 = RewritePatternManager()
    m1.add("p", NaivePatternRewriter_ReplaceAddWithSub())
    m1.rewrite(a)
    m2 = RewritePatternManager()
    m2.add_builtin("replace_add_with_sub")
    m2.rewrite(b)
    assert ops(a) == ops(b) == ["Sub"] * 4


def test_match_and_rewrite():
    net = add_net(2)
    p = AddToSubOneStep()
    m = RewritePatternManager()
    m.add("one_step", p)
    s = m.rewrite(net)
    assert s["rewrites"] == 2 and p.calls == 2
    assert ops(net) == ["Sub", "Sub"]
    net.verify()
    st = m.stats()["one_step"]
    assert st["matches"] == 2 and st["rewrites"] == 2 and st["attempts"] == 2


def test_pattern_attributes_and_repr():
    p = NaivePatternRewriter_ReplaceAddWithSub()
    assert p.name == "replace_add_with_sub"
    assert p.root_layer == {gwr.LayerType.ELEMENTWISE}
    assert p.separate_match_rewrite is True
    assert p.args is None
    assert "replace_add_with_sub" in repr(p)
    p.extra = 5  # subclasses keep state in __dict__
    assert p.extra == 5
    assert PatternRewriter.__doc__ and RewritePatternManager.rewrite.__doc__


# ---- order and roots ---------------------------------------------------------------


def test_benefit_order_higher_first_equal_in_insertion_order():
    net = add_net(2)
    log = []
    m = RewritePatternManager()
    m.add("low", Recorder("low", log=log), 1)
    m.add("high_a", Recorder("high_a", log=log), 5)
    m.add("high_b", Recorder("high_b", log=log), 5)
    m.add("mid", Recorder("mid", log=log), 3)
    assert m.labels == ["high_a", "high_b", "mid", "low"]
    assert list(m.benefits.items()) == [("high_a", 5), ("high_b", 5), ("mid", 3), ("low", 1)]
    assert len(m) == 4
    m.rewrite(net)
    by_layer = {}
    for name, layer in log:
        by_layer.setdefault(layer, []).append(name)
    assert by_layer and all(v == ["high_a", "high_b", "mid", "low"] for v in by_layer.values())


def test_root_layer_by_class_op_and_none():
    net = gwr.Network()
    x = net.add_input("x", gwr.float32, (2, 3))
    y = -(x + x) * x
    net.mark_output(abs(y))
    all_names = {l.name for l in live(net)}
    by_class = Recorder("c", root_layer={LayerType.ELEMENTWISE})
    by_op = Recorder("o", root_layer=["Add", "Neg"])
    every = Recorder("e")
    m = RewritePatternManager()
    m.add("c", by_class)
    m.add("o", by_op)
    m.add("e", every)
    m.rewrite(net, single_pass=True)
    assert {l.name for l in every.seen} == all_names
    assert sorted(l.op for l in by_op.seen) == ["Add", "Neg"]
    ew = {l.name for l in live(net) if l.type == LayerType.ELEMENTWISE}
    assert ew and {l.name for l in by_class.seen} == ew
    assert all(l.type == LayerType.ELEMENTWISE for l in by_class.seen)


def test_root_layer_single_op_name_and_tuple():
    assert PatternRewriter("a", "Add").root_layer == "Add"
    assert PatternRewriter("a", ("Add", LayerType.ACTIVATION)).root_layer == ("Add", LayerType.ACTIVATION)


@pytest.mark.parametrize("bad,exc", [(3.5, TypeError), ([1.5], TypeError), ({"": 0}, TypeError),
                                     ({""}, ValueError), ([object()], TypeError), ({"Add": 1}, TypeError),
                                     (True, TypeError), ([False], TypeError), ([999], ValueError)])
def test_bad_root_layer(bad, exc):
    with pytest.raises(exc):
        PatternRewriter("p", root_layer=bad)


def test_bad_constructor_arguments():
    with pytest.raises(TypeError):
        PatternRewriter(5)
    with pytest.raises(ValueError):
        PatternRewriter("")
    with pytest.raises(ValueError):
        PatternAnalyzer("a", None)
    with pytest.raises(TypeError):
        PatternAnalyzer("a")
    with pytest.raises(TypeError):
        RewritePatternManager(1)


def test_malformed_root_op_refused_by_add():
    m = RewritePatternManager()
    with pytest.raises(gwr.InvalidArgumentError):
        m.add("p", Recorder("p", root_layer={"a::b::c::"}))


# ---- args ---------------------------------------------------------------------------


def test_self_args_seen_during_run_and_reset_after():
    net = add_net(1)
    marker = object()
    args = {"batch_size": 4, "obj": marker}
    seen = []

    class P(PatternRewriter):
        def match(self, layer):
            seen.append((self.args, self.args["batch_size"]))
            return False

        def rewrite(self, layer):
            pass

    p = P("p")
    m = RewritePatternManager()
    m.add("p", p)
    m.rewrite(net, args)
    assert seen and all(a is args and b == 4 for a, b in seen)
    assert p.args is None
    seen.clear()
    m.rewrite(net, args={"batch_size": 7})
    assert seen[0][1] == 7
    assert p.args is None


def test_args_given_twice_and_keywords():
    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
    with pytest.raises(TypeError):
        m.rewrite(add_net(1), {}, args={})
    with pytest.raises(TypeError):
        m.rewrite(add_net(1), net=add_net(1))
    with pytest.raises(TypeError, match="missing"):
        m.rewrite()
    assert m.rewrite(net=add_net(2), args={"a": 1}, single_pass=True)["rewrites"] == 2


def test_unknown_option():
    m = RewritePatternManager()
    with pytest.raises(TypeError, match="unknown option"):
        m.rewrite(add_net(1), bogus=True)
    with pytest.raises(TypeError):
        m.rewrite("not a network")


# ---- analyzers ------------------------------------------------------------------------


class ProducerCollector(PatternAnalyzer):
    """Matches every Add; adds the producer of its first input to the match."""

    def __init__(self):
        super().__init__("collector", root_layer={"Add"})
        self.found = []

    def match(self, layer):
        parent = layer.get_inputs(0)[0].get_parent()
        if parent is None:
            return self.no_match("first input is a network input")
        self.add_to_match(parent)
        return True

    def analyze(self, subgraph):
        self.found.append([l.name for l in subgraph])


def test_analyzer_collects_root_first():
    net = add_net(3)
    adds = [l.name for l in live(net)]
    a = ProducerCollector()
    m = AnalysisPatternManager()
    m.add("collect", a)
    assert m.get("collect") is a and m.labels == ["collect"]
    assert m.analyze(net) is None
    # the first Add reads x: no match; each later one reads the Add before it
    assert a.found == [[adds[1], adds[0]], [adds[2], adds[1]]]
    st = m.stats()["collect"]
    assert st["attempts"] == 3 and st["matches"] == 2
    assert ops(net) == ["Add"] * 3


def test_analyzer_default_match_and_args():
    net = add_net(2)
    got = []

    class A(PatternAnalyzer):
        def analyze(self, subgraph):
            got.append((len(subgraph), self.args))

    m = AnalysisPatternManager()
    m.add("a", A("a", [LayerType.ELEMENTWISE]))
    m.analyze(net, {"k": 1})
    assert got == [(1, {"k": 1})] * 2


def test_analyzer_missing_analyze():
    m = AnalysisPatternManager()
    m.add("a", PatternAnalyzer("a", {"Add"}))
    with pytest.raises(NotImplementedError, match="analyze"):
        m.analyze(add_net(1))


def test_analyzer_that_changes_the_network_fails():
    class Bad(PatternAnalyzer):
        def analyze(self, subgraph):
            subgraph[0].get_outputs(0)[0].replace_all_uses_with(subgraph[0].get_inputs(0)[0])

    net = add_net(2)
    m = AnalysisPatternManager()
    m.add("bad", Bad("bad", {"Add"}))
    with pytest.raises(gwr.Error, match="bad"):
        m.analyze(net)
    net.verify()


def test_add_to_match_outside_a_run_and_in_a_rewriter():
    a = ProducerCollector()
    net = add_net(1)
    with pytest.raises(gwr.StateError):
        a.add_to_match(live(net)[0])
    assert a.no_match("anything") is False


def test_managers_refuse_the_other_kind():
    with pytest.raises(TypeError):
        AnalysisPatternManager().add("p", Recorder())
    with pytest.raises(TypeError):
        RewritePatternManager().add("a", ProducerCollector())
    with pytest.raises(TypeError):
        RewritePatternManager().add("x", object())
    with pytest.raises(TypeError):
        AnalysisPatternManager().add("b", gwr.passes.get("fuse_gelu"))


# ---- exceptions ------------------------------------------------------------------------


def frames(tb):
    names = []
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return names


class Boom(Exception):
    pass


@pytest.mark.parametrize("where", ["match", "rewrite", "match_and_rewrite"])
def test_exception_in_pattern_comes_back_as_is(where):
    raised = []

    class P(PatternRewriter):
        def match(self, layer):
            if where == "match":
                e = Boom("in match")
                raised.append(e)
                raise e
            return True

        def rewrite(self, layer):
            a, b = layer.get_inputs(0, 1)
            layer.get_outputs(0)[0].replace_all_uses_with(a - b)  # half done: the old layer is not marked
            e = Boom("in rewrite")
            raised.append(e)
            raise e

        def match_and_rewrite(self, layer):
            e = Boom("in match_and_rewrite")
            raised.append(e)
            raise e

    net = add_net(2)
    m = RewritePatternManager()
    m.add("p", P("p", separate_match_rewrite=(where != "match_and_rewrite")))
    with pytest.raises(Boom) as ei:
        m.rewrite(net)
    assert ei.value is raised[0]
    assert where in frames(ei.value.__traceback__)
    assert len(raised) == 1  # the first exception stopped the run
    net.verify()


def test_exception_in_analyze_comes_back_as_is():
    class A(PatternAnalyzer):
        def analyze(self, subgraph):
            raise Boom(subgraph[0].name)

    net = add_net(2)
    m = AnalysisPatternManager()
    m.add("a", A("a", {"Add"}))
    with pytest.raises(Boom) as ei:
        m.analyze(net)
    assert "analyze" in frames(ei.value.__traceback__)
    net.verify()


def test_missing_methods_raise_not_implemented():
    class NoMethods(PatternRewriter):
        pass

    m = RewritePatternManager()
    m.add("n", NoMethods("n"))
    with pytest.raises(NotImplementedError, match="match"):
        m.rewrite(add_net(1))

    m2 = RewritePatternManager()
    m2.add("n", NoMethods("n", separate_match_rewrite=False))
    with pytest.raises(NotImplementedError, match="match_and_rewrite"):
        m2.rewrite(add_net(1))

    class OnlyMatch(PatternRewriter):
        def match(self, layer):
            return True

    m3 = RewritePatternManager()
    m3.add("o", OnlyMatch("o"))
    net = add_net(1)
    with pytest.raises(NotImplementedError, match="rewrite"):
        m3.rewrite(net)
    net.verify()


def test_uninitialized_subclass_refused_by_add():
    class Forgot(PatternRewriter):
        def __init__(self):
            pass

    with pytest.raises(TypeError, match="super"):
        RewritePatternManager().add("f", Forgot())


def test_match_result_without_truth_value():
    class NoBool:
        def __bool__(self):
            raise Boom("no truth")

    class P(PatternRewriter):
        def match(self, layer):
            return NoBool()

    m = RewritePatternManager()
    m.add("p", P("p"))
    with pytest.raises(Boom):
        m.rewrite(add_net(1))


def test_keyboard_interrupt_raised_on_the_100th_layer_stops_the_run():
    net = neg_chain(300)

    class P(PatternRewriter):
        calls = 0

        def match(self, layer):
            P.calls += 1
            if P.calls == 100:
                raise KeyboardInterrupt
            return False

    m = RewritePatternManager()
    m.add("p", P("p"))
    with pytest.raises(KeyboardInterrupt):
        m.rewrite(net)
    assert P.calls == 100
    net.verify()
    assert ops(net) == ["Neg"] * 300


@pytest.mark.parametrize("how", ["raise_signal", "interrupt_main"])
def test_sigint_during_a_run_is_honoured(how):
    net = neg_chain(300)

    class P(PatternRewriter):
        calls = 0

        def match(self, layer):
            P.calls += 1
            if P.calls == 100:
                if how == "raise_signal":
                    signal.raise_signal(signal.SIGINT)
                else:
                    _thread.interrupt_main()
            return False

    m = RewritePatternManager()
    m.add("p", P("p"))
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            m.rewrite(net)
    finally:
        signal.signal(signal.SIGINT, old)
    assert 100 <= P.calls <= 101
    net.verify()
    # the manager is usable again afterwards
    P.calls = -10**9
    assert m.rewrite(net)["visited"] == 300


def test_never_converging_pattern():
    class Forever(PatternRewriter):
        def match_and_rewrite(self, layer):
            a, b = layer.get_inputs(0, 1)
            layer.get_outputs(0)[0].replace_all_uses_with(a + b)
            layer.mark_as_removed()
            return True

    net = add_net(1)
    m = RewritePatternManager()
    m.add("forever", Forever("forever", {"Add"}, separate_match_rewrite=False))
    with pytest.raises(gwr.NotConvergedError) as ei:
        m.rewrite(net, max_rewrites=50)
    assert isinstance(ei.value, RuntimeError)
    assert "forever" in str(ei.value)
    assert ei.value.status == "GWR_ERR_NOT_CONVERGED"
    net.verify()
    assert m.summary()["converged"] is False


def test_duplicate_label():
    m = RewritePatternManager()
    m.add("p", Recorder())
    with pytest.raises(gwr.DuplicateError):
        m.add("p", Recorder())
    m.add_builtin("replace_add_with_sub")
    with pytest.raises(gwr.DuplicateError):
        m.add_builtin("replace_add_with_sub")
    with pytest.raises(ValueError):
        m.add("replace_add_with_sub", gwr.passes.get("fuse_gelu"))
    with pytest.raises(ValueError):
        m.add("", Recorder())
    assert m.labels == ["replace_add_with_sub", "p"] or m.labels == ["p", "replace_add_with_sub"]
    assert isinstance(m.get("p"), Recorder)


def test_rewrite_reentrancy_is_refused():
    errors = []
    net = add_net(1)

    class P(PatternRewriter):
        def match(self, layer):
            try:
                self.mgr.rewrite(layer.network)
            except gwr.StateError as e:
                errors.append(str(e))
            try:
                other = RewritePatternManager()
                other.add("r", Recorder())
                other.rewrite(layer.network)
            except gwr.StateError as e:
                errors.append(str(e))
            try:
                self.mgr.add("late", Recorder())
            except gwr.StateError as e:
                errors.append(str(e))
            try:
                layer.network.close()
            except gwr.StateError as e:
                errors.append(str(e))
            return False

    m = RewritePatternManager()
    p = P("p")
    p.mgr = m
    m.add("p", p)
    m.rewrite(net)
    assert len(errors) == 4
    assert "inside one of its own patterns" in errors[0]
    assert "rewrite" in errors[0]
    assert "already being rewritten" in errors[1]
    assert m.labels == ["p"]
    net.verify()


def test_one_pattern_in_two_threads():
    """A pattern object shared by two managers running at once in two threads:
    each run's no_match reasons land in its own trace."""
    import threading
    import time

    class Picky(PatternRewriter):
        def match(self, layer):
            time.sleep(0.0005)  # lets the other thread run meanwhile
            return self.no_match("on " + layer.network.name)

    p = Picky("picky")
    outs, errors = {}, []

    def run(name):
        try:
            net = gwr.Network(name)
            x = net.add_input("x", gwr.float32, (2,))
            y = x
            for _ in range(40):
                y = -y
            net.mark_output(y)
            m = RewritePatternManager()
            m.add("picky", p)
            outs[name] = io.StringIO()
            m.trace(outs[name], failures=True)
            m.rewrite(net)
        except BaseException as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(n,)) for n in ("left", "right")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    for name, other in (("left", "right"), ("right", "left")):
        text = outs[name].getvalue()
        assert text.count("on " + name) == 40
        assert ("on " + other) not in text


def test_nested_run_on_another_network_is_allowed():
    inner_net = add_net(2)
    results = []

    class P(PatternRewriter):
        def match(self, layer):
            inner = RewritePatternManager()
            inner.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
            results.append(inner.rewrite(inner_net)["rewrites"])
            return False

    m = RewritePatternManager()
    m.add("p", P("p", {"Add"}))
    m.rewrite(add_net(1))
    assert results == [2]
    assert ops(inner_net) == ["Sub", "Sub"]


# ---- stats, summary, trace -------------------------------------------------------------


def test_stats_summary_print_stats():
    net = add_net(3)
    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub(), 2)
    m.add("rec", Recorder(), 1)
    m.rewrite(net, time_patterns=True)
    st = m.stats()
    assert list(st) == ["sub", "rec"]
    assert st["sub"]["matches"] == 3 and st["sub"]["rewrites"] == 3
    assert st["sub"]["attempts"] >= 3
    assert st["rec"]["rewrites"] == 0 and st["rec"]["attempts"] >= 3
    assert st["sub"]["seconds"] > 0.0
    buf = io.StringIO()
    m.print_stats(buf)
    text = buf.getvalue()
    assert "sub" in text and "rec" in text


def test_print_stats_default_stdout(capsys):
    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
    m.rewrite(add_net(1))
    m.print_stats()
    assert "sub" in capsys.readouterr().out


def test_trace_text_and_failures():
    net = add_net(2)

    class Picky(PatternRewriter):
        def match(self, layer):
            return self.no_match("never on %s" % layer.op)

    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub(), 1)
    m.add("picky", Picky("picky", {"Add"}), 5)
    out = io.StringIO()
    m.trace(out, failures=True)
    m.rewrite(net)
    lines = out.getvalue().splitlines()
    applied = [l for l in lines if l.startswith("#")]
    assert len(applied) == 2 and all("sub" in l for l in applied)
    assert any("never on Add" in l for l in lines)
    # a second run appends its own lines: no rewrite now (no Add left), only failures
    m.rewrite(net)
    after = out.getvalue().splitlines()
    assert after[:len(lines)] == lines
    assert len(after) > len(lines) and not any(l.startswith("#") for l in after[len(lines):])
    m.stop_trace()
    m.rewrite(add_net(1))
    assert out.getvalue().splitlines() == after


def test_trace_json_lines():
    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
    out = io.StringIO()
    m.trace(out=out, format="json")
    m.rewrite(add_net(3))
    recs = [json.loads(l) for l in out.getvalue().splitlines()]
    assert [r["seq"] for r in recs] == [1, 2, 3]
    assert all(r["label"] == "sub" and r["op"] == "Add" and len(r["removed"]) == 1 for r in recs)


def test_trace_to_stdout_and_bad_arguments(capsys):
    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
    m.trace()
    m.rewrite(add_net(1))
    assert capsys.readouterr().out.startswith("#1 sub")
    with pytest.raises(ValueError):
        m.trace(format="xml")
    with pytest.raises(TypeError):
        m.trace(out=5)


def test_trace_out_whose_write_fails():
    class Broken:
        def write(self, text):
            raise Boom("disk full")

    net = add_net(2)
    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
    m.trace(Broken())
    with pytest.raises(Boom, match="disk full"):
        m.rewrite(net)
    # the rewrite itself completed before the trace was written
    assert ops(net) == ["Sub", "Sub"]
    net.verify()


# ---- listeners ---------------------------------------------------------------------------


class Listener:
    def __init__(self):
        self.events = []

    def layer_added(self, label, layer):
        self.events.append(("added", label, layer.op))

    def layer_removed(self, label, layer):
        self.events.append(("removed", label, layer.op))

    def tensor_replaced(self, label, old, new):
        self.events.append(("replaced", label, old.get_parent().op, new.get_parent().op))

    def pattern_applied(self, event):
        # the layers of an event are only alive during the callback (the removed ones are pruned after the run)
        root = event["root"]
        self.events.append(("applied", dict(event, root=root.op, root_removed=root in event["removed"],
                                            added=[l.op for l in event["added"]],
                                            removed=[l.op for l in event["removed"]])))

    def match_failed(self, label, layer, reason):
        self.events.append(("failed", label, layer.op, reason))


def test_listener_sees_every_event():
    net = add_net(2)

    class Picky(PatternRewriter):
        def match(self, layer):
            return self.no_match("not today")

    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub(), 1)
    m.add("picky", Picky("picky", {"Add"}), 9)
    ls = Listener()
    m.add_listener(ls)
    m.rewrite(net)
    kinds = [e[0] for e in ls.events]
    assert kinds.count("applied") == 2
    assert ("added", "sub", "Sub") in ls.events
    assert ("removed", "sub", "Add") in ls.events
    assert ("replaced", "sub", "Add", "Sub") in ls.events
    assert ("failed", "picky", "Add", "not today") in ls.events
    applied = [e[1] for e in ls.events if e[0] == "applied"]
    assert [a["seq"] for a in applied] == [1, 2]
    for a in applied:
        assert a["label"] == "sub" and a["pattern"] == "replace_add_with_sub"
        assert a["root"] == "Add" and a["root_removed"] and a["removed"] == ["Add"]
        assert a["added"] == ["Sub"]
        assert a["replaced"] == 1 and a["modified"] >= 0


def test_listener_with_some_methods_and_bad_listener():
    class OnlyApplied:
        n = 0

        def pattern_applied(self, event):
            OnlyApplied.n += 1

    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
    m.add_listener(OnlyApplied())
    m.rewrite(add_net(3))
    assert OnlyApplied.n == 3
    with pytest.raises(TypeError):
        m.add_listener(object())


def test_exception_in_listener_is_reraised():
    class Bad:
        def pattern_applied(self, event):
            raise Boom("listener")

    net = add_net(3)
    m = RewritePatternManager()
    m.add("sub", NaivePatternRewriter_ReplaceAddWithSub())
    m.add_listener(Bad())
    with pytest.raises(Boom) as ei:
        m.rewrite(net)
    assert "pattern_applied" in frames(ei.value.__traceback__)
    net.verify()
    # the listener cannot stop the rewrite it reports; the next pattern call stops the run
    assert m.stats()["sub"]["rewrites"] == 1


# ---- built-in passes and optimize ------------------------------------------------------------


def test_passes_module():
    labels = gwr.passes.labels()
    assert "fuse_gelu" in labels and "replace_add_with_sub" in labels
    info = gwr.passes.info("fuse_gelu")
    assert info["label"] == "fuse_gelu"
    assert set(info) >= {"summary", "benefit", "level", "targets"}
    assert set(info["targets"]) <= {"onnx", "ort", "gwr"} and info["targets"]
    b = gwr.passes.get("fuse_gelu")
    assert isinstance(b, gwr.BuiltinPattern)
    assert b.label == "fuse_gelu" and b.benefit == info["benefit"] and b.summary == info["summary"]
    assert b.name
    with pytest.raises(gwr.NotFoundError):
        gwr.passes.get("no_such_pass")
    with pytest.raises(gwr.NotFoundError):
        gwr.passes.info("no_such_pass")
    with pytest.raises(TypeError):
        gwr.passes.get(3)


def test_add_builtin_and_get():
    m = RewritePatternManager()
    m.add_builtin("replace_add_with_sub")
    m.add_builtin("fuse_gelu", benefit=77)
    m.add("mine", gwr.passes.get("fold_constants"), 3)
    assert m.benefits["fuse_gelu"] == 77
    assert m.benefits["replace_add_with_sub"] == gwr.passes.info("replace_add_with_sub")["benefit"]
    assert m.get("fuse_gelu").label == "fuse_gelu"
    assert m.get("mine").label == "fold_constants"
    assert m.get("absent") is None
    with pytest.raises(gwr.NotFoundError):
        m.add_builtin("no_such_pass")
    with pytest.raises(TypeError):
        m.get(1)


def test_builtin_pass_object_in_a_manager():
    net = gwr.Network("noop")
    x = net.add_input("x", gwr.float32, (2, 3))
    y = -((x * 1.0) / 1.0)
    net.mark_output(y)
    m = RewritePatternManager()
    m.add("noop", gwr.passes.get("eliminate_noop_arith"), 4)
    s = m.rewrite(net)
    assert s["rewrites"] == 2
    assert ops(net) == ["Neg"]
    assert net.outputs[0].get_parent().get_inputs(0)[0] is x
    net.verify()


def erf_gelu_net():
    import gwr.functional  # helper F's builders: Erf has no operator
    net = gwr.Network("gelu")
    x = net.add_input("x", gwr.float32, (2, 8))
    h = -x  # something before the GELU that must stay
    erf = gwr.functional.op("Erf", [h / 1.4142135623730951])[0]
    y = (h * 0.5) * (erf + 1.0)
    y.name = "y"
    net.mark_output(y)
    return net


def test_builtin_fuse_gelu_fires_on_erf_gelu():
    net = erf_gelu_net()
    m = RewritePatternManager()
    m.add("gelu", gwr.passes.get("fuse_gelu"), 10)
    s = m.rewrite(net, {"target": 4})  # GWR_TARGET_GWR: any opset
    assert s["rewrites"] == 1
    assert sorted(ops(net)) == ["Gelu", "Neg"]
    assert net.outputs[0].name == "y"
    gelu = [l for l in live(net) if l.op == "Gelu"][0]
    assert gelu.get_inputs(0)[0].get_parent().op == "Neg"
    net.verify()
    # the fused network computes GELU(-x), checked against numpy and math.erf
    import math
    import numpy as np
    x = np.random.default_rng(15).standard_normal((2, 8)).astype(np.float32)
    h = -x.astype(np.float64)
    want = 0.5 * h * (1.0 + np.vectorize(math.erf)(h / math.sqrt(2.0)))
    got = gwr.Session(net).run({"x": x})["y"]
    assert got.shape == (2, 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_optimize_report():
    net = gwr.Network("opt")
    x = net.add_input("x", gwr.float32, (2, 3))
    y = (x * 1.0) + 0.0
    y = -y
    net.mark_output(y)
    before = len(live(net))
    rep = gwr.optimize(net, level="basic")
    assert rep["layers_before"] == before
    assert rep["layers_after"] < before
    by = {p["label"]: p for p in rep["passes"]}
    assert by["eliminate_noop_arith"]["rewrites"] >= 2
    assert by["eliminate_noop_arith"]["skipped"] is None
    assert any(p["skipped"] for p in rep["passes"])  # extended passes skip at level basic
    assert set(rep["passes"][0]) == {"label", "skipped", "attempts", "matches", "rewrites", "note"}
    assert "Neg" in ops(net) and "Mul" not in ops(net)
    net.verify()


def test_optimize_input_defaults():
    """An initializer the file also lists as a graph input: target onnx makes
    it a constant (and drops the input; a Tensor object of it is dead, not
    dangling), target ort keeps it unless input_defaults="fold"."""
    import numpy as np
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                          [numpy_helper.from_array(w, "w")])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7).SerializeToString()
    net = gwr.onnx.load_bytes(data)
    gwr.optimize(net, target="ort")
    assert [t.name for t in net.inputs] == ["x", "w"]
    wt = net.inputs[1]
    rep = gwr.optimize(net, target="ort", input_defaults="fold")
    assert {p["label"]: p for p in rep["passes"]}["fold_input_defaults"]["rewrites"] == 1
    assert [t.name for t in net.inputs] == ["x"]
    with pytest.raises(Exception):
        wt.name  # the removed input's object no longer reaches freed memory
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(gwr.Session(net).run({"x": x})["y"], x * w)
    net2 = gwr.onnx.load_bytes(data)
    gwr.optimize(net2)  # target onnx
    assert [t.name for t in net2.inputs] == ["x"]
    with pytest.raises(ValueError):
        gwr.optimize(net2, input_defaults="sometimes")


def test_optimize_only_disable_and_bad_arguments():
    net = gwr.Network("opt2")
    x = net.add_input("x", gwr.float32, (2, 3))
    net.mark_output(-(x * 1.0))
    rep = gwr.optimize(net, disable=["eliminate_noop_arith"])
    assert {p["label"]: p for p in rep["passes"]}["eliminate_noop_arith"]["rewrites"] == 0
    assert "Mul" in ops(net)
    rep = gwr.optimize(net, only="eliminate_noop_arith")
    assert "Mul" not in ops(net)
    with pytest.raises(ValueError):
        gwr.optimize(net, level="turbo")
    with pytest.raises(ValueError):
        gwr.optimize(net, target="tensorrt")
    with pytest.raises(gwr.NotFoundError):
        gwr.optimize(net, only="no_such_pass")
    with pytest.raises(TypeError):
        gwr.optimize(net, bind=[1])
    with pytest.raises(TypeError):
        gwr.optimize(net, only=5)
    with pytest.raises(ValueError):
        gwr.optimize(net, bind={"batch": -1})


def test_optimize_bind():
    net = gwr.Network("bind")
    x = net.add_input("x", gwr.float32, ("batch", 3))
    net.mark_output(-x)
    gwr.optimize(net, bind={"batch": 5})
    assert net.inputs[0].shape == (5, 3)


# ---- lifetimes --------------------------------------------------------------------------------


def test_pattern_reused_in_two_managers():
    p = NaivePatternRewriter_ReplaceAddWithSub()
    m1, m2 = RewritePatternManager(), RewritePatternManager()
    m1.add("a", p, 1)
    m2.add("b", p, 2)
    assert m1.get("a") is p and m2.get("b") is p
    n1, n2 = add_net(2), add_net(3)
    assert m1.rewrite(n1, {"run": 1})["rewrites"] == 2
    assert m2.rewrite(n2)["rewrites"] == 3
    del m1
    gc.collect()
    assert m2.rewrite(add_net(1))["rewrites"] == 1
    assert p.args is None


def test_manager_held_by_its_pattern_is_collected():
    m = RewritePatternManager()
    p = Recorder()
    p.manager = m  # a cycle: manager -> pattern -> manager
    m.add("p", p)
    m.add_listener(Listener())
    m.trace(io.StringIO())
    m.rewrite(add_net(1))
    ref = weakref.ref(p)
    del m, p
    gc.collect()
    assert ref() is None


def test_pattern_outlives_its_manager():
    p = NaivePatternRewriter_ReplaceAddWithSub()
    m = RewritePatternManager()
    m.add("p", p)
    del m
    gc.collect()
    m2 = RewritePatternManager()
    m2.add("p", p)
    assert m2.rewrite(add_net(2))["rewrites"] == 2


def test_network_closed_after_a_run_and_run_on_closed_network():
    net = add_net(1)
    m = RewritePatternManager()
    m.add("p", NaivePatternRewriter_ReplaceAddWithSub())
    m.rewrite(net)
    net.close()
    with pytest.raises(gwr.LifetimeError):
        m.rewrite(net)


def test_separate_match_rewrite_left_out_follows_the_class():
    class Combined(gwr.PatternRewriter):
        def __init__(self):
            super().__init__("combined", root_layer={gwr.LayerType.ELEMENTWISE})

        def match_and_rewrite(self, layer):
            return False

    class Separate(gwr.PatternRewriter):
        def __init__(self):
            super().__init__("separate")

        def match(self, layer):
            return False

        def rewrite(self, layer):
            pass

    class Both(Separate):
        def match_and_rewrite(self, layer):
            return False

    assert Combined().separate_match_rewrite is False
    assert Separate().separate_match_rewrite is True
    assert Both().separate_match_rewrite is True  # it defines match: separate
    assert gwr.PatternRewriter("plain").separate_match_rewrite is True
    explicit = gwr.PatternRewriter("x", separate_match_rewrite=False)
    assert explicit.separate_match_rewrite is False


def _count(net, op):
    return sum(1 for l in net.layers if l.op == op and not l.is_removed)


def test_keyboard_interrupt_stops_a_run_of_builtin_patterns():
    """No Python pattern runs: the manager's interrupt hook (every 1024
    layers) sees the pending signal. A listener trips it on the 2,000th
    rewrite, as a Ctrl-C arriving then would."""
    import _thread

    net = add_net(20000)
    m = gwr.RewritePatternManager()
    m.add_builtin("replace_add_with_sub")

    class Trip:
        n = 0

        def pattern_applied(self, event):
            Trip.n += 1
            if Trip.n == 2000:
                _thread.interrupt_main()

    m.add_listener(Trip())
    with pytest.raises(KeyboardInterrupt):
        m.rewrite(net)
    net.verify()
    left = _count(net, "Add")
    assert 0 < left < 20000 - 1990  # stopped early, after the trip
    assert Trip.n < 20000


def test_keyboard_interrupt_from_a_real_signal_stops_builtins():
    """SIGINT delivered by the OS during a long C-only run (a timer fires
    10 ms in; the run takes far longer)."""
    import signal

    net = add_net(200000)
    m = gwr.RewritePatternManager()
    m.add_builtin("replace_add_with_sub")

    def on_alarm(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        with pytest.raises(KeyboardInterrupt):
            m.rewrite(net)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    net.verify()
    assert _count(net, "Add") > 0


def test_keyboard_interrupt_stops_optimize():
    import signal

    net = add_net(200000)

    def on_alarm(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        with pytest.raises(KeyboardInterrupt):
            gwr.optimize(net, target="gwr", only="replace_add_with_sub")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    net.verify()
    assert _count(net, "Add") > 0
