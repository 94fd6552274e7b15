#!/usr/bin/env bash
# The cost of SQLite `synchronous=FULL` against `NORMAL` (BENCHMARKS.md §5): the same message
# turns and claim writes at each level, in process, on a store file in $TMPDIR (put TMPDIR on
# the disk you deploy on: the cost is the fsync of that disk). Prints the machine first.
# Usage: scripts/bench/sync.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "nproc: $(nproc); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
tmp=${TMPDIR:-/tmp}
echo "store dir: $tmp on $(findmnt -n -T "$tmp" -o SOURCE,FSTYPE 2>/dev/null || df "$tmp" | tail -1)"
cargo bench --features testing --bench sync --no-run -q
echo "| synchronous | path | n | p50 ms | p99 ms | max ms | per s |"
echo "|---|---|---|---|---|---|---|"
for level in NORMAL FULL; do
  HZ_BENCH_SQLITE_SYNC=$level cargo bench --features testing --bench sync -q 2>/dev/null
done
