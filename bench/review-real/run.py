#!/usr/bin/env python3
"""Runs `git-tlv4 review COMMIT --json` on every commit of corpus.toml and writes JSON Lines.

Each output line is the review's JSON, reduced to ids, paths, counts, rule ids and the
reviewer's own messages (no code lines), plus what the harness knows: project, kind, commit,
seconds (wall time of the run), exit (its exit status) and error (stderr, when no JSON came).

The clones are made beforehand (README.md): CLONES/<project> is a non-bare clone without a
checkout (`git clone --no-checkout`), because the reviewer does not open bare repositories.
Nothing is fetched here. The review runs with cwd = the clone, so the CLI finds the
repository the way a user's shell would; GIT_* variables of the caller are removed.

Works with today's binary (which also writes a note under refs/notes/tlv4-review in the
clone: harmless, nothing reads it) and with later ones that add fields: unknown numeric and
boolean fields are kept, unknown text is dropped (it could quote code).

Usage: run.py --bin PATH [--clones /tmp/corpus] [--corpus corpus.toml] [--out results.jsonl]
              [--kind ordinary|bad] [--project NAME] [--arg=--patience ...] [--timeout 300]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Text fields that are ids, paths, enums or the reviewer's own messages.
TOP_TEXT = {"label", "old", "new", "algorithm", "rules", "verdict", "summary"}
FILE_TEXT = {"path", "old_path", "status"}
FINDING_TEXT = {"rule", "severity", "confidence", "context", "dimension", "file", "reason"}
IDENT = re.compile(r"[\w .:/-]{1,40}")


def keep(obj, text_keys):
    """The fields of a JSON object that are safe to store: listed text fields (one line),
    any number, boolean or null, and nested objects of those with short identifier-like
    text (a future `context` or `confidence` may be an object)."""
    out = {}
    for k, v in obj.items():
        if isinstance(v, (bool, int, float)) or v is None:
            out[k] = v
        elif isinstance(v, str) and k in text_keys and "\n" not in v:
            out[k] = v
        elif isinstance(v, dict):
            out[k] = {n: w for n, w in v.items()
                      if isinstance(w, (bool, int, float)) or w is None
                      or (isinstance(w, str) and IDENT.fullmatch(w))}
    return out


def strip(review):
    """The review JSON without anything that could be another project's code."""
    out = keep(review, TOP_TEXT)
    for k in ("scores", "counts"):
        if isinstance(review.get(k), dict):
            out[k] = keep(review[k], set())
    out["files"] = [keep(f, FILE_TEXT) for f in review.get("files", []) if isinstance(f, dict)]
    out["findings"] = [
        keep(f, FINDING_TEXT) for f in review.get("findings", []) if isinstance(f, dict)
    ]
    return out


def review(binary, clone, commit, extra, timeout):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.setdefault("NO_COLOR", "1")
    cmd = [binary, "review", commit, "--json", *extra]
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, None, f"timed out after {timeout}s"
    seconds = time.perf_counter() - start
    try:
        return json.loads(p.stdout), seconds, p.returncode, None
    except json.JSONDecodeError:
        return None, seconds, p.returncode, (p.stderr.strip() or p.stdout.strip())[-500:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="the git-tlv4 binary")
    ap.add_argument("--clones", default="/tmp/corpus")
    ap.add_argument("--corpus", default=str(HERE / "corpus.toml"))
    ap.add_argument("--out", default="results.jsonl")
    ap.add_argument("--kind", choices=["ordinary", "bad"])
    ap.add_argument("--project")
    ap.add_argument("--arg", action="append", default=[],
                    help="an extra argument for review (repeat), e.g. --arg=--patience")
    ap.add_argument("--timeout", type=float, default=300)
    a = ap.parse_args()

    binary = str(Path(a.bin).resolve())
    commits = tomllib.loads(Path(a.corpus).read_text())["commit"]
    commits = [c for c in commits if (not a.kind or c["kind"] == a.kind)
               and (not a.project or c["project"] == a.project)]
    failed = 0
    with open(a.out, "w") as out:
        for i, c in enumerate(commits, 1):
            clone = Path(a.clones) / c["project"]
            if not clone.is_dir():
                sys.exit(f"no clone at {clone}: make the clones first (README.md)")
            raw, seconds, code, error = review(binary, clone, c["commit"], a.arg, a.timeout)
            line = strip(raw) if raw is not None else {}
            line.update(project=c["project"], kind=c["kind"], commit=c["commit"],
                        seconds=round(seconds, 4), exit=code)
            if error is not None:
                line["error"] = error
                failed += 1
            out.write(json.dumps(line, sort_keys=True) + "\n")
            out.flush()
            verdict = line.get("verdict", "ERROR")
            print(f"[{i}/{len(commits)}] {c['project']} {c['commit'][:10]} {c['kind']}: "
                  f"{verdict}, {len(line.get('findings', []))} findings, {seconds:.3f}s",
                  file=sys.stderr)
    print(f"{len(commits)} reviews, {failed} without JSON -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
