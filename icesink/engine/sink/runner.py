"""Runs one sink: a Structured Streaming query whose foreachBatch commits each batch to Iceberg."""
from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime
from pathlib import Path

from ...catalog.store import Catalog, CatalogObject, now
from ...catalog_connections import connector_for
from ...errors import NotSupportedYet
from ..failures import cause_of
from ..faults import crash_point
from ..sources.engine_table import EngineTableSource
from ..sources.generators import GeneratorSource
from ..tables import TableStore, is_engine_table
from .committer import Committer, Fenced, FrontierConflict
from .table import IncompatibleTable, ensure_table
from .writers import KeyViolation, writer_for

log = logging.getLogger("icesink.sink")


class SinkFailed(Exception):
    pass


class ProgressBehindLog(Exception):
    """The sink's progress is older than its engine table's compacted log: the changes after it are gone."""


# need a user's action: status failed
FATAL = (Fenced, FrontierConflict, IncompatibleTable, KeyViolation, NotSupportedYet, ProgressBehindLog)


class SinkRunner:
    def __init__(self, catalog: Catalog, sink: CatalogObject, spark, secret):
        self.catalog = catalog
        self.sink = sink
        self.spark = spark
        self.secret = secret
        self.definition = sink.definition
        self.query = None
        self.log: TableStore | None = None  # an engine table's change log, when that is the input
        self.frontier = {"offset": 0}
        self.failed: Exception | None = None
        self.error: str | None = None  # why the last batch failed, for status `stalled`
        self.stopping = False
        self._batch_done = threading.Event()
        self._batch_done.set()
        self._failing = threading.Lock()

    # ------------------------------------------------------------ lifecycle
    def _status(self, status: str, error: str | None = None, details: dict | None = None) -> None:
        self.catalog.record_status(self.sink.id, "sink", status, error, details)

    def _load_table(self):
        return self.iceberg.load_table((*self.definition["namespace"].split("."), self.definition["table"]))

    def start(self) -> None:
        self._status("starting")
        connection = self.catalog.get_by_id(self.definition["connection_id"])
        self.iceberg = connector_for(connection, self.secret, self.catalog.data_dir).load_catalog()
        try:
            ensure_table(self.iceberg, self.definition)
            self.committer = Committer(self._load_table, self.sink.id, self.definition.get("sink_version", 1))
            progress = self.committer.resume_point()
            if progress is not None:
                self.frontier = progress.frontier
            source, parent = self._upstream()
            self._check_log(source)
            stream = self._input_stream(source, parent) \
                .option("columns", json.dumps(self.definition["columns"])) \
                .option("start", str(self.frontier.get("offset", 0))).load()
        except FATAL as exc:
            self._fail(exc)
            raise SinkFailed(str(exc)) from None
        columns = [c["name"] for c in self.definition["columns"]]
        self.writer = writer_for(self.definition["mode"], columns, self.definition["key"], self._key_checked(parent))
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.sink.cluster or "default")
        self.query = (stream.writeStream.queryName(f"icesink-{self.sink.id}-v{self.committer.version}")
                      .foreachBatch(self._batch)
                      .trigger(processingTime=f"{self.definition['commit_interval_ms']} milliseconds")
                      .start())
        self._status("running", details={"frontier": self.frontier,
                                         "snapshot_id": progress.snapshot_id if progress else None})

    def _upstream(self) -> tuple[CatalogObject, CatalogObject]:
        """The sink's input, and the source it comes from (itself for an engine table or a source)."""
        source = self.catalog.get_by_id(self.definition["input_id"])
        if source.kind == "subsource":
            return source, self.catalog.get_by_id(source.definition["source_id"])
        return source, source

    def _check_log(self, source: CatalogObject) -> None:
        if not is_engine_table(source.kind, source.definition):
            return
        self.log = TableStore(self.catalog.data_dir)
        offset, floor = int(self.frontier.get("offset", 0)), self.log.floor(source.id)
        if 0 < offset < floor:
            raise ProgressBehindLog(
                f"the sink's progress in Iceberg (offset {offset}) is older than what table '{source.name}' keeps "
                f"of its changes (compacted up to offset {floor}); recreate the sink to start from a snapshot")

    def _acknowledge(self, frontier: dict) -> None:
        """Tells the engine table this sink will not read up to `frontier` again; the log may shrink."""
        if self.log is None:
            return
        table_id = self.definition["input_id"]
        self.log.acknowledge(self.sink.id, table_id, int(frontier["offset"]))
        readers = {o.id for o in self.catalog.dependents(table_id) if o.kind == "sink"}
        removed = self.log.compact(table_id, readers)
        if removed:
            log.info("sink %s: compacted %d entries of the change log", self.sink.name, removed)

    def _key_checked(self, parent: CatalogObject) -> bool:
        """KEY VALUE is an upsert stream (each change replaces its key's row): live rows cannot be counted."""
        upsert_stream = parent.type == "load-generator" and parent.definition["generator"] == "key value"
        return self.definition.get("key_enforced", True) and not upsert_stream

    def _input_stream(self, source: CatalogObject, parent: CatalogObject):
        if is_engine_table(source.kind, source.definition):
            return (self.spark.readStream.format(EngineTableSource.name())
                    .option("data_dir", str(Path(self.catalog.data_dir).resolve())).option("table_id", source.id))
        if parent.type != "load-generator" or parent.definition["generator"] == "tpch":
            what = "LOAD GENERATOR TPCH" if parent.type == "load-generator" else f"{parent.type} sources"
            raise NotSupportedYet(f"sinks from {what} are not supported yet")
        start_ms = int(datetime.fromisoformat(parent.created_at).timestamp() * 1000)
        return (self.spark.readStream.format(GeneratorSource.name())
                .option("generator", parent.definition["generator"])
                .option("relation", source.definition.get("upstream", ""))
                .option("settings", json.dumps(parent.definition["options"]))
                .option("start_ms", str(start_ms)))

    def stop(self, wait_seconds: float = 60) -> None:
        """Lets an in-flight batch finish its commit (or abandons it before it writes), then stops."""
        self.stopping = True
        self._batch_done.wait(wait_seconds)
        if self.query is not None and self.query.isActive:
            self.query.stop()
        if self.log is not None and self._batch_done.is_set():  # else the batch still uses it
            self.log.close()

    def check_fenced(self) -> bool:
        """An idle zombie commits nothing and so would never learn it was fenced: ask the table."""
        try:
            self.committer.resume_point()
        except Fenced as exc:
            self._fail(exc)
            self.stop(wait_seconds=0)
            return True
        return False

    def _fail(self, exc: Exception) -> None:
        """Records the failure once: a batch and the scheduler's idle check can both find the same fencing."""
        with self._failing:
            if self.failed is not None:
                return
            self.failed = exc
        self._status("failed", str(exc))

    # ------------------------------------------------------------ one batch
    def _batch(self, changes, batch_id: int) -> None:
        self._batch_done.clear()
        try:
            self._commit_batch(changes)
        except FATAL as exc:
            self._fail(exc)
            raise
        except Exception as exc:
            self.error = cause_of(exc)  # Spark's own report of it buries the cause
            raise
        finally:
            self._batch_done.set()

    def _commit_batch(self, changes) -> None:
        if self.stopping:
            return  # shutting down: the batch is abandoned unwritten, and read again after a restart
        started = time.time()
        outcome = self.committer.commit(self.frontier, lambda table, after: self.writer.plan(changes, table, after))
        if outcome is None:
            return
        crash_point("committed")  # before the source is acknowledged
        self.frontier = outcome.frontier
        self._acknowledge(outcome.frontier)
        files = outcome.files
        log.info("sink %s: committed %d changes up to %s in %.2fs (%d files added, %d removed)", self.sink.name,
                 files.rows, outcome.frontier, time.time() - started, len(files.added), len(files.removed))
        if not outcome.already_committed:
            written = sum(f.file_size_in_bytes for f in files.added)
            lag = {"lag_ms": max(0, int(time.time() * 1000) - files.newest_ts)} if files.newest_ts else {}
            self.catalog.add_statistics(self.sink.id, messages_staged=files.rows, messages_committed=files.rows,
                                        snapshots_committed=1, bytes_staged=written, bytes_committed=written,
                                        last_commit_at=now(), **lag)
        if self.catalog.last_status(self.sink.id) != "running":
            self._status("running", details={"frontier": outcome.frontier, "snapshot_id": outcome.snapshot_id})
        if not outcome.already_committed:
            self.committer.expire_snapshots(outcome.snapshot_id)

