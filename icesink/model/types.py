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


def base_type(type_name: str) -> str:
    """'numeric(10,2)' -> 'numeric'; arrays are 'list', maps 'map', ranges 'range'."""
    if type_name.endswith("[]"):
        return "list"
    if type_name.startswith("map["):
        return "map"
    if type_name in RANGES:
        return "range"
    return type_name.split("(")[0]


def map_value_type(type_name: str) -> str:
    """'map[text=>integer]' -> 'integer'."""
    return type_name[len("map[text=>"):-1]


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
        return lambda v: None if v is None else [inner(x) for x in (json.loads(v) if isinstance(v, str) else v)]
    base = base_type(type_name)
    if base == "map":
        inner = decoder(map_value_type(type_name))
        return lambda v: None if v is None else [
            (k, inner(x)) for k, x in (json.loads(v) if isinstance(v, str) else v).items()]
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
_AS_STORED = {"smallint", "integer", "bigint", "uint2", "uint4", "text", "jsonb", "uuid", "interval", "time", *RANGES}


def column_decoder(type_name: str):
    """decoder() for a whole column: from a list of stored values to the Python values Arrow takes."""
    if type_name in _AS_STORED:
        return list
    decode = decoder(type_name)
    return lambda values: [decode(v) for v in values]
