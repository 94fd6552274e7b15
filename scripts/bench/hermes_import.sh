#!/usr/bin/env bash
# Anchor: import time of the Hermes Agent (Python) gateway module, from PyPI, 10 runs.
# Usage: scripts/bench/hermes_import.sh   (target/hermes-venv, pinned: see hermes_venv.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/hermes_venv.sh
"$VENV/bin/pip" show hermes-agent | grep -E '^(Name|Version)'
for _ in $(seq 10); do
  "$VENV/bin/python" -c "import time; t=time.perf_counter(); import gateway.run; print(round((time.perf_counter()-t)*1000, 1))"
done | sort -n | awk '{a[NR]=$1} END {printf "import gateway.run: median %.0f ms, min %.0f, max %.0f (n=%d)\n", (a[5]+a[6])/2, a[1], a[NR], NR}'
