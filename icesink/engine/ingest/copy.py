"""The initial copy of an upstream table, read fast: `COPY … TO STDOUT (FORMAT csv)` parsed by Arrow's CSV reader a
block at a time (memory stays bounded whatever the table's size), integers and text taken as they are, every other
value through its input function, one column at a time."""
from __future__ import annotations

import io
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from ...model.types import Column
from ..values import PRINTED_TIMESTAMP, replicated_input

BLOCK_BYTES = 8 << 20
_INTEGERS = {"smallint", "integer", "bigint"}


class _CopyStream(io.RawIOBase):
    """psycopg's COPY blocks as a file Arrow reads from."""

    def __init__(self, copy):
        self._blocks = iter(copy)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def empty(self) -> bool:
        """Whether the COPY sends nothing at all (an empty table), which Arrow's reader refuses to read."""
        while not len(self._pending):
            block = next(self._blocks, None)
            if block is None:
                return True
            self._pending = memoryview(bytes(block))
        return False

    def readinto(self, buffer) -> int:
        if self.empty():
            return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def copied_rows(copy, columns: list[Column]):
    """Lists of rows (tuples of stored values) from a COPY in CSV form of `columns`, one list per block. In
    Postgres's CSV an unquoted empty field is NULL and a quoted one an empty string, as Arrow is told."""
    names = [f"c{i}" for i in range(len(columns))]
    types = {n: pa.int64() if c.type in _INTEGERS else pa.string() for n, c in zip(names, columns)}
    stream = _CopyStream(copy)
    if stream.empty():
        return
    reader = pcsv.open_csv(
        io.BufferedReader(stream, 1 << 20),
        read_options=pcsv.ReadOptions(column_names=names, block_size=BLOCK_BYTES),
        parse_options=pcsv.ParseOptions(newlines_in_values=True),
        convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=True,
                                            quoted_strings_can_be_null=False, null_values=[""]))
    converters = [_converter(c.type) for c in columns]
    for batch in reader:
        yield list(zip(*(convert(column) for column, convert in zip(batch.columns, converters))))


def _converter(type_name: str):
    """From an Arrow column of the copy to the list of its stored values."""
    if type_name in _INTEGERS or type_name == "text":
        return pa.Array.to_pylist
    convert = replicated_input(type_name)
    zone = {"timestamp with time zone": "+00", "timestamp": ""}.get(type_name)

    def each(column):
        return [None if v is None else convert(v) for v in column.to_pylist()]
    if zone is None:
        return each

    def timestamps(column):
        """Rewritten in place as replicated_input does it one by one, all at once (the common case)."""
        printed = pc.match_substring_regex(column, PRINTED_TIMESTAMP + re.escape(zone) + "$")
        if not pc.all(pc.or_kleene(printed, pc.is_null(column))).as_py():
            return each(column)
        bare = pc.replace_substring_regex(column, re.escape(zone) + "$", "") if zone else column
        six = pc.utf8_slice_codeunits(pc.binary_join_element_wise(bare, "000000", ""), 0, 26)
        stored = pc.if_else(pc.greater(pc.utf8_length(bare), 19), six, bare)
        return (pc.binary_join_element_wise(stored, "+00:00", "") if zone else stored).to_pylist()
    return timestamps
