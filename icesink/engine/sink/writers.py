"""Turning one micro-batch of changes into Iceberg data files, on the executors, in one Spark job.

The driver only plans: which ranges of keys the table's files cover. Rows never travel to the driver;
file metadata (pickled DataFile objects) and the batch's tally do.

- UpsertWriter: copy-on-write. The table's files are grouped by the ranges of keys they cover; each change
  goes to the group whose range holds its key, and one task per group keeps the last change per key, reads
  the group's files, drops the changed keys' old rows, and writes the rest with the new rows, sorted by key
  and cut into files of a bounded size. Only files whose key range (and, where the partition follows from
  the key, partition) holds a changed key are read and replaced; the commit swaps them in one snapshot.
- AppendWriter: every change becomes a row with _mz_diff and _mz_timestamp; nothing is rewritten.
A merge-on-read writer with position deletes can take UpsertWriter's place behind the same method.
"""
from __future__ import annotations

import pickle
import uuid
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io import load_file_io
from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files
from pyiceberg.table.metadata import TableMetadataUtil
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from ..sources.engine_table import DIFF, OFFSET, TS
from .key_ranges import KeyGroup, files_holding, group_files, group_index, key_partitions

RESULT_SCHEMA = pa.schema([("kind", pa.string()), ("payload", pa.binary())])  # a write task's report: a row a fact
PID = "_icesink_group"
DEFAULT_TARGET_FILE_BYTES = 8 << 20  # in memory, as pyiceberg measures it; small files keep rewrites small


class KeyViolation(Exception):
    """An enforced KEY is not unique in the input: the sink cannot tell which row is the key's."""


@dataclass
class BatchFiles:
    """What one batch writes, and what it read: the tally the commit records."""
    removed: list = field(default_factory=list)
    added: list = field(default_factory=list)
    rows: int = 0  # changes read
    upper_offset: int | None = None  # the newest change's offset
    newest_ts: int | None = None  # when the newest change was made (ms)


def _io_of(table) -> tuple[str, dict, str]:
    return table.metadata.model_dump_json(), dict(table.io.properties), table.metadata.location


def _executor_context(metadata_json: str, io_properties: dict, location: str):
    return TableMetadataUtil.parse_raw(metadata_json), load_file_io(io_properties, location)


def _tally(rows):
    """The tally of one task's changes (an Arrow table with OFFSET and TS) as a result row."""
    return {"kind": "tally", "payload": pickle.dumps((rows.num_rows, pc.max(rows[OFFSET]).as_py(),
                                                      pc.max(rows[TS]).as_py()))}


def _conform(rows, schema):
    """`rows` with the table's columns in its order and types; optional columns the sink lacks are null."""
    columns = [rows[f.name] if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _write(metadata, io, rows):
    """Result rows for the data files holding `rows`, cut into files of the table's target size."""
    if not rows.num_rows:
        return
    target = int(metadata.properties.get("write.target-file-size-bytes", DEFAULT_TARGET_FILE_BYTES))
    per_file = max(1024, target * rows.num_rows // max(1, rows.nbytes))
    for start in range(0, rows.num_rows, per_file):
        for data_file in _dataframe_to_data_files(metadata, rows.slice(start, per_file), io,
                                                  write_uuid=uuid.uuid4()):
            yield {"kind": "added", "payload": pickle.dumps(data_file)}


def _facts(facts: list[dict]):
    return pa.RecordBatch.from_pylist(facts, schema=RESULT_SCHEMA)


def _collect(results: DataFrame, groups: list[KeyGroup] | None = None) -> BatchFiles:
    files = BatchFiles()
    for row in results.collect():
        payload = pickle.loads(row.payload)
        if row.kind == "added":
            files.added.append(payload)
        elif row.kind == "rewrote":
            group, indexes = payload
            files.removed.extend(groups[group].tasks[i].file for i in indexes)
        elif row.kind == "violation":
            raise KeyViolation(payload)
        else:
            rows, upper, newest = payload
            files.rows += rows
            files.upper_offset = max(upper, files.upper_offset or upper)
            files.newest_ts = max(newest, files.newest_ts or newest)
    return files


class AppendWriter:
    def __init__(self, columns: list[str]):
        self.columns = columns

    def plan(self, changes: DataFrame, table, after: int) -> BatchFiles:
        frame = changes.filter(F.col(OFFSET) > after).select(
            *self.columns, F.col(DIFF).alias("_mz_diff"), F.col(TS).alias("_mz_timestamp"), OFFSET, TS)
        context = _io_of(table)

        def write(batches):
            batches = list(batches)
            rows = pa.Table.from_batches(batches) if batches else None
            if rows is None or not rows.num_rows:
                return
            metadata, io = _executor_context(*context)
            facts = [_tally(rows), *_write(metadata, io, _conform(rows, metadata.schema().as_arrow()))]
            yield _facts(facts)

        return _collect(frame.mapInArrow(write, from_arrow_schema(RESULT_SCHEMA)))


def _latest(rows, key: list[str]):
    """The last change per key in source order (offsets are unique, so the newest offset names one row)."""
    newest = rows.group_by(key).aggregate([(OFFSET, "max")])[f"{OFFSET}_max"]
    return rows.filter(pc.is_in(rows[OFFSET], value_set=newest))


def _violations(rows, key: list[str]) -> str | None:
    """Keys whose changes in this batch add (or remove) more than one live row, described."""
    sums = rows.group_by(key).aggregate([(DIFF, "sum")])
    bad = sums.filter(pc.greater(pc.abs(sums[f"{DIFF}_sum"]), 1))
    if not bad.num_rows:
        return None
    shown = "; ".join(", ".join(f"{k} = {row[k]!r}" for k in key) +
                      f" ({'adds' if row[f'{DIFF}_sum'] > 0 else 'removes'} {abs(row[f'{DIFF}_sum'])} rows)"
                      for row in bad.slice(0, 3).to_pylist())
    return (f"KEY ({', '.join(key)}) is not unique in the input: {shown}; nothing of this batch was written. "
            "Recreate the sink with KEY (...) NOT ENFORCED to keep the last change per key")


def _without_keys(rows, keys, key: list[str]):
    """`rows` less those whose key is among `keys`."""
    if len(key) == 1:
        return rows.filter(pc.invert(pc.is_in(rows[key[0]], value_set=keys[key[0]])))
    # join on the keys alone: Arrow's join cannot carry every column type along
    numbered = rows.select(key).append_column("_row", pa.array(range(rows.num_rows), pa.int64()))
    kept = numbered.join(keys, keys=key, join_type="left anti")["_row"]
    return rows.take(kept)


class UpsertWriter:
    """`enforced`: the input promises one live row per key, so a key whose changes in a batch add up to two
    live rows (or remove two) is reported. Upsert-shaped inputs (every change replaces the key's row) and
    KEY NOT ENFORCED keep the last change per key instead."""

    def __init__(self, columns: list[str], key: list[str], enforced: bool = False):
        self.columns = columns
        self.key = key
        self.enforced = enforced

    def plan(self, changes: DataFrame, table, after: int) -> BatchFiles:
        spark = changes.sparkSession
        tasks = list(table.scan().plan_files()) if table.current_snapshot() is not None else []
        groups = group_files(tasks, table.schema(), self.key[0])
        changed = changes.filter(F.col(OFFSET) > after)
        if groups:
            key_type = table.schema().find_field(self.key[0]).field_type
            changed = changed.withColumn(PID, group_index(F.col(self.key[0]), key_type, groups))
            parallelism = spark.sparkContext.defaultParallelism
            changed = changed.repartition(max(1, min(len(groups), 4 * parallelism)), PID)
        else:  # an empty table: ranges of keys per task keep the files' ranges apart for the next batch
            changed = changed.withColumn(PID, F.lit(0))
            changed = changed.repartitionByRange(spark.sparkContext.defaultParallelism, *self.key)
        partitions = key_partitions(table.spec(), table.schema(), self.key)
        merge = _merge_groups(*_io_of(table), self.key, self.columns, self.enforced, dict(enumerate(groups)),
                              partitions)
        return _collect(changed.mapInArrow(merge, from_arrow_schema(RESULT_SCHEMA)), groups)


def _merge_groups(metadata_json, io_properties, location, key, columns, enforced, groups: dict, partitions):
    """An executor function: the changes of some key groups in, result rows out (see _collect)."""
    def merge(batches):
        batches = list(batches)
        changes = pa.Table.from_batches(batches) if batches else None
        if changes is None or not changes.num_rows:
            return
        metadata, io = _executor_context(metadata_json, io_properties, location)
        schema = metadata.schema().as_arrow()
        facts = [_tally(changes)]
        for pid in pc.unique(changes[PID]).to_pylist():
            rows = changes.filter(pc.equal(changes[PID], pid))
            problem = _violations(rows, key) if enforced else None
            if problem:
                facts.append({"kind": "violation", "payload": pickle.dumps(problem)})
                break
            latest = _latest(rows, key)
            conformed = _conform(latest.select(columns), schema)
            upserts, changed_keys = conformed.filter(pc.greater(latest[DIFF], 0)), conformed.select(key)
            holding = files_holding(groups[pid], changed_keys, key[0], partitions) if pid in groups else []
            if holding:
                tasks = [groups[pid].tasks[i] for i in holding]
                existing = _conform(ArrowScan(metadata, io, metadata.schema(), AlwaysTrue()).to_table(tasks), schema)
                upserts = pa.concat_tables([_without_keys(existing, changed_keys, key), upserts])
                facts.append({"kind": "rewrote", "payload": pickle.dumps((pid, holding))})
            facts.extend(_write(metadata, io, upserts.sort_by([(k, "ascending") for k in key])))
        yield _facts(facts)
    return merge


# ---------------------------------------------------------------- reading a table back through Spark
def _read_files(metadata_json: str, io_properties: dict, location: str, arrow_schema):
    """An executor function: pickled FileScanTasks in, their live rows out (deletes applied)."""
    def read(batches):
        metadata, io = _executor_context(metadata_json, io_properties, location)
        scan = ArrowScan(metadata, io, metadata.schema(), AlwaysTrue())
        for batch in batches:
            tasks = [pickle.loads(blob) for blob in batch.column("task").to_pylist()]
            for rows in scan.to_record_batches(tasks):
                yield rows.select(arrow_schema.names).cast(arrow_schema)
    return read


def scan_frame(spark, table, tasks: list, schema) -> DataFrame:
    """The live rows of `tasks` (FileScanTasks of `table`) as a DataFrame read on the executors."""
    arrow_schema = to_arrow_schema(schema, timezone="UTC")  # the session's time zone (spark.py)
    read = _read_files(*_io_of(table), arrow_schema)
    task_frame = spark.createDataFrame([(pickle.dumps(t),) for t in tasks], "task binary")
    return task_frame.repartition(max(1, min(len(tasks), spark.sparkContext.defaultParallelism * 2))) \
        .mapInArrow(read, schema)


def table_schema(table) -> StructType:
    """The Spark schema of an Iceberg table's rows."""
    return from_arrow_schema(table.schema().as_arrow())
