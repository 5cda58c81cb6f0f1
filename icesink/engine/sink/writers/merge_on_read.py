"""MODE UPSERT, merge-on-read (WRITE MODE = 'merge-on-read'): a batch writes its new rows into new data files and
deletes the old rows of its changed keys by position, in position delete files (Iceberg v2, which DuckDB,
pyiceberg, polars and Spark read), located through the key index (key_index.py) without reading the table. A
batch's cost follows its changes, wherever in the key space they fall; the table's size only adds a bisection per
key and file. Executors locate, write and delete; the driver lists the live files and commits."""
from __future__ import annotations

import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ...pyiceberg_internals import (POSITION_DELETE_SCHEMA, executor_context, live_files,
                                    position_delete_file, received, scan, shipped, table_context)
from ...sources.engine_table import DIFF
from ..key_index import KeyIndex, delete_rows
from ..key_ranges import bounds_order, by_range, cut_groups, sample_cuts
from ..table import IncompatibleTable
from ....model.descriptors import FoldPolicy
from .base import (DEFAULT_TARGET_FILE_BYTES, RESULT_SCHEMA, BatchFiles, KeySample, collect, conform, facts,
                   no_sample, tally, task_rows, violation, write)
from .upsert import PID, _latest, _problem


# Folding (the sink's FoldPolicy says when): rows a batch may rewrite whatever time is left, per change of the batch
# (so folding keeps pace with the changes), and rows per task
FOLD_ROWS_PER_CHANGE = 4
FOLD_ROWS_PER_TASK = 1_000_000
# of the time left before the next batch is due, the share a fold plans to use at the pace of the folds before it
FOLD_SHARE_OF_SLACK = 0.8
# a data file that keeps its rows but has gathered this many delete files (a batch adds one per task that deletes
# in it) has them merged into one: readers open every delete file, and many small ones cost more than their rows
MERGE_DELETE_FILES_AT = 4


class MergeOnReadWriter:
    """`state_dir`: where the sink keeps its key index (local to the machine that runs the sink)."""

    def __init__(self, columns: list[str], key: list[str], enforced: bool = False, state_dir: str | None = None,
                 fold: FoldPolicy = FoldPolicy()):
        self.columns, self.key, self.enforced, self.policy = columns, key, enforced, fold
        self.index_dir = str(Path(state_dir) / "keys")
        self.fold_pace: float | None = None  # rows per second the folds so far rewrote

    def plan(self, changes: DataFrame, table, after, key_sample: KeySample = no_sample) -> BatchFiles:
        if table.metadata.format_version < 2:
            raise IncompatibleTable(f"the Iceberg table {'.'.join(table.name())} is format version "
                                    f"{table.metadata.format_version}, which has no delete files: WRITE MODE "
                                    "'merge-on-read' needs format version 2 (or WRITE MODE 'copy-on-write')")
        spark = changes.sparkSession
        live, _ = live_files(table)
        files = [(f.file_path, sequence) for f, sequence in live]
        KeyIndex(self.index_dir, self.key).keep_only([path for path, _ in files])
        partitions = {f.file_path: (f.spec_id, f.partition) for f, _ in live}  # a delete file's partition is its
        # data files'
        tasks = max(spark.sparkContext.defaultParallelism, changes.rdd.getNumPartitions())
        changed = changes.filter(after.beyond())
        key_type = table.schema().find_field(self.key[0]).field_type
        cuts = (_cuts(live, table.schema(), self.key[0], tasks) if live else
                sample_cuts(key_sample(), tasks) if bounds_order(key_type) else None)
        if cuts:  # ranges of keys per task, as the table's files hold them (or the input's sample, for an empty
            # table): a task's keys meet few files, and a data file's deletes come from few tasks (each writes a
            # delete file of its own)
            changed = by_range(changed, self.key[0], key_type, cut_groups(cuts), len(cuts), PID)[0].drop(PID)
        else:  # an empty table without a sample (or keys whose bounds do not order): Spark samples the batch
            changed = changed.repartitionByRange(tasks, *[F.col(k) for k in self.key])
        merge = _merge(*table_context(table), self.key, self.columns, self.enforced, files, partitions,
                       self.index_dir, type(after).reach)
        return collect(changed.mapInArrow(merge, from_arrow_schema(RESULT_SCHEMA)))

    def plan_fold(self, spark, table, changes: int, seconds: float = 0.0) -> tuple[list, list, list] | None:
        """Folding, a slice after each batch: data files with the policy's threshold of their rows deleted, and
        small files once enough have gathered, are rewritten with their live rows only, sorted by key, and their
        delete files go with them. A batch rewrites max(rows_per_batch, FOLD_ROWS_PER_CHANGE × its changes) rows,
        or more when `seconds` (the time left before the next batch is due) allows at the pace of earlier folds:
        folding keeps pace with the changes, takes up idle time rather than delaying the next batch, and a batch's
        time never jumps by a step that follows the table's size. Data files left as they are but with
        MERGE_DELETE_FILES_AT delete files or more have those merged into one. Returns (files to remove, data files
        to add, delete files to add), or None when nothing needs it."""
        policy = self.policy
        if not policy.rows_per_batch:
            return None
        data, deletes = live_files(table)
        live = [f for f, _ in data]
        deleted = {f.file_path: sum(d.record_count for d in deletes.get(f.file_path, ())) for f in live}
        worn = sorted((f for f in live if deleted[f.file_path] >= policy.threshold * f.record_count),
                      key=lambda f: -deleted[f.file_path] / max(1, f.record_count))
        # small beside a file of the target size: the target counts bytes in memory, so a file written at it is
        # smaller on disk, compressed, and the largest file on disk stands for it
        target = int(table.properties.get("write.target-file-size-bytes", DEFAULT_TARGET_FILE_BYTES))
        full = min(target, max((f.file_size_in_bytes for f in live), default=0))
        small = sorted((f for f in live if f.file_size_in_bytes < full // 4 and f not in worn),
                       key=lambda f: f.file_size_in_bytes)
        # gathered small files first: a batch's new rows make some every batch, and behind worn files, which can
        # take the whole budget, they would pile up
        chosen = (small if len(small) >= policy.small_files else []) + worn
        budget = max(policy.rows_per_batch, FOLD_ROWS_PER_CHANGE * changes,
                     int(FOLD_SHARE_OF_SLACK * seconds * (self.fold_pace or 0)))
        picked, rows = [], 0
        for data_file in chosen:
            if picked and rows + data_file.record_count > budget:
                break
            picked.append(data_file)
            rows += data_file.record_count
        if len(picked) == 1 and not deleted[picked[0].file_path]:
            picked = []  # one small file alone: nothing to gain
        crowded = [(f.file_path, f.spec_id, f.partition, deletes[f.file_path]) for f in live
                   if f not in picked and len(deletes.get(f.file_path, ())) >= MERGE_DELETE_FILES_AT]
        if not picked and not crowded:
            return None
        context = table_context(table)
        merged = []
        if crowded:
            parts = min(len(crowded), spark.sparkContext.defaultParallelism)
            merged = [received(row) for row in spark.sparkContext.parallelize(crowded, parts)
                      .mapPartitions(_merge_deletes(*context)).collect()]
        removed = [d for _, _, _, files in crowded for d in files]
        if not picked:
            return removed, [], merged
        from pyiceberg.table import FileScanTask

        groups, group, size = [], [], 0
        for data_file in picked:
            group.append(FileScanTask(data_file, set(deletes.get(data_file.file_path, ()))))
            size += data_file.record_count
            if size >= FOLD_ROWS_PER_TASK:
                groups.append(group)
                group, size = [], 0
        groups += [group] if group else []
        rewrite = _rewrite(*context, self.key, self.index_dir)
        started = time.monotonic()
        added = [received(row) for row in
                 spark.sparkContext.parallelize(groups, len(groups)).mapPartitions(rewrite).collect()]
        pace = rows / max(time.monotonic() - started, 1e-3)
        self.fold_pace = pace if self.fold_pace is None else (self.fold_pace + pace) / 2
        removed += picked + [d for f in picked for d in deletes.get(f.file_path, ())]
        return removed, added, merged


def _merge_deletes(metadata_json, io_properties, location):
    """An executor function: (data file path, spec id, partition, its delete files) in, one shipped delete file
    holding all their positions out."""
    def merge(crowded):
        metadata, io = executor_context(metadata_json, io_properties, location)
        for data_file, spec_id, partition, files in crowded:
            positions = []
            for delete_file in files:
                with io.new_input(delete_file.file_path).open() as stream:
                    rows = pq.read_table(stream, columns=["file_path", "pos"])
                positions.append(rows.filter(pc.equal(rows["file_path"], data_file))["pos"].to_numpy())
            yield from (fact["payload"] for fact in _write_deletes(
                metadata, io, {data_file: np.unique(np.concatenate(positions))}, {data_file: (spec_id, partition)}))
    return merge


def _rewrite(metadata_json, io_properties, location, key, index_dir):
    """An executor function: groups of FileScanTasks in, the pickled DataFiles of their live rows out (indexed)."""
    def rewrite(groups):
        metadata, io = executor_context(metadata_json, io_properties, location)
        schema = metadata.schema().as_arrow()
        index = KeyIndex(index_dir, key)
        for tasks in groups:
            rows = conform(scan(metadata, io).to_table(tasks), schema).sort_by([(k, "ascending") for k in key])
            for fact in write(metadata, io, rows, index):
                yield fact["payload"]
    return rewrite


def _cuts(live: list, schema, column: str, parts: int) -> list | None:
    """Lower bounds of `parts` ranges of the key holding about as many of the table's rows each, from its files'
    key bounds (None when they are missing or do not compare)."""
    from pyiceberg.conversions import from_bytes

    field = schema.find_field(column)
    if not bounds_order(field.field_type):
        return None
    bounds = []
    for data_file, _ in live:
        low = (data_file.lower_bounds or {}).get(field.field_id)
        if low is None:
            return None
        bounds.append((from_bytes(field.field_type, low), data_file.record_count))
    bounds.sort(key=lambda b: b[0])
    total, seen, cuts = sum(rows for _, rows in bounds), 0, [bounds[0][0]]
    for low, rows in bounds:
        if seen >= total * len(cuts) / parts and low > cuts[-1]:
            cuts.append(low)
        seen += rows
    return cuts


def _merge(metadata_json, io_properties, location, key, columns, enforced, files, partitions, index_dir, reach):
    """An executor function: some keys' changes in, result rows out (see base.collect)."""
    def merge(batches):
        changes = task_rows(batches)
        if changes is None:
            return
        metadata, io = executor_context(metadata_json, io_properties, location)
        found = [tally(changes, reach)]
        problem = _problem(changes, key, enforced, metadata.schema().as_arrow())
        if problem:
            yield facts(found + [violation(problem)])
            return
        latest = _latest(changes, key)
        rows = conform(latest.select(columns), metadata.schema().as_arrow())
        index = KeyIndex(index_dir, key)
        located = index.locate(files, rows.select(key), io)
        upserts = rows.filter(pc.greater(latest[DIFF], 0))
        found.extend(write(metadata, io, upserts.sort_by([(k, "ascending") for k in key]), index))
        found.extend(_write_deletes(metadata, io, located, partitions))
        yield facts(found)
    return merge


def _write_deletes(metadata, io, located: dict, partitions: dict):
    """Result rows for the position delete files of `located` (data file path: positions), one per data file:
    polars reads no other kind, and a data file's deletes then go with it when it is rewritten."""
    for data_file, positions in located.items():
        spec_id, partition = partitions[data_file]
        rows = delete_rows(data_file, positions).cast(POSITION_DELETE_SCHEMA)
        buffer = pa.BufferOutputStream()
        pq.write_table(rows, buffer)
        data = buffer.getvalue()
        path = f"{metadata.location}/data/{uuid.uuid4()}-deletes.parquet"
        with io.new_output(path).create(overwrite=True) as stream:
            stream.write(data)
        yield {"kind": "deletes", "payload": shipped(position_delete_file(path, rows, len(data), spec_id, partition))}


__all__ = ["MergeOnReadWriter"]
