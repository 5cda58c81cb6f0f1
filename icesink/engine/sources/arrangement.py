"""A sink's arrangement of a view's input: its own copy of the table's rows, indexed by the view's key, one SQLite
file per share of the keys (a batch's partition each), which a batch brings up to date from the table's log before
it recomputes the keys the log's changes touch.

Why a copy: the index a batch looks a touched key's rows up by, kept on the store's table instead, made every
statement that writes the table put each new row's entry at its key's place, on pages all over the index (new
events of one hour, of users all over, land all over that hour's part of it), so each row cost the writer a page
written. A batch applies a COMMIT INTERVAL's changes at once, each page once for all the entries it gains, on a
core of Spark's, and the writer's statements write the table and its log alone (`bench/view_writes.py`).

Each file holds the rows whose share column falls to its share, as the store holds them (the same columns, types
and key), under the table's own name, with the store attached: the view's statements run on it unchanged, the
table's name finding the copy and the log's finding the store's. `_icesink_arranged` records the offset up to
which the log was applied. The copy is brought up to date by rows: each key of the table the changes name is
deleted, and its newest change, if it is a row, inserted. Applying changes again over a copy that has more (a batch
retried after its partition applied them) makes each row the batch names what its newest change says, and the
next batch, which reads the changes after it, names the later ones again; the keys that the rows of either touch
are recomputed then. So, as for the store's rows, a key is computed from a state at or after the batch's frontier,
and the Iceberg table converges on the view. A copy that is missing, of another number of shares, or behind the
batch's start, or written before the machine last started (a power loss may have left it half written), is made
again from the table, whose rows are at or after it."""
from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...catalog.sqlite import connect_wal
from ...model.types import Column
from ..tables import MMAP_BYTES, TABLES_FILE, add_store_functions, column_definition, quote, storage_name

ARRANGEMENT_DIR = "arrangement"
APPLIED = "_icesink_arranged"
CACHE_KIB = 256 << 10  # a batch's entries land all over the index: its dirty pages stay in memory until the commit
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
log = logging.getLogger("icesink.sink")


@dataclass(frozen=True)
class Arranged:
    """Where a sink keeps its arrangement of view `view_name`'s input, table `table_id` (columns as dicts of name
    and type, primary key `key`), shared by `share_column`."""
    view_name: str
    directory: str
    table_id: str
    columns: tuple[dict, ...]
    key: tuple[str, ...]
    share_column: str

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Arranged":
        return cls(**json.loads(text))


def share_sql(type_name: str, value: str, parts: int) -> str:
    """Which of `parts` shares a value falls to: an integer by its remainder, text by a hash (a null's is the
    first's)."""
    if type_name == "text":
        return f"icesink_share({value}, {parts})"
    return f"coalesce(({value} % {parts} + {parts}) % {parts}, 0)"


def open_share(data_dir, arranged: Arranged, part: int, parts: int) -> sqlite3.Connection:
    """A connection to share `part` of `parts`, with the store attached (as `store`).

    The copy is read through a memory map, as a batch reads the store: a partition opens it afresh each batch, and
    would otherwise copy each page it reads from the system's cache into its own. It keeps a rollback journal,
    which is not synced: a transaction a killed process left is rolled back when the copy is next opened. A power
    loss may leave such a file in any state, which SQLite might not even open: a copy whose mark beside it
    (`0-of-2.db.boot`) names another start of the machine than this one is removed before it is opened, and made
    again. Where the machine's start is not known, each commit is synced. A share's 250,000 changes of 125,000
    moves over 10M events were applied in 1.62–1.86 s, against 2.31–2.68 s with a write-ahead log
    (`synchronous = NORMAL`) and no memory map (`bench/arrangement.py`)."""
    directory = Path(arranged.directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{part}-of-{parts}.db"
    boot = _boot()
    if boot is not None:
        _keep_if_of_this_start(path, boot)
    db = connect_wal(path, journal_mode="TRUNCATE")  # an earlier release's copy kept a write-ahead log
    try:
        add_store_functions(db)
        db.execute(f"PRAGMA main.synchronous = {'FULL' if boot is None else 'OFF'}")
        db.execute(f"PRAGMA main.cache_size = -{CACHE_KIB}")
        db.execute("ATTACH DATABASE ? AS store", (str(Path(data_dir).resolve() / TABLES_FILE),))
        for schema in ("main", "store"):
            db.execute(f"PRAGMA {schema}.mmap_size = {MMAP_BYTES}")
        db.execute(f"CREATE TABLE IF NOT EXISTS {APPLIED} (table_id TEXT NOT NULL, columns TEXT NOT NULL,"
                   " upto INTEGER NOT NULL)")
    except BaseException:
        db.close()
        raise
    return db


def applied_upto(db, arranged: Arranged) -> int | None:
    """The offset up to which the log was applied to the copy; None while it was not made, or holds another table
    (the sink reads another view since ALTER SINK … SET FROM) or other columns (the table gained one)."""
    row = db.execute(f"SELECT upto FROM {APPLIED} WHERE table_id = ? AND columns = ?",
                     (arranged.table_id, json.dumps(arranged.columns))).fetchone()
    return None if row is None else row[0]


def _boot() -> str | None:
    """This start of the machine (Linux's boot id)."""
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return None


def _keep_if_of_this_start(path: Path, boot: str) -> None:
    """The copy at `path` removed unless its mark says it was written since the machine last started; marked so.
    (A mark a power loss took says no start, and one it kept an earlier start.)"""
    mark = path.with_name(path.name + ".boot")
    try:
        if mark.read_text() == boot:
            return
    except OSError:
        pass
    for name in (path.name, path.name + "-journal", path.name + "-wal", path.name + "-shm"):
        path.with_name(name).unlink(missing_ok=True)
    mark.write_text(boot)


def make(db, arranged: Arranged, part: int, parts: int, upto: int, index: Callable) -> None:
    """The copy made again from the table's rows of its share (at or after offset `upto`), and indexed by `index(db)`
    as the view's batches look rows up; the copies of other numbers of shares are removed."""
    started = time.monotonic()
    table = quote(storage_name(arranged.table_id))
    definitions = [column_definition(Column(c["name"], c["type"]), checked=False) for c in arranged.columns]
    definitions.append(f"PRIMARY KEY ({', '.join(map(quote, arranged.key))})")
    names = ", ".join(quote(c["name"]) for c in arranged.columns)
    falls = share_sql(_type(arranged, arranged.share_column), quote(arranged.share_column), parts)
    db.execute("BEGIN")  # not IMMEDIATE, which would hold the attached store's writers off as well
    try:
        for (other,) in db.execute("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name <> ?",
                                   (APPLIED,)).fetchall():  # another view's table too, read before ALTER SINK
            db.execute(f"DROP TABLE main.{quote(other)}")
        db.execute(f"DELETE FROM {APPLIED}")
        db.execute(f"CREATE TABLE main.{table} ({', '.join(definitions)}) WITHOUT ROWID")
        # the rows first, then the index: one sort, not an entry placed at a time
        db.execute(f"INSERT INTO main.{table} SELECT {names} FROM store.{table} WHERE {falls} = ?", (part,))
        index(db)
        db.execute(f"INSERT INTO {APPLIED} VALUES (?, ?, ?)", (arranged.table_id, json.dumps(arranged.columns), upto))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already: the error to raise is the first one
            db.execute("ROLLBACK")
        raise
    for other in Path(arranged.directory).glob("*-of-*.db*"):
        if not other.name.split(".db")[0].endswith(f"-of-{parts}"):
            other.unlink(missing_ok=True)
    log.info("materialized view %s: share %d of %d of its input copied and indexed in %.1fs", arranged.view_name,
             part + 1, parts, time.monotonic() - started)


def apply(db, arranged: Arranged, changes: str, upto: int) -> None:
    """The changes in temp table `changes` (the table's columns, then _icesink_diff and _icesink_offset) applied
    to the copy: each key they name deleted, then its newest change inserted where it is a row."""
    table = quote(storage_name(arranged.table_id))
    key = ", ".join(map(quote, arranged.key))
    names = ", ".join(quote(c["name"]) for c in arranged.columns)
    # each key's newest change found through an index of the changes rather than ranked by a window: 900,000
    # changes' in 1.4 s instead of 2.4 s (a script not kept); a batch's 250,000 a share about as fast either way
    db.execute(f"CREATE INDEX temp.{quote(changes + '_by_key')} ON {changes} ({key}, _icesink_offset)")
    same = " AND ".join(f"later.{k} = change.{k}" for k in map(quote, arranged.key))
    db.execute("BEGIN")  # the copy alone is written: the store's writers go on
    try:
        db.execute(f"DELETE FROM main.{table} WHERE ({key}) IN (SELECT {key} FROM temp.{changes})")
        db.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM temp.{changes} AS change "
                   f"WHERE _icesink_diff = 1 AND NOT EXISTS (SELECT 1 FROM temp.{changes} AS later "
                   f"WHERE {same} AND later._icesink_offset > change._icesink_offset)")
        db.execute(f"UPDATE {APPLIED} SET upto = max(upto, ?)", (upto,))
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already: the error to raise is the first one
            db.execute("ROLLBACK")
        raise


def _type(arranged: Arranged, name: str) -> str:
    return next(c["type"] for c in arranged.columns if c["name"] == name)
