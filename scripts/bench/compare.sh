#!/usr/bin/env bash
# Side by side, in one run: hermes-zero `serve` against the Hermes Agent gateway itself (PyPI
# `hermes-agent[messaging]`, in target/hermes-venv, created on first use like hermes_import.sh).
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
VENV=target/hermes-venv
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
# The gateway's API server platform needs aiohttp: the `messaging` extra (Telegram, Discord,
# Slack adapters and aiohttp), as the gateway is installed to serve chat platforms.
"$VENV/bin/python" -c 'import aiohttp, gateway.run' 2> /dev/null \
  || "$VENV/bin/pip" install --quiet --disable-pip-version-check 'hermes-agent[messaging]'
# Bytecode for everything in the venv (pip compiles most of it already; this makes sure).
"$VENV/bin/python" -m compileall -q -j 0 "$VENV/lib" > /dev/null 2>&1 || true
HERMES_VERSION=$("$VENV/bin/pip" show hermes-agent | awk '/^Version:/ {print $2}')

exec python3 - "$RUNS" "$BIN" "$VENV/bin/hermes" "$HERMES_VERSION" <<'PY'
import http.client, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

runs, hz, hermes, version = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tree_rss_mib(pid):
    """RSS of the process and its children (Hermes may start helpers)."""
    total = rss_mib(pid)
    try:
        kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        kids = []
    return total + sum(tree_rss_mib(int(k)) for k in kids)


def one(cmd, env, port, path, timeout):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = t0 + timeout
    ms = None
    while time.perf_counter() < deadline and p.poll() is None:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", path)
            if c.getresponse().status == 200:
                ms = (time.perf_counter() - t0) * 1000
                break
        except OSError:
            time.sleep(0.0005)
    rss = None
    if ms is not None:
        time.sleep(2)
        rss = tree_rss_mib(p.pid)
    try:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    if ms is None:
        err = p.stderr.read().decode(errors="replace")[-3000:]
        sys.exit(f"{cmd[0]} gave no 200 on {path} within {timeout} s:\n{err}")
    return ms, rss


def series(name, make, timeout):
    starts, rsss = [], []
    for _ in range(runs):
        home = tempfile.mkdtemp(prefix="hz-compare-")
        port = free_port()
        cmd, env, path = make(home, port)
        ms, rss = one(cmd, env, port, path, timeout)
        starts.append(ms)
        rsss.append(rss)
        shutil.rmtree(home, ignore_errors=True)
    return name, statistics.median(starts), min(starts), max(starts), statistics.median(rsss)


base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR")}


def hz_side(home, port):
    env = dict(base, API_SERVER_KEY="k", RUST_LOG="error")
    return [hz, "--home", home, "serve", "--listen", f"127.0.0.1:{port}"], env, "/healthz"


def hermes_side(pyc):
    def make(home, port):
        env = dict(base, HOME=home, HERMES_HOME=home, API_SERVER_ENABLED="true", API_SERVER_KEY="k" * 32,
                   API_SERVER_PORT=str(port), API_SERVER_HOST="127.0.0.1")
        if not pyc:
            empty = os.path.join(home, "no-pycache")
            os.mkdir(empty)
            env.update(PYTHONPYCACHEPREFIX=empty, PYTHONDONTWRITEBYTECODE="1")
        return [hermes, "gateway", "run"], env, "/health"
    return make


rows = [series("hermes-zero serve", hz_side, 10),
        series(f"Hermes Agent {version} gateway, bytecode precompiled", hermes_side(True), 120),
        series(f"Hermes Agent {version} gateway, no bytecode", hermes_side(False), 180)]
print(f"exec → first 200 on the health route, {runs} runs each (median, min–max); RSS 2 s after start (median)")
print(f"{'':58} {'cold start ms':>22} {'RSS MiB':>8} {'start ×':>8} {'RSS ×':>6}")
hz_ms, hz_rss = rows[0][1], rows[0][4]
for name, med, lo, hi, rss in rows:
    print(f"{name:58} {med:9.1f} ({lo:.1f}–{hi:.1f}) {rss:8.1f} {med / hz_ms:8.0f} {rss / hz_rss:6.1f}")
PY
