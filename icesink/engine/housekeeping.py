"""Housekeeping off the commit path: a sink's batch hands work here and goes on, so no batch waits for a step that
follows the size of a table. One thread per process does it, a piece at a time; a piece asked for again before it
ran runs once, with the latest request. Work that dies with the process is asked for again by the next batch."""
from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("icesink.housekeeping")

_lock = threading.Lock()
_pending: dict[tuple, Callable[[], None]] = {}
_wake = threading.Event()
_thread: threading.Thread | None = None


def later(key: tuple, work: Callable[[], None]) -> None:
    """Runs `work` on the housekeeping thread; `key` names the piece (a newer request replaces one not yet run)."""
    global _thread
    with _lock:
        _pending[key] = work
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="icesink-housekeeping", daemon=True)
            _thread.start()
    _wake.set()


def _run() -> None:
    while True:
        _wake.wait()
        with _lock:
            if not _pending:
                _wake.clear()
                continue
            key = next(iter(_pending))
            work = _pending.pop(key)
        try:
            work()
        except Exception:  # a failed piece is asked for again by the next batch; the sink goes on meanwhile
            log.warning("housekeeping %s failed", key, exc_info=True)
