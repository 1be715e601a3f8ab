#!/usr/bin/env bash
# Every document the builtin agent writes, on a fixed set of repositories and requests, into
# OUT/<case>/: what issue 15's refactors of the builtin agent compare before and after
# (`diff -r OUT-before OUT-after` must be empty unless the change is meant).
#
#   bench/arch/builtin-docs.sh BIN OUT [MIRRORS=/work/.mirror]
#
# BIN is a built git-tlv4. The cases: an empty repository, the demo's Rust sample, and four
# public projects at a fixed tag (flask, ripgrep, express, cobra), cloned from the snapshots
# the library's `fetch` left under MIRRORS (a missing one is skipped with a note). Identity
# and clock are fixed, so two runs of one binary give byte-identical output. Each case runs
# one pipeline unattended (`start --yes --completion keep`) and keeps the session's folder
# (documents, task files, run records less their durations), what the session wrote outside
# it, and what the command printed.
set -euo pipefail
BIN=$(realpath "$1")
OUT=$(realpath -m "$2")
MIRRORS=${3:-/work/.mirror}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

export HOME=$WORK/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$WORK/home/.gitconfig
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@tlv4.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@tlv4.invalid
export GIT_AUTHOR_DATE='2026-12-01T12:00:00Z' GIT_COMMITTER_DATE='2026-12-01T12:00:00Z'
export TERM=dumb NO_COLOR=1
mkdir -p "$HOME"; : > "$GIT_CONFIG_GLOBAL"

# case NAME REPO PIPELINE TEXT
run_case() {
  local name=$1 repo=$2 pipeline=$3 text=$4
  local dest=$OUT/$name
  rm -rf "$dest"; mkdir -p "$dest"
  local code=0 round
  (cd "$repo" && "$BIN" start --yes --completion keep --pipeline "$pipeline" "$text") \
    >"$dest/stdout" 2>"$dest/stderr" || code=$?
  # A pause for the user (exit 5: a discussion that diverged, a gate) is approved, as a
  # person in a hurry would, until the session ends.
  for round in 1 2 3 4 5 6; do
    [ "$code" -eq 5 ] || break
    code=0
    (cd "$repo" && "$BIN" approve --completion keep) >>"$dest/stdout" 2>>"$dest/stderr" || code=$?
  done
  echo "exit $code" >>"$dest/stdout"
  local branch
  branch=$(git -C "$repo" for-each-ref --format='%(refname)' 'refs/heads/tlv4/' | grep -v '\.' | head -1)
  if [ -z "$branch" ]; then echo "$name: no session" >&2; return; fi
  local sid=${branch#refs/heads/tlv4/}
  # The session's folder (every document, task file and run record) and what the session
  # wrote outside it; run durations are the one thing that differs from run to run.
  git -C "$repo" archive "$branch" ".tlv4/sessions/$sid" | tar -x -C "$dest"
  git -C "$repo" diff --name-only main "$branch" -- ':!.tlv4' | while read -r f; do
    mkdir -p "$dest/outside/$(dirname "$f")"; git -C "$repo" show "$branch:$f" >"$dest/outside/$f"
  done
  mv "$dest/.tlv4/sessions/$sid" "$dest/session"; rm -rf "$dest/.tlv4"
  find "$dest/session/runs" -name usage.json -delete 2>/dev/null || true
  normalise "$repo" "$dest"
  # Lines that name a temporary directory are the only ones that differ by run.
  sed -i "s#$WORK#WORK#g" "$dest/stdout" "$dest/stderr"
  echo "$name: $(find "$dest" -type f | wc -l) files"
}

# normalise REPO DEST: run times and the ids of commits (which hold run times) become
# placeholders in every file of DEST, and so do the blob ids of run records (a review report
# names commits); the files themselves are compared whole.
normalise() {
  git -C "$1" rev-list --all >"$WORK/commits"
  python3 - "$WORK/commits" "$2" <<'PY'
import os, re, sys
commits = set(open(sys.argv[1]).read().split())
def mask(m):
    w = m.group(0)
    return "<commit>" if any(c.startswith(w) for c in commits) else w
for dp, _, fs in os.walk(sys.argv[2]):
    for f in fs:
        p = os.path.join(dp, f)
        try:
            t = open(p, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        t = re.sub(r'"(seconds|duration_ms|elapsed[a-z_]*)": [0-9.e-]+', r'"\1": <time>', t)
        t = re.sub(r"completed in [0-9.]+s", "completed in <time>", t)
        t = re.sub(r"\b[0-9a-f]{7,40}\b", mask, t)
        if "/runs/" in p:  # a run record's blob ids: of files that hold commit ids
            t = re.sub(r"\b[0-9a-f]{40}\b", "<blob>", t)
        if f == "stderr":  # tasks that run side by side finish in either order
            t = "".join(sorted(t.splitlines(keepends=True)))
        open(p, "w", encoding="utf-8").write(t)
PY
}

# clone NAME MIRROR TAG: a fresh clone at TAG, or nothing when the mirror is missing.
clone() {
  local name=$1 mirror=$2 tag=$3 src=$MIRRORS/$2/repo
  [ -d "$src/.git" ] && src=$src/.git
  if [ ! -d "$src" ]; then echo "$name: skipped, no mirror $mirror (fetch github:${mirror/+//})" >&2; return 1; fi
  git clone -q "$src" "$WORK/$name" && git -C "$WORK/$name" checkout -q -B main "$tag"
}

git init -q -b main "$WORK/empty" && git -C "$WORK/empty" commit -q --allow-empty -m init
run_case empty-spec "$WORK/empty" spec-only "Write requirements for note search"

"$BIN" demo --dir "$WORK/demo" >/dev/null 2>&1 || true
rm -rf "$WORK/demo2"; mkdir -p "$WORK/demo2"
git -C "$WORK/demo" archive main | tar -x -C "$WORK/demo2"
git init -q -b main "$WORK/demo2" && git -C "$WORK/demo2" add -A && git -C "$WORK/demo2" commit -qm sample
run_case rust-sample-full "$WORK/demo2" full-lifecycle "Add a search command that finds notes by word, with tests"

if clone flask pallets+flask 3.0.0; then
  run_case flask-full "$WORK/flask" full-lifecycle "Add rate limiting to the login endpoint and store attempts in SQL"
fi
if clone ripgrep BurntSushi+ripgrep 14.0.0; then
  run_case ripgrep-spec "$WORK/ripgrep" spec-only "Support a --max-depth per glob and document it in the man page"
fi
if clone express expressjs+express 4.18.2; then
  run_case express-full "$WORK/express" full-lifecycle "Add a health check endpoint with metrics and authentication"
fi
if clone cobra spf13+cobra v1.8.0; then
  run_case cobra-impl "$WORK/cobra" impl-only "Generate shell completions for nushell; refactor the completion code"
fi
