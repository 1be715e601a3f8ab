#!/usr/bin/env python3
"""The report of a real-model run (tests/realmodel/run.sh), read from git.

Usage: report.py SESSIONS_TSV [SERVER_LOG]

SESSIONS_TSV and the pauses.tsv beside it are written by run.sh.

SESSIONS_TSV has one line per session: pipeline, repository, session id, seconds. For each
session it prints every run of an agent on the model (the tasks', the critics', the
reviewer opinion's): outcome, answers, tokens, the seconds of each HTTP call as git-tlv4
measured it and as llama-server reports it (`timings` of the response), and git-tlv4's
overhead (the run's seconds minus the server's). Then the totals per role.

It fails (exit 1) when a design rule does not hold:
  - a task that failed on the model has no run record, or its record keeps no answer (the
    raw output of the last answer), or its failure is not the contract's or the server's;
  - a task that failed did not pause the session (its pause names the task);
  - a completed task handed over a document that is not in the model's answer (something
    recorded that the model did not produce);
  - `git fsck --strict` finds a problem, or the user's checkout changed.
"""

import json
import os
import re
import subprocess
import sys
from collections import defaultdict


def git(repo, *args):
    p = subprocess.run(["git", "-C", repo] + list(args), capture_output=True, text=True)
    return p.stdout if p.returncode == 0 else None


def calls(transcript):
    """(seconds by git-tlv4, server ms or None, prompt tokens, predicted tokens, status) per
    HTTP request of a transcript."""
    out = []
    # The header names the output bound since the driver sends one: `POST URL (max_tokens N)`.
    parts = re.split(r"^=== answer \d+ \(request \d+\): POST \S+(?: \([^)\n]*\))? ===\n",
                     transcript, flags=re.M)
    for part in parts[1:]:
        m = re.match(r"(.*?), ([\d.]+)s\n--- response ---\n(.*)", part, re.S)
        if not m:
            continue
        status, took, body = m.group(1), float(m.group(2)), m.group(3)
        body = body.split("\n=== ", 1)[0].split("\n--- ", 1)[0].strip()
        server = pt = pn = None
        # A plain answer is one JSON body; a streamed one is SSE `data:` lines, the last
        # chunks of which carry llama-server's `timings`.
        objs = []
        if body.startswith("data:"):
            for line in body.splitlines():
                data = line[5:].strip() if line.startswith("data:") else ""
                if data and data != "[DONE]":
                    try:
                        objs.append(json.loads(data))
                    except ValueError:
                        pass
        else:
            try:
                objs.append(json.loads(body))
            except ValueError:
                pass
        for obj in objs:
            t = obj.get("timings") if isinstance(obj, dict) else None
            if t:
                server = (t.get("prompt_ms") or 0) + (t.get("predicted_ms") or 0)
                pt, pn = t.get("prompt_n"), t.get("predicted_n")
        out.append((took, server, pt, pn, status))
    return out


def main():
    sessions = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
    # The pauses run.sh met, one a line: pipeline, kind, reason.
    pause_file = os.path.join(os.path.dirname(sys.argv[1]), "pauses.tsv")
    pause_lines = open(pause_file).readlines() if os.path.exists(pause_file) else []
    problems = []
    totals = defaultdict(lambda: defaultdict(float))
    all_calls = []
    print("real model summary:")
    for pipeline, repo, sid, seconds in sessions:
        tip = "tlv4/%s" % sid
        folder = ".tlv4/sessions/%s/" % sid
        status = json.loads(subprocess.run(
            ["git", "tlv4", "--session", sid, "status", "--json"], cwd=repo,
            capture_output=True, text=True).stdout or "{}")
        tasks = {t["id"]: t for t in status.get("tasks", [])}
        print("  %s: session %s %s after %ss (%d tasks)" % (
            pipeline, sid, status.get("session", {}).get("status"), seconds, len(tasks)))
        tree = (git(repo, "ls-tree", "-r", "--name-only", tip) or "").split("\n")
        runs = sorted({f[:f.rindex("/")] for f in tree
                       if f.startswith(folder + "runs/") and f.endswith("/usage.json")})
        pauses = [line.rstrip("\n").split("\t") for line in pause_lines
                  if line.startswith(pipeline + "\t")]
        for run in runs:
            def show(name):
                return git(repo, "show", "%s:%s/%s" % (tip, run, name))
            usage = json.loads(show("usage.json") or "{}")
            agent = usage.get("agent", "")
            if agent not in ("local", "quality+local"):
                continue
            rel = run[len(folder) + 5:]
            task_id = rel.split("/")[0]
            result = json.loads(show("result.json") or "{}")
            transcript = show("transcript.txt") or ""
            answer = show("answer.txt")
            answers = len(set(re.findall(r"^=== answer (\d+) ", transcript, re.M)))
            cs = calls(transcript)
            all_calls += cs
            role = usage.get("role") or "?"
            # `completed`, or `failed: <reason>` (the reason is printed at the end of the line).
            outcome = (result.get("outcome") or "?").split(":", 1)[0]
            if "/critic-" in rel:
                # A critic's run keeps its usage only; whether its critique counted is in
                # the discussion (`agent local: rating R, …` or `agent local: no critique`).
                outcome = "see round"
            why = ""
            task = tasks.get(task_id, {})
            if "/critic-" not in rel and usage.get("agent") == "local":
                if outcome == "failed" or task.get("status") == "failed":
                    why = (result.get("outcome") or "").split(":", 1)[-1]
                    if answer is None:
                        problems.append("%s %s: failed with no answer kept" % (pipeline, rel))
                    if not any(task_id in p[2] for p in pauses):
                        problems.append("%s %s: failed without a pause naming it" % (pipeline, rel))
                elif outcome == "completed":
                    for path, blob in (result.get("files") or {}).items():
                        content = git(repo, "cat-file", "-p", blob) or ""
                        if answer is None or (content.strip() not in answer
                                              and json.dumps(content.strip())[1:-1] not in answer):
                            problems.append("%s %s: %s is not in the model's answer" % (pipeline, rel, path))
            tin, tout = usage.get("input_tokens") or 0, usage.get("output_tokens") or 0
            secs = usage.get("seconds") or 0
            server = sum(c[1] or 0 for c in cs) / 1000.0
            http = sum(c[0] for c in cs)
            t = totals[role]
            t["runs"] += 1
            t["ok"] += 1 if outcome == "completed" else 0
            t["in"] += tin
            t["out"] += tout
            t["seconds"] += secs
            t["calls"] += len(cs)
            t["server"] += server
            print("    %-32s %-9s %-18s %d answer(s), %d call(s), %5d in / %4d out tokens, "
                  "%6.1fs (HTTP %.1fs, server %.1fs, git-tlv4 overhead %.2fs)%s" % (
                      rel, role, outcome, answers, len(cs), tin, tout, secs, http, server,
                      max(0.0, secs - server), (": " + " ".join(why.split())[:160]) if why else ""))
        for f in tree:
            if f.startswith(folder + "discussions/") and f.endswith("-discussion.md"):
                text = git(repo, "show", "%s:%s" % (tip, f)) or ""
                got = len(re.findall(r"agent local: rating", text))
                missed = re.findall(r"agent local: no critique \((.{0,140})", text)
                t = totals["critic"]
                t["ok"] += got
                print("    %s: %d critique(s) of the model counted, %d not%s" % (
                    f[len(folder):], got, len(missed),
                    (" (first: %s…)" % missed[0]) if missed else ""))
        for p in pauses:
            print("    paused (%s): %s" % (p[1], p[2][:240]))
        fsck = subprocess.run(["git", "-C", repo, "fsck", "--strict", "--no-progress"],
                              capture_output=True, text=True)
        if fsck.returncode != 0 or "error" in fsck.stderr.lower():
            problems.append("%s: git fsck --strict: %s" % (pipeline, fsck.stderr.strip()))
        dirty = git(repo, "status", "--porcelain", "--untracked-files=all")
        if dirty:
            problems.append("%s: the checkout changed: %s" % (pipeline, " ".join(dirty.split())))
    print("  per role (runs on the model; passed = a completed task, or a critique that counted):")
    for role, t in sorted(totals.items()):
        print("    %-9s %d/%d passed, %d calls, %d in / %d out tokens, %.1fs (server %.1fs; "
              "%.1fs per call)" % (role, t["ok"], t["runs"], t["calls"], t["in"], t["out"],
                                   t["seconds"], t["server"],
                                   t["seconds"] / t["calls"] if t["calls"] else 0))
    timed = [c for c in all_calls if c[1] is not None]
    if timed:
        over = [c[0] - c[1] / 1000.0 for c in timed]
        print("  HTTP calls: %d; git-tlv4's time per call minus the server's: mean %.3fs, max %.3fs "
              "(transcript seconds have one decimal); predicted tokens per call: max %s" % (
                  len(timed), sum(over) / len(over), max(over),
                  max((c[3] or 0) for c in timed)))
    if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
        # llama-server's own log: one `prompt eval time = X ms / N tokens` and one
        # `eval time = Y ms / M tokens` per request it served.
        log = open(sys.argv[2], errors="replace").read()
        pe = [float(x) for x in re.findall(r"prompt eval time =\s*([\d.]+) ms", log)]
        ev = [float(x) for x in re.findall(r"(?<!prompt )eval time =\s*([\d.]+) ms", log)]
        spent = sum(t["seconds"] for t in totals.values())
        served = (sum(pe) + sum(ev)) / 1000.0
        print("  llama-server's log: %d requests, %.1fs of prompt evaluation and generation; the "
              "model's runs took %.1fs in git-tlv4 (%.1fs more, %.2fs per request)" % (
                  len(pe), served, spent, spent - served,
                  (spent - served) / len(pe) if pe else 0))
    for p in problems:
        print("  PROBLEM: %s" % p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
