#!/usr/bin/env python3
"""The layering ARCHITECTURE.md draws, checked against the code.

ARCHITECTURE.md holds one fenced block marked `layers`: a line `crate NAME: DEP …` for every
crate of the workspace (the crates of ours it may depend on), and a line `MODULE: USED …` for
every top-level module (the modules it may use). A module is a top-level module of a crate
(`store`, `trust`, …), or a whole crate that has no modules worth naming apart (`specdoc`,
`review`, `agents`: a crate `tlv4-X` whose name `X` the block lists as a module and whose
`lib.rs` declares no module `X`; a crate that does, like `tlv4-store`, is its modules). A
crate of one module re-exported by another (`pub use tlv4_agents as agents;`) is referred to
as `crate::agents::…` there. This script

- reads the crates' dependencies from `cargo metadata` and fails on a dependency between two
  crates of the workspace that the block does not allow (or a crate the block does not name);
- reads every `.rs` file of every crate (test code left out: files named `tests.rs` or under a
  `tests/` folder, and a file's inline `#[cfg(test)] mod … {` from that line on; a
  `#[cfg(test)] mod tests;` declaration ends nothing), finds its references
  to other modules — `crate::X`, `use crate::{X, …}`, `super::X` climbing to the crate root,
  and `tlv4_core::X`, `tlv4_store::X`, `tlv4_agents::…`, … across crates — and fails on a
  reference the block does not allow, naming the file and line;
- fails on a cycle between modules (which the rules alone would let through if they were
  written with one);
- fails on a handle to stdout or stderr taken outside `src/ui/` and `src/main.rs` (asking
  whether one is a terminal aside; test code left out, as above): clippy's `print_stdout`/`print_stderr`, denied in every
  library crate, catch the print macros, this catches `std::io::stdout().lock()`.

    python3 bench/arch/layers.py          # check; print the graph; exit 1 on a violation
    python3 bench/arch/layers.py --where N   # up to N places per forbidden edge (default 5)

Exit status: 0 when the code keeps to the map, 1 when it does not, 2 when the map is unreadable.
"""

import json
import os
import re
import subprocess
import sys
from collections import defaultdict

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def read_map():
    """(crate rules, module rules) from ARCHITECTURE.md's `layers` block."""
    text = open(os.path.join(TOP, "ARCHITECTURE.md"), encoding="utf-8").read()
    m = re.search(r"^```layers\n(.*?)^```", text, re.M | re.S)
    if not m:
        sys.exit("ARCHITECTURE.md has no ```layers block")
    crates, modules = {}, {}
    for n, line in enumerate(m.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if ":" not in line:
            print(f"ARCHITECTURE.md layers line {n}: `{line}` has no `:`", file=sys.stderr)
            sys.exit(2)
        head, rest = line.split(":", 1)
        used = set(rest.split())
        if head.startswith("crate "):
            crates[head[len("crate "):].strip()] = used
        else:
            modules[head.strip()] = used
    return crates, modules


def workspace():
    """Each workspace package: (name, source folder, names of workspace packages it depends
    on, normal dependencies only)."""
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=TOP, capture_output=True, text=True, check=True,
    ).stdout
    meta = json.loads(out)
    names = {p["name"] for p in meta["packages"]}
    found = []
    for p in meta["packages"]:
        deps = {d["name"] for d in p["dependencies"] if d.get("kind") is None and d["name"] in names}
        lib = [t for t in p["targets"] if "lib" in t["kind"]]
        src = os.path.dirname(lib[0]["src_path"]) if lib else None
        found.append((p["name"], src, deps))
    return found


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"//.*", "", line) for line in text.split("\n"))


def without_tests(text):
    m = re.search(r"^\s*#\[cfg\(test\)\]\s*\n\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text, re.M)
    return text[: m.start()] if m else text


def group_heads(body):
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
    return [m.group(0) for h in heads if (m := re.match(IDENT, h.strip()))]


def braced(text, start):
    depth, i = 1, start
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start : i - 1]


def declares_module(src, name):
    """Whether the crate whose `lib.rs` is in `src` declares a top-level module `name`: then
    it is split into its modules (`tlv4-store` holds `store`), not taken as one."""
    lib = strip_comments(open(os.path.join(src, "lib.rs"), encoding="utf-8").read())
    return re.search(rf"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+{name}\s*;", lib, re.M) is not None


def module_path(rel):
    parts = rel[:-3].split("/")
    return parts[:-1] if parts[-1] == "mod" else parts


def main(argv):
    places = int(argv[argv.index("--where") + 1]) if "--where" in argv else 5
    crate_rules, module_rules = read_map()
    packages = workspace()
    bad = 0

    # Crates: the edges of `cargo metadata` against the map.
    for name, _, deps in sorted(packages):
        if name not in crate_rules:
            print(f"crate {name} is not in ARCHITECTURE.md's layers")
            bad += 1
            continue
        for d in sorted(deps - crate_rules[name]):
            print(f"crate {name} depends on {d}: not allowed by ARCHITECTURE.md")
            bad += 1

    # Modules: each crate's top-level modules, or the crate itself when the map names it so.
    lib_names = {n.replace("-", "_"): n for n, _, _ in packages}
    crate_node = {}  # package -> node name when the whole crate is one module
    for n, src, _ in packages:
        short = n.removeprefix("tlv4-")
        if short in module_rules and not (src and declares_module(src, short)):
            crate_node[n] = short
    # Each crate's top-level modules, and the names its lib.rs re-exports from them.
    resolve = {}
    for name, src, _ in packages:
        if not src:
            continue
        lib = strip_comments(open(os.path.join(src, "lib.rs"), encoding="utf-8").read())
        mods = set(re.findall(rf"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+({IDENT})\s*;", lib, re.M))
        names = {m: m for m in mods if m != "testutil"}
        for m, body in re.findall(rf"^\s*pub\s+use\s+({IDENT})::\{{([^}}]*)\}}", lib, re.M):
            for h in body.split(","):
                h = h.strip().split(" as ")[-1].strip()
                if h:
                    names[h] = m
        for m, h in re.findall(rf"^\s*pub\s+use\s+({IDENT})::({IDENT})\s*;", lib, re.M):
            names[h] = m
        # A crate of one module re-exported under a name (`pub use tlv4_agents as agents;`):
        # `crate::agents::…` is a reference to that crate.
        for ln, h in re.findall(rf"^\s*pub\s+use\s+({IDENT})\s+as\s+({IDENT})\s*;", lib, re.M):
            pn = lib_names.get(ln)
            if pn in crate_node:
                names[h] = crate_node[pn]
        resolve[name] = names
    edges = defaultdict(lambda: defaultdict(list))
    nodes = set()
    for name, src, _ in packages:
        if not src:
            continue
        mods = resolve[name]
        for dirpath, _, files in os.walk(src):
            for f in sorted(files):
                if not f.endswith(".rs"):
                    continue
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, src).replace(os.sep, "/")
                if f == "tests.rs" or "/tests/" in f"/{rel}" or rel == "main.rs":
                    continue
                text = without_tests(strip_comments(open(full, encoding="utf-8").read()))
                shown = os.path.relpath(full, TOP)
                # Only `ui` (and `main`) write to the terminal.
                if not shown.startswith("src/ui/"):
                    for m in re.finditer(r"\bio::(stdout|stderr)\(\)(?!\s*\.is_terminal\(\))", text):
                        line = text.count("\n", 0, m.start()) + 1
                        print(f"forbidden: {shown}:{line} takes {m.group(1)} outside ui")
                        bad += 1
                path = module_path(rel) if rel != "lib.rs" else []
                if name in crate_node:
                    me = crate_node[name]
                elif path and path[0] in mods and path[0] == mods[path[0]]:
                    me = path[0]
                else:
                    continue
                nodes.add(me)

                def add(target, pos):
                    if target and target != me:
                        edges[me][target].append(f"{shown}:{text.count(chr(10), 0, pos) + 1}")

                if name not in crate_node:
                    for m in re.finditer(rf"\bcrate::({IDENT})", text):
                        add(mods.get(m.group(1)), m.start())
                    for m in re.finditer(r"\bcrate::\{", text):
                        for h in group_heads(braced(text, m.end())):
                            add(mods.get(h), m.start())
                    for m in re.finditer(rf"\b((?:super::)+)(\{{|{IDENT})", text):
                        if len(path) - m.group(1).count("super::") != 0:
                            continue
                        heads = group_heads(braced(text, m.end())) if m.group(2) == "{" else [m.group(2)]
                        for h in heads:
                            add(mods.get(h), m.start())
                for ln, pn in lib_names.items():
                    if pn == name:
                        continue
                    for m in re.finditer(rf"\b{ln}::(\{{|{IDENT})", text):
                        if pn in crate_node:
                            add(crate_node[pn], m.start())
                            continue
                        heads = group_heads(braced(text, m.end())) if m.group(1) == "{" else [m.group(1)]
                        for h in heads:
                            add(resolve[pn].get(h), m.start())

    print("module graph (module -> modules it uses, with reference counts):")
    for m in sorted(nodes):
        uses = edges.get(m, {})
        print(f"  {m:12} -> " + (", ".join(f"{t} ({len(uses[t])})" for t in sorted(uses)) or "-"))
    for m in sorted(nodes):
        if m not in module_rules:
            print(f"module {m} is not in ARCHITECTURE.md's layers")
            bad += 1
            continue
        for t in sorted(edges.get(m, {})):
            if t not in module_rules[m]:
                refs = edges[m][t]
                more = f", … {len(refs) - places} more" if len(refs) > places else ""
                print(f"forbidden: {m} uses {t} ({len(refs)}): {', '.join(refs[:places])}{more}")
                bad += 1
    for m, allowed in module_rules.items():
        for t in allowed - nodes:
            print(f"ARCHITECTURE.md layers: {m} may use `{t}`, which is no module")
            bad += 1

    # Cycles (Tarjan).
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

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
            comps.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    for comp in (c for c in comps if len(c) > 1):
        print(f"cycle: {{{', '.join(comp)}}}")
        bad += 1
    print("the code keeps to the map" if not bad else f"{bad} violation(s) of ARCHITECTURE.md's layers")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
