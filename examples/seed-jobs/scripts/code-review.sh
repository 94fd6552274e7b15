#!/usr/bin/env bash
# Prints the last 7 days of commits and their diff --stat for the repository named in
# review-repo.txt (next to this script). Nothing new: {"wakeAgent": false}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(head -n 1 "$here/review-repo.txt")
cd "$repo"
log=$(git log --since='7 days ago' --no-merges --format='%h %an: %s')
if [ -z "$log" ]; then
  echo '{"wakeAgent": false}'
  exit 0
fi
echo "## git log (last 7 days)"
echo "$log"
oldest=$(git log --since='7 days ago' --no-merges --format='%H' | tail -n 1)
echo
echo "## git diff --stat"
if git rev-parse -q --verify "$oldest^" > /dev/null; then
  git diff --stat "$oldest^" HEAD
else
  git show --stat --format= "$oldest"; git diff --stat "$oldest" HEAD
fi
