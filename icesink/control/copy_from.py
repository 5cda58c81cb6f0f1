"""COPY … FROM a file into an engine table, batch by batch (never the whole file in memory): CSV (pyarrow's reader)
and Postgres's text format are read as text, each value then passing its column's input function; Parquet is read
with its own types and matched to the columns by name."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterator, Optional

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

FORMATS = ("text", "csv", "parquet")
BATCH_ROWS = 65_536


class CopyError(Exception):
    """The file cannot be read as the options say; `line` says where, when that is known."""

    def __init__(self, message: str, line: Optional[int] = None):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class CopyOptions:
    format: str
    header: bool = False
    delimiter: Optional[str] = None  # default: ',' for CSV, a tab for text
    null: Optional[str] = None  # default: an unquoted empty field for CSV, \N for text
    quote: str = '"'
    escape: Optional[str] = None  # default: the quote doubled


def read_rows(path: str, names: list[str], options: CopyOptions) -> Iterator[tuple[tuple, int]]:
    """(values, line or row number) for each row of the file, in the order of `names`."""
    if os.path.isdir(path):
        raise CopyError("it is a directory, not a file")
    if not os.path.exists(path):
        raise CopyError("no such file")
    try:
        if options.format == "parquet":
            yield from _parquet_rows(path, names)
        elif options.format == "csv":
            yield from _csv_rows(path, len(names), names, options)
        else:
            yield from _text_rows(path, names, options)
    except OSError as exc:
        raise CopyError((exc.strerror or str(exc)).lower()) from None


def _width_error(line, expected: int, actual: int, names: list[str]) -> CopyError:
    if actual > expected:
        return CopyError("extra data after last expected column", line)
    return CopyError(f"missing data for column \"{names[actual]}\"", line)


def _csv_rows(path: str, width: int, names: list[str], options: CopyOptions):
    invalid = []

    def refuse(row) -> str:
        invalid.append(row)
        return "error"

    columns = [f"c{i}" for i in range(width)]
    line = 2 if options.header else 1
    try:
        yield from _csv_batches(path, columns, options, refuse, line)
    except pa.ArrowInvalid as exc:
        if invalid:
            row = invalid[0]
            raise _width_error(row.number or _line_of(path, row.text), width, row.actual_columns, names) from None
        raise CopyError(f"{str(exc).splitlines()[0][:200]}") from None


def _line_of(path: str, text: str):
    """The first line that reads `text` (pyarrow knows a bad row's number only when no value spans lines)."""
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if line.rstrip(b"\r\n").decode("utf-8", "replace") == text.rstrip("\r\n"):
                return number
    return None


def _csv_batches(path: str, columns: list[str], options: CopyOptions, refuse, line: int):
    reader = pacsv.open_csv(
        path, read_options=pacsv.ReadOptions(column_names=columns, skip_rows=1 if options.header else 0),
        parse_options=pacsv.ParseOptions(delimiter=options.delimiter or ",", quote_char=options.quote,
                                         double_quote=options.escape in (None, options.quote),
                                         escape_char=options.escape if options.escape not in (None, options.quote)
                                         else False, newlines_in_values=True, invalid_row_handler=refuse),
        convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in columns},
                                             null_values=[options.null or ""], strings_can_be_null=True,
                                             quoted_strings_can_be_null=False))
    for batch in reader:
        for values in zip(*(column.to_pylist() for column in batch.columns)):
            yield values, line
            line += 1


_TEXT_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_TEXT_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|([\s\S]))")


def _text_value(field: str) -> str:
    if "\\" not in field:
        return field
    return _TEXT_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)) if m.group(1) else chr(int(m.group(2), 16))
                            if m.group(2) else _TEXT_ESCAPES.get(m.group(3), m.group(3)), field)


def _text_rows(path: str, names: list[str], options: CopyOptions):
    """Postgres's text format: a delimiter (a tab) between fields, \\N for NULL, backslash escapes, \\. to end."""
    delimiter = options.delimiter or "\t"
    tokens = re.compile(rf"\\[\s\S]|{re.escape(delimiter)}|[^\\{re.escape(delimiter)}]+")
    null = "\\N" if options.null is None else options.null
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if options.header and number == 1:
                continue
            try:
                line = raw.decode("utf-8").rstrip("\n").rstrip("\r")
            except UnicodeDecodeError as exc:
                raise CopyError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x})", number) from None
            if line == "\\.":
                return
            fields = line.split(delimiter) if "\\" not in line else _fields(tokens.findall(line), delimiter)
            if len(fields) != len(names):
                raise _width_error(number, len(names), len(fields), names)
            yield tuple(None if value == null else _text_value(value) for value in fields), number


def _fields(tokens: list[str], delimiter: str) -> list[str]:
    """Fields of a line with backslash escapes: an escaped delimiter is part of its field."""
    fields, current = [], []
    for token in tokens:
        if token == delimiter:
            fields.append("".join(current))
            current = []
        else:
            current.append(token)
    return fields + ["".join(current)]


def _parquet_rows(path: str, names: list[str]):
    try:
        parquet = pq.ParquetFile(path)
    except pa.ArrowInvalid as exc:
        raise CopyError(f"not a Parquet file ({str(exc).splitlines()[0][:200]})") from None
    in_file = {name.lower(): name for name in parquet.schema_arrow.names}
    missing = [name for name in names if name.lower() not in in_file]
    if missing:
        raise CopyError(f"the Parquet file has no column {', '.join(repr(m) for m in missing)}; its columns are: "
                        f"{', '.join(parquet.schema_arrow.names)}")
    row = 1
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=[in_file[n.lower()] for n in names]):
        for values in zip(*(column.to_pylist() for column in batch.columns)):
            yield values, row
            row += 1
