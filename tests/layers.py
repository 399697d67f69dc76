#!/usr/bin/env python3
"""layers.py SRC_DIR: the layer rule of doc/HACKING.md, read off the code.

src/ is one folder per layer. A file may include and call only what its own folder or a
lower layer holds; the feature folders share a layer and never reach into each other (each
one's header is private to it and to cli/, which wires them in); and no two files call each
other in a circle. Exit 0 when all holds, 1 with one line per breach.

A reader, not a compiler: comments, strings and preprocessor lines are dropped, a function
definition is a name followed by its parameters and a body at file level (not static), and
any later mention of that name in another file's code (a call, or a pointer taken) ties the
two files. --graph prints the file-to-file ties instead of checking.
"""
import os
import re
import sys
from collections import defaultdict

# Lowest first. Folders of one rank are siblings: neither may reach the other.
LAYERS = [
    ("base",),
    ("",),  # src/fastcat.h: the shared types (config, counters, the session record)
    ("net",),
    ("relay",),
    ("report",),
    ("stripe", "verify", "resume", "retry", "chain", "bench", "reliable"),
    ("cli",),
]
RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}

TOKEN = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^[ \t]*#[^\n]*(?:\\\n[^\n]*)*'
    r'|[A-Za-z_]\w*|\S',
    re.S | re.M,
)
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
NOT_CALLS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "_Static_assert",
             "__attribute__", "_Alignof", "alignof", "offsetof"}


def code_tokens(text):
    """The tokens of C code: identifiers and punctuation, without comments, strings or #lines."""
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t.startswith(("//", "/*", '"', "'")) or t.lstrip().startswith("#"):
            continue
        yield t


def definitions(tokens):
    """Names of the non-static functions a .c file defines at file level."""
    names, depth, paren, stmt, candidate = set(), 0, 0, [], None
    for t in tokens:
        if depth == 0 and paren == 0 and t == "(" and stmt and re.match(r"[A-Za-z_]", stmt[-1]):
            if candidate is None:
                candidate = stmt[-1]
        if t == "(":
            paren += 1
        elif t == ")":
            paren -= 1
        if t == "{":
            if depth == 0 and paren == 0 and candidate and "static" not in stmt and "=" not in stmt:
                names.add(candidate)
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                stmt, candidate = [], None
        elif depth == 0 and paren == 0 and t == ";":
            stmt, candidate = [], None
        elif depth == 0:
            stmt.append(t)
    return names


def folder_of(rel):
    d = os.path.dirname(rel)
    return d.split(os.sep)[0] if d else ""


def read_tree(src):
    files = {}
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith((".c", ".h")) and f != "config.h":
                path = os.path.join(d, f)
                with open(path, errors="replace") as fh:
                    files[os.path.relpath(path, src)] = fh.read()
    return files


def resolve(rel, name, files):
    """The file an #include "name" in rel means: beside rel first, then from src/."""
    here = os.path.normpath(os.path.join(os.path.dirname(rel), name))
    if here in files:
        return here
    return os.path.normpath(name) if os.path.normpath(name) in files else None


def ties(files):
    """(from, to, how, name): every include, and every mention of another file's function."""
    defined = {}
    tokens = {rel: list(code_tokens(text)) for rel, text in files.items()}
    for rel in sorted(files):
        if rel.endswith(".c"):
            for name in definitions(tokens[rel]):
                defined.setdefault(name, rel)
    out = []
    for rel, text in sorted(files.items()):
        for name in INCLUDE.findall(text):
            target = resolve(rel, name, files)
            if target and target != rel:
                out.append((rel, target, "includes", name))
        if not rel.endswith(".c"):
            continue
        toks = tokens[rel]
        used = {t for prev, t in zip([""] + toks, toks)
                if t in defined and t not in NOT_CALLS and prev not in ("struct", "union", "enum")}
        for name in sorted(used):
            target = defined[name]
            if target != rel and name != "main":
                out.append((rel, target, "calls", name))
    return out


def breaches(files):
    found = []
    for rel in sorted(files):
        if folder_of(rel) not in RANK:
            found.append(f"{rel}: folder {folder_of(rel) or '.'!r} is in no layer (tests/layers.py)")
    calls = defaultdict(set)
    for a, b, how, name in ties(files):
        fa, fb = folder_of(a), folder_of(b)
        if fa not in RANK or fb not in RANK:
            continue
        if how == "calls":
            calls[a].add(b)
        if RANK[fb] > RANK[fa]:
            found.append(f"{a} {how} {name} of {b}: upward, from {fa or 'src'} to {fb or 'src'}")
        elif RANK[fb] == RANK[fa] and fa != fb:
            found.append(f"{a} {how} {name} of {b}: sideways, between features {fa} and {fb}")
    for circle in circles(calls):
        found.append("circle of calls among " + ", ".join(circle))
    return found


def circles(edges):
    """Strongly connected groups of more than one file (Tarjan), each sorted by name."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main(argv):
    if len(argv) < 2:
        print("usage: layers.py SRC_DIR [--graph]", file=sys.stderr)
        return 2
    files = read_tree(argv[1])
    if not files:
        print(f"layers.py: no .c or .h files under {argv[1]}", file=sys.stderr)
        return 2
    if "--graph" in argv:
        for a, b, how, name in ties(files):
            print(f"{a} {how} {b} ({name})")
        return 0
    found = breaches(files)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
