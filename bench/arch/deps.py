#!/usr/bin/env python3
"""The dependency graph between the top-level modules of src/, and its cycles.

Reads every `.rs` file under src/ (tests left out: files named `tests.rs` or under a
`tests/` folder, and a file's `#[cfg(test)] mod …` from that line on), finds the
references to other top-level modules — `crate::X`, `use crate::{X, …}`, and `super::X`
where the `super`s climb to the crate root — and prints, per module, the modules it uses
(with how many references), then the cycles: every strongly connected component of more
than one module, with the edges inside it and where each one is made.

    python3 bench/arch/deps.py             # the graph and the cycles; exit 1 on a cycle
    python3 bench/arch/deps.py --tests     # test code counted too
    python3 bench/arch/deps.py --where N   # up to N places per edge of a cycle (default 3)

Exit status: 0 without a cycle, 1 with one.
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def top_modules(src):
    """The top-level modules `lib.rs` declares, and the names it re-exports from them."""
    text = open(os.path.join(src, "lib.rs"), encoding="utf-8").read()
    mods = set(re.findall(rf"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+({IDENT})\s*;", text, re.M))
    reexports = {}
    for m, names in re.findall(rf"^\s*pub\s+use\s+({IDENT})::\{{([^}}]*)\}}", text, re.M):
        for n in names.split(","):
            n = n.strip().split(" as ")[-1].strip()
            if n:
                reexports[n] = m
    for m, n in re.findall(rf"^\s*pub\s+use\s+({IDENT})::({IDENT})\s*;", text, re.M):
        reexports[n] = m
    return mods, reexports


def module_path(rel):
    """`coordinator/run.rs` -> ['coordinator', 'run']; `store/mod.rs` -> ['store']."""
    parts = rel[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    return parts


def strip_comments(text):
    """The text without `//` comments (doc comments included) and `/* */` blocks; string
    literals are kept (a path inside one is rare and harmless)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*", "", line) for line in text.split("\n"))


def without_tests(text):
    """The text up to its first `#[cfg(test)]` that is followed by a `mod`."""
    m = re.search(r"^\s*#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\([^)]*\))?\s+)?mod\s", text, re.M)
    return text[: m.start()] if m else text


def group_heads(body):
    """The first path segment of every item of a `use` group body `a, b::c, d::{e, f}`."""
    heads, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            heads.append(cur)
            cur = ""
            continue
        if depth == 0:
            cur += ch
    heads.append(cur)
    out = []
    for h in heads:
        h = h.strip()
        m = re.match(IDENT, h)
        if m:
            out.append(m.group(0))
    return out


def references(text, path, mods, reexports):
    """(module, line number) for each reference in `text` of the file at module `path`."""
    found = []

    def add(name, pos):
        target = name if name in mods else reexports.get(name)
        if target and target != path[0]:
            found.append((target, text.count("\n", 0, pos) + 1))

    for m in re.finditer(rf"\bcrate::({IDENT})", text):
        add(m.group(1), m.start())
    for m in re.finditer(r"\bcrate::\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        for head in group_heads(text[m.end() : i - 1]):
            add(head, m.start())
    # `super::super::X`: climbs from the file's module; reaching the root names a module.
    for m in re.finditer(rf"\b((?:super::)+)(\{{|{IDENT})", text):
        ups = m.group(1).count("super::")
        if len(path) - ups != 0:
            continue
        if m.group(2) == "{":
            depth, i = 1, m.end()
            while i < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            for head in group_heads(text[m.end() : i - 1]):
                add(head, m.start())
        else:
            add(m.group(2), m.start())
    return found


def scan(src, with_tests):
    mods, reexports = top_modules(src)
    edges = defaultdict(lambda: defaultdict(list))
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, src).replace(os.sep, "/")
            if rel in ("lib.rs", "main.rs"):
                continue
            if not with_tests and (f == "tests.rs" or "/tests/" in f"/{rel}"):
                continue
            path = module_path(rel)
            if path[0] not in mods:
                continue
            text = strip_comments(open(full, encoding="utf-8").read())
            if not with_tests:
                text = without_tests(text)
            for target, line in references(text, path, mods, reexports):
                edges[path[0]][target].append(f"src/{rel}:{line}")
    return mods, edges


def components(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
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
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    with_tests = "--tests" in argv
    places = 3
    if "--where" in argv:
        places = int(argv[argv.index("--where") + 1])
    mods, edges = scan(os.path.normpath(ROOT), with_tests)
    print("module graph (module -> modules it uses, with reference counts):")
    for m in sorted(mods):
        uses = edges.get(m, {})
        listed = ", ".join(f"{t} ({len(uses[t])})" for t in sorted(uses))
        print(f"  {m:12} -> {listed or '-'}")
    cycles = [c for c in components(mods, edges) if len(c) > 1]
    if not cycles:
        print("no cycles")
        return 0
    print(f"{len(cycles)} cycle(s):")
    for comp in cycles:
        print(f"  {{{', '.join(comp)}}}")
        for a in comp:
            for b in comp:
                if b in edges.get(a, {}):
                    refs = edges[a][b]
                    shown = ", ".join(refs[:places])
                    more = f", … {len(refs) - places} more" if len(refs) > places else ""
                    print(f"    {a} -> {b} ({len(refs)}): {shown}{more}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
