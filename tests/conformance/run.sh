#!/usr/bin/env bash
# Conformance test against the REAL agent CLIs: installs Claude Code, Codex, Gemini CLI,
# Qwen Code and OpenCode from npm and Aider from PyPI, and drives each through
# `git tlv4 start` in a throwaway repository, against the scripted model server next to this
# script (mock_model.py). Opt-in: set TLV4_REAL_AGENTS=1.
#
# Everything after the install runs inside `unshare -n` (a network namespace with only
# `lo`), so no model traffic can leave 127.0.0.1. The npm registry and PyPI are the only
# network used, and only to install.
#
# Each CLI runs a few times (see `scenarios` below: the plain script; its first turn's
# stream cut short; for Codex also a model outside its catalog), each time in a fresh
# repository with a one-task pipeline and a fresh mock. Per run it checks with git: the
# session completed with the summary of the model's result block, the file the model asked
# the CLI to write is in the session tip's tree and in the task snapshot, the snapshot
# changes nothing else (no history or cache files of the CLI), the user's checkout is
# untouched, the task's completion is a merge commit (2 parents, the second the snapshot),
# and `git fsck --strict` is clean. A CLI whose install fails is a FAIL with the reason.
# The summary says PASS/FAIL per CLI (with its version, install time and size) and per run.
#
# Environment:
#   TLV4_REAL_AGENTS=1          run at all (otherwise: print "skipped", exit 0)
#   TLV4_CONFORMANCE_CACHE      where the CLIs are installed, one directory each (default
#                               ~/.cache/git-tlv4-conformance; reused when present)
#   TLV4_CONFORMANCE_CLIS       which CLIs to run (default all six: "claude codex gemini qwen
#                               opencode aider")
#   TLV4_CONFORMANCE_KEEP=1     keep the work directory (repositories, mock logs) on success
#                               (it is always kept on failure)
#   TLV4_CONFORMANCE_PYTHON     the Python of Aider's venv (default python3.11, else python3)
#   TLV4_BIN                    a built git-tlv4 to use instead of running `cargo build`
#   CLAUDE_CODE_VERSION / CODEX_VERSION / GEMINI_CLI_VERSION / QWEN_CODE_VERSION /
#   OPENCODE_VERSION / AIDER_VERSION
#                               versions to install (default: what npm / pip picks); a
#                               different one than installed reinstalls
#   CLAUDE_MODEL / CODEX_MODEL / GEMINI_MODEL / QWEN_MODEL / OPENCODE_MODEL / AIDER_MODEL
#                               the model of the plain and reconnect runs (defaults:
#                               claude-sonnet-4-5, gpt-5.5 (a Codex catalog model, which gets
#                               the apply_patch tool), gemini-2.5-pro, qwen3-coder-plus,
#                               mock-model, mock-model)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

say() { printf 'conformance: %s\n' "$*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

ALL_CLIS="claude codex gemini qwen opencode aider"

# What to install for `cli`: "npm PACKAGE[@VERSION] BIN" or "pip REQUIREMENT BIN", BIN
# relative to the CLI's directory in the cache.
package_of() {
  case "$1" in
    claude) echo "npm @anthropic-ai/claude-code${CLAUDE_CODE_VERSION:+@$CLAUDE_CODE_VERSION} node_modules/.bin/claude" ;;
    codex) echo "npm @openai/codex${CODEX_VERSION:+@$CODEX_VERSION} node_modules/.bin/codex" ;;
    gemini) echo "npm @google/gemini-cli${GEMINI_CLI_VERSION:+@$GEMINI_CLI_VERSION} node_modules/.bin/gemini" ;;
    qwen) echo "npm @qwen-code/qwen-code${QWEN_CODE_VERSION:+@$QWEN_CODE_VERSION} node_modules/.bin/qwen" ;;
    opencode) echo "npm opencode-ai${OPENCODE_VERSION:+@$OPENCODE_VERSION} node_modules/.bin/opencode" ;;
    aider) echo "pip aider-chat${AIDER_VERSION:+==$AIDER_VERSION} bin/aider" ;;
  esac
}

# Installs `cli` into $CACHE/<cli> (or reuses what is there: the same package spec, and a
# binary that answers --version), then exports CLI_BIN_<cli>, CLI_VERSION_<cli> and
# CLI_INSTALL_<cli> (how long the install took, and the size), or CLI_ERROR_<cli> with the
# reason it failed.
install_cli() {
  local cli=$1 kind spec bin dir log t0 how version
  read -r kind spec bin < <(package_of "$cli")
  dir="$CACHE/$cli"
  log="$CACHE/$cli.install.log"
  bin="$dir/$bin"
  t0=$SECONDS
  if [[ -x "$bin" && "$(cat "$dir/.tlv4-spec" 2>/dev/null)" == "$spec" ]] \
    && timeout 120 "$bin" --version >/dev/null 2>&1 </dev/null; then
    how="reused"
  else
    say "installing $spec for $cli into $dir"
    rm -f "$dir/.tlv4-spec"
    local ok=1
    case "$kind" in
      npm)
        if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
          echo "npm and node are needed to install $spec" >"$log"
          ok=0
        else
          mkdir -p "$dir"
          # Not --ignore-scripts: Claude Code's and OpenCode's postinstall put their native
          # binaries in place.
          timeout 1200 npm install --prefix "$dir" --no-audit --no-fund --loglevel=warn \
            "$spec" >"$log" 2>&1 </dev/null || ok=0
        fi
        ;;
      pip)
        local py="${TLV4_CONFORMANCE_PYTHON:-}"
        if [[ -z "$py" ]]; then
          py="$(command -v python3.11 || command -v python3)"
        fi
        { [[ -x "$dir/bin/python" ]] || "$py" -m venv "$dir"; } >"$log" 2>&1 </dev/null \
          && timeout 1200 "$dir/bin/python" -m pip install --disable-pip-version-check \
            --no-input -q "$spec" >>"$log" 2>&1 </dev/null \
          || ok=0
        ;;
    esac
    if [[ $ok -eq 1 && ! -x "$bin" ]]; then
      echo "the install put no executable at $bin" >>"$log"
      ok=0
    fi
    if [[ $ok -eq 1 ]] && ! timeout 120 "$bin" --version >>"$log" 2>&1 </dev/null; then
      echo "$bin --version failed" >>"$log"
      ok=0
    fi
    if [[ $ok -eq 0 ]]; then
      local why
      why="$(grep -v '^\s*$' "$log" | tail -n 4 | tr '\n' ' ' | cut -c1-600 || true)"
      say "FAIL: the install of $spec for $cli failed ($log): $why"
      export "CLI_ERROR_$cli=installing $spec failed: $why (log: $log)"
      return 0
    fi
    printf '%s\n' "$spec" >"$dir/.tlv4-spec"
    how="installed in $((SECONDS - t0))s"
  fi
  version="$(timeout 120 "$bin" --version 2>&1 </dev/null | grep -v '^\s*$' | head -n1 || true)"
  export "CLI_BIN_$cli=$bin" "CLI_VERSION_$cli=$version" \
    "CLI_INSTALL_$cli=$how, $(du -sh "$dir" 2>/dev/null | cut -f1) in $dir"
  say "$cli: $version ($how)"
}

# ------------------------------------------------------------------------------------------
# Outside the network namespace: install, build, then re-enter this script under unshare.
# ------------------------------------------------------------------------------------------
if [[ "${1:-}" != "--inner" ]]; then
  if [[ "${TLV4_REAL_AGENTS:-}" != "1" ]]; then
    echo "conformance: skipped (set TLV4_REAL_AGENTS=1 to run the real agent CLIs)"
    exit 0
  fi
  START=$SECONDS
  for tool in git unshare ip timeout python3; do
    command -v "$tool" >/dev/null || die "\`$tool\` is needed and not on PATH"
  done
  CLIS="${TLV4_CONFORMANCE_CLIS:-$ALL_CLIS}"
  for cli in $CLIS; do
    [[ " $ALL_CLIS " == *" $cli "* ]] || die "unknown CLI '$cli' (one of: $ALL_CLIS)"
  done

  CACHE="${TLV4_CONFORMANCE_CACHE:-$HOME/.cache/git-tlv4-conformance}"
  mkdir -p "$CACHE"
  for cli in $CLIS; do
    install_cli "$cli"
  done

  if [[ -n "${TLV4_BIN:-}" ]]; then
    [[ -f "$TLV4_BIN" && -x "$TLV4_BIN" ]] || die "TLV4_BIN=$TLV4_BIN is not an executable"
    TLV4_BIN="$(cd "$(dirname "$TLV4_BIN")" && pwd)/$(basename "$TLV4_BIN")"
  else
    say "building git-tlv4 (cargo build)"
    (cd "$ROOT" && cargo build --quiet --bin git-tlv4) >&2 || die "cargo build failed"
    TLV4_BIN="$ROOT/target/debug/git-tlv4"
  fi

  # A network namespace: as root `unshare -n`; otherwise in a user namespace of our own.
  if unshare -n true 2>/dev/null; then
    NETNS=(unshare -n)
  elif unshare -r -n true 2>/dev/null; then
    NETNS=(unshare -r -n)
  else
    die "cannot create a network namespace (\`unshare -n\` and \`unshare -r -n\` were \
refused: it needs root, or unprivileged user namespaces). The conformance test runs the CLIs \
only where no traffic can leave 127.0.0.1, so it will not run without one."
  fi

  export TLV4_BIN CLIS
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
  die "the network namespace has interfaces other than lo: $(ip -o link show)"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tlv4-conformance.XXXXXX")"
MOCK_PID=""
MOCK_LOG=""
PORT=""
stop_mock() {
  if [[ -n "$MOCK_PID" ]]; then
    kill "$MOCK_PID" 2>/dev/null || true
    wait "$MOCK_PID" 2>/dev/null || true
    MOCK_PID=""
  fi
}
trap stop_mock EXIT

# A fresh mock model server for one run: `start_mock NAME [mock_model.py options]` sets
# PORT and MOCK_LOG; returns non-zero if it does not come up.
start_mock() {
  local name=$1
  shift
  MOCK_LOG="$WORK/$name.mock.log"
  rm -f "$WORK/$name.port"
  python3 "$HERE/mock_model.py" 0 --log "$MOCK_LOG" --port-file "$WORK/$name.port" "$@" \
    >/dev/null 2>"$WORK/$name.mock.stderr" &
  MOCK_PID=$!
  local _
  for _ in $(seq 100); do
    [[ -s "$WORK/$name.port" ]] && break
    kill -0 "$MOCK_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [[ ! -s "$WORK/$name.port" ]]; then
    say "the mock model server did not start: $(cat "$WORK/$name.mock.stderr")"
    stop_mock
    return 1
  fi
  PORT="$(cat "$WORK/$name.port")"
}

# git and git-tlv4 with a clean, fixed environment; `git tlv4` finds git-tlv4 on PATH.
mkdir -p "$WORK/bin" "$WORK/home"
ln -s "$TLV4_BIN" "$WORK/bin/git-tlv4"
export PATH="$WORK/bin:$PATH"
export HOME="$WORK/home"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null LC_ALL=C
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_COMMON_DIR || true

# The pipeline of tests/e2e/common.rs `wide_pipeline(1)`: one executor task.
write_pipeline() {
  mkdir -p "$1/.tlv4/specs"
  cat >"$1/.tlv4/specs/pipelines.toml" <<'EOF'
schema = 1
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
EOF
}

# `[agents.*]` and `[roles]` for `cli` with `model`, pointed at the mock on PORT through
# the preset's `url` (Claude: ANTHROPIC_BASE_URL; Codex: a provider in the isolated
# $CODEX_HOME/config.toml git-tlv4 writes, its key from OPENAI_API_KEY; Gemini:
# GOOGLE_GEMINI_BASE_URL and API-key auth in the isolated settings.json; Qwen:
# --auth-type openai and OPENAI_BASE_URL; OpenCode: an OpenAI-compatible provider in
# OPENCODE_CONFIG_CONTENT; Aider: openai/<model> at --openai-api-base).
agent_config() {
  local cli=$1 model=$2 bin url env
  bin="$(cli_var BIN "$cli")"
  case "$cli" in
    claude)
      url="http://127.0.0.1:$PORT"
      env='ANTHROPIC_API_KEY = "sk-ant-mock", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", CLAUDE_CODE_MAX_RETRIES = "2", API_TIMEOUT_MS = "120000"'
      ;;
    gemini)
      url="http://127.0.0.1:$PORT"
      env='GEMINI_API_KEY = "mock-gemini-key"'
      ;;
    *)
      url="http://127.0.0.1:$PORT/v1"
      env='OPENAI_API_KEY = "sk-mock"'
      ;;
  esac
  cat <<EOF
[agents.$cli]
driver = "$cli"
program = "$bin"
model = "$model"
url = "$url"
timeout = "5m"
env = { $env }
[roles]
executor = "$cli"
EOF
}

# CLI_<what>_<cli> as exported by install_cli, or empty.
cli_var() {
  local name="CLI_$1_$2"
  printf '%s' "${!name:-}"
}

# Shows what there is to see about a failed run.
diagnose() {
  local repo=$1 sid=$2
  say "---- diagnostics ($repo, session ${sid:-?}) ----"
  if [[ -f "$repo.start.out" ]]; then
    say "git tlv4 start printed:"
    cat "$repo.start.out" "$repo.start.err" >&2
  fi
  if [[ -n "$sid" ]]; then
    # The run records of the task: how the CLI was run, and what it printed.
    local f
    for f in $(git -C "$repo" ls-tree -r --name-only "tlv4/$sid" -- ".tlv4/sessions/$sid/runs/IMPL-001" 2>/dev/null | grep '/transcript.txt$'); do
      say "== $f (last 40 lines)"
      git -C "$repo" show "tlv4/$sid:$f" 2>/dev/null | tail -n 40 | cut -c1-2000 >&2 || true
    done
  fi
  say "mock log: $MOCK_LOG (last requests and replies, shortened)"
  tail -n 12 "$MOCK_LOG" 2>/dev/null | cut -c1-600 >&2 || true
}

# One run of `cli` through git-tlv4, against a fresh mock started with the options after
# the model. Every check is explicit: this runs as an `if` condition, where `set -e` does
# not apply.
run_one() {
  local cli=$1 scenario=$2 model=$3
  shift 3
  local name="$cli-$scenario"
  local repo="$WORK/$name"
  local file="conformance-$cli-IMPL-001.txt"
  local sid=""
  fail() {
    say "FAIL [$name]: $*"
    diagnose "$repo" "$sid"
    return 1
  }

  start_mock "$name" "$@" || return 1
  git init -q -b main "$repo" || { fail "git init"; return 1; }
  git -C "$repo" config user.name "Conformance Test" || return 1
  git -C "$repo" config user.email "conformance@example.com" || return 1
  git -C "$repo" config gc.autoDetach false || return 1
  printf '# conformance\n' >"$repo/README.md"
  write_pipeline "$repo"
  agent_config "$cli" "$model" >"$repo/.tlv4.toml"
  git -C "$repo" add -A && git -C "$repo" commit -q -m initial || { fail "initial commit"; return 1; }
  (cd "$repo" && git tlv4 trust) >"$repo.trust.out" 2>&1 \
    || { fail "git tlv4 trust: $(cat "$repo.trust.out")"; return 1; }

  say "[$name] model $model, mock on 127.0.0.1:$PORT: git tlv4 start --pipeline wide ..."
  local t0=$SECONDS rc=0
  (cd "$repo" && timeout 900 git tlv4 start --pipeline wide --yes --completion keep \
    "Conformance: create the file the model asks for") >"$repo.start.out" 2>"$repo.start.err" || rc=$?
  sid="$(cat "$repo.start.out" "$repo.start.err" | grep -o -m1 'TLV4-[A-Za-z0-9-]*' || true)"
  say "[$name] start exited $rc after $((SECONDS - t0))s, session ${sid:-?}"
  [[ -n "$sid" ]] || { fail "no session id in the output of git tlv4 start"; return 1; }
  [[ $rc -eq 0 ]] || { fail "git tlv4 start exited $rc"; return 1; }

  local status state
  status="$(cd "$repo" && git tlv4 --session "$sid" status --json)" \
    || { fail "git tlv4 status --json"; return 1; }
  state="$(printf '%s' "$status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"]["status"])')" \
    || { fail "cannot read the status: $status"; return 1; }
  [[ "$state" == "completed" ]] || { fail "session status is '$state', not completed"; return 1; }
  # The result block of the CLI's final answer reached git-tlv4.
  local summary
  summary="$(printf '%s' "$status" | python3 -c 'import json,sys
print(next((t.get("result") or {}).get("summary", "") for t in json.load(sys.stdin)["tasks"] if t["id"] == "IMPL-001"))')" \
    || { fail "no IMPL-001 in the status: $status"; return 1; }
  [[ "$summary" == "Created $file with one line naming the task" ]] \
    || { fail "the task's summary is not the one of the model's result block: '$summary'"; return 1; }

  git -C "$repo" ls-tree -r --name-only "tlv4/$sid" | grep -qx -- "$file" \
    || { fail "$file is not in the session tip tlv4/$sid"; return 1; }
  git -C "$repo" show "tlv4/$sid:$file" | grep -q "IMPL-001 was here" \
    || { fail "$file in the tip does not hold what the model asked for"; return 1; }

  local snapshot merge parents
  snapshot="$(git -C "$repo" rev-parse --verify -q "tlv4/$sid.IMPL-001")" \
    || { fail "no task branch tlv4/$sid.IMPL-001"; return 1; }
  git -C "$repo" ls-tree -r --name-only "$snapshot" | grep -qx -- "$file" \
    || { fail "$file is not in the task snapshot $snapshot"; return 1; }
  # The CLI's own files (histories, caches, settings) must not ride along into the merge.
  local added
  added="$(git -C "$repo" diff --name-only "$snapshot^" "$snapshot" -- . ':(exclude).tlv4')"
  [[ "$added" == "$file" ]] \
    || { fail "the task snapshot changes more than $file: $(echo $added)"; return 1; }
  # Nor may the CLI have written into the user's checkout instead of the task's worktree.
  local dirty
  dirty="$(git -C "$repo" status --porcelain --untracked-files=all)"
  [[ -z "$dirty" ]] || { fail "the checkout of the repository was changed: $(echo $dirty)"; return 1; }
  merge="$(git -C "$repo" log --format=%H --grep "Tlv4-Merged: $snapshot" "tlv4/$sid" | head -n1)"
  [[ -n "$merge" ]] || { fail "no merge event for the snapshot $snapshot"; return 1; }
  parents="$(git -C "$repo" rev-list --parents -n 1 "$merge" | wc -w)"
  [[ "$parents" -eq 3 ]] || { fail "the completion $merge has $((parents - 1)) parent(s), not 2"; return 1; }
  [[ "$(git -C "$repo" rev-parse "$merge^2")" == "$snapshot" ]] \
    || { fail "the completion's second parent is not the task snapshot"; return 1; }

  local fsck
  fsck="$(git -C "$repo" fsck --strict --no-progress 2>&1)" || { fail "git fsck --strict: $fsck"; return 1; }
  if grep -qi error <<<"$fsck"; then
    fail "git fsck --strict: $fsck"
    return 1
  fi

  stop_mock
  say "[$name] ok: session $sid completed, $file merged by ${merge:0:12}"
  return 0
}

# The runs of each CLI, one a line: "scenario model [mock_model.py options]".
#   plain      the script as it is
#   reconnect  the first turn's reply is cut short (Aider: a non-streamed reply, so a broken
#              one); the CLI retries, and git-tlv4 must not fail a run that then completed
#   exec       (Codex) a model outside Codex's catalog: the file is written by exec_command
#              in Codex's sandbox rather than by apply_patch
scenarios() {
  case "$1" in
    claude)
      echo "plain ${CLAUDE_MODEL:-claude-sonnet-4-5}"
      echo "reconnect ${CLAUDE_MODEL:-claude-sonnet-4-5} --fail-first 1 --fail-how drop"
      ;;
    codex)
      echo "plain ${CODEX_MODEL:-gpt-5.5}"
      echo "reconnect ${CODEX_MODEL:-gpt-5.5} --fail-first 1 --fail-how drop"
      echo "exec mock-model"
      ;;
    gemini)
      echo "plain ${GEMINI_MODEL:-gemini-2.5-pro}"
      echo "reconnect ${GEMINI_MODEL:-gemini-2.5-pro} --fail-first 1 --fail-how drop"
      ;;
    qwen)
      echo "plain ${QWEN_MODEL:-qwen3-coder-plus}"
      echo "reconnect ${QWEN_MODEL:-qwen3-coder-plus} --fail-first 1 --fail-how drop"
      ;;
    opencode)
      echo "plain ${OPENCODE_MODEL:-mock-model}"
      echo "reconnect ${OPENCODE_MODEL:-mock-model} --fail-first 1 --fail-how drop"
      ;;
    aider)
      echo "plain ${AIDER_MODEL:-mock-model}"
      echo "reconnect ${AIDER_MODEL:-mock-model} --fail-first 1 --fail-how drop"
      ;;
  esac
}

declare -A RESULT
SUMMARY=()
overall=0
for cli in $CLIS; do
  RESULT[$cli]=PASS
  error="$(cli_var ERROR "$cli")"
  if [[ -n "$error" ]]; then
    SUMMARY+=("    FAIL  $cli/install: $error")
    RESULT[$cli]=FAIL
    overall=1
    continue
  fi
  while read -r scenario model mock_args; do
    # shellcheck disable=SC2086 # the mock options are words
    if run_one "$cli" "$scenario" "$model" $mock_args </dev/null; then
      SUMMARY+=("    PASS  $cli/$scenario (model $model)")
    else
      SUMMARY+=("    FAIL  $cli/$scenario (model $model)")
      RESULT[$cli]=FAIL
      overall=1
    fi
    stop_mock
  done < <(scenarios "$cli")
done

echo "conformance summary:"
for cli in $CLIS; do
  if [[ -n "$(cli_var ERROR "$cli")" ]]; then
    echo "  ${RESULT[$cli]}  $cli (not installed)"
  else
    echo "  ${RESULT[$cli]}  $cli ($(cli_var VERSION "$cli"); $(cli_var INSTALL "$cli"))"
  fi
  for line in "${SUMMARY[@]}"; do
    if [[ "$line" == *" $cli/"* ]]; then echo "$line"; fi
  done
done
if [[ $overall -eq 0 && "${TLV4_CONFORMANCE_KEEP:-}" != "1" ]]; then
  rm -rf "$WORK"
else
  echo "  work directory kept: $WORK"
fi
exit "$overall"
