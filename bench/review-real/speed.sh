#!/bin/sh
# Speed of `git tlv4 review` on a real ~30,000-changed-line range, against `git diff --stat`
# on the same range in the same clone, and its fixed start-up cost.
#
# Usage: speed.sh GIT_TLV4 [CLONE] [A] [B] [RUNS]
#   defaults: CLONE=/tmp/corpus/ripgrep, A=13.0.0, B=14.0.0 (144 files, +20961 -10390 lines:
#   31,351 changed lines), RUNS=15.
# The commands run interleaved (one of each per round, after 2 warm-up rounds), so a machine
# that is busy with other work slows all of them alike; the figure is the median per command
# and the ratio of medians. Output of the commands is discarded. With hyperfine installed
# (`apt-get install -y hyperfine`) and HYPERFINE=1, hyperfine's own figures follow.
#
# Today's reviewer also writes a note (refs/notes/tlv4-review) on every run; that cost is in
# its figures. A reviewer that is read-only by default does not pay it.
set -eu
BIN=$(realpath "$1")
CLONE=${2:-/tmp/corpus/ripgrep}
A=${3:-13.0.0}
B=${4:-14.0.0}
RUNS=${5:-15}
cd "$CLONE"
echo "range $A..$B in $CLONE: $(git diff --shortstat "$A" "$B")"
export BIN A B RUNS
python3 - <<'EOF'
import os, statistics, subprocess, time
b, a, z, runs = os.environ["BIN"], os.environ["A"], os.environ["B"], int(os.environ["RUNS"])
cmds = {
    "git diff --stat --patience": ["git", "diff", "--stat", "--patience", a, z],
    "review --patience --json": [b, "review", f"{a}..{z}", "--patience", "--json"],
    "git diff --stat (myers)": ["git", "diff", "--stat", a, z],
    "review --json (myers)": [b, "review", f"{a}..{z}", "--json"],
    "git rev-parse HEAD": ["git", "rev-parse", "HEAD"],
    "review HEAD..HEAD --json": [b, "review", "HEAD..HEAD", "--json"],
    "review --help": [b, "review", "--help"],
}
env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
times = {k: [] for k in cmds}
for i in range(runs + 2):
    for k, c in cmds.items():
        t = time.perf_counter()
        subprocess.run(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        if i >= 2:
            times[k].append(time.perf_counter() - t)
med = {k: statistics.median(v) * 1000 for k, v in times.items()}
for k, v in med.items():
    print(f"  {k:28} median {v:8.1f} ms  (min {min(times[k]) * 1000:.1f}, max {max(times[k]) * 1000:.1f}, {runs} runs)")
print(f"ratio review/diff, patience: {med['review --patience --json'] / med['git diff --stat --patience']:.2f}x")
print(f"ratio review/diff, myers:    {med['review --json (myers)'] / med['git diff --stat (myers)']:.2f}x")
print(f"start-up: review HEAD..HEAD {med['review HEAD..HEAD --json']:.1f} ms, git rev-parse HEAD "
      f"{med['git rev-parse HEAD']:.1f} ms, difference {med['review HEAD..HEAD --json'] - med['git rev-parse HEAD']:.1f} ms "
      f"(process start and argument parsing alone, review --help: {med['review --help']:.1f} ms)")
EOF
if [ "${HYPERFINE:-0}" = 1 ] && command -v hyperfine >/dev/null; then
    hyperfine -N -w 2 -r "$RUNS" \
        "git diff --stat --patience $A $B" "$BIN review $A..$B --patience --json" \
        "git diff --stat $A $B" "$BIN review $A..$B --json" \
        "git rev-parse HEAD" "$BIN review HEAD..HEAD --json" "$BIN review --help"
fi
