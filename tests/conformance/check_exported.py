#!/usr/bin/env python3
"""check_exported.py - ONNX's own tools as the second judge of gwr's export.

For every test case (a directory holding model.onnx) found under the given
paths, the model gwr exported (OUTDIR/<suite>/<name>/model.onnx, written by
the roundtrip program) must:
  1. pass onnx.checker.check_model(full_check=True) (with strict shape inference);
  2. match the original structurally, as onnx sees it: graph input and
     output names, node count and op types, initializer names and values
     (onnx.numpy_helper.to_array, compared by dtype, shape and bytes);
  3. match the original field by field, the whole ModelProto, once both are
     brought to a canonical form that removes only what docs/onnx.md says
     the export may change: tensor data in typed fields vs raw_data, and
     TensorProto.doc_string (dropped);
  4. the copy roundtrip saved with external data (OUTDIR/<suite>/<name>/
     external/model.onnx + side file) passes the checker and, loaded by
     onnx with its data, is the same as the original by check 3.
Run with the project venv's python (onnx 1.23, ctest passes GWR_VENV_PY). A missing onnx module is
a failure, never a skip.

Usage: check_exported.py --out OUTDIR [--expected FILE]
                         [--roundtrip-expected FILE] [-v] PATH...
Output: one line per failure `FAIL suite/name: reason`, counts, and last a
line exactly `N passed, M failed`. Exit 0 only when every failure is listed
in the expected-failures file and no entry there is stale. A case without
an exported model is a failure unless its round trip is a listed failure
(--roundtrip-expected).
"""
import argparse
import math
import os
import struct
import sys
import time

from caselist import find_cases, read_list


# ---- canonical form -------------------------------------------------------

def typed_to_raw(onnx, np, t):
    """The little-endian bytes a TensorProto's typed fields stand for,
    converted here (not through gwr, not through numpy_helper)."""
    T = onnx.TensorProto
    dt = t.data_type
    if dt in (T.FLOAT, T.COMPLEX64):
        return np.array(t.float_data, dtype="<f4").tobytes()
    if dt in (T.DOUBLE, T.COMPLEX128):
        return np.array(t.double_data, dtype="<f8").tobytes()
    if dt == T.INT64:
        return np.array(t.int64_data, dtype="<i8").tobytes()
    if dt == T.UINT64:
        return np.array(t.uint64_data, dtype="<u8").tobytes()
    if dt == T.UINT32:
        return np.array(t.uint64_data, dtype="<u8").astype("<u4").tobytes()
    # int32_data carries int32, int16, int8, uint16, uint8, bool and the
    # float16 / bfloat16 bit patterns.
    width = {T.INT32: "<i4", T.INT16: "<i2", T.INT8: "i1", T.UINT16: "<u2",
             T.UINT8: "u1", T.BOOL: "u1", T.FLOAT16: "<u2", T.BFLOAT16: "<u2"}.get(dt)
    if width is None:
        raise RuntimeError(f"tensor '{t.name}': no typed-field conversion for data_type {dt}")
    return np.array(t.int32_data, dtype="<i8").astype(width).tobytes()


TYPED = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")


def canonical_tensor(onnx, np, t):
    if t.data_type != onnx.TensorProto.STRING and not t.HasField("raw_data") \
            and t.data_location != onnx.TensorProto.EXTERNAL:
        raw = typed_to_raw(onnx, np, t)
        for f in TYPED:
            t.ClearField(f)
        t.raw_data = raw
    t.ClearField("doc_string")  # docs/onnx.md: not kept


def canonicalize(onnx, np, msg):
    """In place: every TensorProto inside msg (initializers, attributes,
    sparse tensors, subgraphs, functions) to its canonical form."""
    if msg.DESCRIPTOR.full_name == "onnx.TensorProto":
        canonical_tensor(onnx, np, msg)
        return
    for fd, val in msg.ListFields():
        if fd.type != fd.TYPE_MESSAGE:
            continue
        if fd.is_repeated:  # protobuf 7 (the venv) has no FieldDescriptor.label
            for v in val:
                canonicalize(onnx, np, v)
        else:
            canonicalize(onnx, np, val)


def same_scalar(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    return a == b


def short(v):
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def diff(a, b, path):
    """First difference between two messages as 'path: a vs b', or None.
    Presence counts for sub-messages and oneof members (an absent shape is
    not an empty one, an unknown dim is not dim_value 0); for plain scalar
    fields only the value does (an empty doc_string set or not is the
    same)."""
    desc = a.DESCRIPTOR
    for oneof in desc.oneofs:
        wa, wb = a.WhichOneof(oneof.name), b.WhichOneof(oneof.name)
        if wa != wb:
            return f"{path}.{oneof.name}: {wa} vs {wb}"
    for fd in desc.fields:
        p = f"{path}.{fd.name}" if path else fd.name
        va, vb = getattr(a, fd.name), getattr(b, fd.name)
        if fd.is_repeated:  # protobuf 7 (the venv) has no FieldDescriptor.label
            if len(va) != len(vb):
                return f"{p}: {len(va)} entries vs {len(vb)}"
            for i, (x, y) in enumerate(zip(va, vb)):
                if fd.type == fd.TYPE_MESSAGE:
                    d = diff(x, y, f"{p}[{i}]")
                    if d:
                        return d
                elif not same_scalar(x, y):
                    return f"{p}[{i}]: {short(x)} vs {short(y)}"
        elif fd.type == fd.TYPE_MESSAGE:
            ha, hb = a.HasField(fd.name), b.HasField(fd.name)
            if ha != hb:
                return f"{p}: {'set' if ha else 'absent'} vs {'set' if hb else 'absent'}"
            if ha:
                d = diff(va, vb, p)
                if d:
                    return d
        elif not same_scalar(va, vb):
            return f"{p}: {short(va)} vs {short(vb)}"
    return None


# ---- the checks -------------------------------------------------------------

def same_array(np, x, y):
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if x.dtype == object:
        return list(x.ravel()) == list(y.ravel())
    return x.tobytes() == y.tobytes()


def structural(np, numpy_helper, orig, exp):
    """The check the brief names, through onnx's own helpers."""
    go, ge = orig.graph, exp.graph
    for what in ("input", "output"):
        a = [v.name for v in getattr(go, what)]
        b = [v.name for v in getattr(ge, what)]
        if a != b:
            return f"graph {what} names differ: {short(a)} vs {short(b)}"
    if len(go.node) != len(ge.node):
        return f"node count {len(go.node)} vs {len(ge.node)}"
    for i, (x, y) in enumerate(zip(go.node, ge.node)):
        if (x.domain or "", x.op_type) != (y.domain or "", y.op_type):
            return f"node {i}: op {x.domain}:{x.op_type} vs {y.domain}:{y.op_type}"
    a = [t.name for t in go.initializer]
    b = [t.name for t in ge.initializer]
    if a != b:
        return f"initializer names differ: {short(a)} vs {short(b)}"
    for x, y in zip(go.initializer, ge.initializer):
        ax, ay = numpy_helper.to_array(x), numpy_helper.to_array(y)
        if not same_array(np, ax, ay):
            return (f"initializer '{x.name}': {ax.dtype}{list(ax.shape)} vs "
                    f"{ay.dtype}{list(ay.shape)} or different values")
    return None


def check_case(onnx, np, numpy_helper, orig_path, exp_path, ext_path, ext_optional):
    orig = onnx.load(orig_path)
    exp = onnx.load(exp_path)
    # The full check (strict shape inference too) where the original passes
    # it; a few of onnx's own test models do not, and then the plain check.
    full = True
    try:
        onnx.checker.check_model(orig, full_check=True)
    except Exception:  # noqa: BLE001
        full = False
    try:
        onnx.checker.check_model(exp, full_check=full)
    except Exception as e:  # onnx raises ValidationError and others
        return "onnx.checker: " + " ".join(str(e).split())[:300]
    why = structural(np, numpy_helper, orig, exp)
    if why:
        return "structure: " + why
    canonicalize(onnx, np, orig)
    canonicalize(onnx, np, exp)
    why = diff(orig, exp, "")
    if why:
        return "ModelProto differs at " + why
    # The copy saved with external data: the checker on the path (it
    # follows the side file), then onnx.load pulls the data back in (and
    # resets data_location), after which it must be the same model.
    if not os.path.exists(ext_path):
        return None if ext_optional else f"no exported model at {ext_path}"
    try:
        onnx.checker.check_model(ext_path)
        # shape inference cannot read external tensors: the full check
        # on the copy loaded with its data
        ext = onnx.load(ext_path)
        onnx.checker.check_model(ext, full_check=full)
    except Exception as e:
        return "external data copy: onnx.checker: " + " ".join(str(e).split())[:300]
    canonicalize(onnx, np, ext)
    why = diff(orig, ext, "")
    if why:
        return "external data copy: ModelProto differs at " + why
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="OUTDIR the roundtrip program wrote")
    ap.add_argument("--expected", help="expected failures of this check")
    ap.add_argument("--roundtrip-expected", help="expected failures of the round trip")
    ap.add_argument("-v", action="store_true", help="also list cases without an export")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args()

    t0 = time.time()
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        print(f"FAIL: cannot import onnx/numpy with {sys.executable}: {e}")
        print("0 passed, 1 failed")
        return 1

    cases = []
    for p in a.paths:
        find_cases(p, cases)
    if not cases:
        print("FAIL: no test cases found under " + " ".join(a.paths))
        print("0 passed, 1 failed")
        return 1
    expected = read_list(a.expected)
    rt_expected = read_list(a.roundtrip_expected)

    passed = failed = xfail = unexpected = stale = noexport = 0
    lines, stale_lines = [], []
    seen = set()
    for suite, name, d in cases:
        key = f"{suite}/{name}"
        seen.add(key)
        exp_path = os.path.join(a.out, suite, name, "model.onnx")
        if not os.path.exists(exp_path):
            if key in rt_expected:
                noexport += 1
                if a.v:
                    print(f"NOEXPORT {key}: listed round-trip failure")
                if key in expected:
                    stale += 1
                    stale_lines.append(f"STALE {key}: listed in {a.expected} but not checked (no export)")
                continue
            why = f"no exported model at {exp_path}"
        else:
            try:
                ext_path = os.path.join(a.out, suite, name, "external", "model.onnx")
                why = check_case(onnx, np, numpy_helper, os.path.join(d, "model.onnx"), exp_path,
                                 ext_path, key in rt_expected)
            except Exception as e:
                why = f"{type(e).__name__}: " + " ".join(str(e).split())[:300]
        if why is None:
            passed += 1
            if key in expected:
                stale += 1
                stale_lines.append(f"STALE {key}: listed in {a.expected} but passes")
            continue
        failed += 1
        if key in expected:
            xfail += 1
            lines.append(f"FAIL {key}: {why} (expected: {expected[key]})")
        else:
            unexpected += 1
            lines.append(f"FAIL {key}: {why}")
    suites = {s for s, _, _ in cases}
    for key in expected:
        if key not in seen and key.split("/")[0] in suites:
            stale += 1
            stale_lines.append(f"STALE {key}: listed in {a.expected} but no such test case")
    for l in lines + stale_lines:
        print(l)
    print(f"{len(cases)} cases in {time.time() - t0:.1f} s (onnx {onnx.__version__})")
    print(f"no exported model (listed round-trip failure): {noexport}")
    print(f"{xfail} expected failures (listed), {unexpected} unexpected, {stale} stale entries")
    print(f"{passed} passed, {failed} failed")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
