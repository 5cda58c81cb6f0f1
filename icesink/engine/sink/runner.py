"""Runs one sink: a Structured Streaming query whose foreachBatch commits each batch to Iceberg."""
from __future__ import annotations

import logging
import threading
import time

from ...catalog.store import Catalog, CatalogObject, now
from ...catalog_connections import connector_for
from ...errors import NotSupportedYet
from ...model.descriptors import SinkDescriptor
from ...model.frontier import Frontier
from ..failures import cause_of
from ..faults import crash_point
from ..sources import Input, ProgressBehindInput, input_for
from .committer import Committer, Fenced, FrontierConflict
from .table import IncompatibleTable, ensure_table
from .writers import KeyViolation, writer_for

log = logging.getLogger("icesink.sink")


class SinkFailed(Exception):
    pass


# need a user's action: status failed
FATAL = (Fenced, FrontierConflict, IncompatibleTable, KeyViolation, NotSupportedYet, ProgressBehindInput)


class SinkRunner:
    def __init__(self, catalog: Catalog, sink: CatalogObject, spark, secret):
        self.catalog = catalog
        self.sink = sink
        self.spark = spark
        self.secret = secret
        self.descriptor: SinkDescriptor = sink.descriptor
        self.query = None
        self.input: Input | None = None
        self.frontier = Frontier()
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
        return self.iceberg.load_table(self.descriptor.identifier)

    def start(self) -> None:
        self._status("starting")
        connection = self.catalog.get_by_id(self.descriptor.connection_id)
        self.iceberg = connector_for(connection, self.secret, self.catalog.data_dir).load_catalog()
        try:
            ensure_table(self.iceberg, self.descriptor)
            self.committer = Committer(self._load_table, self.sink.id, self.descriptor.version)
            progress = self.committer.resume_point()
            if progress is not None:
                self.frontier = progress.frontier
            self.input = input_for(self.catalog, self.catalog.get_by_id(self.descriptor.input_id))
            self.input.check_resume(self.frontier)
            stream = self.input.stream(self.spark, self.frontier)
        except FATAL as exc:
            self._fail(exc)
            raise SinkFailed(str(exc)) from None
        columns = [c.name for c in self.descriptor.columns]
        enforced = self.descriptor.key_enforced and not self.input.upsert_stream
        self.writer = writer_for(self.descriptor.mode, columns, list(self.descriptor.key), enforced)
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.sink.cluster or "default")
        self.query = (stream.writeStream.queryName(f"icesink-{self.sink.id}-v{self.committer.version}")
                      .foreachBatch(self._batch)
                      .trigger(processingTime=f"{self.descriptor.commit_interval_ms} milliseconds")
                      .start())
        self._status("running", details={"frontier": self.frontier.to_json(),
                                         "snapshot_id": progress.snapshot_id if progress else None})

    def stop(self, wait_seconds: float = 60) -> None:
        """Lets an in-flight batch finish its commit (or abandons it before it writes), then stops."""
        self.stopping = True
        self._batch_done.wait(wait_seconds)
        if self.query is not None and self.query.isActive:
            self.query.stop()
        if self.input is not None and self._batch_done.is_set():  # else the batch still uses it
            self.input.close()

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
        self.input.acknowledge(self.sink.id, outcome.frontier)
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
            self._status("running", details={"frontier": outcome.frontier.to_json(),
                                             "snapshot_id": outcome.snapshot_id})
        if not outcome.already_committed:
            self.committer.expire_snapshots(outcome.snapshot_id)

