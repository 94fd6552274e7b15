#!/usr/bin/env bash
# Every figure of issue #33's "with everything in" table (BENCHMARKS.md §10), re-measured in
# one run on one build: sizes, `serve` start-up, memory and latency (twice), the concurrency
# curve and its plot, the in-process turn on tmpfs, Lambda-style init (SQLite on disk, and
# DynamoDB when a moto endpoint is given), and both side-by-side runs against Hermes 0.19.0.
#
# Build first (release profile; the Lambda package with --features aws):
#   cargo build --release && scripts/build-lambda.sh --arch x86_64
# Usage: scripts/bench/everything.sh [--moto URL] [--skip-hermes] [--out DIR]
#   --moto URL      also time the Lambda init on DynamoDB (a running moto_server)
#   --skip-hermes   leave out compare.sh and compare_api.sh (they install Hermes 0.19.0 once)
#   --out DIR       where the curve JSON and SVG go (default target/bench)
# Prints each step under a heading with the time and load; only the curve is written (--out).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=target/release/hermes-zero
LAMBDA_BIN=target/x86_64-unknown-linux-gnu/release/hermes-zero
ZIP=target/lambda/hermes-zero-x86_64.zip
MOTO=""
HERMES=1
OUT=target/bench
while [ $# -gt 0 ]; do
  case "$1" in
    --moto) MOTO=$2; shift 2 ;;
    --skip-hermes) HERMES=0; shift ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "everything: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for f in "$BIN" "$LAMBDA_BIN" "$ZIP"; do
  [ -e "$f" ] || { echo "everything: $f is missing; build first (see --help)" >&2; exit 1; }
done
mkdir -p "$OUT"
step() { printf '\n## %s  (%s, load %s)\n' "$1" "$(date -u +%H:%M:%S)" "$(cut -d' ' -f1 /proc/loadavg)"; }

step "machine"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), commit $(git rev-parse --short HEAD)"
step "sizes"
echo "binary: $(stat -c %s "$BIN") B; Lambda binary: $(stat -c %s "$LAMBDA_BIN") B; Lambda zip: $(stat -c %s "$ZIP") B"
step "serve.py --quick --detail (run 1)"
python3 scripts/bench/serve.py --quick --detail "$BIN"
step "serve.py --detail (run 2, on to 30,000 turns: the leak check)"
python3 scripts/bench/serve.py --detail "$BIN"
step "concurrency curve"
python3 scripts/bench/serve.py --curve="$OUT/curve.json" "$BIN"
python3 scripts/bench/plot_curve.py "$OUT/curve.svg" "this build=$OUT/curve.json"
step "in-process turn on tmpfs (cargo bench --bench paths -- message)"
TMPDIR=/dev/shm cargo bench --quiet --bench paths -- message
step "Lambda-style init, SQLite on disk"
python3 scripts/bench/lambda_init.py "$LAMBDA_BIN"
if [ -n "$MOTO" ]; then
  step "Lambda-style init, DynamoDB on moto ($MOTO)"
  python3 scripts/bench/lambda_init.py --dynamodb "$MOTO" "$LAMBDA_BIN"
fi
if [ "$HERMES" = 1 ]; then
  step "side by side: the gateway (compare.sh)"
  scripts/bench/compare.sh "$BIN"
  step "side by side: the API server (compare_api.sh)"
  scripts/bench/compare_api.sh "$BIN"
fi
