"""The one owner of a sink's status. Materialize's statuses, in the order a sink meets them:

    starting → running ⇄ stalled      a runner took the sink over; batches commit, or fail and are retried (or
                                       its source stalls or fails, and nothing new reaches it)
             → failed                  a failure that needs the user's action (failures.NeedsAction): not retried
             → paused                  the runner stopped; the next one resumes from the committed progress
    dropped                            DROP SINK (recorded by the executor through `dropped`)

One SinkLifecycle belongs to one sink in one process (the scheduler's slot, shared by the runners it starts): it
records a failure once, however many places notice it (a batch and the idle fencing check can both), and nothing
after it: a failed sink stays failed until the user acts: an ALTER of the sink, of its input's columns or of a
connection it uses starts it again (`retry`), and another process's newer incarnation reports its own.
"""
from __future__ import annotations

import os
import threading
from typing import Optional

from ..catalog.store import Catalog


class SinkLifecycle:
    def __init__(self, catalog: Catalog, sink_id: str):
        self.catalog, self.sink_id = catalog, sink_id
        self.failure: Optional[BaseException] = None
        self._lock = threading.Lock()

    def _record(self, status: str, error: Optional[str] = None, details: Optional[dict] = None) -> None:
        if self.failure is None or status == "failed":
            self.catalog.record_status(self.sink_id, "sink", status, error, details)

    def starting(self) -> None:
        self._record("starting")

    def running(self, details: dict) -> None:
        """After a start, and after the first commit that follows a stall."""
        if self.catalog.last_status(self.sink_id) != "running":
            self._record("running", details=details)

    def stalled(self, cause: str, retry_in: int, attempt: int) -> None:
        self._record("stalled", cause, {"hints": [f"retrying in {retry_in}s"], "attempt": attempt})

    def waiting(self, cause: str) -> None:
        """Its input's source cannot be read (`cause` says why): nothing new reaches the sink until it can."""
        self._record("stalled", cause, {"hints": ["the sink goes on by itself once its source runs again"]})

    def failed(self, failure: BaseException) -> bool:
        """Records the failure, once; False when it was recorded already."""
        with self._lock:
            if self.failure is not None:
                return False
            self.failure = failure
        self._record("failed", str(failure))
        return True

    def retry(self) -> None:
        """The user changed what the sink runs with since it failed: it may start again."""
        with self._lock:
            self.failure = None

    def paused(self, reason: str) -> None:
        self._record("paused", details={"hints": [
            f"{reason} (pid {os.getpid()}); it resumes from its committed progress when icesink serve, or a shell or "
            "script without --no-run, runs again"]})


def dropped(catalog: Catalog, object_id: str, object_kind: str) -> None:
    """DROP of a sink or a source: recorded even though the object is gone."""
    catalog.record_status(object_id, object_kind, "dropped")
