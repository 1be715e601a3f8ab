#!/usr/bin/env python3
"""Prints, for each finding of a results file that judgements.toml does not judge yet, what a
judge needs to see: the commit's subject, the finding, and
  - size rules (file-lines, function-lines): the size before and after the change, so a judge
    sees whether the change crossed the limit or only touched something already long;
  - tests-untouched: the changed paths;
  - line rules: the diff lines around the finding (from the local clone, on the terminal
    only: nothing of it is stored).
It also prints a judgements.toml stub for each finding, to fill in. With --propose, the stub
of a size finding carries the verdict that the size rule at the top of judgements.toml gives
(check it: moved code, generated or vendored files are false whatever their size).

Usage: facts.py RESULTS [--clones /tmp/corpus] [--judgements judgements.toml] [--rule R]
"""
import argparse
import json
import re
import subprocess
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def git(clone, *args):
    p = subprocess.run(["git", "-C", str(clone), *args], capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else ""


def key(project, commit, rule, file, line):
    return (project, commit, rule, file, line or 0)


def judged(path):
    if not Path(path).exists():
        return {}
    data = tomllib.loads(Path(path).read_text())
    return {key(j["project"], j["commit"], j["rule"], j["file"], j.get("line", 0)): j
            for j in data.get("judgement", [])}


def hunks(clone, commit, path):
    """(old_start, old_len, new_start, new_len) of each -U0 hunk of PATH in COMMIT."""
    out = []
    diff = git(clone, "show", "--format=", "-U0", "-M", "--first-parent", commit, "--", path)
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", diff, re.M):
        os_, ol, ns, nl = m.groups()
        out.append((int(os_), int(ol or 1), int(ns), int(nl or 1)))
    return out


def old_path(clone, commit, path):
    for line in git(clone, "show", "--format=", "--name-status", "-M", commit).splitlines():
        parts = line.split("\t")
        if parts[0].startswith("R") and len(parts) == 3 and parts[2] == path:
            return parts[1]
        if parts[-1] == path:
            return None if parts[0] == "A" else path
    return path


def size_facts(clone, commit, f):
    path = f["file"]
    op = old_path(clone, commit, path)
    new_len = len(git(clone, "show", f"{commit}:{path}").splitlines())
    old_len = len(git(clone, "show", f"{commit}^:{op}").splitlines()) if op else 0
    if f["rule"] == "file-lines":
        return f"file: {old_len} -> {new_len} lines (old path {op})"
    m = re.search(r"(\d+) lines", f.get("reason", ""))
    if not m or not f.get("line"):
        return f"file: {old_len} -> {new_len} lines"
    start, n = f["line"], int(m.group(1))
    end = start + n - 1
    added = removed = 0
    for os_, ol, ns, nl in hunks(clone, commit, path):
        if nl == 0:  # a pure deletion sits after new line ns
            if start <= ns < end:
                removed += ol
        elif ns >= start and ns + nl - 1 <= end:
            added += nl
            removed += ol if ol else 0
    return (f"function: {n} lines now, about {n - added + removed} before "
            f"(+{added} -{removed} inside it); file {old_len} -> {new_len}")


def line_facts(clone, commit, f):
    path, line = f["file"], f.get("line")
    if not line:
        return ""
    text = git(clone, "show", f"{commit}:{path}").splitlines()
    lo, hi = max(1, line - 3), min(len(text), line + 3)
    added = set()
    for _, _, ns, nl in hunks(clone, commit, path):
        added.update(range(ns, ns + nl))
    return "\n".join(f"  {'+' if i in added else ' '}{i:5} {text[i - 1][:150]}"
                     for i in range(lo, hi + 1))


def propose(rule, text):
    """The verdict of the size rule of judgements.toml for a size finding, from its facts."""
    if rule == "file-lines":
        m = re.search(r"file: (\d+) -> (\d+) lines \(old path (\S+)\)", text)
        old, new, path = int(m.group(1)), int(m.group(2)), m.group(3)
        if path == "None":
            return "nit", f"a new file of {new} lines"
        if old > 500 and new - old < 100:
            return "false", f"the file was already {old} lines; the change made it {new}"
        return "nit", f"the change took the file from {old} to {new} lines"
    m = re.search(r"(\d+) lines now, about (-?\d+) before \(\+(\d+) -(\d+).*file (\d+) ->", text)
    if not m:
        return "", ""
    now, before, added, removed, old_file = map(int, m.groups())
    if old_file == 0 or (added == 0 and removed == 0):
        return "nit", f"a new function of {now} lines"
    if before > 50 and now - before < 20:
        return "false", f"the function was already about {before} lines; the change only touched it"
    return "nit", f"the change took the function from about {before} to {now} lines"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--clones", default="/tmp/corpus")
    ap.add_argument("--judgements", default=str(HERE / "judgements.toml"))
    ap.add_argument("--rule")
    ap.add_argument("--all", action="store_true", help="also judged findings")
    ap.add_argument("--propose", action="store_true", help="fill in size verdicts by the rule")
    a = ap.parse_args()
    done = judged(a.judgements)
    for line in open(a.results):
        r = json.loads(line)
        clone = Path(a.clones) / r["project"]
        for f in r.get("findings", []):
            k = key(r["project"], r["commit"], f["rule"], f["file"], f.get("line"))
            if (k in done and not a.all) or (a.rule and f["rule"] != a.rule):
                continue
            subject = git(clone, "log", "-1", "--format=%s", r["commit"]).strip()
            print(f"### {r['project']} {r['commit'][:10]} [{r['kind']}] {subject[:80]}")
            print(f"  {f['severity']} {f['rule']} {f['file']}:{f.get('line')} — {f.get('reason')}")
            verdict, why = "", ""
            if f["rule"] in ("file-lines", "function-lines"):
                text = size_facts(clone, r["commit"], f)
                print("  " + text)
                if a.propose:
                    verdict, why = propose(f["rule"], text)
            elif f["rule"] == "tests-untouched":
                names = git(clone, "show", "--format=", "--name-status", r["commit"]).split("\n")
                print("  changed: " + ", ".join(n.replace("\t", " ") for n in names if n)[:600])
            else:
                print(line_facts(clone, r["commit"], f))
            print(f'[[judgement]]\nproject = "{r["project"]}"\ncommit = "{r["commit"]}"\n'
                  f'rule = "{f["rule"]}"\nfile = "{f["file"]}"\nline = {f.get("line") or 0}\n'
                  f'verdict = "{verdict}"\nwhy = "{why}"\n')


if __name__ == "__main__":
    main()
