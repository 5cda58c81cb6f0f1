"""MODE APPEND: every change becomes a row with _mz_diff and _mz_timestamp; nothing is rewritten."""
from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ...pyiceberg_internals import executor_context, table_context
from ...sources.engine_table import DIFF, OFFSET, TS
from .base import RESULT_SCHEMA, BatchFiles, collect, conform, facts, tally, write


class AppendWriter:
    def __init__(self, columns: list[str]):
        self.columns = columns

    def plan(self, changes: DataFrame, table, after: int) -> BatchFiles:
        frame = changes.filter(F.col(OFFSET) > after).select(
            *self.columns, F.col(DIFF).alias("_mz_diff"), F.col(TS).alias("_mz_timestamp"), OFFSET, TS)
        context = table_context(table)

        def write_task(batches):
            batches = list(batches)
            rows = pa.Table.from_batches(batches) if batches else None
            if rows is None or not rows.num_rows:
                return
            metadata, io = executor_context(*context)
            yield facts([tally(rows), *write(metadata, io, conform(rows, metadata.schema().as_arrow()))])

        return collect(frame.mapInArrow(write_task, from_arrow_schema(RESULT_SCHEMA)))
