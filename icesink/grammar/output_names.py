"""The name of a query's output column that has no alias, as Postgres gives it (FigureColname): what psql shows,
what a view's column is called, and what an enclosing query reads it by."""
from __future__ import annotations

import dataclasses

from . import ast

UNNAMED = "?column?"
# a cast or typed literal is named by its type as Postgres spells it inside (`1::int` is `int4`)
_TYPE_NAMES = {
    "int": "int4", "integer": "int4", "smallint": "int2", "bigint": "int8", "real": "float4", "float": "float8",
    "double precision": "float8", "boolean": "bool", "decimal": "numeric", "character varying": "varchar",
    "character": "bpchar", "char": "bpchar", "timestamp with time zone": "timestamptz",
}
_LITERAL_TYPES = {"interval": "interval"}
_PREDICATES = {"exists": "exists"}
_CALL_NAMES = {"trim": "btrim"}  # Postgres's grammar reads trim(x) as btrim(x)


def output_name(item: ast.SelectItem) -> str:
    if item.alias is not None:
        return item.alias.value
    return _figured(item.expr)[0] or UNNAMED


def _figured(expr) -> tuple[str | None, int]:
    """The expression's name and how strongly it holds (Postgres's FigureColnameInternal): a cast around a name of
    strength 1 (a type's, `case`) or none names the column by its own type."""
    if isinstance(expr, ast.ColumnRef):
        return expr.column, 2
    if isinstance(expr, ast.Literal):  # Postgres reads `INTERVAL '1 day'` as a cast to its type
        return _LITERAL_TYPES.get(expr.type), 1
    if isinstance(expr, ast.Cast):
        name, strength = _figured(expr.expr)
        return (name, strength) if strength > 1 else (_TYPE_NAMES.get(expr.type.name, expr.type.name), 1)
    if isinstance(expr, ast.FunctionCall):
        if expr.name.value == "[]":  # a subscript is named by what it subscripts
            return _figured(expr.args[0])
        return expr.shown or _CALL_NAMES.get(expr.name.value, expr.name.value), 2
    if isinstance(expr, ast.Case):  # named by its ELSE where that names strongly (`ELSE x`: x), as Postgres does
        name, strength = _figured(expr.default) if expr.default is not None else (None, 0)
        return (name, strength) if strength > 1 else ("case", 1)
    if isinstance(expr, ast.RowConstructor):
        return "row", 2
    if isinstance(expr, ast.Predicate) and expr.kind in _PREDICATES:
        return _PREDICATES[expr.kind], 2
    if isinstance(expr, ast.Subquery):  # a scalar subquery is named by its one column
        return output_name(expr.query.cores[0].items[0]), 2
    return None, 0


def named_as(query: ast.Query, names: tuple[ast.Name, ...]) -> ast.Query:
    """`query` with its first output columns aliased `names`: a view's, as its catalog entry has them (whatever
    names its stored text would give them now), or those `AS v(a, b)` gives VALUES. Unchanged when a `*` leaves the
    count of its columns to its relations, or when it has fewer columns than names."""
    core = query.cores[0]
    if len(names) > len(core.items) or any(isinstance(i.expr, ast.Star) for i in core.items):
        return query
    items = tuple(dataclasses.replace(item, alias=name) for item, name in zip(core.items, names))
    return dataclasses.replace(query, cores=(dataclasses.replace(core, items=items + core.items[len(names):]),
                                             *query.cores[1:]))
