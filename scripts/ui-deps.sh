#!/usr/bin/env bash
# Installs what the dashboard's browser tests (tests/ui.rs) need: Debian's Chromium and its
# WebDriver (chromium-driver → /usr/bin/chromedriver). Does nothing when both are present.
# Called by scripts/test.sh; run it by hand before `cargo test --test ui`.
set -euo pipefail

if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver > /dev/null
echo "installed: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) / $(/usr/bin/chromedriver --version 2>/dev/null || echo chromedriver)"
