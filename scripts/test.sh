#!/usr/bin/env bash
# The one test command (README, CI): format check, the relative links of README.md and docs/ and
# the code's docs/…md#anchor citations (scripts/check-links.py), clippy -D warnings (default features and
# every feature), then every test with every feature (gateway logs at debug, then searched for
# every secret the tests configure: scripts/check-test-logs.sh), then the whole suite once more with the
# machine's clock moved (faketime), every process of the test environment on the same clock.
# Installs and starts what the tests need (a local DynamoDB/Scheduler API server from PyPI:
# moto; Chromium for the dashboard tests; faketime), and stops it at the end.
#
#   scripts/test.sh                 everything, with one shifted-clock pass (HZ_CLOCK_DATES)
#   HZ_CLOCK_DATES="2026-06-01T12:00:00Z 2031-01-01T00:00:00Z" scripts/test.sh
#                                   shifted-clock passes at each instant (space-separated)
#   HZ_CLOCK_DATES= scripts/test.sh skip the shifted-clock pass
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
die() { printf '\nerror: %s\n' "$*" >&2; exit 1; }

# Default shifted-clock pass: the night Europe's clocks go forward (01:00 UTC), started a few
# minutes before, so the suite runs across the change.
CLOCK_DATES=${HZ_CLOCK_DATES-2027-03-28T00:56:00Z}

# Disk: a cold build of every target with every feature, twice (clippy and test), is ~9 GB with
# incremental caches and ~4 GB without. A run from a cold target/ (CI) gains nothing from them,
# so CI leaves them out; a developer's repeated runs keep them. The free space is printed first,
# so a full disk is seen before the compiler reports it.
if [ -n "${CI:-}" ]; then
  export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
fi
step "disk: $(df -h . | awk 'NR==2 {print $4 " free of " $2}') (CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-default})"

step "cargo fmt --check"
cargo fmt --all -- --check

step "relative links in README.md and docs/"
python3 scripts/check-links.py

step "cargo clippy --all-targets -D warnings (default features: what ships self-hosted)"
cargo clippy --all-targets -- -D warnings

step "cargo clippy --all-targets --all-features -D warnings"
cargo clippy --all-targets --all-features -- -D warnings

# The SAM template (deploy/AWS): cfn-lint from PyPI, in its own venv like moto's below.
step "cfn-lint infra/aws/template.yaml"
CFN_VENV=target/cfn-lint-venv
if [ ! -x "$CFN_VENV/bin/cfn-lint" ]; then
  echo "installing cfn-lint into $CFN_VENV"
  python3 -m venv "$CFN_VENV"
  "$CFN_VENV/bin/pip" install --quiet --disable-pip-version-check cfn-lint
fi
"$CFN_VENV/bin/cfn-lint" infra/aws/template.yaml

# The search vendors' Python SDKs (tests/web_tools.rs drives the fake vendors with them, so
# the fakes are known to speak the real wire protocol): the versions Hermes 0.19.0 pins in
# tools/lazy_deps.py where it pins one. Under CI=true that test fails without this venv.
WEB_SDK_VENV=target/web-sdk-venv
# `openai` drives the fake `/audio/speech` of tests/media_tools.rs the same way.
if [ ! -x "$WEB_SDK_VENV/bin/python" ] || ! "$WEB_SDK_VENV/bin/python" -c 'import tavily, exa_py, firecrawl, parallel, openai' 2>/dev/null; then
  step "installing the web vendors' SDKs into $WEB_SDK_VENV"
  python3 -m venv "$WEB_SDK_VENV"
  "$WEB_SDK_VENV/bin/pip" install --quiet --disable-pip-version-check tavily-python 'exa-py==2.10.2' 'firecrawl-py==4.17.0' 'parallel-web==0.4.2' openai
fi
HZ_WEB_SDK_PY="$PWD/$WEB_SDK_VENV/bin/python"
export HZ_WEB_SDK_PY

# The real clients of the OpenAI-compatible API server (tests/api_server.rs): the official
# `openai` SDK and `hermes-agent-api-client` (its type aliases need Python >= 3.12: the
# pyenv 3.13 when python3 is older). Under CI=true that test fails without this venv.
API_SDK_VENV=target/api-sdk-venv
if [ ! -x "$API_SDK_VENV/bin/python" ] || ! "$API_SDK_VENV/bin/python" -c 'import openai, hermes_agent_api_client' 2>/dev/null; then
  step "installing the openai SDK and hermes-agent-api-client into $API_SDK_VENV"
  API_SDK_BASE=python3
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    API_SDK_BASE=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2>/dev/null | tail -n 1)
  fi
  "${API_SDK_BASE:?no Python >= 3.12 for the API SDKs venv}" -m venv "$API_SDK_VENV"
  "$API_SDK_VENV/bin/pip" install --quiet --disable-pip-version-check openai hermes-agent-api-client
fi
HZ_API_SDK_PY="$PWD/$API_SDK_VENV/bin/python"
export HZ_API_SDK_PY
# The Standard Webhooks reference library (tests/webhooks.rs signs deliveries with it and
# checks them against the gateway's webhook routes, CONTRACT §16).
WEBHOOKS_VENV=target/webhooks-sdk-venv
if [ ! -x "$WEBHOOKS_VENV/bin/python" ] || ! "$WEBHOOKS_VENV/bin/python" -c 'import standardwebhooks' 2>/dev/null; then
  step "installing standardwebhooks into $WEBHOOKS_VENV"
  python3 -m venv "$WEBHOOKS_VENV"
  "$WEBHOOKS_VENV/bin/pip" install --quiet --disable-pip-version-check 'standardwebhooks==1.3.0'
fi
HZ_WEBHOOKS_PY="$PWD/$WEBHOOKS_VENV/bin/python"
export HZ_WEBHOOKS_PY

# --- services -------------------------------------------------------------------------
# Every service runs in its own process group (setsid), and is stopped as a group: a wrapper
# such as faketime forks the real server as its child, so killing the pid that `$!` names
# would orphan the server. Every process this script starts, directly or not, carries
# HZ_TEST_RUN in its environment; the end of the script checks that none is left.
HZ_TEST_RUN="$$-$(date +%s%N)"
export HZ_TEST_RUN
GROUPS_STARTED=()
# stop_group PGID: SIGTERM to the whole group, then (after at most 10 s) SIGKILL.
stop_group() {
  local g=$1
  kill -TERM -- "-$g" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    kill -0 -- "-$g" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL -- "-$g" 2>/dev/null || true
}
cleanup() { for g in "${GROUPS_STARTED[@]:-}"; do [ -n "$g" ] && stop_group "$g"; done; }
trap cleanup EXIT

# The pids (with their command lines) of processes this script started that still run.
leftovers() {
  local d pid
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = "$$" ] && continue
    [ "$pid" = "${BASHPID:-}" ] && continue
    if { tr '\0' '\n' < "$d/environ"; } 2>/dev/null | grep -qx "HZ_TEST_RUN=$HZ_TEST_RUN"; then
      printf '%s %s\n' "$pid" "$({ tr '\0' ' ' < "$d/cmdline"; } 2>/dev/null)"
    fi
  done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

apt_install() {
  local SUDO=()
  if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$@" > /dev/null
}

VENV=target/moto-venv
if [ ! -x "$VENV/bin/moto_server" ]; then
  step "installing moto (local AWS API server) into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check 'moto[server]'
fi

# start_moto [command prefix…]: starts moto on a free port (under the prefix, e.g. faketime),
# waits until it answers, and exports HZ_MOTO_ENDPOINT. Fails loudly if it never answers.
MOTO_PID=
start_moto() {
  local port
  port=$(free_port)
  # Without job control a background job is no group leader, so setsid makes the job
  # itself the leader of a new group: its pid is the group id.
  setsid "$@" "$VENV/bin/moto_server" -H 127.0.0.1 -p "$port" > target/moto.log 2>&1 &
  MOTO_PID=$!
  GROUPS_STARTED+=("$MOTO_PID")
  for _ in $(seq 1 150); do
    if curl -fs "http://127.0.0.1:$port/moto-api/" > /dev/null 2>&1; then
      export HZ_MOTO_ENDPOINT="http://127.0.0.1:$port"
      echo "moto listening on $HZ_MOTO_ENDPOINT"
      return 0
    fi
    kill -0 "$MOTO_PID" 2>/dev/null || break
    sleep 0.2
  done
  echo "--- target/moto.log:" >&2
  tail -n 30 target/moto.log >&2 || true
  die "moto_server did not answer on 127.0.0.1:$port within 30 s (see target/moto.log above)"
}
stop_moto() {
  if [ -n "$MOTO_PID" ]; then
    stop_group "$MOTO_PID"
    wait "$MOTO_PID" 2>/dev/null || true
  fi
  MOTO_PID=
}

export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1

step "local AWS API server (moto) for the DynamoDB and EventBridge Scheduler adapters"
start_moto

if [ -x scripts/ui-deps.sh ]; then
  step "Chromium for the dashboard tests"
  scripts/ui-deps.sh
fi

# --- tests ----------------------------------------------------------------------------
run_suite() {
  if command -v cargo-nextest >/dev/null 2>&1; then
    cargo nextest run --all-targets --all-features --no-fail-fast "$@"
  else
    cargo test --all-targets --all-features --no-fail-fast "$@"
  fi
}

step "tests (gateways log at debug; every captured line is then searched for the tests' secrets)"
export HZ_TEST_LOG="${HZ_TEST_LOG:-debug}"
if command -v cargo-nextest >/dev/null 2>&1; then
  run_suite --profile ci
  step "no configured secret in any log line of the suite"
  scripts/check-test-logs.sh
else
  run_suite
  echo "note: cargo-nextest is missing, so the suite's output is not searched for secrets" >&2
fi
unset HZ_TEST_LOG
cargo test --doc --all-features -q

# --- the same suite on another date ---------------------------------------------------
# Only the test binaries (and everything they start: the gateway, chromedriver, Chromium) and
# moto run under faketime, all with the same offset; cargo itself stays on the real clock
# (it hangs on its lock under faketime). Monotonic clocks are shifted too (libfaketime's
# default): FAKETIME_DONT_FAKE_MONOTONIC=1 makes Chromium hang and moto 18x slower.
if [ -n "$CLOCK_DATES" ]; then
  if ! command -v faketime >/dev/null 2>&1; then
    step "installing faketime (Debian) for the shifted-clock pass"
    apt_install faketime
  fi
  # The faketime wrapper names a POSIX semaphore and a shared-memory segment after its own
  # pid (/dev/shm/sem.faketime_sem_<pid>, faketime_shm_<pid>) and removes them on exit; a
  # wrapper that was killed (a stopped moto, a test killed on timeout) leaves them behind,
  # and a later wrapper that gets the same pid fails before running its test ("sem_open:
  # File exists"). Remove those of processes that no longer exist: a live pid cannot be
  # handed out again, so nothing in use is touched.
  for f in /dev/shm/sem.faketime_sem_* /dev/shm/faketime_shm_*; do
    [ -e "$f" ] || continue
    pid=${f##*_}
    kill -0 "$pid" 2>/dev/null || rm -f "$f" 2>/dev/null || true
  done
  # The test runner of the host target (e.g. CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER).
  host=$(rustc -vV | sed -n 's/^host: //p')
  RUNNER_VAR="CARGO_TARGET_$(printf '%s' "$host" | tr 'a-z-' 'A-Z_')_RUNNER"
  for when in $CLOCK_DATES; do
    target=$(date -u -d "$when" +%s) || die "HZ_CLOCK_DATES: cannot parse '$when'"
    offset=$(( target - $(date -u +%s) ))
    step "tests with the clock at $when (faketime offset ${offset}s)"
    stop_moto
    if [ "$offset" -ge 0 ]; then spec="+$offset"; else spec="$offset"; fi
    start_moto faketime -f "$spec"
    export "$RUNNER_VAR=faketime -f $spec"
    run_suite
    unset "$RUNNER_VAR"
  done
fi

# --- nothing left behind ----------------------------------------------------------------
step "no process started by this script is left"
stop_moto
left=
for _ in $(seq 1 25); do
  left=$(leftovers)
  [ -z "$left" ] && break
  sleep 0.2
done
if [ -n "$left" ]; then
  printf '%s\n' "$left" >&2
  for pid in $(printf '%s\n' "$left" | cut -d' ' -f1); do kill -KILL "$pid" 2>/dev/null || true; done
  die "processes started by this run were still running at its end (listed above; now killed)"
fi
echo "none"
