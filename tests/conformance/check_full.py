#!/usr/bin/env python3
"""Checks a `full-lifecycle` session run on one real CLI (tests/conformance/run.sh) with git.

Usage: check_full.py REPO SID CLI AGENT

Prints one line per role: `PASS|FAIL ROLE TASKS seconds tokens: reasons`, and exits 1 if any
role failed. What is checked, per role (MARK is what the scripted model writes into every
document, play.py):

  analyst   spec/discovery-context.json in the session tip is the agent's (MARK, the CLI)
  writer    each phase's documents are in the tip where the pipeline expects them, they are
            the agent's, and QUALITY-001 graded them: it has a verdict and its readiness
            report names the agent's requirement file
  planner   plan/plan.json and plan/.task/*.json are the agent's; the IMPL tasks are the
            plan's (one per plan task, Medium, each describing its plan task)
  executor  each IMPL task ran on the agent, its snapshot merged (a merge commit whose second
            parent is the task branch), the planned files are in the tip with the content the
            model gave the CLI's tool, and TEST-001 ran them (2 tests pass)
  critic    each discuss round lists `agent AGENT: rating 4` beside the rules'
  reviewer  the review report has `## Second review: agent AGENT` with the agent's finding,
            and REVIEW-001's run record is `quality+AGENT`
Every run of an agent role must have a run record naming AGENT (not the builtin).
"""

import json
import subprocess
import sys

MARK = "scripted-by-mock-model"
PLAN = {
    "TASK-001": ("Add the subtract function", "app/subtract.py", "def subtract(a, b):"),
    "TASK-002": ("Test the subtract function", "tests/test_subtract.py", "class SubtractTest"),
}
DOCS = {
    "analyst": ["spec/discovery-context.json"],
    "writer": [
        "spec/product-brief.md",
        "spec/requirements/_index.md",
        "spec/requirements/REQ-001-subtract-two-numbers.md",
        "spec/requirements/NFR-P-001-constant-time.md",
        "spec/architecture/_index.md",
        "spec/architecture/ADR-001-a-module-of-its-own.md",
        "spec/epics/_index.md",
        "spec/epics/EPIC-001-subtract.md",
    ],
    "planner": ["plan/plan.json", "plan/.task/TASK-001.json", "plan/.task/TASK-002.json"],
}


def git(repo, *args, check=True):
    p = subprocess.run(["git", "-C", repo] + list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), p.stderr.strip()))
    return p.stdout if p.returncode == 0 else None


def tlv4(repo, *args):
    p = subprocess.run(["git", "tlv4"] + list(args), cwd=repo, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("git tlv4 %s: %s" % (" ".join(args), p.stderr.strip()))
    return p.stdout


def main():
    repo, sid, cli, agent = sys.argv[1:5]
    tip = "tlv4/%s" % sid
    folder = ".tlv4/sessions/%s/" % sid
    status = json.loads(tlv4(repo, "--session", sid, "status", "--json"))
    tasks = {t["id"]: t for t in status["tasks"]}
    control = status["control"]
    verdicts = control.get("verdicts") or {}
    tree = set((git(repo, "ls-tree", "-r", "--name-only", tip) or "").split("\n"))

    def show(path):
        return git(repo, "show", "%s:%s" % (tip, path), check=False)

    def doc(path):
        return show(folder + path)

    # The run records: runs/<TASK>/<n>/usage.json (the last attempt) and the critics'.
    usage = {}
    critics = []
    for f in sorted(tree):
        if not f.startswith(folder + "runs/") or not f.endswith("/usage.json"):
            continue
        parts = f[len(folder) + 5:].split("/")
        u = json.loads(show(f) or "{}")
        if len(parts) == 4 and parts[2].startswith("critic-"):
            critics.append(u)
        elif len(parts) == 3:
            prev = usage.get(parts[0])
            if prev is None or u.get("attempt", 0) >= prev.get("attempt", 0):
                usage[parts[0]] = u

    rows = []
    failed = False

    def report(role, ids, problems, records):
        nonlocal failed
        secs = sum(r.get("seconds") or 0 for r in records)
        tin = sum(r.get("input_tokens") or 0 for r in records)
        tout = sum(r.get("output_tokens") or 0 for r in records)
        tokens = "%d in / %d out" % (tin, tout) if tin or tout else "no tokens reported"
        verdict = "FAIL" if problems else "PASS"
        failed = failed or bool(problems)
        rows.append("%s  %-9s %-40s %6.1fs  %s%s" % (
            verdict, role, ",".join(ids) + " (%d runs)" % len(records), secs, tokens,
            (": " + "; ".join(problems)) if problems else ""))

    def role_tasks(role):
        return sorted(i for i, t in tasks.items() if t["role"] == role)

    def records_of(ids, who):
        problems, records = [], []
        for i in ids:
            u = usage.get(i)
            if u is None:
                problems.append("%s has no run record" % i)
            elif u.get("agent") != who:
                problems.append("%s ran on `%s`, not `%s`" % (i, u.get("agent"), who))
            else:
                records.append(u)
            if tasks[i]["status"] != "completed":
                problems.append("%s is %s" % (i, tasks[i]["status"]))
        return problems, records

    def docs_of(role):
        problems = []
        for p in DOCS[role]:
            text = doc(p)
            if text is None:
                problems.append("%s is not in the session tip" % p)
            elif MARK not in text or cli not in text:
                problems.append("%s is not the agent's (no mark of the scripted %s)" % (p, cli))
        return problems

    # analyst, writer, planner: documents.
    for role in ("analyst", "writer", "planner"):
        ids = role_tasks(role)
        problems, records = records_of(ids, agent)
        if not ids:
            problems.append("no %s task" % role)
        problems += docs_of(role)
        if role == "writer":
            q = verdicts.get("QUALITY-001")
            readiness = doc("spec/readiness-report.md") or ""
            if not q:
                problems.append("QUALITY-001 gave no verdict")
            elif "# Readiness Report: Subtract function" not in readiness or any(
                    "| `spec/%s/_index.md` | %d |" % (d, n) not in readiness
                    for d, n in (("requirements", 3), ("architecture", 2), ("epics", 2))):
                # The brief's title and the number of files of each document are the
                # scripted writer's.
                problems.append("the readiness report does not grade the agent's documents")
            else:
                problems_note = "gate %s %.1f" % (q["verdict"], q["score"])
                ids = ids + [problems_note]
        if role == "planner":
            impl = control.get("implementation") or {}
            made = impl.get("tasks") or []
            if impl.get("complexity") != "Medium" or len(made) != len(PLAN):
                problems.append("the IMPL tasks are not the plan's: %s" % json.dumps(impl))
            for i, (plan_task, (title, path, _)) in zip(made, sorted(PLAN.items())):
                d = tasks.get(i, {}).get("description", "")
                if "%s: %s (files: %s)" % (plan_task, title, path) not in d:
                    problems.append("%s does not carry plan task %s" % (i, plan_task))
        report(role, [i for i in ids if i], problems, records)

    # executor: code written by the CLI, merged.
    ids = role_tasks("executor")
    problems, records = records_of(ids, agent)
    for i in ids:
        snap = git(repo, "rev-parse", "--verify", "-q", "%s.%s" % (tip, i), check=False)
        if not snap:
            problems.append("no task branch of %s" % i)
            continue
        snap = snap.strip()
        merge = git(repo, "log", "--format=%H", "--grep", "Tlv4-Merged: " + snap, tip).split()
        if not merge:
            problems.append("%s's snapshot was not merged" % i)
        elif git(repo, "rev-parse", merge[0] + "^2").strip() != snap:
            problems.append("%s's merge has another second parent" % i)
    for _, (title, path, needle) in sorted(PLAN.items()):
        text = show(path)
        if text is None or needle not in text:
            problems.append("%s is not in the tip as the CLI's tool wrote it" % path)
    test = verdicts.get("TEST-001") or {}
    if test.get("verdict") != "pass" or "2 passed" not in test.get("summary", ""):
        problems.append("TEST-001 did not pass the 2 tests: %s" % test.get("summary"))
    report("executor", ids, problems, records)

    # critic: every discuss round has the agent's critique beside the rules'.
    problems = []
    rounds = sorted(f for f in tree if f.startswith(folder + "discussions/") and f.endswith("-discussion.md"))
    if not rounds:
        problems.append("no discuss round ran")
    for f in rounds:
        text = show(f) or ""
        if "agent %s: rating 4" % agent not in text:
            problems.append("%s has no critique of agent %s" % (f[len(folder):], agent))
    for u in critics:
        if u.get("agent") != agent:
            problems.append("a critic ran on `%s`" % u.get("agent"))
    report("critic", ["%d rounds" % len(rounds)], problems, critics)

    # reviewer: the agent's opinion beside the rules'.
    problems = []
    review = doc("artifacts/review-report.md") or ""
    if "## Second review: agent %s" % agent not in review:
        problems.append("the review report has no second review of agent %s" % agent)
    elif MARK not in review:
        problems.append("the second review does not carry the agent's finding")
    u = usage.get("REVIEW-001")
    records = []
    if not u or u.get("agent") != "quality+" + agent:
        problems.append("REVIEW-001's run record is `%s`" % (u or {}).get("agent"))
    else:
        records.append(u)
    if "REVIEW-001" in verdicts:
        note = "review %s" % verdicts["REVIEW-001"]["verdict"]
    else:
        note = "no verdict"
        problems.append("REVIEW-001 gave no verdict")
    report("reviewer", ["REVIEW-001", note], problems, records)

    if status["session"]["status"] != "completed":
        rows.append("FAIL  session   %s" % status["session"]["status"])
        failed = True
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
