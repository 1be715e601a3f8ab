#!/usr/bin/env python3
"""Contention on a shared git remote, simulated with plain git on loopback.

git-tlv4 shares a session through a git remote (specs/state-format.md §18): every event of a
session is one commit on `refs/heads/tlv4/<SID>`, and a remote worker claims a task by one
atomic push that advances that ref by compare-and-swap (`--force-with-lease`) and creates a
lease ref. This script measures what that costs when many workers share one remote, without
git-tlv4 itself: each simulated worker is a bare clone driven by the `git` binary, doing what
a worker does on the wire (fetch the session ref, write a commit on it, push with a lease,
retry from the fetch when the lease is lost).

Parts (each is run unless `--parts` names a subset):

  contention  N workers (default 1, 3, 8, 32, 100) on a pool of N*K/2 tasks, each task one
              claim and one completion, for each transport (git daemon on 127.0.0.1, and
              file://) and each design:
                A      every event on the session ref: the claim is an atomic push of the
                       session ref (lease on its old value) + a lease ref that must not
                       exist; the completion moves the session ref and deletes the lease ref
                       (lease on its value). This is the protocol of `worker --remote`.
                B      per-task claim refs: the claim creates `refs/tlv4/claims/<SID>/<TASK>`
                       only if absent (claims never touch the session ref, so they contend
                       with nothing but a claim of the same task); only the completion moves
                       the session ref.
                B4     B with batching: a worker claims up to 4 tasks in one atomic push and
                       records their 4 completions as one session event.
              Figures: tasks/s, session-ref events/s, lease rejections per successful
              session event, p50/p95 latency of a successful event (first try to success),
              claim collisions (B), transport errors.
  roundtrip   one claim round trip (fetch + commit + atomic push of 2 refs) against a plain
              `git push` of one prepared commit, one worker, no contention; the ratio.
  history     fetch cost of the session ref as its history grows (100/1000/5000 events):
              a full fetch into an empty clone, a --depth=1 fetch, an incremental fetch of
              one new event, and ls-remote.
  refs        design B's view of the claims: ls-remote of R claim refs, and the fetch of the
              session ref with R claim refs on the remote (R = 0/100/1000/5000).
  real        (only with --tlv4 BIN or TLV4_BIN) the real `git tlv4 worker --remote`: a session
              of --real-tasks (24) independent code tasks run by the builtin agent (no agent
              time, nothing untrusted runs), started with `start --remote`, worked to its end
              by 1, 3 and 8 workers (--real-workers) in separate clones, each
              `--max-parallel 1`, for each transport. With --real-think-ms MS, also points
              with agent time: N = 8 and 32 (--real-think-workers), 4*N tasks
              (--real-think-tasks), the executor a `command` agent (a shell script the run
              writes into its temporary directory, named in the origin's `.tlv4.toml` and
              trusted with it) that sleeps uniform [0.5, 1.5] * MS ms and writes one file.
              With --tlv4-base BIN, every point runs the base binary and the new one in turn
              (the order alternating from point to point), each on its own fresh server and
              clones; records say `"binary": "base"|"new"` and the summary prints new/base.
              Figures: tasks/s, session events/s, and what the workers' closing lines count
              (src/cli/worker.rs): CAS rejections (refused pushes of the session ref) per
              event, claims taken and refused (the protocol with claim refs), fetches per
              event, mean fetch and push time; checked (`ok`): every task completed exactly
              once, the session completed, fsck --strict, no refs left under
              refs/tlv4/leases/<SID>/ (`claims_left`), every worker exited 0.
              Compare with design A of `contention` at the same N and task count
              (`--plan 1:48,3:16,8:6`: 24 tasks each). `--real-only` = `--parts real`.

Everything runs under a temporary directory with a hermetic git environment (no user or
system config, gc.auto=0 so no maintenance runs in the middle of a measurement). Nothing
leaves 127.0.0.1. Results: JSON Lines in --out (default bench/remote/results/<date>.jsonl)
and a Markdown summary printed at the end (and written next to it as .md).

Usage: contention.py [--parts contention,roundtrip,history,refs,real] [--plan 1:40,3:20,...]
                     [--cap SECS] [--designs A,B,B4] [--file-designs A,B]
                     [--transports daemon,file] [--think-ms MS] [--backoff-ms MS]
                     [--tlv4 BIN [--tlv4-base BIN] [--real-think-ms MS]] [--real-only]
                     [--out FILE] [--quick]
With the defaults the whole run (all parts but `real`) takes under 10 minutes on 2 cores;
the `real` part adds about 2 minutes (twice that with --tlv4-base, more with think points).
"""

import argparse
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SID = "SIM-bench-20261202"
SESSION_REF = f"refs/heads/tlv4/{SID}"
LEASE_NS = f"refs/tlv4/leases/{SID}"
CLAIM_NS = f"refs/tlv4/claims/{SID}"
# Where a clone keeps what it fetched of the session ref (a mirror, like refs/tlv4-remote/).
TIP = "refs/sim/tip"
# fast-import needs a branch to write to; it is this clone's scratch pointer, never pushed by
# name and never read back (the commit id comes from the marks file).
SCRATCH = "refs/sim/scratch"


# ---------------------------------------------------------------------------------------------
# git plumbing


class Git:
    """Runs git with one hermetic environment."""

    def __init__(self, root):
        self.home = os.path.join(root, "home")
        os.makedirs(self.home, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home,
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "sim",
            "GIT_AUTHOR_EMAIL": "sim@example.invalid",
            "GIT_COMMITTER_NAME": "sim",
            "GIT_COMMITTER_EMAIL": "sim@example.invalid",
            # Applied to every git process, the daemon's children included: no automatic
            # gc or maintenance in the middle of a measurement.
            "GIT_CONFIG_COUNT": "3",
            "GIT_CONFIG_KEY_0": "gc.auto",
            "GIT_CONFIG_VALUE_0": "0",
            "GIT_CONFIG_KEY_1": "maintenance.auto",
            "GIT_CONFIG_VALUE_1": "false",
            "GIT_CONFIG_KEY_2": "receive.autogc",
            "GIT_CONFIG_VALUE_2": "false",
        }

    def run(self, args, gitdir=None, cwd=None, stdin=None, check=True):
        cmd = ["git"] + (["--git-dir", gitdir] if gitdir else []) + list(args)
        p = subprocess.run(
            cmd,
            input=stdin,
            capture_output=True,
            env=self.env,
            cwd=cwd,
        )
        if check and p.returncode != 0:
            raise RuntimeError(
                f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.decode(errors='replace')}"
            )
        return p


def read_ref(gitdir, name):
    """The value of a loose ref (what `git fetch` just wrote), else from packed-refs."""
    try:
        with open(os.path.join(gitdir, name)) as f:
            return f.read().strip()
    except FileNotFoundError:
        pass
    try:
        with open(os.path.join(gitdir, "packed-refs")) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1] == name:
                    return parts[0]
    except FileNotFoundError:
        pass
    return None


class Clone:
    """A worker's bare clone of the remote."""

    def __init__(self, git, path, url):
        self.git = git
        self.path = path
        self.url = url
        self.marks = path + ".marks"
        git.run(["init", "-q", "--bare", path])
        git.run(["remote", "add", "origin", url], gitdir=path)

    @classmethod
    def existing(cls, git, path, url):
        c = cls.__new__(cls)
        c.git, c.path, c.url, c.marks = git, path, url, path + ".marks"
        return c

    def fetch_tip(self):
        """Fetches the session ref into this clone's mirror; returns the remote's tip."""
        self.git.run(
            [
                "fetch",
                "-q",
                "--no-tags",
                "--no-write-fetch-head",
                "origin",
                f"+{SESSION_REF}:{TIP}",
            ],
            gitdir=self.path,
        )
        return read_ref(self.path, TIP)

    def commit(self, parent, files, message):
        """One commit on `parent` that writes `files` ({path: text}); returns its id."""
        body = message.encode()
        stream = [
            f"commit {SCRATCH}\nmark :1\ncommitter sim <sim@example.invalid> "
            f"{int(time.time())} +0000\ndata {len(body)}\n".encode(),
            body,
            b"\n",
        ]
        if parent:
            stream.append(f"from {parent}\n".encode())
        for path, text in files.items():
            data = text.encode()
            stream.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode())
            stream.append(data)
            stream.append(b"\n")
        stream.append(b"\n")
        self.git.run(
            ["fast-import", "--quiet", "--force", f"--export-marks={self.marks}"],
            gitdir=self.path,
            stdin=b"".join(stream),
        )
        with open(self.marks) as f:
            for line in f:
                mark, sha = line.split()
                if mark == ":1":
                    return sha
        raise RuntimeError("fast-import wrote no mark")

    def push(self, updates):
        """One `git push --atomic --porcelain` of `updates`: (src or "" to delete, dst,
        expected value or "" for must-not-exist). Returns "ok", "stale" (a lease was lost:
        seen in the advertisement, before anything was sent), "lost" (lost on the server,
        while the ref was locked or updated by another push) or "error"."""
        args = ["push", "--atomic", "--porcelain", "--no-verify"]
        for _src, dst, expected in updates:
            args.append(f"--force-with-lease={dst}:{expected}")
        args.append("origin")
        for src, dst, _expected in updates:
            args.append(f"{src}:{dst}")
        p = self.git.run(args, gitdir=self.path, check=False)
        if p.returncode == 0:
            return "ok"
        out = (p.stdout + p.stderr).decode(errors="replace")
        if "stale info" in out:
            return "stale"
        if "remote rejected" in out or "atomic push failed" in out or "failed to update" in out:
            return "lost"
        return "error:" + out.strip().replace("\n", " | ")[:300]

    def ls_remote(self, pattern):
        p = self.git.run(["ls-remote", "origin", pattern], gitdir=self.path)
        refs = {}
        for line in p.stdout.decode().splitlines():
            sha, name = line.split("\t")
            refs[name] = sha
        return refs


class Daemon:
    """`git daemon` serving `base` on a free port of 127.0.0.1."""

    def __init__(self, git, base):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--enable=receive-pack",
                "--export-all",
                "--reuseaddr",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                # The default is 32 connections at once, past which the daemon drops new
                # ones; the simulation measures ref contention, not that limit.
                "--max-connections=0",
                f"--base-path={base}",
                base,
            ],
            env=git.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(200):
            p = git.run(["ls-remote", self.url("probe.git")], check=False)
            if p.returncode == 0 or b"not exported" in p.stderr or b"No such" in p.stderr:
                break
            # not listening yet
            if self.proc.poll() is not None:
                raise RuntimeError("git daemon exited")
            time.sleep(0.05)

    def url(self, name):
        return f"git://127.0.0.1:{self.port}/{name}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def make_server(git, base, name):
    """A bare repository with a session branch of one commit (the session's start)."""
    path = os.path.join(base, name)
    git.run(["init", "-q", "--bare", path])
    stream = (
        f"commit {SESSION_REF}\ncommitter sim <sim@example.invalid> {int(time.time())} +0000\n"
        "data 14\nsession start\n"
        "M 100644 inline session.toml\ndata 12\nstatus = 1\n\n\n"
    ).encode()
    git.run(["fast-import", "--quiet"], gitdir=path, stdin=stream)
    return path


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def loadavg():
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------------------------------------
# contention


class Run:
    """Shared state and counters of one contention run."""

    def __init__(self, design, tasks, cap, think_ms, backoff_ms):
        self.backoff_ms = backoff_ms
        self.design = design
        self.lock = threading.Lock()
        self.queue = list(tasks)  # design A hands tasks out from here
        self.tasks = list(tasks)
        self.deadline = None  # no new task after this
        self.hard_deadline = None  # an event still retrying after this is abandoned
        self.abandoned = 0
        self.cap = cap
        self.think_ms = think_ms
        self.event_lat = []  # seconds, successful session-ref events
        self.claim_lat = []  # seconds, successful claims (whatever they push)
        self.stale = 0  # session-ref leases lost before sending
        self.lost = 0  # session-ref leases lost on the server
        self.claim_collisions = 0  # B: a claim ref someone else created first
        self.errors = []
        self.events = 0
        self.done = 0
        self.attempts = 0

    def transport_error(self, e):
        """A fetch, ls-remote or push that failed for another reason than a lease (the
        connection was refused or reset): counted, and the step is tried again."""
        with self.lock:
            self.errors.append(str(e).strip().splitlines()[-1][:300])
        time.sleep(0.01)

    def take(self):
        with self.lock:
            if time.monotonic() > self.deadline or not self.queue:
                return None
            return self.queue.pop(0)

    def backoff(self, rng, tries):
        """After a lost lease: retry at once (`--backoff-ms 0`), or wait a random time up to
        BACKOFF * 2^tries, at most 2 s ("full jitter"), so that the losers spread out."""
        if self.backoff_ms:
            time.sleep(rng.uniform(0, min(2.0, self.backoff_ms / 1000.0 * 2**tries)))

    def think(self, rng):
        if self.think_ms:
            time.sleep(rng.uniform(0.5, 1.5) * self.think_ms / 1000.0)


class Abandoned(Exception):
    """An event still retrying at the run's hard deadline."""


def session_event(run, clone, rng, files, message, extra):
    """Fetch, commit on the tip, push the session ref with a lease (+ `extra` updates built
    from the new commit); retry from the fetch until it lands. Returns the new commit."""
    t0 = time.monotonic()
    tries = 0
    while True:
        if time.monotonic() > run.hard_deadline:
            raise Abandoned()
        try:
            tip = clone.fetch_tip()
        except RuntimeError as e:
            run.transport_error(e)
            continue
        new = clone.commit(tip, files, message)
        updates = [(new, SESSION_REF, tip)] + extra(new)
        with run.lock:
            run.attempts += 1
        r = clone.push(updates)
        if r == "ok":
            with run.lock:
                run.events += 1
                run.event_lat.append(time.monotonic() - t0)
            return new, time.monotonic() - t0
        run.backoff(rng, tries)
        tries += 1
        with run.lock:
            if r == "stale":
                run.stale += 1
            elif r == "lost":
                run.lost += 1
            else:
                run.errors.append(r)


def worker_a(run, clone, wid, rng):
    while True:
        task = run.take()
        if task is None:
            return
        lease = f"{LEASE_NS}/{task}"
        claim, lat = session_event(
            run,
            clone,
            rng,
            {f"tasks/{task}.toml": f'status = "in_progress"\nworker = "{wid}"\n'},
            f"claim {task}\n\nTlv4-Event: task_claimed\n",
            lambda new: [(new, lease, "")],
        )
        with run.lock:
            run.claim_lat.append(lat)
        run.think(rng)
        session_event(
            run,
            clone,
            rng,
            {f"tasks/{task}.toml": f'status = "completed"\nworker = "{wid}"\n'},
            f"complete {task}\n\nTlv4-Event: task_completed\n",
            lambda new, lease=lease, claim=claim: [("", lease, claim)],
        )
        with run.lock:
            run.done += 1


def worker_b(run, clone, wid, rng, batch):
    known_tip = read_ref(clone.path, TIP)
    while True:
        if time.monotonic() > run.deadline:
            return
        # Claim: see which tasks are taken, pick free ones at random, create their claim
        # refs only if absent, all or nothing.
        t0 = time.monotonic()
        while True:
            if time.monotonic() > run.hard_deadline:
                raise Abandoned()
            try:
                taken = clone.ls_remote(f"{CLAIM_NS}/*")
            except RuntimeError as e:
                run.transport_error(e)
                continue
            free = [t for t in run.tasks if f"{CLAIM_NS}/{t}" not in taken]
            if not free:
                return
            mine = rng.sample(free, min(batch, len(free)))
            claim = clone.commit(
                known_tip,
                {},
                f"claim {' '.join(mine)} by {wid}\n\nTlv4-Event: task_claimed\n",
            )
            r = clone.push([(claim, f"{CLAIM_NS}/{t}", "") for t in mine])
            if r == "ok":
                break
            if r in ("stale", "lost"):
                with run.lock:
                    run.claim_collisions += 1
                continue
            with run.lock:
                run.errors.append(r)
        with run.lock:
            run.claim_lat.append(time.monotonic() - t0)
        run.think(rng)
        files = {
            f"tasks/{t}.toml": f'status = "completed"\nworker = "{wid}"\n' for t in mine
        }
        known_tip, _ = session_event(
            run,
            clone,
            rng,
            files,
            f"complete {' '.join(mine)}\n\nTlv4-Event: task_completed\n",
            lambda new: [],
        )
        with run.lock:
            run.done += len(mine)


def contention_run(git, root, transport, design, n, k, cap, think_ms, backoff_ms):
    t_setup = time.monotonic()
    base = tempfile.mkdtemp(dir=root, prefix=f"c-{transport}-{design}-{n}-")
    server = make_server(git, base, "server.git")
    daemon = Daemon(git, base) if transport == "daemon" else None
    url = daemon.url("server.git") if daemon else f"file://{server}"
    try:
        ntasks = max(1, n * k // 2)
        tasks = [f"IMPL-{i:04d}" for i in range(1, ntasks + 1)]
        run = Run(design, tasks, cap, think_ms, backoff_ms)
        # One clone that has fetched the session, copied for each worker (much faster than
        # n inits and fetches; each copy is a clone of its own from then on).
        first = Clone(git, os.path.join(base, "w000.git"), url)
        first.fetch_tip()
        clones = [first]
        for i in range(1, n):
            path = os.path.join(base, f"w{i:03d}.git")
            shutil.copytree(first.path, path, symlinks=True)
            clones.append(Clone.existing(git, path, url))
        batch = 4 if design == "B4" else 1
        barrier = threading.Barrier(n + 1)
        failures = []

        def body(i):
            rng = random.Random(i)
            barrier.wait()
            try:
                if design == "A":
                    worker_a(run, clones[i], f"w{i:03d}", rng)
                else:
                    worker_b(run, clones[i], f"w{i:03d}", rng, batch)
            except Abandoned:
                with run.lock:
                    run.abandoned += 1
            except Exception as e:  # recorded, the run goes on
                failures.append(repr(e))

        threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        load0 = loadavg()
        setup_s = time.monotonic() - t_setup
        run.deadline = time.monotonic() + cap
        run.hard_deadline = run.deadline + cap
        t0 = time.monotonic()
        barrier.wait()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        t_check = time.monotonic()
        # The server must hold exactly the events that were counted, in one line of history.
        count = int(
            git.run(["rev-list", "--count", SESSION_REF], gitdir=server).stdout.decode()
        )
        fsck = git.run(["fsck", "--strict", "--no-progress"], gitdir=server, check=False)
        rejected = run.stale + run.lost
        rec = {
            "part": "contention",
            "transport": transport,
            "design": design,
            "workers": n,
            "k": k,
            "think_ms": think_ms,
            "backoff_ms": backoff_ms,
            "tasks_total": ntasks,
            "tasks_done": run.done,
            "capped": run.done < ntasks,
            "workers_abandoned": run.abandoned,
            "wall_s": round(wall, 3),
            "tasks_per_s": round(run.done / wall, 2),
            "session_events": run.events,
            "session_events_per_s": round(run.events / wall, 2),
            "push_attempts": run.attempts,
            "rejected_stale": run.stale,
            "rejected_on_server": run.lost,
            "rejections_per_event": round(rejected / max(1, run.events), 2),
            "event_p50_ms": round(1000 * pct(run.event_lat, 50), 1) if run.event_lat else None,
            "event_p95_ms": round(1000 * pct(run.event_lat, 95), 1) if run.event_lat else None,
            "event_max_ms": round(1000 * max(run.event_lat), 1) if run.event_lat else None,
            "claim_p50_ms": round(1000 * pct(run.claim_lat, 50), 1) if run.claim_lat else None,
            "claim_p95_ms": round(1000 * pct(run.claim_lat, 95), 1) if run.claim_lat else None,
            "claim_collisions": run.claim_collisions,
            "errors": len(run.errors),
            "error_sample": run.errors[:3],
            "worker_failures": failures[:3],
            "server_commits": count,
            "server_commits_expected": run.events + 1,
            "server_fsck_ok": fsck.returncode == 0,
            "setup_s": round(setup_s, 1),
            "check_s": round(time.monotonic() - t_check, 1),
            "load_before": load0,
            "load_after": loadavg(),
        }
        return rec
    finally:
        if daemon:
            daemon.stop()
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# round trip


def roundtrip(git, root, transport, reps):
    base = tempfile.mkdtemp(dir=root, prefix=f"rt-{transport}-")
    server = make_server(git, base, "server.git")
    daemon = Daemon(git, base) if transport == "daemon" else None
    url = daemon.url("server.git") if daemon else f"file://{server}"
    try:
        c = Clone(git, os.path.join(base, "w.git"), url)
        tip = c.fetch_tip()
        plain, claim, fetch, commit, push2 = [], [], [], [], []
        plain_tip = tip
        for i in range(reps):
            # A plain push of one commit made beforehand: fast-forward, no lease.
            new = c.commit(plain_tip, {f"plain/{i}.txt": "x\n"}, f"plain {i}\n")
            t = time.monotonic()
            r = c.git.run(
                ["push", "--porcelain", "--no-verify", "origin", f"{new}:refs/heads/plain"],
                gitdir=c.path,
            )
            plain.append(time.monotonic() - t)
            assert r.returncode == 0
            plain_tip = new
            # One claim round trip: fetch the session ref, commit the claim, push the session
            # ref (lease on the tip fetched) and a lease ref that must not exist, atomically.
            t = time.monotonic()
            tip = c.fetch_tip()
            t1 = time.monotonic()
            new = c.commit(
                tip,
                {f"tasks/IMPL-{i:04d}.toml": 'status = "in_progress"\n'},
                f"claim IMPL-{i:04d}\n",
            )
            t2 = time.monotonic()
            r = c.push([(new, SESSION_REF, tip), (new, f"{LEASE_NS}/IMPL-{i:04d}", "")])
            t3 = time.monotonic()
            assert r == "ok", r
            claim.append(t3 - t)
            fetch.append(t1 - t)
            commit.append(t2 - t1)
            push2.append(t3 - t2)
        med = statistics.median
        return {
            "part": "roundtrip",
            "transport": transport,
            "reps": reps,
            "plain_push_p50_ms": round(1000 * med(plain), 1),
            "plain_push_p95_ms": round(1000 * pct(plain, 95), 1),
            "claim_rt_p50_ms": round(1000 * med(claim), 1),
            "claim_rt_p95_ms": round(1000 * pct(claim, 95), 1),
            "claim_fetch_p50_ms": round(1000 * med(fetch), 1),
            "claim_commit_p50_ms": round(1000 * med(commit), 1),
            "claim_push2_p50_ms": round(1000 * med(push2), 1),
            "ratio_claim_to_plain": round(med(claim) / med(plain), 2),
            "load": loadavg(),
        }
    finally:
        if daemon:
            daemon.stop()
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# history


def history_stream(events):
    """A session of `events` commits: each claims or completes a task (one file of
    tasks/, two events a task) and bumps the event count in session.toml."""
    out = []
    ts = 1_764_000_000
    for e in range(1, events + 1):
        task = f"IMPL-{(e - 1) // 2 + 1:05d}"
        status = "in_progress" if e % 2 else "completed"
        msg = f"{'claim' if e % 2 else 'complete'} {task}\n\nTlv4-Seq: {e}\n".encode()
        tf = f'id = "{task}"\nstatus = "{status}"\nworker = "w{e % 7}"\n'.encode()
        sf = f'schema = 1\nstatus = "active"\nevents = {e}\n'.encode()
        out.append(
            f"commit {SESSION_REF}\ncommitter sim <sim@example.invalid> {ts + e} +0000\n"
            f"data {len(msg)}\n".encode()
        )
        out.append(msg)
        out.append(b"\n")
        out.append(f"M 100644 inline session.toml\ndata {len(sf)}\n".encode() + sf + b"\n")
        out.append(f"M 100644 inline tasks/{task}.toml\ndata {len(tf)}\n".encode() + tf + b"\n")
        out.append(b"\n")
    return b"".join(out)


def history(git, root, transport, sizes, reps):
    recs = []
    for events in sizes:
        base = tempfile.mkdtemp(dir=root, prefix=f"h-{transport}-{events}-")
        server = os.path.join(base, "server.git")
        git.run(["init", "-q", "--bare", server])
        git.run(["fast-import", "--quiet"], gitdir=server, stdin=history_stream(events))
        git.run(["update-ref", "refs/heads/prev", f"{SESSION_REF}~1"], gitdir=server)
        # A hosted server keeps its objects packed with deltas.
        git.run(["gc", "--quiet", "--prune=now"], gitdir=server)
        daemon = Daemon(git, base) if transport == "daemon" else None
        url = daemon.url("server.git") if daemon else f"file://{server}"
        try:
            full, shallow, incr, lsr = [], [], [], []
            for r in range(reps):
                d = os.path.join(base, f"full{r}.git")
                git.run(["init", "-q", "--bare", d])
                t = time.monotonic()
                git.run(["fetch", "-q", "--no-tags", url, f"+{SESSION_REF}:{TIP}"], gitdir=d)
                full.append(time.monotonic() - t)
                d = os.path.join(base, f"shallow{r}.git")
                git.run(["init", "-q", "--bare", d])
                t = time.monotonic()
                git.run(
                    ["fetch", "-q", "--no-tags", "--depth=1", url, f"+{SESSION_REF}:{TIP}"],
                    gitdir=d,
                )
                shallow.append(time.monotonic() - t)
                # Incremental: the clone has every event but the last (untimed), then fetches
                # the tip: what a live worker pays per event.
                d = os.path.join(base, f"incr{r}.git")
                git.run(["init", "-q", "--bare", d])
                git.run(["fetch", "-q", "--no-tags", url, f"+refs/heads/prev:{TIP}"], gitdir=d)
                t = time.monotonic()
                git.run(["fetch", "-q", "--no-tags", url, f"+{SESSION_REF}:{TIP}"], gitdir=d)
                incr.append(time.monotonic() - t)
                t = time.monotonic()
                git.run(["ls-remote", url, SESSION_REF])
                lsr.append(time.monotonic() - t)
            size = sum(
                os.path.getsize(os.path.join(dp, f))
                for dp, _, fs in os.walk(os.path.join(server, "objects"))
                for f in fs
            )
            med = statistics.median
            recs.append(
                {
                    "part": "history",
                    "transport": transport,
                    "events": events,
                    "reps": reps,
                    "objects_bytes": size,
                    "full_fetch_ms": round(1000 * med(full), 1),
                    "shallow_fetch_ms": round(1000 * med(shallow), 1),
                    "incremental_fetch_ms": round(1000 * med(incr), 1),
                    "ls_remote_ms": round(1000 * med(lsr), 1),
                    "load": loadavg(),
                }
            )
        finally:
            if daemon:
                daemon.stop()
            shutil.rmtree(base, ignore_errors=True)
    return recs


def many_refs(git, root, transport, counts, reps):
    """Design B's cost of seeing the claims: `ls-remote` of the claim refs, and the fetch of
    the session ref, when the remote holds R claim refs."""
    recs = []
    for count in counts:
        base = tempfile.mkdtemp(dir=root, prefix=f"r-{transport}-{count}-")
        server = make_server(git, base, "server.git")
        tip = read_ref(server, SESSION_REF) or git.run(
            ["rev-parse", SESSION_REF], gitdir=server
        ).stdout.decode().strip()
        lines = "".join(f"create {CLAIM_NS}/IMPL-{i:05d} {tip}\n" for i in range(count))
        git.run(["update-ref", "--stdin"], gitdir=server, stdin=lines.encode())
        git.run(["pack-refs", "--all"], gitdir=server)
        daemon = Daemon(git, base) if transport == "daemon" else None
        url = daemon.url("server.git") if daemon else f"file://{server}"
        try:
            c = Clone(git, os.path.join(base, "w.git"), url)
            c.fetch_tip()
            lsr, fetch = [], []
            for _ in range(reps):
                t = time.monotonic()
                seen = c.ls_remote(f"{CLAIM_NS}/*")
                lsr.append(time.monotonic() - t)
                assert len(seen) == count, len(seen)
                t = time.monotonic()
                c.fetch_tip()
                fetch.append(time.monotonic() - t)
            med = statistics.median
            recs.append(
                {
                    "part": "refs",
                    "transport": transport,
                    "claim_refs": count,
                    "reps": reps,
                    "ls_remote_claims_ms": round(1000 * med(lsr), 1),
                    "fetch_session_ms": round(1000 * med(fetch), 1),
                    "load": loadavg(),
                }
            )
        finally:
            if daemon:
                daemon.stop()
            shutil.rmtree(base, ignore_errors=True)
    return recs


# ---------------------------------------------------------------------------------------------
# the real worker


def wide_pipeline(n):
    """pipelines.toml with one pipeline `wide` of `n` independent executor tasks (the shape
    tests/e2e/common.rs writes)."""
    text = (
        'schema = 1\n[role.executor]\nprefix = "IMPL"\ninner_loop = false\nsummary = "x"\n'
        '[role.supervisor]\nprefix = "CHECKPOINT"\ninner_loop = false\ncheckpoint = true\n'
        'summary = "x"\n'
    )
    ids = []
    for i in range(1, n + 1):
        text += (
            f'[task.IMPL-{i:03d}]\nrole = "executor"\nphase = "implementation"\n'
            'priority = "P0"\npurpose = "p"\nsuccess = "s"\nsteps = []\nexpected = "e"\n'
            'constraints = "c"\n'
        )
        ids.append(f'{{ id = "IMPL-{i:03d}" }}')
    text += f'[pipeline.wide]\nsummary = "wide"\ntasks = [{", ".join(ids)}]\n'
    return text


# The closing line of `git tlv4 worker` (src/cli/worker.rs, stats_line). The claim clause after
# "(X.XX per event)" is printed by the protocol with claim refs and batched completions
# (docs/remote.md §5.6); today's protocol prints the line without it.
STATS = re.compile(
    r"worker \S+: (?:(?P<tasks>\d+) task\(s\) run, )?(?P<events>\d+) event\(s\) written "
    r"through `[^`]*`, (?P<retries>\d+) refused because the remote had moved and retried "
    r"\([0-9.]+ per event\)"
    r"(?:; (?P<claims>\d+) claim\(s\) taken, (?P<claims_refused>\d+) refused \(taken first "
    r"by another worker\), (?P<batches>\d+) batch\(es\)"
    r"(?:, (?P<turns_refused>\d+) turn\(s\) waited for)?)?"
    r"; (?P<fetches>\d+) fetch\(es\) in (?P<fetch_s>[0-9.]+)s, "
    r"(?P<pushes>\d+) push\(es\) in (?P<push_s>[0-9.]+)s \((?P<refused>\d+) refused in all\)"
)


def worker_stats(stderr):
    """The counts of a worker's closing line, or None when it has none."""
    m = STATS.search(stderr)
    if not m:
        return None
    return {
        k: (float(v) if k.endswith("_s") else int(v))
        for k, v in m.groupdict().items()
        if v is not None
    }


# The agent of the think points: a program for the `command` driver (like
# tests/fixtures/agents/sleep-agent) that sleeps uniform [0.5, 1.5] * THINK_MS ms, then writes
# one file named after its task in its checkout and prints the result block a code task needs.
THINK_AGENT = r"""#!/bin/sh
# contention.py's think agent: sleeps uniform [0.5, 1.5] * $THINK_MS ms, then does a code
# task's work (one file, the result block).
cat > /dev/null
secs=$(awk -v ms="${THINK_MS:-1000}" -v seed="$$$(date +%N)" \
    'BEGIN { srand(seed % 2147483647); printf "%.3f", ms * (0.5 + rand()) / 1000 }')
sleep "$secs"
echo "thought for $secs s on $TLV4_TASK" > "thought-$TLV4_TASK.txt"
printf '```json\n{"summary": "thought", "state_update": {"key_findings": ["thought"], "decisions": [], "files_modified": ["thought-%s.txt"], "verification": "none"}}\n```\n' "$TLV4_TASK"
"""


def think_agent(root):
    """Writes the think agent into the run's temporary directory; its path."""
    d = os.path.join(root, "agent")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "think-agent")
    with open(path, "w") as f:
        f.write(THINK_AGENT)
    os.chmod(path, 0o755)
    return path


def session_completions(git, server, branch):
    """(task ids completed, one entry per completion, from the first-parent log's trailers;
    the number of commits). A commit may carry several `Tlv4-Task` / `Tlv4-Event` trailers
    (completions applied in a batch): paired in order when the counts match, else every task
    of a commit whose events are all `task_completed` counts once."""
    log = git.run(
        ["log", "--first-parent", "--format=%x01%(trailers:key=Tlv4-Task,valueonly,separator=%x2C)"
         "%x00%(trailers:key=Tlv4-Event,valueonly,separator=%x2C)", branch],
        gitdir=server,
    ).stdout.decode()
    completed = []
    commits = 0
    for entry in log.split("\x01")[1:]:
        commits += 1
        tasks_s, _, events_s = entry.strip().partition("\x00")
        tasks = [t.strip() for t in tasks_s.split(",") if t.strip()]
        events = [e.strip() for e in events_s.split(",") if e.strip()]
        if len(tasks) == len(events):
            completed += [t for t, e in zip(tasks, events) if e == "task_completed"]
        elif events and all(e == "task_completed" for e in events):
            completed += tasks
    return completed, commits


def tasks_in_state(git, server, branch, sid):
    """How many task files at the session's tip say `status = "completed"`."""
    prefix = f".tlv4/sessions/{sid}/tasks/"
    names = git.run(["ls-tree", "--name-only", f"{branch}:{prefix}"], gitdir=server, check=False)
    if names.returncode != 0:
        return None
    files = [n for n in names.stdout.decode().splitlines() if n.endswith(".toml")]
    if not files:
        return 0
    out = git.run(
        ["cat-file", "--batch"],
        gitdir=server,
        stdin="".join(f"{branch}:{prefix}{n}\n" for n in files).encode(),
    ).stdout.decode(errors="replace")
    return len(re.findall(r'(?m)^status = "completed"$', out))


def agent_times(git, server, branch):
    """The think agent's sleeps (seconds) read back from the `thought-<TASK>.txt` files at the
    session's tip: one per task whose agent run was merged."""
    names = git.run(["ls-tree", "--name-only", branch], gitdir=server, check=False)
    files = [n for n in names.stdout.decode().splitlines() if n.startswith("thought-")]
    if not files:
        return []
    out = git.run(
        ["cat-file", "--batch"], gitdir=server,
        stdin="".join(f"{branch}:{n}\n" for n in files).encode(),
    ).stdout.decode(errors="replace")
    return [float(x) for x in re.findall(r"thought for ([0-9.]+) s on ", out)]


def real_point(git, root, tlv4, label, transport, n, ntasks, timeout, think_ms=0.0, agent=None):
    """One run of the real `git tlv4 worker --remote`: a fresh bare server (over `transport`)
    with a session of `ntasks` independent code tasks, N clones each running one worker
    `--max-parallel 1` until the session completes. The executor is the builtin agent (no agent
    time), or with `think_ms` the think agent `agent` (a `command` agent named in the origin's
    committed `.tlv4.toml`, trusted with the rest in every clone). Figures: wall time from the
    workers' start to the last one's exit, tasks/s, session events, and what the workers'
    closing lines count: events written, refused pushes of the session ref (the CAS
    rejections, `retries`), claims taken and refused (the protocol with claim refs), fetches,
    pushes, time waiting for git. Checked: every task completed exactly once, the session
    completed, `git fsck --strict` on the server, no lease/claim refs left under
    `refs/tlv4/leases/<SID>/`. Extra worker arguments: TLV4_WORKER_ARGS."""
    extra = os.environ.get("TLV4_WORKER_ARGS", "").split()
    tlv4 = os.path.abspath(tlv4)
    base = tempfile.mkdtemp(dir=root, prefix=f"real-{label}-{transport}-{n}-")
    server = os.path.join(base, "server.git")
    git.run(["init", "-q", "--bare", "-b", "main", server])
    daemon = Daemon(git, base) if transport == "daemon" else None
    url = daemon.url("server.git") if daemon else f"file://{server}"

    def tlv4_run(args, cwd, check=True):
        p = subprocess.run(
            [tlv4] + args, cwd=cwd, env=git.env, capture_output=True, timeout=timeout
        )
        if check and p.returncode != 0:
            raise RuntimeError(
                f"git-tlv4 {' '.join(args)} exited {p.returncode}: "
                f"{p.stderr.decode(errors='replace')}"
            )
        return p

    try:
        origin = os.path.join(base, "origin")
        git.run(["init", "-q", "-b", "main", origin])
        os.makedirs(os.path.join(origin, ".tlv4/specs"))
        with open(os.path.join(origin, ".tlv4/specs/pipelines.toml"), "w") as f:
            f.write(wide_pipeline(ntasks))
        with open(os.path.join(origin, "README.md"), "w") as f:
            f.write("bench\n")
        if think_ms:
            with open(os.path.join(origin, ".tlv4.toml"), "w") as f:
                f.write(
                    "[agents.thinker]\n"
                    'driver = "command"\n'
                    f"program = {json.dumps(agent)}\n"
                    f'env = {{ THINK_MS = "{think_ms:g}" }}\n'
                    "\n[roles]\n"
                    'executor = "thinker"\n'
                )
        git.run(["add", "-A"], cwd=origin)
        git.run(["commit", "-q", "-m", "initial"], cwd=origin)
        git.run(["remote", "add", "origin", url], cwd=origin)
        git.run(["push", "-q", "origin", "main"], cwd=origin)
        # The pipeline file overrides the builtin ones (and .tlv4.toml names an agent
        # program): the user trusts them.
        tlv4_run(["trust"], origin)
        start = [
            "start", "--remote", "origin", "--no-run", "--pipeline", "wide", "--yes",
            "--completion", "keep", "bench",
        ]
        sid = tlv4_run(start, origin).stdout.decode().strip()
        clones = []
        for i in range(n):
            c = os.path.join(base, f"w{i}")
            git.run(["clone", "-q", url, c])
            tlv4_run(["trust"], c)
            clones.append(c)
        cmd = [tlv4, "--session", sid, "worker", "--remote", "origin", "--max-parallel", "1"]
        t0 = time.monotonic()
        procs = [
            subprocess.Popen(
                cmd + extra, cwd=c, env=git.env, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for c in clones
        ]
        # Read every worker's stderr at once (a pipe left unread could block a worker).
        outs = [None] * len(procs)

        def collect(i, p):
            try:
                _, err = p.communicate(timeout=max(1.0, t0 + timeout - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            outs[i] = (p.returncode, err.decode(errors="replace"))

        threads = [threading.Thread(target=collect, args=(i, p)) for i, p in enumerate(procs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        branch = f"refs/heads/tlv4/{sid}"
        completed, commits = session_completions(git, server, branch)
        done = len(set(completed))
        status = git.run(
            ["show", f"{branch}:.tlv4/sessions/{sid}/session.toml"], gitdir=server, check=False
        ).stdout.decode()
        fsck = git.run(["fsck", "--strict", "--no-progress"], gitdir=server, check=False)
        left = git.run(
            ["for-each-ref", "--format=%(refname)", f"refs/tlv4/leases/{sid}/"], gitdir=server
        ).stdout.decode().split()
        in_state = tasks_in_state(git, server, branch, sid)
        slept = agent_times(git, server, branch) if think_ms else []
        stats = [worker_stats(err) for _, err in outs]

        def sum_of(k):
            vals = [s[k] for s in stats if s and k in s]
            return round(sum(vals), 3) if vals else None

        total = {
            k: sum_of(k) or 0
            for k in ("events", "retries", "fetches", "pushes", "refused", "fetch_s", "push_s")
        }
        claims = {k: sum_of(k) for k in ("claims", "claims_refused", "batches", "turns_refused")}
        rec = {
            "part": "real",
            "binary": label,
            "tlv4": tlv4,
            "transport": transport,
            "workers": n,
            "think_ms": think_ms,
            "agent": "think-agent" if think_ms else "builtin",
            "tasks_total": ntasks,
            "tasks_done": done,
            "completed_twice": len(completed) - done,
            "tasks_completed_in_state": in_state,
            "session_completed": 'status = "completed"' in status,
            "wall_s": round(wall, 3),
            "tasks_per_s": round(done / wall, 3),
            "session_commits": commits,
            "events_written": total["events"],
            "session_events_per_s": round(total["events"] / wall, 2),
            "cas_rejections": total["retries"],
            "rejections_per_event": round(total["retries"] / max(1, total["events"]), 3),
            "claims_taken": claims["claims"],
            "claims_refused": claims["claims_refused"],
            "claim_refusals_per_task": None
            if claims["claims_refused"] is None
            else round(claims["claims_refused"] / max(1, done), 3),
            "batches": claims["batches"],
            "turns_refused": claims["turns_refused"],
            "turn_waits_per_event": None
            if claims["turns_refused"] is None
            else round(claims["turns_refused"] / max(1, total["events"]), 3),
            "fetches": total["fetches"],
            "pushes": total["pushes"],
            "refused_all": total["refused"],
            "fetch_s": total["fetch_s"],
            "push_s": total["push_s"],
            "push_ms_mean": round(1000 * total["push_s"] / max(1, total["pushes"]), 1),
            "fetch_ms_mean": round(1000 * total["fetch_s"] / max(1, total["fetches"]), 1),
            "fetches_per_event": round(total["fetches"] / max(1, total["events"]), 2),
            "worker_exit_codes": [rc for rc, _ in outs],
            "worker_stats": stats,
            "worker_errors": [err[-400:] for rc, err in outs if rc != 0],
            "server_fsck_ok": fsck.returncode == 0,
            "claims_left": len(left),
            "load_after": loadavg(),
        }
        if think_ms:
            # The think agent's files merged into the session: proof that it ran, and the
            # agent time it actually took.
            rec["agent_files"] = len(slept)
            rec["agent_s_mean"] = round(statistics.mean(slept), 3) if slept else None
        rec["ok"] = (
            done == ntasks
            and rec["completed_twice"] == 0
            and rec["session_completed"]
            and rec["server_fsck_ok"]
            and rec["claims_left"] == 0
            and all(rc == 0 for rc in rec["worker_exit_codes"])
            and (not think_ms or rec["agent_files"] == ntasks)
        )
        return rec
    finally:
        if daemon:
            daemon.stop()
        shutil.rmtree(base, ignore_errors=True)


def real_points(git, root, new, base, points, timeout, agent=None, first=0):
    """Runs each point (transport, N, ntasks, think_ms) with the new binary and, when `base`
    is given, with the base binary too, each on its own fresh server and clones, one right
    after the other (the order alternating from point to point, so that load drift hits
    both). Yields the records; the two of a point share `point`."""
    for i, (transport, n, ntasks, think_ms) in enumerate(points, start=first):
        runs = [("new", new)] + ([("base", base)] if base else [])
        if i % 2:
            runs.reverse()
        for order, (label, binary) in enumerate(runs):
            rec = real_point(
                git, root, binary, label, transport, n, ntasks, timeout, think_ms, agent
            )
            rec["point"] = i
            rec["order"] = order
            yield rec


# ---------------------------------------------------------------------------------------------
# report


def table(rows, cols):
    lines = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for _, key in cols:
            v = key(r) if callable(key) else r.get(key)
            cells.append("–" if v is None else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary(recs, meta, with_ratios=True):
    out = [
        f"# remote contention run {meta['started']}",
        "",
        f"git {meta['git']}, python {meta['python']}, {meta['cpus']} CPUs, "
        f"load average at start {meta['load_start']}, at end {meta['load_end']}, "
        f"total {meta['total_s']} s. The contention, roundtrip, history and refs parts are "
        "simulated with plain git, not git-tlv4; only the real part runs git-tlv4.",
        "",
    ]
    c = [r for r in recs if r["part"] == "contention"]
    if c:
        out += [
            "## Contention",
            "",
            table(
                c,
                [
                    ("transport", "transport"),
                    ("design", "design"),
                    ("N", "workers"),
                    ("think ms", "think_ms"),
                    ("backoff ms", "backoff_ms"),
                    ("tasks", lambda r: f"{r['tasks_done']}/{r['tasks_total']}"),
                    ("wall s", "wall_s"),
                    ("tasks/s", "tasks_per_s"),
                    ("session events/s", "session_events_per_s"),
                    ("rejections/event", "rejections_per_event"),
                    ("stale/server", lambda r: f"{r['rejected_stale']}/{r['rejected_on_server']}"),
                    ("event p50 ms", "event_p50_ms"),
                    ("event p95 ms", "event_p95_ms"),
                    ("claim p50 ms", "claim_p50_ms"),
                    ("claim p95 ms", "claim_p95_ms"),
                    ("claim collisions", "claim_collisions"),
                    ("abandoned", "workers_abandoned"),
                    ("transport errors", "errors"),
                    ("load after", lambda r: r["load_after"][0]),
                    (
                        "history ok",
                        lambda r: "yes"
                        if r["server_fsck_ok"]
                        and r["server_commits"] == r["server_commits_expected"]
                        else "NO",
                    ),
                ],
            ),
            "",
        ]
    rt = [r for r in recs if r["part"] == "roundtrip"]
    if rt:
        out += [
            "## Claim round trip vs plain push (1 worker, medians)",
            "",
            table(
                rt,
                [
                    ("transport", "transport"),
                    ("reps", "reps"),
                    ("plain push p50 ms", "plain_push_p50_ms"),
                    ("plain push p95 ms", "plain_push_p95_ms"),
                    ("claim p50 ms", "claim_rt_p50_ms"),
                    ("claim p95 ms", "claim_rt_p95_ms"),
                    ("fetch", "claim_fetch_p50_ms"),
                    ("commit", "claim_commit_p50_ms"),
                    ("atomic push 2 refs", "claim_push2_p50_ms"),
                    ("ratio", "ratio_claim_to_plain"),
                ],
            ),
            "",
        ]
    h = [r for r in recs if r["part"] == "history"]
    if h:
        out += [
            "## Fetch of the session ref as its history grows (medians)",
            "",
            table(
                h,
                [
                    ("transport", "transport"),
                    ("events", "events"),
                    ("objects KiB", lambda r: r["objects_bytes"] // 1024),
                    ("full fetch ms", "full_fetch_ms"),
                    ("--depth=1 ms", "shallow_fetch_ms"),
                    ("1 new event ms", "incremental_fetch_ms"),
                    ("ls-remote ms", "ls_remote_ms"),
                ],
            ),
            "",
        ]
    rf = [r for r in recs if r["part"] == "refs"]
    if rf:
        out += [
            "## Seeing the claims: R claim refs on the remote (medians)",
            "",
            table(
                rf,
                [
                    ("transport", "transport"),
                    ("claim refs", "claim_refs"),
                    ("ls-remote of the claims ms", "ls_remote_claims_ms"),
                    ("fetch of the session ref ms", "fetch_session_ms"),
                ],
            ),
            "",
        ]
    rl = [r for r in recs if r["part"] == "real"]
    if rl:
        out += [
            "## git tlv4 worker --remote (real tool)",
            "",
            "Agent `builtin`: no agent time; `think-agent`: a `command` agent sleeping uniform "
            "[0.5, 1.5] x think ms per task. Rejections/event: refused pushes of the session ref "
            "(CAS) per event written; claims refused/task: claims another worker took first "
            "(the protocol with claim refs only). ok: every task completed exactly once, the "
            "session completed, fsck --strict clean, no refs left under refs/tlv4/leases/<SID>/, "
            "every worker exited 0 "
            "(think points: and every task's agent file merged).",
            "",
            table(
                rl,
                [
                    ("binary", lambda r: r.get("binary")),
                    ("transport", "transport"),
                    ("N", "workers"),
                    ("think ms", lambda r: f"{r.get('think_ms', 0):g}"),
                    ("agent s (mean)", lambda r: r.get("agent_s_mean")),
                    ("tasks", lambda r: f"{r['tasks_done']}/{r['tasks_total']}"),
                    ("wall s", "wall_s"),
                    ("tasks/s", "tasks_per_s"),
                    ("events", "events_written"),
                    ("session events/s", "session_events_per_s"),
                    ("CAS rejections", "cas_rejections"),
                    ("rejections/event", "rejections_per_event"),
                    ("claims taken", lambda r: r.get("claims_taken")),
                    ("claims refused/task", lambda r: r.get("claim_refusals_per_task")),
                    ("batches", lambda r: r.get("batches")),
                    ("turn waits/event", lambda r: r.get("turn_waits_per_event")),
                    ("fetches/event", "fetches_per_event"),
                    ("fetch ms (mean)", "fetch_ms_mean"),
                    ("push ms (mean)", "push_ms_mean"),
                    ("exit codes", lambda r: ",".join(str(c) for c in r["worker_exit_codes"])),
                    ("claims left", lambda r: r.get("claims_left")),
                    ("ok", real_ok),
                ],
            ),
            "",
        ]
    pr = new_base(recs)
    if pr:
        out.append(pr)
    r = ratios(recs) if with_ratios else ""
    if r:
        out.append(r)
    return "\n".join(out)


def real_ok(r):
    """"yes" when a real run's checks all hold (records of older runs have fewer checks)."""
    if "ok" in r:
        return "yes" if r["ok"] else "NO"
    good = r["server_fsck_ok"] and r["session_completed"] and not r["completed_twice"]
    return "yes" if good else "NO"


def new_base(recs):
    """The new binary against the base one at each point of a paired real run."""
    pts = {}
    for r in recs:
        if r["part"] == "real" and "point" in r:
            pts.setdefault(r["point"], {})[r.get("binary", "new")] = r
    rows = []
    for i in sorted(pts):
        new, base = pts[i].get("new"), pts[i].get("base")
        if not (new and base):
            continue
        rows.append(
            {
                "transport": new["transport"],
                "workers": new["workers"],
                "think_ms": f"{new.get('think_ms', 0):g}",
                "first": "new" if new.get("order", 0) == 0 else "base",
                "tasks": f"{new['tasks_done']}/{base['tasks_done']}/{new['tasks_total']}",
                "new": new["tasks_per_s"],
                "base": base["tasks_per_s"],
                "ratio": round(new["tasks_per_s"] / base["tasks_per_s"], 2)
                if base["tasks_per_s"]
                else None,
                "new_rej": new["rejections_per_event"],
                "base_rej": base["rejections_per_event"],
                "new_refused": new.get("claim_refusals_per_task"),
                "ok": f"{real_ok(new)}/{real_ok(base)}",
            }
        )
    if not rows:
        return ""
    return "\n".join(
        [
            "## New binary / base binary (same point, run one after the other)",
            "",
            table(
                rows,
                [
                    ("transport", "transport"),
                    ("N", "workers"),
                    ("think ms", "think_ms"),
                    ("first", "first"),
                    ("tasks new/base/of", "tasks"),
                    ("new tasks/s", "new"),
                    ("base tasks/s", "base"),
                    ("new / base", "ratio"),
                    ("new rejections/event", "new_rej"),
                    ("base rejections/event", "base_rej"),
                    ("new claims refused/task", "new_refused"),
                    ("ok new/base", "ok"),
                ],
            ),
            "",
        ]
    )


def ratios(recs):
    """The real worker against the simulation of design A at the same transport and N, and
    its event round trip at N = 1 against a plain push (from the same records)."""
    real = [
        r
        for r in recs
        if r["part"] == "real" and r.get("binary", "new") == "new" and not r.get("think_ms")
    ]
    sim = {
        (r["transport"], r["workers"]): r
        for r in recs
        if r["part"] == "contention" and r["design"] == "A"
    }
    plain = {r["transport"]: r for r in recs if r["part"] == "roundtrip"}
    rows = []
    for r in real:
        a = sim.get((r["transport"], r["workers"]))
        rows.append(
            {
                "transport": r["transport"],
                "workers": r["workers"],
                "real": r["tasks_per_s"],
                "sim": a and a["tasks_per_s"],
                "ratio": a and round(r["tasks_per_s"] / a["tasks_per_s"], 2),
                "real_rej": r["rejections_per_event"],
                "sim_rej": a and a["rejections_per_event"],
                "tasks": f"{r['tasks_done']}/{a['tasks_done'] if a else '–'}",
            }
        )
    out = []
    if sim and rows:
        out += [
            "## Real worker / simulated design A (same transport and N)",
            "",
            table(
                rows,
                [
                    ("transport", "transport"),
                    ("N", "workers"),
                    ("tasks real/A", "tasks"),
                    ("real tasks/s", "real"),
                    ("design A tasks/s", "sim"),
                    ("real / A", "ratio"),
                    ("real rejections/event", "real_rej"),
                    ("A rejections/event", "sim_rej"),
                ],
            ),
            "",
        ]
    rt = []
    for r in real:
        p = plain.get(r["transport"])
        if r["workers"] != 1 or not p:
            continue
        per_event = 1000 * r["wall_s"] / max(1, r["events_written"])
        rt.append(
            {
                "transport": r["transport"],
                "plain": p["plain_push_p50_ms"],
                "sim_claim": p["claim_rt_p50_ms"],
                "push": r["push_ms_mean"],
                "event": round(per_event, 1),
                "push_ratio": round(r["push_ms_mean"] / p["plain_push_p50_ms"], 2),
                "event_ratio": round(per_event / p["plain_push_p50_ms"], 2),
            }
        )
    if rt:
        out += [
            "## Real claim round trip / plain push (N = 1)",
            "",
            table(
                rt,
                [
                    ("transport", "transport"),
                    ("plain push p50 ms", "plain"),
                    ("simulated claim p50 ms", "sim_claim"),
                    ("real push mean ms", "push"),
                    ("real event ms (wall / events)", "event"),
                    ("real push / plain", "push_ratio"),
                    ("real event / plain", "event_ratio"),
                ],
            ),
            "",
        ]
    return "\n".join(out)


def compact(paths):
    """The tables of docs/remote.md §5 from results files: fewer columns than summary()."""
    recs = [json.loads(line) for p in paths for line in open(p)]
    out = []
    c = [r for r in recs if r["part"] == "contention"]
    if c:
        out.append(
            table(
                c,
                [
                    ("transport", "transport"),
                    ("design", "design"),
                    ("N", "workers"),
                    ("tasks done", lambda r: f"{r['tasks_done']}/{r['tasks_total']}"),
                    ("tasks/s", "tasks_per_s"),
                    ("session events/s", "session_events_per_s"),
                    ("rejections / event", "rejections_per_event"),
                    ("event p50 / p95 ms", lambda r: f"{r['event_p50_ms']} / {r['event_p95_ms']}"),
                    ("claim p50 / p95 ms", lambda r: f"{r['claim_p50_ms']} / {r['claim_p95_ms']}"),
                    ("claim collisions", "claim_collisions"),
                    ("abandoned", "workers_abandoned"),
                    ("transport errors", "errors"),
                    ("load 1 min after", lambda r: r["load_after"][0]),
                ],
            )
        )
    for part in ("roundtrip", "history", "refs", "real"):
        rows = [r for r in recs if r["part"] == part]
        if rows:
            out.append(
                summary(rows, {k: "" for k in META_KEYS}, with_ratios=False).split("\n\n", 2)[2]
            )
    r = ratios(recs)
    if r:
        out.append(r)
    return "\n\n".join(out)


META_KEYS = ("started", "git", "python", "cpus", "load_start", "load_end", "total_s")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", default="contention,roundtrip,history,refs,real")
    ap.add_argument("--refs", default="0,100,1000,5000", help="claim refs on the remote, for part refs")
    ap.add_argument("--plan", default="1:40,3:20,8:10,32:4,100:2", help="N:K,...")
    ap.add_argument("--designs", default="A,B,B4", help="designs over git daemon")
    ap.add_argument("--file-designs", default="A,B", help="designs over file://")
    ap.add_argument("--transports", default="daemon,file")
    ap.add_argument("--cap", type=float, default=10.0, help="no new task after SECS; an event still retrying at 2*SECS is abandoned")
    ap.add_argument("--think-ms", type=float, default=0.0, help="agent time per task: uniform in [0.5, 1.5] * MS")
    ap.add_argument("--backoff-ms", type=float, default=0.0, help="0: retry at once; else jittered exponential backoff base")
    ap.add_argument("--rt-reps", type=int, default=30)
    ap.add_argument("--history", default="100,1000,5000")
    ap.add_argument("--history-reps", type=int, default=5)
    ap.add_argument("--tlv4", default=os.environ.get("TLV4_BIN"), help="git-tlv4 binary for the real part")
    ap.add_argument(
        "--tlv4-base",
        default=os.environ.get("TLV4_BASE_BIN"),
        metavar="BIN",
        help="a second git-tlv4 binary (today's protocol): each real point runs it and --tlv4 in turn, each on its own server",
    )
    ap.add_argument("--real-tasks", type=int, default=None, help="tasks of a builtin-agent real point (24; --quick 6)")
    ap.add_argument("--real-workers", default=None, help="worker counts of the real part, builtin agent (1,3,8; --quick 1,3)")
    ap.add_argument(
        "--real-think-ms",
        type=float,
        default=0.0,
        metavar="MS",
        help="add real points with agent time: a command agent sleeping uniform [0.5, 1.5] * MS per task",
    )
    ap.add_argument("--real-think-workers", default=None, help="worker counts of the think points (8,32; --quick 3)")
    ap.add_argument("--real-think-tasks", type=int, default=None, help="tasks of a think point (default 4 * N)")
    ap.add_argument("--real-only", action="store_true", help="only the real part (same as --parts real)")
    ap.add_argument("--real-timeout", type=float, default=300.0)
    ap.add_argument(
        "--paired",
        action="store_true",
        help="with --tlv4: design A and the real worker in turn at each N:K of --plan (then the roundtrip part if asked)",
    )
    ap.add_argument("--quick", action="store_true", help="a small plan, to check the script")
    ap.add_argument("--out")
    ap.add_argument("--tables", nargs="+", metavar="JSONL", help="print the compact tables of results files, run nothing")
    a = ap.parse_args()
    if a.tables:
        print(compact(a.tables))
        return
    if a.quick:
        a.plan, a.cap, a.rt_reps, a.history, a.history_reps = "1:6,3:4", 5.0, 5, "100", 2
        a.refs = "100"
    defaults = ("1,3", 6, "3") if a.quick else ("1,3,8", 24, "8,32")
    a.real_workers = a.real_workers or defaults[0]
    a.real_tasks = a.real_tasks or defaults[1]
    a.real_think_workers = a.real_think_workers or defaults[2]
    if a.real_only:
        a.parts = "real"
    parts = set(a.parts.split(","))
    started = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    out = a.out or os.path.join(here, "results", f"{started}.jsonl")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    root = tempfile.mkdtemp(prefix="tlv4-contention-")
    git = Git(root)
    meta = {
        "started": started,
        "git": git.run(["--version"]).stdout.decode().split()[-1],
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_start": loadavg(),
        "argv": sys.argv[1:],
        "tlv4": a.tlv4 and os.path.abspath(a.tlv4),
        "tlv4_base": a.tlv4_base and os.path.abspath(a.tlv4_base),
    }
    t_start = time.monotonic()
    recs = []

    def emit(rec):
        recs.append(rec)
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)

    try:
        point = 0
        if a.paired:
            # Design A and the real worker one right after the other at each N, so that both
            # see the same load on a shared machine.
            plan = [tuple(int(x) for x in p.split(":")) for p in a.plan.split(",")]
            for transport in a.transports.split(","):
                for n, k in plan:
                    emit(contention_run(git, root, transport, "A", n, k, a.cap, 0.0, 0.0))
                    for rec in real_points(
                        git, root, a.tlv4, a.tlv4_base, [(transport, n, a.real_tasks, 0.0)],
                        a.real_timeout, first=point,
                    ):
                        emit(rec)
                    point += 1
            parts = {"roundtrip"} & parts
        if "contention" in parts:
            plan = [tuple(int(x) for x in p.split(":")) for p in a.plan.split(",")]
            for transport in a.transports.split(","):
                designs = a.designs if transport == "daemon" else a.file_designs
                for design in designs.split(","):
                    for n, k in plan:
                        if design == "B4":
                            k = max(k, 8)  # at least one full batch per worker
                        emit(
                            contention_run(
                                git, root, transport, design, n, k, a.cap, a.think_ms, a.backoff_ms
                            )
                        )
        if "roundtrip" in parts:
            for transport in a.transports.split(","):
                emit(roundtrip(git, root, transport, a.rt_reps))
        if "history" in parts:
            sizes = [int(x) for x in a.history.split(",")]
            for transport in a.transports.split(","):
                for rec in history(git, root, transport, sizes, a.history_reps):
                    emit(rec)
        if "refs" in parts:
            counts = [int(x) for x in a.refs.split(",")]
            for transport in a.transports.split(","):
                for rec in many_refs(git, root, transport, counts, a.history_reps):
                    emit(rec)
        if "real" in parts:
            if a.tlv4:
                transports = a.transports.split(",")
                points = [
                    (t, int(n), a.real_tasks, 0.0)
                    for t in transports
                    for n in a.real_workers.split(",")
                    if n and int(n) > 0
                ]
                agent = None
                if a.real_think_ms > 0:
                    agent = think_agent(root)
                    points += [
                        (t, int(n), a.real_think_tasks or 4 * int(n), a.real_think_ms)
                        for t in transports
                        for n in a.real_think_workers.split(",")
                        if n and int(n) > 0
                    ]
                for rec in real_points(
                    git, root, a.tlv4, a.tlv4_base, points, a.real_timeout, agent, first=point
                ):
                    emit(rec)
            else:
                print("real: skipped (no --tlv4 BIN / TLV4_BIN)", file=sys.stderr)
    finally:
        meta["load_end"] = loadavg()
        meta["total_s"] = round(time.monotonic() - t_start, 1)
        with open(out, "a") as f:
            f.write(json.dumps({"part": "meta", **meta}) + "\n")
        text = summary(recs, meta)
        with open(os.path.splitext(out)[0] + ".md", "w") as f:
            f.write(text + "\n")
        print(text)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
