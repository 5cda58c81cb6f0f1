"""Values entering an engine table, checked as Postgres's input functions check them and stored in the form the
sink reads back (columns.decoder), so a value INSERT, UPDATE or COPY accepts is one the sink can always write.

`input_function(type)` returns a function from a value (what SQLite computed, a literal, a CSV field or a Parquet
value) to its stored form, raising InvalidValue with Postgres's words for what it refuses. Postgres's special
inputs are converted as Postgres converts them ('epoch', 'now', 'today', 'yesterday', 'tomorrow', 'allballs');
infinite dates and timestamps and NaN numerics are refused: Iceberg cannot hold them.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
import uuid
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache
from typing import Callable

from ..model.intervals import interval_parts, interval_text
from ..model.types import UNBOUNDED_NUMERIC, base_type, decoder, held_as_json, map_value_type


class InvalidValue(ValueError):
    def __init__(self, message: str, column: str | None = None, where=None):
        super().__init__(message)
        self.column, self.where = column, where  # where: a position in a statement, or a line of a file


INT_RANGES = {"smallint": 2 ** 15, "integer": 2 ** 31, "bigint": 2 ** 63}
_UINT_RANGES = {"uint2": 2 ** 16, "uint4": 2 ** 32, "uint8": 2 ** 64}
_REAL_MAX = 3.4028234663852886e38
_TRUE = {"t", "true", "y", "yes", "on", "1"}
_FALSE = {"f", "false", "n", "no", "off", "0"}
_INFINITE = {"infinity", "+infinity", "-infinity", "inf", "+inf", "-inf"}


def _syntax(type_name: str, value) -> InvalidValue:
    return InvalidValue(f'invalid input syntax for type {type_name}: "{value}"')


def _integer(type_name: str):
    high = INT_RANGES.get(type_name) or _UINT_RANGES[type_name]
    low = -high if type_name in INT_RANGES else 0

    def convert(value):
        if isinstance(value, bool):
            value = int(value)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidValue(f"{type_name} out of range")
            value = round(value)
        elif isinstance(value, Decimal):
            value = int(value.to_integral_value(ROUND_HALF_UP))
        elif isinstance(value, str):
            text = value.strip()
            if not re.fullmatch(r"[+-]?\d+", text):
                raise _syntax(type_name, value)
            value = int(text)
        elif not isinstance(value, int):
            raise _syntax(type_name, value)
        if not low <= value < high:
            raise InvalidValue(f"{type_name} out of range")
        return str(value) if type_name == "uint8" else value  # past SQLite's integers
    return convert


def _floating(type_name: str):
    def convert(value):
        if isinstance(value, str):
            text = value.strip().lower()
            if text in ("nan", "+nan", "-nan"):
                number = math.nan
            elif text in _INFINITE:
                number = -math.inf if text.startswith("-") else math.inf
            else:
                try:
                    number = float(text)
                except ValueError:
                    raise _syntax(type_name, value) from None
        elif isinstance(value, (int, float, Decimal)):
            number = float(value)
        else:
            raise _syntax(type_name, value)
        if math.isnan(number):
            raise InvalidValue(f"NaN cannot be stored as a {type_name} value (SQLite, which holds icesink's values, "
                               "keeps it as NULL)")
        if type_name == "real" and math.isfinite(number) and abs(number) > _REAL_MAX:
            raise InvalidValue("value out of range: overflow (real)")
        return number
    return convert


def finite_decimal(value) -> Decimal:
    """A numeric's value as its input reads it (text, or a number), every digit kept; refused as Postgres refuses
    what is no number, and NaN and the infinities, which an Iceberg decimal cannot hold."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise _syntax("numeric", value)
    try:
        number = Decimal(value.strip() if isinstance(value, str) else repr(value) if isinstance(value, float)
                         else value)
    except InvalidOperation:
        raise _syntax("numeric", value) from None
    if not number.is_finite():
        raise InvalidValue(f"numeric {value} is not supported: icesink keeps a numeric as an Iceberg decimal, "
                           "which is finite")
    return number


def _numeric(type_name: str):
    bounded = "(" in type_name
    precision, scale = (int(x) for x in type_name[type_name.index("(") + 1:-1].split(",")) if bounded \
        else UNBOUNDED_NUMERIC

    def convert(value):
        number = finite_decimal(value)
        if bounded or number.as_tuple().exponent < -scale:
            number = number.quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP)
        if number.adjusted() >= precision - scale:
            raise InvalidValue(f"numeric field overflow: a field with precision {precision}, scale {scale} must "
                               f"round to an absolute value less than 10^{precision - scale}")
        return format(number, "f")
    return convert


def _boolean(value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text in _TRUE:
        return 1
    if text in _FALSE:
        return 0
    raise _syntax("boolean", value)


def _text(value):
    if isinstance(value, bytes):
        raise InvalidValue("a binary value does not fit a text column; write it as text")
    if isinstance(value, float):
        return repr(value)
    return str(value)


_ISO_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")


_SPECIAL_DAYS = {"epoch": None, "today": 0, "now": 0, "yesterday": -1, "tomorrow": 1}


def _special_day(text: str) -> dt.date | None:
    if text not in _SPECIAL_DAYS:
        return None
    offset = _SPECIAL_DAYS[text]
    if offset is None:
        return dt.date(1970, 1, 1)
    return dt.datetime.now(dt.timezone.utc).date() + dt.timedelta(days=offset)


def _padded(text: str) -> str:
    return _ISO_DATE.sub(lambda m: f"{m.group(1)}-{int(m.group(2)):02d}-{int(m.group(3)):02d}", text, count=1)


def _refuse_infinite(type_name: str, text: str) -> None:
    if text in _INFINITE:
        raise InvalidValue(f"{type_name} '{text}' cannot be written to Iceberg, which has no infinite "
                           f"{'dates' if type_name == 'date' else 'timestamps'}")


def _date(value):
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if not isinstance(value, str):
        raise _syntax("date", value)
    text = value.strip().lower()
    _refuse_infinite("date", text)
    special = _special_day(text)
    if special is not None:
        return special.isoformat()
    try:
        return dt.datetime.fromisoformat(_padded(text).upper()).date().isoformat()
    except ValueError:
        raise _syntax("date", value) from None


def _timestamp(zoned: bool):
    type_name = "timestamp with time zone" if zoned else "timestamp without time zone"

    def convert(value):
        if isinstance(value, dt.datetime):
            moment = value
        elif isinstance(value, dt.date):
            moment = dt.datetime(value.year, value.month, value.day)
        elif isinstance(value, str):
            try:
                moment = dt.datetime.fromisoformat(value)  # the usual case, at once
            except ValueError:
                moment = _timestamp_words(value, type_name)
        else:
            raise _syntax(type_name, value)
        if zoned:  # the session time zone is UTC, as in Materialize
            moment = moment.replace(tzinfo=dt.timezone.utc) if moment.tzinfo is None \
                else moment.astimezone(dt.timezone.utc)
            return moment.isoformat(sep=" ")
        return moment.replace(tzinfo=None).isoformat(sep=" ")  # Postgres ignores a zone given for this type
    return convert


def _timestamp_words(value: str, type_name: str) -> dt.datetime:
    """Postgres's special inputs, one-digit months and days, surrounding spaces, 'z' for UTC."""
    text = value.strip().lower()
    _refuse_infinite(type_name, text)
    if text == "now":
        return dt.datetime.now(dt.timezone.utc)
    day = _special_day(text)
    if day is not None:
        return dt.datetime(day.year, day.month, day.day)
    try:
        return dt.datetime.fromisoformat(_padded(text).upper())
    except ValueError:
        raise _syntax(type_name, value) from None


def _time(value):
    if isinstance(value, dt.time):
        return value.isoformat()
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text == "allballs":
        return "00:00:00"
    try:
        return dt.time.fromisoformat(text).isoformat()
    except (TypeError, ValueError):
        raise _syntax("time without time zone", value) from None


def _interval(value):
    """Postgres's interval input ('1 day 2 hours', '1 year 2 mons', '01:02:03', '3 days ago'), kept in Postgres's
    output form ('1 year 2 mons 3 days 01:02:03')."""
    if not isinstance(value, str):
        raise _syntax("interval", value)
    try:
        return interval_text(*interval_parts(value))
    except ValueError:
        raise _syntax("interval", value) from None


def _uuid(value):
    try:
        return str(uuid.UUID(str(value).strip()))
    except ValueError:
        raise _syntax("uuid", value) from None


def _reject_constant(name: str):
    raise ValueError(name)


def _jsonb(value):
    if not isinstance(value, str):
        raise InvalidValue("a jsonb value must be written as text, such as '{\"a\": 1}'")
    try:
        parsed = json.loads(value, parse_constant=_reject_constant, parse_float=Decimal)  # a repeated key: the last
    except ValueError:
        raise _syntax("json", value) from None
    return _jsonb_text(parsed)


def _jsonb_text(value) -> str:
    """A JSON value as Postgres prints a jsonb: an object's keys once (the last given wins), shorter keys first, then
    by their bytes; `, ` and `: ` between items; numbers as numeric prints them (`1.50`, `1e2` as 100)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(k.encode()), k.encode()))
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_jsonb_text(value[k])}" for k in keys) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_jsonb_text(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return format(value, "f")
    return json.dumps(value, ensure_ascii=False)


def _bytea(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(value).hex()
    if not isinstance(value, str):
        raise _syntax("bytea", value)
    if value.startswith("\\x"):
        digits = value[2:]
        if not re.fullmatch(r"(?:[0-9A-Fa-f]{2})*", digits):
            raise _syntax("bytea", value)
        return "\\x" + digits.lower()
    out = bytearray()
    for match in re.finditer(r"\\\\|\\([0-3][0-7]{2})|(\\)|([^\\]+)", value):  # Postgres's escape format
        if match.group(2):
            raise _syntax("bytea", value)
        out += b"\\" if match.group() == "\\\\" else bytes([int(match.group(1), 8)]) if match.group(1) \
            else match.group(3).encode()
    return "\\x" + out.hex()


def _array(element_type: str):
    element = input_function(element_type)
    nested = element_type.endswith("[]")
    type_name = f"{element_type}[]"

    def values(items):
        return [None if item is None else element(item) for item in items]

    def convert(value):
        if isinstance(value, (list, tuple)):
            items = list(value)
        elif isinstance(value, str) and value.strip().startswith("["):  # JSON, as earlier versions stored arrays
            try:
                items = json.loads(value)
            except ValueError:
                raise _syntax(type_name, value) from None
        elif isinstance(value, str) and value.strip().startswith("{"):
            items = _array_literal(value, type_name)
        else:
            raise InvalidValue(f'malformed array literal: "{value}"; write it as \'{{1,2,3}}\'')
        if not isinstance(items, list):
            raise _syntax(type_name, value)
        if any(isinstance(i, list) for i in items) != nested and items:
            raise InvalidValue(f'malformed array literal: "{value}" has the wrong number of dimensions for '
                               f"{type_name}")
        stored = values(items)
        return json.dumps([None if x is None else json.loads(x) for x in stored] if held_as_json(element_type)
                          else stored)
    return convert


_ARRAY_TOKEN = re.compile(r'\s*(?:(\{)|(\})|(,)|"((?:[^"\\]|\\.)*)"|([^,{}"\s](?:[^,{}"]*[^,{}"\s])?))\s*')


def _array_literal(text: str, type_name: str):
    """Postgres's '{1,2,"a b",NULL}' (and nested braces) as nested lists of strings and None."""
    stack: list[list] = []
    result, position, after_item = None, 0, False  # after_item: an element or sub-array just ended
    for match in _ARRAY_TOKEN.finditer(text):
        if match.start() != position or result is not None:
            raise _syntax(type_name, text)
        position = match.end()
        open_, close, comma, quoted, bare = match.groups()
        if comma:
            if not stack or not after_item:
                raise _syntax(type_name, text)
            after_item = False
            continue
        if close:
            if not stack or (not after_item and stack[-1]):
                raise _syntax(type_name, text)
            done = stack.pop()
            if stack:
                stack[-1].append(done)
            else:
                result = done
            after_item = True
            continue
        if after_item or (not stack and not open_):
            raise _syntax(type_name, text)
        if open_:
            stack.append([])
            continue
        stack[-1].append(re.sub(r"\\(.)", r"\1", quoted) if quoted is not None
                         else None if bare.upper() == "NULL" else bare)
        after_item = True
    if stack or result is None or position != len(text):
        raise _syntax(type_name, text)
    return result


_SCALARS: dict[str, Callable] = {
    "real": _floating("real"), "double precision": _floating("double precision"), "boolean": _boolean,
    "date": _date, "timestamp": _timestamp(False), "timestamp with time zone": _timestamp(True), "time": _time,
    "interval": _interval, "uuid": _uuid, "jsonb": _jsonb, "bytea": _bytea,
    **{name: _integer(name) for name in (*INT_RANGES, *_UINT_RANGES)},
}


@lru_cache(maxsize=None)
def input_function(type_name: str) -> Callable:
    """From a value to the stored value of a column of `type_name`; None stays None. The stored value always
    passes the sink's own decoder: that check is part of the function."""
    if type_name.endswith("[]"):
        convert = _array(type_name[:-2])
    elif base_type(type_name) in ("map", "range", "record"):
        from .nested_values import map_input, range_input, record_input
        convert = (map_input(map_value_type(type_name)) if base_type(type_name) == "map"
                   else range_input(type_name) if base_type(type_name) == "range" else record_input(type_name))
    elif base_type(type_name) == "numeric":
        convert = _numeric(type_name)
    else:
        convert = _SCALARS.get(base_type(type_name), _text)
    sink_decoder = decoder(type_name)

    def check(value):
        if value is None:
            return None
        stored = convert(value)
        try:
            sink_decoder(stored)
        except (ValueError, TypeError, OverflowError) as exc:  # a value the sink could not write: refuse it here
            raise InvalidValue(f"value \"{value}\" cannot be converted for Iceberg ({exc})") from None
        return stored
    return check


# how Postgres prints a timestamp in the replication session (ISO, UTC); years past 9999 or BC take the long way
# (ASCII digits: Python's \d takes any script's, and Arrow's regular expressions check [0-9] in half the time)
PRINTED_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.([0-9]{1,6}))?"
_PRINTED_TIMESTAMP = re.compile(PRINTED_TIMESTAMP[1:])


def _printed_timestamp(zone: str, slow: Callable) -> Callable:
    """The stored form of a timestamp Postgres printed (what `slow`, the input function, gives for it) made from
    the text itself: six fraction digits or none, and the zone as +00:00. A copy stores millions of them."""
    width = 19 + len(zone)

    def convert(value: str):
        if len(value) <= width + 7 and value.endswith(zone):
            printed = _PRINTED_TIMESTAMP.fullmatch(value, 0, len(value) - len(zone))
            if printed is not None:
                fraction = printed.group(1)
                return (value[:19] + ("." + fraction.ljust(6, "0") if fraction else "")
                        + ("+00:00" if zone else ""))
        return slow(value)
    return convert


@lru_cache(maxsize=None)
def replicated_input(type_name: str) -> Callable:
    """`input_function` for values Postgres printed itself (a replicated row): integers and text are already
    valid and need no checking; timestamps in the form Postgres prints them are rewritten in place; every other
    value goes through its input function."""
    if type_name in INT_RANGES:
        return int
    if type_name in ("text", "jsonb"):  # Postgres prints a jsonb in the form the input function would give it
        return str
    if type_name == "timestamp with time zone":
        return _printed_timestamp("+00", input_function(type_name))
    if type_name == "timestamp":
        return _printed_timestamp("", input_function(type_name))
    return input_function(type_name)


def column_input(type_name: str, column: str, value):
    """`input_function` for SQL (icesink_in(type, column, value)): its error names the column."""
    try:
        return input_function(type_name)(value)
    except InvalidValue as exc:
        raise InvalidValue(str(exc), column) from None
