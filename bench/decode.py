"""How fast the replication decodes pgoutput and folds the changes per key, without Postgres or the store:

    .venv/bin/python bench/decode.py [--changes 200000]

Builds the messages Postgres sends for `bench/postgres.py`'s change mix (half updates, a quarter deletes, a quarter
inserts, on random keys of a 4-column table) and prints the µs per change of decoding them into whole transactions
(engine/ingest/pgoutput.py) and of folding them per key (engine/ingest/subsource.py `stage`), a message at a time,
and of both a column at a time into the values the store takes (engine/ingest/columnar.py), as the replication
does. A figure, not a test.
"""
from __future__ import annotations

import argparse
import random
import struct
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icesink.engine.ingest import columnar  # noqa: E402
from icesink.engine.ingest.pgoutput import UNCHANGED, Decoder  # noqa: E402
from icesink.engine.ingest.stream import Taken  # noqa: E402
from icesink.engine.ingest.subsource import Subsource  # noqa: E402
from icesink.model.types import Column  # noqa: E402

OID = 16384
COLUMNS = (Column("id", "bigint", False), Column("a", "integer", False), Column("b", "text"),
           Column("c", "timestamp with time zone"))
TYPES = (20, 23, 25, 1184)
TS = "2026-11-23 11:55:01.123456+00"


def tuple_data(values) -> bytes:
    """pgoutput's TupleData of text values (None: NULL; pgoutput.UNCHANGED: an unchanged TOASTed value)."""
    out = struct.pack(">h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value is UNCHANGED:
            out += b"u"
        else:
            data = value.encode()
            out += b"t" + struct.pack(">i", len(data)) + data
    return out


def relation_message() -> bytes:
    relation = b"R" + struct.pack(">I", OID) + b"public\0t\0d" + struct.pack(">h", len(COLUMNS))
    for column, oid in zip(COLUMNS, TYPES):
        relation += bytes([column.name == "id"]) + column.name.encode() + b"\0" + struct.pack(">Ii", oid, -1)
    return relation


def row_messages(rng: random.Random, count: int, rows: int, first_new: int) -> list[bytes]:
    """One transaction of `count` changes on random keys below `rows`; inserted keys start at `first_new`."""
    found, head = [b"B" + struct.pack(">qqi", 0, 0, 1)], struct.pack(">I", OID)
    for n in range(count):
        roll, key = rng.random(), str(rng.randrange(rows))
        if roll < 0.5:
            found.append(b"U" + head + b"N" + tuple_data([key, "1", f"row {key}", TS]))
        elif roll < 0.75:
            found.append(b"D" + head + b"K" + tuple_data([key, None, None, None]))
        else:
            found.append(b"I" + head + b"N" + tuple_data([str(first_new + n), "0", "new", TS]))
    return found + [b"C" + struct.pack(">bqqq", 0, 1, 2, 3)]


def messages(count: int) -> list[bytes]:
    return [relation_message()] + row_messages(random.Random(1), count, 10_000_000, 10_000_000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=200_000)
    args = parser.parse_args()
    sent, decoder = messages(args.changes), Decoder()
    began = time.perf_counter()
    transactions = [t for t in map(decoder.feed, sent) if t is not None]
    decoded = time.perf_counter()
    sub = Subsource(types.SimpleNamespace(id="t", descriptor=types.SimpleNamespace(columns=COLUMNS,
                                                                                   primary_key=("id",))))
    sub.bind(decoder.relations[OID], {})
    folding = time.perf_counter()
    for change in transactions[0].changes:
        sub.stage(None, change)
    folded = time.perf_counter()
    sent = sent[1:]  # the decoder knows the table: a batch after the first
    taken = Taken.of(sent, [len(sent)], [2])
    sub.discard()
    columns = time.perf_counter()
    columnar.fold(taken, decoder, {"public.t": sub}, 0)
    done = time.perf_counter()
    print(f"{args.changes:,} changes a message at a time: decoding {1e6 * (decoded - began) / args.changes:.2f} µs "
          f"each, folding per key {1e6 * (folded - folding) / args.changes:.2f} µs each; a column at a time, both "
          f"with the values converted for the store: {1e6 * (done - columns) / args.changes:.2f} µs each")


if __name__ == "__main__":
    main()
