#!/usr/bin/env python3
"""The longest functions in src/ outside tests, by lines from `fn` to its closing brace.

Usage: longest-fns.py [N] [ROOT]   (N=10, ROOT=src)
Relies on rustfmt's layout: a function ends at the first line that is its indentation plus
`}`. Test code is skipped: files named tests.rs or under a tests/ folder, and every
`#[cfg(test)]` item. Closures inside a function count toward it.
"""
import os, re, sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
root = sys.argv[2] if len(sys.argv) > 2 else "src"
fn_re = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")
rows = []
for dirpath, _, files in os.walk(root):
    if "/tests" in dirpath + "/" and dirpath.split(os.sep)[-1] == "tests":
        continue
    for f in files:
        if not f.endswith(".rs") or f == "tests.rs":
            continue
        path = os.path.join(dirpath, f)
        lines = open(path, encoding="utf-8").read().split("\n")
        skip_until = None
        i = 0
        while i < len(lines):
            line = lines[i]
            if skip_until is not None:
                if line == skip_until:
                    skip_until = None
                i += 1
                continue
            if line.strip() == "#[cfg(test)]" and i + 1 < len(lines):
                nxt = lines[i + 1]
                indent = nxt[: len(nxt) - len(nxt.lstrip())]
                if nxt.rstrip().endswith(";"):
                    i += 2
                    continue
                skip_until = indent + "}"
                i += 1
                continue
            m = fn_re.match(line)
            if m and not line.rstrip().endswith(";"):
                indent = m.group(1)
                end = indent + "}"
                j = i
                while j < len(lines) and lines[j] != end and not (j == i and line.rstrip().endswith("}")):
                    j += 1
                rows.append((j - i + 1, path, i + 1, m.group(8)))
            i += 1
rows.sort(reverse=True)
for length, path, line, name in rows[:n]:
    print(f"{length:5}  {path}:{line}  {name}")
over = [r for r in rows if r[0] > 150]
print(f"{len(over)} functions over 150 lines, {len(rows)} functions in all")
