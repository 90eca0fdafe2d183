#!/usr/bin/env python3
"""passes_loc.py [REV] [--repo DIR] [--markdown]: lines of code of src/passes per pass,
at git revision REV (default 480c578, main before issue 23) against the working tree,
and how many passes are rules, matcher tables or hand-written (issue 23's second figure).

What is counted
- Code lines: lines of .c/.h/.inc files with something left after removing /* */ and //
  comments (string literals are respected); in .rules files, lines with something left
  before a '#'. Blank and comment-only lines are not counted.
- A pass is a `gwr_pattern_rewriter NAME = {` or `= GWR_MATCH_PASS("label", ...)` definition in
  a .c file (its label is the `.name = "..."` inside, else NAME less `gwr_pattern_`), or a
  src/passes/rules/*.rules file that src/passes/rules_pass.c runs as a pass
  (`GWR_PS_RULES_PASS("label", "file", ...)`: the whole file is that label's row). A .c file is cut after each definition: the code from the
  end of the previous definition to the end of this one is the pass's (the file's shared
  code before its first pass goes to that pass). Definitions with no code between them
  (two labels sharing one function) form one row.
- Kind: "rule" for a rule of a .rules file; "table" for a C pass whose part of the file uses
  the declarative matcher (gwr_match_node tables, gwr_match_layer, gwr_match_add,
  gwr_match_rewriter); else "hand". A .rules file counts its rules' lines and the lines
  between them (comments excluded), one row per rule.
- Every other file of src/passes (the optimizer, the pass table, analyses, shared helpers) is
  one "infrastructure" row.
The working tree is read from disk (src/passes of the repository root, untracked files
included); REV through `git show`. A missing src/passes/rules/ is simply no rules.
"""
import argparse
import os
import re
import subprocess
import sys

CODE_EXT = (".c", ".h", ".inc")
DEF_RE = re.compile(r"\bgwr_pattern_rewriter\s+(\w+)\s*=\s*(\{|GWR_MATCH_PASS\(\s*\"([^\"]+)\")")
# a rule file run as one pass (src/passes/rules_pass.c): label, file
RULES_PASS_RE = re.compile(r'GWR_PS_RULES_PASS\(\s*"([^"]+)"\s*,\s*"([^"]+)"')
NAME_RE = re.compile(r'\.name\s*=\s*"([^"]+)"')
TABLE_RE = re.compile(r"\bgwr_match_(node|layer|add|rewriter)\b")
RULE_RE = re.compile(r"^rule\s+([A-Za-z_][A-Za-z0-9_.]*)", re.M)


def strip_c_comments(text):
    """text with comments replaced by spaces (newlines kept), string and char literals kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(lines):
    return sum(1 for ln in lines if ln.strip())


def c_rows(path, text):
    """[(labels, kind, loc)] of a .c file's passes, or [] when it defines none."""
    code = strip_c_comments(text).split("\n")
    defs = []  # (first line of definition, last line, name)
    joined = "\n".join(code)
    for m in DEF_RE.finditer(joined):
        start = joined.count("\n", 0, m.start())
        # the definition ends at the first line holding "};" from its start
        end = start
        close = "};" if m.group(2) == "{" else ");"
        while end < len(code) and close not in code[end]:
            end += 1
        body = "\n".join(code[start:end + 1])
        nm = NAME_RE.search(body)
        name = m.group(3) or (nm.group(1) if nm else re.sub(r"^gwr_pattern_", "", m.group(1)))
        defs.append((start, end, name))
    rows, prev_end = [], -1
    for start, end, name in defs:
        seg = code[prev_end + 1:end + 1]
        between = code[prev_end + 1:start]
        if rows and not code_lines(between):
            labels, kind, loc, seg_text = rows[-1]
            rows[-1] = (labels + [name], kind, loc + code_lines(seg), seg_text)
        else:
            seg_text = "\n".join(seg)
            rows.append(([name], "table" if TABLE_RE.search(seg_text) else "hand", code_lines(seg), seg_text))
        prev_end = end
    if rows and code_lines(code[prev_end + 1:]):  # code after the last definition: the last pass's
        labels, kind, loc, seg_text = rows[-1]
        tail = "\n".join(code[prev_end + 1:])
        kind = "table" if kind == "table" or TABLE_RE.search(tail) else "hand"
        rows[-1] = (labels, kind, loc + code_lines(code[prev_end + 1:]), seg_text)
    return [(labels, kind, loc) for labels, kind, loc, _ in rows]


def rules_rows(text):
    lines = [ln.split("#", 1)[0] for ln in text.split("\n")]
    starts = [(text.count("\n", 0, m.start()), m.group(1)) for m in RULE_RE.finditer(text)]
    rows = []
    for k, (ln, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        rows.append(([name], "rule", code_lines(lines[ln:end])))
    return rows


def analyse(files):
    """files: {relative path under src/passes: text} -> (rows, infra rows). A rule file run as
    a pass (rules_pass.c names it) is one row under the pass's label; another (none yet) one row
    per rule."""
    rows, infra = [], []
    label_of = {f: lab for t in files.values() for lab, f in RULES_PASS_RE.findall(t)}
    for path in sorted(files):
        text = files[path]
        if path.endswith(".rules"):
            base = os.path.basename(path)
            if base in label_of:
                lines = [ln.split("#", 1)[0] for ln in text.split("\n")]
                rows.append((path, [label_of[base]], "rule", code_lines(lines)))
                continue
            for labels, kind, loc in rules_rows(text):
                rows.append((path, labels, kind, loc))
            continue
        if not path.endswith(CODE_EXT):
            continue
        loc_all = code_lines(strip_c_comments(text).split("\n"))
        found = c_rows(path, text) if path.endswith(".c") else []
        if found:
            for labels, kind, loc in found:
                rows.append((path, labels, kind, loc))
        else:
            infra.append((path, loc_all))
    return rows, infra


def files_at_rev(repo, rev):
    try:
        names = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", rev, "--", "src/passes"],
                               capture_output=True, text=True, check=True).stdout.split()
    except subprocess.CalledProcessError as e:
        sys.exit(f"passes_loc.py: {rev}: {e.stderr.strip() or 'not a revision'}")
    out = {}
    for n in names:
        blob = subprocess.run(["git", "-C", repo, "show", f"{rev}:{n}"], capture_output=True, check=True).stdout
        out[os.path.relpath(n, "src/passes")] = blob.decode("utf-8", "replace")
    return out


def files_on_disk(repo):
    root = os.path.join(repo, "src", "passes")
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            full = os.path.join(dirpath, n)
            with open(full, encoding="utf-8", errors="replace") as f:
                out[os.path.relpath(full, root)] = f.read()
    return out


def by_pass(rows):
    """{label: (file, kind, loc, group)} ; a row of several labels gives each its group."""
    out = {}
    for path, labels, kind, loc in rows:
        for lab in labels:
            out[lab] = (path, kind, loc, ", ".join(labels))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rev", nargs="?", default="480c578", help="the 'before' revision (default 480c578)")
    ap.add_argument("--repo", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="repository root (default: this script's)")
    args = ap.parse_args()
    repo = os.path.abspath(args.repo)
    before_rows, before_infra = analyse(files_at_rev(repo, args.rev))
    after_rows, after_infra = analyse(files_on_disk(repo))
    b, a = by_pass(before_rows), by_pass(after_rows)

    print(f"# src/passes per pass: {args.rev} vs the working tree")
    print()
    print("Code lines (no blank or comment-only lines). Labels sharing one function are one group;")
    print("the group's lines are shown on each label with a '*'.")
    print()
    print("| pass | before: file | kind | lines | after: file | kind | lines | change |")
    print("| --- | --- | --- | ---: | --- | --- | ---: | ---: |")
    seen_groups = set()
    tot_b = tot_a = 0
    for lab in sorted(set(b) | set(a), key=lambda s: (s not in b, s)):
        cells, locs = [], []
        for side, table in (("b", b), ("a", a)):
            if lab in table:
                path, kind, loc, group = table[lab]
                star = "*" if group != lab else ""
                cells += [path, kind, f"{loc}{star}"]
                key = (side, path, group)
                if key not in seen_groups:
                    seen_groups.add(key)
                    if side == "b":
                        tot_b += loc
                    else:
                        tot_a += loc
                locs.append(loc)
            else:
                cells += ["-", "-", "0"]
                locs.append(0)
        print(f"| {lab} | " + " | ".join(cells) + f" | {locs[1] - locs[0]:+d} |")
    print()
    print("| infrastructure file | before | after | change |")
    print("| --- | ---: | ---: | ---: |")
    ib, ia = dict(before_infra), dict(after_infra)
    for path in sorted(set(ib) | set(ia)):
        print(f"| {path} | {ib.get(path, 0)} | {ia.get(path, 0)} | {ia.get(path, 0) - ib.get(path, 0):+d} |")
    print()

    def kinds(rows):
        k = {"rule": 0, "table": 0, "hand": 0}
        for _, labels, kind, _ in rows:
            k[kind] += len(labels)
        return k

    kb, ka = kinds(before_rows), kinds(after_rows)
    sib, sia = sum(ib.values()), sum(ia.values())
    print("| totals | before | after | change |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| passes | {sum(kb.values())} | {sum(ka.values())} | {sum(ka.values()) - sum(kb.values()):+d} |")
    for kind, what in (("rule", "rules (.rules files)"), ("table", "matcher tables (C)"), ("hand", "hand-written (C)")):
        print(f"| {what} | {kb[kind]} | {ka[kind]} | {ka[kind] - kb[kind]:+d} |")
    print(f"| lines in passes | {tot_b} | {tot_a} | {tot_a - tot_b:+d} |")
    print(f"| lines in infrastructure | {sib} | {sia} | {sia - sib:+d} |")
    print(f"| lines of src/passes | {tot_b + sib} | {tot_a + sia} | {tot_a + sia - tot_b - sib:+d} |")
    if not any(p.endswith(".rules") for p, *_ in after_rows):
        print()
        print("(no src/passes/rules/*.rules in the working tree: no pass is a rule yet)")


if __name__ == "__main__":
    main()
