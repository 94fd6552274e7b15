#!/usr/bin/env bash
# The one test command (README, CI): format check, clippy -D warnings, then every test,
# with every feature. Installs and starts what the tests need (a local DynamoDB/Scheduler
# API server from PyPI: moto; Chromium for the dashboard tests), and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets --all-features -D warnings"
cargo clippy --all-targets --all-features -- -D warnings

# --- services -------------------------------------------------------------------------
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

step "local AWS API server (moto) for the DynamoDB and EventBridge Scheduler adapters"
VENV=target/moto-venv
if [ ! -x "$VENV/bin/moto_server" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check 'moto[server]'
fi
MOTO_PORT=$(free_port)
"$VENV/bin/moto_server" -H 127.0.0.1 -p "$MOTO_PORT" > target/moto.log 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$MOTO_PORT/moto-api/" > /dev/null 2>&1 && break
  sleep 0.2
done
export HZ_MOTO_ENDPOINT="http://127.0.0.1:$MOTO_PORT"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
echo "moto listening on $HZ_MOTO_ENDPOINT"

if [ -x scripts/ui-deps.sh ]; then
  step "Chromium for the dashboard tests"
  scripts/ui-deps.sh
fi

# --- tests ----------------------------------------------------------------------------
step "tests"
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --all-targets --all-features --no-fail-fast
  cargo test --doc --all-features -q
else
  cargo test --all-targets --all-features --no-fail-fast
fi
