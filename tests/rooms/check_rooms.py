#!/usr/bin/env python3
"""The room order of docs/design.md, checked on the objects and the sources.

  check_rooms.py OBJDIR SRCDIR

OBJDIR holds the object files of libgwr by path (src/<room>/.../*.c.o);
SRCDIR is the repository's src/. Fails (exit 1, one line per finding) when
  - an object calls or reads a symbol defined in a room it may not use
    (a room may use itself and the rooms below it);
  - two or more files of one room use each other's symbols in a circle;
  - a file includes another room's private header: a room offers the
    rooms above it one header, src/<room>/<room>_api.h (util: util.h).
"""
import os
import re
import subprocess
import sys

# Who may use whom (docs/design.md): each room and the rooms it may use.
BELOW = {
    "util": set(),
    "ir": {"util"},
    "functional": {"util", "ir"},
    "rewrite": {"util", "ir", "functional"},
    "match": {"util", "ir", "functional", "rewrite"},
    "diff": {"util", "ir", "functional", "rewrite", "match"},
    "exec": {"util", "ir", "functional"},
    "onnx": {"util", "ir", "functional"},
    "rules": {"util", "ir", "functional", "rewrite", "match", "exec"},
    "passes": {"util", "ir", "functional", "rewrite", "match", "exec", "rules"},
    "quant": {"util", "ir", "functional", "rewrite", "match", "exec", "onnx", "rules", "passes"},
}
API_HEADER = {r: f"{r}/{r}_api.h" for r in BELOW}
API_HEADER["util"] = "util/util.h"


def room_of(path):
    parts = path.split(os.sep)
    return parts[0] if parts and parts[0] in BELOW else None


def objects(objdir, srcdir):
    """The objects of the sources that exist (a build folder keeps the
    objects of deleted files)."""
    out = {}
    for dirpath, _, files in os.walk(objdir):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, objdir)
            i = rel.find("src" + os.sep)
            if i < 0:
                continue
            src = rel[i + 4:-2]  # path under src/, ending in .c
            if room_of(src) and os.path.exists(os.path.join(srcdir, src)):
                out[src] = full
    return out


def symbols(obj):
    text = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRVWC" or kind in "tdbr" and False:
            defined.add(name)
    return defined, undefined


def cycles(nodes, edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def main():
    objdir, srcdir = sys.argv[1], sys.argv[2]
    objs = objects(objdir, srcdir)
    if not objs:
        print(f"check_rooms: no objects of src/ under {objdir}")
        return 1
    owner, uses = {}, {}
    for src, obj in objs.items():
        d, u = symbols(obj)
        for s in d:
            owner[s] = src
        uses[src] = u
    bad = []
    edges = {}
    for src, u in sorted(uses.items()):
        r = room_of(src)
        for s in sorted(u):
            dst = owner.get(s)
            if not dst or dst == src:
                continue
            rd = room_of(dst)
            if rd != r and rd not in BELOW[r]:
                bad.append(f"src/{src} ({r}) uses {s} of src/{dst} ({rd}): {r} may use only {sorted(BELOW[r]) or 'nothing'}")
            if rd == r:
                edges.setdefault(src, set()).add(dst)
    for r in sorted(BELOW):
        nodes = [s for s in uses if room_of(s) == r]
        for comp in cycles(nodes, {k: v for k, v in edges.items() if room_of(k) == r}):
            bad.append(f"room {r}: files use each other in a circle: " + ", ".join("src/" + c for c in comp))
    inc = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"', re.M)
    for dirpath, _, files in os.walk(srcdir):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, srcdir)
            r = room_of(rel)
            if not r:
                continue
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            for m in inc.finditer(text):
                room, hdr = m.group(1), m.group(1) + "/" + m.group(2)
                if room not in BELOW or room == r:
                    continue
                if room not in BELOW[r]:
                    bad.append(f"src/{rel} ({r}) includes {hdr}: {r} may not use {room}")
                elif hdr != API_HEADER[room]:
                    bad.append(f"src/{rel} ({r}) includes {hdr}, private to {room} (use {API_HEADER[room]})")
    for b in bad:
        print(b)
    print(f"check_rooms: {len(objs)} objects, {len(bad)} findings")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
