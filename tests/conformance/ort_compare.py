"""onnxruntime (PyPI, the project venv) as the independent executor of the
ONNX backend test data.

For every test case (a directory holding model.onnx and test_data_set_*/ with
input_*.pb and output_*.pb): run the ORIGINAL model with onnxruntime on each
data set and compare with the expected outputs (ONNX backend tolerances:
rtol 1e-3, atol 1e-7, NaN equals NaN). Where onnxruntime passes the original,
the model gwr exported (OUTDIR/<suite>/<name>/model.onnx) must pass too.
Where onnxruntime runs the original but disagrees with the expected outputs,
the exported model must still give the same outputs as the original did (a
differential check); that case is counted under "ort cannot run original",
not failed.

usage: ort_compare.py [--out OUTDIR]... [--expected FILE]
         [--roundtrip-expected FILE] [--ort-original FILE] [--original-only]
         [--jobs N] [--timeout SECONDS] [-v] PATH...
PATH is a case directory, or a directory searched (two levels deep) for them;
<suite> is the name of a case directory's parent. --out repeated: every
tree's model against one run of the original.

Each case runs in a worker process, so a crash or a hang of onnxruntime on one
model is reported against that model and the run goes on.

Output: one line per failure `FAIL suite/name: reason`, counts, and last a
line exactly `N passed, M failed`. Exit 0 only when every failure is listed
in the expected-failures file and no entry there is stale.
"""
import json
import os
import re
import select
import subprocess
import sys
import threading
import time

from caselist import find_cases, read_list

RTOL = 1e-3
ATOL = 1e-7


class NotComparable(Exception):
    pass


def one_line(e):
    return re.sub(r"\s+", " ", str(e)).strip()[:400]


def ort_message(e):
    """onnxruntime's exception text without its error-code prefix, the model
    path and the C++ source location and signature, on one line."""
    s = re.sub(r"\s+", " ", str(e).split("\x1b")[0]).strip()
    s = re.sub(r"\[ONNXRuntimeError\] : \d+ : \w+ : ", "", s)
    s = re.sub(r"Load model from \S+ failed:", "", s)
    m = re.search(r"/onnxruntime_src/\S+:\d+ ", s)
    if m:  # skip the signature: up to the ')' that closes its first '('
        j, depth = m.end(), 0
        while j < len(s):
            depth += {"(": 1, ")": -1}.get(s[j], 0)
            j += 1
            if s[j - 1] == ")" and depth == 0:
                break
        s = s[:m.start()] + re.sub(r"^ const\b", "", s[j:]).strip()
    return s.strip()[:300]


# ---------------------------------------------------------------------------
# Worker: runs one case at a time for the parent (JSON lines on a private fd).

def compare_tensor(label, got, want, rtol=RTOL, atol=ATOL):
    """None when got (numpy, from onnxruntime) matches want, else a reason."""
    import numpy as np

    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"{label}: dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"{label}: shape {list(got.shape)}, expected {list(want.shape)}"
    g, w = got.reshape(-1), want.reshape(-1)
    if want.dtype == object or want.dtype == bool:
        for i in range(w.size):
            if g[i] != w[i]:
                return f"{label}[{i}]: {g[i]!r}, expected {w[i]!r}"
        return None
    g, w = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - w)
        ok = (np.isnan(g) & np.isnan(w)) | (g == w) | (err <= atol + rtol * np.abs(w))
    if ok.all():
        return None
    bad = np.flatnonzero(~ok)
    first = int(bad[0])
    worst = float(np.nanmax(np.where(ok, 0, np.nan_to_num(err, nan=np.inf))))
    return (f"{label}: {bad.size}/{w.size} elements differ, first [{first}] {g[first]} "
            f"vs expected {w[first]}, max abs err {worst}")


def load_interface(model_file):
    import onnx

    m = onnx.load(model_file, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    inits |= {t.values.name for t in m.graph.sparse_initializer}
    feeds = [i for i in m.graph.input if i.name not in inits]
    return feeds, list(m.graph.output)


def numbered(d, prefix):
    pat = re.compile(rf"^{prefix}_(\d+)\.pb$")
    found = sorted((int(m.group(1)), f) for f in os.listdir(d) if (m := pat.match(f)))
    return [os.path.join(d, f) for _, f in found]


def load_data_sets(case_dir, feeds, outputs):
    """[(set name, [(value_info, array)] inputs, [...] outputs)]."""
    import onnx
    from onnx import numpy_helper

    sets = sorted((d for d in os.listdir(case_dir) if re.match(r"^test_data_set_\d+$", d)),
                  key=lambda d: int(d[14:]))
    if not sets:
        raise NotComparable("no test_data_set_* directory")
    result = []
    for s in sets:
        d = os.path.join(case_dir, s)
        ins, outs = numbered(d, "input"), numbered(d, "output")
        if not outs:
            raise NotComparable(f"{s} has no expected outputs")

        def decode(files, vis, what):
            vals = []
            for i, f in enumerate(files):
                if i >= len(vis):
                    raise ValueError(f"{s}: {os.path.basename(f)} but the model has only {len(vis)} {what}s")
                vi = vis[i]
                kind = vi.type.WhichOneof("value")
                if kind != "tensor_type":
                    raise NotComparable(f"{what} '{vi.name}' is a {kind}, stored as a non-TensorProto")
                t = onnx.TensorProto()
                with open(f, "rb") as fh:
                    t.ParseFromString(fh.read())
                vals.append((vi, t.name, numpy_helper.to_array(t)))
            return vals

        result.append((s, decode(ins, feeds, "input"), decode(outs, outputs, "output")))
    return result


def worker_main():
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # onnxruntime prints nothing into the protocol
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3

    def send(msg):
        proto.write(json.dumps(msg) + "\n")
        proto.flush()

    def run_model(file, sets, outputs):
        try:
            sess = ort.InferenceSession(file, opts, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - every refusal is a result
            return None, f"onnxruntime cannot load it: {ort_message(e)}"
        names = [i.name for i in sess.get_inputs()]
        results = []
        for set_name, ins, _ in sets:
            feeds = {}
            for i, (vi, tname, arr) in enumerate(ins):
                # The backend runner feeds positionally; a name in the file wins.
                name = tname if tname and tname in names else vi.name
                if name not in names and i < len(names):
                    name = names[i]
                feeds[name] = arr
            try:
                out = sess.run([o.name for o in outputs], feeds)
            except Exception as e:  # noqa: BLE001
                return None, f"{set_name}: onnxruntime run failed: {ort_message(e)}"
            results.append({o.name: v for o, v in zip(outputs, out)})
        return results, None

    def compare_sets(sets, results):
        for s, (set_name, _, outs) in enumerate(sets):
            for vi, _, want in outs:
                got = results[s].get(vi.name)
                if got is None:
                    return f"{set_name}: no output '{vi.name}'"
                why = compare_tensor(f"{set_name} output '{vi.name}'", got, want)
                if why:
                    return why
        return None

    def compare_runs(sets, a, b, outputs):
        for s, (set_name, _, _) in enumerate(sets):
            for o in outputs:
                x, y = a[s].get(o.name), b[s].get(o.name)
                if x is None or y is None:
                    return f"{set_name}: output '{o.name}' missing"
                import numpy as np

                why = compare_tensor(f"{set_name} output '{o.name}' (exported vs original)", y, np.asarray(x))
                if why:
                    return why
        return None

    def one_job(job):
        res = {"id": job["id"]}
        model_file = os.path.join(job["dir"], "model.onnx")
        feeds, outputs = load_interface(model_file)
        sets = load_data_sets(job["dir"], feeds, outputs)
        orig, orig_err = run_model(model_file, sets, outputs)
        orig_why = orig_err or compare_sets(sets, orig)
        if job["original_only"]:
            res.update({"status": "ort-original", "reason": orig_why} if orig_why else {"status": "pass"})
            return res
        again = None
        many = len(job["exported"]) > 1
        for exported, outdir in zip(job["exported"], job["outs"]):
            what = f"exported model ({os.path.basename(outdir)})" if many else "exported model"
            if not os.path.exists(exported):
                res.update({"status": "no-export", "reason": f"no exported model at {exported}"})
                break
            send({"id": job["id"], "phase": "exported"})
            exp, exp_err = run_model(exported, sets, outputs)
            if not orig_why:
                why = exp_err or compare_sets(sets, exp)
                if why:
                    res.update({"status": "fail", "reason": f"{what}: {why}"})
                    break
                res["status"] = "pass"
                continue
            # ORT is wrong (or unable) on the original: still, where it ran,
            # the exported model must behave the same way.
            res["status"], res["reason"] = "ort-original", orig_why
            if orig_err:
                continue
            # Random ops (Bernoulli, training Dropout) give other outputs on
            # every run: when a second run of the original disagrees with the
            # first, there is nothing to compare.
            if again is None:
                again = run_model(model_file, sets, outputs)
            if again[1] or compare_runs(sets, orig, again[0], outputs):
                res["nondeterministic"] = True
                break
            why = exp_err or compare_runs(sets, orig, exp, outputs)
            if why:
                res.update({"status": "fail", "reason": f"{what} differs from the original under onnxruntime "
                                                        f"(which itself fails the original: {orig_why}): {why}"})
                res.pop("differential", None)
                break
            res["differential"] = True
        return res

    send({"ready": True})
    for line in sys.stdin:
        job = json.loads(line)
        try:
            res = one_job(job)
        except NotComparable as e:
            res = {"id": job["id"], "status": "not-comparable", "reason": str(e)}
        except Exception as e:  # noqa: BLE001
            res = {"id": job["id"], "status": "error", "reason": f"test data: {one_line(e)}"}
        send(res)


# ---------------------------------------------------------------------------
# Parent: finds the cases, hands them to workers, counts, judges.

class Worker:
    """One worker process; run(job) gives its result, or None when it died
    or passed the timeout (then .why says which and a new process starts)."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.buf = ""
        self.err = []
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()
        msg = self._read(time.monotonic() + self.timeout)
        if not msg or not msg.get("ready"):
            raise RuntimeError(f"worker did not start: {self.why}")

    def _drain(self, proc):
        for line in proc.stderr:
            self.err = (self.err + [line])[-20:]

    def _read(self, deadline):
        fd = self.proc.stdout.fileno()
        while "\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                self.proc.wait()
                self.why = f"timed out after {self.timeout} s"
                return None
            r, _, _ = select.select([fd], [], [], left)
            if r:
                chunk = os.read(fd, 65536).decode("utf-8", "replace")
                if not chunk:
                    code = self.proc.wait()
                    self.why = f"worker died (exit {code}): {one_line(''.join(self.err))}"
                    return None
                self.buf += chunk
        line, self.buf = self.buf.split("\n", 1)
        return json.loads(line)

    def run(self, job):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.phase = "original"
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read(deadline)
            if msg is None:
                self.proc = None
                return None
            if "phase" in msg:
                self.phase = msg["phase"]
                continue
            return msg

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def usage(msg):
    print(f"ort_compare.py: {msg}", file=sys.stderr)
    print(__doc__.split("usage: ", 1)[1].split("\n\n")[0], file=sys.stderr)
    sys.exit(2)


def parent_main(argv):
    o = {"outs": [], "expected": None, "rt": None, "ort_original": None, "original_only": False,
         "jobs": 2, "timeout": 60.0, "verbose": False, "paths": []}
    i = 0
    while i < len(argv):
        a = argv[i]

        def val():
            nonlocal i
            if i + 1 >= len(argv):
                usage(f"{a} needs a value")
            i += 1
            return argv[i]

        if a == "--out":
            o["outs"].append(val())
        elif a == "--expected":
            o["expected"] = val()
        elif a == "--roundtrip-expected":
            o["rt"] = val()
        elif a == "--ort-original":
            o["ort_original"] = val()
        elif a == "--original-only":
            o["original_only"] = True
        elif a == "--jobs":
            o["jobs"] = max(1, int(val()))
        elif a == "--timeout":
            o["timeout"] = float(val())
        elif a == "-v":
            o["verbose"] = True
        elif a.startswith("-"):
            usage(f"unknown option {a}")
        else:
            o["paths"].append(a)
        i += 1
    if not o["paths"]:
        usage("no test data paths")
    if not o["outs"] and not o["original_only"]:
        usage("--out OUTDIR is needed (or --original-only)")

    found = []
    for p in o["paths"]:
        find_cases(p, found)
    cases = [{"dir": d, "suite": suite, "name": name} for suite, name, d in found]
    if not cases:
        print("FAIL: no test cases found under " + " ".join(o["paths"]))
        print("0 passed, 1 failed")
        return 1
    expected = read_list(o["expected"])
    # --ort-original: the cases onnxruntime itself cannot load or pass, each
    # with its reason; then one missing from the list, or listed but passing,
    # fails the run (without it they are only counted).
    ort_original = read_list(o["ort_original"]) if o["ort_original"] else None
    rt_expected = read_list(o["rt"])

    t0 = time.monotonic()
    results = [None] * len(cases)
    lock = threading.Lock()
    nxt = [0]

    def work():
        w = Worker(o["timeout"])
        while True:
            with lock:
                k = nxt[0]
                nxt[0] += 1
            if k >= len(cases):
                break
            c = cases[k]
            job = {"id": k, "dir": c["dir"], "outs": o["outs"], "original_only": o["original_only"],
                   "exported": [os.path.join(d, c["suite"], c["name"], "model.onnx") for d in o["outs"]]}
            r = w.run(job)
            if r is None:
                r = ({"status": "fail", "reason": f"exported model: onnxruntime {w.why}"} if w.phase == "exported"
                     else {"status": "ort-original", "reason": f"onnxruntime {w.why}"})
            results[k] = r
        w.close()

    threads = [threading.Thread(target=work) for _ in range(min(o["jobs"], len(cases)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    count = dict.fromkeys(("pass", "fail", "ort-original", "not-comparable", "no-export", "error"), 0)
    differential = nondet = xfail = unexpected = stale = 0
    suites_run = {c["suite"] for c in cases}
    seen = set()
    lines = {"fail": [], "ort": [], "nc": [], "stale": []}
    for c, r in zip(cases, results):
        key = f"{c['suite']}/{c['name']}"
        seen.add(key)
        r = r or {"status": "error", "reason": "no result"}
        # A missing export is only acceptable for a model whose round trip is
        # a listed failure; otherwise it is a failure here too.
        if r["status"] == "no-export":
            if key in rt_expected:
                count["no-export"] += 1
                if o["verbose"]:
                    lines["nc"].append(f"NOEXPORT {key}: {r['reason']}")
                continue
            r["status"] = "fail"
        if r["status"] == "error":
            r["status"] = "fail"
        count[r["status"]] += 1
        differential += bool(r.get("differential"))
        nondet += bool(r.get("nondeterministic"))
        if r["status"] == "fail":
            if key in expected:
                xfail += 1
                lines["fail"].append(f"FAIL {key}: {r['reason']} (expected: {expected[key]})")
            else:
                unexpected += 1
                lines["fail"].append(f"FAIL {key}: {r['reason']}")
            continue
        if key in expected:
            stale += 1
            lines["stale"].append(f"STALE {key}: listed in {o['expected']} but did not fail ({r['status']})")
        if r["status"] == "ort-original" and o["verbose"]:
            lines["ort"].append(f"ORT {key}: {r['reason']}")
        if ort_original is not None and (r["status"] == "ort-original") != (key in ort_original):
            if r["status"] == "ort-original":
                unexpected += 1
                lines["fail"].append(f"UNLISTED {key}: onnxruntime cannot pass the original, and "
                                     f"{o['ort_original']} does not say why: {r['reason']}")
            else:
                stale += 1
                lines["stale"].append(f"STALE {key}: listed in {o['ort_original']} but onnxruntime passes it "
                                      f"({r['status']})")
        if r["status"] == "not-comparable" and o["verbose"]:
            lines["nc"].append(f"NOTCOMPARABLE {key}: {r['reason']}")
    for lst, fname in ((ort_original or {}, o["ort_original"]), (expected, o["expected"])):
        for key in lst:
            if key not in seen and key.split("/")[0] in suites_run:
                stale += 1
                lines["stale"].append(f"STALE {key}: listed in {fname} but no such test case")
    for part in ("ort", "nc", "fail", "stale"):
        for line in lines[part]:
            print(line)
    secs = time.monotonic() - t0
    print(f"{len(cases)} cases in {secs:.1f} s{' (original models only)' if o['original_only'] else ''}")
    print(f"ort cannot run original: {count['ort-original']}" +
          ("" if o["original_only"] else
           f" (of which {differential} ran, and the exported model gave the same outputs;"
           f" {nondet} ran but give other outputs on every run)"))
    print(f"not comparable (non-tensor test data): {count['not-comparable']}")
    if not o["original_only"]:
        print(f"no exported model (listed round-trip failure): {count['no-export']}")
    print(f"{xfail} expected failures (listed), {unexpected} unexpected, {stale} stale entries")
    print(f"{count['pass']} passed, {count['fail']} failed")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker_main()
    else:
        try:
            sys.exit(parent_main(sys.argv[1:]))
        except (OSError, ValueError, RuntimeError) as e:
            print(f"FAIL: {one_line(e)}")
            print("0 passed, 1 failed")
            sys.exit(1)
