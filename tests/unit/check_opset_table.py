#!/usr/bin/env python3
"""Check src/passes/opset_table.inc against the ONNX schema registry.

Usage: .venv/bin/python tests/unit/check_opset_table.py src/passes/opset_table.inc
       .venv/bin/python tests/unit/check_opset_table.py --generate   (prints the table)

The table lists, per default-domain op, every version its schema changed
(since_version), each marked 't' when that version only adds types: the
same inputs, outputs (names, optional/variadic), arities and attributes
(names, types, required, defaults) as the version before. `gwr optimize
--opset` raises a model's opset only across such versions (or the ones it
converts). For versions up to OPSET (onnx 1.12's last; the venv's onnx 1.23
says the same there) both the versions and
the marks must match what onnx says, with get_schema(op,
max_inclusive_version=v).since_version for every v; later versions are
listed by hand (NEWER below, from the ONNX changelog) and only printed.
Prints one line per mismatch, then "N passed, M failed"; exits 1 on any.
"""
import re
import sys

try:
    import onnx.defs
except ImportError as e:
    print("check_opset_table: cannot import onnx (%s); run it with the project venv's python" % e)
    print("0 passed, 1 failed")
    sys.exit(1)

OPSET = 17
# Versions after 17 (ONNX 1.13 to 1.17, docs/Changelog.md), 't' where only
# types were added, 'a' where only optional attributes or inputs that keep
# the old behaviour by default were. Unlisted ops did not change up to
# MAX_KNOWN.
MAX_KNOWN = 22
NEWER = {
    "AveragePool": "19a 22t", "Bernoulli": "22t", "BitwiseAnd": "18", "BitwiseNot": "18",
    "BitwiseOr": "18", "BitwiseXor": "18", "Cast": "19t 21t", "CastLike": "19t 21t",
    "CenterCropPad": "18", "Col2Im": "18", "Constant": "19t 21t", "ConstantOfShape": "20t 21t",
    "Conv": "22t", "ConvTranspose": "22t", "Acos": "22t", "Acosh": "22t", "Asin": "22t",
    "Asinh": "22t", "Atan": "22t", "Atanh": "22t", "Cos": "22t", "Cosh": "22t", "DeformConv": "19 22t",
    "DequantizeLinear": "19 21", "Det": "22t", "DFT": "20", "Dropout": "22t", "Elu": "22t",
    "Equal": "19t", "EyeLike": "22t", "Flatten": "21t", "GRU": "22t", "Gelu": "20",
    "GlobalAveragePool": "22t", "GlobalLpPool": "22t", "GlobalMaxPool": "22t", "GridSample": "20 22t",
    "GroupNormalization": "18 21", "HardSigmoid": "22t", "HardSwish": "22t", "Identity": "19t 21t",
    "If": "19t 21t", "InstanceNormalization": "22t", "IsInf": "20t", "IsNaN": "20t", "LSTM": "22t",
    "Loop": "19t 21t", "LpNormalization": "22t", "LpPool": "18a 22t", "MaxPool": "22t",
    "MaxRoiPool": "22t", "MaxUnpool": "22t", "Mish": "18 22t", "Multinomial": "22t",
    "NegativeLogLikelihoodLoss": "22t", "OptionalGetElement": "18", "OptionalHasElement": "18",
    "Pad": "18a 19t 21t", "QLinearMatMul": "21t", "QuantizeLinear": "19 21", "RNN": "22t",
    "RandomNormal": "22t", "RandomNormalLike": "22t", "RandomUniform": "22t",
    "RandomUniformLike": "22t", "ReduceL1": "18", "ReduceL2": "18", "ReduceLogSum": "18",
    "ReduceLogSumExp": "18", "ReduceMax": "18 20t", "ReduceMean": "18", "ReduceMin": "18 20t",
    "ReduceProd": "18", "ReduceSumSquare": "18", "RegexFullMatch": "20", "Reshape": "19t 21t",
    "Resize": "18 19", "RoiAlign": "22t", "Round": "22t", "Scan": "19t 21t", "ScatterElements": "18",
    "ScatterND": "18", "Selu": "22t", "Shape": "19t 21t", "Sin": "22t", "Sinh": "22t", "Size": "19t 21t",
    "Softplus": "22t", "Softsign": "22t", "Split": "18", "Squeeze": "21t", "StringConcat": "20",
    "StringSplit": "20", "Tan": "22t", "ThresholdedRelu": "22t", "Transpose": "21t", "Unsqueeze": "21t",
    "ImageDecoder": "20", "AffineGrid": "20",
}


def signature(s):
    attrs = sorted((a.name, int(a.type), bool(a.required), a.default_value.SerializeToString())
                   for a in s.attributes.values())
    ins = [(p.name, int(p.option)) for p in s.inputs]
    outs = [(p.name, int(p.option)) for p in s.outputs]
    return (attrs, ins, outs, s.min_input, s.max_input, s.min_output, s.max_output)


def additions(old, new):
    """Does new only add what keeps old's behaviour: optional attributes
    (the old ones unchanged) and optional inputs or outputs at the end?"""
    a, b = signature(old), signature(new)
    oa, na = {x[0]: x for x in a[0]}, {x[0]: x for x in b[0]}
    if any(na.get(k) != v for k, v in oa.items()) or any(na[k][2] for k in na if k not in oa):
        return False
    for o, n in ((a[1], b[1]), (a[2], b[2])):
        if n[:len(o)] != o or any(opt != 1 for _, opt in n[len(o):]):  # 1: OPTIONAL
            return False
    return b[3] == a[3] and b[5] == a[5]


# Versions whose added attribute or input changes what an old model means,
# or that change semantics the signature does not show: never 'a' or 't'.
BLOCK = {("Resize", 11), ("Resize", 13), ("Upsample", 9), ("Upsample", 10)}


def derived():
    """op -> "v1 v2t ..." up to OPSET."""
    hist = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "" and s.since_version <= OPSET:
            hist.setdefault(s.name, []).append(s)
    out = {}
    for name, vers in hist.items():
        vers.sort(key=lambda s: s.since_version)
        # every version up to OPSET resolves to one of the listed ones
        for v in range(1, OPSET + 1):
            try:
                sv = onnx.defs.get_schema(name, max_inclusive_version=v, domain="").since_version
            except Exception:
                continue
            assert sv in [s.since_version for s in vers], (name, v, sv)
        items = []
        for i, s in enumerate(vers):
            mark = ""
            if i and (name, s.since_version) not in BLOCK:
                mark = "t" if signature(s) == signature(vers[i - 1]) else "a" if additions(vers[i - 1], s) else ""
            items.append("%d%s" % (s.since_version, mark))
        out[name] = " ".join(items)
    return out


def full_table():
    d = derived()
    for name, later in NEWER.items():
        name = name.strip()
        if not later:
            continue
        d[name] = (d.get(name, "") + " " + later).strip()
    return d


def generate():
    print("/* opset_table.inc - every default-domain ONNX op and the versions its schema")
    print(" * changed; 't': that version only adds types (same inputs, outputs, arities,")
    print(" * attributes and defaults as the one before); 'a': it only adds optional")
    print(" * attributes or trailing optional inputs that keep the old behaviour by default.")
    print(" * Raising an opset across 't' and 'a' versions keeps a model's meaning.")
    print(" * Generated and checked by")
    print(" * tests/unit/check_opset_table.py (python3-onnx up to opset %d; later versions up" % OPSET)
    print(" * to %d from ONNX's changelog, listed by hand there). Sorted by name. */" % MAX_KNOWN)
    print("#define GWR_OPSET_TABLE_MAX %d" % MAX_KNOWN)
    for name, v in sorted(full_table().items()):
        print('OPV("%s", "%s")' % (name, v))


LINE = re.compile(r'^OPV\("(\w+)", "([\dta ]+)"\)$')


def main():
    if sys.argv[1:] == ["--generate"]:
        generate()
        return 0
    want = full_table()
    got = {}
    ok = bad = 0
    for line in open(sys.argv[1]):
        m = LINE.match(line.strip())
        if m:
            got[m.group(1)] = m.group(2)
    for name in sorted(set(want) | set(got)):
        if want.get(name) != got.get(name):
            print("%s: table has '%s', onnx says '%s'" % (name, got.get(name), want.get(name)))
            bad += 1
        else:
            ok += 1
    print("%d passed, %d failed" % (ok, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
