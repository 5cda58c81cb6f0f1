"""Opening the SQLite files several icesink processes share."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from .private import private_file

BUSY_SECONDS = 30


def connect_wal(path: Path) -> sqlite3.Connection:
    """A connection in WAL mode, in autocommit (callers say BEGIN). Turning WAL on needs the file to itself for a
    moment, and SQLite answers "locked" at once instead of waiting when another process opens it too: retry."""
    for companion in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if companion == path or companion.exists():
            private_file(companion)
    db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_SECONDS, check_same_thread=False)
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return db
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(0.05)
