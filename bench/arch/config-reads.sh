#!/usr/bin/env bash
# How many times one command reads the repository's configuration: opens of `.tlv4.toml`
# for reading, and `git config` runs that read `tlv4.*` values (the user's part of the
# configuration), counted with strace over every thread and child.
#
#   bench/arch/config-reads.sh BIN
#
# Runs, in a fresh repository with a trusted `.tlv4.toml` (and again in an untrusted one,
# on a pseudo-terminal, where `start` offers to trust the repository's tests): `start`
# through the whole full-lifecycle pipeline on the builtin agent, `resume`, `status` and
# `fork`. Prints one line per command.
set -euo pipefail
BIN=$(realpath "$1")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export HOME=$WORK/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$WORK/home/.gitconfig
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@tlv4.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@tlv4.invalid
mkdir -p "$HOME"; : >"$GIT_CONFIG_GLOBAL"

repo() {
  git init -q -b main "$1"
  printf '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n' >"$1/Cargo.toml"
  mkdir -p "$1/src" && echo 'fn main() {}' >"$1/src/main.rs"
  printf '[session]\nmax_parallel = 2\n' >"$1/.tlv4.toml"
  git -C "$1" add -A && git -C "$1" commit -qm init
}

# tally LABEL: what the trace shows of the configuration being read.
tally() {
  local ok
  ok=$(grep 'execve(' "$WORK/trace" | grep ') = 0$' || true)
  printf '%-36s %2s .tlv4.toml, %2s tlv4.*, %2s tlv4.trusted, %2s tlv4.hooksPath\n' "$1" \
    "$(grep -c '\.tlv4\.toml", O_RDONLY' "$WORK/trace" || true)" \
    "$(grep -c '"--get-regexp", "^tlv4' <<<"$ok" || true)" \
    "$(grep -c '"tlv4.trusted"' <<<"$ok" || true)" \
    "$(grep -c '"tlv4.hooksPath"' <<<"$ok" || true)"
}

# count LABEL DIR ARGS...: the command's reads of the configuration.
count() {
  local label=$1 dir=$2; shift 2
  (cd "$dir" && strace -f -qq -s 200 -e trace=openat,execve -o "$WORK/trace" "$@" \
    >/dev/null 2>&1 </dev/null) || true
  tally "$label"
}

echo "reads of: .tlv4.toml (opened), git config of tlv4.* / tlv4.trusted / tlv4.hooksPath (runs)"
repo "$WORK/a"
(cd "$WORK/a" && "$BIN" trust >/dev/null 2>&1)
count "start (full-lifecycle, to the gate)" "$WORK/a" "$BIN" start --completion keep --pipeline full-lifecycle "add a search command"
count "approve (the gate, to the end)" "$WORK/a" "$BIN" approve --completion keep
count "status" "$WORK/a" "$BIN" status --no-pager
count "fork" "$WORK/a" "$BIN" fork --no-run

repo "$WORK/b"
# On a terminal, in a repository that is not trusted, start offers to trust the tests
# (answered no).
(cd "$WORK/b" && echo n | script -qec "strace -f -qq -s 200 -e trace=openat,execve -o $WORK/trace $BIN start --completion keep --pipeline impl-only 'add a search command'" /dev/null >/dev/null 2>&1) || true
tally "start (impl-only, untrusted, tty)"
