"""Which icesink type an upstream Postgres column replicates as, shared by the planner (when a source is created) and
the ingestion (when an upstream table changes later), and which later types a column may change to in place."""
from __future__ import annotations

from .types import base_type, numeric_params

_TYPES = {
    "int2": "smallint", "int4": "integer", "int8": "bigint", "float4": "real", "float8": "double precision",
    "text": "text", "varchar": "text", "bpchar": "text", "char": "text", "name": "text", "bool": "boolean",
    "bytea": "bytea", "date": "date", "time": "time", "timestamp": "timestamp",
    "timestamptz": "timestamp with time zone", "interval": "interval", "uuid": "uuid", "jsonb": "jsonb",
    # kept as Postgres prints them: json keeps its own spelling, timetz its offset
    "json": "text", "timetz": "text",
}
MAX_PRECISION = 38  # Iceberg decimals
# what Iceberg's schema evolution can promote a column to, in icesink's type names
_WIDER = {"smallint": {"integer", "bigint"}, "integer": {"bigint"}, "real": {"double precision"}}


def replicated_type(type_name: str, kind: str | None, modifier: int, element: str | None = None,
                    element_kind: str | None = None) -> str | None:
    """The icesink type of a column whose type (after domains) is `type_name`, or None when icesink cannot replicate
    it as such. `element` is an array's element type."""
    if element is not None:
        scalar = _scalar(element, element_kind, -1)
        return scalar + "[]" if scalar is not None else None
    return _scalar(type_name, kind, modifier)


def _scalar(type_name: str, kind: str | None, modifier: int) -> str | None:
    if kind == "e":
        return "text"  # an enum's label
    if type_name == "numeric":
        if modifier < 0:
            return "numeric"  # unbounded: written as decimal(38,10)
        precision, scale = ((modifier - 4) >> 16) & 0xFFFF, (modifier - 4) & 0xFFFF
        return f"numeric({precision},{scale})" if precision <= MAX_PRECISION and scale <= precision else None
    return _TYPES.get(type_name)


def widens(old: str, new: str) -> bool:
    """Whether a column of type `old` may become `new` with every value it holds kept and every reader of the
    Iceberg table still reading it (Iceberg's type promotions: int to long, float to double, a decimal's precision
    growing with its scale kept)."""
    if new in _WIDER.get(old, ()):
        return True
    if base_type(old) == base_type(new) == "numeric" and "(" in old and "(" in new:
        (p, s), (q, t) = numeric_params(old), numeric_params(new)
        return s == t and q >= p
    return False
