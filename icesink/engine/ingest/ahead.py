"""One result made ahead, on a thread of its own, while the caller uses the one before: the replication takes and
folds its next batch while it writes this one into the store, whose SQLite work runs without Python's lock."""
from __future__ import annotations

import queue
import threading
from typing import Callable

_WAIT = 0.25  # seconds between looks at whether to stop


class Ahead:
    """Calls `make` again and again, keeping at most one result ready; `next` hands them over in order, and raises
    what `make` raised once the results before it are taken."""

    def __init__(self, make: Callable[[], object], name: str):
        self._make = make
        self._ready: queue.Queue = queue.Queue(maxsize=1)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def next(self, stopping: threading.Event):
        """The next result, or None once `stopping` is set."""
        while not stopping.is_set():
            try:
                failed, value = self._ready.get(timeout=_WAIT)
            except queue.Empty:
                continue
            if failed:
                raise value
            return value
        return None

    def close(self) -> None:
        self._closed.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._closed.is_set():
            try:
                made = (False, self._make())
            except BaseException as exc:  # noqa: BLE001 (the caller raises it)
                made = (True, exc)
            while not self._closed.is_set():
                try:
                    self._ready.put(made, timeout=_WAIT)
                    break
                except queue.Full:
                    continue
            if made[0]:
                return
