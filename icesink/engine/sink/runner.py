"""Runs one sink: a Structured Streaming query whose foreachBatch commits each batch to Iceberg (docs/architecture.md,
"The life of a batch"; docs/commit-protocol.md)."""
from __future__ import annotations

import logging
import threading
import time
from functools import partial

from ...catalog.store import Catalog, CatalogObject, now
from ...catalog_connections import connector_for
from ...catalog_connections.aws import storage_hint
from ...model.descriptors import SinkDescriptor
from ...model.frontier import Frontier
from ..failures import cause_of, is_external, needs_action
from ..lifecycle import SinkLifecycle
from ..faults import crash_point
from ..sources import Input, input_for
from . import state_dir
from .committer import Committer, Fenced
from .progress import latest_progress
from .table import ensure_table
from .writers import writer_for
from .writers.base import no_sample

log = logging.getLogger("icesink.sink")


class SinkFailed(Exception):
    """The sink could not start for a reason that needs the user's action; its status says which."""


class SinkRunner:
    def __init__(self, catalog: Catalog, sink: CatalogObject, spark, secret, lifecycle: SinkLifecycle | None = None):
        """`lifecycle`: the sink's status owner (the scheduler's, which outlives a runner), else one of its own."""
        self.catalog = catalog
        self.sink = sink
        self.spark = spark
        self.secret = secret
        self.descriptor: SinkDescriptor = sink.descriptor
        self.lifecycle = lifecycle or SinkLifecycle(catalog, sink.id)
        self.query = None
        self.input: Input | None = None
        self.frontier: Frontier | None = None  # known once started
        self.end: Frontier | None = None  # where a finite input ends
        self.error: str | None = None  # why the last batch failed, for status `stalled`
        self.stopping = False
        self._batch_done = threading.Event()
        self._batch_done.set()

    @property
    def failed(self) -> BaseException | None:
        return self.lifecycle.failure

    def _load_table(self):
        return self.iceberg.load_table(self.descriptor.identifier)

    def _connect(self) -> None:
        """Once per start and per batch, not per table load: the connection reads its secrets and credentials, and
        builds the catalog again only when they changed (a rotated secret, a refreshed role)."""
        self.iceberg = self.connector.load_catalog()

    def start(self) -> None:
        """Takes the sink over as a new incarnation: its version is above every earlier one's, so an older runner
        still writing (in this process or another) is fenced by this one's first commit."""
        self.lifecycle.starting()
        connection = self.catalog.get_by_id(self.descriptor.connection_id)
        self.connector = connector_for(connection, self.secret, self.catalog).writing_with(
            self.descriptor.aws_connection_id)
        try:
            self._connect()
            table = ensure_table(self.iceberg, self.descriptor, self.sink.id)
            written = latest_progress(table, self.sink.id)
            version = self.catalog.next_incarnation(self.sink.id, written.version if written else 0)
            self.committer = Committer(self._load_table, self.sink.id, version, self.descriptor.input_id,
                                       self.descriptor.unnamed_input_id)
            progress = self.committer.resume_point()
            self.input = input_for(self.catalog, self.catalog.get_by_id(self.descriptor.input_id), self.descriptor.view,
                                   self.sink.id)
            # ALTER SINK … SET FROM since the last commit: the new input from its start, which its first commit
            # puts in place of every row the table holds (at once when it holds nothing to wait for)
            switched = progress is not None and not self.committer.counts(progress)
            self.frontier = progress.frontier if progress is not None and not switched else self.input.frontier_kind()
            if not switched:
                self.input.check_resume(self.frontier)
            self.end = self.input.end()
            sealed = progress is not None and not switched and progress.sealed
            if (progress is None or (switched and not self.input.holds_changes_after(self.frontier))
                    or (self._complete(self.frontier) and not sealed)):
                self.committer.mark(self.frontier, sealed=self._complete(self.frontier))
            stream = self.input.stream(self.spark, self.frontier)
        except Exception as exc:
            if is_external(exc):
                raise self.connector.explain(exc) from None
            if not needs_action(exc):
                raise
            self.lifecycle.failed(exc)
            raise SinkFailed(str(exc)) from None
        columns = [c.name for c in self.descriptor.columns]
        enforced = self.descriptor.key_enforced and not self.input.upsert_stream
        self.writer = writer_for(self.descriptor.writer, columns, list(self.descriptor.key), enforced,
                                 str(state_dir(self.catalog.data_dir, self.sink.id)), self.descriptor.fold)
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.sink.cluster or "default")
        self.query = (stream.writeStream.queryName(f"icesink-{self.sink.id}-v{self.committer.version}")
                      .foreachBatch(self._batch)
                      .trigger(processingTime=f"{self.descriptor.commit_interval_ms} milliseconds")
                      .start())
        self.lifecycle.running({"frontier": self.frontier.to_json(), "version": version,
                                "snapshot_id": progress.snapshot_id if progress else None})

    def _complete(self, frontier: Frontier) -> bool:
        """Whether `frontier` covers all of a finite input."""
        return self.end is not None and not self.end.past(frontier)

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
            self.lifecycle.failed(exc)
            self.stop(wait_seconds=0)
            return True
        return False

    def _explain(self, exc: BaseException) -> str:
        """A failure in the catalog's or the object store's words when it came from there (Spark's own report of a
        failure buries the cause)."""
        if is_external(exc):
            return str(self.connector.explain(exc))
        return self.connector.expired_temporary_credentials() or storage_hint(cause_of(exc))

    # ------------------------------------------------------------ one batch
    def _batch(self, changes, batch_id: int) -> None:
        self._batch_done.clear()
        try:
            self._commit_batch(changes)
        except Exception as exc:
            if needs_action(exc):
                self.lifecycle.failed(exc)
            else:
                self.error = self._explain(exc)
            raise
        finally:
            self._batch_done.set()

    def _commit_batch(self, changes) -> None:
        if self.stopping:
            return  # shutting down: the batch is abandoned unwritten, and read again after a restart
        started = time.time()
        self._connect()
        key = self.descriptor.key

        def plan(table, after):
            return self.writer.plan(changes, table, after,
                                    partial(self.input.key_sample, after, key[0]) if key else no_sample)
        outcome = self.committer.commit(self.frontier, plan)
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
        self.lifecycle.running({"frontier": outcome.frontier.to_json(), "version": self.committer.version,
                                "snapshot_id": outcome.snapshot_id})
        if self._complete(outcome.frontier):
            self.committer.mark(outcome.frontier, sealed=True)
        if not outcome.already_committed:
            plan_fold = getattr(self.writer, "plan_fold", None)
            if plan_fold is not None:
                left = self.descriptor.commit_interval_ms / 1000 - (time.time() - started)
                self.committer.fold(lambda table: plan_fold(self.spark, table, files.rows, left))

