#!/usr/bin/env bash
# Runs bench/catalog.py and bench/sink.py for an earlier revision and for this tree, alternately, in one run,
# so both see the same machine:  bench/side_by_side.sh <revision> [sink.py arguments…]
# Prints figures; it is not a test.
set -euo pipefail
rev=${1:?usage: bench/side_by_side.sh <revision> [sink.py arguments]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
before=$(mktemp -d /tmp/icesink-before-XXXXXX)
trap 'git -C "$here" worktree remove --force "$before"' EXIT
git -C "$here" worktree add --detach --quiet "$before" "$rev"
python="$here/.venv/bin/python"
for round in 1 2; do
  for tree in "$before" "$here"; do
    label=$([ "$tree" = "$here" ] && echo "this tree" || echo "$rev")
    echo "== round $round, $label: bench/catalog.py"
    (cd "$tree" && "$python" bench/catalog.py)
    echo "== round $round, $label: bench/sink.py --keys 1000000 --batch 100000 --interval 5s $*"
    (cd "$tree" && "$python" bench/sink.py --keys 1000000 --batch 100000 --interval 5s "$@" 2>/dev/null)
  done
done
