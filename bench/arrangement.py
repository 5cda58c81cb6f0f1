"""A view's batch over a sink's copy of its table (`icesink/engine/sources/arrangement.py`), without Spark: what
applying a COMMIT INTERVAL's moves to a share's copy costs, and what recomputing the groups they touch costs.

    .venv/bin/python bench/arrangement.py [--rows 10000000] [--moves 900000] [--shares 2] [--before]

Fills `bench/views.py`'s `user_events` with --rows events and creates seed 004's `user_activity_summary` and a sink
on it (not run), makes the sink's copies (--shares of them, as a batch on that many cores would), then moves
--moves events to another hour and session with `bench/views.py`'s statements (50,000 a statement, ids in order),
and reads each share's changes as a batch's partition does (`arranged_changes`), one share after another. Prints,
per share, the seconds to apply the changes to the copy and to recompute the touched groups, µs a change, and the
seconds to build the Arrow record batches a partition gives Spark.
`--before` keeps the copy's file as the release before did (a write-ahead log, `synchronous = NORMAL`, no memory
map); the statements that apply the changes are this release's.
A figure, not a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ICESINK_SECRET_STORE", "file")

import icesink  # noqa: E402
from bench.views import KEYS, SETUP, VIEWS, move  # noqa: E402
from icesink.engine.sources import arrangement, input_for, view as view_source  # noqa: E402
from icesink.engine.sources.view import SharedRange, _indexer, arranged_changes, view_batches  # noqa: E402

RATE = 50_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--moves", type=int, default=900_000)
    parser.add_argument("--shares", type=int, default=2)
    parser.add_argument("--before", action="store_true")
    args = parser.parse_args()
    if args.before:
        opened = arrangement.open_share

        def open_share(*arguments):
            db = opened(*arguments)
            db.execute("PRAGMA main.mmap_size = 0")
            db.execute("PRAGMA store.mmap_size = 0")
            db.execute("PRAGMA main.journal_mode = WAL")
            db.execute("PRAGMA main.synchronous = NORMAL")
            return db
        arrangement.open_share = view_source.open_share = open_share

    timings = {"apply": 0.0, "recompute": 0.0}

    def timed(function, name):
        def call(*arguments):
            started = time.perf_counter()
            try:
                return function(*arguments)
            finally:
                timings[name] += time.perf_counter() - started
        return call
    arrangement.apply = timed(arrangement.apply, "apply")  # arranged_changes calls both through their modules
    view_source.recompute_keys = timed(view_source.recompute_keys, "recompute")

    session = icesink.connect(Path(tempfile.mkdtemp(prefix="icesink-bench-arrangement-")))
    started = time.time()
    session.execute(SETUP.format(rows=args.rows, users=args.users, mode="merge-on-read",
                                 view=VIEWS["summary"].format(users=args.users), key=KEYS["summary"]))
    print(f"{args.rows:,} events of {args.users:,} users loaded in {time.time() - started:.1f}s", flush=True)
    sink = session.catalog.get("user_activity_iceberg")
    view = sink.descriptor.view
    relation = session.catalog.get("user_activity_summary")
    columns = [c.as_dict() for c in relation.descriptor.columns]
    made = input_for(session.catalog, relation, view, sink.id)
    made.close()
    arranged, table_id = made.arranged, session.catalog.get("user_events").id
    frontier = session.tables.latest_offset(table_id)
    for part in range(args.shares):
        db = arrangement.open_share(session.data_dir, arranged, part, args.shares)
        try:
            started = time.time()
            arrangement.make(db, arranged, part, args.shares, frontier, _indexer(view, arranged))
            print(f"share {part + 1} of {args.shares}: copy made in {time.time() - started:.1f}s", flush=True)
        finally:
            db.close()

    started = time.time()
    for statement, first in enumerate(range(1, args.moves + 1, RATE)):
        session.execute(move(statement, first, min(first + RATE, args.moves + 1)))
    upto = session.tables.latest_offset(table_id)
    print(f"{args.moves:,} events moved in {time.time() - started:.1f}s ({upto - frontier:,} changes)", flush=True)

    for part in range(args.shares):
        for name in timings:
            timings[name] = 0.0
        started = time.perf_counter()
        pieces = list(arranged_changes(session.data_dir, view, arranged, SharedRange(frontier, upto, part,
                                                                                      args.shares)))
        took = time.perf_counter() - started
        built = time.perf_counter()
        for piece in pieces:
            for _ in view_batches(piece, columns):
                pass
        built = time.perf_counter() - built
        changes = (upto - frontier) / args.shares
        print(f"share {part + 1} of {args.shares}: about {changes:,.0f} changes in {took:.2f}s "
              f"({took / changes * 1e6:.1f} µs a change): applied in {timings['apply']:.2f}s, "
              f"{sum(map(len, pieces)):,} touched groups recomputed in {timings['recompute']:.2f}s; "
              f"then their Arrow rows built in {built:.2f}s", flush=True)
    session.close()
    shutil.rmtree(session.data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
