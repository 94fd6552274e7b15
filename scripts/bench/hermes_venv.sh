# Sourced by the side-by-side benches (compare.sh, compare_api.sh, hermes_import.sh): makes
# target/hermes-venv hold Hermes Agent at the pinned version, the reference of this project,
# with the `messaging` extra (the gateway's API server platform needs aiohttp; the extra is
# what the gateway is installed with to serve chat platforms), and every module precompiled.
# A venv holding another version is upgraded or downgraded in place by pip.
# Sets VENV and HERMES_VERSION. Expects the working directory to be the repository root.
HERMES_PIN=0.19.0
VENV=target/hermes-venv
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
HERMES_VERSION=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("hermes-agent"))' 2> /dev/null || true)
if [ "$HERMES_VERSION" != "$HERMES_PIN" ] || ! "$VENV/bin/python" -c 'import aiohttp, gateway.run' 2> /dev/null; then
  echo "hermes venv: installing hermes-agent[messaging]==$HERMES_PIN into $VENV (had: ${HERMES_VERSION:-none})" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "hermes-agent[messaging]==$HERMES_PIN"
fi
# Bytecode for everything in the venv (pip compiles most of it already; this makes sure).
"$VENV/bin/python" -m compileall -q -j 0 "$VENV/lib" > /dev/null 2>&1 || true
HERMES_VERSION=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("hermes-agent"))')
[ "$HERMES_VERSION" = "$HERMES_PIN" ] || { echo "hermes venv: $VENV holds hermes-agent $HERMES_VERSION, not $HERMES_PIN" >&2; exit 1; }
