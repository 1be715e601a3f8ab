#!/usr/bin/env python3
"""Picks the ordinary commits of the corpus by a fixed rule (printed as TOML on stdout).

Rule, per project, in its local clone:
  1. `git rev-list --no-merges --since=SINCE --until=UNTIL --reverse HEAD`: every non-merge
     commit merged into the default branch in the window, oldest first;
  2. keep those whose author is not a bot (name or e-mail containing "[bot]", "dependabot",
     "renovate", "pre-commit-ci");
  3. keep those that change 5..600 lines in total (`--numstat`, text files) and at least one
     file with a code extension of the project's languages (not only docs, CI or lock files);
  4. take PER commits evenly spread: index round(i * (n - 1) / (PER - 1)) for i in 0..PER.
No commit is chosen or dropped by what the reviewer says about it.
Usage: pick.py [--clones /tmp/corpus] [--per 18] > ordinary.toml
"""
import argparse
import subprocess
import sys

# name -> (fetch source, code extensions)
PROJECTS = {
    "flask": ("github:pallets/flask", ("py",)),
    "requests": ("github:psf/requests", ("py",)),
    "ripgrep": ("github:BurntSushi/ripgrep", ("rs",)),
    "serde": ("github:serde-rs/serde", ("rs",)),
    "express": ("github:expressjs/express", ("js", "mjs", "cjs")),
    "hono": ("github:honojs/hono", ("ts", "tsx", "js")),
    "cobra": ("github:spf13/cobra", ("go",)),
    "gin": ("github:gin-gonic/gin", ("go",)),
}
SINCE = "2019-01-01"
UNTIL = "2026-06-30"
BOTS = ("[bot]", "dependabot", "renovate", "pre-commit-ci")


def git(clone, *args):
    return subprocess.run(
        ["git", "-C", clone, *args], check=True, capture_output=True, text=True
    ).stdout


def candidates(clone, exts):
    out = []
    revs = git(clone, "rev-list", "--no-merges", f"--since={SINCE}", f"--until={UNTIL}",
               "--reverse", "HEAD").split()
    for rev in revs:
        author = git(clone, "log", "-1", "--format=%an <%ae>", rev).lower()
        if any(b in author for b in BOTS):
            continue
        total, code = 0, False
        for line in git(clone, "show", "--format=", "--numstat", "--no-renames", rev).splitlines():
            parts = line.split("\t")
            if len(parts) != 3 or parts[0] == "-":
                continue
            total += int(parts[0]) + int(parts[1])
            if parts[2].rsplit(".", 1)[-1] in exts:
                code = True
        if code and 5 <= total <= 600:
            out.append(rev)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clones", default="/tmp/corpus")
    ap.add_argument("--per", type=int, default=18)
    a = ap.parse_args()
    for name, (source, exts) in PROJECTS.items():
        revs = candidates(f"{a.clones}/{name}", exts)
        n = len(revs)
        picks = sorted({round(i * (n - 1) / (a.per - 1)) for i in range(a.per)})
        print(f"# {name}: {n} eligible commits, {len(picks)} taken", file=sys.stderr)
        for i in picks:
            print(f'[[commit]]\nproject = "{name}"\nsource = "{source}"\n'
                  f'commit = "{revs[i]}"\nkind = "ordinary"\n')


if __name__ == "__main__":
    main()
