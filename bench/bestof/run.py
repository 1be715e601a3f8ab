#!/usr/bin/env python3
"""Best of N: what measuring a candidate costs beside the candidate's own agent and test time.

    python3 bench/bestof/run.py session N PARALLEL [AGENT_SECONDS]

makes a fresh repository (a small Python package with a `unittest` suite of 40 tests), starts a
one-task session whose executor writes a correct change after sleeping AGENT_SECONDS (default
5, standing in for an agent's time), with `--best-of N` candidates (N = 1: a plain session) and
`--max-parallel PARALLEL`, and prints, per candidate, the agent's seconds, the tests' seconds
and the measurement's seconds beyond the tests (the merge, the test checkout, the review), read
from the session's own `candidates.json`. Time two of them against each other as whole
processes to compare sessions (see README.md).

The binary is `GIT_TLV4` (default: target/release/git-tlv4 of this checkout).
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("GIT_TLV4", os.path.join(ROOT, "target", "release", "git-tlv4"))
AGENT = os.path.join(ROOT, "tests", "fixtures", "agents", "scripted-agent")

CALC = "def add(a, b):\n    return a + b\n"
CHANGE = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
PIPELINE = """schema = 1
[role.executor]
prefix = "IMPL"
inner_loop = false
summary = "x"
[role.supervisor]
prefix = "CHECKPOINT"
inner_loop = false
checkpoint = true
summary = "x"
[task.IMPL-001]
role = "executor"
phase = "implementation"
priority = "P0"
purpose = "p"
success = "s"
steps = []
expected = "e"
constraints = "c"
[pipeline.wide]
summary = "wide"
tasks = [{ id = "IMPL-001" }]
"""


def git(repo, *args, env):
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True,
                          capture_output=True, text=True).stdout


def write(repo, path, text):
    full = os.path.join(repo, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as fh:
        fh.write(text)


def session(n, parallel, agent_seconds):
    home = tempfile.mkdtemp(prefix="tlv4-bestof-home-")
    repo = tempfile.mkdtemp(prefix="tlv4-bestof-repo-")
    env = dict(os.environ, HOME=home, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="b",
               GIT_AUTHOR_EMAIL="b@example.com", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@example.com")
    git(repo, "init", "-q", "-b", "main", env=env)
    write(repo, "app/__init__.py", "")
    write(repo, "app/calc.py", CALC)
    write(repo, "tests/__init__.py", "")
    cases = "".join("    def test_add_%d(self):\n        self.assertEqual(add(%d, 1), %d)\n\n" % (i, i, i + 1)
                    for i in range(40))
    write(repo, "tests/test_calc.py",
          "import unittest\n\nfrom app.calc import add\n\n\nclass Calc(unittest.TestCase):\n" + cases)
    write(repo, ".tlv4/specs/pipelines.toml", PIPELINE)
    files = json.dumps({"app/calc.py": CHANGE})
    names = ["a%d" % k for k in range(1, n + 1)]
    toml = '[tests]\ncommand = "python3 -m unittest discover -s tests -t . -v"\n'
    for name in names:
        toml += ('[agents.%s]\ndriver = "command"\nprogram = "%s"\ntimeout = "600s"\n'
                 "env = { SCRIPTED_MODE = \"write\", SCRIPTED_WRITE = '%s', SCRIPTED_SLEEP = \"%s\" }\n"
                 % (name, AGENT, files, agent_seconds))
    if n == 1:
        toml += '[roles]\nexecutor = "a1"\n'
    write(repo, ".tlv4.toml", toml)
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-q", "-m", "sample", env=env)
    subprocess.run([BIN, "trust"], cwd=repo, env=env, check=True, capture_output=True)
    args = [BIN, "start", "--pipeline", "wide", "--yes", "--completion", "keep",
            "--max-parallel", str(parallel)]
    if n > 1:
        args += ["--best-of", ",".join(names)]
    done = subprocess.run(args + ["add mul"], cwd=repo, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("the session failed:\n" + done.stderr)
    sid = done.stdout.split()[0]
    if n == 1:
        print("plain session %s: done" % sid)
        return
    rec = json.loads(git(repo, "show", "tlv4/%s:.tlv4/sessions/%s/runs/IMPL-001/1/candidates.json" % (sid, sid), env=env))
    print("%-4s %8s %8s %10s %8s" % ("k", "agent s", "tests s", "measure s", "beyond"))
    for c in rec["candidates"]:
        tests = (c.get("tests") or {}).get("seconds", 0.0)
        beyond = c["measure_seconds"] - tests
        print("%-4s %8.2f %8.2f %10.2f %8.2f" % (c["number"], c["seconds"], tests, c["measure_seconds"], beyond))
    print("picked %s: %s" % (rec["picked"], rec["why"]))


def main():
    if len(sys.argv) < 4 or sys.argv[1] != "session":
        sys.exit(__doc__)
    session(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 5.0)


main()
