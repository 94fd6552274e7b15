#!/usr/bin/env bash
# The release profile, one lever at a time (BENCHMARKS.md §5): builds the default binary once
# per variant, each the `[profile.release]` of Cargo.toml with ONE setting changed, from a cold
# target dir of its own (target/levers/t-NAME, removed after), unstripped; then strips a copy
# with `strip`, prints both sizes, and times the stripped binary's cold start with serve.py
# (ROUNDS interleaved rounds over all variants, so drift hits each alike).
#
# Variants: release (unchanged), thin (lto="thin"), cgu16 (codegen-units=16), opt3
# (opt-level=3), abort (panic="abort"). Each build takes 7–16 min on 2 cores.
#
# Usage: scripts/bench/profile_levers.sh [--rounds N] [VARIANT ...]   (default: all, 4 rounds)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=4
if [ "${1:-}" = "--rounds" ]; then ROUNDS=$2; shift 2; fi
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(release thin cgu16 opt3 abort)
OUT=target/levers
mkdir -p "$OUT"

setting() {
  case "$1" in
    release) echo "" ;;
    thin) echo "CARGO_PROFILE_RELEASE_LTO=thin" ;;
    cgu16) echo "CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16" ;;
    opt3) echo "CARGO_PROFILE_RELEASE_OPT_LEVEL=3" ;;
    abort) echo "CARGO_PROFILE_RELEASE_PANIC=abort" ;;
    *) echo "unknown variant: $1 (release, thin, cgu16, opt3, abort)" >&2; exit 2 ;;
  esac
}

for v in "${VARIANTS[@]}"; do
  set_env=$(setting "$v")
  t0=$(date +%s)
  echo "building $v (${set_env:-the release profile}) ..." >&2
  # shellcheck disable=SC2086 # one KEY=value word, or none
  env $set_env CARGO_PROFILE_RELEASE_STRIP=false \
    cargo build --release --bin hermes-zero --target-dir "$OUT/t-$v" >"$OUT/$v.log" 2>&1 \
    || { echo "build of $v failed: $OUT/$v.log" >&2; exit 1; }
  cp "$OUT/t-$v/release/hermes-zero" "$OUT/$v.unstripped"
  cp "$OUT/$v.unstripped" "$OUT/$v.stripped" && strip "$OUT/$v.stripped"
  rm -rf "$OUT/t-$v"
  echo "$v: build $(( $(date +%s) - t0 )) s, unstripped $(stat -c %s "$OUT/$v.unstripped") B, stripped $(stat -c %s "$OUT/$v.stripped") B"
done

for r in $(seq 1 "$ROUNDS"); do
  for v in "${VARIANTS[@]}"; do
    line=$(python3 scripts/bench/serve.py --cold "$OUT/$v.stripped" | grep '^cold start' | sed 's/.*runs: //')
    echo "round $r $v: cold start $line"
  done
done
