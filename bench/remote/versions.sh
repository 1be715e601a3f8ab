#!/bin/sh
# Two versions on one session (docs/remote.md §5.7): a git-tlv4 whose workers claim through
# the session (protocol 1, BASE) starts a session of 24 tasks over file://; a worker of
# protocol 2 (NEW) starts on it, and 0.7 s later a worker of BASE. Prints both workers'
# closing lines and what the server holds: the session marked format 2, the older worker
# refused with "upgrade git-tlv4", every task completed once, no lease left, fsck clean.
#   sh bench/remote/versions.sh BASE_BIN NEW_BIN
BASE=$(realpath "$1"); NEW=$(realpath "$2")
BENCH=$(dirname "$(realpath "$0")")
DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT; cd "$DIR"
export HOME=$DIR/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_AUTHOR_NAME=s GIT_AUTHOR_EMAIL=s@x.invalid GIT_COMMITTER_NAME=s GIT_COMMITTER_EMAIL=s@x.invalid
mkdir -p $HOME
git init -q --bare -b main server.git
git init -q -b main origin
mkdir -p origin/.tlv4/specs
python3 -c "import sys; sys.path.insert(0,'$BENCH'); import contention; print(contention.wide_pipeline(24))" > origin/.tlv4/specs/pipelines.toml
echo bench > origin/README.md
(cd origin && git add -A && git commit -qm initial && git remote add origin file://$DIR/server.git && git push -q origin main && $BASE trust >/dev/null)
SID=$(cd origin && $BASE start --remote origin --no-run --pipeline wide --yes --completion keep bench 2>/dev/null)
for i in 1 2; do git clone -q file://$DIR/server.git w$i; done
(cd w1 && $BASE trust >/dev/null); (cd w2 && $NEW trust > /dev/null)
(cd w2 && $NEW --session $SID worker --remote origin --max-parallel 1 --lease 3 --skew 0.5 2> ../log2; echo "new exit $?" >> ../log2) &
sleep 0.7
(cd w1 && $BASE --session $SID worker --remote origin --max-parallel 1 --lease 3 --skew 0.5 2> ../log1; echo "base exit $?" >> ../log1) &
wait
echo "--- base worker"; grep -v "started\|completed in" log1 | cut -c1-400
echo "--- new worker"; grep -v "started\|completed in" log2 | cut -c1-400
echo "--- server"
git --git-dir server.git log --first-parent --format='%(trailers:key=Tlv4-Task,valueonly,separator=)|%(trailers:key=Tlv4-Event,valueonly,separator=)' refs/heads/tlv4/$SID | sort | uniq -c | sort -rn | head -8
echo "completed once each: $(git --git-dir server.git log --first-parent --format='%(trailers:key=Tlv4-Task,valueonly,separator=)|%(trailers:key=Tlv4-Event,valueonly,separator=)' refs/heads/tlv4/$SID | grep '|task_completed' | sort | uniq -d | wc -l) duplicates, $(git --git-dir server.git log --first-parent --format='%(trailers:key=Tlv4-Event,valueonly,separator=)' refs/heads/tlv4/$SID | grep -c '^task_completed') completions"
git --git-dir server.git show refs/heads/tlv4/$SID:.tlv4/sessions/$SID/session.toml | grep -E "schema|status"
echo "leases left: $(git --git-dir server.git for-each-ref refs/tlv4/leases/ | wc -l)"; git --git-dir server.git fsck --strict --no-progress && echo fsck ok
