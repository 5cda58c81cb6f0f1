"""A replicated table's change log: one Parquet segment per store transaction, not a SQLite row per change.

The rows of a table a source replicates stay in the store (SELECT, unchanged TOASTed values and keyless tables need
them), but their log is written differently from an engine table's: the replication's connection has temporary
triggers that put each change (-1 for the old row, +1 for the new one) into an in-memory table, and the
transaction, before it commits, writes them as one Parquet segment over the next offsets and records it. So the
rows, the segment and the source's progress commit together, and the per-change cost of the persistent log (a JSON
entry in two B-trees, written twice through the WAL) is gone. Values are kept as the store keeps them; sinks
convert them a column at a time when they read.

Segments below what every sink of the table acknowledged are deleted (a table with no sink keeps none). A sink that
starts after that reads a snapshot of the store's rows instead, exported with the offset it is consistent with.
"""
from __future__ import annotations

import io
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.json as pjson
import pyarrow.parquet as pq

from ..model.types import Column, column_decoder

# The store's Parquet files (segments, snapshots, a copy's base): a column whose values are mostly distinct (a key, a
# name, a time) gives up its dictionary at 64 KiB rather than at Arrow's 1 MiB, which halves the cost of writing it
# and makes the file smaller; a column of few values keeps its dictionary.
WRITE_OPTIONS = {"dictionary_pagesize_limit": 64 << 10}

SEGMENTS_DIR = "segments"
SNAPSHOTS_DIR = "snapshots"
DIFF = "_icesink_diff"
FETCH_ROWS = 100_000
SNAPSHOT_HOURS = 1  # a snapshot is read by one sink's first batch; one left by a sink dropped before it committed
_ARROW = {"INTEGER": pa.int64(), "REAL": pa.float64(), "TEXT": pa.string()}
# read back as Arrow casts them to the sink's Spark type (the rest are decoded a value at a time)
CAST = {"smallint", "integer", "bigint", "uint2", "uint4", "text", "jsonb", "uuid", "interval", "time", "boolean",
         "real", "double precision"}


def segments_dir(data_dir: Path, table_id: str) -> Path:
    return Path(data_dir).resolve() / SEGMENTS_DIR / table_id


def snapshots_dir(data_dir: Path, table_id: str) -> Path:
    return Path(data_dir).resolve() / SNAPSHOTS_DIR / table_id


def stored_schema(columns, affinity: Callable[[str], str]) -> pa.Schema:
    return pa.schema([pa.field(DIFF, pa.int32(), False)] +
                     [pa.field(c.name, _ARROW[affinity(c.type)]) for c in columns])


def _batches(db, sql: str, schema: pa.Schema, params=()):
    """The rows of `sql` (one per stored entry: diff, then the columns of `schema`) as record batches of `schema`.
    SQLite writes each row as a JSON line and Arrow parses them: twice as fast as Python taking the values one by one.
    REALs travel as text with all 17 digits (SQLite's JSON keeps 15)."""
    from .tables import quote

    def value(index: int, field: pa.Field) -> str:
        name = "diff" if index == 0 else quote(field.name)
        as_text = f"iif({name} IS NULL, NULL, printf('%!.17g', {name}))" if pa.types.is_floating(field.type) else name
        return f"'c{index}', {as_text}"
    lines = f"SELECT json_object({', '.join(value(i, f) for i, f in enumerate(schema))}) FROM ({sql})"
    parsed = pa.schema([pa.field(f"c{i}", pa.string() if pa.types.is_floating(f.type) else f.type)
                        for i, f in enumerate(schema)])
    cursor = db.execute(lines, params)
    while found := cursor.fetchmany(FETCH_ROWS):
        data = "\n".join(line for (line,) in found).encode()
        table = pjson.read_json(io.BytesIO(data), read_options=pjson.ReadOptions(use_threads=False,
                                                                                  block_size=len(data) + 1),
                                parse_options=pjson.ParseOptions(explicit_schema=parsed))
        arrays = [column.combine_chunks().cast(field.type) for column, field in zip(table.columns, schema)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _durable(path: Path) -> None:
    for target in (path, path.parent):
        descriptor = os.open(target, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def _pending(table_id: str, qualified: bool = True) -> str:
    """The in-memory table of a followed table's changes; a trigger's body may not name its schema (temp is
    searched first)."""
    return f'{"temp." if qualified else ""}"pending_{table_id}"'


class SegmentLog:
    """The tables this store connection replicates into, and the segments their changes go to.

    Triggers log a change's old row (-1) and its new row (+1). A writer that holds its new rows as Arrow already (a
    batch folded a column at a time) hands them over with `add_new` instead: the triggers then log old rows only, and
    the segment holds them first, then the new rows. Each key's old row still comes before its new one, which is
    all a reader of a segment relies on (a batch changes a key once)."""

    def __init__(self, store):
        self.store = store
        self.tables: dict[str, tuple[Column, ...]] = {}
        self._logs_new: dict[str, bool] = {}  # by table: whether its triggers log new rows
        self._new: dict[str, list[pa.RecordBatch]] = {}  # by table: new rows handed over in this transaction

    def follow(self, table_id: str, columns) -> None:
        """From now on, this connection's changes to the table's rows are logged as segments. Called outside a
        transaction that changed them, and again when the table gains columns."""
        from .tables import quote

        db = self.store.db
        for event in ("insert", "delete", "update"):  # the persistent log of an older icesink, or of its creation
            db.execute(f"DROP TRIGGER IF EXISTS main.{quote(f'log_{table_id}_{event}')}")
            db.execute(f"DROP TRIGGER IF EXISTS temp.{quote(f'segment_{table_id}_{event}')}")
        db.execute(f"DROP TABLE IF EXISTS {_pending(table_id)}")
        db.execute(f"CREATE TABLE {_pending(table_id)} (diff, {', '.join(quote(c.name) for c in columns)})")
        self.tables[table_id] = tuple(columns)
        self._logs_new.pop(table_id, None)
        self.log_new_rows(table_id, True)
        recorded = {path for (path,) in db.execute("SELECT path FROM segments WHERE table_id = ?", (table_id,))}
        for path in segments_dir(self.store.data_dir, table_id).glob("*.parquet"):
            if str(path.relative_to(self.store.data_dir)) not in recorded:  # written by a transaction rolled back
                path.unlink(missing_ok=True)

    def log_new_rows(self, table_id: str, logged: bool) -> None:
        """Whether the triggers log the table's new rows (else `add_new` hands them over)."""
        from .tables import quote, storage_name

        if self._logs_new.get(table_id) == logged:
            return
        db, table, columns = self.store.db, quote(storage_name(table_id)), self.tables[table_id]
        names = ", ".join(quote(c.name) for c in columns)

        def entry(diff: int, row: str) -> str:
            values = ", ".join(f"{row}.{quote(c.name)}" for c in columns)
            return f"INSERT INTO {_pending(table_id, qualified=False)} (diff, {names}) VALUES ({diff}, {values});"
        for event, body in (("INSERT", entry(1, "NEW") if logged else ""), ("DELETE", entry(-1, "OLD")),
                            ("UPDATE", entry(-1, "OLD") + (entry(1, "NEW") if logged else ""))):
            trigger = quote(f"segment_{table_id}_{event.lower()}")
            db.execute(f"DROP TRIGGER IF EXISTS temp.{trigger}")
            if body:
                db.execute(f"CREATE TEMP TRIGGER {trigger} AFTER {event} ON main.{table} BEGIN {body} END")
        self._logs_new[table_id] = logged

    def add_new(self, table_id: str, columns: list[list]) -> None:
        """New rows of the table written in this transaction (a list of values per column, as the store keeps
        them) while its triggers log old rows only."""
        from .tables import _affinity

        schema = stored_schema(self.tables[table_id], _affinity)
        count = len(columns[0]) if columns else 0
        if count:
            arrays = [pa.array(np.ones(count, dtype=np.int32))] + \
                [pa.array(values, type=field.type) for values, field in zip(columns, list(schema)[1:])]
            self._new.setdefault(table_id, []).append(pa.RecordBatch.from_arrays(arrays, schema=schema))

    def discard(self) -> None:
        """The transaction rolled back: the new rows handed over go with it, and so may the triggers' changes."""
        self._new, self._logs_new = {}, {}

    def seal(self) -> None:
        """Inside the transaction, before it commits: each followed table's changes become its next segment."""
        try:
            for table_id, columns in self.tables.items():
                self._seal(table_id, columns)
        finally:
            self._new = {}

    def _seal(self, table_id: str, columns) -> None:
        from .tables import NOW_MS, _affinity

        db = self.store.db
        new = self._new.get(table_id, [])
        if not new and db.execute(f"SELECT 1 FROM {_pending(table_id)} LIMIT 1").fetchone() is None:
            return
        after = self.store.next_offset()
        directory = segments_dir(self.store.data_dir, table_id)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{after}.parquet"  # a transaction rolled back left one of these: written over
        schema, count = stored_schema(columns, _affinity), 0
        with pq.ParquetWriter(path, schema, **WRITE_OPTIONS) as writer:
            for batch in _batches(db, f"SELECT * FROM {_pending(table_id)} ORDER BY rowid", schema):
                writer.write_batch(batch)
                count += batch.num_rows
            for batch in new:
                writer.write_batch(batch)
                count += batch.num_rows
        _durable(path)
        self.store.reserve(after, count)
        db.execute(f"INSERT INTO segments VALUES (?, ?, ?, {NOW_MS}, ?)",
                   (table_id, after, after + count, str(path.relative_to(self.store.data_dir))))
        db.execute(f"DELETE FROM {_pending(table_id)}")


def segments(store, table_id: str, after: int, upto: int) -> list[tuple[int, int, int, str]]:
    """(after, upto, ts, absolute path) of the table's segments holding offsets in (after, upto], in order."""
    return [(a, b, ts, str(store.data_dir / path)) for a, b, ts, path in store.db.execute(
        "SELECT after, upto, ts, path FROM segments WHERE table_id = ? AND upto > ? AND after < ? ORDER BY after",
        (table_id, after, upto))]


def prune(store, table_id: str, readers: Callable[[], set[str]]) -> int:
    """Deletes the segments (and entries of an older icesink's log) up to what every one of `readers()` (the table's
    sinks) acknowledged, or all of them when it has none, once its copy is in the store; the floor moves there, and a
    sink that starts later reads a snapshot (export_snapshot). Returns the segments deleted."""
    if store.loading(table_id):
        return 0
    with store.transaction():
        acked, sinks = store.acknowledged(table_id), readers()
        target = min((acked.get(r, 0) for r in sinks), default=store.latest_offset(table_id))
        if target <= store.floor(table_id):
            return 0
        gone = [path for (path,) in store.db.execute(
            "SELECT path FROM segments WHERE table_id = ? AND upto <= ?", (table_id, target))]
        store.db.execute("DELETE FROM segments WHERE table_id = ? AND upto <= ?", (table_id, target))
        store.db.execute("DELETE FROM changes WHERE table_id = ? AND offset <= ?", (table_id, target))
        store.db.execute("INSERT INTO log_floor VALUES (?, ?, 0) ON CONFLICT (table_id) DO UPDATE"
                         " SET offset = max(offset, excluded.offset)", (table_id, target))
    for path in gone:
        Path(store.data_dir / path).unlink(missing_ok=True)
    stale = time.time() - SNAPSHOT_HOURS * 3600
    for path in snapshots_dir(store.data_dir, table_id).glob("*.parquet"):
        if path.stat().st_mtime < stale:
            path.unlink(missing_ok=True)
    return len(gone)


def export_snapshot(store, table_id: str, columns) -> tuple[int, str, int]:
    """The table's rows as one Parquet file, with the offset they are consistent with: (offset, path, rows). Read in
    one read transaction, so the rows are exactly those after every change up to that offset."""
    from .tables import _affinity, quote, storage_name

    directory = snapshots_dir(store.data_dir, table_id)
    directory.mkdir(parents=True, exist_ok=True)
    schema = stored_schema(columns, _affinity)
    names = ", ".join(quote(c.name) for c in columns)
    partial = directory / f"{uuid.uuid4().hex}.partial"
    count = 0
    store.db.execute("BEGIN")
    try:
        offset = store.latest_offset(table_id)  # the read transaction starts here: the rows are as of this offset
        with pq.ParquetWriter(partial, schema, **WRITE_OPTIONS) as writer:
            for batch in _batches(store.db, f"SELECT 1 AS diff, {names} FROM {quote(storage_name(table_id))}", schema):
                writer.write_batch(batch)
                count += batch.num_rows
    finally:
        store.db.execute("COMMIT")
    path = directory / f"{offset}-{partial.stem}.parquet"
    partial.rename(path)
    return offset, str(path), count


def snapshot_at(data_dir: Path, table_id: str, offset: int) -> str | None:
    found = sorted(snapshots_dir(data_dir, table_id).glob(f"{offset}-*.parquet"), key=lambda p: p.stat().st_mtime)
    return str(found[-1]) if found else None


def spark_batches(path: str, skip: int, take: int, first: int, ts: int, columns: list[dict], schema: pa.Schema,
                  size: int):
    """Record batches of the sink's change schema (its columns, then offset, diff and ts) from `take` rows of a
    segment or snapshot after its first `skip`; the first of them is the change at offset `first`."""
    import numpy as np

    from .ingest.copy import base_batches

    width = len(columns)
    for batch in base_batches(path, skip, take, size):
        count = batch.num_rows
        arrays = []
        for index, column in enumerate(columns):
            target = schema.field(index).type
            found = batch.schema.get_field_index(column["name"])
            if found < 0:  # written before the column was added
                arrays.append(pa.nulls(count, target))
                continue
            arrays.append(_spark_array(batch.column(found), column, target, first))
        arrays += [pa.array(np.arange(first, first + count, dtype=np.int64)),
                   batch.column(DIFF).cast(schema.field(width + 1).type),
                   pa.array(np.full(count, ts, dtype=np.int64))]
        first += count
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _spark_array(values: pa.Array, column: dict, target: pa.DataType, first: int) -> pa.Array:
    type_name = column["type"]
    try:
        if type_name in CAST:  # a bare type name: numeric(p,s), arrays and the like are decoded
            return values.cast(target, safe=not pa.types.is_floating(target))
        return pa.array(column_decoder(type_name)(values.to_pylist()), type=target)
    except (ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
        raise ValueError(f"column \"{column['name']}\" of the changes from log offset {first} on cannot be read as "
                         f"{type_name}: {exc}") from None


def remove(data_dir: Path, table_id: str) -> None:
    for directory in (segments_dir(data_dir, table_id), snapshots_dir(data_dir, table_id)):
        shutil.rmtree(directory, ignore_errors=True)
