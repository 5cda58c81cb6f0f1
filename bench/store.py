"""How fast icesink's store takes a batch of replicated changes, a step at a time, without Postgres or Spark:

    .venv/bin/python bench/store.py --rows 10000000 --batch 200000 [--batches 3] [--savepoint]

Fills a --rows, 4-column table (bigint key, integer, text, timestamptz) in a fresh store, then applies --batches
batches of `bench/postgres.py`'s change mix (half updates, a quarter deletes, a quarter inserts, on random keys) as
the replication does (engine/ingest/subsource.py), and prints for each batch the time to fold the changes, to
write them (the store's upserts and deletes, with the temporary triggers' entries), to write them as the batch's
Parquet segment (engine/segments.py) and to commit. --savepoint wraps the batch in a savepoint, as the replication
once did. A figure, not a test.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icesink.engine.ingest.pgoutput import Change, Relation  # noqa: E402
from icesink.engine.ingest.postgres import LOAD_ROWS  # noqa: E402
from icesink.engine.ingest.subsource import Subsource  # noqa: E402
from icesink.engine.tables import TableStore, base_dir  # noqa: E402
from icesink.model.types import Column  # noqa: E402

COLUMNS = (Column("id", "bigint", False), Column("a", "integer", False), Column("b", "text"),
           Column("c", "timestamp with time zone"))
TS = "2026-11-23 11:55:01.123456+00"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--batch", type=int, default=200_000)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--savepoint", action="store_true")
    args = parser.parse_args()

    data_dir = Path(tempfile.mkdtemp(prefix="icesink-store-"))
    store = TableStore(data_dir, writer=True)
    store.create("t", COLUMNS, ("id",))
    started = time.time()
    with store.transaction():  # loaded as a copy is, without a log entry per row; the file is never read here
        store.add_base("t", [(str(base_dir(data_dir, "t") / "unread.parquet"), args.rows)])
    for first in range(0, args.rows, LOAD_ROWS):
        last = min(args.rows, first + LOAD_ROWS)
        store.load_base("t", COLUMNS, [(n, n % 1000, f"row {n}", TS) for n in range(first, last)], last)
    print(f"{args.rows:,} rows stored in {time.time() - started:.1f}s")
    store.segments.follow("t", COLUMNS)  # as the replication does once the copy is in

    sub = Subsource(types.SimpleNamespace(id="t", descriptor=types.SimpleNamespace(columns=COLUMNS,
                                                                                   primary_key=("id",))))
    sub.bind(Relation(1, "public", "t", "d", [c.name for c in COLUMNS], ["id"], []), {})
    rng, next_id = random.Random(1), args.rows
    for _ in range(args.batches):
        changes = []
        for _ in range(args.batch):
            roll, key = rng.random(), str(rng.randrange(args.rows))
            if roll < 0.5:
                changes.append(Change("update", 1, new=[key, "1", f"row {key}", TS]))
            elif roll < 0.75:
                changes.append(Change("delete", 1, old=[key, None, None, None]))
            else:
                changes.append(Change("insert", 1, new=[str(next_id), "0", "new", TS]))
                next_id += 1
        began = time.time()
        with store.transaction() as db:
            if args.savepoint:
                db.execute("SAVEPOINT batch")
            for change in changes:
                sub.stage(db, change)
            folded = time.time()
            sub.flush(db)
            if args.savepoint:
                db.execute("RELEASE batch")
            written = time.time()
            store.segments.seal()  # what the transaction does before it commits, timed on its own
            sealed = time.time()
        done = time.time()
        print(f"{args.batch:,} changes: fold {folded - began:.2f}s, write {written - folded:.2f}s, segment "
              f"{sealed - written:.2f}s, commit {done - sealed:.2f}s: {args.batch / (done - began):,.0f} changes/s "
              f"({1e6 * (done - began) / args.batch:.0f} µs each)", flush=True)


if __name__ == "__main__":
    main()
