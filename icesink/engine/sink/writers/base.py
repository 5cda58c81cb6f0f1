"""What every writer shares: one micro-batch of changes in, the Iceberg data files to add and remove out, planned on
the driver and written on the executors in one Spark job. Rows never travel to the driver; file metadata (pickled
DataFile objects) and the batch's tally do. A write mode is a module beside this one and a line in WRITERS
(__init__.py)."""
from __future__ import annotations

import pickle
import uuid
from dataclasses import dataclass, field
from typing import Callable, Protocol

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from ...failures import NeedsAction
from ...pyiceberg_internals import received, shipped, write_data_files
from ....model.frontier import Frontier
from ...sources.engine_table import TS

RESULT_SCHEMA = pa.schema([("kind", pa.string()), ("payload", pa.binary())])  # a write task's report: a row a fact
DEFAULT_TARGET_FILE_BYTES = 8 << 20  # in memory, as pyiceberg measures it; small files keep rewrites small


class KeyViolation(NeedsAction):
    """An enforced KEY is not unique in the input: the sink cannot tell which row is the key's."""


@dataclass
class BatchFiles:
    """What one batch writes, and what it read: the tally the commit records."""
    removed: list = field(default_factory=list)
    added: list = field(default_factory=list)
    deletes: list = field(default_factory=list)  # position delete files added (merge-on-read)
    rows: int = 0  # changes read
    reaches: list = field(default_factory=list)  # how far each task's changes go (Frontier.reach)
    newest_ts: int | None = None  # when the newest change was made (ms)


KeySample = Callable[[], "list | None"]  # keys spread over a batch's changes, when its input can tell cheaply


def no_sample() -> None:
    return None


class Writer(Protocol):
    def plan(self, changes: DataFrame, table, after: Frontier, key_sample: KeySample = no_sample) -> BatchFiles:
        """The files to remove and add for the changes beyond `after`, against `table`'s state. `key_sample`:
        asked for the ranges of keys an empty table's first batch is cut into (Spark's own sampling reads the
        batch twice)."""


def task_rows(batches) -> pa.Table | None:
    """A write task's Arrow record batches as one table, or None when it got no rows."""
    batches = list(batches)
    rows = pa.Table.from_batches(batches) if batches else None
    return rows if rows is not None and rows.num_rows else None


def violation(problem: str) -> dict:
    """The result row of a task that found an enforced KEY broken (collect raises KeyViolation)."""
    return {"kind": "violation", "payload": pickle.dumps(problem)}


def tally(rows, reach):
    """The tally of one task's changes (an Arrow table of the change stream) as a result row; `reach` is the
    input's Frontier.reach."""
    return {"kind": "tally", "payload": pickle.dumps((rows.num_rows, reach(rows), pc.max(rows[TS]).as_py()))}


def conform(rows, schema):
    """`rows` with the table's columns in its order and types; optional columns the sink lacks are null."""
    columns = [rows[f.name] if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def write(metadata, io, rows, index=None):
    """Result rows for the data files holding `rows`, cut into files of the table's target size. `index`: a
    KeyIndex that learns each file written, when the file holds its slice of `rows` in order (one file for it)."""
    if not rows.num_rows:
        return
    target = int(metadata.properties.get("write.target-file-size-bytes", DEFAULT_TARGET_FILE_BYTES))
    per_file = max(1024, target * rows.num_rows // max(1, rows.nbytes))
    for start in range(0, rows.num_rows, per_file):
        part = rows.slice(start, per_file)
        written = list(write_data_files(metadata, part, io, uuid.uuid4()))
        if index is not None and len(written) == 1 and written[0].record_count == part.num_rows:
            index.add(written[0].file_path, part)
        for data_file in written:
            yield {"kind": "added", "payload": shipped(data_file)}


def facts(found: list[dict]):
    return pa.RecordBatch.from_pylist(found, schema=RESULT_SCHEMA)


def collect(results: DataFrame, groups: dict | None = None) -> BatchFiles:
    """The driver's only read of a batch: the facts its tasks reported (see the writers' task functions)."""
    files = BatchFiles()
    for row in results.collect():
        if row.kind in ("added", "deletes"):
            (files.added if row.kind == "added" else files.deletes).append(received(row.payload))
            continue
        payload = pickle.loads(row.payload)
        if row.kind == "rewrote":
            group, indexes = payload
            files.removed.extend(groups[group].tasks[i].file for i in indexes)
        elif row.kind == "violation":
            raise KeyViolation(payload)
        else:
            rows, reach, newest = payload
            files.rows += rows
            files.reaches.append(reach)
            files.newest_ts = max(newest, files.newest_ts or newest)
    return files
