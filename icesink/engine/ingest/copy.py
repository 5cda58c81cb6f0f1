"""The initial copy of an upstream table as Parquet files, the table's *base*: `COPY … TO STDOUT` (text format) parsed
by Arrow's CSV reader a block at a time and written as it comes (memory stays bounded whatever the table's size),
integers as integers and every other value as Postgres printed it. Two readers take a base: the replication loads
its rows into icesink's store (`stored_rows`), and sinks read them as the table's first changes (`spark_arrays`),
without a change-log entry per row."""
from __future__ import annotations

import io
import os
import re
import select

import psycopg

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from ...model.types import Column, column_decoder
from ..segments import WRITE_OPTIONS
from ..values import PRINTED_TIMESTAMP, replicated_input

BLOCK_BYTES = 8 << 20
CHUNK_BYTES = 1 << 20
SESSION = "-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=postgres"  # values in the form engine tables take
_INTEGERS = {"smallint", "integer", "bigint"}
PLAIN_TYPES = _INTEGERS | {"text"}  # a base holds their values as they are (int64, string)
_ZONES = {"timestamp with time zone": "+00", "timestamp": ""}


class _CopyStream(io.RawIOBase):
    """psycopg's COPY as a file Arrow reads from. Postgres sends a message per row, and psycopg's `Copy.read()`
    costs a microsecond for each (a generator and a wait per call), as much as the rest of the copy together: the
    rows are taken from libpq (the connection's `pgconn`) in a tight loop, joined a chunk at a time, and Arrow is
    handed megabytes. The COPY's last result is taken here too, which leaves psycopg's `Copy` nothing to read."""

    def __init__(self, copy):
        self._pgconn, self._encoding = copy.connection.pgconn, copy.connection.info.encoding
        self._pending, self._start, self._done = bytearray(), 0, False

    def readable(self) -> bool:
        return True

    def empty(self) -> bool:
        """Whether the COPY has nothing more to send (an empty table: Arrow's reader refuses to read nothing)."""
        if self._start == len(self._pending) and not self._done:
            self._pending, self._start = self._chunk(), 0
        return self._start == len(self._pending)

    def _chunk(self) -> bytearray:
        chunk, pgconn = bytearray(), self._pgconn
        get = pgconn.get_copy_data
        while len(chunk) < CHUNK_BYTES:
            size, data = get(1)  # never blocking in libpq: a poll waits instead, as psycopg's own reads do
            if size > 0:
                chunk += data  # copied at once: keeping libpq's row buffers alive to join them costs 3× the read
            elif size == 0:
                _wait_readable(pgconn)
            else:  # the end of the data (an error raises in get_copy_data)
                self._end()
                break
        return chunk

    def _end(self) -> None:
        self._done = True
        pgconn = self._pgconn
        while True:
            while pgconn.is_busy():
                _wait_readable(pgconn)
            result = pgconn.get_result()
            if result is None:
                return
            if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
                raise psycopg.errors.error_from_result(result, self._encoding)

    def readinto(self, buffer) -> int:
        if self.empty():
            return 0
        size = min(len(buffer), len(self._pending) - self._start)
        buffer[:size] = memoryview(self._pending)[self._start:self._start + size]
        self._start += size
        return size


def _wait_readable(pgconn) -> None:
    """Until the server sent more (poll, not select: a process may hold more than 1,024 files)."""
    poller = select.poll()
    poller.register(pgconn.socket, select.POLLIN)
    poller.poll()
    pgconn.consume_input()


def base_schema(columns: list[Column]) -> pa.Schema:
    return pa.schema([(c.name, pa.int64() if c.type in _INTEGERS else pa.string()) for c in columns])


def write_base(copy, columns: list[Column], path: str, on_block=lambda rows: None) -> int:
    """Writes a COPY in text form of `columns` to a Parquet file at `path` (none when the COPY is empty); returns
    the rows written. Text form has a row per line, tab between values and `\\N` for NULL, and escapes backslashes,
    tabs and line breaks inside values: Arrow splits the lines without quoting, and the few values holding a
    backslash are unescaped after. `on_block(rows)` is called after each block (and may raise to stop the copy)."""
    schema = base_schema(columns)
    stream = _CopyStream(copy)
    if stream.empty():
        return 0
    reader = pcsv.open_csv(
        io.BufferedReader(stream, CHUNK_BYTES),
        read_options=pcsv.ReadOptions(column_names=schema.names, block_size=BLOCK_BYTES),
        parse_options=pcsv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False, double_quote=False),
        convert_options=pcsv.ConvertOptions(column_types=schema, strings_can_be_null=True, null_values=["\\N"]))
    written = 0
    with pq.ParquetWriter(path, schema, **WRITE_OPTIONS) as writer:
        for batch in reader:
            batch = _unescaped(batch)
            _check(batch, columns)
            writer.write_batch(batch)
            written += batch.num_rows
            on_block(batch.num_rows)
    with open(path, "rb") as done:  # durable before the store records the copy
        os.fsync(done.fileno())
    return written


_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPED = re.compile(r"\\(.)")


def _unescape(value: str) -> str:
    return _ESCAPED.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), value)


def _unescaped(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Text-form values as Postgres holds them; only those with escapes other than of backslashes go one by one."""
    columns = list(batch.columns)
    for index, values in enumerate(columns):
        if not pa.types.is_string(values.type):
            continue
        if not pc.any(pc.match_substring(values, "\\")).as_py():
            continue
        # most escapes are of backslashes alone (bytea's \\x, JSON, arrays): those are undone all at once
        plain = pc.fill_null(pc.match_substring_regex(values, r"^(?:[^\\]|\\\\)*$"), True)
        values = pc.if_else(plain, pc.replace_substring(values, "\\\\", "\\"), values)
        if not pc.all(plain).as_py():
            values = pa.array([v if p else _unescape(v) for v, p in zip(values.to_pylist(), plain.to_pylist())],
                              pa.string())
        columns[index] = values
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


class CopyRefused(ValueError):
    """A copied value that icesink cannot replicate (the change stream would refuse it too)."""


def _check(batch: pa.RecordBatch, columns: list[Column]) -> None:
    """A copy is kept only if its rows can go into the store and to sinks: a refusal now names the value, where
    later it would stop the load and every sink reading the copy."""
    for column, values in zip(columns, batch.columns):
        if column.type in PLAIN_TYPES:
            continue
        zone = _ZONES.get(column.type)
        if zone is not None and _printed(values, zone):  # valid as Postgres printed them: no need to convert
            continue
        try:
            _stored(column.type)(values)
        except (ValueError, TypeError, OverflowError) as exc:
            raise CopyRefused(f"column \"{column.name}\" holds a value icesink cannot replicate: {exc}") from None


def base_batches(path: str, skip: int = 0, take: int | None = None, size: int = 100_000):
    """Record batches of `take` rows (None: all) of a base file, the first `skip` rows left out; only the row
    groups holding them are read."""
    parquet = pq.ParquetFile(path)
    take = parquet.metadata.num_rows - skip if take is None else take
    for group in range(parquet.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        if skip >= rows:
            skip -= rows
            continue
        if take <= 0:
            return
        for batch in parquet.iter_batches(batch_size=size, row_groups=[group]):
            if skip >= batch.num_rows:
                skip -= batch.num_rows
                continue
            batch = batch.slice(skip, take)
            skip, take = 0, take - batch.num_rows
            yield batch
            if take <= 0:
                return


def _column(batch: pa.RecordBatch, column: Column) -> pa.Array:
    """A column of a base batch; a column added after the copy holds NULL in it."""
    index = batch.schema.get_field_index(column.name)
    return batch.column(index) if index >= 0 else pa.nulls(batch.num_rows, pa.string())


def stored_rows(batch: pa.RecordBatch, columns: list[Column]) -> list[tuple]:
    """A base batch as rows of the values icesink's store keeps."""
    return list(zip(*stored_columns(batch, columns)))


def stored_columns(batch: pa.RecordBatch, columns: list[Column]) -> list[list]:
    """A base batch as a list per column of the values icesink's store keeps."""
    return [_stored(c.type)(_column(batch, c)) for c in columns]


def spark_arrays(batch: pa.RecordBatch, columns: list[Column], types: list[pa.DataType]) -> list[pa.Array]:
    """A base batch as the Arrow arrays of the sink's Spark schema (`types`, one per column)."""
    arrays = []
    for column, target in zip(columns, types):
        values = _column(batch, column)
        if column.type in PLAIN_TYPES:
            arrays.append(values.cast(target))
            continue
        zone = _ZONES.get(column.type)
        stored = _stored_timestamps(values, zone) if zone is not None else None
        if stored is not None:
            try:
                arrays.append(stored.cast(target))
                continue
            except pa.ArrowInvalid:  # a year Arrow does not parse: one by one, as the change log's values
                pass
        arrays.append(pa.array(column_decoder(column.type)(_stored(column.type)(values)), type=target))
    return arrays


def _stored(type_name: str):
    """From an Arrow column of a base to the list of its stored values."""
    if type_name in PLAIN_TYPES:
        return pa.Array.to_pylist
    convert = replicated_input(type_name)
    zone = _ZONES.get(type_name)

    def each(column):
        return [None if v is None else convert(v) for v in column.to_pylist()]
    if zone is None:
        return each

    def timestamps(column):
        stored = _stored_timestamps(column, zone)
        return each(column) if stored is None else stored.to_pylist()
    return timestamps


def _printed(column: pa.Array, zone: str) -> bool:
    """Whether every timestamp is in the form Postgres prints for years 1 to 9999 (or NULL)."""
    printed = pc.match_substring_regex(column, PRINTED_TIMESTAMP + re.escape(zone) + "$")
    return pc.all(pc.or_kleene(printed, pc.is_null(column))).as_py()


def _stored_timestamps(column: pa.Array, zone: str) -> pa.Array | None:
    """Timestamps rewritten as replicated_input does it one by one, all at once; None when one of them is not in
    the form Postgres prints (a year before 1 or after 9999), to be taken one by one."""
    if not _printed(column, zone):
        return None
    bare = pc.replace_substring_regex(column, re.escape(zone) + "$", "") if zone else column
    six = pc.utf8_slice_codeunits(pc.binary_join_element_wise(bare, "000000", ""), 0, 26)
    stored = pc.if_else(pc.greater(pc.utf8_length(bare), 19), six, bare)
    return pc.binary_join_element_wise(stored, "+00:00", "") if zone else stored
