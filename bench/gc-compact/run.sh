#!/usr/bin/env bash
# What one full-lifecycle session adds to a repository, and what `gc` compaction of its
# archive gives back. Every role runs on the fake Claude Code CLI of the tests (its answers
# are the sizes of short real runs; the prompts are the ones the tool writes for real).
# Usage: bench/gc-compact/run.sh [BIN]   (BIN: the git-tlv4 binary, default target/release)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/target/release/git-tlv4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=b GIT_AUTHOR_EMAIL=b@example.com \
  GIT_COMMITTER_NAME=b GIT_COMMITTER_EMAIL=b@example.com
mkdir -p "$HOME" "$work/repo"
cd "$work/repo"
git init -q -b main
mkdir src && echo 'pub fn f() {}' > src/lib.rs
git add . && git commit -qm init
cat > .tlv4.toml <<TOML
[agents.cc]
driver = "claude"
program = "$here/tests/fixtures/agents/fake-claude"
[roles]
default = "cc"
planner = "builtin"   # the fake answers no plan a real planner would
TOML
git add .tlv4.toml && git commit -qm config
"$bin" trust >/dev/null
size() {
  git gc -q --prune=now
  git count-objects -v | awk '/^size(-pack)?:/ {s += $2} END {print s}'
}
before=$(size)
# Every pause (a gate, a checkpoint, a divergent discussion) is approved, as a user would.
rc=0
"$bin" start --pipeline full-lifecycle --yes --completion archive "Add full-text search to notes" >/dev/null 2>"$work/err" || rc=$?
pauses=0
while [ "$rc" = 5 ] && [ "$pauses" -lt 40 ]; do
  pauses=$((pauses + 1)); rc=0
  "$bin" approve >/dev/null 2>"$work/err" || rc=$?
done
[ "$rc" = 0 ] || { grep -v "^  " "$work/err" | tail -20; exit 1; }
sid=$(git for-each-ref --format='%(refname:lstrip=3)' refs/tlv4/archive/)
after=$(size)
runs=$(git ls-tree -r --name-only "refs/tlv4/archive/$sid" -- ".tlv4/sessions/$sid/runs" | grep -c '/result.json$')
sizes() { git ls-tree -r -l "refs/tlv4/archive/$sid" -- ".tlv4/sessions/$sid/runs" | awk -v re="$1" '$5 ~ re {s += $4} END {print s + 0}'; }
records=$(sizes '(prompt.md|answer.txt|transcript.txt)$')
prompts=$(sizes 'prompt.md$')
events=$(git rev-list --first-parent --count "refs/tlv4/archive/$sid")
t0=$(date +%s.%N)
"$bin" gc --compact-after 0 2>&1 | grep compact || true
t1=$(date +%s.%N)
compacted=$(size)
git fsck --strict --no-progress >/dev/null
echo "session $sid: $runs agent runs, $events commits, $pauses pauses approved"
echo "prompts, answers and transcripts at the tip: $((records / 1024)) KiB uncompressed ($((prompts / 1024)) KiB of prompts)"
echo "repository objects: before ${before} KiB, after the session ${after} KiB (+$((after - before)) KiB), compacted ${compacted} KiB (+$((compacted - before)) KiB)"
added=$((after - before)); left=$((compacted - before))
echo "compaction gives back $((added - left)) KiB of the $added KiB the session added ($(( (added - left) * 100 / added ))%)"
echo "gc compaction took $(echo "$t1 - $t0" | bc) s"
