"""caselist.py - what the conformance checkers (ort_compare.py,
check_exported.py) share: finding backend test cases and reading their
expected-failures lists."""
import os


def find_cases(p, out, depth=0):
    """Appends (suite, name, dir) for each test case (a directory holding
    model.onnx) at p or up to two levels below it, in sorted order."""
    if not os.path.isdir(p):
        raise ValueError(f"{p}: not a directory")
    if os.path.exists(os.path.join(p, "model.onnx")):
        a = os.path.abspath(p)
        out.append((os.path.basename(os.path.dirname(a)), os.path.basename(a), a))
        return
    if depth >= 2:
        return
    for e in sorted(os.listdir(p)):
        q = os.path.join(p, e)
        if os.path.isdir(q):
            find_cases(q, out, depth + 1)


def read_list(path):
    """{'suite/name': reason} from lines `suite/name  reason` (# comments);
    {} for no path. ValueError on a line without suite/name or a name
    listed twice."""
    m = {}
    if not path:
        return m
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 1)
            if "/" not in parts[0]:
                raise ValueError(f"{path}:{i}: expected 'suite/name reason'")
            if parts[0] in m:
                raise ValueError(f"{path}:{i}: {parts[0]} listed twice")
            m[parts[0]] = parts[1] if len(parts) > 1 else ""
    return m
