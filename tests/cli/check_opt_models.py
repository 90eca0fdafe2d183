#!/usr/bin/python3
"""check_opt_models.py EXPECTED DIR: the node counts and op facts of
tests/cli/optimize_models_expected.txt against the models in DIR, read with
python3-onnx (an independent reader, not gwr's importer).

DIR holds MODEL.onnx (the generated model) and MODEL.LEVEL.TARGET.onnx (what
`gwr optimize --level LEVEL --target TARGET` wrote). Compute nodes: every node
of the top-level graph but Constant. Also, for every optimized file:
  target onnx: onnx.checker (full check, with shape inference) accepts it, its
               opset imports are the original's, every node is standard ONNX;
  target ort:  every node is standard ONNX or com.microsoft (onnxruntime's
               contrib ops).
Every optimized file must be covered by exactly one expectation and every
expectation must match a file. Whatever the expectations say, per model: a
higher level never leaves more compute nodes (original >= basic >= extended
>= all, per target), and neither do the wider targets (ort <= onnx and
gwr <= onnx, per level). Prints the table of counts; exit 1 on a
mismatch (each printed as FAIL), 2 on a bad expectations file."""
import collections
import os
import sys

import onnx

TARGETS = ("onnx", "ort", "gwr")
LEVELS = ("original", "basic", "extended", "all")


def parse(path):
    """[(lineno, model, level, targets, nodes, {op: n})]"""
    rows = []
    for i, line in enumerate(open(path), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        bad = len(words) < 4 or words[1] not in LEVELS or not words[3].isdigit()
        targets = TARGETS if len(words) > 2 and words[2] == "*" else tuple(words[2].split(",")) if len(words) > 2 else ()
        facts = {}
        for w in words[4:]:
            op, _, n = w.partition("=")
            bad = bad or not n.isdigit() or not op
            facts[op] = int(n) if n.isdigit() else 0
        if bad or not targets or any(t not in TARGETS for t in targets):
            sys.exit(f"{path}:{i}: expected 'MODEL LEVEL TARGETS NODES [OP=N ...]', got: {line.strip()}")
        rows.append((i, words[0], words[1], targets, int(words[3]), facts))
    return rows


def count(model):
    return collections.Counter(n.op_type for n in model.graph.node if n.op_type != "Constant")


def target_facts(path, model, target, original):
    """Why the file breaks its target's contract, or None."""
    domains = {n.domain for n in model.graph.node}
    if target == "onnx":
        if domains - {"", "ai.onnx"}:
            return f"non-standard domains {sorted(domains - {'', 'ai.onnx'})}"
        opsets = lambda m: sorted((o.domain, o.version) for o in m.opset_import)
        if opsets(model) != opsets(original):
            return f"opset imports {opsets(model)}, the original has {opsets(original)}"
        try:
            onnx.checker.check_model(path, full_check=True)
        except Exception as e:  # the checker's own exception types vary by version
            return "onnx.checker: " + str(e).splitlines()[0]
    elif target == "ort" and domains - {"", "ai.onnx", "com.microsoft"}:
        return f"domains onnxruntime has no kernels for: {sorted(domains - {'', 'ai.onnx', 'com.microsoft'})}"
    return None


def monotone(table):
    """Failures of the invariants between levels and targets (printed)."""
    fail = 0
    for model, r in table.items():
        for t in TARGETS:
            seq = [("original", r.get("original"))] + [(f"{lv} {t}", r.get(f"{lv} {t}")) for lv in LEVELS[1:]]
            seq = [(k, v) for k, v in seq if v is not None]
            for (ka, a), (kb, b) in zip(seq, seq[1:]):
                if b > a:
                    print(f"FAIL {model}: {kb} leaves {b} compute nodes, more than {ka} ({a})")
                    fail += 1
        for lv in LEVELS[1:]:
            base = r.get(f"{lv} onnx")
            for t in ("ort", "gwr"):
                n = r.get(f"{lv} {t}")
                if base is not None and n is not None and n > base:
                    print(f"FAIL {model}: {lv} {t} leaves {n} compute nodes, more than {lv} onnx ({base})")
                    fail += 1
    return fail


def suggest(d):
    """The counts of the files in DIR as expectation lines (targets with the
    same count merged), to update the file from: facts and arithmetic are
    still for a person to write."""
    print("the counts as they are (MODEL LEVEL TARGETS NODES):")
    models = sorted({f.split(".")[0] for f in os.listdir(d) if f.endswith(".onnx")})
    for model in models:
        for level in LEVELS:
            names = {t: f"{model}.onnx" if level == "original" else f"{model}.{level}.{t}.onnx" for t in TARGETS}
            got = {}
            for t, name in names.items():
                if os.path.exists(os.path.join(d, name)):
                    got.setdefault(sum(count(onnx.load(os.path.join(d, name))).values()), []).append(t)
            for n, ts in got.items():
                print(f"  {model} {level} {'*' if len(ts) == 3 else ','.join(ts)} {n}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_opt_models.py EXPECTED DIR")
    rows, d = parse(sys.argv[1]), sys.argv[2]
    fail = 0
    files = {f for f in os.listdir(d) if f.endswith(".onnx") and f.count(".") == 3}
    covered = collections.Counter()
    table = collections.defaultdict(dict)
    cache = {}

    def load(name):
        if name not in cache:
            cache[name] = onnx.load(os.path.join(d, name))
        return cache[name]

    for lineno, model, level, targets, nodes, facts in rows:
        names = [f"{model}.onnx"] if level == "original" else [f"{model}.{level}.{t}.onnx" for t in targets]
        for name, target in zip(names, targets):
            covered[name] += 1
            if not os.path.exists(os.path.join(d, name)):
                print(f"FAIL line {lineno}: no {name}")
                fail += 1
                continue
            m = load(name)
            c = count(m)
            got = sum(c.values())
            table[model][level if level == "original" else f"{level} {target}"] = got
            if got != nodes:
                print(f"FAIL line {lineno}: {name}: {got} compute nodes, expected {nodes} ({dict(sorted(c.items()))})")
                fail += 1
            for op, n in facts.items():
                if c[op] != n:
                    print(f"FAIL line {lineno}: {name}: {c[op]} {op}, expected {n}")
                    fail += 1
            if level != "original" and covered[name] == 1:
                why = target_facts(os.path.join(d, name), m, target, load(f"{model}.onnx"))
                if why:
                    print(f"FAIL {name} (target {target}): {why}")
                    fail += 1
    for name in sorted(files):
        if covered[name] != 1:
            print(f"FAIL {name}: covered by {covered[name]} expectation lines, not 1")
            fail += 1
    fail += monotone(table)
    cols = ["original"] + [f"{lv} {t}" for lv in LEVELS[1:] for t in TARGETS]
    print("| model | " + " | ".join(cols) + " |")
    print("| --- |" + " ---: |" * len(cols))
    for model, r in table.items():
        print(f"| {model} | " + " | ".join(str(r.get(c, "-")) for c in cols) + " |")
    if fail:
        suggest(d)
    print(f"{len(covered)} files checked, {fail} failures")
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
