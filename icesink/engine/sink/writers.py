"""Turning one micro-batch of changes into Iceberg data files, on the executors.

The driver only plans: which existing files may hold changed keys (pruned by partition and the
manifests' key bounds) and which files the executors wrote. Rows never travel to the driver; file
metadata (pickled DataFile objects) does.

- UpsertWriter: copy-on-write. The last change per key wins; files holding changed keys are read,
  their surviving rows and the new rows are written anew, and the commit swaps them in one snapshot.
- AppendWriter: every change becomes a row with _mz_diff and _mz_timestamp; nothing is rewritten.
A merge-on-read writer with position deletes can take UpsertWriter's place behind the same two methods.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ..sources.engine_table import DIFF, OFFSET, TS

MAX_KEYS_FOR_EXACT_PRUNING = 10_000
FILE_SCHEMA = "file binary"


def _io_of(table) -> tuple[dict, str]:
    return dict(table.io.properties), table.metadata.location


def _write_files(metadata_json: str, io_properties: dict, location: str):
    """An executor function: Arrow batches of sink rows in, pickled DataFiles out."""
    def write(batches):
        import uuid

        import pyarrow as pa
        from pyiceberg.io import load_file_io
        from pyiceberg.io.pyarrow import _dataframe_to_data_files
        from pyiceberg.table.metadata import TableMetadataUtil

        batches = [b for b in batches if b.num_rows]
        if not batches:
            return
        metadata = TableMetadataUtil.parse_raw(metadata_json)
        data = pa.Table.from_batches(batches).cast(metadata.schema().as_arrow())
        io = load_file_io(io_properties, location)
        for data_file in _dataframe_to_data_files(metadata, data, io, write_uuid=uuid.uuid4()):
            yield pa.RecordBatch.from_pylist([{"file": pickle.dumps(data_file)}])
    return write


def _read_files(metadata_json: str, io_properties: dict, location: str, arrow_schema):
    """An executor function: pickled FileScanTasks in, their live rows out (deletes applied)."""
    def read(batches):
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io import load_file_io
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.table.metadata import TableMetadataUtil

        metadata = TableMetadataUtil.parse_raw(metadata_json)
        io = load_file_io(io_properties, location)
        scan = ArrowScan(metadata, io, metadata.schema(), AlwaysTrue())
        for batch in batches:
            tasks = [pickle.loads(blob) for blob in batch.column("task").to_pylist()]
            for rows in scan.to_record_batches(tasks):
                yield rows.select(arrow_schema.names).cast(arrow_schema)
    return read


def scan_frame(spark, table, tasks: list, schema) -> DataFrame:
    """The live rows of `tasks` (FileScanTasks of `table`) as a DataFrame read on the executors."""
    arrow_schema = to_arrow_schema(schema, timezone="UTC")  # the session's time zone (spark.py)
    read = _read_files(table.metadata.model_dump_json(), *_io_of(table), arrow_schema)
    task_frame = spark.createDataFrame([(pickle.dumps(t),) for t in tasks], "task binary")
    return task_frame.repartition(max(1, min(len(tasks), spark.sparkContext.defaultParallelism * 2))) \
        .mapInArrow(read, schema)


def table_schema(table) -> StructType:
    """The Spark schema of an Iceberg table's rows."""
    return from_arrow_schema(table.schema().as_arrow())


def write_data_files(frame: DataFrame, table) -> list:
    write = _write_files(table.metadata.model_dump_json(), *_io_of(table))
    return [pickle.loads(row.file) for row in frame.mapInArrow(write, FILE_SCHEMA).collect()]


@dataclass
class Staged:
    rows: int  # changes in the batch
    upper_offset: int | None  # the newest change's offset
    newest_ts: int | None  # when the newest change was made (ms)
    frame: DataFrame  # what the writer needs, persisted on the executors for the commit's attempts


def _stage(changes: DataFrame, frame: DataFrame) -> Staged:
    rows, upper, newest = changes.agg(F.count(F.lit(1)), F.max(OFFSET), F.max(TS)).first()
    return Staged(rows, upper, newest, frame.persist() if rows else frame)


class AppendWriter:
    def __init__(self, columns: list[str]):
        self.columns = columns

    def stage(self, changes: DataFrame) -> Staged:
        return _stage(changes, changes.select(*self.columns, F.col(DIFF).alias("_mz_diff"),
                                              F.col(TS).alias("_mz_timestamp"), OFFSET))

    def plan(self, staged: Staged, table, after: int) -> tuple[list, list]:
        return [], write_data_files(staged.frame.filter(F.col(OFFSET) > after).drop(OFFSET), table)


class UpsertWriter:
    def __init__(self, columns: list[str], key: list[str]):
        self.columns = columns
        self.key = key

    def stage(self, changes: DataFrame) -> Staged:
        # the last change per key, in source order: a hash aggregate, no sort
        others = [c for c in self.columns if c not in self.key] + [DIFF, OFFSET]
        latest = F.max_by(F.struct(*others), F.col(OFFSET)).alias("_latest")
        net = changes.groupBy(*self.key).agg(latest).select(*self.key, "_latest.*").select(*self.columns, DIFF, OFFSET)
        return _stage(changes, net)

    def _key_filter(self, changed: DataFrame):
        from pyiceberg.expressions import And, GreaterThanOrEqual, In, LessThanOrEqual

        first = self.key[0]
        if len(self.key) == 1:
            keys = changed.select(first).limit(MAX_KEYS_FOR_EXACT_PRUNING + 1).collect()
            if len(keys) <= MAX_KEYS_FOR_EXACT_PRUNING:
                return In(first, {row[0] for row in keys if row[0] is not None}) if keys else None
        low, high = changed.agg(F.min(first), F.max(first)).first()
        if low is None:
            return None
        return And(GreaterThanOrEqual(first, low), LessThanOrEqual(first, high))

    def plan(self, staged: Staged, table, after: int) -> tuple[list, list]:
        spark = staged.frame.sparkSession
        changed = staged.frame.filter(F.col(OFFSET) > after)  # the latest change per key, if not committed yet
        upserts = changed.filter(F.col(DIFF) > 0).select(*self.columns)
        key_filter = self._key_filter(changed)
        tasks = list(table.scan(row_filter=key_filter).plan_files()) if key_filter is not None and \
            table.current_snapshot() is not None else []
        if not tasks:
            return [], write_data_files(upserts, table)
        existing = scan_frame(spark, table, tasks, upserts.schema)
        survivors = existing.join(changed.select(*self.key), on=self.key, how="left_anti")
        rewritten = survivors.unionByName(upserts)
        # ranges of keys per file keep the next batch's pruning tight
        rewritten = rewritten.repartitionByRange(spark.sparkContext.defaultParallelism, *self.key) \
            .sortWithinPartitions(*self.key)
        return [t.file for t in tasks], write_data_files(rewritten, table)
