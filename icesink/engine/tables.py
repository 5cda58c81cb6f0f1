"""Engine tables: current rows in SQLite, every change appended to a durable log with increasing offsets.

Triggers write the log in the same transaction as the rows, so a write that returns is in both, and a sink
reading offsets (after, upto] sees every change exactly once, in order.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ..errors import CatalogError
from .planner.types import base_type

TABLES_FILE = "tables.db"

_AFFINITY = {
    "smallint": "INTEGER", "integer": "INTEGER", "bigint": "INTEGER", "boolean": "INTEGER",
    "real": "REAL", "double precision": "REAL",
}
_TYPEOF = {"INTEGER": "'integer'", "REAL": "'real', 'integer'", "TEXT": "'text'"}


def storage_name(table_id: str) -> str:
    return f"t_{table_id}"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _affinity(type_name: str) -> str:
    # bytea is kept as Postgres hex text ('\\x…'): the JSON change log cannot hold blobs
    return _AFFINITY.get(base_type(type_name), "TEXT")


class TableStore:
    def __init__(self, data_dir: Path):
        self.db = sqlite3.connect(Path(data_dir) / TABLES_FILE, isolation_level=None, timeout=30,
                                  check_same_thread=False)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = FULL")  # a write returns only once it is on disk
        self.db.execute("CREATE TABLE IF NOT EXISTS changes (offset INTEGER PRIMARY KEY AUTOINCREMENT,"
                        " table_id TEXT NOT NULL, diff INTEGER NOT NULL, ts INTEGER NOT NULL, row TEXT NOT NULL)")
        self.db.execute("CREATE INDEX IF NOT EXISTS changes_by_table ON changes(table_id, offset)")

    def close(self) -> None:
        self.db.close()

    def create(self, table_id: str, columns: list[dict], primary_key: list[str]) -> None:
        table = _quote(storage_name(table_id))
        definitions = []
        for column in columns:
            affinity = _affinity(column["type"])
            check = (f"CONSTRAINT {_quote('type:' + column['name'])} "
                     f"CHECK (typeof({_quote(column['name'])}) IN ({_TYPEOF[affinity]}, 'null'))")
            null = "" if column.get("nullable", True) else " NOT NULL"
            definitions.append(f"{_quote(column['name'])} {affinity}{null} {check}")
        if primary_key:
            definitions.append(f"PRIMARY KEY ({', '.join(map(_quote, primary_key))})")
        new = "json_array(" + ", ".join(f"NEW.{_quote(c['name'])}" for c in columns) + ")"
        old = "json_array(" + ", ".join(f"OLD.{_quote(c['name'])}" for c in columns) + ")"
        now = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"
        log = f"INSERT INTO changes (table_id, diff, ts, row) VALUES ('{table_id}', {{diff}}, {now}, {{row}});"
        with self.transaction():
            # WITHOUT ROWID: a one-column integer key must not become SQLite's auto-filled rowid
            without_rowid = " WITHOUT ROWID" if primary_key else ""
            self.db.execute(f"CREATE TABLE {table} ({', '.join(definitions)}){without_rowid}")
            for event, body in (("INSERT", log.format(diff=1, row=new)), ("DELETE", log.format(diff=-1, row=old)),
                                ("UPDATE", log.format(diff=-1, row=old) + log.format(diff=1, row=new))):
                self.db.execute(f"CREATE TRIGGER {_quote(f'log_{table_id}_{event.lower()}')} AFTER {event} ON {table}"
                                f" BEGIN {body} END")

    def drop(self, table_id: str) -> None:
        with self.transaction():
            self.db.execute(f"DROP TABLE IF EXISTS {_quote(storage_name(table_id))}")
            self.db.execute("DELETE FROM changes WHERE table_id = ?", (table_id,))

    def transaction(self):
        return _Transaction(self.db)

    def write(self, sql: str, what: str) -> int:
        """Runs one INSERT/UPDATE/DELETE; returns the number of rows it touched."""
        try:
            with self.transaction():
                return self.db.execute(sql).rowcount
        except sqlite3.IntegrityError as exc:
            message = str(exc)
            if message.startswith("UNIQUE constraint failed"):
                message = "duplicate key value violates the primary key"
            elif message.startswith("NOT NULL constraint failed: "):
                message = f"null value in column \"{message.rsplit('.', 1)[-1]}\" violates its NOT NULL constraint"
            elif message.startswith("CHECK constraint failed: type:"):
                column = message.split("type:", 1)[1]
                message = f"a value for column \"{column}\" does not have the column's type"
            raise CatalogError(f"{what}: {message}") from None
        except sqlite3.Error as exc:
            raise CatalogError(f"{what}: {exc}") from None

    def query(self, sql: str, params=()) -> tuple[list[str], list[tuple]]:
        cursor = self.db.execute(sql, params)
        return [d[0] for d in cursor.description or ()], cursor.fetchall()

    def latest_offset(self, table_id: str) -> int:
        row = self.db.execute("SELECT max(offset) FROM changes WHERE table_id = ?", (table_id,)).fetchone()
        return row[0] or 0

    def iter_changes(self, table_id: str, after: int, upto: int):
        """(offset, diff, ts, row values) with after < offset <= upto, in offset order."""
        rows = self.db.execute("SELECT offset, diff, ts, row FROM changes WHERE table_id = ? AND offset > ?"
                               " AND offset <= ? ORDER BY offset", (table_id, after, upto))
        for offset, diff, ts, row in rows:
            yield offset, diff, ts, json.loads(row)

    def changes(self, table_id: str, after: int, upto: int) -> list[tuple[int, int, int, list]]:
        return list(self.iter_changes(table_id, after, upto))


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind, exc, tb):
        self.db.execute("ROLLBACK" if kind else "COMMIT")
        return False

