#!/usr/bin/env python3
"""Speed of two builds of `git tlv4 review` side by side, against git, on one real range.

Usage: speed-ab.py OLD_BIN NEW_BIN [RUNS=25] [CLONE=/tmp/corpus/ripgrep] [A=13.0.0] [B=14.0.0]

Every command runs once per round, in turn (after 2 warm-up rounds), so load that comes and
goes on a shared machine falls on all of them alike; the figures are medians of wall time and
of the child's user+system CPU time. Printed: each command, then for each build the ratios the
reviewer issue names (review against `git diff --stat --patience`, like against like, and
against Myers) and its start-up cost over `git rev-parse HEAD`.
"""
import os, resource, statistics, subprocess, sys, time

old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 25
clone = sys.argv[4] if len(sys.argv) > 4 else "/tmp/corpus/ripgrep"
a = sys.argv[5] if len(sys.argv) > 5 else "13.0.0"
b = sys.argv[6] if len(sys.argv) > 6 else "14.0.0"
os.chdir(clone)
env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
R = ["review", f"{a}..{b}", "--json"]
cmds = {
    "git diff --stat --patience": ["git", "diff", "--stat", "--patience", a, b],
    "git diff --stat (myers)": ["git", "diff", "--stat", a, b],
    "old review (myers)": [old] + R,
    "new review (myers)": [new] + R,
    "old review --patience": [old] + R + ["--patience"],
    "new review --patience": [new] + R + ["--patience"],
    "git rev-parse HEAD": ["git", "rev-parse", "HEAD"],
    "old review HEAD..HEAD": [old, "review", "HEAD..HEAD", "--json"],
    "new review HEAD..HEAD": [new, "review", "HEAD..HEAD", "--json"],
}
wall = {k: [] for k in cmds}
cpu = {k: [] for k in cmds}
for r in range(runs + 2):
    for k, c in cmds.items():
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        w = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r >= 2:
            wall[k].append(w * 1000)
            cpu[k].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
m = {k: statistics.median(v) for k, v in wall.items()}
print(f"range {a}..{b} in {clone}, {runs} rounds")
for k in cmds:
    print(f"{k:28} wall {m[k]:6.1f} ms (min {min(wall[k]):5.1f})  cpu {statistics.median(cpu[k]):6.1f} ms")
gp, gm = m["git diff --stat --patience"], m["git diff --stat (myers)"]
for w in ("old", "new"):
    print(
        f"{w}: review / git --patience {m[w + ' review (myers)'] / gp:.2f}x, "
        f"review --patience / git --patience {m[w + ' review --patience'] / gp:.2f}x, "
        f"review / git (myers) {m[w + ' review (myers)'] / gm:.2f}x, "
        f"start-up over rev-parse {m[w + ' review HEAD..HEAD'] - m['git rev-parse HEAD']:.1f} ms"
    )
