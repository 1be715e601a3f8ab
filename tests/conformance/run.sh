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
# Each CLI runs a few times (see `all_scenarios` below), each time in a fresh repository
# with a fresh mock:
#   - plain, reconnect (its first turn's stream cut short), and for Codex exec (a model
#     outside its catalog): a one-task pipeline. Where the kernel's sandbox is full the
#     session runs with shell on, and the model also asks the CLI's shell tool for one
#     command, whose output (the directory it ran in: the task's checkout) must come back to
#     it; the summary says so. Checked with git: the session completed
#     with the summary of the model's result block, the file the model asked the CLI to
#     write is in the session tip's tree and in the task snapshot, the snapshot changes
#     nothing else (no history or cache files of the CLI), the user's checkout is untouched,
#     the task's completion is a merge commit (2 parents, the second the snapshot);
#   - contract-once / contract-always: the executor's result block breaks the contract on
#     its first answer (it must be sent back with the problem and the second answer
#     completes the task) or on every answer (the task fails after three, the run record
#     keeps the raw answer, the session pauses naming the task);
#   - full-lifecycle: every agent role on the CLI (analyst, writer, planner, executor, the
#     reviewer's opinion, every discuss critic), the mock playing each role from the prompt
#     (play.py); check_full.py checks each role with git and reports it with its seconds and
#     tokens (the mock's usage figures, as the CLI reported them).
# Every run ends with `git fsck --strict`. A CLI whose install fails is a FAIL with the
# reason. The summary says PASS/FAIL per CLI (with its version, install time and size), per
# run, and per role of the full-lifecycle run.
#
# Environment:
#   TLV4_REAL_AGENTS=1          run at all (otherwise: print "skipped", exit 0)
#   TLV4_CONFORMANCE_CACHE      where the CLIs are installed, one directory each (default
#                               ~/.cache/git-tlv4-conformance; reused when present)
#   TLV4_CONFORMANCE_CLIS       which CLIs to run (default all six: "claude codex gemini qwen
#                               opencode aider")
#   TLV4_CONFORMANCE_SCENARIOS  which runs (default all: "plain reconnect exec contract-once
#                               contract-always full-lifecycle")
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

  # A session started where the sandbox is full runs with shell on: the model asked for one
  # command after its file (play.shell_command), and its output — the directory it ran in —
  # must have come back to the model from the task's checkout. (Aider has no shell tool.)
  local shell_on ran
  shell_on="$(printf '%s' "$status" | python3 -c 'import json,sys
print(json.load(sys.stdin)["control"]["settings"].get("shell", False))')"
  if [[ "$shell_on" == True && "$cli" != aider ]]; then
    ran="$(grep -o 'conformance-shell-ran-in-/[^"\ ]*' "$MOCK_LOG" | head -n1 || true)"
    [[ -n "$ran" ]] || { fail "shell on, but no command's output came back to the model"; return 1; }
    # The task's checkout: an agent slot of the repository's pool (`agent-<n>/<repo>`), a
    # linked worktree of the repository wherever the pool keeps it (src/worktree/pool.rs).
    local dir="${ran#conformance-shell-ran-in-}"
    local worktrees
    worktrees="$(git -C "$repo" worktree list --porcelain)"
    [[ "$dir" == */agent-[0-9]*/"$(basename "$repo")" ]] \
      && grep -qxF "worktree $dir" <<<"$worktrees" \
      || { fail "the command did not run in the task's checkout: $ran"; return 1; }
    RUN_NOTE="; shell on: a command ran in the task's checkout ${ran#conformance-shell-ran-in-}"
  elif [[ "$shell_on" == True ]]; then
    RUN_NOTE="; shell on (no shell tool: no test command to give --test-cmd here)"
  else
    RUN_NOTE="; shell off"
  fi

  stop_mock
  say "[$name] ok: session $sid completed, $file merged by ${merge:0:12}${RUN_NOTE}"
  return 0
}

# A fresh repository with a small Python project (a function and its unittest).
new_repo() {
  local repo=$1
  git init -q -b main "$repo" || return 1
  git -C "$repo" config user.name "Conformance Test" || return 1
  git -C "$repo" config user.email "conformance@example.com" || return 1
  git -C "$repo" config gc.autoDetach false || return 1
  printf '# conformance\n' >"$repo/README.md"
  mkdir -p "$repo/app" "$repo/tests"
  : >"$repo/app/__init__.py"
  : >"$repo/tests/__init__.py"
  printf 'def add(a, b):\n    return a + b\n' >"$repo/app/calc.py"
  printf 'import unittest\n\nfrom app.calc import add\n\n\nclass CalcTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n' \
    >"$repo/tests/test_calc.py"
}

commit_and_trust() {
  local repo=$1
  git -C "$repo" add -A && git -C "$repo" commit -q -m initial || return 1
  (cd "$repo" && git tlv4 trust) >"$repo.trust.out" 2>&1
}

# A session of the one-task pipeline whose executor answers out of contract (the mock's
# --contract): `contract-once` must be sent back with the problem and completed on the
# second answer; `contract-always` must fail the task after three answers with the raw
# answer kept, record no result of it, and pause the session naming the task.
run_contract() {
  local cli=$1 scenario=$2 model=$3
  shift 3
  local name="$cli-$scenario" repo="$WORK/$cli-$scenario" sid="" rc=0 t0=$SECONDS
  fail() {
    say "FAIL [$name]: $*"
    diagnose "$repo" "$sid"
    return 1
  }
  start_mock "$name" "$@" || return 1
  new_repo "$repo" || { fail "cannot make the repository"; return 1; }
  write_pipeline "$repo"
  agent_config "$cli" "$model" >"$repo/.tlv4.toml"
  commit_and_trust "$repo" || { fail "initial commit or trust: $(cat "$repo.trust.out")"; return 1; }
  say "[$name] model $model, mock on 127.0.0.1:$PORT: git tlv4 start --pipeline wide ..."
  (cd "$repo" && timeout 900 git tlv4 start --pipeline wide --yes --completion keep \
    "Conformance: create the file the model asks for") >"$repo.start.out" 2>"$repo.start.err" || rc=$?
  sid="$(cat "$repo.start.out" "$repo.start.err" | grep -o -m1 'TLV4-[A-Za-z0-9-]*' || true)"
  say "[$name] start exited $rc after $((SECONDS - t0))s, session ${sid:-?}"
  [[ -n "$sid" ]] || { fail "no session id in the output of git tlv4 start"; return 1; }
  local status runs answers prompt
  status="$(cd "$repo" && git tlv4 --session "$sid" status --json)" || { fail "status --json"; return 1; }
  runs=".tlv4/sessions/$sid/runs/IMPL-001/1"
  answers="$(git -C "$repo" show "tlv4/$sid:$runs/transcript.txt" 2>/dev/null | grep -c '^=== answer ' || true)"
  prompt="$(git -C "$repo" show "tlv4/$sid:$runs/prompt.md" 2>/dev/null || true)"
  # The last prompt sent the problem back.
  grep -q '^# Your previous answer was not accepted' <<<"$prompt" \
    || { fail "the kept prompt is not a retry prompt"; return 1; }
  grep -q 'status_text' <<<"$prompt" \
    || { fail "the retry prompt does not name the problem (the unknown key status_text)"; return 1; }
  if [[ "$scenario" == contract-once ]]; then
    [[ $rc -eq 0 ]] || { fail "git tlv4 start exited $rc"; return 1; }
    printf '%s' "$status" | python3 -c 'import json,sys
s=json.load(sys.stdin); t=[t for t in s["tasks"] if t["id"]=="IMPL-001"][0]
sys.exit(0 if s["session"]["status"]=="completed" and t["status"]=="completed" else 1)' \
      || { fail "the session or IMPL-001 did not complete after the corrected answer"; return 1; }
    [[ "$answers" -eq 2 ]] || { fail "the transcript has $answers answers, not 2"; return 1; }
    git -C "$repo" ls-tree -r --name-only "tlv4/$sid" | grep -qx -- "conformance-$cli-IMPL-001.txt" \
      || { fail "the corrected task's file is not in the session tip"; return 1; }
  else
    printf '%s' "$status" | python3 -c 'import json,sys
s=json.load(sys.stdin); t=[t for t in s["tasks"] if t["id"]=="IMPL-001"][0]
pause=json.dumps(s["control"].get("pause") or {})
ok = s["session"]["status"]=="paused" and t["status"]=="failed" and "IMPL-001" in pause \
  and "rejected 3 times" in json.dumps(t) and "OUT-OF-CONTRACT" not in json.dumps(t)
sys.exit(0 if ok else 1)' \
      || { fail "IMPL-001 did not fail with 'rejected 3 times' (keeping no result of it) and pause the session: $(printf '%s' "$status" | head -c 2000)"; return 1; }
    [[ "$answers" -eq 3 ]] || { fail "the transcript has $answers answers, not 3"; return 1; }
    git -C "$repo" show "tlv4/$sid:$runs/answer.txt" 2>/dev/null | grep -q 'OUT-OF-CONTRACT-ANSWER' \
      || { fail "the run record does not keep the raw out-of-contract answer"; return 1; }
  fi
  local fsck
  fsck="$(git -C "$repo" fsck --strict --no-progress 2>&1)" || { fail "git fsck --strict: $fsck"; return 1; }
  stop_mock
  say "[$name] ok ($answers answers)"
  return 0
}

# The `full-lifecycle` pipeline with every agent role on `cli`: the analyst, the writer, the
# planner and the executor (`[roles] default`), the reviewer's opinion (`[roles] reviewer`)
# and every discuss perspective's critic (`[discuss.perspectives]`). The session is driven to
# its end as a user would: each pause (the readiness gate, a checkpoint, a review) is noted
# and approved. check_full.py then checks each role with git.
run_full() {
  local cli=$1 scenario=$2 model=$3
  shift 3
  local name="$cli-$scenario" repo="$WORK/$cli-$scenario" sid="" rc=0 t0=$SECONDS
  fail() {
    say "FAIL [$name]: $*"
    diagnose "$repo" "$sid"
    return 1
  }
  start_mock "$name" "$@" || return 1
  new_repo "$repo" || { fail "cannot make the repository"; return 1; }
  {
    agent_config "$cli" "$model" | sed "s/^executor = \"$cli\"\$/default = \"$cli\"/"
    printf 'reviewer = "%s"\n[discuss.perspectives]\n' "$cli"
    local p
    for p in product technical quality risk coverage; do
      printf '%s = "%s"\n' "$p" "$cli"
    done
  } >"$repo/.tlv4.toml"
  commit_and_trust "$repo" || { fail "initial commit or trust: $(cat "$repo.trust.out")"; return 1; }
  say "[$name] model $model, mock on 127.0.0.1:$PORT: git tlv4 start --pipeline full-lifecycle ..."
  (cd "$repo" && timeout 1800 git tlv4 start --pipeline full-lifecycle --yes --completion keep \
    "Add a subtract function next to add in app/calc.py, with a unit test") \
    >"$repo.start.out" 2>"$repo.start.err" || rc=$?
  sid="$(cat "$repo.start.out" "$repo.start.err" | grep -o -m1 'TLV4-[A-Za-z0-9-]*' || true)"
  say "[$name] start exited $rc after $((SECONDS - t0))s, session ${sid:-?}"
  [[ -n "$sid" ]] || { fail "no session id in the output of git tlv4 start"; return 1; }
  local state kind reason _i
  for _i in $(seq 8); do
    IFS=$'\t' read -r state kind reason < <(cd "$repo" && git tlv4 --session "$sid" status --json \
      | python3 -c 'import json,sys
s=json.load(sys.stdin); p=s["control"].get("pause") or {}
print("\t".join([s["session"]["status"], p.get("kind") or "-", " ".join(str(p.get("reason") or "").split())[:300]]))')
    [[ "$state" == completed ]] && break
    case "$state" in
      paused)
        say "[$name] paused ($kind): $reason; approving"
        FULL_NOTES+=("      $cli/full-lifecycle paused ($kind): $reason -- approved")
        [[ "$kind" != stalled ]] || { fail "the session stalled: $reason"; return 1; }
        (cd "$repo" && timeout 1800 git tlv4 --session "$sid" approve --completion keep) \
          >>"$repo.start.out" 2>>"$repo.start.err" || true
        ;;
      active)
        (cd "$repo" && timeout 1800 git tlv4 --session "$sid" resume --completion keep) \
          >>"$repo.start.out" 2>>"$repo.start.err" || true
        ;;
      *) fail "the session is '$state'"; return 1 ;;
    esac
  done
  say "[$name] session $state after $((SECONDS - t0))s"
  local report crc=0 line
  report="$(python3 "$HERE/check_full.py" "$repo" "$sid" "$cli" "$cli" 2>&1)" || crc=$?
  while IFS= read -r line; do
    FULL_ROWS+=("      $cli/full-lifecycle $line")
  done <<<"$report"
  [[ $crc -eq 0 ]] || { fail "roles failed:"$'\n'"$report"; return 1; }
  local dirty fsck
  dirty="$(git -C "$repo" status --porcelain --untracked-files=all)"
  [[ -z "$dirty" ]] || { fail "the checkout of the repository was changed: $(echo $dirty)"; return 1; }
  fsck="$(git -C "$repo" fsck --strict --no-progress 2>&1)" || { fail "git fsck --strict: $fsck"; return 1; }
  stop_mock
  say "[$name] ok: every role ran on $cli in $((SECONDS - t0))s"
  return 0
}

# The runs of each CLI, one a line: "scenario model [mock_model.py options]".
#   plain      the script as it is
#   reconnect  the first turn's reply is cut short (Aider: a non-streamed reply, so a broken
#              one); the CLI retries, and git-tlv4 must not fail a run that then completed
#   exec       (Codex) a model outside Codex's catalog: the file is written by exec_command
#              in Codex's sandbox rather than by apply_patch
#   contract-once / contract-always
#              the executor's answer is out of contract on the first answer / on every one
#   full-lifecycle
#              every agent role on the CLI (run_full)
# TLV4_CONFORMANCE_SCENARIOS picks some of them (default: all).
scenarios() {
  local m
  all_scenarios "$1" | while read -r scenario m; do
    if [[ -z "${TLV4_CONFORMANCE_SCENARIOS:-}" || " $TLV4_CONFORMANCE_SCENARIOS " == *" $scenario "* ]]; then
      echo "$scenario $m"
    fi
  done
}

# The model of `cli`'s plain runs.
model_of() {
  case "$1" in
    claude) echo "${CLAUDE_MODEL:-claude-sonnet-4-5}" ;;
    codex) echo "${CODEX_MODEL:-gpt-5.5}" ;;
    gemini) echo "${GEMINI_MODEL:-gemini-2.5-pro}" ;;
    qwen) echo "${QWEN_MODEL:-qwen3-coder-plus}" ;;
    opencode) echo "${OPENCODE_MODEL:-mock-model}" ;;
    aider) echo "${AIDER_MODEL:-mock-model}" ;;
  esac
}

all_scenarios() {
  local model
  model="$(model_of "$1")"
  echo "plain $model"
  echo "reconnect $model --fail-first 1 --fail-how drop"
  # Codex: a model outside its catalog gets exec_command instead of apply_patch.
  [[ "$1" != codex ]] || echo "exec mock-model"
  echo "contract-once $model --contract once"
  echo "contract-always $model --contract always"
  echo "full-lifecycle $model"
}

declare -A RESULT
SUMMARY=()
FULL_ROWS=()
FULL_NOTES=()
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
    runner=run_one
    case "$scenario" in
      full-lifecycle) runner=run_full ;;
      contract-*) runner=run_contract ;;
    esac
    t0=$SECONDS
    RUN_NOTE=""
    # shellcheck disable=SC2086 # the mock options are words
    if "$runner" "$cli" "$scenario" "$model" $mock_args </dev/null; then
      SUMMARY+=("    PASS  $cli/$scenario (model $model, $((SECONDS - t0))s${RUN_NOTE})")
    else
      SUMMARY+=("    FAIL  $cli/$scenario (model $model, $((SECONDS - t0))s)")
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
  for line in "${FULL_ROWS[@]}" "${FULL_NOTES[@]}"; do
    if [[ "$line" == *" $cli/"* ]]; then echo "$line"; fi
  done
done
if [[ $overall -eq 0 && "${TLV4_CONFORMANCE_KEEP:-}" != "1" ]]; then
  rm -rf "$WORK"
else
  echo "  work directory kept: $WORK"
fi
exit "$overall"
