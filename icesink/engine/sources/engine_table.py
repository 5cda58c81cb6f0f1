"""Input kind 'engine-table': an engine table's change log as a Spark streaming source. Offsets are the log's own;
the sink decides where to start (from the progress it committed to Iceberg), not a Spark checkpoint. After a commit
the sink acknowledges its frontier, and the log is compacted below what all the table's sinks acknowledged."""
from __future__ import annotations

import itertools
import json
import logging
import time
from pathlib import Path
from typing import NamedTuple

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from ...model.frontier import OFFSET, Offset
from ...model.types import Column, column_decoder, decoder
from ..columns import spark_type
from .. import housekeeping
from ...catalog.store import Catalog
from ..tables import TableStore
from .base import Input, ProgressBehindInput

DIFF, TS = "_icesink_diff", "_icesink_ts"
log = logging.getLogger("icesink.sink")
ROWS_PER_PARTITION = 250_000
ROWS_PER_BATCH = 50_000
MIN_ROWS_PER_PARTITION = 10_000  # below it, a task's start costs more than what it shares
KEY_SAMPLE = 100_000  # keys a replicated table's copy gives for the ranges a sink's first batch is cut into


def change_schema(columns: list[dict]) -> StructType:
    """A change stream's Spark schema: the input's columns (as Column.as_dict), then OFFSET, DIFF and TS."""
    fields = [StructField(c["name"], spark_type(c["type"]), True) for c in columns]
    return StructType(fields + [StructField(OFFSET, LongType(), False), StructField(DIFF, IntegerType(), False),
                                StructField(TS, LongType(), False)])


class OffsetRange(InputPartition):
    def __init__(self, after: int, upto: int):
        super().__init__((after, upto))
        self.after, self.upto = after, upto


class BaseRange(InputPartition):
    """Rows of a table's base (a copy kept as Parquet files): `take` rows of a file after its first `skip`, the
    first of them the insertion at offset `first`, all of time `ts`."""

    def __init__(self, path: str, skip: int, take: int, first: int, ts: int):
        super().__init__((path, skip, take))
        self.path, self.skip, self.take, self.first, self.ts = path, skip, take, first, ts


class SegmentPiece(NamedTuple):
    """Changes kept as a Parquet file of stored values (a replicated table's segment, or a snapshot of its rows):
    `take` rows after the first `skip`, the first of them the change at offset `first`, all of time `ts`."""
    path: str
    skip: int
    take: int
    first: int
    ts: int


class SegmentRange(InputPartition):
    """Pieces of segments, read in turn by one task. A store transaction makes a segment, several a second when
    changes trickle in, and a task per segment cost a sink's batch more than the changes did (a batch of 191k
    changes from some 400 segments took 21.7 s)."""

    def __init__(self, pieces: list[SegmentPiece]):
        super().__init__(tuple(pieces))
        self.pieces = pieces


def segment_ranges(pieces: list[SegmentPiece]) -> list[SegmentRange]:
    """Consecutive pieces gathered into partitions of up to ROWS_PER_PARTITION rows."""
    parts, group, rows = [], [], 0
    for piece in pieces:
        if group and rows + piece.take > ROWS_PER_PARTITION:
            parts.append(SegmentRange(group))
            group, rows = [], 0
        group.append(piece)
        rows += piece.take
    return parts + ([SegmentRange(group)] if group else [])


class EngineTableSource(DataSource):
    """Options: data_dir, table_id, columns (JSON list of {name, type}), start (exclusive offset), replicated
    ("true" for a table a source replicates: a reader starting from nothing below its floor reads a snapshot)."""

    @classmethod
    def name(cls) -> str:
        return "icesink_engine_table"

    def schema(self) -> StructType:
        return change_schema(json.loads(self.options["columns"]))

    def streamReader(self, schema: StructType) -> "EngineTableReader":
        return EngineTableReader(self.options)


def _log_step(offsets: int, cores: int) -> int:
    """The offsets of a partition of a batch's JSON log (the store's, which its tables share): up to
    ROWS_PER_PARTITION, in whole waves of one partition per core of Spark's (a view's partition recomputes what its
    changes touch, seconds of one core: 250,000 entries and a remainder of 110,000 left a core idle for half the
    batch)."""
    count = -(-offsets // ROWS_PER_PARTITION)
    count = max(1, min(-(-count // cores) * cores, offsets // MIN_ROWS_PER_PARTITION))
    return max(1, -(-offsets // count))


class EngineTableReader(DataSourceStreamReader):
    def __init__(self, options):
        self.data_dir = Path(options["data_dir"])
        self.table_id = options["table_id"]
        self.columns = json.loads(options["columns"])
        self.start = int(options.get("start", "0"))
        self.replicated = options.get("replicated") == "true"
        self.cores = int(options.get("cores") or 1)  # Spark's parallelism
        self.snapshot: int | None = None  # the offset of the snapshot this reader's first batch reads
        # the end of the last batch Spark planned: a reader that has read past 0 follows the log from there, whatever
        # was pruned below it since, and needs no snapshot
        self.planned = self.start

    def initialOffset(self) -> dict:
        return {"offset": self.start}

    def latestOffset(self) -> dict:
        from .. import segments
        from ..tables import TableStore

        store = TableStore(self.data_dir)
        try:
            latest = store.latest_offset(self.table_id, len(self.columns))
            if self.replicated and self.planned == 0 and self.snapshot is None and store.floor(self.table_id) > 0:
                if latest < store.latest_offset(self.table_id):
                    return {"offset": 0}  # the table gained columns: the sink starts again with them
                columns = [Column(c["name"], c["type"]) for c in self.columns]
                self.snapshot, _, _ = segments.export_snapshot(store, self.table_id, columns)
                return {"offset": self.snapshot}
            return {"offset": max(latest, self.start)}
        finally:
            store.close()

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        import pyarrow.parquet as pq

        from .. import segments
        from ..tables import TableStore

        after, upto = start["offset"], end["offset"]
        self.planned = max(self.planned, upto)
        path = segments.snapshot_at(self.data_dir, self.table_id, upto) if self.replicated and after == 0 else None
        if path is not None:
            rows, ts = pq.ParquetFile(path).metadata.num_rows, int(time.time() * 1000)
            return segment_ranges([SegmentPiece(path, skip, min(ROWS_PER_PARTITION, rows - skip),
                                                upto - rows + skip + 1, ts)
                                   for skip in range(0, rows, ROWS_PER_PARTITION)]) or [OffsetRange(after, upto)]
        store = TableStore(self.data_dir)
        try:
            compacted, base = after < store.floor(self.table_id), store.base(self.table_id)
            if compacted and self.replicated:  # its segments went after this reader looked: it starts again
                raise ValueError(f"the changes of table {self.table_id} up to offset {store.floor(self.table_id)} "
                                 "were deleted as this sink started: it starts again from a snapshot")
            kept = segments.segments(store, self.table_id, after, upto)
            first_logged, last_logged = store.db.execute(
                "SELECT min(offset), max(offset) FROM changes WHERE table_id = ? AND offset > ? AND offset <= ?",
                (self.table_id, after, upto)).fetchone()
        finally:
            store.close()
        pieces = []
        for first, last, ts, path in kept:
            lo, hi = max(after, first), min(upto, last)
            pieces += [SegmentPiece(path, a - first, min(ROWS_PER_PARTITION, hi - a), a + 1, ts)
                       for a in range(lo, hi, ROWS_PER_PARTITION)]
        parts = segment_ranges(pieces)
        if base is not None and base.after < upto and after < base.upto:  # the base's offsets have no log entries
            position = base.after
            for path, rows in base.files:
                for first in range(max(after, position), min(upto, position + rows), ROWS_PER_PARTITION):
                    take = min(ROWS_PER_PARTITION, min(upto, position + rows) - first)
                    parts.append(BaseRange(path, first - position, take, first + 1, base.ts))
                position += rows
        if first_logged is not None:  # the JSON log: an engine table's, or what an older icesink logged for a copy
            a, b = first_logged - 1, last_logged
            if compacted:  # one read, one consistent view: compaction may change the prefix between two reads
                parts.append(OffsetRange(a, b))
            else:
                parts += self._log_ranges(a, b)
        return parts or [OffsetRange(after, upto)]

    def _log_ranges(self, after: int, upto: int) -> list[OffsetRange]:
        """The JSON log's entries after `after` up to `upto`, in partitions of even offsets (`_log_step`): waves of
        one partition per core of Spark's."""
        bounds = list(range(after, upto, _log_step(upto - after, self.cores))) + [upto]
        return [OffsetRange(x, y) for x, y in zip(bounds, bounds[1:])]

    def read(self, partition: OffsetRange):
        """Arrow record batches of the partition's changes: Spark takes them without a conversion per row."""
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from ..tables import TableStore

        schema = to_arrow_schema(change_schema(self.columns), timezone="UTC")
        if isinstance(partition, BaseRange):
            yield from self._read_base(partition, schema)
            return
        if isinstance(partition, SegmentRange):
            from ..segments import spark_batches

            for piece in partition.pieces:
                yield from spark_batches(*piece, self.columns, schema, ROWS_PER_BATCH)
            return
        decoders = [column_decoder(c["type"]) for c in self.columns]
        width = len(decoders)
        store = TableStore(self.data_dir)
        try:
            changes = store.iter_changes(self.table_id, partition.after, partition.upto)
            while True:
                chunk = list(itertools.islice(changes, ROWS_PER_BATCH))
                if not chunk:
                    return
                values = []
                for offset, diff, ts, row in chunk:
                    if len(row) != width:  # logged before columns were added (null in them), or after this started
                        if len(row) > width:
                            raise ValueError(f"the change at log offset {offset} has columns this reader does not "
                                             "know of: the input gained columns, and the sink starts again with them")
                        row = row + [None] * (width - len(row))
                    values.append(row)
                columns = list(zip(*values)) if values else [()] * width
                arrays = []
                for index, (decode, field) in enumerate(zip(decoders, schema)):
                    try:
                        arrays.append(pa.array(decode(columns[index]), type=field.type))
                    except (ValueError, TypeError, OverflowError, pa.ArrowException):
                        raise ValueError(_undecodable(self.columns, chunk, index)) from None
                meta = list(zip(*((offset, diff, ts) for offset, diff, ts, _ in chunk)))
                arrays += [pa.array(meta[i], type=schema.field(width + i).type) for i in range(3)]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
        finally:
            store.close()

    def _read_base(self, part: BaseRange, schema):
        import numpy as np
        import pyarrow as pa

        from ..ingest.copy import base_batches, spark_arrays

        columns = [Column(c["name"], c["type"]) for c in self.columns]
        types = [schema.field(i).type for i in range(len(columns))]
        first = part.first
        for batch in base_batches(part.path, part.skip, part.take, ROWS_PER_BATCH):
            count = batch.num_rows
            arrays = spark_arrays(batch, columns, types) + [
                pa.array(np.arange(first, first + count, dtype=np.int64)), pa.array(np.ones(count, dtype=np.int32)),
                pa.array(np.full(count, part.ts, dtype=np.int64))]
            first += count
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    def commit(self, end: dict) -> None:
        """Nothing to do: the sink acknowledges what it committed to Iceberg, not what Spark read."""


def _undecodable(columns: list[dict], chunk, index: int) -> str:
    """Which value of a logged change the sink cannot convert (an older icesink did not check values)."""
    column = columns[index]
    decode = decoder(column["type"])
    for offset, _, _, row in chunk:
        value = row[index] if index < len(row) else None
        try:
            decode(value)
        except (ValueError, TypeError, OverflowError) as exc:
            return (f"column \"{column['name']}\" of the change at log offset {offset} holds {value!r}, which is not "
                    f"a {column['type']}: {exc}")
    return f"column \"{column['name']}\" of the changes at log offsets {chunk[0][0]}-{chunk[-1][0]} cannot be read"


class EngineTableInput(Input):
    replicated = False  # a table a source replicates: a sink that starts below its log's floor reads a snapshot

    def __init__(self, catalog, relation, origin):
        super().__init__(catalog, relation, origin)
        self.log = TableStore(catalog.data_dir)

    def stream(self, spark, start: Offset):
        return self._reader(spark, start).load()

    def _reader(self, spark, start: Offset):
        return (spark.readStream.format(EngineTableSource.name())
                .option("data_dir", str(Path(self.catalog.data_dir).resolve())).option("table_id", self.relation.id)
                .option("columns", json.dumps([c.as_dict() for c in self.relation.descriptor.columns]))
                .option("start", str(start.offset)).option("replicated", str(self.replicated).lower())
                .option("cores", str(spark.sparkContext.defaultParallelism)))

    def holds_changes_after(self, frontier: Offset) -> bool:
        return self.log.latest_offset(self.relation.id, len(self.relation.descriptor.columns)) > frontier.offset

    def key_sample(self, frontier: Offset, column: str) -> list | None:
        """A replicated table's copy gives the integer or text keys of a batch that reads it (from its files' key
        column alone), unless the batch reads a snapshot instead (the log below it pruned) or more changes after
        it than a quarter of its rows."""
        import numpy as np
        import pyarrow.parquet as pq

        from ..ingest.copy import PLAIN_TYPES

        table_id = self.relation.id
        base = self.log.base(table_id)
        kind = next((c.type for c in self.relation.descriptor.columns if c.name == column), None)
        if (base is None or kind not in PLAIN_TYPES
                or not self.log.floor(table_id) <= frontier.offset < base.upto
                or self.log.latest_offset(table_id) - base.upto > base.rows // 4):
            return None
        step, sample = max(1, base.rows // KEY_SAMPLE), []
        try:
            for path, _ in base.files:
                if pq.read_schema(path).get_field_index(column) < 0:
                    return None  # a column added since the copy
                keys = pq.read_table(path, columns=[column])[column]
                sample += keys.take(np.arange(0, len(keys), step)).drop_null().to_pylist()
        except (OSError, ValueError) as exc:  # the batch reads the files and says what is wrong with them
            log.warning("table %s: no sample of its copy's keys (%s)", self.relation.name, exc)
            return None
        return sample

    def check_resume(self, frontier: Offset) -> None:
        floor = self.log.floor(self.relation.id)
        if 0 < frontier.offset < floor:
            raise ProgressBehindInput(
                f"the sink's progress in Iceberg (offset {frontier.offset}) is older than what table "
                f"'{self.relation.name}' keeps of its changes (compacted up to offset {floor}); recreate the sink to "
                "start from a snapshot")

    def acknowledge(self, sink_id: str, frontier: Offset) -> None:
        """The log may shrink below what every sink of the table acknowledged: compacted by the housekeeping
        thread, since a compaction reads the log up to there and a batch must not wait for it."""
        table_id, name, data_dir = self.relation.id, self.relation.name, self.catalog.data_dir
        self.log.acknowledge(sink_id, table_id, frontier.offset)
        log_readers = self.log_readers

        def readers() -> set[str]:  # the table's sinks as the compaction goes (a connection of its own thread's)
            catalog = Catalog(data_dir)
            try:
                return log_readers(catalog, table_id)
            finally:
                catalog.close()

        def compact():
            store = TableStore(data_dir)
            try:
                removed = store.compact(table_id, readers)
            finally:
                store.close()
            if removed:
                log.info("table %s: compacted %d entries of the change log", name, removed)
        housekeeping.later(("compact", str(data_dir), table_id), compact)

    @staticmethod
    def log_readers(catalog: Catalog, table_id: str) -> set[str]:
        """The sinks that read the table's change log, whose acknowledgements its compaction waits for."""
        return catalog.sinks_reading(table_id)

    def close(self) -> None:
        self.log.close()
