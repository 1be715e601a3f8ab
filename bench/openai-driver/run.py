#!/usr/bin/env python3
"""The `openai` driver's cost per call against the scripted server on 127.0.0.1.

Runs a pipeline of N independent executor tasks, one at a time, on an `openai` agent whose
server (tests/fixtures/servers/openai-server.py in `stream` mode) sends each answer as
server-sent events, one chunk every DELAY ms, and records how long each answer took it.
Then compares, per call: the server's own time (request read to last byte), the driver's
time for the request (its transcript), and the task's time as the run loop measured it
(worktree, prompt, request, `git apply`, snapshot). What is left after the server's time is
the tool's overhead.

Usage: run.py [BINARY=target/release/git-tlv4] [TASKS=8] [DELAY_MS=2]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
binary = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/git-tlv4"))
tasks = int(sys.argv[2]) if len(sys.argv) > 2 else 8
delay = sys.argv[3] if len(sys.argv) > 3 else "2"

work = tempfile.mkdtemp(prefix="tlv4-bench-openai-")
repo = os.path.join(work, "repo")
log = os.path.join(work, "requests.jsonl")
env = {
    "PATH": os.environ["PATH"], "HOME": work, "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b",
}


def run(*args, cwd=repo):
    return subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


server = subprocess.Popen(
    ["python3", os.path.join(ROOT, "tests/fixtures/servers/openai-server.py"), "0", log, "stream,delay=" + delay],
    stdout=subprocess.PIPE, text=True)
try:
    port = int(server.stdout.readline().split()[1])
    os.makedirs(os.path.join(repo, ".tlv4/specs"))
    run("git", "init", "-q")
    with open(os.path.join(repo, "README.md"), "w") as fh:
        fh.write("bench\n")
    run("git", "add", "README.md")
    run("git", "commit", "-q", "-m", "init")
    pipeline = ["schema = 1", "[role.executor]", 'prefix = "IMPL"', "inner_loop = false", 'summary = "x"']
    for i in range(1, tasks + 1):
        pipeline += ["[task.IMPL-%03d]" % i, 'role = "executor"', 'phase = "implementation"', 'priority = "P0"',
                     'purpose = "p"', 'success = "s"', "steps = []", 'expected = "e"', 'constraints = "c"']
    ids = ", ".join('{ id = "IMPL-%03d" }' % i for i in range(1, tasks + 1))
    pipeline += ["[pipeline.bench]", 'summary = "bench"', "tasks = [%s]" % ids]
    with open(os.path.join(repo, ".tlv4/specs/pipelines.toml"), "w") as fh:
        fh.write("\n".join(pipeline) + "\n")
    with open(os.path.join(repo, ".tlv4.toml"), "w") as fh:
        fh.write('[agents.local]\ndriver = "openai"\nurl = "http://127.0.0.1:%d/v1"\nmodel = "m"\n' % port)
    run(binary, "trust")
    began = time.monotonic()
    out = run(binary, "start", "--pipeline", "bench", "--yes", "--completion", "keep", "--max-parallel", "1",
              "--agent", "local", "bench the driver")
    wall = time.monotonic() - began
    sid = out.splitlines()[0].strip()
finally:
    server.kill()

timings = [json.loads(l) for l in open(log + ".timings")]
rows = []
for i in range(1, tasks + 1):
    t = "IMPL-%03d" % i
    show = lambda f: run("git", "show", "tlv4/%s:.tlv4/sessions/%s/runs/%s/1/%s" % (sid, sid, t, f))
    usage = json.loads(show("usage.json"))
    transcript = show("transcript.txt")
    http = float(re.search(r"ended with \[DONE\], ([0-9.]+)s", transcript).group(1))
    rows.append((t, usage["seconds"], http, usage["output_tokens"]))
served = [x["seconds"] for x in timings]
print("binary %s, %d tasks one at a time, a chunk every %s ms" % (binary, tasks, delay))
print("%-9s %9s %9s %9s %7s %10s" % ("task", "server s", "request s", "task s", "tokens", "tokens/s"))
for (t, task_s, http, tok), srv in zip(rows, served):
    print("%-9s %9.3f %9.3f %9.3f %7d %10.0f" % (t, srv, http, task_s, tok, tok / task_s))
med = statistics.median
print("median: server %.3f s, driver's request %.3f s (+%.0f ms over the server), task %.3f s (+%.0f ms over the server)" % (
    med(served), med(r[2] for r in rows), 1000 * (med(r[2] for r in rows) - med(served)),
    med(r[1] for r in rows), 1000 * (med(r[1] for r in rows) - med(served))))
print("session wall time %.2f s for %d tasks (%.0f ms a task beyond the server's time)" % (
    wall, tasks, 1000 * (wall - sum(served)) / tasks))
