"""The core objects: Network, Tensor, Layer, net_guard, errors, enums and
lifetimes (python/src/network.c, module.c)."""
import gc

import numpy as np
import pytest

import gwr


def small_net():
    """x -> Add(x, x) -> Mul(., 2) -> output y."""
    net = gwr.Network("small")
    x = net.add_input("x", gwr.float32, ("batch", 3))
    s = x + x
    y = s * 2.0
    net.mark_output(y)
    return net, x, s, y


# ---- enums and errors ---------------------------------------------------------


def test_enums_follow_the_c_tables():
    assert gwr.DataType.FLOAT32 == 1 and gwr.DataType.FLOAT16 == 10 and gwr.DataType.INT64 == 7
    assert gwr.float16 is gwr.DataType.FLOAT16 and gwr.bool_ is gwr.DataType.BOOL
    assert gwr.LayerType.ELEMENTWISE.name == "ELEMENTWISE"
    assert "PLUGIN" in gwr.LayerType.__members__ and "CONSTANT" in gwr.LayerType.__members__
    assert gwr.ElementWiseOperation.SUM.name == "SUM"


def test_error_classes_carry_status_and_message():
    for name, base in [("ShapeError", ValueError), ("NotFoundError", LookupError), ("DtypeError", TypeError),
                       ("FileError", OSError), ("UnsupportedError", NotImplementedError),
                       ("NotConvergedError", RuntimeError), ("StateError", RuntimeError),
                       ("LifetimeError", ReferenceError)]:
        cls = getattr(gwr, name)
        assert issubclass(cls, gwr.Error) and issubclass(cls, base), name
    net, x, s, y = small_net()
    with pytest.raises(gwr.NotFoundError) as e:
        s.get_parent().get_attr("nope")
    assert e.value.status == "GWR_ERR_NOT_FOUND"
    assert "nope" in e.value.message and str(e.value) == e.value.message


# ---- networks -------------------------------------------------------------------


def test_network_basics():
    net, x, s, y = small_net()
    assert net.name == "small"
    net.name = "renamed"
    assert net.name == "renamed"
    assert net.inputs == [x] and net.outputs == [y]
    assert [l.op for l in net.layers] == ["Add", "Constant", "Mul"]
    assert net.num_layers == 3 and net.num_live_layers == 3 and len(net) == 3
    assert net.get_layer(s.get_parent().name) is s.get_parent()
    assert net.get_layer("no such layer") is None
    assert net.get_tensor("x") is x and net.get_tensor("nope") is None
    net.verify()
    assert "digraph" in net.to_dot()
    assert repr(net).startswith("<gwr.Network 'renamed': 3 layers")


def test_add_input_shapes_and_bad_input():
    net = gwr.Network()
    a = net.add_input("a", "float16", (1, None, -1, "seq"))
    assert a.dtype == gwr.float16 and a.shape == (1, None, None, "seq") and a.rank == 4
    b = net.add_input("b", np.int64, None)
    assert b.shape is None and b.rank is None and b.dtype == gwr.int64
    with pytest.raises(ValueError):
        net.add_input("c", "no-such-type", (1,))
    with pytest.raises(gwr.InvalidArgumentError):
        net.add_input("d", gwr.float32, (-5,))
    with pytest.raises(TypeError):
        net.add_input("e", gwr.float32, (1.5,))
    with pytest.raises(gwr.Error):
        net.add_input("a", gwr.float32, (1,))  # the name is taken


def test_clone_equal_diff():
    net, x, s, y = small_net()
    c = net.clone()
    assert c.equal(net) and net.diff(c) == ""
    c.layers[0].set_attr("extra", 1)
    assert not c.equal(net) and "extra" in net.diff(c)
    # the copy is independent
    assert net.layers[0].attrs == {}


def test_toposort_and_opsets():
    net, x, s, y = small_net()
    net.set_opset("", 17)
    assert net.opsets.get("") == 17
    net.toposort()
    net.verify()


# ---- tensors ----------------------------------------------------------------------


def test_tensor_walk():
    net, x, s, y = small_net()
    add = s.get_parent()
    assert x.get_parent() is None and x.is_input and not x.is_output
    assert add.op == "Add" and add.type == gwr.LayerType.ELEMENTWISE
    assert add.ew_op == gwr.ElementWiseOperation.SUM
    assert x.get_users() == [add]  # read twice, listed once
    mul = y.get_parent()
    assert s.get_users() == [mul] and y.is_output
    assert mul.get_inputs(0)[0] is s
    assert mul.get_inputs()[1].get_parent().type == gwr.LayerType.CONSTANT
    assert add.get_inputs(0, 1) == [x, x] and add.get_inputs(-1) == [x]
    assert add.get_outputs(0) == [s] and add.get_outputs() == [s]
    with pytest.raises(IndexError):
        add.get_inputs(2)
    assert add.network is net and s.network is net
    assert add.as_layer() is add


def test_operators_build_layers():
    net = gwr.Network()
    a = net.add_input("a", gwr.float32, (2, 3))
    b = net.add_input("b", gwr.float32, (3,))
    ops = {"Add": a + b, "Sub": a - b, "Mul": a * b, "Div": a / b, "Pow": a ** 2.0,
           "Neg": -a, "Abs": abs(a)}
    for op, t in ops.items():
        assert t.get_parent().op == op
        assert t.shape == (2, 3) and t.dtype == gwr.float32
    r = 1.0 - a  # reflected: the constant is the first input
    sub = r.get_parent()
    assert sub.op == "Sub" and sub.get_inputs(1)[0] is a
    const = sub.get_inputs(0)[0].get_parent()
    assert const.type == gwr.LayerType.CONSTANT
    np.testing.assert_array_equal(const.attrs["value"], np.float32(1.0))
    m = net.add_input("m", gwr.float32, (3, 4))
    assert (a @ m).shape == (2, 4)
    # the scalar takes the tensor's dtype
    i = net.add_input("i", gwr.int64, (2,))
    assert (i + 3).dtype == gwr.int64
    with pytest.raises(gwr.DtypeError):
        i + 0.5
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(gwr.ShapeError):
        a + net.add_input("c", gwr.float32, (4,))
    with pytest.raises(TypeError):
        bool(a)
    other = gwr.Network()
    o = other.add_input("o", gwr.float32, (2, 3))
    with pytest.raises(gwr.InvalidArgumentError):
        a + o


def test_float16_scalars_are_rounded_to_half():
    net = gwr.Network()
    h = net.add_input("h", gwr.float16, (2,))
    # numpy's conversion is the independent oracle: normals, subnormals,
    # ties, overflow
    for v in [0.1, 65504.0, 65520.0, 1e-6, 6e-8, 2.98e-8, -2.5, 1e9, 1.0009765625, 1.00048828125]:
        c = (h * v).get_parent().get_inputs(1)[0].get_parent()
        raw = c.attrs["value"]
        assert raw.dtype == np.float16
        with np.errstate(over="ignore"):  # 1e9 is inf in half, in both
            want = np.float16(v)
        assert raw.tobytes() == want.tobytes(), v


def test_replace_all_uses_with_keeps_the_interface():
    net, x, s, y = small_net()
    mul = y.get_parent()
    z = s - x
    y.replace_all_uses_with(z)
    assert net.outputs == [z] and z.name == "y" or z.is_output
    mul.mark_as_removed()
    assert mul.is_removed
    net.prune()
    net.verify()
    assert not mul.is_alive
    with pytest.raises(gwr.DtypeError):
        x.replace_all_uses_with(net.add_input("i", gwr.int64, ("batch", 3)))


def test_replace_all_uses_except_inserts_after():
    net, x, s, y = small_net()
    r = -s
    s.replace_all_uses_except(r, r.get_parent())
    assert y.get_parent().get_inputs(0)[0] is r
    net.verify()


def test_tensor_constructor_makes_an_input_of_the_current_network():
    net = gwr.Network()
    with pytest.raises(gwr.StateError):
        gwr.Tensor(name="q", dtype=gwr.float16, shape=(1, 4))
    with gwr.net_guard(net):
        assert gwr.current_network() is net
        q = gwr.Tensor(name="qkv", dtype=gwr.float16, shape=(1, 8, 12))
    assert gwr.current_network() is None
    assert q.is_input and q.shape == (1, 8, 12) and net.inputs == [q]
    other = gwr.Network()
    t = gwr.Tensor("t", gwr.float32, (2,), network=other)
    assert t.network is other


def test_net_guard_nests():
    a, b = gwr.Network("a"), gwr.Network("b")
    with gwr.net_guard(a) as ga:
        assert ga is a
        with gwr.net_guard(b):
            assert gwr.current_network() is b
        assert gwr.current_network() is a
    assert gwr.current_network() is None
    with pytest.raises(TypeError):
        gwr.net_guard("not a network")


# ---- layers --------------------------------------------------------------------------


def test_layer_attrs_round_trip():
    net, x, s, y = small_net()
    l = s.get_parent()
    l.set_attr("i", 3)
    l.set_attr("f", 0.5)
    l.set_attr("s", "text")
    l.set_attr("b", b"\xff\x00")
    l.set_attr("ints", [1, 2, 3])
    l.set_attr("floats", [1.5, 2])
    l.set_attr("strs", ["a", "b"])
    w = np.arange(6, dtype=np.int32).reshape(2, 3)
    l.set_attr("t", w)
    a = l.attrs
    assert a["i"] == 3 and a["f"] == 0.5 and a["s"] == "text" and a["b"] == b"\xff\x00"
    assert a["ints"] == [1, 2, 3] and a["floats"] == [1.5, 2.0] and a["strs"] == ["a", "b"]
    np.testing.assert_array_equal(a["t"], w)
    assert a["t"].dtype == np.int32
    assert l.get_attr("i") == 3 and l.get_attr("zz", None) is None
    l.remove_attr("i")
    assert "i" not in l.attrs
    with pytest.raises(gwr.NotFoundError):
        l.remove_attr("i")
    with pytest.raises(TypeError):
        l.set_attr("bad", object())
    with pytest.raises(TypeError):
        l.set_attr("bad", [1, "a"])


def test_layer_rename_and_set_input():
    net, x, s, y = small_net()
    add = s.get_parent()
    add.name = "my_add"
    assert net.get_layer("my_add") is add
    with pytest.raises(gwr.DuplicateError):
        y.get_parent().name = "my_add"
    mul = y.get_parent()
    with pytest.raises(gwr.CycleError):
        add.set_input(0, y)  # y depends on add
    assert add.get_inputs(0)[0] is x  # nothing changed
    mul.set_input(0, x)
    assert mul.get_inputs(0)[0] is x
    net.verify()


def test_repr_of_layers_and_tensors():
    net, x, s, y = small_net()
    assert repr(x) == "<gwr.Tensor 'x' float32[batch,3]>"
    assert repr(s.get_parent()).startswith("<gwr.Layer '") and "Add (ELEMENTWISE)" in repr(s.get_parent())


# ---- lifetimes -------------------------------------------------------------------------


def test_objects_die_with_a_closed_network():
    net, x, s, y = small_net()
    add = s.get_parent()
    net.close()
    assert net.closed
    for f in [lambda: add.name, lambda: add.op, lambda: s.shape, lambda: s.get_users(),
              lambda: x.get_parent(), lambda: add.get_inputs(0), lambda: net.layers,
              lambda: net.add_input("z", gwr.float32, (1,)), lambda: add.mark_as_removed()]:
        with pytest.raises(gwr.LifetimeError):
            f()
    assert not add.is_alive and not s.is_alive
    assert "closed" in repr(add) and "closed" in repr(net)
    net.close()  # twice is fine
    with gwr.Network() as n2:
        t = n2.add_input("t", gwr.float32, (1,))
    with pytest.raises(gwr.LifetimeError) as e:
        t.name
    assert "'t'" in str(e.value)


def test_objects_die_when_their_layer_is_pruned():
    net, x, s, y = small_net()
    add, mul = s.get_parent(), y.get_parent()
    y2 = x * 2.0
    y.replace_all_uses_with(y2)
    mul.mark_as_removed()
    assert net.prune() >= 2  # Mul, Add and the unused constant
    assert not mul.is_alive and not add.is_alive and not s.is_alive
    assert mul.is_removed  # pruned layers stay "removed"
    with pytest.raises(gwr.LifetimeError) as e:
        mul.get_inputs()
    assert "pruned" in str(e.value) and mul.name if False else True
    with pytest.raises(gwr.LifetimeError):
        s.replace_all_uses_with(x)
    with pytest.raises(gwr.LifetimeError):
        x + s
    # the live ones still work
    assert x.get_users() == [y2.get_parent()]
    net.verify()


def test_network_outlives_its_python_name():
    def make():
        net, x, s, y = small_net()
        return s.get_parent()

    add = make()  # the Network object is only reachable through add
    gc.collect()
    assert add.network.num_layers == 3 and add.op == "Add"


def test_one_object_per_handle_and_no_leak_of_handles():
    net, x, s, y = small_net()
    first = s.get_parent()
    assert s.get_parent() is first
    ident = id(first)
    del first
    gc.collect()
    again = s.get_parent()  # a fresh object: the table forgot the dead one
    assert again.op == "Add"
    assert again is s.get_parent()
    assert isinstance(ident, int)


def test_subgraph_attrs_are_described_not_walked():
    net = gwr.onnx.load("/usr/share/libonnx-testdata/data/node/test_if/model.onnx")
    (if_layer,) = [l for l in net.layers if l.op == "If"]
    attrs = if_layer.attrs
    assert attrs["then_branch"] == {"subgraph": "then_body", "num_layers": 1}
    assert attrs["else_branch"]["subgraph"] == "else_body"
    # the If's outer inputs list only the root network's readers
    cond = if_layer.get_inputs(0)[0]
    assert if_layer in cond.get_users()
    net.verify()


def test_many_objects_stress_the_table():
    net = gwr.Network()
    x = net.add_input("x", gwr.float32, (4,))
    t = x
    for _ in range(3000):
        t = t + 1.0
    net.mark_output(t)
    layers = net.layers
    assert len(layers) == 6000 and len(set(map(id, layers))) == 6000
    # drop every other reference, then ask again: each layer is found once
    del layers[::2]
    again = net.layers
    assert all(a is b for a, b in zip(again[1::2], layers))
    outs = [l.get_outputs(0)[0] for l in again]
    assert outs[-1] is t


def test_net_guard_is_per_thread():
    import threading

    a, b = gwr.Network("a"), gwr.Network("b")
    seen = {}
    entered, release = threading.Event(), threading.Event()

    def worker():
        with gwr.net_guard(b):
            entered.set()
            release.wait(5)
            seen["worker"] = gwr.current_network()

    th = threading.Thread(target=worker)
    with gwr.net_guard(a):
        th.start()
        entered.wait(5)
        seen["main"] = gwr.current_network()  # the worker's guard is not ours
        release.set()
        th.join()
    assert seen == {"main": a, "worker": b}
    assert gwr.current_network() is None


def test_plugin_property_of_plugin_layers():
    net = gwr.Network()
    qkv = net.add_input("qkv", gwr.float32, (2, 4, 24))
    ctx, present = gwr.functional.gpt_attention(qkv, num_heads=2, head_size=4)
    layer = ctx.get_parent()
    assert layer.type == gwr.LayerType.PLUGIN
    p = layer.as_layer().plugin
    assert p.plugin_namespace == "gwr" and p.plugin_type == "GPTAttention"
    assert p.fields == layer.attrs and p.fields["num_heads"] == 2
    assert (qkv + qkv).get_parent().plugin is None
    # a custom op of another domain is a plugin too
    (out,) = gwr.functional.op("MyOp", [qkv], attrs={"k": 3}, domain="my.domain")
    q = out.get_parent().plugin
    assert (q.plugin_namespace, q.plugin_type, q.fields) == ("my.domain", "MyOp", {"k": 3})
