#!/usr/bin/python3
"""Writes the hand-made seeds of tests/fuzz/corpus/ (the td_* files are plain
copies of models from /usr/share/libonnx-testdata/data).

    /usr/bin/python3 tests/fuzz/make_seeds.py tests/fuzz/corpus

Names say what the importer must do with them, and tests/unit/
test_onnx_badinput.c checks it:
  ok_*   a valid model that must load (and survive save + load);
  bad_*  a malformed model that must be refused with a one-line message;
  any_*  odd input where either outcome is fine, as long as the contract
         holds (no crash; a network that verifies, or NULL and a message).
Needs python3-onnx (Debian), which only checks what we ask it to: these
messages are built field by field, never passed through onnx.checker.
"""
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper, numpy_helper  # noqa: F401

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")


def save(name, model_or_bytes):
    data = model_or_bytes if isinstance(model_or_bytes, bytes) else model_or_bytes.SerializeToString()
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def vi(name, dtype=TensorProto.FLOAT, shape=(2, 3)):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, inputs, outputs, inits=(), opset=17, **kw):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], **kw)
    m.ir_version = 8
    return m


def f32(name, shape, vals=None):
    n = 1
    for d in shape:
        n *= d
    vals = vals if vals is not None else [float(i) for i in range(n)]
    return helper.make_tensor(name, TensorProto.FLOAT, shape, vals)


def add_model():
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x")], [vi("y")],
                 [f32("w", [2, 3])])


# ---- valid models that exercise what the test data lacks -------------------

def ok_rich():
    """Initializers, metadata, doc strings, value_info with symbols and
    denotations, a model-local function, a sparse initializer, an If reading
    the outer scope, absent optional inputs and outputs, unnamed and
    duplicate-named nodes, every attribute kind."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    x.doc_string = "the input"
    x.type.denotation = "TENSOR"
    x.type.tensor_type.shape.dim[0].denotation = "DATA_BATCH"
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    then_g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t_out"], name="then_add")], "then",
                               [], [vi("t_out", shape=["batch", 4])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e_out"], name="else_sub")], "else",
                               [], [vi("e_out", shape=["batch", 4])])
    nodes = [
        helper.make_node("Constant", [], ["c_ints"], value_ints=[1, 2, 3]),
        helper.make_node("Constant", [], ["cond"], value=helper.make_tensor("cv", TensorProto.BOOL, [], [True])),
        helper.make_node("If", ["cond"], ["z"], name="branch", then_branch=then_g, else_branch=else_g),
        helper.make_node("Relu", ["z"], ["r"], name="dup"),
        helper.make_node("Neg", ["r"], ["n"], name="dup"),
        helper.make_node("Clip", ["n", "", "maxv"], ["clipped"], name=""),
        helper.make_node("Dropout", ["clipped"], ["dropped", ""], name="drop", doc_string="a doc string"),
        helper.make_node("MyOp", ["dropped"], ["y"], name="custom", domain="com.example",
                         f=1.5, i=7, s=b"bytes\x00inside", t=f32("tt", [2]), floats=[1.0, 2.0], ints=[4, 5],
                         strings=[b"a", b"b"], tensors=[f32("t1", [1]), f32("t2", [1])],
                         graphs=[helper.make_graph([], "empty", [], [])]),
        helper.make_node("Square", ["x"], ["sq"], name="call", domain="local"),
    ]
    g = helper.make_graph(nodes, "rich", [x], [y, vi("sq", shape=["batch", 4])],
                          initializer=[f32("w", [4], [1, 2, 3, 4]), f32("maxv", [], [6.0])],
                          value_info=[vi("r", shape=["batch", 4])], doc_string="graph doc")
    sp = helper.make_sparse_tensor(f32("sp_values", [2], [1.0, 2.0]),
                                   helper.make_tensor("sp_idx", TensorProto.INT64, [2], [0, 3]), [4])
    g.sparse_initializer.append(sp)
    fn = helper.make_function("local", "Square", ["a"], ["b"], [helper.make_node("Mul", ["a", "a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1),
                                            helper.make_opsetid("local", 1)],
                          functions=[fn], producer_name="gwr-seeds", producer_version="1.0",
                          doc_string="model doc", domain="org.gwr", model_version=3)
    m.ir_version = 8
    helper.set_model_props(m, {"author": "gwr", "note": "\u00e9t\u00e9"})
    return m


def ok_dtypes():
    """A Constant of every element type, through raw_data and typed fields."""
    nodes, outs = [], []
    types = [TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16, TensorProto.INT16,
             TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.DOUBLE,
             TensorProto.UINT32, TensorProto.UINT64, TensorProto.COMPLEX64, TensorProto.COMPLEX128,
             TensorProto.BFLOAT16]
    for i, t in enumerate(types):
        vals = [1, 0] if t != TensorProto.BOOL else [True, False]
        if t in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
            vals = [1 + 2j, 3 - 1j]
        typed = helper.make_tensor("typed%d" % i, t, [2], vals)
        nodes.append(helper.make_node("Constant", [], ["c%d" % i], value=typed))
        outs.append(helper.make_tensor_value_info("c%d" % i, t, [2]))
    st = helper.make_tensor("str", TensorProto.STRING, [2], [b"hello", b"\x00\xff"])
    nodes.append(helper.make_node("Constant", [], ["s"], value=st))
    outs.append(helper.make_tensor_value_info("s", TensorProto.STRING, [2]))
    raw = helper.make_tensor("raw", TensorProto.INT64, [3], struct.pack("<3q", 1, -2, 3), raw=True)
    nodes.append(helper.make_node("Constant", [], ["rawc"], value=raw))
    outs.append(helper.make_tensor_value_info("rawc", TensorProto.INT64, [3]))
    empty = helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], [])
    nodes.append(helper.make_node("Constant", [], ["e"], value=empty))
    outs.append(helper.make_tensor_value_info("e", TensorProto.FLOAT, [0, 3]))
    return model(nodes, [], outs)


def ok_ir3_defaults():
    """IR 3 style: initializers named like graph inputs are defaults."""
    m = model([helper.make_node("Mul", ["x", "scale"], ["y"])], [vi("x"), vi("scale")], [vi("y")],
              [f32("scale", [2, 3])], opset=7)
    m.ir_version = 3
    return m


def ok_input_is_output():
    return model([], [vi("x")], [vi("x")])


def any_empty_graph():
    """Valid for onnx.checker; gwr may refuse a graph with no outputs."""
    return model([], [], [])


def any_unknown_rank_and_dims():
    x = onnx.ValueInfoProto(name="x")
    x.type.tensor_type.elem_type = TensorProto.FLOAT  # no shape: unknown rank
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, "n", 3])
    return model([helper.make_node("Identity", ["x"], ["y"])], [x], [y])


# ---- malformed models that must be refused ---------------------------------

def bad_undefined_input():
    return model([helper.make_node("Relu", ["nowhere"], ["y"])], [vi("x")], [vi("y")])


def bad_two_producers():
    return model([helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Neg", ["x"], ["y"], name="b")],
                 [vi("x")], [vi("y")])


def bad_cycle():
    return model([helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
                  helper.make_node("Relu", ["a"], ["b"], name="n2")], [vi("x")], [vi("b")])


def bad_self_loop():
    return model([helper.make_node("Add", ["x", "y"], ["y"], name="n1")], [vi("x")], [vi("y")])


def bad_output_not_produced():
    return model([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("y"), vi("ghost")])


def bad_raw_size_mismatch():
    t = f32("w", [2, 3])
    t.ClearField("float_data")
    t.raw_data = b"\x00" * 7
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_typed_count_mismatch():
    t = f32("w", [2, 3])
    del t.float_data[2:]
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_negative_dim():
    t = f32("w", [2, 3])
    t.dims[0] = -2
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_huge_dims():
    """2^31 * 2^31 * 2^31 elements claimed with six floats of data: the
    element count overflows int64 and must not wrap into a small size."""
    t = f32("w", [2, 3])
    del t.dims[:]
    t.dims.extend([1 << 31, 1 << 31, 1 << 31])
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_huge_dims_wrap():
    """2 * (2^61 + 3) = 2^62 + 6 floats: as bytes, 2^64 + 24, which wraps to
    exactly the 24 bytes of raw_data given when multiplied in 64 bits."""
    t = f32("w", [2, 3])
    t.ClearField("float_data")
    t.raw_data = b"\x00" * 24
    del t.dims[:]
    t.dims.extend([2, (1 << 61) + 3])
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_dtype_out_of_range():
    t = f32("w", [2, 3])
    t.data_type = 99
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_dtype_undefined():
    t = f32("w", [2, 3])
    t.data_type = 0
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_external_escape():
    t = f32("w", [2, 3])
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../../../../etc/passwd"), ("offset", "0"), ("length", "24")):
        e = t.external_data.add()
        e.key, e.value = k, v
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_external_absolute():
    t = f32("w", [2, 3])
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "/etc/passwd"
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_external_no_location():
    t = f32("w", [2, 3])
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "offset", "-5"
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_segment():
    t = f32("w", [2, 3])
    t.segment.begin, t.segment.end = 0, 6
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_string_raw():
    t = helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"b"])
    t.ClearField("string_data")
    t.raw_data = b"ab"
    return model([helper.make_node("Constant", [], ["c"], value=t)], [],
                 [helper.make_tensor_value_info("c", TensorProto.STRING, [2])])


def bad_rank_65():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * 65)
    return model([helper.make_node("Relu", ["x"], ["y"])], [x], [helper.make_tensor_value_info("y", 1, [1] * 65)])


def bad_rank_65_weights():
    t = f32("w", [1] * 65, [1.0])
    return model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x")], [vi("y")], [t])


def bad_empty_op_type():
    return model([helper.make_node("", ["x"], ["y"])], [vi("x")], [vi("y")])


def bad_duplicate_input():
    return model([helper.make_node("Relu", ["x"], ["y"])], [vi("x"), vi("x")], [vi("y")])


def bad_init_shadows_output():
    """An initializer with the same name as a node's output."""
    return model([helper.make_node("Relu", ["x"], ["w"])], [vi("x")], [vi("w")], [f32("w", [2, 3])])


def bad_empty_output_name_graph():
    return model([helper.make_node("Relu", ["x"], ["y"])], [vi("x")], [vi("")])


def bad_subgraph_undefined():
    then_g = helper.make_graph([helper.make_node("Relu", ["missing"], ["t"])], "then", [], [vi("t")])
    else_g = helper.make_graph([], "else", [], [vi("x")])
    c = helper.make_node("Constant", [], ["cond"], value=helper.make_tensor("cv", TensorProto.BOOL, [], [True]))
    return model([c, helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
                 [vi("x")], [vi("y")])


def bad_subgraph_reads_later_value():
    """A subgraph reading an outer tensor that is produced after the If:
    a cycle through the subgraph."""
    then_g = helper.make_graph([helper.make_node("Identity", ["later"], ["t"])], "then", [], [vi("t")])
    else_g = helper.make_graph([], "else", [], [vi("x")])
    c = helper.make_node("Constant", [], ["cond"], value=helper.make_tensor("cv", TensorProto.BOOL, [], [True]))
    return model([c, helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g, name="if"),
                  helper.make_node("Relu", ["y"], ["later"], name="after")], [vi("x")], [vi("later")])


def bad_attr_graph_missing():
    n = helper.make_node("If", ["x"], ["y"])
    a = n.attribute.add()
    a.name, a.type = "then_branch", onnx.AttributeProto.GRAPH  # g not set
    return model([n], [vi("x", TensorProto.BOOL, [])], [vi("y")])


def bad_attr_sparse_missing():
    """Attribute of type SPARSE_TENSOR whose sparse_tensor field is absent."""
    n = helper.make_node("Relu", ["x"], ["y"])
    a = n.attribute.add()
    a.name, a.type = "sp", onnx.AttributeProto.SPARSE_TENSOR
    return model([n], [vi("x")], [vi("y")])


def bad_attr_type_proto_missing():
    """Attribute of type TYPE_PROTO whose tp field is absent."""
    n = helper.make_node("Relu", ["x"], ["y"])
    a = n.attribute.add()
    a.name, a.type = "tp", onnx.AttributeProto.TYPE_PROTO
    return model([n], [vi("x")], [vi("y")])


def bad_attr_no_type():
    n = helper.make_node("Relu", ["x"], ["y"])
    a = n.attribute.add()
    a.name = "alpha"  # type UNDEFINED, no value
    return model([n], [vi("x")], [vi("y")])


def bad_attr_duplicate():
    n = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)
    n.attribute.append(helper.make_attribute("alpha", 0.2))
    return model([n], [vi("x")], [vi("y")])


def bad_not_a_model():
    return b"this is not an ONNX model, just text\n"


def bad_truncated():
    return ok_rich().SerializeToString()[:200]


def bad_empty():
    return b""


def bad_tensor_not_model():
    """A TensorProto's bytes, given as a model: wrong wire types for
    ModelProto's field numbers."""
    return f32("w", [8, 8]).SerializeToString()


def bad_graph_wire_type():
    """ModelProto.graph (field 7) sent as a varint instead of bytes."""
    return bytes([0x08, 0x08, 0x38, 0x01])


def bad_len_past_end():
    """graph (field 7, length-delimited) whose length runs past the end."""
    return bytes([0x08, 0x08, 0x3A, 0xFF, 0xFF, 0xFF, 0x0F, 0x0A, 0x00])


def bad_varint_too_long():
    return bytes([0x08]) + b"\xff" * 11 + b"\x01"


def any_deep_nesting(depth):
    """If nodes nested `depth` deep through then_branch."""
    inner = helper.make_graph([helper.make_node("Identity", ["x"], ["o0"])], "g0", [], [vi("o0")])
    for i in range(1, depth):
        els = helper.make_graph([helper.make_node("Identity", ["x"], ["e%d" % i])], "e%d" % i, [], [vi("e%d" % i)])
        n = helper.make_node("If", ["cond"], ["o%d" % i], name="if%d" % i, then_branch=inner, else_branch=els)
        inner = helper.make_graph([n], "g%d" % i, [], [vi("o%d" % i)])
    return model(inner.node, [vi("x"), vi("cond", TensorProto.BOOL, [])], [vi("o%d" % (depth - 1))])


def any_many_nodes(n):
    nodes = [helper.make_node("Relu", ["x" if i == 0 else "t%d" % (i - 1)], ["t%d" % i]) for i in range(n)]
    return model(nodes, [vi("x")], [vi("t%d" % (n - 1))])


def any_opsets_odd():
    m = add_model()
    del m.opset_import[:]
    m.opset_import.extend([helper.make_opsetid("", -1), helper.make_opsetid("", 17),
                           helper.make_opsetid("ai.onnx", 13), helper.make_opsetid("x" * 300, 1 << 62)])
    m.ir_version = -3
    return m


def any_sequence_map_types():
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2])
    mp = onnx.ValueInfoProto(name="m")
    mp.type.map_type.key_type = TensorProto.INT64
    mp.type.map_type.value_type.sequence_type.elem_type.tensor_type.elem_type = TensorProto.FLOAT
    opt = onnx.ValueInfoProto(name="o")
    opt.type.optional_type.elem_type.sequence_type.elem_type.optional_type.elem_type.tensor_type.elem_type = 1
    sp = onnx.ValueInfoProto(name="sp")
    sp.type.sparse_tensor_type.elem_type = TensorProto.FLOAT
    empty = onnx.ValueInfoProto(name="nothing")  # no type at all
    return model([helper.make_node("Identity", ["s"], ["s2"])], [seq, mp, opt, sp, empty],
                 [helper.make_tensor_sequence_value_info("s2", TensorProto.FLOAT, [2])])


def any_float16_typed_overflow():
    """float16 given through int32_data with values past 16 bits."""
    t = onnx.TensorProto(name="h", data_type=TensorProto.FLOAT16, dims=[3])
    t.int32_data.extend([0x3C00, 0x1FFFF, -1])
    b = onnx.TensorProto(name="b", data_type=TensorProto.BOOL, dims=[2])
    b.int32_data.extend([2, -7])
    return model([helper.make_node("Constant", [], ["c"], value=t), helper.make_node("Constant", [], ["d"], value=b)],
                 [], [helper.make_tensor_value_info("c", TensorProto.FLOAT16, [3]),
                      helper.make_tensor_value_info("d", TensorProto.BOOL, [2])])


def any_attr_type_mismatch():
    """Attribute says INT but carries a float and a graph."""
    n = helper.make_node("Relu", ["x"], ["y"])
    a = n.attribute.add()
    a.name, a.type, a.f = "weird", onnx.AttributeProto.INT, 2.5
    a.g.CopyFrom(helper.make_graph([], "stray", [], []))
    return model([n], [vi("x")], [vi("y")])


def any_names_odd():
    """Names with quotes, newlines, non-UTF-8 bytes and empty strings."""
    m = model([helper.make_node("Relu", ["x\n\"q"], ["y"], name="n\x00ul")], [vi("x\n\"q")], [vi("y")])
    m.producer_name = "p\nq"
    m.graph.name = ""
    e = m.metadata_props.add()
    e.key, e.value = "", "\n"
    return m


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, fn in sorted(globals().items()):
        if name.startswith(("ok_", "bad_", "any_")) and callable(fn) and fn.__code__.co_argcount == 0:
            save(name + ".onnx", fn())
    save("any_deep_nesting_64.onnx", any_deep_nesting(64))
    save("any_deep_nesting_2000.onnx", any_deep_nesting(2000))
    save("any_many_nodes_3000.onnx", any_many_nodes(3000))


if __name__ == "__main__":
    main()
