#!/usr/bin/env python3
"""Check include/gwr/ops.def against the ONNX schema registry.

Usage: .venv/bin/python tests/unit/check_optable.py include/gwr/ops.def

Prints one line per mismatch, then "N passed, M failed"; exits 1 on any
failure (including when the onnx package cannot be imported).
"""
import os
import re
import sys

try:
    import onnx.defs
except ImportError as e:
    print("check_optable: cannot import onnx (%s); run it with the project venv's "
          "python (scripts/setup.sh)" % e)
    print("0 passed, 1 failed")
    sys.exit(1)

OPSET = 17                       # the table's arities: the default domain's schemas up to here
PINNED = ("",)                   # other domains: latest version of each op
PREFIX = {"": "", "ai.onnx.ml": "ML_", "ai.onnx.preview.training": "TRAIN_", "com.microsoft": "MS_",
          "ai.onnx.preview": "PREVIEW_"}
# Ops newer than onnx 1.12, listed by hand: (domain, name) -> (since, arities).
NEWER = {("", "Gelu"): (20, (1, 1, 1, 1))}   # Gelu: opset 20
# Attention: opset 23's arity, with opset 24's 7th input (nonpad_kv_seqlen)
NEWER[("", "Attention")] = (23, (3, 7, 1, 4))
# onnxruntime's contrib ops (com.microsoft; not in the onnx package): by hand
# from docs/ContribOperators.md.
PREFIX["com.microsoft"] = "MS_"
NEWER.update({("com.microsoft", "FusedConv"): (1, (2, 4, 1, 1)),    # X, W, B?, Z?
              ("com.microsoft", "FusedGemm"): (1, (2, 3, 1, 1))})   # A, B, C?
# onnxruntime's contrib ops (com.microsoft version 1, docs/ContribOperators.md):
# the onnx package has no schema for them.
NEWER.update({
    ("com.microsoft", "SkipLayerNormalization"): (1, (3, 5, 1, 4)),
    ("com.microsoft", "BiasGelu"): (1, (2, 2, 1, 1)),
    ("com.microsoft", "Gelu"): (1, (1, 1, 1, 1)),
    ("com.microsoft", "FastGelu"): (1, (1, 2, 1, 1)),
    ("com.microsoft", "QuickGelu"): (1, (1, 1, 1, 1)),
    ("com.microsoft", "FusedMatMul"): (1, (2, 2, 1, 1)),
    ("com.microsoft", "SkipSimplifiedLayerNormalization"): (1, (3, 4, 1, 4)),
    # onnxruntime's RMSNorm, a contrib op it registers in the default domain
    ("", "SimplifiedLayerNormalization"): (1, (2, 2, 1, 2)),
})
# onnxruntime's contrib ops (not in the onnx package), from its
# docs/ContribOperators.md: (domain, name) -> (since, arities).
CONTRIB = {
    # attention
    ("com.microsoft", "MultiHeadAttention"): (1, (1, 10, 1, 4)),
    ("com.microsoft", "Attention"): (1, (2, 7, 1, 2)),
    ("com.microsoft", "MatMulIntegerToFloat"): (1, (4, 7, 1, 1)),
    ("com.microsoft", "DynamicQuantizeMatMul"): (1, (3, 5, 1, 1)),
    ("com.microsoft", "MatMulNBits"): (1, (3, 6, 1, 1)),
    ("com.microsoft", "DynamicQuantizeLSTM"): (1, (12, 12, 0, 3)),
}
NEWER.update(CONTRIB)

# onnx 1.23 (the venv): the default domain's ops new after opset 17 must have
# a row too, or be listed here with why not; a listed op that gets a row, or
# that onnx does not have, fails as stale. None has a row yet: each needs its
# row, shape rule, kernel and cost rule together (tests/unit/
# op_coverage_expected_missing.txt), and the op table is shared by every room.
NO_ROW_YET = {("", op): why for why, ops in (
    ("opset 18, no row yet", "BitwiseAnd BitwiseNot BitwiseOr BitwiseXor "
                             "GroupNormalization Mish"),
    ("opset 20, no row yet", "ImageDecoder RegexFullMatch StringConcat StringSplit"),
    ("opset 26, no row yet", "BitCast"),
) for op in ops.split()}
NO_ROW_YET[("ai.onnx.ml", "TreeEnsemble")] = "ai.onnx.ml opset 5 (the successor of TreeEnsembleClassifier/Regressor), no row yet"

LINE = re.compile(r'^\s*GWR_OP\(\s*(\w+),\s*"(\w+)",\s*"([\w.]*)",\s*(\w+),\s*(\w+),'
                  r'\s*(-?\d+),\s*(-?\d+),\s*(-?\d+),\s*(-?\d+),\s*([\w|\s]+?),\s*(\d+)\s*\)\s*$')


def expected():
    """(domain, name) -> (since, (min_in, max_in, min_out, max_out))."""
    hist = {}
    for s in onnx.defs.get_all_schemas_with_history():
        hist.setdefault((s.domain, s.name), []).append(s)
    want = {}
    for key, vers in hist.items():
        usable = [s for s in vers if key[0] not in PINNED or s.since_version <= OPSET]
        if not usable:
            usable = vers  # new after OPSET: its first version (NO_ROW_YET or a row)
        s = max(usable, key=lambda s: s.since_version)
        unb = lambda n: -1 if n == 2147483647 else n
        want[key] = (min(v.since_version for v in vers),
                     (s.min_input, unb(s.max_input), s.min_output, unb(s.max_output)))
    return {k: v for k, v in want.items() if k[0] in PREFIX}


def def_ids(path, macro):
    with open(path) as f:
        return set(re.findall(r"^\s*%s\((\w+)\)" % macro, f.read(), re.M))


def main(path):
    inc = os.path.dirname(path)
    classes = def_ids(os.path.join(inc, "layer_classes.def"), "GWR_LAYER_CLASS")
    ew_ops = def_ids(os.path.join(inc, "ew_ops.def"), "GWR_EW_OP")
    want = expected()
    passed, failed = 0, []

    def check(ok, msg):
        nonlocal passed
        if ok:
            passed += 1
        else:
            failed.append(msg)

    rows, seen_ids = {}, set()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.lstrip().startswith("GWR_OP("):
                continue
            m = LINE.match(line)
            check(m is not None, "%s:%d: cannot parse: %s" % (path, n, line.strip()))
            if not m:
                continue
            id_, name, dom, cls, ew, *rest = m.groups()
            ar, flags, since = tuple(map(int, rest[:4])), rest[4], int(rest[5])
            flagset = {x.strip() for x in flags.split("|")} - {"0"}
            where = "%s:%d: %s" % (path, n, id_)
            check(id_ not in seen_ids and (dom, name) not in rows, where + ": duplicate op")
            seen_ids.add(id_)
            rows[(dom, name)] = True
            check(dom in PREFIX and id_ == PREFIX[dom] + name,
                  "%s: id should be %s%s" % (where, PREFIX.get(dom, "?_"), name))
            ref = NEWER.get((dom, name)) or want.get((dom, name))
            check(ref is not None, "%s: (%r, %r) is not an onnx op" % (where, dom, name))
            if ref:
                check(since == ref[0], "%s: since %d, onnx says %d" % (where, since, ref[0]))
                check(ar == ref[1], "%s: arity %s, onnx says %s" % (where, ar, ref[1]))
            check(cls in classes, "%s: unknown class %s" % (where, cls))
            check(ew in ew_ops and (ew != "NONE") == (cls == "ELEMENTWISE"),
                  "%s: ew %s does not fit class %s" % (where, ew, cls))
            check(("GWR_OPF_VARIADIC" in flagset) == (ar[1] == -1),
                  "%s: GWR_OPF_VARIADIC must be set iff max_in == -1" % where)

    for dom, name in sorted(want):
        if (dom, name) in NO_ROW_YET:
            check((dom, name) not in rows, "stale: (%r, %r) has a row now; drop it from NO_ROW_YET" % (dom, name))
        else:
            check((dom, name) in rows, "missing op: (%r, %r)" % (dom, name))
    for dom, name in sorted(set(NO_ROW_YET) - set(want)):
        check(False, "stale: NO_ROW_YET names (%r, %r), which onnx %s does not have" % (dom, name, onnx.__version__))

    for msg in failed:
        print(msg)
    print("%d passed, %d failed" % (passed, len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check_optable.py path/to/ops.def")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
