"""Column types as the planner knows them, and the relations whose columns are fixed by icesink."""
from __future__ import annotations

import re

from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import PlanError
from ..grammar import ast
from ..model.descriptors import PartitionField
from ..model.types import RANGES, Column, base_type

SYNONYMS = {
    "int2": "smallint", "smallint": "smallint",
    "int": "integer", "int4": "integer", "integer": "integer",
    "int8": "bigint", "bigint": "bigint", "long": "bigint",
    "real": "real", "float4": "real",
    "float": "double precision", "float8": "double precision", "double": "double precision",
    "double precision": "double precision",
    "numeric": "numeric", "decimal": "numeric",
    "text": "text", "string": "text", "varchar": "text", "character varying": "text", "character": "text",
    "char": "text", "bpchar": "text",
    "bool": "boolean", "boolean": "boolean",
    "date": "date", "time": "time", "time with time zone": "time",
    "timestamp": "timestamp", "timestamptz": "timestamp with time zone",
    "timestamp with time zone": "timestamp with time zone",
    "uuid": "uuid", "bytea": "bytea", "binary": "bytea",
    "json": "jsonb", "jsonb": "jsonb", "interval": "interval",
    "uint2": "uint2", "uint4": "uint4", "uint8": "uint8",
    **{r: r for r in RANGES},
}
FLOATING = {"real", "double precision"}
NESTED = {"jsonb", "map", "record", "list", "range"}
KEY_PROBLEMS = {
    "map": "a map cannot be compared as a key", "list": "a list cannot be compared as a key",
    "record": "a record cannot be compared as a key", "jsonb": "a jsonb value cannot be compared as a key",
    "range": "a range is written as an Iceberg struct, which cannot be compared as a key",
}
INTEGERS = ("smallint", "integer", "bigint")
NUMERIC_ORDER = ("smallint", "integer", "bigint", "numeric", "real", "double precision")
TEMPORAL = {"date", "timestamp", "timestamp with time zone"}
UNKNOWN = "unknown"


NamedTypes = Callable[[str], Optional[str]]  # a type CREATE TYPE made, by name: its type name (None: none such)


def normalize(data_type: ast.DataType, named: NamedTypes | None = None) -> str:
    if data_type.name == "map":
        if data_type.key is None:
            raise PlanError("a map type names its keys' and values' types: map[text=>T]", data_type.pos)
        if normalize(data_type.key, named) != "text":
            raise PlanError(f"a map's keys must be text, not {data_type.key}", data_type.key.pos)
        return f"map[text=>{normalize(data_type.value, named)}]" + "[]" * data_type.array_depth
    name = SYNONYMS.get(data_type.name)
    if name is None and named is not None:
        found = named(data_type.name)
        if found is not None:
            return found + "[]" * data_type.array_depth
    if name is None:
        raise PlanError(f"type \"{data_type.name}\" does not exist", data_type.pos)
    if name == "numeric" and data_type.params:
        precision = data_type.params[0]
        scale = data_type.params[1] if len(data_type.params) > 1 else 0
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise PlanError(f"numeric precision {precision} and scale {scale} are out of range "
                            "(precision 1 to 38, scale 0 to precision)", data_type.pos)
        name = f"numeric({precision},{scale})"
    return name + "[]" * data_type.array_depth


def key_type_problem(type_name: str) -> str | None:
    """Why a column of this type cannot be part of a KEY, or None."""
    base = base_type(type_name)
    if base in FLOATING:
        return f"a floating-point type ({type_name}) compares inexactly"
    if base in KEY_PROBLEMS:
        return KEY_PROBLEMS[base]
    if base == "interval":
        return "interval has no Iceberg equivalent to key on"
    return None


# Partition transforms: name -> (types it applies to or None for any primitive, takes a number)
_TRANSFORMS = {
    "identity": (None, False),
    "year": (TEMPORAL, False), "years": (TEMPORAL, False),
    "month": (TEMPORAL, False), "months": (TEMPORAL, False),
    "day": (TEMPORAL, False), "days": (TEMPORAL, False),
    "hour": ({"timestamp", "timestamp with time zone"}, False),
    "hours": ({"timestamp", "timestamp with time zone"}, False),
    "bucket": (set(INTEGERS) | {"numeric", "date", "time", "timestamp", "timestamp with time zone", "text",
                                "uuid", "bytea"}, True),
    "truncate": (set(INTEGERS) | {"numeric", "text", "bytea"}, True),
}


def check_partition_field(field: ast.PartitionField, columns: dict[str, Column]) -> PartitionField:
    """Validates one PARTITION BY entry against the input's columns; returns its stored form."""
    column = columns.get(field.column.value)
    if column is None:
        raise PlanError(f"PARTITION BY column \"{field.column.value}\" does not exist in the sink's input; "
                        f"columns are: {', '.join(columns)}", field.column.pos)
    transform = field.transform.value if field.transform else "identity"
    if transform not in _TRANSFORMS:
        raise PlanError(f"unknown partition transform {transform}(); expected one of identity, year, month, day,"
                        " hour, bucket(n, col), truncate(w, col)", field.transform.pos)
    allowed, takes_number = _TRANSFORMS[transform]
    where = field.transform.pos if field.transform else field.column.pos
    if takes_number and field.argument is None:
        raise PlanError(f"{transform}() needs a number and a column, as in {transform}(16, "
                        f"{column.name})", where)
    if not takes_number and field.argument is not None:
        raise PlanError(f"{transform}() takes only a column", where)
    if takes_number and field.argument < 1:
        raise PlanError(f"{transform}() needs a positive number, not {field.argument}", where)
    base = base_type(column.type)
    if base != UNKNOWN and (base in NESTED or (allowed is not None and base not in allowed)):
        raise PlanError(f"partition transform {transform}() does not apply to column \"{column.name}\" of type "
                        f"{column.type}", where)
    return PartitionField(transform.rstrip("s") if transform.endswith("s") and transform != "identity" else transform,
                          column.name, field.argument)


def _cols(spec: str) -> tuple[Column, ...]:
    out = []
    for item in re.split(r",(?![^(]*\))", spec):  # not the comma of numeric(15,2)
        name, _, type_name = item.strip().partition(" ")
        out.append(Column(name, type_name, nullable=False))
    return tuple(out)


@dataclass(frozen=True)
class GeneratedRelation:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]


def _rel(name: str, spec: str, key: str) -> GeneratedRelation:
    return GeneratedRelation(name, _cols(spec), tuple(key.split(",")))


# Materialize's load generator shapes. COUNTER is a single relation named after the source.
LOAD_GENERATORS: dict[str, tuple[GeneratedRelation, ...]] = {
    "counter": (_rel("", "counter bigint", "counter"),),
    "key value": (_rel("", "key bigint, value text, round bigint", "key"),),
    "auction": (
        _rel("organizations", "id bigint, name text", "id"),
        _rel("users", "id bigint, org_id bigint, name text", "id"),
        _rel("accounts", "id bigint, org_id bigint, balance bigint", "id"),
        _rel("auctions", "id bigint, seller bigint, item text, end_time timestamp with time zone", "id"),
        _rel("bids", "id bigint, buyer bigint, auction_id bigint, amount integer, "
                     "bid_time timestamp with time zone", "id"),
    ),
    "tpch": (
        _rel("customer", "c_custkey bigint, c_name text, c_address text, c_nationkey bigint, c_phone text, "
                         "c_acctbal numeric(15,2), c_mktsegment text, c_comment text", "c_custkey"),
        _rel("lineitem", "l_orderkey bigint, l_partkey bigint, l_suppkey bigint, l_linenumber integer, "
                         "l_quantity numeric(15,2), l_extendedprice numeric(15,2), l_discount numeric(15,2), "
                         "l_tax numeric(15,2), l_returnflag text, l_linestatus text, l_shipdate date, "
                         "l_commitdate date, l_receiptdate date, l_shipinstruct text, l_shipmode text, "
                         "l_comment text", "l_orderkey,l_linenumber"),
        _rel("nation", "n_nationkey bigint, n_name text, n_regionkey bigint, n_comment text", "n_nationkey"),
        _rel("orders", "o_orderkey bigint, o_custkey bigint, o_orderstatus text, o_totalprice numeric(15,2), "
                       "o_orderdate date, o_orderpriority text, o_clerk text, o_shippriority integer, "
                       "o_comment text", "o_orderkey"),
        _rel("part", "p_partkey bigint, p_name text, p_mfgr text, p_brand text, p_type text, p_size integer, "
                     "p_container text, p_retailprice numeric(15,2), p_comment text", "p_partkey"),
        _rel("partsupp", "ps_partkey bigint, ps_suppkey bigint, ps_availqty integer, "
                         "ps_supplycost numeric(15,2), ps_comment text", "ps_partkey,ps_suppkey"),
        _rel("region", "r_regionkey bigint, r_name text, r_comment text", "r_regionkey"),
        _rel("supplier", "s_suppkey bigint, s_name text, s_address text, s_nationkey bigint, s_phone text, "
                         "s_acctbal numeric(15,2), s_comment text", "s_suppkey"),
    ),
}
