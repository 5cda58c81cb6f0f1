"""MODE UPSERT, copy-on-write: the table's files are grouped by the ranges of keys they cover; each change goes to
the group whose range holds its key, and one task per group keeps the last change per key, reads the group's files,
drops the changed keys' old rows, and writes the rest with the new rows, sorted by key and cut into files of a
bounded size. Only files whose key range (and, where the partition follows from the key, partition) holds a changed
key are read and replaced; the commit swaps them in one snapshot."""
from __future__ import annotations

import pickle

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ...pyiceberg_internals import executor_context, scan, table_context
from ...sources.engine_table import DIFF, OFFSET
from ..key_ranges import (bounds_order, by_range, cut_groups, files_holding, group_files, key_partitions,
                          sample_cuts)
from .base import (RESULT_SCHEMA, BatchFiles, KeySample, collect, conform, facts, no_sample, tally, task_rows,
                   violation, write)

PID = "_icesink_group"
ROW = "_icesink_row"


def _latest(rows, key: list[str]):
    """The last change per key in source order: the row of each key's newest offset."""
    newest = rows.group_by(key).aggregate([(OFFSET, "max")])[f"{OFFSET}_max"]
    kept = rows.filter(pc.is_in(rows[OFFSET], value_set=newest))
    if kept.num_rows == len(newest):  # each offset names one row (a table's changes): one row per key
        return kept
    # a view's rows carry the offset of the change that touched them, and a change touches many keys: an older
    # row of one key may carry another key's newest offset
    newest_first = pc.sort_indices(kept, sort_keys=[(OFFSET, "descending")])
    ordered = kept.select(key).take(newest_first).append_column(ROW, newest_first)
    first = ordered.group_by(key, use_threads=False).aggregate([(ROW, "first")])[f"{ROW}_first"]  # ordered: 1 thread
    return kept.take(first.sort())


def _problem(rows, key: list[str], enforced: bool, schema: pa.Schema) -> str | None:
    """Why this batch's changes of some keys cannot be written: a key column null where the table requires it, or
    (`enforced`) a key whose changes add or remove more than one live row."""
    for name in key:
        nulls = rows[name].null_count
        if nulls and not schema.field(name).nullable:
            return (f"KEY column {name} is null in {nulls} of this batch's changes, and the Iceberg table's column "
                    f"{name} is required (a table's key columns are): nothing of this batch was written. Keep nulls "
                    f"out of the sink's input (a view with WHERE {name} IS NOT NULL, or COALESCE({name}, …) in "
                    "it) and recreate the sink")
    return _violations(rows, key) if enforced else None


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

    def __init__(self, columns: list[str], key: list[str], enforced: bool = False, state_dir: str | None = None,
                 fold=None):  # copy-on-write leaves nothing to fold
        self.columns = columns
        self.key = key
        self.enforced = enforced

    def plan(self, changes: DataFrame, table, after, key_sample: KeySample = no_sample) -> BatchFiles:
        spark = changes.sparkSession
        parallelism = spark.sparkContext.defaultParallelism
        files = list(table.scan().plan_files()) if table.current_snapshot() is not None else []
        groups = group_files(files, table.schema(), self.key[0])
        changed = changes.filter(after.beyond())
        key_type = table.schema().find_field(self.key[0]).field_type
        if groups:
            tasks = max(1, min(len(groups), 4 * parallelism))
        else:  # an empty table: ranges of keys per task keep the files' ranges apart for the next batch, and as
            # many tasks as the input has partitions (each holds a bounded number of changes) keep a task's memory
            # bounded however large the first batch (a source's whole initial copy)
            tasks = max(parallelism, changes.rdd.getNumPartitions())
            cuts = sample_cuts(key_sample(), tasks) if bounds_order(key_type) else None
            # the ranges from the input's sample of its keys, where it has one: Spark's own reads the batch twice
            groups = cut_groups(cuts or ())
            tasks = len(groups) or tasks
        if groups:
            changed, ids = by_range(changed, self.key[0], key_type, groups, tasks, PID)
            groups = dict(zip(ids, groups))
        else:
            changed, groups = changed.withColumn(PID, F.lit(0)).repartitionByRange(tasks, *self.key), {}
        partitions = key_partitions(table.spec(), table.schema(), self.key)
        merge = _merge_groups(*table_context(table), self.key, self.columns, self.enforced, groups, partitions,
                              type(after).reach)
        return collect(changed.mapInArrow(merge, from_arrow_schema(RESULT_SCHEMA)), groups)


def _merge_groups(metadata_json, io_properties, location, key, columns, enforced, groups: dict, partitions, reach):
    """An executor function: the changes of some key groups (`groups` by their ids) in, result rows out (see
    base.collect)."""
    def merge(batches):
        changes = task_rows(batches)
        if changes is None:
            return
        metadata, io = executor_context(metadata_json, io_properties, location)
        schema = metadata.schema().as_arrow()
        found = [tally(changes, reach)]
        for pid in pc.unique(changes[PID]).to_pylist():
            rows = changes.filter(pc.equal(changes[PID], pid))
            problem = _problem(rows, key, enforced, schema)
            if problem:
                found.append(violation(problem))
                break
            latest = _latest(rows, key)
            conformed = conform(latest.select(columns), schema)
            upserts, changed_keys = conformed.filter(pc.greater(latest[DIFF], 0)), conformed.select(key)
            holding = files_holding(groups[pid], changed_keys, key[0], partitions) if pid in groups else []
            if holding:
                tasks = [groups[pid].tasks[i] for i in holding]
                existing = conform(scan(metadata, io).to_table(tasks), schema)
                upserts = pa.concat_tables([_without_keys(existing, changed_keys, key), upserts])
                found.append({"kind": "rewrote", "payload": pickle.dumps((pid, holding))})
            found.extend(write(metadata, io, upserts.sort_by([(k, "ascending") for k in key])))
        yield facts(found)
    return merge
