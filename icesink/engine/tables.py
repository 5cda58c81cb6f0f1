"""Engine tables: current rows in SQLite, every change appended to a durable log with increasing offsets.

Triggers write the log in the same transaction as the rows, so a write that returns is in both, and a sink
reading offsets (after, upto] sees every change exactly once, in order.

Readers acknowledge the offset their sink committed. Below the lowest acknowledgment of a table's readers
(its floor) the log is compacted: a row inserted and later deleted leaves no entry, so what stays is each
live row's insertion, a consistent snapshot for a sink created later, and the log stays the size of the
table plus its unacknowledged tail.

A table a source copied (a Postgres subsource) starts with a *base*: the copy's Parquet files, read by sinks as
insertions at a range of offsets reserved for them, so millions of copied rows need no log entry each. Its changes
after that are logged as Parquet segments (segments.py), not by triggers.
"""
from __future__ import annotations

from decimal import Decimal, InvalidOperation

import contextlib
import json
import os
import shutil
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..catalog.sqlite import connect_wal, database_errors, raised_in_function, sql_function, sqlite_message
from ..errors import CatalogError
from ..model.types import Column, base_type
from . import segments
from .values import InvalidValue, column_input, input_function

TABLES_FILE = "tables.db"
BASES_DIR = "bases"
NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"  # a change's time, as logged
COMPACT_AT_LEAST = 100  # log entries: fewer are not worth a compaction
COMPACT_PAIRS = 10_000  # insert-and-delete pairs removed per transaction (a pair is never split)

_AFFINITY = {
    "smallint": "INTEGER", "integer": "INTEGER", "bigint": "INTEGER", "boolean": "INTEGER",
    "uint2": "INTEGER", "uint4": "INTEGER",  # uint8 goes past SQLite's integers: kept as decimal text
    "real": "REAL", "double precision": "REAL",
}
_TYPEOF = {"INTEGER": "'integer'", "REAL": "'real', 'integer'", "TEXT": "'text'"}


def is_engine_table(obj) -> bool:
    """Whether a catalog object (or a plan to create one) is a table whose rows icesink keeps itself, as opposed to
    one a source feeds."""
    return obj.kind == "table" and obj.descriptor.is_engine_table


def base_dir(data_dir: Path, table_id: str) -> Path:
    """Where copies of a table are written (see TableStore.add_base)."""
    return Path(data_dir).resolve() / BASES_DIR / table_id


def storage_name(table_id: str) -> str:
    return f"t_{table_id}"


def generated_name(relation_id: str) -> str:
    """A load generator's relation, as Spark SQL names it in a query over generators alone (its rows made on the
    executors); a sink made by an older icesink may name it so in a view's SQLite query."""
    return f"g_{relation_id}"


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


NUMERIC_COLLATION = "icesink_numeric"


def add_input_function(db: sqlite3.Connection) -> None:
    """icesink_in(type, column, value): a column type's input function, which writes and casts call."""
    db.create_function("icesink_in", 3, sql_function(column_input), deterministic=True)


def _exact_real(value):
    """A REAL as the change log keeps it: text that reads back as the same double (SQLite's JSON keeps 15 digits of
    17, and would turn 0.30000000000000004 into 0.3)."""
    return repr(value) if isinstance(value, float) else value


def _compare_numeric(a: str, b: str) -> int:
    """numeric values are kept as exact decimal text; comparing them as text would put '9.50' above '10.00'."""
    try:
        x, y = Decimal(a), Decimal(b)
    except InvalidOperation:
        x, y = a, b
    else:
        if x.is_nan() or y.is_nan():  # Postgres orders NaN above every number, equal to itself (Decimal raises)
            return x.is_nan() - y.is_nan()
    return (x > y) - (x < y)


def column_definition(column: Column, checked: bool = True) -> str:
    """A column as the store declares it; not `checked`, without its NOT NULL and type check (a copy of rows that
    were checked as written)."""
    affinity = _affinity(column.type)
    collate = f" COLLATE {NUMERIC_COLLATION}" if base_type(column.type) in ("numeric", "uint8") else ""
    if not checked:
        return f"{quote(column.name)} {affinity}{collate}"
    check = (f"CONSTRAINT {quote('type:' + column.name)} "
             f"CHECK (typeof({quote(column.name)}) IN ({_TYPEOF[affinity]}, 'null'))")
    null = "" if column.nullable else " NOT NULL"
    return f"{quote(column.name)} {affinity}{collate}{null} {check}"


def _affinity(type_name: str) -> str:
    # bytea is kept as Postgres hex text ('\\x…'): the JSON change log cannot hold blobs
    return _AFFINITY.get(base_type(type_name), "TEXT")


@dataclass(frozen=True)
class Base:
    """A copy of a table as Parquet files (absolute paths, and their rows), read by sinks as its insertions at
    offsets (after, upto] of ts; `loaded` of its rows are in the table itself so far."""
    after: int
    upto: int
    ts: int
    files: tuple[tuple[str, int], ...]
    loaded: int

    @property
    def rows(self) -> int:
        return self.upto - self.after

    @property
    def loading(self) -> bool:
        """Whether some of its rows are not in the table yet."""
        return self.loaded < self.rows


# The page cache of a connection that writes tables, in MiB. A transaction's changes land on keys all over a table
# and its indexes, and the pages it dirties past the cache are spilled to the write-ahead log and read back from
# there. SQLite's default, 2 MB, took 2.2 s for a 50,000-row UPDATE of a 10M-row table with a view's index that
# 128 MiB took in 1.3-1.5 s. More helps a large table a little more (bench/store.py, 10M rows, 500k changes a
# batch: writes 2.1-3.5 s with 1 GiB against 3.1-5.9 s), but a writer takes it all once its table is that large.
CACHE_VARIABLE = "ICESINK_STORE_CACHE_MIB"
WRITER_CACHE_MIB = 128
# A connection that only reads reads the store's file through a memory map (SQLite caps it at 2 GiB) rather than
# copying each page it lacks into its 2 MB cache: a view's batch looks up its touched groups' rows all over a table
# and its index, and over 1M events recomputed 100,000 groups in 1.45-2.10 s instead of 2.11-2.20 s (alternately,
# in one process). A writer keeps to its cache: its file grows as it writes (SQLite maps it again as it does), and
# what it maps counts as its own memory: bench/bulk.py's INSERT of 250,000 rows grew its process by 67 MB with a
# map, by 0-4 MB without.
MMAP_BYTES = 1 << 40


def writer_cache_mib() -> int:
    """The writers' page cache: ICESINK_STORE_CACHE_MIB, else 128 MiB."""
    given = os.environ.get(CACHE_VARIABLE, "").strip()
    if not given:
        return WRITER_CACHE_MIB
    if not given.isdigit() or int(given) == 0:
        raise CatalogError(f"{CACHE_VARIABLE} is the page cache of icesink's store in MiB, a whole number above 0, "
                           f"not {given!r}")
    return int(given)


def add_store_functions(db: sqlite3.Connection) -> None:
    """What a connection needs to read and write the store's tables: their input function, real and numeric
    collation."""
    add_input_function(db)
    db.create_function("icesink_real", 1, _exact_real, deterministic=True)
    db.create_collation(NUMERIC_COLLATION, _compare_numeric)


class TableStore:
    def __init__(self, data_dir: Path, writer: bool = False):
        """`writer`: a connection that writes tables (a session's statements, a replication), which keeps a large
        page cache."""
        self.data_dir = Path(data_dir).resolve()
        path = self.data_dir / TABLES_FILE
        cache_kib = writer_cache_mib() << 10 if writer else None  # read first: a bad setting opens no file
        with database_errors(path, "engine tables"):
            self.db = connect_wal(path)
            add_store_functions(self.db)
            self.db.execute("PRAGMA synchronous = FULL")  # a write returns only once it is on disk
            if cache_kib:
                self.db.execute(f"PRAGMA cache_size = -{cache_kib}")
            else:
                self.db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            self.db.execute("CREATE TABLE IF NOT EXISTS changes (offset INTEGER PRIMARY KEY AUTOINCREMENT,"
                            " table_id TEXT NOT NULL, diff INTEGER NOT NULL, ts INTEGER NOT NULL, row TEXT NOT NULL)")
            self.db.execute("CREATE INDEX IF NOT EXISTS changes_by_table ON changes(table_id, offset)")
            self.db.execute("CREATE TABLE IF NOT EXISTS acknowledged (reader TEXT NOT NULL, table_id TEXT NOT NULL,"
                            " offset INTEGER NOT NULL, PRIMARY KEY (reader, table_id))")
            self.db.execute("CREATE TABLE IF NOT EXISTS log_floor (table_id TEXT PRIMARY KEY, offset INTEGER NOT NULL,"
                            " kept INTEGER NOT NULL)")  # kept: entries up to offset that the last compaction left
            # the changes after `offset` hold `width` columns: a reader that knows fewer stops before them
            self.db.execute("CREATE TABLE IF NOT EXISTS widened (table_id TEXT NOT NULL, offset INTEGER NOT NULL,"
                            " width INTEGER NOT NULL, PRIMARY KEY (table_id, width))")
            self.db.execute("CREATE TABLE IF NOT EXISTS bases (table_id TEXT PRIMARY KEY, after INTEGER NOT NULL,"
                            " upto INTEGER NOT NULL, ts INTEGER NOT NULL, files TEXT NOT NULL, loaded INTEGER NOT NULL)")
            self.db.execute("CREATE TABLE IF NOT EXISTS segments (table_id TEXT NOT NULL, after INTEGER NOT NULL,"
                            " upto INTEGER NOT NULL, ts INTEGER NOT NULL, path TEXT NOT NULL,"
                            " PRIMARY KEY (table_id, after))")
            # a load generator's relation kept as a table: the tick its rows are up to, and the pieces of the next
            # tick's snapshot they hold (generated_tables.py)
            self.db.execute("CREATE TABLE IF NOT EXISTS generated_ticks (table_id TEXT PRIMARY KEY,"
                            " tick INTEGER NOT NULL, pieces INTEGER NOT NULL)")
        self.segments = segments.SegmentLog(self)
        self.checkpoints: Checkpoints | None = None

    def checkpoint_apart(self) -> None:
        """From now on this connection's WAL is checkpointed on a thread of its own, between its transactions."""
        self.checkpoints = Checkpoints(self)

    def close(self) -> None:
        if self.checkpoints is not None:
            self.checkpoints.close()
        self.db.close()

    def create(self, table_id: str, columns: tuple[Column, ...], primary_key: tuple[str, ...],
               within: bool = False) -> None:
        """`within`: inside the caller's transaction rather than one of its own."""
        definitions = [column_definition(column) for column in columns]
        if primary_key:
            definitions.append(f"PRIMARY KEY ({', '.join(map(quote, primary_key))})")
        with contextlib.nullcontext() if within else self.transaction():
            # WITHOUT ROWID: a one-column integer key must not become SQLite's auto-filled rowid
            without_rowid = " WITHOUT ROWID" if primary_key else ""
            self.db.execute(f"CREATE TABLE {quote(storage_name(table_id))} ({', '.join(definitions)}){without_rowid}")
            self._log_triggers(table_id, columns)

    def _log_triggers(self, table_id: str, columns) -> None:
        table = quote(storage_name(table_id))
        def logged(row: str, column: Column) -> str:
            value = f"{row}.{quote(column.name)}"
            return f"icesink_real({value})" if _affinity(column.type) == "REAL" else value
        new = "json_array(" + ", ".join(logged("NEW", c) for c in columns) + ")"
        old = "json_array(" + ", ".join(logged("OLD", c) for c in columns) + ")"
        log = f"INSERT INTO changes (table_id, diff, ts, row) VALUES ('{table_id}', {{diff}}, {NOW_MS}, {{row}});"
        for event, body in (("INSERT", log.format(diff=1, row=new)), ("DELETE", log.format(diff=-1, row=old)),
                            ("UPDATE", log.format(diff=-1, row=old) + log.format(diff=1, row=new))):
            trigger = quote(f'log_{table_id}_{event.lower()}')
            self.db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            self.db.execute(f"CREATE TRIGGER {trigger} AFTER {event} ON {table} BEGIN {body} END")

    def add_base(self, table_id: str, files: list[tuple[str, int]]) -> None:
        """Records a copy of the table, Parquet `files` (paths under base_dir(), and their rows), as
        its changes at the next offsets, one insertion per row, without a log entry each. Runs inside the caller's
        transaction; the rows go into the table itself with load_base."""
        rows = sum(count for _, count in files)
        if not rows:
            return
        after = self.next_offset()
        self.reserve(after, rows)
        self.db.execute(f"INSERT INTO bases VALUES (?, ?, ?, {NOW_MS}, ?, 0)",
                        (table_id, after, after + rows,
                         json.dumps([(str(Path(path).relative_to(self.data_dir)), count) for path, count in files])))

    def next_offset(self) -> int:
        """Where the next change of any table goes (it takes the offset after this one)."""
        found = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").fetchone()
        return found[0] if found else 0

    def reserve(self, after: int, count: int) -> None:
        """Offsets (after, after + count] are taken, inside the caller's transaction, for changes not in the log."""
        if self.db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'changes'", (after + count,)).rowcount == 0:
            self.db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('changes', ?)", (after + count,))

    def loading(self, table_id: str) -> bool:
        """Whether a copy of the table (a Postgres source's) is still being loaded into it."""
        base = self.base(table_id)
        return base is not None and base.loading

    def base(self, table_id: str) -> Base | None:
        row = self.db.execute("SELECT after, upto, ts, files, loaded FROM bases WHERE table_id = ?",
                              (table_id,)).fetchone()
        if row is None:
            return None
        after, upto, ts, files, loaded = row
        return Base(after, upto, ts, tuple((str(self.data_dir / path), count) for path, count in json.loads(files)),
                    loaded)

    def load_base(self, table_id: str, columns, rows: list, loaded: int) -> None:
        """Puts rows of the table's base into the table, `loaded` of them so far with these, in one transaction;
        their insertions are the base's offsets, so they are logged nowhere (the table's changes are followed as
        segments once all are in)."""
        table = quote(storage_name(table_id))
        with self.transaction():
            for event in ("insert", "delete", "update"):
                self.db.execute(f"DROP TRIGGER IF EXISTS {quote(f'log_{table_id}_{event}')}")
            self.db.executemany(f"INSERT INTO {table} ({', '.join(quote(c.name) for c in columns)}) VALUES "
                                f"({', '.join('?' * len(columns))})", rows)
            self.db.execute("UPDATE bases SET loaded = ? WHERE table_id = ?", (loaded, table_id))

    def evolve(self, table_id: str, columns: tuple[Column, ...], fills: dict[str, object],
               replicated: bool = False) -> None:
        """The table takes `columns`: the ones it lacks are added (nullable), then set to `fills[name]` in every
        row when there is one (logged as updates, so sinks write them: as segments when the table is `replicated`),
        all in one transaction. Types may only have widened, which the stored values need no change for. Doing it
        again changes nothing more."""
        table = quote(storage_name(table_id))
        with self.transaction():
            have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
            added = [c for c in columns if c.name not in have]
            for column in added:
                self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column_definition(Column(column.name, column.type))}")
            if added:
                self.db.execute("INSERT INTO widened VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                (table_id, self.next_offset(), len(columns)))
            if replicated:
                self.segments.follow(table_id, columns)
            else:
                self._log_triggers(table_id, columns)
            for column in added:
                if fills.get(column.name) is not None:
                    self.db.execute(f"UPDATE {table} SET {quote(column.name)} = ?", (fills[column.name],))

    def drop(self, table_id: str) -> None:
        with self.transaction():
            self.db.execute(f"DROP TABLE IF EXISTS {quote(storage_name(table_id))}")
            for table in ("changes", "acknowledged", "log_floor", "bases", "widened", "segments", "generated_ticks"):
                self.db.execute(f"DELETE FROM {table} WHERE table_id = ?", (table_id,))
        shutil.rmtree(base_dir(self.data_dir, table_id), ignore_errors=True)
        segments.remove(self.data_dir, table_id)

    def transaction(self):
        return _Transaction(self.db, self.segments.seal, self.segments.discard, self.checkpoints)

    def write(self, sql: str, what: str, positions: dict[str, int] | None = None) -> int:
        """Runs one INSERT/UPDATE/DELETE; returns the number of rows it touched. `positions` says where in the
        statement to point when a column's value (or a division) fails."""
        try:
            with self.transaction():
                self.db.execute(sql)
                return self.db.execute("SELECT changes()").fetchone()[0]  # rowcount is -1 after WITH … INSERT
        except sqlite3.Error as exc:
            raised = raised_in_function(exc)
            if raised is None:
                raise _write_error(what, exc) from None
            column = getattr(raised, "column", None)
            where = (positions or {}).get(column if column else "division by zero")
            raise CatalogError(f"{what}{f', column {chr(34)}{column}{chr(34)}' if column else ''}: {raised}",
                               where) from None

    def insert_rows(self, table_id: str, columns: list[dict], rows) -> int:
        """Inserts rows, (values, where) each, in one transaction, every value through its column's input
        function. `where` (one per value, or one for the row) is what a refusal points at: InvalidValue carries the
        column and its `where`, RowRefused the row's."""
        inputs = [input_function(c.type) for c in columns]
        current = []

        def converted():
            for values, where in rows:
                current[:] = [where]
                row = []
                for index, (convert, value) in enumerate(zip(inputs, values)):
                    try:
                        row.append(convert(value))
                    except InvalidValue as exc:
                        raise InvalidValue(str(exc), columns[index].name,
                                           where[index] if isinstance(where, tuple) else where) from None
                yield row

        names = ", ".join(quote(c.name) for c in columns)
        sql = f"INSERT INTO {quote(storage_name(table_id))} ({names}) VALUES ({', '.join('?' * len(columns))})"
        try:
            with self.transaction():
                return self.db.executemany(sql, converted()).rowcount
        except sqlite3.Error as exc:
            where = current[0] if current else None
            raise RowRefused(_refusal(exc), where[0] if isinstance(where, tuple) else where) from None

    def query(self, sql: str, params=()) -> tuple[list[str], list[tuple]]:
        cursor = self.db.execute(sql, params)
        return [d[0] for d in cursor.description or ()], cursor.fetchall()

    def latest_offset(self, table_id: str, width: int | None = None) -> int:
        """The newest change's offset; for a reader that knows `width` columns, the newest change it can read (the
        table gained columns after it: it is started again with them)."""
        row = self.db.execute("SELECT max(offset) FROM changes WHERE table_id = ?", (table_id,)).fetchone()
        segment = self.db.execute("SELECT max(upto) FROM segments WHERE table_id = ?", (table_id,)).fetchone()
        base = self.base(table_id)
        latest = max(row[0] or 0, segment[0] or 0, base.upto if base else 0, self.floor(table_id))
        if width is not None:
            wider = self.db.execute("SELECT min(offset) FROM widened WHERE table_id = ? AND width > ?",
                                    (table_id, width)).fetchone()[0]
            latest = min(latest, wider) if wider is not None else latest
        return latest

    def iter_changes(self, table_id: str, after: int, upto: int):
        """(offset, diff, ts, row values) with after < offset <= upto, in offset order."""
        rows = self.db.execute("SELECT offset, diff, ts, row FROM changes WHERE table_id = ? AND offset > ?"
                               " AND offset <= ? ORDER BY offset", (table_id, after, upto))
        for offset, diff, ts, row in rows:
            yield offset, diff, ts, json.loads(row)

    def changes(self, table_id: str, after: int, upto: int) -> list[tuple[int, int, int, list]]:
        return list(self.iter_changes(table_id, after, upto))

    def floor(self, table_id: str) -> int:
        """The offset up to which the log is compacted (0: not at all)."""
        return self._floor(table_id)[0]

    def _floor(self, table_id: str) -> tuple[int, int]:
        row = self.db.execute("SELECT offset, kept FROM log_floor WHERE table_id = ?", (table_id,)).fetchone()
        return row or (0, 0)

    def acknowledge(self, reader: str, table_id: str, offset: int) -> None:
        """`reader` (a sink) has committed every change of the table up to `offset` and will not read it again."""
        with self.transaction():
            self.db.execute("INSERT INTO acknowledged VALUES (?, ?, ?) ON CONFLICT (reader, table_id) DO UPDATE"
                            " SET offset = max(offset, excluded.offset)", (reader, table_id, offset))

    def acknowledged(self, table_id: str) -> dict[str, int]:
        return dict(self.db.execute("SELECT reader, offset FROM acknowledged WHERE table_id = ?", (table_id,)))

    def compact(self, table_id: str, readers: Callable[[], set[str]]) -> int:
        """Compacts the log below what every one of `readers()` (all the table's sinks) acknowledged, once the
        part to compact is at least as long as the part compacted before (so each change costs O(1) in all).
        Returns the entries removed. The pairs to remove are found by one SQL statement outside any write
        transaction (SQLite works without Python's lock meanwhile), and go COMPACT_PAIRS pairs at a time,
        each its own transaction, so writers of the store (and sinks acknowledging) never wait for a whole
        compaction. The floor moves first: a reader below it takes the log in one read, and each slice removes
        whole pairs (an insertion and its deletion), so any read sees a history that adds up. Readers are asked
        again as the floor moves: a sink created during the search, which has acknowledged nothing, stops it (it
        may have planned a read in several parts below the floor)."""
        with self.transaction():
            acked, sinks = self.acknowledged(table_id), readers()
            for gone in set(acked) - sinks:
                self.db.execute("DELETE FROM acknowledged WHERE reader = ? AND table_id = ?", (gone, table_id))
        (floor, kept), target = self._floor(table_id), min((acked.get(r, 0) for r in sinks), default=0)
        if target <= floor:
            return 0
        fresh = self.db.execute("SELECT count(*) FROM changes WHERE table_id = ? AND offset > ? AND offset <= ?",
                                (table_id, floor, target)).fetchone()[0]
        if fresh < max(COMPACT_AT_LEAST, kept):
            return 0
        self.db.execute("DROP TABLE IF EXISTS temp.cancelled")
        self.db.execute(_CANCELLED, (table_id, target, floor))
        pairs = self.db.execute("SELECT count(*) FROM temp.cancelled").fetchone()[0]
        with self.transaction():  # monotonic: two compactions of one table may overlap (they remove the same pairs)
            acked = self.acknowledged(table_id)
            if any(acked.get(r, 0) < target for r in readers()):
                self.db.execute("DROP TABLE temp.cancelled")
                return 0
            self.db.execute("INSERT INTO log_floor VALUES (?, ?, ?) ON CONFLICT (table_id) DO UPDATE"
                            " SET offset = max(offset, excluded.offset), kept = excluded.kept",
                            (table_id, target, kept + fresh - 2 * pairs))
        for first in range(0, pairs, COMPACT_PAIRS):
            with self.transaction():
                self.db.execute("DELETE FROM changes WHERE offset IN (SELECT inserted FROM temp.cancelled WHERE"
                                " rowid > ?1 AND rowid <= ?2 UNION ALL SELECT deleted FROM temp.cancelled WHERE"
                                " rowid > ?1 AND rowid <= ?2)", (first, first + COMPACT_PAIRS))
        self.db.execute("DROP TABLE temp.cancelled")
        return 2 * pairs


class Checkpoints:
    """Checkpoints of the store's WAL on a thread and connection of their own (`TableStore.checkpoint_apart`), for a
    writer whose commits should not wait for them: a batch of changes on keys all over a large table dirties most of
    its pages, and copying them from the WAL into the database took that writer as long as the commit itself. The
    checkpoint runs while the writer prepares its next batch (SQLite works without Python's lock meanwhile), and the
    writer waits for it before its next transaction, which then starts the WAL over: a WAL that only grows makes every
    page the writer reads a lookup in it, and its writes twice as slow."""

    def __init__(self, store: TableStore):
        self._db = connect_wal(store.data_dir / TABLES_FILE)
        store.db.execute("PRAGMA wal_autocheckpoint = 0")
        self._wanted, self._done = threading.Event(), threading.Event()
        self._done.set()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="store checkpoints", daemon=True)
        self._thread.start()

    def request(self) -> None:
        """After a commit (the store's transactions call it): what the WAL holds goes into the database."""
        self._done.clear()
        self._wanted.set()

    def settle(self) -> None:
        """Before a write transaction (the store's transactions call it): waits for the checkpoint requested last."""
        self._done.wait()

    def close(self) -> None:
        self._closed = True
        self._wanted.set()
        self._thread.join()
        self._db.close()

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._closed:
                return
            try:
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error:  # the next request tries again; the writer's own connection stays correct
                pass
            finally:
                if not self._wanted.is_set():
                    self._done.set()


class RowRefused(Exception):
    """A row the table's constraints refuse; `where` is the row's (see insert_rows)."""

    def __init__(self, message: str, where):
        super().__init__(message)
        self.message, self.where = message, where


def _write_error(what: str, exc: sqlite3.Error) -> CatalogError:
    return CatalogError(f"{what}: {_refusal(exc)}")


def _refusal(exc: sqlite3.Error) -> str:
    """Why SQLite refused a write, in Postgres's words for its constraints."""
    message = str(exc)
    if message.startswith("UNIQUE constraint failed"):
        message = "duplicate key value violates the primary key"
    elif message.startswith("NOT NULL constraint failed: "):
        message = f"null value in column \"{message.rsplit('.', 1)[-1]}\" violates its NOT NULL constraint"
    elif message.startswith("CHECK constraint failed: type:"):
        column = message.split("type:", 1)[1]
        message = f"a value for column \"{column}\" does not have the column's type"
    else:
        message = sqlite_message(exc)
    return message


# The insertions later deleted, each with its deletion: a row's k-th deletion takes its k-th insertion (rows of a
# table without a key may repeat; a row is never deleted more often than it was inserted before, so the k-th
# deletion comes after the k-th insertion). Every pair up to the floor went with the compaction that set it (one a
# crash cut short leaves some, which add up), so a new pair's deletion is past the floor: only the rows deleted there
# are sorted, not the whole log (1M new rows: 0.3 s against 4.0 s). One sort, no join: 2M entries in about 6 s.
_CANCELLED = """
CREATE TEMP TABLE cancelled AS
SELECT min(offset) AS inserted, max(offset) AS deleted FROM (
    SELECT offset, row, row_number() OVER (PARTITION BY row, diff ORDER BY offset) AS k
    FROM changes WHERE table_id = ?1 AND offset <= ?2 AND row IN (
        SELECT row FROM changes WHERE table_id = ?1 AND offset > ?3 AND offset <= ?2 AND diff < 0))
GROUP BY row, k HAVING count(*) = 2"""


class _Transaction:
    """`before_commit` runs inside the transaction when its body succeeded; if it fails, all rolls back, and
    `on_rollback` runs whenever it does. With `checkpoints`, it begins once the last checkpoint is done and asks for
    the next once it has committed."""

    def __init__(self, db: sqlite3.Connection, before_commit: Callable[[], None] | None = None,
                 on_rollback: Callable[[], None] | None = None, checkpoints: Checkpoints | None = None):
        self.db, self.before_commit, self.on_rollback = db, before_commit, on_rollback
        self.checkpoints = checkpoints

    def __enter__(self):
        if self.checkpoints is not None:
            self.checkpoints.settle()
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, exc, tb):
        if kind is None and self.before_commit is not None:
            try:
                self.before_commit()
            except BaseException:
                self._rolled_back()
                raise
        if kind:
            self._rolled_back()
        else:
            self.db.execute("COMMIT")
            if self.checkpoints is not None:
                self.checkpoints.request()
        return False

    def _rolled_back(self) -> None:
        self.db.execute("ROLLBACK")
        if self.on_rollback is not None:
            self.on_rollback()

