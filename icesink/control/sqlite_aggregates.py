"""Postgres's aggregates that SQLite computes otherwise, as sqlite_sql.py writes them: array_agg (and Materialize's
list_agg) as the JSON array the store keeps, and an aggregate's own ORDER BY by icesink's aggregate that sorts
(catalog/ordered_aggregates.py)."""
from __future__ import annotations

from typing import Callable

from sqlglot import exp


def order_of(node: exp.Expression) -> exp.Order | None:
    """The ORDER BY of `string_agg(x, ',' ORDER BY y)` and the like (with FILTER too), as render.py writes it."""
    call = node.this if isinstance(node, exp.Filter) else node
    if not isinstance(call, (exp.GroupConcat, exp.ArrayAgg, exp.Anonymous)):
        return None
    first = (call.expressions[0] if call.expressions else None) if isinstance(call, exp.Anonymous) else call.this
    return first if isinstance(first, exp.Order) else None


def ordered_aggregate(node: exp.Expression, replace: Callable) -> exp.Expression:
    """An aggregate that takes its rows in an order, which SQLite's own cannot: icesink_ordered_agg collects them and
    sorts them as Postgres does (catalog/ordered_aggregates.py)."""
    order = order_of(node)
    call = node.this if isinstance(node, exp.Filter) else node
    value = order.this
    distinct = isinstance(value, exp.Distinct)
    value = value.expressions[0] if distinct else value
    separator = call.args.get("separator") if isinstance(call, exp.GroupConcat) else None
    spec = ",".join(("D" if o.args.get("desc") else "A") + ("F" if o.args.get("nulls_first") else "L")
                    for o in order.expressions)
    ordered = exp.Anonymous(this="icesink_ordered_agg", expressions=[
        exp.Literal.string("string" if isinstance(call, exp.GroupConcat) else "array"),
        exp.Literal.number(int(distinct)), exp.Literal.string(spec), value.transform(replace),
        separator.transform(replace) if separator is not None else exp.Null(),
        *(o.this.transform(replace) for o in order.expressions)])
    if isinstance(node, exp.Filter):
        return exp.Filter(this=ordered, expression=node.args["expression"].transform(replace))
    return ordered


def array_aggregate(node: exp.Expression) -> bool:
    return isinstance(node, exp.ArrayAgg) or (isinstance(node, exp.Anonymous) and node.name.lower() == "list_agg")


def array_agg(node: exp.Expression, replace: Callable) -> exp.Expression:
    """array_agg (and Materialize's list_agg) as the array the store keeps, JSON, its elements in the order SQLite
    aggregates the rows; NULL, as in Postgres, where no row is aggregated (with FILTER too; a window's frame keeps
    SQLite's empty array)."""
    filtered = node.args.get("expression") if isinstance(node, exp.Filter) else None
    call = node.this if isinstance(node, exp.Filter) else node
    arguments = call.expressions if isinstance(call, exp.Anonymous) else [call.this]
    array = exp.Anonymous(this="json_group_array", expressions=[a.transform(replace) for a in arguments])
    rows = exp.Count(this=exp.Star())
    if filtered is not None:
        array, rows = (exp.Filter(this=e, expression=filtered.transform(replace)) for e in (array, rows))
    if isinstance(node.parent, exp.Window):
        return array
    return exp.Case(ifs=[exp.If(this=exp.GT(this=rows, expression=exp.Literal.number(0)), true=array)])
