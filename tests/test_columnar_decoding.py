"""A batch of pgoutput messages decoded and folded a column at a time (engine/ingest/columnar.py) ends with what the
replication's message-at-a-time path (pgoutput.Decoder, Subsource.stage) leaves: the same keys deleted and the
same rows, value for value, over randomized batches of inserts, updates (with and without the old key, moving rows
to other keys), deletions and NULLs; and batches it cannot take are refused before anything is applied. The end to
end tests against PostgreSQL (test_postgres_cdc.py) take both paths with real messages."""
from __future__ import annotations

import random
import struct
import types

import pytest

from bench.decode import tuple_data
from icesink.engine.ingest import columnar
from icesink.engine.ingest.columnar import NotColumnar
from icesink.engine.ingest.pgoutput import UNCHANGED, Decoder
from icesink.engine.ingest.stream import Taken
from icesink.engine.ingest.subsource import GONE, Subsource
from icesink.model.types import Column

TS = "2026-11-23 11:55:01.5+00"


def _relation(oid: int, name: str, columns, key: tuple[str, ...], identity: str = "d") -> bytes:
    message = b"R" + struct.pack(">I", oid) + b"public\0" + name.encode() + b"\0" + identity.encode()
    message += struct.pack(">h", len(columns))
    for column, type_oid in columns:
        message += bytes([column in key]) + column.encode() + b"\0" + struct.pack(">Ii", type_oid, -1)
    return message


def _begin() -> bytes:
    return b"B" + struct.pack(">qqi", 0, 0, 1)


def _commit(end_lsn: int) -> bytes:
    return b"C" + struct.pack(">bqqq", 0, end_lsn - 1, end_lsn, 7)


def _taken(transactions: list[tuple[int, list[bytes]]]) -> Taken:
    """Transactions (end LSN, messages between Begin and Commit) as a take hands them over."""
    messages, ends, lsns = [], [], []
    for end_lsn, body in transactions:
        messages += [_begin(), *body, _commit(end_lsn)]
        ends.append(len(messages))
        lsns.append(end_lsn)
    return Taken.of(messages, ends, lsns)


def _subsource(name: str, columns: tuple[Column, ...], key: tuple[str, ...], relation) -> Subsource:
    sub = Subsource(types.SimpleNamespace(id=name, descriptor=types.SimpleNamespace(columns=columns,
                                                                                      primary_key=key)))
    sub.bind(relation, {})
    return sub


ORDERS = (Column("id", "bigint", False), Column("qty", "integer"), Column("note", "text"),
          Column("at", "timestamp with time zone"))
PAIRS = (Column("region", "text", False), Column("n", "integer", False), Column("v", "double precision"))
ORDERS_OID, PAIRS_OID, OTHER_OID = 16384, 16390, 16400


def _described() -> tuple[Decoder, dict[str, Subsource]]:
    decoder = Decoder()
    decoder.feed(_relation(ORDERS_OID, "orders", [("id", 20), ("qty", 23), ("note", 25), ("at", 1184)], ("id",)))
    decoder.feed(_relation(PAIRS_OID, "pairs", [("region", 25), ("n", 23), ("v", 701)], ("region", "n"), "f"))
    decoder.feed(_relation(OTHER_OID, "other", [("x", 23)], ("x",)))
    subs = {"public.orders": _subsource("o", ORDERS, ("id",), decoder.relations[ORDERS_OID]),
            "public.pairs": _subsource("p", PAIRS, ("region", "n"), decoder.relations[PAIRS_OID])}
    return decoder, subs


def _random_batch(rng: random.Random, transactions: int) -> list[tuple[int, list[bytes]]]:
    orders, pairs, found = set(range(20)), {(r, n) for r in "ab" for n in range(5)}, []
    head = {oid: struct.pack(">I", oid) for oid in (ORDERS_OID, PAIRS_OID, OTHER_OID)}
    lsn = 1000
    for _ in range(transactions):
        body = []
        for _ in range(rng.randrange(1, 30)):
            roll = rng.random()
            if roll < 0.55:
                key = rng.randrange(30)
                row = [str(key), rng.choice([None, str(rng.randrange(-5, 5))]), rng.choice([None, "", "é 'x'\t"]),
                       rng.choice([None, TS])]
                if key not in orders:
                    body.append(b"I" + head[ORDERS_OID] + b"N" + tuple_data(row))
                    orders.add(key)
                elif rng.random() < 0.3:  # the key changes: the old key comes first
                    moved = rng.randrange(30, 60)
                    if moved in orders:
                        continue
                    row[0] = str(moved)
                    body.append(b"U" + head[ORDERS_OID] + b"K" + tuple_data([str(key), None, None, None]) + b"N" +
                                tuple_data(row))
                    orders.discard(key)
                    orders.add(moved)
                else:
                    body.append(b"U" + head[ORDERS_OID] + b"N" + tuple_data(row))
            elif roll < 0.7 and orders:
                key = rng.choice(sorted(orders))
                body.append(b"D" + head[ORDERS_OID] + b"K" + tuple_data([str(key), None, None, None]))
                orders.discard(key)
            elif roll < 0.9:  # REPLICA IDENTITY FULL: updates and deletions carry the whole old row
                key = (rng.choice("abc"), rng.randrange(6))
                value = rng.choice([None, "1.5", "-0", "-Infinity", "1e300"])
                old = [key[0], str(key[1]), "2.25"]
                if key not in pairs:
                    body.append(b"I" + head[PAIRS_OID] + b"N" + tuple_data([key[0], str(key[1]), value]))
                    pairs.add(key)
                elif rng.random() < 0.5:
                    body.append(b"U" + head[PAIRS_OID] + b"O" + tuple_data(old) + b"N" +
                                tuple_data([key[0], str(key[1]), value]))
                else:
                    body.append(b"D" + head[PAIRS_OID] + b"O" + tuple_data(old))
                    pairs.discard(key)
            else:  # a table the source does not replicate
                body.append(b"I" + head[OTHER_OID] + b"N" + tuple_data([str(rng.randrange(100))]))
        lsn += rng.randrange(1, 100)
        found.append((lsn, body))
    return found


def _one_at_a_time(taken: Taken, decoder: Decoder, subs: dict[str, Subsource], after: int, copied_at: dict):
    """What the message-at-a-time path leaves pending per subsource: (deleted keys, rows), sorted by key."""
    result = {}
    for transaction in taken.decode(decoder):
        if transaction.end_lsn <= after:
            continue
        for change in transaction.changes:
            sub = subs.get(change.relation.qualified)
            if sub is not None and transaction.end_lsn > copied_at.get(change.relation.qualified, 0):
                sub.stage(None, change)
    for name, sub in subs.items():
        if sub.pending:
            deleted = sorted(k for k, v in sub.pending.items() if v is GONE)
            rows = [tuple(sub.pending[k]) for k in sorted(k for k, v in sub.pending.items() if v is not GONE)]
            result[name] = (deleted, rows)
        sub.discard()
    return result


@pytest.mark.parametrize("seed", range(12))
def test_a_batch_folded_a_column_at_a_time_equals_the_batch_folded_a_change_at_a_time(seed):
    rng = random.Random(seed)
    batch = _random_batch(rng, rng.randrange(1, 40))
    taken = _taken(batch)
    after = batch[rng.randrange(len(batch))][0] if seed % 3 == 0 else 0  # applied before a crash: skipped
    copied_at = {"public.pairs": batch[len(batch) // 2][0]} if seed % 4 == 1 else {}
    decoder, subs = _described()
    for name, lsn in copied_at.items():
        subs[name].copied_at = lsn
    folded = columnar.fold(taken, decoder, subs, after)
    expected = _one_at_a_time(taken, decoder, subs, after, copied_at)
    assert {name: (f.deleted, f.rows) for name, f in folded.items() if f.deleted or f.rows} == expected
    assert expected  # the batch changed something


def test_a_batch_the_columns_cannot_take_is_refused_before_anything_is_applied():
    decoder, subs = _described()
    head = struct.pack(">I", ORDERS_OID)
    toasted = _taken([(10, [b"U" + head + b"N" + tuple_data(["1", "2", UNCHANGED, None])])])
    with pytest.raises(NotColumnar, match="unchanged TOASTed"):
        columnar.fold(toasted, decoder, subs, 0)
    truncated = _taken([(10, [b"T" + struct.pack(">IbI", 1, 0, ORDERS_OID)])])
    with pytest.raises(NotColumnar, match="kind 'T'"):
        columnar.fold(truncated, decoder, subs, 0)
    widened = _relation(ORDERS_OID, "orders", [("id", 20), ("qty", 23), ("note", 25), ("at", 1184), ("x", 23)],
                        ("id",))
    described = _taken([(10, [widened, b"I" + head + b"N" + tuple_data(["1", "2", "3", None, "5"])])])
    with pytest.raises(NotColumnar, match="described anew"):
        columnar.fold(described, decoder, subs, 0)
    assert decoder.relations[ORDERS_OID] is subs["public.orders"].relation  # the decoder learnt nothing yet
    same = _relation(ORDERS_OID, "orders", [("id", 20), ("qty", 23), ("note", 25), ("at", 1184)], ("id",))
    again = columnar.fold(_taken([(10, [same, b"I" + head + b"N" + tuple_data(["1", "2", "3", None])])]), decoder, subs, 0)
    assert again["public.orders"].rows == [(1, 2, "3", None)]  # described again as it was: taken whole


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_written_a_column_at_a_time_leaves_the_rows_and_segment_the_old_way_leaves(tmp_path, seed):
    """Into a real store: the rows, and the segment's entries (old rows -1, new rows +1), whichever way a batch
    goes, including keys deleted and inserted again and rows moved to other keys."""
    from collections import Counter

    import pyarrow.parquet as pq

    from icesink.engine.segments import segments
    from icesink.engine.tables import TableStore

    batch = _random_batch(random.Random(seed), 30)
    found = {}
    for way in ("columns", "messages"):
        (tmp_path / way).mkdir()
        store = TableStore(tmp_path / way, writer=True)
        decoder, subs = _described()
        for sub, key, rows in ((subs["public.orders"], ("id",), [(k, 1, "x", None) for k in range(20)]),
                               (subs["public.pairs"], ("region", "n"), [(r, n, 0.5) for r in "ab" for n in range(5)])):
            store.create(sub.obj.id, sub.columns, key)
            store.load_base(sub.obj.id, sub.columns, rows, len(rows))
            store.segments.follow(sub.obj.id, sub.columns)
        taken = _taken(batch)
        with store.transaction() as db:
            if way == "columns":
                for name, changes in columnar.fold(taken, decoder, subs, 0).items():
                    subs[name].write(db, changes, store.segments)
            else:
                for sub in subs.values():
                    store.segments.log_new_rows(sub.obj.id, True)
                for transaction in taken.decode(decoder):
                    for change in transaction.changes:
                        if change.relation.qualified in subs:
                            subs[change.relation.qualified].stage(db, change)
                for sub in subs.values():
                    sub.flush(db)
        found[way] = {sub.obj.id: (store.query(f'SELECT * FROM "t_{sub.obj.id}" ORDER BY 1, 2')[1],
                                   Counter(tuple(r.values()) for _, _, _, path in segments(store, sub.obj.id, 0, 10**9)
                                           for r in pq.read_table(path).to_pylist()))
                      for sub in subs.values()}
        store.close()
    assert found["columns"] == found["messages"]
    assert any(entries for _, entries in found["columns"].values())


def test_tables_the_columns_cannot_take_whole_go_a_message_at_a_time():
    decoder, subs = _described()
    keys_only = (Column("a", "integer", False), Column("b", "text", False))
    decoder.feed(_relation(16500, "tags", [("a", 23), ("b", 25)], ("a", "b")))
    subs["public.tags"] = _subsource("g", keys_only, ("a", "b"), decoder.relations[16500])
    inserted = _taken([(10, [b"I" + struct.pack(">I", 16500) + b"N" + tuple_data(["1", "x"])])])
    with pytest.raises(NotColumnar, match="nothing but a key"):  # an existing row written again logs no old row
        columnar.fold(inserted, decoder, subs, 0)
    renamed = _relation(ORDERS_OID, "orders_old", [("id", 20), ("qty", 23), ("note", 25), ("at", 1184)], ("id",))
    head = struct.pack(">I", ORDERS_OID)
    with pytest.raises(NotColumnar, match="described anew"):  # the same columns under another name
        columnar.fold(_taken([(10, [renamed, b"I" + head + b"N" + tuple_data(["1", "2", "3", None])])]), decoder,
                      subs, 0)
