#!/usr/bin/env python3
"""The tester on real projects: `git tlv4`'s TEST iterations against the same work done by hand.

For each project of projects.toml, from fresh clones of a `fetch` snapshot pinned at one
commit:

  cold   the tool's first TEST iteration in a fresh clone (`git tlv4 trust`, then a session of
         the one-task `tests` pipeline: a new test checkout, the detected setup, the suite)
         against the project's setup and test run by hand in another fresh clone
         (`npm ci && npm test`, `uv sync --frozen && .venv/bin/python -m pytest`, `cargo test`);
  warm   a later iteration: one comment line added to a source file, then a new session of
         the `tests` pipeline on that commit (the kept test checkout, setup cached) against
         the same change and the project's test command again in an installed tree.

Runs go in turn, tool then by hand (A B A B …), and the ratio tool / by hand is taken pair
by pair. Every tool run's counts are then checked against what the project's own runner
printed by hand.

    python3 bench/env-real/run.py [--only koa,click] [--runs N] [--timer 'CMD'] \\
        [--work DIR] [--mirrors DIR] [--out FILE]

`git-tlv4` must be on PATH (git finds `git tlv4` through it), and npm, uv and cargo too.
Without --timer the pairs are timed here (wall clock around each process). --timer names an
outside whole-process timer instead, called as `CMD -n N --warmup 0 --timeout S --vs 'B'
-- A` and read from its `A wall s`, `B wall s` and `A/B wall` rows (min, median, max).

    python3 bench/env-real/run.py step --work DIR PROJECT SIDE PHASE

is one measured run (SIDE tool or hand, PHASE cold or warm): what the timer times.
"""

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
PIPELINE = HERE / "pipelines.toml"
REQUEST = "run the tests"
START = ["git", "tlv4", "start", "--pipeline", "tests", "--yes", "--completion", "keep", REQUEST]


def projects():
    with open(HERE / "projects.toml", "rb") as f:
        return {p["name"]: p for p in tomllib.load(f)["project"]}


def sh(cmd, cwd, log=None, timeout=None, env=None):
    """Runs `cmd` with `sh -c` in `cwd`, its output appended to `log`; returns (exit, seconds)."""
    t0 = time.monotonic()
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        p = subprocess.Popen(
            ["sh", "-c", cmd], cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 15)
            try:
                code = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                code = p.wait()
            code = f"stopped after {timeout} s"
    finally:
        if log:
            out.close()
    return code, time.monotonic() - t0


def git(*args, cwd=None):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


# ---------------------------------------------------------------------------------------
# Clones


def mirror(p, mirrors):
    owner, name = p["source"].removeprefix("github:").split("/")
    return Path(mirrors) / f"{owner}+{name}" / "repo"


def clone(p, mirrors, dest, gitdirs):
    """A fresh clone of the project at its commit, made ready for the tool: the `tests`
    pipeline as an untracked, excluded `.tlv4/specs/pipelines.toml` (the project's tree is
    not changed)."""
    src = mirror(p, mirrors)
    if not src.is_dir():
        sys.exit(f"no snapshot at {src}: fetch {p['source']} first")
    shutil.rmtree(dest, ignore_errors=True)
    args = ["clone", "-q"]
    if p.get("git_dir") == "outside":
        gd = Path(gitdirs) / dest.name
        shutil.rmtree(gd, ignore_errors=True)
        args += ["--separate-git-dir", str(gd)]
    git(*args, str(src), str(dest))
    git("reset", "-q", "--hard", p["commit"], cwd=dest)
    (dest / ".tlv4/specs").mkdir(parents=True)
    shutil.copy(PIPELINE, dest / ".tlv4/specs/pipelines.toml")
    gitdir = Path(git("rev-parse", "--absolute-git-dir", cwd=dest).strip())
    with open(gitdir / "info/exclude", "a") as f:
        f.write("/.tlv4/\n")


def claim(root, side):
    """The next unused fresh clone of `side` under `root` (cold runs use each one once)."""
    (root / "claimed").mkdir(exist_ok=True)
    # Only the clones: the tool keeps its checkouts beside each, in `<clone>.tlv4/`.
    clones = [d for d in root.glob(f"cold-{side}-*") if d.name.rsplit("-", 1)[1].isdigit()]
    for d in sorted(clones, key=lambda d: int(d.name.rsplit("-", 1)[1])):
        try:
            (root / "claimed" / d.name).mkdir()
            return d
        except FileExistsError:
            continue
    sys.exit(f"no fresh clone left under {root} for {side}")


def change(p, tree, n):
    """One comment line added to the project's change file: a small code change."""
    with open(tree / p["change"], "a") as f:
        f.write(f"\n{p['comment']} bench: iteration {n} at {time.time_ns()}\n")


# ---------------------------------------------------------------------------------------
# One measured run


def step(work, name, side, phase, timeout=None):
    p = projects()[name]
    root = Path(work) / name
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    tree = claim(root, side) if phase == "cold" else root / f"warm-{side}"
    k = len(list(logs.glob(f"{side}-{phase}-*.log"))) + 1
    log = logs / f"{side}-{phase}-{k}.log"
    rec = {"side": side, "phase": phase, "tree": str(tree), "log": str(log), "stages": {}}
    t0 = time.monotonic()
    if side == "hand":
        if phase == "warm":
            change(p, tree, k)
        elif p["setup"]:
            code, s = sh(p["setup"], tree, log)
            rec["stages"]["setup"] = round(s, 3)
            if code != 0:
                rec["exit"] = code
        if "exit" not in rec:
            code, s = sh(p["test"], tree, log)
            rec["stages"]["test"] = round(s, 3)
            rec["exit"] = code
    else:
        if phase == "warm":
            change(p, tree, k)
            subprocess.run(["git", "commit", "-qam", f"bench: iteration {k}"], cwd=tree, check=True)
        else:
            code, s = sh("git tlv4 trust", tree, log)
            rec["stages"]["trust"] = round(s, 3)
        rec.update(tool_run(tree, log, timeout))
    rec["wall"] = round(time.monotonic() - t0, 3)
    with open(root / "steps.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")


def tool_run(tree, log, timeout):
    """`git tlv4 start` of the tests pipeline, its progress lines time-stamped as they come:
    the session's start (until the task starts), the task, and what follows it. After
    `timeout` seconds it is stopped with SIGTERM, which the tool handles (its test command
    is stopped too)."""
    t0 = time.monotonic()
    marks = {}
    stopped = threading.Event()
    with open(log, "ab") as out:
        p = subprocess.Popen(
            START, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )

        def stop():
            stopped.set()
            os.killpg(p.pid, 15)

        watchdog = threading.Timer(timeout, stop) if timeout else None
        if watchdog:
            watchdog.start()
        sid = None
        for line in p.stdout:
            now = time.monotonic() - t0
            out.write(line)
            text = line.decode(errors="replace").strip()
            if re.fullmatch(r"TLV4-[A-Za-z0-9-]+", text):
                sid = text
            if " started (" in text:
                marks.setdefault("task_started", now)
            if re.match(r"\S+ completed in [\d.]+s", text):
                marks["task_done"] = now
        code = p.wait()
        if watchdog:
            watchdog.cancel()
    end = time.monotonic() - t0
    rec = {"exit": f"stopped after {timeout} s" if stopped.is_set() else code, "session": sid}
    if "task_started" in marks:
        rec["stages"] = {
            "session start": round(marks["task_started"], 3),
            "tasks": round(marks.get("task_done", end) - marks["task_started"], 3),
            "after the tasks": round(end - marks.get("task_done", end), 3),
        }
    return rec


# ---------------------------------------------------------------------------------------
# Counting


def hand_counts(kind, text):
    """What the project's own runner printed: passed, failed, skipped (skips, todos, pending,
    xfails: what a JUnit report calls skipped)."""
    c = {"passed": 0, "failed": 0, "skipped": 0}

    def last(pattern):
        found = re.findall(pattern, text, re.M)
        return int(found[-1]) if found else 0

    if kind == "node-test":
        c["passed"] = last(r"^# pass (\d+)")
        c["failed"] = last(r"^# fail (\d+)") + last(r"^# cancelled (\d+)")
        c["skipped"] = last(r"^# skipped (\d+)") + last(r"^# todo (\d+)")
    elif kind == "mocha":
        c["passed"] = last(r"^\s*(\d+) passing")
        c["failed"] = last(r"^\s*(\d+) failing")
        c["skipped"] = last(r"^\s*(\d+) pending")
    elif kind == "pytest":
        lines = [l for l in text.splitlines() if re.search(r"\d+ (passed|failed|error)", l)]
        if lines:
            for n, what in re.findall(r"(\d+) (\w+)", lines[-1]):
                if what == "passed" or what == "xpassed":
                    c["passed"] += int(n)
                elif what in ("failed", "errors", "error"):
                    c["failed"] += int(n)
                elif what in ("skipped", "xfailed"):
                    c["skipped"] += int(n)
    elif kind == "cargo":
        for p_, f_, i_ in re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", text):
            c["passed"] += int(p_)
            c["failed"] += int(f_)
            c["skipped"] += int(i_)
    return c


def tool_result(tree, sid):
    """The counts and decisions of a session's last test iteration, from its artifacts."""
    folder = f".tlv4/sessions/{sid}/artifacts"
    ref = f"refs/heads/tlv4/{sid}"
    names = git("ls-tree", "--name-only", f"{ref}:{folder}/test-runs", cwd=tree).split()
    last = max((n for n in names if n.endswith(".json")), key=lambda n: int(n.split(".")[0]))
    run = json.loads(git("show", f"{ref}:{folder}/test-runs/{last}", cwd=tree))
    report = git("show", f"{ref}:{folder}/test-report.md", cwd=tree)
    full = [r for r in run["runs"] if r["scope"] == "full"] or run["runs"]
    shown = ("- checkout:", "- environment", "- runner:", "- cargo")
    decisions = [l[2:] for l in report.splitlines() if l.startswith(shown)]
    env_s = sum(float(x) for x in re.findall(r"ran, ([\d.]+) s", "\n".join(decisions)))
    return {
        "iterations": int(last.split(".")[0]),
        "verdict": run["verdict"],
        "framework": run["framework"],
        "command": full[-1]["command"],
        "passed": full[-1]["passed"],
        "failed": full[-1]["failed"],
        "skipped": full[-1]["skipped"],
        "test seconds": full[-1]["seconds"],
        "setup seconds": env_s,
        "decisions": decisions,
    }


# ---------------------------------------------------------------------------------------
# Timing


def timed_pairs(work, name, phase, runs, timer, timeout):
    me = [sys.executable, str(Path(__file__).resolve()), "step", "--work", str(work), name]
    a = me + ["tool", phase]
    b = me + ["hand", phase]
    if timer:
        cmd = shlex.split(timer) + [
            "-n", str(runs), "--warmup", "0", "--timeout", str(timeout),
            "--vs", shlex.join(b), "--", *a,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True).stdout
        rows = {}
        for label, key in (("A wall s", "tool"), ("B wall s", "hand"), ("A/B wall", "ratio")):
            m = re.search(rf"^{re.escape(label)}\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
            if m:
                rows[key] = [float(x) for x in m.groups()]
        exits = re.findall(r"^([AB]) exit (.*)$", out, re.M)
        return {"timer": "outside", "rows": rows, "exits": exits, "raw": [
            l for l in out.splitlines() if re.match(r"^(A|B|A/B) (wall|cpu|user|sys|peak)", l)]}
    tool, hand, ratio = [], [], []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run(a, stdin=subprocess.DEVNULL)
        t1 = time.monotonic()
        subprocess.run(b, stdin=subprocess.DEVNULL)
        t2 = time.monotonic()
        tool.append(t1 - t0)
        hand.append(t2 - t1)
        ratio.append((t1 - t0) / (t2 - t1))
    trio = lambda xs: [round(min(xs), 3), round(statistics.median(xs), 3), round(max(xs), 3)]
    return {"timer": "run.py", "rows": {"tool": trio(tool), "hand": trio(hand), "ratio": trio(ratio)}}


# ---------------------------------------------------------------------------------------
# The whole bench


def bench_project(p, args):
    name = p["name"]
    root = Path(args.work) / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    gitdirs = Path(args.work) / "gitdirs" / name
    gitdirs.mkdir(parents=True, exist_ok=True)
    runs = args.runs or p["runs"]
    timing = p["mode"] == "time"
    t0 = time.monotonic()
    print(f"[{name}] preparing", file=sys.stderr, flush=True)
    n_cold = runs
    for side in ("hand", "tool"):
        for i in range(1, n_cold + 1):
            clone(p, args.mirrors, root / f"cold-{side}-{i}", gitdirs)
    prep = {}
    if timing:
        # The warm trees: set up and tested once (this also fills npm's, uv's and cargo's
        # shared caches, so that every cold run below starts from the same caches).
        for side in ("hand", "tool"):
            clone(p, args.mirrors, root / f"warm-{side}", gitdirs)
        logs = root / "logs"
        logs.mkdir()
        w = root / "warm-hand"
        if p["setup"]:
            prep["hand setup"] = round(sh(p["setup"], w, logs / "prep-hand.log")[1], 1)
        prep["hand test"] = round(sh(p["test"], w, logs / "prep-hand.log")[1], 1)
        sh("git tlv4 trust", root / "warm-tool", logs / "prep-tool.log")
        s = time.monotonic()
        first = tool_run(root / "warm-tool", logs / "prep-tool.log", None)
        prep["tool iteration 1"] = round(time.monotonic() - s, 1)
        prep["tool iteration 1 exit"] = first["exit"]
    result = {"name": name, "prep": prep, "phases": {}}
    if timing:
        for phase in ("cold", "warm"):
            n = runs if phase == "cold" else (args.runs or p.get("warm_runs", runs))
            print(f"[{name}] {phase}: {n} pairs", file=sys.stderr, flush=True)
            result["phases"][phase] = timed_pairs(args.work, name, phase, n, args.timer, args.timeout)
    else:
        print(f"[{name}] verdict check: {runs} runs of each side", file=sys.stderr, flush=True)
        for _ in range(runs):
            step(args.work, name, "hand", "cold")
            step(args.work, name, "tool", "cold", timeout=p.get("tool_timeout"))
    result["runs"] = check(p, root)
    result["seconds"] = round(time.monotonic() - t0, 1)
    # The cold clones are used up: only their records and logs stay.
    for d in [*root.glob("cold-*"), root / "claimed"]:
        shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(gitdirs, ignore_errors=True)
    return result


def check(p, root):
    """Every run's record, with the tool's counts against the by-hand ones."""
    recs = [json.loads(l) for l in open(root / "steps.jsonl")]
    hand = [r for r in recs if r["side"] == "hand"]
    truth = None
    for r in hand:
        r["counts"] = hand_counts(p["counts"], Path(r["log"]).read_text(errors="replace"))
        truth = truth or r["counts"]
    for r in recs:
        if r["side"] != "tool":
            continue
        if not r.get("session"):
            r["result"] = None
            r["match"] = False
            continue
        try:
            r["result"] = tool_result(Path(r["tree"]), r["session"])
        except (subprocess.CalledProcessError, ValueError):
            r["result"] = {"error": "the session recorded no test run"}
            r["match"] = False
            continue
        got = {k: r["result"][k] for k in ("passed", "failed", "skipped")}
        # The counts are the runner's; a suite that passes by hand must pass.
        r["match"] = got == truth and (truth["failed"] > 0 or r["result"]["verdict"] == "pass")
    return recs


def versions():
    def v(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "missing"
    tools = [
        ["git", "tlv4", "--version"], ["node", "--version"], ["npm", "--version"],
        ["python3", "--version"], ["uv", "--version"], ["cargo", "--version"],
        ["cargo", "nextest", "--version"],
    ]
    named = lambda cmd, out: f"{cmd[0]} {out}" if re.match(r"v?\d", out) or out == "missing" else out
    return [named(c, v(c)) for c in tools] + [f"{platform.machine()}, {os.cpu_count()} cores"]


def fmt(x, d=1):
    return "—" if x is None else f"{x:.{d}f}"


def write(results, meta, out):
    lines = [
        "# env-real: results",
        "",
        f"Date: {meta['date']}; total run time {meta['total']:.0f} s; timer: {meta['timer']}.",
        "",
        "Versions: " + "; ".join(meta["versions"]) + ".",
        "",
        "## Ratios (tool / by hand, median of the pairs; min–max in brackets)",
        "",
        "| project | ecosystem | by hand: setup + test, s | tool: first iteration, s | ratio | by hand: warm test, s | tool: iteration 2.., s | ratio | counts right |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p = r["project"]
        ok = all(x.get("match") for x in r["runs"] if x["side"] == "tool")
        if not r["phases"]:
            tool = [x for x in r["runs"] if x["side"] == "tool"]
            hand = [x for x in r["runs"] if x["side"] == "hand"]
            right = sum(1 for x in tool if x.get("match"))
            exits = sorted({str(x["exit"]) for x in tool})
            lines.append(
                f"| {p['name']} | {p['ecosystem']} | {fmt(statistics.median(x['wall'] for x in hand))} | "
                f"{fmt(statistics.median(x['wall'] for x in tool))} (exit {', '.join(exits)}) | not timed | | | | "
                f"{'yes' if ok else '**no**'}: {right} of {len(tool)} runs |"
            )
            continue
        c, w = r["phases"]["cold"]["rows"], r["phases"]["warm"]["rows"]

        def cell(rows, key, d=1):
            x = rows.get(key)
            return "—" if not x else fmt(x[1], d)

        def ratio(rows):
            x = rows.get("ratio")
            return "—" if not x else f"**{x[1]:.2f}** ({x[0]:.2f}–{x[2]:.2f})"

        lines.append(
            f"| {p['name']} | {p['ecosystem']} | {cell(c, 'hand')} | {cell(c, 'tool')} | {ratio(c)} | {cell(w, 'hand')} | {cell(w, 'tool')} | {ratio(w)} | {'yes' if ok else '**no**'} |"
        )
    lines += ["", "## Where the time goes (medians of the recorded runs, s)", ""]
    lines += [
        "| project | phase | by hand: setup | by hand: test | tool: session start | tool: task | of which setup | of which test run | of which the rest | tool: after the task |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    med = lambda xs: statistics.median(xs) if xs else None
    for r in results:
        for phase in ("cold", "warm"):
            hand = [x for x in r["runs"] if x["side"] == "hand" and x["phase"] == phase]
            tool = [x for x in r["runs"] if x["side"] == "tool" and x["phase"] == phase]
            if not hand and not tool:
                continue
            hs = lambda k: med([x["stages"].get(k) for x in hand if x["stages"].get(k) is not None])
            ts = lambda k: med([x.get("stages", {}).get(k) for x in tool if x.get("stages", {}).get(k) is not None])
            tr = lambda k: med([x["result"][k] for x in tool if isinstance(x.get("result"), dict) and k in x["result"]])
            # The task less its setup and test run: the checkout, the setup check, reading
            # the results, writing the report.
            rest = med([
                x["stages"]["tasks"] - x["result"]["setup seconds"] - x["result"]["test seconds"]
                for x in tool
                if x.get("stages") and isinstance(x.get("result"), dict) and "test seconds" in x["result"]
                and x["result"]["iterations"] == 1
            ])
            lines.append(
                f"| {r['project']['name']} | {phase} | {fmt(hs('setup'))} | {fmt(hs('test'))} | {fmt(ts('session start'), 2)} | {fmt(ts('tasks'))} | {fmt(tr('setup seconds'))} | {fmt(tr('test seconds'))} | {fmt(rest, 2)} | {fmt(ts('after the tasks'), 2)} |"
            )
    lines += ["", "## Verdicts: each tool run against the project's own runner", ""]
    for r in results:
        p = r["project"]
        hand = [x for x in r["runs"] if x["side"] == "hand"]
        truth = hand[0]["counts"] if hand else None
        lines.append(f"### {p['name']} ({p['source']} at {p['commit'][:12]})")
        lines.append("")
        if p.get("note"):
            lines.append(f"Note: {p['note']}.")
            lines.append("")
        lines.append(f"By hand (`{p['setup'] + ' && ' if p['setup'] else ''}{p['test']}`): {truth}; every by-hand run: "
                     + ", ".join(f"{x['phase']} {x['counts']['passed']}/{x['counts']['failed']}/{x['counts']['skipped']} exit {x['exit']}" for x in hand) + ".")
        lines.append("")
        for x in r["runs"]:
            if x["side"] != "tool":
                continue
            res = x.get("result") or {}
            if "passed" in res:
                lines.append(
                    f"- {x['phase']}, {x.get('session')}: exit {x['exit']}, {res['verdict']}, "
                    f"{res['passed']} passed / {res['failed']} failed / {res['skipped']} skipped "
                    f"({res['framework']}, iteration {res['iterations']}) — {'matches' if x['match'] else '**does not match**'}; "
                    f"`{res['command']}`; " + "; ".join(res["decisions"])
                )
            else:
                lines.append(f"- {x['phase']}, {x.get('session')}: exit {x['exit']}, {res.get('error', 'no session')} — **does not match**")
        lines.append("")
    lines += ["## Raw timer rows", ""]
    for r in results:
        for phase, ph in r["phases"].items():
            lines.append(f"{r['project']['name']} {phase} ({ph['timer']}): " + json.dumps(ph["rows"]))
            for l in ph.get("raw", []):
                lines.append(f"    {l}")
    lines.append("")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "step":
        ap = argparse.ArgumentParser(prog="run.py step")
        ap.add_argument("--work", required=True)
        ap.add_argument("project")
        ap.add_argument("side", choices=["tool", "hand"])
        ap.add_argument("phase", choices=["cold", "warm"])
        a = ap.parse_args(sys.argv[2:])
        step(a.work, a.project, a.side, a.phase)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/tlv4-env-real")
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--only", default="")
    ap.add_argument("--runs", type=int, default=0, help="counted pairs of each phase (default: each project's `runs` and `warm_runs`)")
    ap.add_argument("--timer", default="", help="an outside pairwise whole-process timer (see above)")
    ap.add_argument("--timeout", type=int, default=1200, help="bound of one timer call, s")
    ap.add_argument("--out", default=str(HERE / "baseline" / "results.md"))
    args = ap.parse_args()
    if not shutil.which("git-tlv4"):
        sys.exit("git-tlv4 is not on PATH")
    all_ = projects()
    names = [n for n in args.only.split(",") if n] or list(all_)
    t0 = time.monotonic()
    results = []
    for n in names:
        r = bench_project(all_[n], args)
        r["project"] = all_[n]
        results.append(r)
        json.dump(results, open(Path(args.work) / "results.json", "w"), indent=1, default=str)
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "total": time.monotonic() - t0,
        "timer": "an outside whole-process timer, pairwise (--timer)" if args.timer else "run.py's own, pairwise",
        "versions": versions(),
    }
    write(results, meta, args.out)
    print(f"wrote {args.out} in {meta['total']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
