"""Files of the data directory that only their owner may read: the catalog, engine tables, history."""
from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_FILE = 0o600


def private_file(path: Path) -> Path:
    """Creates `path` owner-only, or takes group and others' access from an existing one (older icesink versions
    left them 0644). SQLite gives its -wal and -shm files the mode of the database file."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except FileExistsError:
        if stat.S_IMODE(os.stat(path).st_mode) & 0o077 and os.stat(path).st_uid == os.getuid():
            os.chmod(path, PRIVATE_FILE)
    return path
