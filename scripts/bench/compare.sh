#!/usr/bin/env bash
# Side by side, in one run: hermes-zero `serve` against the Hermes Agent gateway itself (PyPI
# `hermes-agent[messaging]==0.19.0`, in target/hermes-venv, set up by hermes_venv.sh).
# The API server's chat path, side by side with a fake model, is compare_api.sh.
#
# Each side is started N times (default 5) on a fresh temp home and a free port, with only its
# HTTP API enabled, and timed from just before exec to the first 200 on its health route:
#   hermes-zero:  `hermes-zero --home T serve --listen 127.0.0.1:P`, GET /healthz
#   Hermes:       `hermes gateway run` with HERMES_HOME=T, API_SERVER_ENABLED=true,
#                 API_SERVER_KEY, API_SERVER_PORT=P (no other platform), GET /health
# Hermes is timed twice: with the venv's precompiled bytecode (pip compiles on install) and
# without any (PYTHONPYCACHEPREFIX pointing at an empty directory plus PYTHONDONTWRITEBYTECODE,
# so every module, stdlib included, is compiled from source on each start: what the official
# python images, which delete *.pyc, pay). RSS is read from /proc 2 s after the first 200.
#
# Usage: scripts/bench/compare.sh [--runs N] [path/to/hermes-zero]   (default target/release/hermes-zero)
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=5
BIN=target/release/hermes-zero
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    *) BIN=$1; shift ;;
  esac
done
[ -x "$BIN" ] || { echo "compare: $BIN is missing (cargo build --release)" >&2; exit 1; }
. scripts/bench/hermes_venv.sh

exec python3 - "$RUNS" "$BIN" "$VENV/bin/hermes" "$HERMES_VERSION" <<'PY'
import shutil, statistics, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, "scripts/bench")
from sides import free_port, hermes_side, hz_side, start, stop, tree_rss_mib

runs, hz, hermes, version = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


def series(name, make, timeout):
    starts, rsss = [], []
    for _ in range(runs):
        home = tempfile.mkdtemp(prefix="hz-compare-")
        port = free_port()
        cmd, env, path = make(home, port)
        p, ms = start(cmd, env, port, path, timeout)
        time.sleep(2)
        rsss.append(tree_rss_mib(p.pid))
        stop(p)
        starts.append(ms)
        shutil.rmtree(home, ignore_errors=True)
    return name, statistics.median(starts), min(starts), max(starts), statistics.median(rsss)


rows = [series("hermes-zero serve", hz_side(hz), 10),
        series(f"Hermes Agent {version} gateway, bytecode precompiled", hermes_side(hermes, True), 120),
        series(f"Hermes Agent {version} gateway, no bytecode", hermes_side(hermes, False), 180)]
print(f"exec → first 200 on the health route, {runs} runs each (median, min–max); RSS 2 s after start (median)")
print(f"{'':58} {'cold start ms':>22} {'RSS MiB':>8} {'start ×':>8} {'RSS ×':>6}")
hz_ms, hz_rss = rows[0][1], rows[0][4]
for name, med, lo, hi, rss in rows:
    print(f"{name:58} {med:9.1f} ({lo:.1f}–{hi:.1f}) {rss:8.1f} {med / hz_ms:8.0f} {rss / hz_rss:6.1f}")
PY
