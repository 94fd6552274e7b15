#!/usr/bin/env bash
# Checks every URL of health-urls.txt (next to this script) and prints one line per failure;
# prints nothing when all answer 2xx/3xx, so the no_agent job stays silent.
here=$(cd "$(dirname "$0")" && pwd)
while read -r url; do
  case "$url" in ''|'#'*) continue ;; esac
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url" || true)
  case "$code" in
    2??|3??) ;;
    000) echo "DOWN $url (no answer)" ;;
    *) echo "FAIL $url (HTTP $code)" ;;
  esac
done < "$here/health-urls.txt"
