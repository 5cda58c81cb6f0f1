"""What a writing client's INSERT costs as the current hour fills, through icesink's own statements and store: seed
004's `user_events` (--rows events of 100,000 users over a day), with the index a sink on `user_activity_summary`
kept on its input before sinks kept their own copy of a view's table (the hour, then the user, and the other
columns the view reads; a sink still keeps it on a table it makes no copy of, engine/sources/arrangement.py), or
without it, as the table is now; then, once a
second, an INSERT of --rate new events of users all over, all in the next day's first hour, as bench/views.py's
`--changes inserts` client does, with no sink running:

    .venv/bin/python bench/view_writes.py [--rows 10000000] [--rate 50000] [--statements 60] [--index view|none]

Prints, every tenth statement, its seconds (wall, CPU, and the commit's part: writing the pages to the WAL and
checkpointing them), and the medians at the end. A new event's entry goes to its user's place among the hour's
entries, so a statement's entries land on pages all over that hour's part of the index, which grows by --rate
entries a statement. A figure, not a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ICESINK_SECRET_STORE", "file")

import icesink  # noqa: E402
from bench.views import SETUP, VIEWS  # noqa: E402
from icesink.engine import tables  # noqa: E402
from icesink.engine.sources.view import create_indexes  # noqa: E402

USERS = 100_000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rate", type=int, default=50_000, help="events an INSERT adds")
    parser.add_argument("--statements", type=int, default=60)
    parser.add_argument("--index", choices=("view", "none"), default="view")
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-view-writes-"))
    session = icesink.connect(data_dir)
    commits: list[float] = []
    committed = tables._Transaction.__exit__

    def timed_exit(self, *exc):  # the commit, with the checkpoint SQLite runs in it
        started = time.monotonic()
        try:
            return committed(self, *exc)
        finally:
            commits.append(time.monotonic() - started)
    try:
        started = time.time()
        session.execute(SETUP.format(rows=args.rows, users=USERS, mode="merge-on-read", view=VIEWS["summary"],
                                     key="user_id, hour"))
        print(f"{args.rows:,} events loaded in {time.time() - started:.1f}s", flush=True)
        if args.index == "view":
            sink = session.catalog.get("user_activity_iceberg").descriptor
            store = tables.TableStore(data_dir)
            try:
                started = time.time()
                create_indexes(store.db, sink.view, "user_activity_summary")
                print(f"the view's index built in {time.time() - started:.1f}s", flush=True)
            finally:
                store.close()
        tables._Transaction.__exit__ = timed_exit
        walls, cpus, commit_parts = [], [], []
        for statement in range(args.statements):
            first = args.rows + 1 + statement * args.rate
            wall, cpu, before = time.time(), time.process_time(), len(commits)
            session.execute(f"INSERT INTO user_events SELECT n, (n * 7919) % {USERS}, 's' || (n % 50), "
                            f"datetime({1793577600 + statement}, 'unixepoch') "
                            f"FROM generate_series({first}, {first + args.rate - 1}) AS n")
            walls.append(time.time() - wall)
            cpus.append(time.process_time() - cpu)
            commit_parts.append(sum(commits[before:]))
            if statement % 10 == 9:
                print(f"statement {statement + 1} ({(statement + 1) * args.rate:,} events in the hour): "
                      f"{walls[-1]:.2f}s, {cpus[-1]:.2f}s CPU, commit {commit_parts[-1]:.2f}s", flush=True)
            time.sleep(max(0.0, 1 - (time.time() - wall)))
        print(f"index {args.index}, {args.rows:,} events, {args.statements} INSERTs of {args.rate:,}: p50 "
              f"{statistics.median(walls):.2f}s ({statistics.median(cpus):.2f}s CPU, commit "
              f"{statistics.median(commit_parts):.2f}s), first ten {statistics.median(walls[:10]):.2f}s, last ten "
              f"{statistics.median(walls[-10:]):.2f}s", flush=True)
    finally:
        tables._Transaction.__exit__ = committed
        session.close()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
