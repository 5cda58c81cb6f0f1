"""Writers, one per write mode behind one interface (base.Writer): adding a mode is adding a module here and a line
in WRITERS."""
from __future__ import annotations

from .append import AppendWriter
from .base import BatchFiles, KeyViolation, Writer
from .upsert import UpsertWriter

WRITERS = {"upsert": UpsertWriter, "append": AppendWriter}


def writer_for(mode: str, columns: list[str], key: list[str], enforced: bool) -> Writer:
    """`enforced`: the input promises one live row per key (see UpsertWriter)."""
    return WRITERS[mode](columns, key, enforced)


__all__ = ["AppendWriter", "BatchFiles", "KeyViolation", "UpsertWriter", "WRITERS", "Writer", "writer_for"]
