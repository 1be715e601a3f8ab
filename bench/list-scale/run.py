#!/usr/bin/env python3
"""`git tlv4 list` at scale: N sessions, `list` against `git for-each-ref` of the same refs.

Makes a throw-away repository (on /dev/shm when it exists) with N sessions started by the
real binary (`start --no-run`), then times, interleaved run by run:

  * `git tlv4 list` with its row cache in place (the usual case: every tip was seen before),
  * `git tlv4 list` with the cache deleted before each run (every session read at its tip),
  * `git for-each-ref refs/heads/tlv4/` (git walking the same refs),

each with loose refs and again after `git pack-refs --all`. Prints medians and the ratio of
`list` to `for-each-ref`. Hermetic git: no system or global config, fixed dates.

    cargo build --release --locked && bench/list-scale/run.py [--sessions 1000] [--runs 21]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def env(home):
    e = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_DATE": "2026-11-29T12:00:00Z",
        "GIT_COMMITTER_DATE": "2026-11-29T12:00:00Z",
        "LC_ALL": "C",
    }
    return e


def run(cmd, cwd, e, check=True):
    p = subprocess.run(cmd, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {p.stderr.decode()}")
    return p


def timed(cmd, cwd, e):
    t = time.perf_counter()
    run(cmd, cwd, e)
    return (time.perf_counter() - t) * 1000.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/git-tlv4"))
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tmp = tempfile.mkdtemp(prefix="tlv4-list-", dir=base)
    try:
        home = os.path.join(tmp, "home")
        repo = os.path.join(tmp, "repo")
        os.makedirs(home)
        os.makedirs(repo)
        e = env(home)
        for c in (["git", "init", "-q", "-b", "main"],
                  ["git", "config", "user.name", "Bench"],
                  ["git", "config", "user.email", "bench@example.com"]):
            run(c, repo, e)
        with open(os.path.join(repo, "README.md"), "w") as f:
            f.write("# bench\n")
        run(["git", "add", "-A"], repo, e)
        run(["git", "commit", "-q", "-m", "initial"], repo, e)
        t = time.perf_counter()
        for i in range(a.sessions):
            run([a.bin, "start", "--no-run", "--pipeline", "spec-only",
                 f"list bench session {i}"], repo, e)
        made = time.perf_counter() - t
        refs = run(["git", "for-each-ref", "refs/heads/tlv4/"], repo, e).stdout.count(b"\n")
        print(f"{a.sessions} sessions ({refs} refs under refs/heads/tlv4/) made in {made:.1f} s")
        cache = os.path.join(repo, ".git", "tlv4", "list-cache.json")
        listed = run([a.bin, "list", "--json"], repo, e).stdout.count(b'"id"')
        assert listed == a.sessions, f"list shows {listed} sessions"
        for layout in ("loose refs", "packed refs"):
            if layout == "packed refs":
                run(["git", "pack-refs", "--all"], repo, e)
            cached, uncached, git = [], [], []
            for _ in range(a.runs):
                cached.append(timed([a.bin, "list"], repo, e))
                os.remove(cache)
                uncached.append(timed([a.bin, "list"], repo, e))
                git.append(timed(["git", "for-each-ref", "refs/heads/tlv4/"], repo, e))
            m = {k: statistics.median(v) for k, v in
                 (("cached", cached), ("uncached", uncached), ("git", git))}
            print(f"{layout}: medians of {a.runs} interleaved runs")
            print(f"  git for-each-ref refs/heads/tlv4/   {m['git']:8.2f} ms")
            print(f"  git tlv4 list (cache in place)      {m['cached']:8.2f} ms"
                  f"   ratio {m['cached'] / m['git']:.2f}")
            print(f"  git tlv4 list (cache deleted)       {m['uncached']:8.2f} ms"
                  f"   ratio {m['uncached'] / m['git']:.2f}"
                  f"   ({m['uncached'] * 1000 / a.sessions:.0f} us/session)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
