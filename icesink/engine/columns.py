"""One column type, three worlds: icesink's SQL types as Spark, Arrow and Iceberg types, and the
conversion of logged values (JSON from the engine-table log) into Python values Spark accepts."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from pyiceberg import types as it
from pyspark.sql import types as st

from .planner.types import base_type

UNBOUNDED_NUMERIC = (38, 10)  # numeric without a precision: Iceberg decimals need one


def _numeric_params(type_name: str) -> tuple[int, int]:
    if "(" not in type_name:
        return UNBOUNDED_NUMERIC
    precision, scale = type_name[type_name.index("(") + 1:-1].split(",")
    return int(precision), int(scale)


# One table for both worlds; anything else (text, uuid, jsonb, time, interval) is text everywhere.
_SIMPLE = {
    "smallint": (st.IntegerType, it.IntegerType), "integer": (st.IntegerType, it.IntegerType),
    "bigint": (st.LongType, it.LongType), "real": (st.FloatType, it.FloatType),
    "double precision": (st.DoubleType, it.DoubleType), "boolean": (st.BooleanType, it.BooleanType),
    "date": (st.DateType, it.DateType), "timestamp": (st.TimestampNTZType, it.TimestampType),
    "timestamp with time zone": (st.TimestampType, it.TimestamptzType), "bytea": (st.BinaryType, it.BinaryType),
}
_TEXT = (st.StringType, it.StringType)


def spark_type(type_name: str) -> st.DataType:
    if type_name.endswith("[]"):
        return st.ArrayType(spark_type(type_name[:-2]))
    if base_type(type_name) == "numeric":
        return st.DecimalType(*_numeric_params(type_name))
    return _SIMPLE.get(base_type(type_name), _TEXT)[0]()


def iceberg_type(type_name: str, next_id) -> it.IcebergType:
    if type_name.endswith("[]"):
        element_id = next_id()
        return it.ListType(element_id, iceberg_type(type_name[:-2], next_id), element_required=False)
    if base_type(type_name) == "numeric":
        return it.DecimalType(*_numeric_params(type_name))
    return _SIMPLE.get(base_type(type_name), _TEXT)[1]()


def _timestamp(text: str, zoned: bool):
    value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if zoned:
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    return value.replace(tzinfo=None) if value.tzinfo is None else value.astimezone(dt.timezone.utc).replace(tzinfo=None)


def decoder(type_name: str):
    """A function from a logged JSON value to the Python value Spark expects for `spark_type(type_name)`."""
    if type_name.endswith("[]"):
        inner = decoder(type_name[:-2])
        return lambda v: None if v is None else [inner(x) for x in (json.loads(v) if isinstance(v, str) else v)]
    base = base_type(type_name)
    convert = {
        "smallint": int, "integer": int, "bigint": int, "real": float, "double precision": float,
        "boolean": bool, "numeric": lambda v: Decimal(str(v)),
        "date": lambda v: dt.date.fromisoformat(str(v)),
        "timestamp": lambda v: _timestamp(str(v), False),
        "timestamp with time zone": lambda v: _timestamp(str(v), True),
        "bytea": lambda v: bytes(v) if not isinstance(v, str) else bytes.fromhex(v.removeprefix("\\x")),
    }.get(base, str)
    return lambda v: None if v is None else convert(v)
