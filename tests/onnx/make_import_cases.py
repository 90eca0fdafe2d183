#!/usr/bin/python3
"""make_import_cases.py DIR - writes the ONNX models that tests/unit/test_onnx_import.c
loads: what the ONNX backend test data lacks (external data, metadata, unnamed and
duplicate node names, sparse initializers, functions, every element type, ...) and
malformed models for every error path of the importer.

Run with Debian's /usr/bin/python3 (python3-onnx). Models that onnx.checker would
reject are built on purpose; nothing here calls the checker. Where onnx.helper cannot
express a malformation, the bytes are written by hand with the small encoder below.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1]


def path(name):
    p = os.path.join(OUT, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def save(name, m):
    data = m if isinstance(m, (bytes, bytearray)) else m.SerializeToString()
    with open(path(name), "wb") as f:
        f.write(data)


def vi(name, et, shape):
    return helper.make_tensor_value_info(name, et, shape)


def model(nodes, inputs, outputs, inits=(), name="g", opset=17, **kw):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits), **kw)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def f32(name, shape, start=0.0):
    n = int(np.prod(shape)) if shape else 1
    return numpy_helper.from_array((np.arange(n, dtype=np.float32) + start).reshape(shape), name)


# ---- a hand encoder for what onnx.helper will not write ----

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def fld(num, wt, payload):
    if wt == 2:
        return varint(num << 3 | 2) + varint(len(payload)) + payload
    return varint(num << 3 | wt) + payload


def ld(num, b):
    return fld(num, 2, b if isinstance(b, bytes) else b.encode())


# ---- features.onnx: most of docs/onnx.md in one model ----

def features():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    x.type.denotation = "TENSOR"
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    x.doc_string = "the input"
    bias = vi("bias", TensorProto.FLOAT, [4])
    W = f32("W", [4, 4])
    bias_default = f32("bias", [4], 100.0)
    clash = f32("clash", [2])
    sp = helper.make_sparse_tensor(
        helper.make_tensor("sp", TensorProto.FLOAT, [2], [5.0, 6.0]),
        helper.make_tensor("sp_idx", TensorProto.INT64, [2], [1, 7]), [3, 3])
    t1 = helper.make_tensor("t1", TensorProto.INT32, [2], [1, 2])
    t2 = helper.make_tensor("t2", TensorProto.FLOAT, [], [3.5])
    sp_attr = helper.make_sparse_tensor(
        helper.make_tensor("v", TensorProto.INT64, [1], [9]),
        helper.make_tensor("i", TensorProto.INT64, [1], [0]), [4])
    foo = helper.make_node("Foo", ["clip", "clash", "sp", ""], ["f0", "", "f2"], name="clash", domain="org.custom",
                           s=b"hello", ss=[b"a", b"bc"], f=1.5, ts=[t1, t2], ints=[])
    foo.attribute.extend([helper.make_attribute("sp", sp_attr)])
    tp = onnx.AttributeProto(name="tp", type=onnx.AttributeProto.TYPE_PROTO)
    tp.tp.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT16, [2, "n"]))
    foo.attribute.append(tp)
    ref = onnx.AttributeProto(name="ref", type=onnx.AttributeProto.INT, ref_attr_name="outer")
    foo.attribute.append(ref)
    # lists of messages, serialized without NUL bytes (a STRINGS attribute cannot keep those yet)
    tps = onnx.AttributeProto(name="tps", type=onnx.AttributeProto.TYPE_PROTOS)
    tps.type_protos.extend([helper.make_tensor_type_proto(TensorProto.FLOAT, [2]),
                            helper.make_tensor_type_proto(TensorProto.INT64, [3, 5])])
    foo.attribute.append(tps)
    sps = onnx.AttributeProto(name="sps", type=onnx.AttributeProto.SPARSE_TENSORS)
    sps.sparse_tensors.extend([helper.make_sparse_tensor(
        helper.make_tensor("v", TensorProto.INT64, [1], [9]), helper.make_tensor("i", TensorProto.INT64, [1], [1]), [4])])
    foo.attribute.append(sps)
    for a in (tps, sps):
        for m in list(a.type_protos) + list(a.sparse_tensors):
            assert b"\0" not in m.SerializeToString()
    # GRAPHS: two bodies, both reading the enclosing graph's "x"
    bodies = [helper.make_graph([helper.make_node(op, ["x"], ["b_out"])], "body_" + op, [],
                                [vi("b_out", TensorProto.FLOAT, None)]) for op in ("Neg", "Abs")]
    bar = helper.make_node("Bar", ["x"], ["bar"], name="bar", domain="org.custom", bodies=bodies)
    for a in foo.attribute:
        if a.name == "f":
            a.doc_string = "attr doc"
    clip = helper.make_node("Clip", ["relu", "", ""], ["clip"], name="clip", domain="ai.onnx", doc_string="node doc")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"]),
        helper.make_node("Add", ["mm", "bias"], ["add"], name="dup"),
        helper.make_node("Relu", ["add"], ["relu"], name="dup"),
        clip,
        foo,
        helper.make_node("Constant", [], ["c_int"], value_ints=[1, 2, 3]),
        helper.make_node("Constant", [], ["c_f"], value_float=2.5),
        helper.make_node("Add", ["f0", "f2"], ["out"], name="Add_0"),
        bar,
    ]
    add_vi = vi("add", TensorProto.FLOAT, ["batch", 4])
    add_vi.doc_string = "add doc"
    g = helper.make_graph(nodes, "features", [x, bias], [vi("out", TensorProto.FLOAT, ["batch", 4]),
                                                          vi("c_int", TensorProto.INT64, [3])],
                          [W, bias_default, clash], doc_string="graph doc",
                          value_info=[add_vi, vi("nonexistent", TensorProto.FLOAT, [1])], sparse_initializer=[sp])
    qa = g.quantization_annotation.add()
    qa.tensor_name = "mm"
    e = qa.quant_parameter_tensor_names.add()
    e.key, e.value = "SCALE_TENSOR", "W"
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3),
                                            helper.make_opsetid("org.custom", 1)],
                          producer_name="gwr-test", producer_version="1.2", domain="org.test", model_version=7,
                          doc_string="model doc")
    m.ir_version = 8
    helper.set_model_props(m, {"author": "me", "license": "MIT"})
    fn = helper.make_function("org.custom", "MyFn", ["a"], ["b"], [helper.make_node("Neg", ["a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    m.functions.extend([fn])
    ti = m.training_info.add()
    ti.algorithm.CopyFrom(helper.make_graph([helper.make_node("Identity", ["W"], ["W2"])], "algo", [], []))
    b = ti.update_binding.add()
    b.key, b.value = "W", "W2"
    save("features.onnx", m)


# ---- every element type, typed fields and raw_data ----

def dtypes():
    inits = []
    cases = [
        (TensorProto.FLOAT, np.float32, [1.5, -2.0, 3.25]),
        (TensorProto.UINT8, np.uint8, [0, 200, 255]),
        (TensorProto.INT8, np.int8, [-128, 0, 127]),
        (TensorProto.UINT16, np.uint16, [0, 40000, 65535]),
        (TensorProto.INT16, np.int16, [-32768, 1, 32767]),
        (TensorProto.INT32, np.int32, [-5, 0, 2**31 - 1]),
        (TensorProto.INT64, np.int64, [-(2**62), 1, 2**62]),
        (TensorProto.BOOL, np.bool_, [True, False, True]),
        (TensorProto.FLOAT16, np.float16, [0.5, -1.0, 65504.0]),
        (TensorProto.DOUBLE, np.float64, [1e300, -0.5, 2.0]),
        (TensorProto.UINT32, np.uint32, [0, 7, 2**32 - 1]),
        (TensorProto.UINT64, np.uint64, [0, 7, 2**64 - 1]),
        (TensorProto.COMPLEX64, np.complex64, [1 + 2j, -3j, 4]),
        (TensorProto.COMPLEX128, np.complex128, [1 + 2j, -3j, 4]),
    ]
    for dt, npt, vals in cases:
        a = np.array(vals, dtype=npt)
        inits.append(numpy_helper.from_array(a, f"r{dt}"))       # raw_data
        typed = helper.make_tensor(f"t{dt}", dt, [3], a.tolist() if dt not in (TensorProto.COMPLEX64, TensorProto.COMPLEX128)
                                   else a, raw=False)
        if dt == TensorProto.FLOAT16:  # helper writes float16 bits into int32_data
            typed = helper.make_tensor(f"t{dt}", dt, [3], a, raw=False)
        inits.append(typed)
    # bfloat16: bits 0x3fc0 (1.5), 0xc000 (-2), 0x0000
    bf = [0x3FC0, 0xC000, 0x0000]
    inits.append(TensorProto(name="t16", data_type=16, dims=[3], int32_data=bf))
    inits.append(TensorProto(name="r16", data_type=16, dims=[3], raw_data=np.array(bf, np.uint16).tobytes()))
    # float8 (17..20): one byte per element, in int32_data or raw_data
    for dt in (17, 18, 19, 20):
        inits.append(TensorProto(name=f"t{dt}", data_type=dt, dims=[4], int32_data=[0, 1, 0x7E, 0xFF]))
        inits.append(TensorProto(name=f"r{dt}", data_type=dt, dims=[4], raw_data=bytes([0, 1, 0x7E, 0xFF])))
    # int4/uint4 (21, 22): two elements per byte, first in the low nibble; 5 elements -> 3 bytes
    for dt in (21, 22):
        inits.append(TensorProto(name=f"t{dt}", data_type=dt, dims=[5], int32_data=[0x21, 0x43, 0x05]))
        inits.append(TensorProto(name=f"r{dt}", data_type=dt, dims=[5], raw_data=bytes([0x21, 0x43, 0x05])))
    inits.append(helper.make_tensor("str", TensorProto.STRING, [2], [b"ab", b"\x00z"]))
    inits.append(f32("empty", [0, 3]))
    inits.append(TensorProto(name="empty_typed", data_type=1, dims=[2, 0]))
    inits.append(f32("big", [70000]))  # above the importer's chunked-copy threshold
    outs = [vi(t.name, t.data_type, list(t.dims)) for t in inits]
    save("dtypes.onnx", model([], [], outs, inits, name="dtypes"))


# ---- subgraphs: captures, initializers inside, reading a later outer tensor ----

def subgraphs():
    then_g = helper.make_graph(
        [helper.make_node("Add", ["x", "k"], ["t_out"], name="then_add")], "then_g", [],
        [vi("t_out", TensorProto.FLOAT, [2])], [f32("k", [2], 10.0)])
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "W"], ["acc_out"], name="deep_add")], "body",
        [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("acc_in", TensorProto.FLOAT, [2])],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph(
        [helper.make_node("Loop", ["n", "cond", "late"], ["e_out"], name="inner_loop", body=loop_body)], "else_g", [],
        [vi("e_out", TensorProto.FLOAT, [2])])
    nodes = [
        helper.make_node("If", ["cond"], ["if_out"], name="the_if", then_branch=then_g, else_branch=else_g),
        # produced after the If that reads it inside its else branch (unsorted, but well-defined)
        helper.make_node("Relu", ["x"], ["late"], name="late_relu"),
    ]
    save("subgraphs.onnx", model(nodes, [vi("x", TensorProto.FLOAT, [2]), vi("cond", TensorProto.BOOL, []),
                                         vi("n", TensorProto.INT64, [])],
                                 [vi("if_out", TensorProto.FLOAT, [2])], [f32("W", [2], 1.0)], name="subgraphs"))


def types():
    seq = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, ["n"])
    mp = onnx.ValueInfoProto(name="map")
    mp.type.map_type.key_type = TensorProto.INT64
    mp.type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    opt = onnx.ValueInfoProto(name="opt")
    opt.type.CopyFrom(helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.INT32, [])))
    sp = onnx.ValueInfoProto(name="sp")
    sp.type.sparse_tensor_type.elem_type = TensorProto.FLOAT
    for d in (3, 3):
        sp.type.sparse_tensor_type.shape.dim.add().dim_value = d
    unk = onnx.ValueInfoProto(name="untyped")
    neg = vi("neg", TensorProto.FLOAT, [2])
    neg.type.tensor_type.shape.dim[0].dim_value = -1
    noshape = onnx.ValueInfoProto(name="noshape")
    noshape.type.tensor_type.elem_type = TensorProto.INT8
    ins = [seq, mp, opt, sp, unk, neg, noshape]
    nodes = [helper.make_node("Identity", [i.name], [i.name + "_o"]) for i in ins]
    save("types.onnx", model(nodes, ins, [vi(i.name + "_o", 0, None) for i in ins], name="types"))


def infer():
    nodes = [helper.make_node("MatMul", ["x", "W"], ["mm"]),
             helper.make_node("Relu", ["mm"], ["r"]),
             helper.make_node("MatMul", ["x", "V"], ["bad"]),  # [b,4] x [3,3]: inference fails
             helper.make_node("Relu", ["bad"], ["r2"])]
    save("infer.onnx", model(nodes, [vi("x", TensorProto.FLOAT, ["b", 4])],
                             [vi("r", 0, None), vi("r2", 0, None)], [f32("W", [4, 5]), f32("V", [3, 3])]))


def question_dims():
    # Paddle2ONNX writes dim_param "?" for every dynamic dim: an unknown
    # dim, not one symbol shared by all of them (x is [1, 3, 48, 192] at run time)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["?", 3, "?", "?"])
    save("question_dims.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [x],
                                     [vi("y", TensorProto.FLOAT, ["?", 3, "?", "?"])]))


def merged_graph_fields():
    # ModelProto.graph written twice: protobuf merges the two (repeated fields concatenate).
    g1 = helper.make_graph([helper.make_node("Add", ["x", "W1"], ["y"])], "merged", [vi("x", TensorProto.FLOAT, [2])],
                           [], [f32("W1", [2])])
    g2 = helper.make_graph([helper.make_node("Add", ["y", "W2"], ["z"])], "", [], [vi("z", TensorProto.FLOAT, [2])],
                           [f32("W2", [2], 5.0)])
    head = fld(1, 0, varint(8)) + ld(8, ld(1, b"") + fld(2, 0, varint(17)))
    save("merged.onnx", head + ld(7, g1.SerializeToString()) + ld(7, g2.SerializeToString()))


def wire_forms():
    """Initializers in the wire forms gwr reads without protobuf-c (docs/onnx.md): dims packed or not,
    singular fields repeated (the last wins), an empty tensor; one with float_data, which goes through
    protobuf-c, for comparison."""
    import struct
    def tensor(*fields):
        return b"".join(fields)
    raw = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    a = tensor(fld(1, 0, varint(2)), fld(1, 0, varint(3)), fld(2, 0, varint(1)), ld(8, "A"), ld(9, raw))
    b = tensor(ld(1, varint(2) + varint(3)), fld(2, 0, varint(1)), ld(8, "B"), ld(9, raw))  # packed dims
    c = tensor(ld(9, b"\0" * 4), fld(2, 0, varint(6)), ld(8, "wrong"), fld(1, 0, varint(3)),
               fld(2, 0, varint(7)), ld(8, "C"), ld(9, struct.pack("<3q", -1, 0, 2**40)))  # last wins: int64 [3]
    d = tensor(fld(1, 0, varint(0)), fld(2, 0, varint(1)), ld(8, "D"), ld(9, b""))  # float[0]
    # protobuf's own parser reads the hand-encoded bytes as intended (field numbers, last-wins)
    for t, name, dt, dims in ((a, "A", 1, [2, 3]), (b, "B", 1, [2, 3]), (c, "C", 7, [3]), (d, "D", 1, [0])):
        pt = TensorProto.FromString(t)
        assert (pt.name, pt.data_type, list(pt.dims)) == (name, dt, dims), (pt.name, pt.data_type, pt.dims)
    assert TensorProto.FromString(c).raw_data == struct.pack("<3q", -1, 0, 2**40)
    e = f32("E", [2, 3], 1.0)
    e.ClearField("raw_data")
    e.float_data.extend([1, 2, 3, 4, 5, 6])
    outs = [vi(n + "_y", 0, None) for n in "ABCDE"]
    g = helper.make_graph([helper.make_node("Identity", [n], [n + "_y"]) for n in "ABCDE"], "wire", [], outs)
    body = g.SerializeToString() + b"".join(ld(5, t) for t in (a, b, c, d)) + ld(5, e.SerializeToString())
    head = fld(1, 0, varint(8)) + ld(8, ld(1, b"") + fld(2, 0, varint(17)))
    save("wire_forms.onnx", head + ld(7, body))


# ---- external data ----

def external():
    d = "ext"
    a = np.arange(1024, dtype=np.float32)
    b = np.array([1.0, 2.0, 3.0], np.float32)
    c = np.array([7, -7], np.int64)
    blob = bytearray(12288)
    blob[0:4096] = a.tobytes()
    blob[4097:4109] = b.tobytes()  # misaligned: copied, not borrowed
    blob[8192:8208] = c.tobytes()
    with open(path(d + "/weights.bin"), "wb") as f:
        f.write(blob)
    with open(path(d + "/sub/w2.bin"), "wb") as f:
        f.write(np.array([42.0], np.float32).tobytes())
    with open(path("outside.bin"), "wb") as f:
        f.write(bytes(8192))
    if not os.path.lexists(path(d + "/link.bin")):
        os.symlink("../outside.bin", path(d + "/link.bin"))

    def ext(name, dt, dims, **kv):
        t = TensorProto(name=name, data_type=dt, dims=dims, data_location=TensorProto.EXTERNAL)
        for k, v in kv.items():
            e = t.external_data.add()
            e.key, e.value = k, str(v)
        return t

    def one(fname, t):
        save(d + "/" + fname, model([helper.make_node("Identity", [t.name], ["y"])], [], [vi("y", t.data_type, None)],
                                    [t], name=fname))

    inits = [ext("a", 1, [1024], location="weights.bin", offset=0),
             ext("b", 1, [3], location="weights.bin", offset=4097, length=12),
             ext("c", 7, [2], location="weights.bin", offset=8192, length=16),
             ext("d", 1, [1], location="sub/w2.bin")]
    nodes = [helper.make_node("Identity", [t.name], [t.name + "_o"]) for t in inits]
    save(d + "/ok.onnx", model(nodes, [], [vi(t.name + "_o", t.data_type, None) for t in inits], inits, name="ext"))
    one("abs.onnx", ext("a", 1, [4], location=os.path.abspath(path("outside.bin"))))
    one("dotdot.onnx", ext("a", 1, [4], location="../outside.bin"))
    one("dotdot_inside.onnx", ext("a", 1, [4], location="sub/../weights.bin"))
    one("link.onnx", ext("a", 1, [4], location="link.bin"))
    one("eof.onnx", ext("a", 1, [4], location="weights.bin", offset=12288 - 8))
    one("eof_len.onnx", ext("a", 1, [4], location="weights.bin", offset=0, length=20000))
    one("badoff.onnx", ext("a", 1, [4], location="weights.bin", offset="12x"))
    one("badlen.onnx", ext("a", 1, [4], location="weights.bin", offset=0, length=8))
    one("missing.onnx", ext("a", 1, [4], location="nothere.bin"))
    one("noloc.onnx", ext("a", 1, [4], offset=0))


# ---- malformed models ----

def errors():
    x = vi("x", TensorProto.FLOAT, [2, 3])

    def ident(inits, name):
        t = inits[0]
        save(name, model([helper.make_node("Identity", [t.name], ["y"])], [], [vi("y", 1, None)], inits))

    t = f32("W", [2, 3])
    t.raw_data = t.raw_data[:20]
    ident([t], "err_raw_size.onnx")
    ident([TensorProto(name="W", data_type=1, dims=[2, 3], float_data=[1.0] * 5)], "err_typed_count.onnx")
    ident([TensorProto(name="W", data_type=1, dims=[2], int64_data=[1, 2])], "err_typed_field.onnx")
    ident([TensorProto(name="W", data_type=1, dims=[-1, 3], raw_data=b"")], "err_neg_dims.onnx")
    ident([TensorProto(name="W", data_type=1, dims=[2**40, 2**40, 2**40], raw_data=b"")], "err_overflow.onnx")
    ident([TensorProto(name="W", data_type=1, dims=[2**62], raw_data=b"")], "err_overflow_bytes.onnx")
    ident([TensorProto(name="W", data_type=1, dims=[2**40], raw_data=b"\0\0\0\0")], "err_absurd.onnx")
    ident([TensorProto(name="W", data_type=99, dims=[1], raw_data=b"\0")], "err_elem_type.onnx")
    ident([TensorProto(name="W", data_type=0, dims=[1], raw_data=b"\0")], "err_no_dtype.onnx")
    ident([TensorProto(name="W", data_type=8, dims=[1], raw_data=b"ab")], "err_string_raw.onnx")
    ident([TensorProto(name="W", data_type=1, dims=[1], raw_data=b"\0\0\0\0", float_data=[1.0])], "err_raw_and_typed.onnx")
    seg = TensorProto(name="W", data_type=1, dims=[1], raw_data=b"\0\0\0\0")
    seg.segment.begin, seg.segment.end = 0, 1
    ident([seg], "err_segment.onnx")
    save("err_vi_elem_type.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", 77, [2])], [vi("y", 1, None)]))
    save("err_undefined.onnx", model([helper.make_node("Relu", ["x"], ["a"]),
                                      helper.make_node("Conv", ["a", "x9"], ["y"], name="Conv_3")],
                                     [x], [vi("y", 1, None)]))
    save("err_dup_output.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="A"),
                                       helper.make_node("Neg", ["x"], ["y"], name="B")], [x], [vi("y", 1, None)]))
    save("err_dup_output_same.onnx", model([helper.make_node("Split", ["x"], ["y", "y"], name="S")], [x],
                                           [vi("y", 1, None)]))
    save("err_writes_input.onnx", model([helper.make_node("Relu", ["x"], ["x"], name="R")], [x], [vi("x", 1, None)]))
    save("err_writes_init.onnx", model([helper.make_node("Relu", ["x"], ["W"], name="R")], [x], [vi("W", 1, None)],
                                       [f32("W", [2, 3])]))
    save("err_dup_init.onnx", model([helper.make_node("Relu", ["W"], ["y"])], [], [vi("y", 1, None)],
                                    [f32("W", [2]), f32("W", [2])]))
    save("err_cycle.onnx", model([helper.make_node("Add", ["x", "b"], ["a"], name="A"),
                                  helper.make_node("Relu", ["a"], ["b"], name="B")], [x], [vi("b", 1, None)]))
    save("err_self_cycle.onnx", model([helper.make_node("Add", ["x", "y"], ["y"], name="A")], [x], [vi("y", 1, None)]))
    then_g = helper.make_graph([helper.make_node("Identity", ["if_out"], ["t"])], "then", [], [vi("t", 1, None)])
    save("err_subgraph_cycle.onnx", model([helper.make_node("If", ["c"], ["if_out"], name="I", then_branch=then_g,
                                                            else_branch=then_g)],
                                          [vi("c", TensorProto.BOOL, [])], [vi("if_out", 1, None)]))
    save("err_empty.onnx", model([], [x], []))
    save("ok_passthrough.onnx", model([], [x], [vi("x", TensorProto.FLOAT, [2, 3])]))
    save("err_no_graph.onnx", fld(1, 0, varint(8)) + ld(2, b"nothing here"))
    n = helper.make_node("Relu", ["x"], ["y"], name="R")
    n.attribute.append(onnx.AttributeProto(name="alpha", f=1.0))
    save("err_attr_notype.onnx", model([n], [x], [vi("y", 1, None)]))
    n = helper.make_node("Relu", ["x"], ["y"], name="R")
    a = onnx.AttributeProto()
    a.MergeFromString(ld(1, b"alpha") + fld(20, 0, varint(99)))
    n.attribute.append(a)
    save("err_attr_badtype.onnx", model([n], [x], [vi("y", 1, None)]))
    save("err_dup_attr.onnx", model([helper.make_node("LeakyRelu", ["x"], ["y"], name="L", alpha=0.1)], [x],
                                    [vi("y", 1, None)]))
    m = onnx.load(path("err_dup_attr.onnx"))
    m.graph.node[0].attribute.append(helper.make_attribute("alpha", 0.2))
    save("err_dup_attr.onnx", m)
    n = helper.make_node("Foo", ["x"], ["y"], name="F", domain="org.custom", strs=[b"ok", b"a\x00b"])
    save("strings_nul.onnx", model([n], [x], [vi("y", 1, None)]))
    save("err_constant_novalue.onnx", model([helper.make_node("Constant", [], ["y"], name="C")], [], [vi("y", 1, None)]))
    save("err_no_op.onnx", model([helper.make_node("", ["x"], ["y"], name="R")], [x], [vi("y", 1, None)]))
    save("err_unnamed_input.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [x, vi("", 1, [1])],
                                         [vi("y", 1, None)]))
    save("err_output_undefined.onnx", model([helper.make_node("Relu", ["x"], ["y"])], [x], [vi("nope", 1, None)]))
    save("err_nul_name.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="a\x00b")], [x], [vi("y", 1, None)]))
    m = model([helper.make_node("Relu", ["x"], ["y"])], [x], [vi("y", 1, None)])
    m.opset_import[0].version = -1
    save("err_bad_opset.onnx", m)
    tp = helper.make_tensor_type_proto(TensorProto.FLOAT, [1])
    for _ in range(40):
        tp = helper.make_sequence_type_proto(tp)
    deep_vi = onnx.ValueInfoProto(name="x")
    deep_vi.type.CopyFrom(tp)
    save("err_type_nested.onnx", model([helper.make_node("Identity", ["x"], ["y"])], [deep_vi], [vi("y", 0, None)]))
    outer_g = helper.make_graph([], "passthrough", [], [vi("x", TensorProto.FLOAT, [2, 3])])
    save("ok_subgraph_outer_output.onnx", model([helper.make_node("If", ["c"], ["o"], then_branch=outer_g,
                                                                  else_branch=outer_g)],
                                                [x, vi("c", TensorProto.BOOL, [])], [vi("o", 1, None)]))
    nope_g = helper.make_graph([], "nope", [], [vi("nope", 1, None)])
    save("err_subgraph_output_undefined.onnx", model([helper.make_node("If", ["c"], ["o"], then_branch=nope_g,
                                                                       else_branch=nope_g)],
                                                     [x, vi("c", TensorProto.BOOL, [])], [vi("o", 1, None)]))
    # Wire-level damage.
    save("err_notproto.onnx", b"hello, this is not a protobuf at all\n")
    save("err_wrong_wire.onnx", fld(1, 0, varint(8)) + fld(7, 0, varint(1)))
    save("err_wrong_wire_scalar.onnx", ld(1, b"eight"))
    save("err_group.onnx", fld(1, 0, varint(8)) + fld(7, 3, b""))
    good = model([helper.make_node("Relu", ["x"], ["y"])], [x], [vi("y", 1, None)], [f32("W", [64])]).SerializeToString()
    save("err_truncated.onnx", good[: len(good) // 2])
    save("err_truncated_init.onnx", good[: len(good) - 40])


def nested_if(depth):
    """A model of If nodes nested `depth` deep, each then-branch reading the main graph's 'c'."""
    inner = helper.make_graph([helper.make_node("Identity", ["c"], [f"o{depth}"])], f"g{depth}", [],
                              [vi(f"o{depth}", TensorProto.BOOL, [])]).SerializeToString()
    small = helper.make_graph([helper.make_node("Identity", ["c"], ["e"])], "e", [],
                              [vi("e", TensorProto.BOOL, [])]).SerializeToString()
    b = inner
    for k in range(depth - 1, -1, -1):
        then_a = ld(1, b"then_branch") + ld(6, b) + fld(20, 0, varint(5))
        else_a = ld(1, b"else_branch") + ld(6, small) + fld(20, 0, varint(5))
        node = ld(1, b"c") + ld(2, f"o{k}") + ld(4, b"If") + ld(5, then_a) + ld(5, else_a)
        b = ld(1, node) + ld(2, f"g{k}") + ld(12, ld(1, f"o{k}"))
    c_in = vi("c", TensorProto.BOOL, []).SerializeToString()
    return fld(1, 0, varint(8)) + ld(8, fld(2, 0, varint(17))) + ld(7, b + ld(11, c_in))


def very_deep(depth):
    """GraphProto > NodeProto > AttributeProto > GraphProto ... `depth` times, no limit in sight."""
    b = b""
    for _ in range(depth):
        b = ld(1, ld(4, b"If") + ld(5, ld(1, b"g") + fld(20, 0, varint(5)) + ld(6, b)))
    return fld(1, 0, varint(8)) + ld(7, b)


def main():
    features()
    dtypes()
    subgraphs()
    types()
    infer()
    question_dims()
    merged_graph_fields()
    wire_forms()
    external()
    errors()
    save("ok_deep_if.onnx", nested_if(60))
    save("err_deep_if.onnx", nested_if(70))
    save("err_very_deep.onnx", very_deep(5000))


if __name__ == "__main__":
    main()
