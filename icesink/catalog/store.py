"""The persistent catalog: one SQLite database in the data directory.

Every change runs in one `BEGIN IMMEDIATE` transaction, so two icesink processes on one data
directory serialise their writes and each sees the other's committed objects on its next read.
"""
from __future__ import annotations

import json
import os
import sqlite3
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Optional

import platformdirs

from ..errors import CatalogError
from ..model.descriptors import Descriptor, DescriptorError, SecretDescriptor, SinkDescriptor, from_json
from .schema import MIGRATIONS, VIEWS
from .sqlite import connect_wal, database_errors, prepare_data_dir

DATABASE_FILE = "catalog.db"


def default_data_dir() -> Path:
    env = os.environ.get("ICESINK_DATA_DIR")
    return Path(env) if env else Path(platformdirs.user_data_dir("icesink"))


def now() -> str:
    return datetime.now(timezone.utc).isoformat(sep=" ", timespec="microseconds")


@dataclass(frozen=True)
class CatalogObject:
    id: str
    name: str
    kind: str
    type: str
    create_sql: str
    redacted_create_sql: str
    descriptor: Descriptor = field(default_factory=SecretDescriptor)
    cluster: Optional[str] = None
    connection_id: Optional[str] = None
    envelope: Optional[str] = None
    created_at: str = ""


class Catalog:
    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        prepare_data_dir(self.data_dir)
        self.path = self.data_dir / DATABASE_FILE
        with database_errors(self.path, "catalog"):
            self.db = connect_wal(self.path)
            try:
                self.db.execute("PRAGMA foreign_keys = ON")
                self._migrate()
                self._check()
            except BaseException:
                self.db.close()
                raise

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------ schema
    def _migrate(self) -> None:
        with self.transaction():
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise CatalogError(f"catalog {self.path} was written by a newer icesink (schema version {version}; "
                                   f"this one knows up to {len(MIGRATIONS)}): upgrade icesink to open it")
            has_tables = self.db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            if version < 0 or (version == 0 and has_tables):
                raise CatalogError(f"catalog {self.path} is damaged: its schema version ({version}) does not match "
                                   "its tables")
            if version == len(MIGRATIONS):
                return
            for script in MIGRATIONS[version:]:
                for statement in script.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
            for name in VIEWS:
                self.db.execute(f"DROP VIEW IF EXISTS {name}")
            for name, body in VIEWS.items():
                self.db.execute(f"CREATE VIEW {name} AS {body}")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('install_id', ?)", (uuid.uuid4().hex,))
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('next_id', '1')")
            self.db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")

    def _check(self) -> None:
        """The rows every statement relies on; a catalog edited by hand may have lost them."""
        meta = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN ('install_id', 'next_id')"))
        missing = [key for key in ("install_id", "next_id") if key not in meta]
        if missing or not str(meta.get("next_id", "")).isdigit():
            what = f"lacks {' and '.join(missing)}" if missing else "has a next_id that is not a number"
            raise CatalogError(f"catalog {self.path} is damaged: its meta table {what}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        if self.db.in_transaction:  # nested: the outer transaction decides
            yield self.db
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def meta(self, key: str) -> Optional[str]:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @property
    def install_id(self) -> str:
        return self.meta("install_id")

    # ------------------------------------------------------------ objects
    def allocate_id(self) -> tuple[str, int]:
        with self.transaction() as db:
            seq = int(db.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()[0])
            db.execute("UPDATE meta SET value = ? WHERE key = 'next_id'", (str(seq + 1),))
        return f"u{seq}", seq

    def insert(self, obj: CatalogObject, depends_on: tuple[str, ...] = ()) -> None:
        with self.transaction() as db:
            seq = int(obj.id[1:])
            db.execute(
                "INSERT INTO objects (id, seq, name, kind, type, cluster, connection_id, envelope, create_sql,"
                " redacted_create_sql, definition, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (obj.id, seq, obj.name, obj.kind, obj.type, obj.cluster, obj.connection_id, obj.envelope,
                 obj.create_sql, obj.redacted_create_sql, json.dumps(obj.descriptor.to_json()),
                 obj.created_at or now()))
            db.executemany("INSERT OR IGNORE INTO dependencies VALUES (?, ?)",
                           [(obj.id, target) for target in depends_on])

    def update(self, obj: CatalogObject) -> None:
        with self.transaction() as db:
            db.execute("UPDATE objects SET name = ?, create_sql = ?, redacted_create_sql = ?, definition = ?"
                       " WHERE id = ?", (obj.name, obj.create_sql, obj.redacted_create_sql,
                                         json.dumps(obj.descriptor.to_json()), obj.id))

    def set_dependencies(self, object_id: str, depends_on: tuple[str, ...]) -> None:
        """What `object_id` depends on, now (ALTER CONNECTION may name other secrets)."""
        with self.transaction() as db:
            db.execute("DELETE FROM dependencies WHERE object_id = ?", (object_id,))
            db.executemany("INSERT OR IGNORE INTO dependencies VALUES (?, ?)",
                           [(object_id, other) for other in depends_on])

    def add_dependencies(self, object_id: str, depends_on: tuple[str, ...]) -> None:
        """`object_id` depends on these too (ALTER TABLE … ADD COLUMN of a type CREATE TYPE made)."""
        with self.transaction() as db:
            db.executemany("INSERT OR IGNORE INTO dependencies VALUES (?, ?)",
                           [(object_id, other) for other in depends_on])

    def delete(self, ids: list[str]) -> None:
        with self.transaction() as db:
            for object_id in ids:
                db.execute("DELETE FROM dependencies WHERE object_id = ?", (object_id,))
                db.execute("DELETE FROM statistics WHERE object_id = ?", (object_id,))
                db.execute("DELETE FROM sink_incarnations WHERE sink_id = ?", (object_id,))
                db.execute("DELETE FROM objects WHERE id = ?", (object_id,))

    def _row(self, row) -> Optional[CatalogObject]:
        if row is None:
            return None
        (id_, name, kind, type_, cluster, connection_id, envelope, create_sql, redacted, definition,
         created_at) = row
        try:
            descriptor = from_json(kind, type_, json.loads(definition))
        except (DescriptorError, KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"catalog {self.path}: the definition of {kind} '{name}' cannot be read ({exc})") \
                from None
        return CatalogObject(id_, name, kind, type_, create_sql, redacted, descriptor, cluster, connection_id, envelope,
                             created_at)

    _COLUMNS = ("id, name, kind, type, cluster, connection_id, envelope, create_sql, redacted_create_sql,"
                " definition, created_at")

    def get(self, name: str) -> Optional[CatalogObject]:
        return self._row(self.db.execute(f"SELECT {self._COLUMNS} FROM objects WHERE name = ?",
                                         (name,)).fetchone())

    def get_by_id(self, object_id: str) -> Optional[CatalogObject]:
        return self._row(self.db.execute(f"SELECT {self._COLUMNS} FROM objects WHERE id = ?",
                                         (object_id,)).fetchone())

    def sinks(self) -> list[CatalogObject]:
        return [self._row(r) for r in self.db.execute(f"SELECT {self._COLUMNS} FROM objects WHERE kind = 'sink'"
                                                      " ORDER BY seq")]

    def objects_of(self, kind: str, object_type: str) -> list[CatalogObject]:
        return [self._row(r) for r in self.db.execute(
            f"SELECT {self._COLUMNS} FROM objects WHERE kind = ? AND type = ? ORDER BY seq", (kind, object_type))]

    def sinks_writing(self, namespace: str, table: str) -> list[CatalogObject]:
        """The sinks that write an Iceberg table of this name, in whatever catalog (one query, not one per sink)."""
        namespace_path, table_path = SinkDescriptor.TABLE_PATHS
        return [self._row(r) for r in self.db.execute(
            f"SELECT {self._COLUMNS} FROM objects WHERE kind = 'sink' AND json_extract(definition, ?) = ?"
            " AND json_extract(definition, ?) = ? ORDER BY seq", (namespace_path, namespace, table_path, table))]

    def names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM objects ORDER BY name")]

    def dependents(self, object_id: str) -> list[CatalogObject]:
        rows = self.db.execute(
            f"SELECT {', '.join('o.' + c.strip() for c in self._COLUMNS.split(','))} FROM dependencies d"
            " JOIN objects o ON o.id = d.object_id WHERE d.depends_on = ? ORDER BY o.seq", (object_id,))
        return [self._row(r) for r in rows]

    def sinks_reading(self, object_id: str) -> set[str]:
        """The ids of the sinks that read the relation's changes: from it, or from materialized views over it."""
        found, seen, pending = set(), {object_id}, [object_id]
        while pending:
            for dependent in self.dependents(pending.pop()):
                if dependent.kind == "sink":
                    found.add(dependent.id)
                elif dependent.kind == "materialized-view" and dependent.id not in seen:
                    seen.add(dependent.id)
                    pending.append(dependent.id)
        return found

    # ------------------------------------------------------------ status and settings
    def record_status(self, object_id: str, object_kind: str, status: str, error: Optional[str] = None,
                      details: Optional[dict] = None, replica_id: Optional[str] = None) -> None:
        """Appends to the history. A runner's report on an object dropped meanwhile (a sink that was still
        starting, say) is not recorded: `dropped` stays its last status."""
        with self.transaction() as db:
            db.execute("INSERT INTO status_history SELECT ?,?,?,?,?,?,? WHERE ? = 'dropped' OR EXISTS "
                       "(SELECT 1 FROM objects WHERE id = ?)",
                       (now(), object_id, object_kind, status, error,
                        json.dumps(details) if details is not None else None, replica_id, status, object_id))

    def add_statistics(self, object_id: str, replica_id: Optional[str] = None, **increments: int) -> None:
        """Adds to the monotonic counters; gauges (`last_commit_at`, `lag_ms`, a source's snapshot records and
        offsets) are set, not added."""
        set_columns = {k: increments.pop(k) for k in ("last_commit_at", "lag_ms", "snapshot_records_known",
                                                      "snapshot_records_staged", "offset_known", "offset_committed")
                       if k in increments}
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO statistics (object_id, replica_id) VALUES (?, ?)", (object_id, replica_id))
            assignments = [f"{k} = {k} + ?" for k in increments] + [f"{k} = ?" for k in set_columns]
            if assignments:
                db.execute(f"UPDATE statistics SET {', '.join(assignments)} WHERE object_id = ?",
                           (*increments.values(), *set_columns.values(), object_id))

    def next_incarnation(self, sink_id: str, at_least: int) -> int:
        """A version for a new incarnation of a sink: above every one given before, and above `at_least` (the
        newest the sink's table holds, which a catalog restored from an older backup may not know)."""
        with self.transaction() as db:
            row = db.execute("INSERT INTO sink_incarnations VALUES (?, ?) ON CONFLICT (sink_id) DO UPDATE SET "
                             "version = max(version, excluded.version - 1) + 1 RETURNING version",
                             (sink_id, at_least + 1)).fetchone()
        return row[0]

    def last_status(self, object_id: str) -> Optional[str]:
        report = self.last_report(object_id)
        return report[0] if report else None

    def last_report(self, object_id: str) -> Optional[tuple[str, Optional[str]]]:
        """The object's last status and its error."""
        row = self.db.execute("SELECT status, error FROM status_history WHERE object_id = ? ORDER BY rowid DESC "
                              "LIMIT 1", (object_id,)).fetchone()
        return tuple(row) if row else None

    def setting(self, name: str) -> Optional[str]:
        row = self.db.execute("SELECT value FROM settings WHERE name = ?", (name,)).fetchone()
        return row[0] if row else None

    def set_setting(self, name: str, value: Optional[str]) -> None:
        """None returns the setting to its default."""
        with self.transaction() as db:
            if value is None:
                db.execute("DELETE FROM settings WHERE name = ?", (name,))
                return
            db.execute("INSERT INTO settings VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                       (name, value))

    def query(self, sql: str, params=()) -> tuple[list[str], list[tuple]]:
        cursor = self.db.execute(sql, params)
        columns = [d[0] for d in cursor.description or ()]
        return columns, cursor.fetchall()
