"""Replicates a Postgres source into icesink's own store, as Materialize persists a source before its sinks read it:
each subsource is a table of the store (its rows, and its changes logged as Parquet segments: engine/segments.py),
so sinks read a subsource as they read a table, with the same offsets, acknowledgements and exactly-once commits.

The first run creates the source's replication slot (pgoutput) with an exported snapshot and copies every table as of
that snapshot into Parquet files, its *base* (copy.py; on Spark's executors in ctid ranges when the table is large,
parallel_copy.py). One local transaction records the bases, which sinks read as the tables' first changes, and the
slot's consistent point: no change is lost or doubled at the seam. The copied rows then go into the store's tables,
a block per transaction, before the first change is applied to them. Then it streams the slot's changes (stream.py),
applies them a batch of whole transactions at a time to the local copy (rows and a segment) together with the LSN
they end at, and only then confirms them to the slot: the upstream keeps a change until icesink holds it durably,
and a change applied before a crash is recognised by its LSN and skipped after it.

A table created from the source later (CREATE TABLE … FROM SOURCE) is copied as of a snapshot of its own, and the
changes its copy holds are skipped by LSN. An upstream table that changes its columns is followed (schema.py)."""
from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from pathlib import Path

from psycopg import sql

from ...catalog.store import Catalog, CatalogObject
from ...catalog_connections import connector_for
from ...catalog_connections.postgres_upstream import describe, missing_values
from ...errors import first_line
from ..failures import NeedsAction
from ..faults import crash_point
from .. import segments
from ..tables import TableStore, base_dir
from .copy import SESSION, CopyRefused, base_batches, stored_rows, write_base
from .parallel_copy import PAGES_PER_RANGE, PARALLEL_PAGES, Cancelled, copy_on_executors, page_ranges, range_query
from . import columnar
from .ahead import Ahead
from .columnar import NotColumnar
from .pgoutput import Relation, Transaction, lsn_int, lsn_text
from .schema import SchemaChanged, UpstreamTypes, matched_by_key, reconcile, relation_types, table_types
from .stream import SlotStream, StreamFailed
from .subsource import Subsource

log = logging.getLogger("icesink.ingest")
# changes per store transaction: changes to random keys dirty a page each, and a larger transaction writes a page
# once for more of them (31k upserts/s at 50,000 per transaction, 84k at 250,000, into 10M rows). Postgres finishes
# the transaction in progress: a batch may be larger.
CHANGES_PER_BATCH = 500_000
IDLE_SECONDS = 0.2  # how long a batch waits for its first transaction
STREAM_BYTES = 64 << 20  # pgoutput messages read ahead of the batch applied, in each of two processes (~800k)
STORE_WAIT_SECONDS = 600
DROP_SLOT = "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s"
LOAD_ROWS = 100_000  # copied rows put into the store per transaction
PRUNE_SECONDS = 5.0  # how often segments every sink has committed are deleted


class Stopped(Exception):
    """The replication was asked to stop (shutdown, or its source was dropped) in the middle of a copy, which is
    abandoned: its transaction rolls back and its slot is free to drop."""


class CopyDamaged(NeedsAction):
    """A recorded copy can no longer be read in full: the source must copy again."""


class SlotLost(NeedsAction):
    """The source's replication slot is gone upstream: the changes since icesink last read it are lost."""


def slot_name(catalog: Catalog, source_id: str) -> str:
    """One slot per source, named after this installation so that two data directories never share one."""
    return f"icesink_{catalog.install_id[:12]}_{source_id}"


def _progress_table(db) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS source_progress (source_id TEXT PRIMARY KEY, slot TEXT NOT NULL,"
               " lsn INTEGER NOT NULL)")
    # tables created from a source after its first copy: copied on their own, as of `copied_lsn` (NULL: not yet)
    db.execute("CREATE TABLE IF NOT EXISTS source_tables (object_id TEXT PRIMARY KEY, source_id TEXT NOT NULL,"
               " copied_lsn INTEGER)")


def forget(store: TableStore, source_id: str) -> None:
    """DROP SOURCE: the local copy's progress goes with it (the subsources' tables are dropped one by one)."""
    _progress_table(store.db)
    store.db.execute("DELETE FROM source_progress WHERE source_id = ?", (source_id,))
    store.db.execute("DELETE FROM source_tables WHERE source_id = ?", (source_id,))


def not_copied_yet(store: TableStore, object_id: str, source_id: str) -> str | None:
    """Why a relation a source replicates cannot be read yet (its copy is not all in the store), or None."""
    tables = {name for (name,) in store.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    started = "source_progress" in tables and store.db.execute(
        "SELECT 1 FROM source_progress WHERE source_id = ?", (source_id,)).fetchone() is not None
    if not started:
        return "its source has not copied its tables yet"
    added = store.db.execute("SELECT copied_lsn FROM source_tables WHERE object_id = ?", (object_id,)).fetchone()
    if added is not None and added[0] is None:
        return "its source has not copied it yet"
    base = store.base(object_id)
    if base is not None and base.loading:
        return f"its copy is still being loaded ({base.loaded:,} of {base.rows:,} rows)"
    return None


def copy_later(store: TableStore, object_id: str, source_id: str) -> None:
    """CREATE TABLE … FROM SOURCE: the source's replication copies the new table before it replicates its changes
    (or with all the others, if the source has not made its first copy yet)."""
    _progress_table(store.db)
    store.db.execute("INSERT INTO source_tables VALUES (?, ?, NULL)", (object_id, source_id))


class PostgresIngestion:
    """One source's replication, run by the scheduler in a thread of its own until stopped or failed."""

    def __init__(self, catalog: Catalog, source: CatalogObject, secret, spark):
        self.catalog, self.source, self.spark = catalog, source, spark  # spark: the SparkSession's factory
        self.descriptor = source.descriptor
        self.connector = connector_for(catalog.get_by_id(self.descriptor.connection_id), secret, catalog)
        self.slot = slot_name(catalog, source.id)
        self.subsources = {o.descriptor.upstream: Subsource(o) for o in replicated_relations(catalog, source.id)}
        self.stopping = threading.Event()
        self.lsn = 0  # every change up to here is in the local copy
        self._staged = 0  # rows of the initial copy so far
        self._statistics: dict[str, int] = {}
        self._statistics_lock = threading.Lock()

    @property
    def relation_ids(self) -> set[str]:
        return {sub.obj.id for sub in self.subsources.values()}

    def _count(self, **values: int) -> None:
        """`messages_staged` and `bytes_staged` add up; the rest are gauges (see Catalog.add_statistics)."""
        with self._statistics_lock:
            for key, value in values.items():
                additive = key in ("messages_staged", "bytes_staged")
                self._statistics[key] = self._statistics.get(key, 0) + value if additive else value

    def take_statistics(self) -> dict[str, int]:
        """What changed since the last call, for mz_source_statistics (read by the scheduler's thread)."""
        with self._statistics_lock:
            taken, self._statistics = self._statistics, {}
        return taken

    def run(self, on_running) -> None:
        """Copies (once) and then follows the source until `stop()`; `on_running(details)` is called when it is
        caught up with the slot for the first time. Raises what stops it."""
        import psycopg

        store = TableStore(self.catalog.data_dir, writer=True)
        # a long statement on another engine table holds the store for a while: the upstream keeps the changes meanwhile
        store.db.execute(f"PRAGMA busy_timeout = {STORE_WAIT_SECONDS * 1000}")
        store.checkpoint_apart()
        try:
            self._follow(store, on_running)
        except psycopg.OperationalError as exc:  # the server went away, restarted or cut the connection
            raise self.connector.invalid(f"the connection to {self.connector.address} was lost: "
                                         f"{first_line(exc)}") from None
        finally:
            store.close()

    def _follow(self, store: TableStore, on_running) -> None:
        _progress_table(store.db)
        row = store.db.execute("SELECT lsn FROM source_progress WHERE source_id = ?",
                               (self.source.id,)).fetchone()
        if row is None:
            self._snapshot(store)
        else:
            self.lsn = row[0]
            self._copy_added(store)
        self._load_bases(store)
        for sub in self.subsources.values():
            store.segments.follow(sub.obj.id, sub.columns)
        copied = dict(store.db.execute("SELECT object_id, copied_lsn FROM source_tables WHERE source_id = ?",
                                       (self.source.id,)))
        for sub in self.subsources.values():
            sub.copied_at = copied.get(sub.obj.id) or 0
        publication = self.descriptor.publication
        with self.connector.connect(options=SESSION) as upstream, \
                SlotStream(self.connector, self.slot, publication, self.lsn, self.stopping, STREAM_BYTES) as stream:
            self.upstream, self.types = upstream, UpstreamTypes(upstream)
            announced, pruned = False, 0.0
            batches = Ahead(lambda: self._next_batch(stream), f"source {self.source.name} batches")
            try:
                while not self.stopping.is_set():
                    self._pump(store, stream, batches)
                    if not announced:
                        on_running({"lsn": lsn_text(self.lsn), "slot": self.slot})
                        announced = True
                    if time.monotonic() - pruned >= PRUNE_SECONDS:
                        self._prune(store)
                        pruned = time.monotonic()
            finally:
                batches.close()

    def stop(self) -> None:
        self.stopping.set()

    def _prune(self, store: TableStore) -> None:
        """Deletes the segments every sink of a table has committed (segments.prune)."""
        catalog = Catalog(self.catalog.data_dir)  # this thread's own connection
        try:
            for sub in self.subsources.values():
                def readers(table_id=sub.obj.id) -> set[str]:
                    return catalog.sinks_reading(table_id)
                removed = segments.prune(store, sub.obj.id, readers)
                if removed:
                    log.debug("source %s: %d segments of %s deleted", self.source.name, removed, sub.obj.name)
        finally:
            catalog.close()

    # ------------------------------------------------------------ the initial copy
    def _snapshot(self, store: TableStore) -> None:
        with self.connector.connect(options=SESSION) as upstream:
            upstream.execute(DROP_SLOT, (self.slot,))  # left by a copy that did not finish
            with self.connector.connect(replication="database") as replication:
                _, consistent, snapshot, _ = replication.execute(
                    f"CREATE_REPLICATION_SLOT {self.slot} LOGICAL pgoutput (SNAPSHOT 'export')").fetchone()
                # the exported snapshot lives while the replication connection stays open and idle
                subsources = list(self.subsources.values())
                bases = self._copy_all(upstream, snapshot, subsources)
        with store.transaction() as db:
            for sub in subsources:
                store.add_base(sub.obj.id, bases[sub.obj.id])
            self.lsn = lsn_int(consistent)
            db.execute("INSERT INTO source_progress VALUES (?, ?, ?)", (self.source.id, self.slot, self.lsn))
            db.execute("DELETE FROM source_tables WHERE source_id = ?", (self.source.id,))
        log.info("source %s: copied %d rows as of %s", self.source.name, self._staged, consistent)

    def _copy_added(self, store: TableStore) -> None:
        """Copies the tables created from the source since its first copy, each as of a snapshot of its own. The
        source's slot is behind that snapshot: its changes to such a table in transactions the copy already holds
        (those that end at or before the snapshot's consistent point) are skipped."""
        added = {object_id for (object_id,) in store.db.execute(
            "SELECT object_id FROM source_tables WHERE source_id = ? AND copied_lsn IS NULL", (self.source.id,))}
        pending = [sub for sub in self.subsources.values() if sub.obj.id in added]
        if not pending:
            return
        with self.connector.connect(options=SESSION) as upstream, \
                self.connector.connect(replication="database") as replication:
            _, consistent, snapshot, _ = replication.execute(
                f"CREATE_REPLICATION_SLOT {self.slot}_add TEMPORARY LOGICAL pgoutput (SNAPSHOT 'export')").fetchone()
            bases = self._copy_all(upstream, snapshot, pending)
        with store.transaction() as db:
            for sub in pending:
                store.add_base(sub.obj.id, bases[sub.obj.id])
                db.execute("UPDATE source_tables SET copied_lsn = ? WHERE object_id = ?",
                           (lsn_int(consistent), sub.obj.id))
        log.info("source %s: copied %d rows of %s as of %s", self.source.name, self._staged,
                 ", ".join(sub.obj.descriptor.upstream for sub in pending), consistent)

    def _copy_all(self, upstream, snapshot: str, subsources) -> dict[str, list]:
        """Copies each table as of the exported `snapshot` into Parquet files of its base; returns them by id."""
        with upstream.transaction():
            self._read_as_of(upstream, snapshot, subsources)
            sizes = {sub.obj.id: self._size(upstream, sub) for sub in subsources}
            self._staged = 0
            self._count(snapshot_records_known=sum(rows for rows, _ in sizes.values()), snapshot_records_staged=0)
            try:
                bases = {sub.obj.id: self._copy(upstream, snapshot, sub, *sizes[sub.obj.id]) for sub in subsources}
                self._count(snapshot_records_known=self._staged)  # a large table's count was the planner's
                if self.stopping.is_set():  # the source may be gone: its copy is not recorded
                    raise Stopped(f"source '{self.source.name}': stopped at the end of its copy")
            except BaseException:
                for sub in subsources:
                    shutil.rmtree(base_dir(self.catalog.data_dir, sub.obj.id), ignore_errors=True)
                raise
            return bases

    @staticmethod
    def _size(upstream, sub: Subsource) -> tuple[int, int]:
        """A table's rows and pages. A large table's rows are the planner's estimate (exact when it was vacuumed
        since it last changed): counting 10M rows takes half a second, 5% of their copy."""
        estimate, pages = upstream.execute(sql.SQL(
            "SELECT reltuples::bigint, pg_relation_size(oid) / current_setting('block_size')::bigint FROM pg_class "
            "WHERE oid = {}::regclass").format(sql.Literal(sub.obj.descriptor.upstream))).fetchone()
        if pages >= PARALLEL_PAGES and estimate >= 0:
            return estimate, pages
        return upstream.execute(sql.SQL("SELECT count(*) FROM {}").format(
            sql.Identifier(*sub.obj.descriptor.upstream.split(".", 1)))).fetchone()[0], pages

    def _read_as_of(self, upstream, snapshot: str, subsources) -> None:
        """The upstream transaction reads as of the exported snapshot, and the tables still have the columns
        their subsources expect."""
        upstream.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        upstream.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
        for sub in subsources:
            qualified = sub.obj.descriptor.upstream
            reconcile(sub.obj.id, qualified, tuple(sub.columns),
                      table_types(describe(upstream, *qualified.split(".", 1))), self.descriptor)

    def _copy(self, upstream, snapshot: str, sub: Subsource, rows: int, pages: int) -> list[tuple[str, int]]:
        """One table as of the transaction's snapshot, by this connection or, when large, by Spark's executors."""
        schema, name = sub.obj.descriptor.upstream.split(".", 1)
        directory = base_dir(self.catalog.data_dir, sub.obj.id)
        shutil.rmtree(directory, ignore_errors=True)  # what a copy that did not finish left
        directory.mkdir(parents=True)
        if pages >= PARALLEL_PAGES and upstream.info.server_version >= 140000:  # a range reads its pages only
            queries = [range_query(sub.columns, schema, name, part).as_string(upstream)
                       for part in page_ranges(pages, -(-pages // PAGES_PER_RANGE))]
            staged = self._staged

            def progress(done: int, ranges: int) -> None:
                self._count(snapshot_records_staged=staged + rows * done // ranges)
            try:
                files = copy_on_executors(self.spark, str(Path(self.catalog.data_dir).resolve()),
                                          self.descriptor.connection_id, snapshot, queries, sub.columns,
                                          str(directory), self.stopping, progress)
            except Cancelled:
                raise Stopped(f"source '{self.source.name}': stopped during the copy of {schema}.{name}") from None
            except CopyRefused as exc:
                raise CopyRefused(f"source '{self.source.name}': the copy of {schema}.{name}: {exc}") from None
        else:
            copied = 0

            def block(count: int) -> None:
                nonlocal copied
                if self.stopping.is_set():
                    raise Stopped(f"source '{self.source.name}': stopped during the copy of {schema}.{name}")
                copied += count
                self._count(snapshot_records_staged=self._staged + copied)
            path = str(directory / "part-00000.parquet")
            try:
                with upstream.cursor().copy(range_query(sub.columns, schema, name, None)) as copy:
                    files = [(path, write_base(copy, sub.columns, path, block))]
            except CopyRefused as exc:
                raise CopyRefused(f"source '{self.source.name}': the copy of {schema}.{name}: {exc}") from None
        descriptor = os.open(directory, os.O_RDONLY)  # the files' names durable before the store records them
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        self._staged += sum(count for _, count in files)
        self._count(snapshot_records_staged=self._staged)
        return [(path, count) for path, count in files if count]

    def _load_bases(self, store: TableStore) -> None:
        """Puts the copied rows into the store's tables before any change is applied to them, a block per
        transaction (so sinks are not kept waiting for the store); a load cut short goes on where it stopped."""
        for sub in self.subsources.values():
            base = store.base(sub.obj.id)
            if base is None or base.loaded == base.rows:
                continue
            loaded, position = base.loaded, 0
            for path, rows in base.files:
                for batch in base_batches(path, skip=max(0, loaded - position), size=LOAD_ROWS):
                    if self.stopping.is_set():
                        raise Stopped(f"source '{self.source.name}': stopped while loading "
                                      f"{sub.obj.descriptor.upstream}")
                    loaded += batch.num_rows
                    store.load_base(sub.obj.id, sub.columns, stored_rows(batch, sub.columns), loaded)
                    crash_point("source-loading")
                position += rows
            if loaded != base.rows:  # a file lost rows since the copy was recorded (a crash of the machine)
                raise CopyDamaged(f"source '{self.source.name}': the copy of {sub.obj.descriptor.upstream} in "
                                  f"{base_dir(self.catalog.data_dir, sub.obj.id)} holds {loaded} of its "
                                  f"{base.rows} rows; recreate the source (DROP SOURCE … CASCADE, then CREATE "
                                  "SOURCE)")
            log.info("source %s: %d copied rows of %s in the store", self.source.name, loaded,
                     sub.obj.descriptor.upstream)

    # ------------------------------------------------------------ the change stream
    def _next_batch(self, stream: SlotStream):
        """The next batch of whole transactions, folded a column at a time if it can be (else the reason why not),
        and what the stream had received by then; made on a thread of its own while the batch before is written."""
        taken = stream.take(CHANGES_PER_BATCH, IDLE_SECONDS)
        try:
            folded = columnar.fold(taken, stream.decoder, self.subsources, self.lsn)
        except NotColumnar as why:
            folded = why
        except Exception as exc:  # a batch too large to gather, a description bound meanwhile: decoded the old way
            log.warning("source %s: a batch could not be decoded a column at a time (%s: %s); decoded a message "
                        "at a time", self.source.name, type(exc).__name__, exc)
            folded = NotColumnar(str(exc))
        return taken, folded, stream.received()

    def _pump(self, store: TableStore, stream: SlotStream, batches: Ahead) -> None:
        """Applies the next batch of whole transactions, then confirms them to the slot."""
        known = lsn_int(self.upstream.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
        try:
            made = batches.next(self.stopping)
        except Exception as exc:
            raise self._stream_failed(exc) from None
        if made is None:
            return
        taken, folded, (messages, size, caught_up) = made
        if not isinstance(folded, NotColumnar) and any(  # the batch before described a table anew
                self.subsources[name].relation is not changes.relation for name, changes in folded.items()):
            folded = NotColumnar("a table was described anew while the batch was folded")
        changed = None
        if isinstance(folded, NotColumnar):
            log.debug("source %s: a batch decoded a message at a time: %s", self.source.name, folded)
            changed = self._apply_each(store, taken.decode(stream.decoder))
        elif taken.end_lsn is not None and taken.end_lsn > self.lsn:  # else applied before a crash
            with store.transaction() as db:
                for name, changes in folded.items():
                    self.subsources[name].write(db, changes, store.segments)
                db.execute("UPDATE source_progress SET lsn = ? WHERE source_id = ?", (taken.end_lsn, self.source.id))
            self.lsn = taken.end_lsn
        done = self.lsn if changed else taken.end_lsn  # never below the slot's
        if done:
            stream.confirm(done)
        # every transaction up to `caught_up` is applied, and nothing after it up to `known` is published
        self._count(messages_staged=messages, bytes_staged=size, offset_known=known,
                    offset_committed=max(self.lsn, min(known, caught_up)))
        if changed:
            raise changed

    def _apply_each(self, store: TableStore, transactions: list[Transaction]) -> SchemaChanged | None:
        """Applies transactions decoded a message at a time; returns the schema change that stopped them short (the
        transactions before it are applied)."""
        fresh = [t for t in transactions if t.end_lsn > self.lsn]  # applied before a crash: skipped
        end = len(fresh)
        changed = None
        while end:
            try:
                with store.transaction() as db:
                    for sub in self.subsources.values():  # the triggers log every entry
                        store.segments.log_new_rows(sub.obj.id, True)
                    self._apply(db, fresh[:end])
                    db.execute("UPDATE source_progress SET lsn = ? WHERE source_id = ?",
                                (fresh[end - 1].end_lsn, self.source.id))
            except SchemaChanged as exc:  # rolled back: the transactions before it again, kept this time
                for sub in self.subsources.values():
                    sub.discard()
                changed, end = exc, exc.transactions_before
                continue
            self.lsn = fresh[end - 1].end_lsn
            break
        return changed

    def _stream_failed(self, exc: Exception) -> Exception:
        """What stopped the slot's reader, said for the user: the login or the connection (retried), a missing
        publication (retried: it may be created again), or the slot gone (the source must be recreated)."""
        if not isinstance(exc, StreamFailed):
            return exc
        text = first_line(exc)
        if exc.stage == "connect":
            return self.connector.refused(exc)
        if exc.code == "42704" and "publication" in text:  # undefined_object, as a missing slot is
            publication = self.descriptor.publication
            return self.connector.invalid(
                f"publication '{publication}' does not exist upstream, or did not when the next change was made "
                f"({text}): CREATE PUBLICATION {publication} FOR TABLE … again; if changes were made "
                "while it was missing, Postgres cannot decode them for this slot: recreate the source "
                "(DROP SOURCE … CASCADE, then CREATE SOURCE)")
        if exc.code in ("42704", "55000"):  # undefined_object, object_not_in_prerequisite_state (invalidated)
            return SlotLost(f"source '{self.source.name}': its replication slot {self.slot} can no longer be read "
                            f"({text}): the changes since icesink last read it are lost; "
                            "recreate the source (DROP SOURCE … CASCADE, then CREATE SOURCE)")
        if exc.lost:
            return self.connector.invalid(f"the connection to {self.connector.address} was lost: {text}")
        return self.connector.invalid(f"replication from slot {self.slot} stopped: {text}")

    def _apply(self, db, transactions: list[Transaction]) -> None:
        """Applies the transactions, folded per key (subsource.py). A schema change that stops them short says
        how many came before it: the caller rolls back and applies those again (a savepoint to roll back to
        instead would copy every page the batch changes once more, which halves the rate)."""
        for before, transaction in enumerate(transactions):
            try:
                self._stage(db, transaction)
            except SchemaChanged as exc:
                exc.transactions_before = before
                raise
        for sub in self.subsources.values():
            sub.flush(db)

    def _stage(self, db, transaction: Transaction) -> None:
        for change in transaction.changes:
            if change.kind == "truncate":
                for relation in change.relations:
                    sub = self._target(relation, transaction)
                    if sub is not None:
                        sub.truncate(db)
                continue
            sub = self._target(change.relation, transaction)
            if sub is not None:
                sub.stage(db, change)

    def _target(self, relation: Relation, transaction: Transaction) -> Subsource | None:
        sub = self.subsources.get(relation.qualified)
        if sub is not None and transaction.end_lsn <= sub.copied_at:
            return None  # its copy holds this transaction
        if sub is not None and sub.relation is not relation:
            missing = missing_values(self.upstream, relation.schema, relation.name)
            reconcile(sub.obj.id, relation.qualified, tuple(sub.columns), relation_types(relation, self.types),
                      self.descriptor, missing)
            matched_by_key(relation, sub.key)
            sub.bind(relation, missing)
        return sub


def replicated_relations(catalog: Catalog, source_id: str) -> list[CatalogObject]:
    """The source's subsources and the tables created from it: each one upstream table's rows in icesink's store."""
    return [o for o in catalog.dependents(source_id) if o.kind in ("subsource", "table")]


def drop_slot(connector, slot: str) -> None:
    """DROP SOURCE: the slot would otherwise keep the upstream's WAL forever. It is held until the replication's
    stream has closed its connection, so a busy slot is tried again."""
    import psycopg

    with connector.connect() as upstream:
        for attempt in range(20):
            try:
                upstream.execute(DROP_SLOT, (slot,))
                return
            except psycopg.errors.ObjectInUse:
                if attempt == 19:
                    raise
                time.sleep(0.25)
