#!/usr/bin/env python3
"""Lines of the builtin agent: all (wc -l), and code (non-blank, non-comment) outside tests."""
import os, re, sys, subprocess
root = sys.argv[1] if len(sys.argv) > 1 else "crates/agents/src/builtin"
tot = code = testl = 0
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith(".rs"): continue
        p = os.path.join(dp, f)
        lines = open(p).read().split("\n")
        if lines and lines[-1] == "": lines = lines[:-1]
        tot += len(lines)
        if f == "tests.rs" or "/tests/" in p:
            testl += len(lines); continue
        skip = None
        for i, l in enumerate(lines):
            if skip is not None:
                testl += 1
                if l == skip: skip = None
                continue
            if l.strip() == "#[cfg(test)]":
                nxt = lines[i+1] if i+1 < len(lines) else ""
                ind = re.match(r"\s*", nxt).group(0)
                if nxt.rstrip().endswith(";"):
                    continue
                skip = ind + "}"; testl += 1; continue
            s = l.strip()
            if not s or s.startswith("//"): continue
            code += 1
print(f"all {tot}  tests {testl}  code-outside-tests {code}")
