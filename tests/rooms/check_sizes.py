#!/usr/bin/env python3
"""Size limits of the sources: no file under src/ over 1,500 lines, no
function over 150.

  check_sizes.py SRCDIR

A function is counted from the line that starts its definition (at column
0) to its closing brace at column 0, as the project's style writes them.
Exit 1 with one line per finding.
"""
import os
import re
import sys

MAX_FILE, MAX_FN = 1500, 150
START = re.compile(r"^[A-Za-z_][^;=]*\(")


def functions(lines):
    i = 0
    while i < len(lines):
        line = lines[i]
        if START.match(line) and not line.startswith(("typedef", "struct ", "enum ", "union ", "#")):
            j = i
            # the signature may run over a few lines, up to its "{"
            while j < len(lines) and j < i + 10 and not lines[j].rstrip().endswith(("{", ";")):
                j += 1
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                name = line.split("(")[0].split()[-1].lstrip("*")
                yield name, i + 1, k - i + 1
                i = k
        i += 1


def main():
    src = sys.argv[1]
    bad = []
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().split("\n")
            if len(lines) > MAX_FILE:
                bad.append(f"{path}: {len(lines)} lines (at most {MAX_FILE})")
            for name, at, n in functions(lines):
                if n > MAX_FN:
                    bad.append(f"{path}:{at}: {name} is {n} lines (at most {MAX_FN})")
    for b in bad:
        print(b)
    print(f"check_sizes: {len(bad)} findings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
