"""The scheduler's part for sources icesink replicates: one thread per Postgres source, started again with backoff
when it stops on an error (`stalled`), not when the error needs the user (`failed`). Statuses are recorded from the
scheduler's thread, the one that owns the catalog's connection."""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from ...errors import first_line
from ..failures import cause_of, needs_action
from ..tables import TableStore
from .postgres import PostgresIngestion, Stopped, replicated_relations
from .schema import SchemaChanged, follow

log = logging.getLogger("icesink.ingest")


@dataclass
class _Replication:
    ingestion: PostgresIngestion | None = None
    thread: threading.Thread | None = None
    error: BaseException | None = None
    running: dict | None = None  # set by the thread once caught up; recorded by the scheduler
    recorded_running: bool = False
    failures: int = 0
    retry_at: float = 0.0
    failed: bool = False
    connection: object = None  # the descriptor of the Postgres connection it started with


class Ingestions:
    def __init__(self, catalog, secret, spark_factory, backoff: tuple[int, ...]):
        self.catalog, self.secret, self.spark_factory, self.backoff = catalog, secret, spark_factory, backoff
        self.sources: dict[str, _Replication] = {}

    def tick(self) -> None:
        sources = {s.id: s for s in self.catalog.objects_of("source", "postgres")}
        for source_id in list(self.sources):
            if source_id not in sources:
                self._stop(self.sources.pop(source_id))
        for source_id, source in sources.items():
            state = self.sources.setdefault(source_id, _Replication())
            if state.failed:
                continue
            if state.ingestion is not None:
                taken = state.ingestion.take_statistics()
                if taken:
                    self.catalog.add_statistics(source_id, **taken)
            if state.thread is not None and state.thread.is_alive() and state.ingestion.relation_ids != {
                    o.id for o in replicated_relations(self.catalog, source_id)}:
                state.ingestion.stop()  # a table was created from the source or dropped: it starts again once ended
                continue
            altered = state.connection != self._connection(source)  # ALTER CONNECTION since its start
            if state.thread is not None and state.thread.is_alive() and altered:
                state.ingestion.stop()  # ALTER CONNECTION: it starts again with the connection as it now is
                continue
            if state.thread is not None and state.thread.is_alive():
                if state.running is not None and not state.recorded_running:
                    self.catalog.record_status(source_id, "source", "running", details=state.running)
                    state.recorded_running, state.failures = True, 0
                continue
            if state.thread is not None:  # it stopped: why
                state.thread = None
                self._stopped(source, state)
                continue
            if time.time() >= state.retry_at or altered:
                self._start(source, state)  # when due, or at once when its connection was altered since

    def _connection(self, source):
        connection = self.catalog.get_by_id(source.descriptor.connection_id)
        return connection.descriptor if connection is not None else None

    def _start(self, source, state: _Replication) -> None:
        state.error, state.running, state.recorded_running = None, None, False
        state.connection = self._connection(source)
        try:
            state.ingestion = PostgresIngestion(self.catalog, source, self.secret, self.spark_factory)
        except Exception as exc:
            state.error = exc
            self._stopped(source, state)
            return
        self.catalog.record_status(source.id, "source", "starting")

        def run():
            try:
                state.ingestion.run(lambda details: setattr(state, "running", details))
            except BaseException as exc:  # reported by the scheduler's thread
                if isinstance(exc, (LookupError, TypeError, AttributeError, AssertionError)):
                    log.exception("source %s: unexpected failure", source.name)  # a bug: keep where it happened
                state.error = exc

        state.thread = threading.Thread(target=run, name=f"icesink-source-{source.name}", daemon=True)
        state.thread.start()

    def _stopped(self, source, state: _Replication) -> None:
        exc = state.error
        if exc is None or isinstance(exc, Stopped):  # started again on the next tick, if its source is still there
            return
        if isinstance(exc, SchemaChanged):  # followed, then replicated on from where it stopped
            store = TableStore(self.catalog.data_dir)
            try:
                follow(self.catalog, store, exc)
            finally:
                store.close()
            state.retry_at = 0.0
            return
        if needs_action(exc):
            state.failed = True
            self.catalog.record_status(source.id, "source", "failed", str(exc))
            return
        delay = self.backoff[min(state.failures, len(self.backoff) - 1)]
        state.failures += 1
        state.retry_at = time.time() + delay
        log.warning("source %s stalled: %s", source.name, cause_of(exc))
        self.catalog.record_status(source.id, "source", "stalled", _words(exc),
                                   {"hints": [f"retrying in {delay}s"], "attempt": state.failures})

    @staticmethod
    def _stop(state: _Replication) -> None:
        if state.ingestion is not None:
            state.ingestion.stop()
        if state.thread is not None:
            state.thread.join(timeout=30)

    def stop(self) -> None:
        for state in self.sources.values():
            self._stop(state)


def _words(exc: BaseException) -> str:
    """An icesink error's message (without its kind), else the first line of psycopg's (libpq adds context)."""
    return getattr(exc, "message", None) or first_line(exc)
