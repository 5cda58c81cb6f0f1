#!/usr/bin/env bash
# Runs bench/catalog.py and bench/sink.py for an earlier revision and for a later one (default: HEAD, the last
# commit, not the working tree), alternately, in one run, so both see the same machine:
#   bench/side_by_side.sh <revision> [--against <revision>] [sink.py arguments…]
# Each side runs from a worktree of its own with PYTHONPATH set to it, so Spark's Python workers, which import
# icesink themselves, run that side's code too (the venv's editable install points at this tree).
# Prints figures; it is not a test.
set -euo pipefail
rev=${1:?usage: bench/side_by_side.sh <revision> [--against <revision>] [sink.py arguments]}
shift
against=HEAD
if [ "${1:-}" = "--against" ]; then against=${2:?--against needs a revision}; shift 2; fi
here=$(cd "$(dirname "$0")/.." && pwd)
before=$(mktemp -d /tmp/icesink-before-XXXXXX)
after=$(mktemp -d /tmp/icesink-after-XXXXXX)
trap 'git -C "$here" worktree remove --force "$before"; git -C "$here" worktree remove --force "$after"' EXIT
git -C "$here" worktree add --detach --quiet "$before" "$rev"
git -C "$here" worktree add --detach --quiet "$after" "$against"
python="$here/.venv/bin/python"
for round in 1 2; do
  for tree in "$before" "$after"; do
    label=$([ "$tree" = "$after" ] && echo "$against" || echo "$rev")
    echo "== round $round, $label: bench/catalog.py"
    (cd "$tree" && PYTHONPATH="$tree" "$python" bench/catalog.py)
    echo "== round $round, $label: bench/sink.py --keys 1000000 --batch 100000 --interval 5s $*"
    (cd "$tree" && PYTHONPATH="$tree" "$python" bench/sink.py --keys 1000000 --batch 100000 --interval 5s "$@" 2>/dev/null)
  done
done
