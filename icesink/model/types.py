"""Column types as both planes know them, with no I/O: the normalised type names the planner writes into the
catalog, and how a logged value (JSON from an engine table's change log) reads as a Python value."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal

UNBOUNDED_NUMERIC = (38, 10)  # numeric without a precision: Iceberg decimals need one
UINT8_DECIMAL = (20, 0)  # uint8 reaches 2^64 - 1, past Iceberg's long
RANGES = ("int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # normalised, e.g. 'bigint', 'numeric(10,2)', 'text[]'
    nullable: bool = True

    def as_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "nullable": self.nullable}


# bare names an earlier icesink accepted as column types and kept as text; a catalog may still hold them
_LEGACY_TEXT = ("map", "record", "list")


def base_type(type_name: str) -> str:
    """'numeric(10,2)' -> 'numeric'; arrays are 'list', maps 'map', ranges 'range', records 'record'."""
    if type_name in _LEGACY_TEXT:
        return "text"
    if type_name.endswith("[]"):
        return "list"
    if type_name.startswith("map["):
        return "map"
    if type_name.startswith("record("):
        return "record"
    if type_name in RANGES:
        return "range"
    return type_name.split("(")[0]


def held_as_json(type_name: str) -> bool:
    """Whether a value of this type is stored as JSON text (a list, a map or a record): nested in another such value,
    it goes in as JSON, not as a string of it."""
    return base_type(type_name) in ("list", "map", "record")


def _parsed(value):
    """A stored list, map or record: JSON text, or already parsed when nested in another."""
    return json.loads(value) if isinstance(value, str) else value


def map_value_type(type_name: str) -> str:
    """'map[text=>integer]' -> 'integer'."""
    return type_name[len("map[text=>"):-1]


def record_type(fields: list[tuple[str, str]]) -> str:
    """A record's type name: 'record("street" text,"zip" integer)' (each name quoted, so any name fits)."""
    return "record(" + ",".join('"' + name.replace('"', '""') + '" ' + kind for name, kind in fields) + ")"


def record_fields(type_name: str) -> list[tuple[str, str]]:
    """record_type's fields again, nested types whole."""
    body, fields, start, depth, quoted = type_name[len("record("):-1], [], 0, 0, False
    for index, char in enumerate(body + ","):
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "([":
            depth += 1
        elif not quoted and char in ")]":
            depth -= 1
        elif not quoted and char == "," and depth == 0:
            item = body[start:index]
            end = item.index('"', 1)
            while end + 1 < len(item) and item[end + 1] == '"':  # a doubled quote inside the name
                end = item.index('"', end + 2)
            fields.append((item[1:end].replace('""', '"'), item[end + 2:]))
            start = index + 1
    return fields


RANGE_BOUNDS = {"int4range": "integer", "int8range": "bigint", "numrange": "numeric", "daterange": "date",
                "tsrange": "timestamp", "tstzrange": "timestamp with time zone"}
RANGE_FIELDS = ("lower", "upper", "lower_inclusive", "upper_inclusive", "empty")  # Materialize's struct


def _range(type_name: str):
    """A range's canonical text ('[2,6)', '(,5]', 'empty') as Materialize writes a range: a struct of its bounds,
    whether each is inclusive, and whether it is empty (an unbounded side is null)."""
    bound = decoder(RANGE_BOUNDS[type_name])

    def value(text: str) -> str | None:
        text = text.strip()
        return None if text == "" else text[1:-1].replace('\\"', '"') if text.startswith('"') else text

    def convert(text: str) -> dict:
        if text == "empty":
            return dict(zip(RANGE_FIELDS, (None, None, False, False, True)))
        lower, upper = _split_range(text[1:-1])
        lower, upper = value(lower), value(upper)
        return {"lower": None if lower is None else bound(lower), "upper": None if upper is None else bound(upper),
                "lower_inclusive": text[0] == "[", "upper_inclusive": text[-1] == "]", "empty": False}
    return convert


def _split_range(body: str) -> tuple[str, str]:
    """The two bounds of a range's text, at the comma outside quotes."""
    quoted = False
    for index, char in enumerate(body):
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            return body[:index], body[index + 1:]
    raise ValueError(f"not a range: {body!r}")


def numeric_params(type_name: str) -> tuple[int, int]:
    if "(" not in type_name:
        return UNBOUNDED_NUMERIC
    precision, scale = type_name[type_name.index("(") + 1:-1].split(",")
    return int(precision), int(scale)


def _timestamp(text: str, zoned: bool):
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if zoned:
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    return value.replace(tzinfo=None) if value.tzinfo is None else value.astimezone(dt.timezone.utc).replace(tzinfo=None)


def decoder(type_name: str):
    """A function from a logged JSON value to the Python value the sink writes for a column of `type_name`."""
    if type_name.endswith("[]"):
        inner = decoder(type_name[:-2])
        return lambda v: None if v is None else [inner(x) for x in _parsed(v)]
    base = base_type(type_name)
    if base == "record":
        fields = [(name, decoder(kind)) for name, kind in record_fields(type_name)]
        def record(value) -> dict:
            found = _parsed(value)
            return {name: convert(found.get(name)) for name, convert in fields}
        return lambda v: None if v is None else record(v)
    if base == "range":
        convert_range = _range(type_name)
        return lambda v: None if v is None else convert_range(v)
    if base == "map":
        inner = decoder(map_value_type(type_name))
        return lambda v: None if v is None else [
            (k, inner(x)) for k, x in _parsed(v).items()]
    convert = {
        "smallint": int, "integer": int, "bigint": int, "real": float, "double precision": float,
        "uint2": int, "uint4": int, "uint8": lambda v: Decimal(str(v)),
        "boolean": bool, "numeric": lambda v: Decimal(str(v)),
        "date": lambda v: dt.date.fromisoformat(str(v)),
        "timestamp": lambda v: _timestamp(str(v), False),
        "timestamp with time zone": lambda v: _timestamp(str(v), True),
        "bytea": lambda v: bytes(v) if not isinstance(v, str) else bytes.fromhex(v.removeprefix("\\x")),
    }.get(base, str)
    return lambda v: None if v is None else convert(v)


# stored (and logged as JSON) as Arrow takes them for their Spark type: no decoding
_AS_STORED = {"smallint", "integer", "bigint", "uint2", "uint4", "text", "jsonb", "uuid", "interval", "time"}


def column_decoder(type_name: str):
    """decoder() for a whole column: from a list of stored values to the Python values Arrow takes."""
    if type_name in _AS_STORED:
        return list
    decode = decoder(type_name)
    return lambda values: [decode(v) for v in values]
