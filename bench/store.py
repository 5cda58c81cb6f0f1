"""How fast icesink's store takes a batch of replicated changes, a step at a time, without Postgres or Spark:

    .venv/bin/python bench/store.py --rows 10000000 --batch 200000 [--batches 3] [--savepoint]

Fills a --rows, 4-column table (bigint key, integer, text, timestamptz) in a fresh store, then applies --batches
batches of `bench/postgres.py`'s change mix (half updates, a quarter deletes, a quarter inserts, on random keys), as
the pgoutput messages Postgres sends, the way the replication does: decoded and folded a column at a time
(engine/ingest/columnar.py), or with --one-at-a-time a message at a time (pgoutput.py, subsource.py `stage`). It
prints for each batch the time to decode and fold the changes, to write them (the store's upserts and deletes, with
the temporary triggers' entries), to write them as the batch's Parquet segment (engine/segments.py) and to commit.
--savepoint wraps the batch in a savepoint, as the replication once did. A figure, not a test.
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

from bench.decode import OID, relation_message, row_messages  # noqa: E402
from icesink.engine.ingest import columnar  # noqa: E402
from icesink.engine.ingest.pgoutput import Decoder  # noqa: E402
from icesink.engine.ingest.postgres import LOAD_ROWS  # noqa: E402
from icesink.engine.ingest.subsource import Subsource  # noqa: E402
from icesink.engine.ingest.stream import Taken  # noqa: E402
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
    parser.add_argument("--checkpoint-on-commit", action="store_true",
                        help="the commit copies the WAL into the database, as SQLite does by default")
    parser.add_argument("--one-at-a-time", action="store_true", help="decode and fold a message at a time")
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
    if not args.checkpoint_on_commit:
        store.checkpoint_apart()

    decoder = Decoder()
    decoder.feed(relation_message())
    sub = Subsource(types.SimpleNamespace(id="t", descriptor=types.SimpleNamespace(columns=COLUMNS,
                                                                                   primary_key=("id",))))
    sub.bind(decoder.relations[OID], {})
    rng, next_id = random.Random(1), args.rows
    for _ in range(args.batches):
        sent = row_messages(rng, args.batch, args.rows, next_id)
        next_id += args.batch
        taken = Taken.of(sent, [len(sent)], [1])
        began = time.time()
        with store.transaction() as db:
            if args.savepoint:
                db.execute("SAVEPOINT batch")
            if args.one_at_a_time:
                store.segments.log_new_rows("t", True)
                for change in taken.decode(decoder)[0].changes:
                    sub.stage(db, change)
                folded = time.time()
                sub.flush(db)
            else:
                changes = columnar.fold(taken, decoder, {"public.t": sub}, 0)["public.t"]
                folded = time.time()
                sub.write(db, changes, store.segments)
            if args.savepoint:
                db.execute("RELEASE batch")
            written = time.time()
            store.segments.seal()  # what the transaction does before it commits, timed on its own
            sealed = time.time()
        done = time.time()
        print(f"{args.batch:,} changes: decode and fold {folded - began:.2f}s, write {written - folded:.2f}s, segment "
              f"{sealed - written:.2f}s, commit {done - sealed:.2f}s: {args.batch / (done - began):,.0f} changes/s "
              f"({1e6 * (done - began) / args.batch:.1f} µs each)", flush=True)


if __name__ == "__main__":
    main()
