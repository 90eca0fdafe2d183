"""gwr.Session (numpy in and out) and gwr.onnx (load/save)."""

import gc
import pathlib
import threading

import numpy as np
import pytest

import gwr
import gwr.functional as F
import gwr.onnx


def mlp(name="mlp"):
    """x float32[batch, 4] -> relu(x @ W + b) @ W2: a network with constants and a symbolic dim."""
    net = gwr.Network(name)
    x = net.add_input("x", gwr.float32, ("batch", 4))
    rng = np.random.default_rng(1)
    w, b, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8,), (8, 3)))
    h = F.relu(F.add(F.matmul(x, F.constant(w, network=net)), F.constant(b, network=net)))
    y = F.matmul(h, F.constant(w2, network=net))
    y.name = "y"
    net.mark_output(y)
    return net, (w, b, w2)


def mlp_ref(x, p):
    w, b, w2 = p
    return np.maximum(x @ w + b, 0) @ w2


@pytest.mark.parametrize("mode", ["default", "basic", "raw"])
def test_run_modes(mode):
    net, p = mlp()
    s = gwr.Session(net, optimize=mode)
    assert s.input_names == ["x"] and s.output_names == ["y"]
    assert s.optimized == (mode != "raw")
    assert (s.optimize_msg == "") == s.optimized
    for batch in (1, 5):
        xv = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        out = s.run({"x": xv})
        assert list(out) == ["y"] and out["y"].shape == (batch, 3) and out["y"].dtype == np.float32
        np.testing.assert_allclose(out["y"], mlp_ref(xv, p), rtol=1e-5, atol=1e-5)
    assert s.peak_bytes > 0
    assert "Session" in repr(s) and s.run.__doc__
    net.close()


def test_non_contiguous_and_converted_inputs():
    net, p = mlp()
    s = gwr.Session(net, optimize="raw")
    big = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    view = big[:, ::2]  # not contiguous
    assert not view.flags.c_contiguous
    np.testing.assert_allclose(s.run({"x": view})["y"], mlp_ref(view, p), rtol=1e-5, atol=1e-5)
    fortran = np.asfortranarray(big[:, :4])
    np.testing.assert_allclose(s.run({"x": fortran})["y"], mlp_ref(fortran, p), rtol=1e-5, atol=1e-5)
    # Python lists of floats cast within their kind
    lst = [[0.5, -1.0, 2.0, 0.0]]
    np.testing.assert_allclose(s.run({"x": lst})["y"], mlp_ref(np.array(lst, np.float32), p), rtol=1e-5, atol=1e-5)
    # the input is not modified by the run
    before = big.copy()
    s.run({"x": big[:, :4].copy()})
    np.testing.assert_array_equal(big, before)


def test_dtype_mismatch_names_the_input():
    net, _ = mlp()
    s = gwr.Session(net)
    with pytest.raises(gwr.DtypeError, match="'x'"):
        s.run({"x": np.zeros((1, 4), np.float64)})  # an ndarray must cast safely
    with pytest.raises(gwr.DtypeError, match="'x'"):
        s.run({"x": np.array([["a", "b", "c", "d"]])})
    # an int list for an int64 input is fine
    with gwr.Network() as n2:
        i = n2.add_input("i", gwr.int64, (3,))
        y = F.mul(i, 3)
        n2.mark_output(y)
        out = gwr.Session(n2, optimize="raw").run({"i": [1, 2, 3]})[y.name]
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, [3, 6, 9])
        # float16 input given as float16 array (zero-copy path)
        h = n2.add_input("h", gwr.float16, (2,))
        n2.mark_output(F.add(h, 1.0))


def test_bad_feeds():
    net, _ = mlp()
    s = gwr.Session(net)
    with pytest.raises(gwr.InvalidArgumentError, match="no input 'nope'"):
        s.run({"x": np.zeros((1, 4), np.float32), "nope": np.zeros(1)})
    with pytest.raises(gwr.Error):
        s.run({})  # x missing: gwr's message
    with pytest.raises(gwr.Error):
        s.run({"x": np.zeros((1, 5), np.float32)})  # a known dim contradicted
    with pytest.raises(TypeError):
        s.run([("x", 1)])
    with pytest.raises(TypeError):
        s.run({1: np.zeros(1)})
    with pytest.raises(ValueError):
        gwr.Session(net, optimize="fast")
    with pytest.raises(TypeError):
        gwr.Session("not a network")


def test_select_outputs_and_order():
    with gwr.Network() as net:
        x = net.add_input("x", gwr.float32, (3,))
        a, b = F.mul(x, 2.0), F.add(x, 1.0)
        a.name, b.name = "a", "b"
        net.mark_output(a)
        net.mark_output(b)
        s = gwr.Session(net, optimize="raw")
        xv = np.array([1, 2, 3], np.float32)
        out = s.run({"x": xv}, outputs=["b", "a"])
        assert list(out) == ["b", "a"]
        np.testing.assert_array_equal(out["b"], xv + 1)
        np.testing.assert_array_equal(out["a"], xv * 2)
        with pytest.raises(gwr.Error):
            s.run({"x": xv}, outputs=["zzz"])


def test_outputs_are_read_only_and_outlive_the_session():
    net, p = mlp()
    s = gwr.Session(net)
    xv = np.ones((2, 4), np.float32)
    y = s.run({"x": xv})["y"]
    assert not y.flags.writeable
    with pytest.raises(ValueError):
        y[0, 0] = 1
    del s
    net.close()
    gc.collect()
    junk = [np.full((2, 3), 7, np.float32) for _ in range(100)]  # reuse freed memory, if it were
    np.testing.assert_allclose(y, mlp_ref(xv, p), rtol=1e-5, atol=1e-5)
    assert y.copy().flags.writeable and junk


def test_output_that_is_a_reshaped_constant_is_read_only():
    with gwr.Network() as net:
        c = F.constant(np.arange(6, dtype=np.float32), network=net)
        r = F.reshape(c, (2, 3))
        net.mark_output(r)
        for mode in ("raw", "default"):
            out = gwr.Session(net, optimize=mode).run({})[r.name]
            np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3))
            assert not out.flags.writeable
        # and the constant is unchanged for the next run
        out2 = gwr.Session(net, optimize="raw").run({})[r.name]
        np.testing.assert_array_equal(out2, np.arange(6).reshape(2, 3))


def test_an_output_fed_back_as_an_input():
    net, p = mlp()
    with gwr.Network() as net2:
        y = net2.add_input("y", gwr.float32, ("batch", 3))
        z = F.mul(y, 2.0)
        net2.mark_output(z)
        xv = np.ones((2, 4), np.float32)
        first = gwr.Session(net).run({"x": xv})["y"]  # read-only, the executor's memory
        second = gwr.Session(net2, optimize="raw").run({"y": first})[z.name]
        np.testing.assert_allclose(second, 2 * mlp_ref(xv, p), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(first, mlp_ref(xv, p), rtol=1e-5, atol=1e-5)
    net.close()


def test_output_is_the_input():
    with gwr.Network() as net:
        x = net.add_input("x", gwr.float32, (3,))
        net.mark_output(x)
        xv = np.array([1, 2, 3], np.float32)
        s = gwr.Session(net, optimize="raw")
        out = s.run({"x": xv})["x"]
        # the output is the input's value: zero-copy both ways, so it is the caller's memory
        assert np.shares_memory(out, xv) and not out.flags.writeable
        big = np.arange(6, dtype=np.float32)
        strided = s.run({"x": big[::2]})["x"]  # converted: a copy
        assert not np.shares_memory(strided, big)
        np.testing.assert_array_equal(strided, [0, 2, 4])
        del xv, s
        gc.collect()
        np.testing.assert_array_equal(out, [1, 2, 3])


def test_dtypes_through_a_session():
    cases = [(gwr.float16, np.float16), (gwr.int32, np.int32), (gwr.int8, np.int8), (gwr.uint8, np.uint8),
             (gwr.bool_, np.bool_), (gwr.float64, np.float64), (gwr.int64, np.int64)]
    with gwr.Network() as net:
        outs = []
        for i, (dt, npt) in enumerate(cases):
            t = net.add_input(f"i{i}", dt, (2,))
            o = F.op("Identity", [t])[0]
            o.name = f"o{i}"
            net.mark_output(o)
            outs.append(npt)
        feeds = {f"i{i}": np.array([1, 0], npt) for i, (_, npt) in enumerate(cases)}
        r = gwr.Session(net, optimize="raw").run(feeds)
        for i, npt in enumerate(outs):
            assert r[f"o{i}"].dtype == npt
            np.testing.assert_array_equal(r[f"o{i}"], np.array([1, 0], npt))


def test_bfloat16_output_comes_as_float32():
    with gwr.Network() as net:
        x = net.add_input("x", gwr.float32, (3,))
        y = F.cast(x, gwr.bfloat16)
        net.mark_output(y)
        out = gwr.Session(net, optimize="raw").run({"x": np.array([1.0, 0.5, 3.0], np.float32)})[y.name]
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, [1.0, 0.5, 3.0])


def test_small_types_come_as_float32():
    # int4 keeps the low bits of the truncated value (-9 -> 7), float8e4m3fn
    # saturates (500 -> 448, its largest value), float4e2m1 rounds half to
    # even on its grid 0 0.5 1 1.5 2 3 4 6 (5 -> 4)
    with gwr.Network() as net:
        x = net.add_input("x", gwr.float32, (3,))
        D = gwr.DataType
        outs = [F.cast(x, t) for t in (D.INT4, D.FLOAT8E4M3FN, D.FLOAT4E2M1)]
        for o in outs:
            net.mark_output(o)
        r = gwr.Session(net, optimize="raw").run({"x": np.array([-9.0, 500.0, 5.0], np.float32)})
        assert all(r[o.name].dtype == np.float32 for o in outs)
        np.testing.assert_array_equal(r[outs[0].name], [7, 4, 5])
        np.testing.assert_array_equal(r[outs[1].name], [-9, 448, 5])
        np.testing.assert_array_equal(r[outs[2].name], [-6, 6, 4])


def test_raw_session_refuses_a_changed_network():
    net, _ = mlp()
    s = gwr.Session(net, optimize="raw")
    opt = gwr.Session(net)
    xv = np.ones((1, 4), np.float32)
    s.run({"x": xv})
    F.relu(net.inputs[0])  # a new layer
    with pytest.raises(gwr.StateError, match="changed"):
        s.run({"x": xv})
    opt.run({"x": xv})  # an optimized session runs its own copy
    gwr.Session(net, optimize="raw").run({"x": xv})  # a new session is fine
    net.close()


def test_closed_network():
    net, _ = mlp()
    s = gwr.Session(net, optimize="raw")
    o = gwr.Session(net)
    net.close()
    for sess in (s, o):
        with pytest.raises(gwr.LifetimeError):
            sess.run({"x": np.ones((1, 4), np.float32)})
    with pytest.raises(gwr.LifetimeError):
        gwr.Session(net)


def test_threads_share_a_session_one_at_a_time():
    net, p = mlp()
    s = gwr.Session(net, threads=2)
    xv = np.random.default_rng(9).standard_normal((64, 4)).astype(np.float32)
    want = mlp_ref(xv, p)
    errors, good = [], []

    def work():
        for _ in range(20):
            try:
                good.append(np.allclose(s.run({"x": xv})["y"], want, rtol=1e-5, atol=1e-5))
            except gwr.StateError:
                errors.append(1)  # refused while another thread runs it: allowed

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert good and all(good) and len(good) + len(errors) == 60
    net.close()


# ---- onnx ----

def test_onnx_round_trip(tmp_path):
    net, p = mlp("rt")
    path = tmp_path / "m.onnx"
    gwr.onnx.save(net, path)
    back = gwr.onnx.load(str(path))
    # loading adds what the file says (ir_version, opsets...): the second round trip is exact
    assert back.num_layers == net.num_layers
    again = gwr.onnx.load_bytes(gwr.onnx.save_bytes(back))
    assert back.equal(again), back.diff(again)
    xv = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(gwr.Session(back).run({"x": xv})["y"], mlp_ref(xv, p), rtol=1e-5, atol=1e-5)
    data = gwr.onnx.save_bytes(net)
    assert isinstance(data, bytes) and data == path.read_bytes()
    assert gwr.onnx.load_bytes(data, name="mem").equal(back)
    # the file can be read by onnx itself
    import onnx
    m = onnx.load(str(path))
    assert [o.name for o in m.graph.output] == ["y"]
    gwr.onnx.save(net, pathlib.Path(tmp_path / "ext.onnx"), external_data=True)
    ext = gwr.onnx.load(tmp_path / "ext.onnx", infer_shapes=True)
    np.testing.assert_allclose(gwr.Session(ext).run({"x": xv})["y"], mlp_ref(xv, p), rtol=1e-5, atol=1e-5)


def test_onnx_errors(tmp_path):
    net, _ = mlp()
    good = gwr.onnx.save_bytes(net)
    bad = tmp_path / "cut.onnx"
    bad.write_bytes(good[: len(good) // 2])
    with pytest.raises(gwr.ParseError) as e:
        gwr.onnx.load(bad)
    assert "cut.onnx" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(gwr.FileError, match="missing.onnx"):
        gwr.onnx.load(tmp_path / "missing.onnx")
    with pytest.raises(gwr.FileError):
        gwr.onnx.load(tmp_path)
    with pytest.raises(gwr.ParseError, match="<bytes>"):
        gwr.onnx.load_bytes(b"\xff\xff\xff garbage")
    with pytest.raises(gwr.FileError):
        gwr.onnx.save(net, tmp_path / "no" / "such" / "dir.onnx")
    with pytest.raises(TypeError):
        gwr.onnx.save("net", tmp_path / "x.onnx")
    net.close()
    with pytest.raises(gwr.LifetimeError):
        gwr.onnx.save_bytes(net)


def test_threads_past_the_limit_refused():
    """More threads than GWR_SESSION_MAX_THREADS (256) is refused, not started (issue 22)."""
    net, _ = mlp()
    with pytest.raises(gwr.Error, match="at most 256"):
        gwr.Session(net, threads=257, optimize="raw")
    s = gwr.Session(net, threads=2)
    assert s.run({"x": np.ones((1, 4), np.float32)})["y"].shape == (1, 3)


def test_profile(tmp_path):
    """Session(..., profile=True): one event per layer executed, the phases, a Chrome trace (issue 22)."""
    import json

    net, p = mlp()
    s = gwr.Session(net, optimize="raw", profile=True)
    assert [e["name"] for e in s.profile()] == ["plan"]
    x = np.ones((2, 4), np.float32)
    for _ in range(2):
        s.run({"x": x})
    ev = s.profile()
    assert all(e["dur_ns"] >= 0 for e in ev)
    layers = [e for e in ev if e["cat"] == "layer"]
    live = [l for l in net.layers]  # as written: every live layer runs once per run
    assert len(layers) == 2 * len(live)
    assert sorted(e["name"] for e in layers) == sorted(l.name for l in live for _ in range(2))
    assert [e["name"] for e in ev if e["cat"] == "run"] == ["run", "run"]
    mm = [e for e in layers if e["op"] == "MatMul"]
    assert mm and mm[0]["shapes"].endswith("-> float32[2,8]") and mm[0]["depth"] == 0
    path = tmp_path / "p.json"
    s.write_profile(str(path))
    doc = json.loads(path.read_text())
    assert len(doc["traceEvents"]) == len(ev)
    assert {e["ph"] for e in doc["traceEvents"]} == {"X"}
    opt = gwr.Session(net, profile=True)
    assert [e["name"] for e in opt.profile()] == ["plan", "optimize"]
    assert gwr.Session(net).profile() == []


def test_session_bind_plans_for_the_bound_extent():
    """bind={"batch": 2}: the optimized copy knows the dim; the session computes mlp's numbers
    (numpy's, independently) at that extent and refuses another one."""
    net, p = mlp("bind")
    s = gwr.Session(net, bind={"batch": 2})
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(s.run({"x": x})["y"], mlp_ref(x, p), rtol=1e-5, atol=1e-5)
    with pytest.raises(gwr.Error, match="dim 0 is 3, expected 2"):
        s.run({"x": np.zeros((3, 4), np.float32)})
    # unbound, the same network takes any batch
    assert gwr.Session(net).run({"x": np.zeros((3, 4), np.float32)})["y"].shape == (3, 3)


@pytest.mark.parametrize("bind, err, msg", [
    ([("batch", 2)], TypeError, "bind must be a dict"),
    ({"batch": -1}, ValueError, "extent"),
    ({"batch": "2"}, ValueError, "extent"),
    ({"batch": True}, ValueError, "extent"),
    ({"batch": 2 ** 70}, ValueError, "extent"),
    ({1: 2}, ValueError, "symbol"),
    ({"bacth": 2}, ValueError, "no input of the network has"),
])
def test_session_bind_bad(bind, err, msg):
    net, _ = mlp("bind_bad")
    with pytest.raises(err, match=msg):
        gwr.Session(net, bind=bind)
