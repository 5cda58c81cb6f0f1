"""Writers, one per write mode behind one interface (base.Writer): adding a mode is adding a module here and a line
in WRITERS."""
from __future__ import annotations

from ....model.descriptors import FoldPolicy
from .append import AppendWriter
from .base import BatchFiles, KeyViolation, Writer
from .merge_on_read import MergeOnReadWriter
from .upsert import UpsertWriter

# by SinkDescriptor.writer: MODE APPEND, or MODE UPSERT's WRITE MODE
WRITERS = {"upsert": UpsertWriter, "append": AppendWriter, "merge-on-read": MergeOnReadWriter}


def writer_for(name: str, columns: list[str], key: list[str], enforced: bool, state_dir: str,
               fold: FoldPolicy = FoldPolicy()) -> Writer:
    """`enforced`: the input promises one live row per key (see UpsertWriter); `state_dir`: the sink's own
    directory, for what a writer keeps between batches; `fold`: when a writer that leaves delete files folds them."""
    return WRITERS[name](columns, key, enforced, state_dir, fold)


__all__ = ["AppendWriter", "BatchFiles", "KeyViolation", "UpsertWriter", "WRITERS", "Writer", "writer_for"]
