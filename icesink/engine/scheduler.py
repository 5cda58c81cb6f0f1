"""Runs every sink of a data directory, follows catalog changes made by any process, retries with backoff
(docs/architecture.md, "The life of a batch").

One scheduler owns a data directory at a time (an exclusive lock file); other processes may still edit
the catalog, and the scheduler picks their changes up within a poll interval.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..catalog.store import Catalog
from .failures import cause_of
from .ingest.supervisor import Ingestions
from .lifecycle import SinkLifecycle
from .sink import state_dir
from .sink.runner import SinkFailed, SinkRunner

log = logging.getLogger("icesink.scheduler")
LOCK_FILE = "scheduler.lock"
POLL_SECONDS = 0.5
FENCING_CHECK_SECONDS = 5
BACKOFF_SECONDS = (1, 2, 5, 10, 30, 60)


class AlreadyScheduled(Exception):
    """Another process runs this data directory's sinks."""


@dataclass
class _Slot:
    lifecycle: SinkLifecycle  # the sink's status in this process, whichever of its runners reports it
    runner: SinkRunner | None = None
    descriptor: object = None  # the sink's descriptor the runner started with
    connections: dict = field(default_factory=dict)  # and those of the connections it reaches its table with
    failures: int = 0
    retry_at: float = 0.0
    fencing_checked_at: float = 0.0
    source_trouble: str | None = None  # why its input's source cannot be read, as the sink's status says

    @property
    def failed(self) -> bool:
        """Needs a user's action: never started again by this process."""
        return self.lifecycle.failure is not None


class Scheduler:
    def __init__(self, data_dir: Path, secret, spark_factory):
        self.data_dir = Path(data_dir)
        self.secret = secret
        self.spark_factory = spark_factory
        self.slots: dict[str, _Slot] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock_file = os.fdopen(os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600), "r+")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._lock_file.read().strip()
            self._lock_file.close()
            pid = f" (pid {holder})" if holder.isdigit() else ""
            raise AlreadyScheduled(f"another icesink process{pid} runs the sinks of {self.data_dir}") from None
        self._lock_file.truncate(0)
        self._lock_file.write(str(os.getpid()))
        self._lock_file.flush()
        self.catalog = Catalog(self.data_dir)
        self.ingestions = Ingestions(self.catalog, secret, spark_factory, BACKOFF_SECONDS)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="icesink-scheduler", daemon=True)
        self._thread.start()

    def run_forever(self) -> None:
        self.start()
        while not self._stop.wait(1):
            pass

    def stop(self, reason: str = "the icesink process that ran it stopped") -> None:
        """Stops every sink gracefully: an in-flight batch finishes its commit or is abandoned unwritten. Each
        sink not failed is then `paused`, Materialize's word for a sink that nothing runs, with the reason. Stopping
        a stopped scheduler does nothing."""
        if self._lock_file.closed:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)
        self.ingestions.stop()
        for sink_id, slot in self.slots.items():
            if slot.runner is not None:
                slot.runner.stop()
            slot.lifecycle.paused(reason)
        self._lock_file.truncate(0)
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()
        self.catalog.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # the loop must outlive any one sink's trouble
                log.exception("scheduler tick failed")
            self._stop.wait(POLL_SECONDS)

    def tick(self) -> None:
        self.ingestions.tick()
        sinks = {s.id: s for s in self.catalog.sinks()}
        for sink_id in list(self.slots):
            if sink_id not in sinks:
                self._retire(sink_id)
        for sink_id, sink in sinks.items():
            slot = self.slots.get(sink_id)
            if slot is None:
                slot = self.slots[sink_id] = _Slot(SinkLifecycle(self.catalog, sink_id))
            altered = slot.connections != self._connections(sink)  # ALTER CONNECTION since its start
            if slot.failed:
                if slot.descriptor == sink.descriptor and not altered:
                    continue  # needs a user's action; an ALTER of the sink, its input or a connection it uses is one
                slot.lifecycle.retry()
                slot.failures, slot.retry_at = 0, 0.0
            if slot.runner is not None and (slot.descriptor != sink.descriptor or altered):
                slot.runner.stop()  # ALTER SINK or ALTER CONNECTION: resume from the committed progress with the
                slot.runner = None  # new settings
            if slot.runner is not None and time.time() - slot.fencing_checked_at > FENCING_CHECK_SECONDS:
                slot.fencing_checked_at = time.time()
                if slot.runner.check_fenced():
                    slot.runner = None
                    continue
            if slot.runner is not None and slot.runner.query is not None and not slot.runner.query.isActive:
                self._crashed(slot, sink)
                if slot.failed:  # needs a user's action: starting it again would only record the failure again
                    continue
            if slot.runner is None and (time.time() >= slot.retry_at or altered):
                self._start(slot, sink)  # when due, or at once when a connection it uses was altered since
            if slot.runner is not None and slot.runner.query is not None:
                self._follow_source(slot, sink)

    def _follow_source(self, slot: _Slot, sink) -> None:
        """A sink whose input's source is stalled or failed says so, with the source's cause, and says `running`
        again once the source does."""
        source = slot.runner.input.origin  # known since the runner started: no catalog read per tick
        if source.kind != "source" or source.type != "postgres":
            return
        report = self.catalog.last_report(source.id)
        trouble = (f"source '{source.name}' is {report[0]}: {report[1]}"
                   if report and report[0] in ("stalled", "failed") else None)
        runner, last = slot.runner, self.catalog.last_report(sink.id)
        if trouble is not None:
            if last != ("stalled", trouble):  # also after a commit of what the source had already delivered
                runner.lifecycle.waiting(trouble)
        elif slot.source_trouble is not None and last == ("stalled", slot.source_trouble):
            runner.lifecycle.running({"frontier": runner.frontier.to_json(), "version": runner.committer.version})
        slot.source_trouble = trouble

    def _connections(self, sink) -> dict:
        """The descriptors of the connections a sink reaches its table with: its catalog's, the AWS or GCP connection
        that one names, and its USING AWS CONNECTION."""
        found, pending = {}, [sink.descriptor.connection_id, sink.descriptor.aws_connection_id]
        while pending:
            connection_id = pending.pop()
            connection = self.catalog.get_by_id(connection_id) if connection_id not in (None, *found) else None
            if connection is not None:
                found[connection_id] = connection.descriptor
                for option in ("aws_connection", "gcp_connection"):
                    reference = getattr(connection.descriptor.options, option, None)
                    pending.append(reference.connection_id if reference is not None else None)
        return found

    def _start(self, slot: _Slot, sink) -> None:
        runner = SinkRunner(self.catalog, sink, self.spark_factory(), self.secret, slot.lifecycle)
        slot.descriptor, slot.connections = sink.descriptor, self._connections(sink)
        try:
            runner.start()
        except SinkFailed:  # the lifecycle recorded why
            return
        except Exception as exc:
            log.warning("sink %s could not start: %s", sink.name, exc)
            self._stalled(slot, sink, exc)
            return
        slot.runner = runner

    def _crashed(self, slot: _Slot, sink) -> None:
        runner, slot.runner = slot.runner, None
        if slot.failed:
            return
        self._stalled(slot, sink, runner.error or runner.query.exception())

    def _stalled(self, slot: _Slot, sink, exc) -> None:
        delay = BACKOFF_SECONDS[min(slot.failures, len(BACKOFF_SECONDS) - 1)]
        slot.failures += 1
        slot.retry_at = time.time() + delay
        slot.lifecycle.stalled(cause_of(exc), delay, slot.failures)

    def _retire(self, sink_id: str) -> None:
        slot = self.slots.pop(sink_id)
        if slot.runner is not None:
            slot.runner.stop()  # then no batch of it writes its state any more, which DROP SINK removed
            shutil.rmtree(state_dir(self.data_dir, sink_id), ignore_errors=True)
