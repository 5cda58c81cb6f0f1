"""icesink's SQL types as Spark and Iceberg types (model/types.py reads logged values as Python values)."""
from __future__ import annotations

from pyiceberg import types as it
from pyspark.sql import types as st

from ..model.types import (RANGE_BOUNDS, RANGE_FIELDS, UINT8_DECIMAL, base_type, map_value_type, numeric_params,
                           record_fields)

# One table for both worlds; anything else (text, uuid, jsonb, time, interval) is text everywhere.
_SIMPLE = {
    "smallint": (st.IntegerType, it.IntegerType), "integer": (st.IntegerType, it.IntegerType),
    "bigint": (st.LongType, it.LongType), "real": (st.FloatType, it.FloatType),
    "double precision": (st.DoubleType, it.DoubleType), "boolean": (st.BooleanType, it.BooleanType),
    "date": (st.DateType, it.DateType), "timestamp": (st.TimestampNTZType, it.TimestampType),
    "timestamp with time zone": (st.TimestampType, it.TimestamptzType), "bytea": (st.BinaryType, it.BinaryType),
    "uint2": (st.IntegerType, it.IntegerType), "uint4": (st.LongType, it.LongType),
}
_TEXT = (st.StringType, it.StringType)


def spark_type(type_name: str) -> st.DataType:
    if type_name.endswith("[]"):
        return st.ArrayType(spark_type(type_name[:-2]))
    if base_type(type_name) == "map":
        return st.MapType(st.StringType(), spark_type(map_value_type(type_name)))
    if base_type(type_name) == "record":
        return st.StructType([st.StructField(n, spark_type(t), True) for n, t in record_fields(type_name)])
    if base_type(type_name) == "range":  # as Materialize writes a range
        bound = spark_type(RANGE_BOUNDS[type_name])
        return st.StructType([st.StructField(n, bound if i < 2 else st.BooleanType(), True)
                              for i, n in enumerate(RANGE_FIELDS)])
    if base_type(type_name) == "numeric":
        return st.DecimalType(*numeric_params(type_name))
    if type_name == "uint8":
        return st.DecimalType(*UINT8_DECIMAL)
    return _SIMPLE.get(base_type(type_name), _TEXT)[0]()


def column_type(spark: st.DataType) -> str:
    """A Spark column's type as icesink's SQL names it, where one type maps to it alone (else unknown: Spark's own,
    which the binder leaves to Spark)."""
    if isinstance(spark, st.ArrayType):
        element = column_type(spark.elementType)
        return "unknown" if element == "unknown" else f"{element}[]"
    if isinstance(spark, st.DecimalType):
        return f"numeric({spark.precision},{spark.scale})"
    return _COLUMN_TYPES.get(type(spark), "unknown")


_COLUMN_TYPES = {st.ShortType: "smallint", st.IntegerType: "integer", st.LongType: "bigint", st.FloatType: "real",
                 st.DoubleType: "double precision", st.BooleanType: "boolean", st.StringType: "text",
                 st.DateType: "date", st.TimestampType: "timestamp with time zone", st.TimestampNTZType: "timestamp",
                 st.BinaryType: "bytea"}


def iceberg_type(type_name: str, next_id) -> it.IcebergType:
    if type_name.endswith("[]"):
        element_id = next_id()
        return it.ListType(element_id, iceberg_type(type_name[:-2], next_id), element_required=False)
    if base_type(type_name) == "record":
        return it.StructType(*(it.NestedField(next_id(), n, iceberg_type(t, next_id), required=False)
                               for n, t in record_fields(type_name)))
    if base_type(type_name) == "range":
        return it.StructType(*(it.NestedField(next_id(), n, iceberg_type(RANGE_BOUNDS[type_name], next_id) if i < 2
                                              else it.BooleanType(), required=False)
                               for i, n in enumerate(RANGE_FIELDS)))
    if base_type(type_name) == "map":
        key_id, value_id = next_id(), next_id()
        return it.MapType(key_id, it.StringType(), value_id, iceberg_type(map_value_type(type_name), next_id),
                          value_required=False)
    if base_type(type_name) == "numeric":
        return it.DecimalType(*numeric_params(type_name))
    if type_name == "uint8":
        return it.DecimalType(*UINT8_DECIMAL)
    return _SIMPLE.get(base_type(type_name), _TEXT)[1]()
