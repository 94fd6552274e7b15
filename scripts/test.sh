#!/usr/bin/env bash
# The one test command (README, CI): format check, clippy -D warnings, then every test.
# Installs and starts what the tests need, and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

FEATURES=()
if grep -q '^aws = \[.\+\]' Cargo.toml; then FEATURES=(--all-features); fi

step "cargo clippy --all-targets ${FEATURES[*]:-} -D warnings"
cargo clippy --all-targets "${FEATURES[@]}" -- -D warnings

step "tests"
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --all-targets "${FEATURES[@]}" --no-fail-fast
  # nextest does not run doctests
  cargo test --doc "${FEATURES[@]}" -q
else
  cargo test --all-targets "${FEATURES[@]}" --no-fail-fast
fi
