"""MODE APPEND: every change becomes a row with _mz_diff and _mz_timestamp; nothing is rewritten."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ....model.descriptors import MZ_DIFF, MZ_TIMESTAMP
from ...pyiceberg_internals import executor_context, table_context
from ...sources.engine_table import DIFF, OFFSET, TS
from .base import RESULT_SCHEMA, BatchFiles, collect, conform, facts, no_sample, tally, task_rows, write


class AppendWriter:
    def __init__(self, columns: list[str], key: list[str] = (), enforced: bool = False, state_dir: str | None = None,
                 fold=None):
        self.columns = columns  # MODE APPEND takes no KEY

    def plan(self, changes: DataFrame, table, after, key_sample=no_sample) -> BatchFiles:  # nothing is keyed
        frame = changes.filter(after.beyond()).select(
            *self.columns, F.col(DIFF).alias(MZ_DIFF), F.col(TS).alias(MZ_TIMESTAMP), OFFSET, TS)
        context, reach = table_context(table), type(after).reach

        def write_task(batches):
            rows = task_rows(batches)
            if rows is None:
                return
            metadata, io = executor_context(*context)
            yield facts([tally(rows, reach), *write(metadata, io, conform(rows, metadata.schema().as_arrow()))])

        return collect(frame.mapInArrow(write_task, from_arrow_schema(RESULT_SCHEMA)))
