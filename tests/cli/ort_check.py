"""ort_check.py: onnx's checker and onnxruntime (PyPI, the project venv) as
the independent judges of the models gwr writes. Every model judged here
(each OTHER / OPTIMIZED; the originals are the tests' own) must first pass
onnx.checker.check_model(full_check=True) and then load and run in
onnxruntime with graph optimizations disabled (each graph runs as written)
on one thread.

  compare ORIG DIR OTHER...    inputs from DIR/input_*.pb (`gwr run -o DIR`);
      prints per OTHER `NAME: loads, max abs difference from the original E`
      (outputs matched by position) or why it failed. Exit 1 when one failed.
  same ORIG DIR TOL OTHER...   the same, judged: `NAME: same|DIFFERS, max abs
      difference E, N NaN in both` (NaN matches NaN; a query that sees no key
      is NaN in both forms of attention). Exit 1 when one fails or differs by
      more than TOL.
  models LIST   one check per line, `ORIGINAL OPTIMIZED ATOL RTOL` (#
      comments): both run with the same seeded inputs made from ORIGINAL's
      declared input shapes (floats uniform in [-1, 1), integers in [0, 3],
      a fixed xorshift64* generator per original), every output of OPTIMIZED
      within |a - b| <= ATOL + RTOL |b| of ORIGINAL's (by name; NaN matches
      NaN); then OPTIMIZED again with onnxruntime's optimizations at 'all'
      (its fusions on top of gwr's) within 1e-4 + 1e-3|b|. Prints one line
      per check, then `N passed, M failed`; exit 1 on a failure.

E is printed as JavaScript's toExponential(2) writes it (1.50e-7, 0.00e+0),
the form the test scripts match.
"""
import os
import re
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def exp2(x):
    """x as toExponential(2): mantissa with two decimals, exponent unpadded."""
    if np.isinf(x) or np.isnan(x):
        return "Infinity" if x > 0 else str(x)
    m, e = f"{x:.2e}".split("e")
    return f"{m}e{'-' if int(e) < 0 else '+'}{abs(int(e))}"


def session(model, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


# onnxruntime's own ops that it registers in the ONNX domain (""), not in
# com.microsoft: --target ort must write them there (onnxruntime refuses
# com.microsoft::SimplifiedLayerNormalization), and onnx's checker, which
# knows only ONNX's schemas in that domain, refuses them. For the checker
# alone they move to a domain it does not check; everything else is checked.
ORT_ONNX_DOMAIN_OPS = {"SimplifiedLayerNormalization"}


def checked(model):
    """Runs onnx's full checker on a model gwr wrote (raises with the reason)."""
    m = onnx.load(model)
    ort_ops = [n for n in m.graph.node if n.domain in ("", "ai.onnx") and n.op_type in ORT_ONNX_DOMAIN_OPS]
    for n in ort_ops:
        n.domain = "gwr.ort_onnx_domain"
    if ort_ops:
        m.opset_import.append(onnx.helper.make_opsetid("gwr.ort_onnx_domain", 1))
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:  # noqa: BLE001
        raise RuntimeError("onnx.checker (full): " + str(e).strip().split("\n")[0]) from None


def read_feeds(d):
    pat = re.compile(r"^input_(\d+)\.pb$")
    feeds = {}
    for _, f in sorted((int(m.group(1)), f) for f in os.listdir(d) if (m := pat.match(f))):
        t = onnx.TensorProto()
        with open(os.path.join(d, f), "rb") as fh:
            t.ParseFromString(fh.read())
        feeds[t.name] = numpy_helper.to_array(t)
    return feeds


def run(model, feeds, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
    s = session(model, level)
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


def diff(a, b):
    """(max abs difference, NaN in both) of two outputs of the same size."""
    a = np.asarray(a).astype(np.float64).reshape(-1)
    b = np.asarray(b).astype(np.float64).reshape(-1)
    both = np.isnan(a) & np.isnan(b)
    with np.errstate(invalid="ignore"):
        d = np.abs(a - b)[~both]
    worst = 0.0 if d.size == 0 else (np.inf if np.isnan(d).any() else float(d.max()))
    return worst, int(both.sum())


def positional(orig, dirname, others, tol):
    feeds = read_feeds(dirname)
    want = list(run(orig, feeds).values())
    failed = 0
    for m in others:
        name = os.path.basename(m)
        try:
            checked(m)
            got = list(run(m, feeds).values())
            if len(got) != len(want):
                raise RuntimeError(f"{len(got)} outputs, the original has {len(want)}")
            worst, nans = 0.0, 0
            for k, (g, w) in enumerate(zip(got, want)):
                if np.asarray(g).size != np.asarray(w).size:
                    raise RuntimeError(f"output {k}: {np.asarray(g).size} values, want {np.asarray(w).size}")
                e, n = diff(g, w)
                worst, nans = max(worst, e), nans + n
        except Exception as e:  # noqa: BLE001 - every refusal is a result
            failed += 1
            print(f"{name}: FAILS in onnxruntime: {str(e).strip().split(chr(10))[0]}")
            continue
        if tol is None:
            print(f"{name}: loads, max abs difference from the original {exp2(worst)}")
        else:
            ok = worst <= tol
            failed += not ok
            print(f"{name}: {'same' if ok else 'DIFFERS'}, max abs difference {exp2(worst)}, {nans} NaN in both")
    return 1 if failed else 0


def random_feeds(model_file):
    state = [0x9E3779B97F4A7C15]
    mask = (1 << 64) - 1

    def nxt():  # xorshift64*, as gwr_value_random's generator kind
        s = state[0]
        s ^= s >> 12
        s ^= (s << 25) & mask
        s ^= s >> 27
        state[0] = s
        return (((s * 0x2545F4914F6CDD1D) & mask) >> 11) / 2.0**53

    m = onnx.load(model_file, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    kinds = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64}
    feeds = {}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or tt.elem_type not in kinds:
            raise RuntimeError(f"input '{vi.name}': no random data for this type")
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]
        n = int(np.prod(dims, dtype=np.int64))
        dt = kinds[tt.elem_type]
        if dt in (np.float32, np.float64):
            vals = [nxt() * 2 - 1 for _ in range(n)]
        elif dt == np.bool_:
            vals = [int(nxt() * 2) for _ in range(n)]
        else:
            vals = [int(nxt() * 4) for _ in range(n)]
        feeds[vi.name] = np.array(vals, dtype=dt).reshape(dims)
    return feeds


def compare_named(want, got, atol, rtol):
    """(worst, name) when every output agrees, else a reason."""
    if len(got) != len(want):
        return f"{len(got)} outputs, the original has {len(want)}"
    worst, worst_name = 0.0, ""
    for k, b in want.items():
        a = got.get(k)
        if a is None:
            return f"no output '{k}'"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"output '{k}': {a.dtype}{list(a.shape)} against {b.dtype}{list(b.shape)}"
        x, y = a.astype(np.float64).reshape(-1), b.astype(np.float64).reshape(-1)
        both = np.isnan(x) & np.isnan(y)
        with np.errstate(invalid="ignore"):
            d = np.abs(x - y)
            bad = ~both & ~(d <= atol + rtol * np.abs(y))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return f"output '{k}'[{i}]: {x[i]} against {y[i]}"
        dd = d[~both]
        if dd.size and dd.max() > worst:
            worst, worst_name = float(dd.max()), k
    return worst, worst_name


def models(list_file):
    checks = []
    with open(list_file, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                orig, opt, atol, rtol = line.split()
                checks.append((orig, opt, float(atol), float(rtol)))
    wants = {}
    npass = nfail = 0
    for orig, opt, atol, rtol in checks:
        try:
            if orig not in wants:
                feeds = random_feeds(orig)
                wants[orig] = (feeds, run(orig, feeds))
            feeds, want = wants[orig]
            checked(opt)
            why = compare_named(want, run(opt, feeds), atol, rtol)
            if not isinstance(why, str):
                full = compare_named(want, run(opt, feeds, ort.GraphOptimizationLevel.ORT_ENABLE_ALL), 1e-4, 1e-3)
                if isinstance(full, str):
                    why = f"with onnxruntime's optimizations at 'all': {full}"
        except Exception as e:  # noqa: BLE001
            why = f"onnxruntime: {str(e).strip().split(chr(10))[0]}"
        if isinstance(why, str):
            nfail += 1
            print(f"FAIL {os.path.basename(opt)}: {why}")
        else:
            npass += 1
            named = f" ('{why[1]}')" if why[1] else ""
            print(f"ok {os.path.basename(opt)}: max abs difference {exp2(why[0])}{named}")
    print(f"{npass} passed, {nfail} failed")
    return 1 if nfail else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "compare":
        return positional(argv[1], argv[2], argv[3:], None)
    if len(argv) >= 4 and argv[0] == "same":
        return positional(argv[1], argv[2], argv[4:], float(argv[3]))
    if len(argv) == 2 and argv[0] == "models":
        return models(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
