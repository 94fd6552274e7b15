#!/usr/bin/env bash
# No configured secret in any log line of the whole suite (issue #17 item 8).
#
# The suite's JUnit report (nextest profile `ci`, .config/nextest.toml) holds every test's
# captured stdout and stderr, which includes the log lines of every gateway a test started
# with inherited stderr. This script collects every secret value the tests configure — any
# `("<NAME>", "<value>")` pair in tests/ whose NAME ends in _TOKEN, _KEY or _SECRET (not the
# AWS_* dummy credentials of the local AWS API server), plus the shared API key constant — and fails if any of them appears in that report.
#
#   scripts/check-test-logs.sh [path/to/junit.xml]
set -euo pipefail
cd "$(dirname "$0")/.."
report=${1:-target/nextest/ci/junit.xml}
[ -s "$report" ] || { echo "check-test-logs: no JUnit report at $report (run the suite with --profile ci)" >&2; exit 2; }

mapfile -t secrets < <(
  grep -rhoE '\("[A-Z0-9_]*(_TOKEN|_KEY|_SECRET)", *"[^"]{6,}"\)' tests/ \
    | grep -v '^("AWS_' | sed -E 's/.*", *"([^"]+)"\)/\1/' ;
  grep -rhoE 'pub const API_KEY: &str = "[^"]+"' tests/common/mod.rs | sed -E 's/.*"([^"]+)"/\1/'
)
mapfile -t secrets < <(printf '%s\n' "${secrets[@]}" | sort -u)
[ "${#secrets[@]}" -gt 0 ] || { echo "check-test-logs: found no secrets in tests/ (pattern broken?)" >&2; exit 2; }

found=0
for s in "${secrets[@]}"; do
  if grep -qF -- "$s" "$report"; then
    echo "check-test-logs: a configured secret appears in the suite's output: ${s:0:4}… (lines below)" >&2
    grep -nF -- "$s" "$report" | head -n 5 | while IFS= read -r line; do printf '  %s\n' "${line//"$s"/<SECRET>}" | cut -c1-300 >&2; done
    found=1
  fi
done
[ "$found" = 0 ] || exit 1
echo "check-test-logs: ${#secrets[@]} secrets, none in $(grep -c '<testcase' "$report") tests' output"
