#!/usr/bin/env bash
# The OpenAI-compatible API server side by side, in one run: hermes-zero `serve` against Hermes
# Agent 0.19.0's `hermes gateway run` (target/hermes-venv, set up by hermes_venv.sh, as for
# compare.sh), both with their model pointed at one fake OpenAI-compatible model (a stdlib HTTP
# server in this process, scripts/bench/sides.py FakeModel: a fixed answer at once, as JSON or,
# with "stream": true, as SSE; it counts the calls).
#
# Each side starts once on a fresh temp home and a free port, with only its HTTP API:
#   hermes-zero:  config.yaml `model: {provider: openai, base_url: <fake>/v1, name: m}`,
#                 API_SERVER_KEY; GET /health
#   Hermes:       config.yaml `model: {provider: custom, base_url: <fake>/v1, default: m,
#                 context_length: 131072}`, API_SERVER_ENABLED/KEY/PORT/HOST; GET /health
# (Hermes twice: with the venv's bytecode, and without any, as compare.sh does.) Measured per side:
#   cold start     exec → first 200 on GET /health (one start; compare.sh takes medians)
#   RSS rest       RSS of the process tree 2 s after that 200
#   1st chat       the first POST /v1/chat/completions (what a lazy import or setup costs)
#   chat p50/p99   N more (default 50), sequential, each on a new connection
#   SSE 1st byte   p50 of S (default 20) with "stream": true: the first byte of the body, and
#   SSE 1st text   the first byte of the model's text in it
#   RSS after      2 s after the last request
#   calls/req      the fake's chat completions per request
# Every request carries a new `X-Hermes-Session-Id`, so that on both sides each one is a new
# session with no history and exactly one model call: without the header both derive one
# session id from the (same) first message, and then hermes-zero sends the session's stored
# history (growing with every request) while Hermes sends only the body's. Every answer must
# be 200 with the fake's text (streamed: its text and `[DONE]`), and each side must have
# called the fake; the script fails otherwise, with the side's stderr.
#
# Usage: scripts/bench/compare_api.sh [--requests N] [--streams S] [path/to/hermes-zero]
#        (default 50, 20, target/release/hermes-zero)
set -euo pipefail
cd "$(dirname "$0")/../.."
REQUESTS=50
STREAMS=20
BIN=target/release/hermes-zero
while [ $# -gt 0 ]; do
  case "$1" in
    --requests) REQUESTS=$2; shift 2 ;;
    --streams) STREAMS=$2; shift 2 ;;
    *) BIN=$1; shift ;;
  esac
done
[ -x "$BIN" ] || { echo "compare_api: $BIN is missing (cargo build --release)" >&2; exit 1; }
. scripts/bench/hermes_venv.sh

exec python3 scripts/bench/compare_api.py "$REQUESTS" "$STREAMS" "$BIN" "$VENV/bin/hermes" "$HERMES_VERSION"
