"""Planning of SELECT over the system catalog, SHOW, and the statements that need the runtime."""
from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Callable

import sqlglot
from sqlglot import exp

from ..catalog.schema import SCHEMA_OF_VIEW, VIEWS
from ..catalog.sqlite import INTERVAL_COLLATION, add_functions
from ..catalog.sql_functions import DATE_CUTS, postgres_regex, time_zone
from ..errors import IcesinkError, NotSupportedYet, PlanError
from ..model.types import Column, base_type
from .types import UNKNOWN
from ..model.intervals import interval_parts, interval_text
from ..grammar import ast
from .binder import KIND_WORDS, RELATION_KINDS, Binder, describe
from ..engine.tables import generated_name, is_engine_table, storage_name
from ..grammar import render
from ..grammar.render import identifier
from .plans import GeneratorQueryPlan, IcebergQueryPlan, QueryPlan
from .query import (Relation, bind_query, check_distinct_on_order, check_qualified_columns, expand_distinct_on_stars,
                    table_refs, walk)

_SYSTEM_SCHEMAS = ("mz_catalog", "mz_internal")
_RUNTIME = ("a query reads engine tables, system views, what Postgres sources replicate and load generators make, "
            "and the views over them")

_SHOW = {
    "secrets": ("SELECT name FROM mz_secrets", ""),
    "connections": ("SELECT name, type FROM mz_connections", ""),
    "sources": ("SELECT name, type, cluster_id AS cluster FROM mz_sources", ""),
    "subsources": ("SELECT name, type FROM mz_sources", "type = 'subsource'"),
    "tables": ("SELECT name FROM mz_tables", ""),
    "materialized views": ("SELECT name, cluster_id AS cluster FROM mz_materialized_views", ""),
    "sinks": ("SELECT name, type, cluster_id AS cluster FROM mz_sinks", ""),
    "objects": ("SELECT name, type FROM mz_objects", ""),
    "types": ("SELECT name, category FROM mz_types", ""),
}
_CREATE_VIEW = {"sink": "mz_sinks", "connection": "mz_connections", "source": "mz_sources",
                "table": "mz_tables", "materialized-view": "mz_materialized_views"}


Replicated = list  # (object id, name, source id) of each relation a Postgres source replicates that a query reads
MAX_VIEW_DEPTH = 32  # views over views, inlined: deeper is a cycle no CREATE could make, or a mistake


def engine_table_storage(binder: Binder, ref: ast.TableRef, replicated: Replicated | None = None,
                         depth: int = 0, generated: list | None = None) -> str | exp.Expression | None:
    """What a query over engine tables reads for the relation `ref` names: an engine table's storage (also that of a
    subsource or table a Postgres source replicates into icesink's store, noted in `replicated`, and, when
    `generated` is given, the table that keeps a load generator's relation, noted there by id), a materialized
    view's query over such relations (inlined); None for a system view. Raises for anything else."""
    name, qualifier = ref.name.name, ref.name.qualifier
    if qualifier and qualifier[0] in _SYSTEM_SCHEMAS:
        if name in VIEWS and len(qualifier) == 1 and SCHEMA_OF_VIEW[name] == qualifier[0]:
            return None
        hint = f"; {name} is in {SCHEMA_OF_VIEW[name]}" if name in VIEWS else ""
        raise PlanError(f"relation \"{ref.name}\" does not exist{hint}", ref.name.pos)
    if not qualifier and name in VIEWS:
        return None
    obj = binder.find(ref.name)
    if obj is None:
        raise PlanError(f"relation \"{ref.name}\" does not exist", ref.name.pos)
    if obj.kind not in RELATION_KINDS:
        raise PlanError(f"'{ref.name}' is {describe(obj)}, which cannot be queried", ref.name.pos)
    if is_engine_table(obj):
        return storage_name(obj.id)
    source_id = getattr(obj.descriptor, "source_id", None)
    source = binder.catalog.get_by_id(source_id) if source_id else None
    if obj.kind in ("subsource", "table") and source is not None and source.type == "postgres":
        if replicated is not None:
            replicated.append((obj.id, obj.name, source.id))
        return storage_name(obj.id)
    if obj.kind == "materialized-view":
        return _view_query(binder, obj, replicated, depth, ref.name.pos, generated)
    if generated is not None and generator_source(binder, obj) is not None:
        generated.append(obj.id)
        return storage_name(obj.id)
    raise NotSupportedYet(f"reading {KIND_WORDS[obj.kind]} '{obj.name}' is not supported yet: {_RUNTIME}",
                          ref.name.pos)


def _view_query(binder: Binder, view, replicated: Replicated | None, depth: int, pos: int,
                generated: list | None = None) -> exp.Expression:
    """A materialized view's query, its relations named as SQLite holds them: what it holds now, computed from its
    inputs' current rows (a view over system views cannot be, yet)."""
    from ..grammar.parser import parse_statement

    if depth >= MAX_VIEW_DEPTH:
        raise PlanError(f"materialized view '{view.name}' reads views {MAX_VIEW_DEPTH} deep", pos)
    statement = parse_statement(view.descriptor.query_sql)
    stored = {}
    for inner in table_refs(statement.query):
        try:
            found = engine_table_storage(binder, inner, replicated, depth + 1, generated)
        except NotSupportedYet as exc:
            raise NotSupportedYet(f"reading materialized view '{view.name}': {exc.message}", pos) from None
        if found is None:
            raise NotSupportedYet(f"reading materialized view '{view.name}', which reads system views, is not "
                                  "supported yet", pos)
        stored[inner.name.name] = found
    return render.query(statement.query, lambda inner: _named(stored[inner.name.name], inner), named=True)


def _named(stored: str | exp.Expression, ref: ast.TableRef) -> exp.Expression:
    """A relation of a query over engine tables, under the name (or alias) the query gives it."""
    alias = exp.TableAlias(this=identifier(ref.alias if ref.alias is not None else ref.name.parts[-1]))
    if isinstance(stored, str):
        return exp.Table(this=exp.to_identifier(stored), alias=alias)
    return exp.Subquery(this=stored, alias=alias)




def _postgres_arithmetic(tree: exp.Expression) -> exp.Expression:
    """`/` and `%` as Postgres computes them (SQLite answers NULL for a division by zero)."""
    def replace(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Div, exp.Mod)):
            return _division(node, replace)
        return node
    return tree.transform(replace)


# what an operand may hold to be written twice over: SQLite computes it again, at once and with no side effect
_CHEAP = (exp.Column, exp.Identifier, exp.Literal, exp.Paren, exp.Add, exp.Sub, exp.Mul, exp.Neg)


def cheap(value: exp.Expression) -> bool:
    """Whether `value` may be written twice over (_CHEAP)."""
    return all(isinstance(n, _CHEAP) for n in value.walk())


def typeof_is(value: exp.Expression, kind: str) -> exp.Expression:
    return exp.EQ(this=exp.Anonymous(this="typeof", expressions=[value.copy()]), expression=exp.Literal.string(kind))


def _division(node: exp.Div | exp.Mod, replace: Callable) -> exp.Expression:
    """`/` or `%` as Postgres computes it. Of two integers (by a divisor other than 0 and -1, whose answers SQLite
    and Postgres differ on), in SQLite's own terms, which truncate toward zero as Postgres does; of anything else,
    by icesink_div or icesink_mod. `INSERT … SELECT … % n FROM generate_series(…)` called one per row."""
    dividend, divisor = node.this, node.expression
    name = "icesink_div" if isinstance(node, exp.Div) else "icesink_mod"
    if not (cheap(dividend) and cheap(divisor)):
        # a replaced node's operands are not visited again: a division among them is converted here
        return exp.Anonymous(this=name, expressions=[dividend.transform(replace), divisor.transform(replace)])
    call = exp.Anonymous(this=name, expressions=[dividend, divisor])
    integers = exp.and_(typeof_is(dividend, "integer"), typeof_is(divisor, "integer"),
                        exp.Not(this=exp.In(this=divisor.copy(), expressions=[exp.Literal.number(0),
                                                                              exp.Literal.number(-1)])))
    native = (exp.Div(this=dividend.copy(), expression=divisor.copy(), typed=True) if isinstance(node, exp.Div)
              else exp.Mod(this=dividend.copy(), expression=divisor.copy()))
    return exp.Case(ifs=[exp.If(this=integers, true=exp.Paren(this=native))], default=call)


# Postgres's functions SQLite lacks, by sqlglot's node for them: the name registered in catalog/sql_functions.py, and
# the node's arguments in their order
_FUNCTION_NAMES = {exp.Repeat: ("repeat", ("this", "times")), exp.Left: ("icesink_left", ("this", "expression")),
                   exp.Right: ("icesink_right", ("this", "expression")), exp.MD5: ("md5", ("this",)),
                   exp.Concat: ("icesink_concat", ("expressions",)),
                   exp.SplitPart: ("split_part", ("this", "delimiter", "part_index")),
                   exp.Pad: (None, ("this", "expression", "fill_pattern")),
                   exp.RegexpLike: ("icesink_regex", ("this", "expression")),
                   exp.RegexpILike: ("icesink_iregex", ("this", "expression"))}


def _arguments(node: exp.Expression, names: tuple[str, ...]) -> list[exp.Expression]:
    found = []
    for name in names:
        value = node.args.get(name)
        found.extend(value if isinstance(value, list) else [value] if value is not None else [])
    return found


def _postgres_functions(tree: exp.Expression) -> exp.Expression:
    """Calls of Postgres's functions as SQLite runs them: the functions SQLite lacks by the names they are
    registered as, and `generate_series` in a select list as a series joined to the rest of the query."""
    def replace(node: exp.Expression) -> exp.Expression:
        known = _FUNCTION_NAMES.get(type(node))
        if known is not None:
            name = known[0] or ("lpad" if node.args.get("is_left") else "rpad")
            # a replaced node's arguments are not visited again: they are converted here
            return exp.Anonymous(this=name, expressions=[a.transform(replace) for a in _arguments(node, known[1])])
        if isinstance(node, exp.Anonymous) and node.name.lower() == "every":  # Postgres's other name for bool_and
            return exp.Min(this=node.expressions[0].transform(replace)) if len(node.expressions) == 1 else node
        if isinstance(node, exp.Anonymous) and node.name.lower() == "string_agg":
            return exp.Anonymous(this="group_concat", expressions=[a.transform(replace) for a in node.expressions])
        if isinstance(node, exp.Anonymous) and node.name.lower() == "row":  # a record, as its fields in JSON
            return exp.Anonymous(this="icesink_row", expressions=[a.transform(replace) for a in node.expressions])
        if isinstance(node, (exp.Add, exp.Sub)):
            moved = _moved_by_interval(node, replace)
            return moved if moved is not None else _text_arithmetic(node, replace)
        if isinstance(node, exp.Cast):
            return _cast(node, replace)
        if isinstance(node, exp.Substring):
            return _substring(node, replace)
        if isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ)) and (
                _is_interval(node.this) or _is_interval(node.expression)):
            # intervals compare by their length: both sides' epochs (a literal's, and a `ts - ts` one's)
            return type(node)(**{key: exp.Anonymous(this="date_part", expressions=[
                exp.Literal.string("epoch"), side.transform(replace)])
                for key, side in (("this", node.this), ("expression", node.expression))})
        if isinstance(node, exp.Interval):  # an interval on its own: its text, in Postgres's output form
            return exp.Literal.string(_interval_text(node))
        if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
            unit = node.args.get("unit")
            return _date_trunc(unit.name if isinstance(unit, (exp.Var, exp.Literal)) else str(unit),
                               node.this.transform(replace))
        return node
    tree = tree.transform(replace)
    for select in list(tree.find_all(exp.Select)):
        _series_joined(select)
    return tree


# casts SQLite would get wrong, by the type's name in sqlglot's tree: DATETIME() drops a timestamp's fraction and
# zone, and a type named with INT in it (TIMESTAMPTZ, INTERVAL) takes the number its text begins with; they go
# through the column type's input function (icesink_in), as Postgres reads a value of the type
_CAST_TYPES = {exp.DataType.Type.TIMESTAMP: "timestamp", exp.DataType.Type.TIMESTAMPTZ: "timestamp with time zone",
               exp.DataType.Type.INTERVAL: "interval"}


def _cast(node: exp.Cast, replace: Callable) -> exp.Expression:
    """A cast as Postgres computes it, its value converted here (a replaced node's arguments are not visited
    again): by the type's input function, `numeric(p, s)` as a number rounded to its scale (SQLite's CAST keeps
    every digit), `boolean` from text as Postgres reads it and from a number as whether it is not 0 (SQLite's
    would read 'true' as 0, and keep 2 as 2); any other by SQLite's own."""
    value, to = node.this.transform(replace), node.to
    if to.this in _CAST_TYPES:
        return exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string(_CAST_TYPES[to.this]), exp.Null(),
                                                             value])
    if to.is_type(exp.DataType.Type.DECIMAL) and len(to.expressions) == 2:
        return exp.Anonymous(this="round", expressions=[exp.Cast(this=value, to=exp.DataType.build("double")),
                                                        exp.Literal.number(to.expressions[1].name)])
    if to.is_type(exp.DataType.Type.BOOLEAN) and _repeatable(value):
        text = exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string("boolean"), exp.Null(), value.copy()])
        return exp.Case(ifs=[exp.If(this=typeof_is(value, "text"), true=text)],
                        default=exp.NEQ(this=value.copy(), expression=exp.Literal.number(0)))
    if to.is_type(exp.DataType.Type.BOOLEAN):
        return exp.Cast(this=value, to=exp.DataType.build("int"))
    return exp.Cast(this=value, to=to)


def _substring(node: exp.Substring, replace: Callable) -> exp.Expression:
    """substring (and substr) as Postgres counts: SQLite's own where the bounds are literals (worked out as for
    Spark, render.literal_substring), else by icesink_substring, since SQLite reads a negative start from the
    end."""
    text, start, count = (node.args.get(k) for k in ("this", "start", "length"))
    fixed = render.literal_substring(node, text.transform(replace))
    if fixed is not None:
        return fixed
    return exp.Anonymous(this="icesink_substring", expressions=[a.transform(replace) for a in (text, start, count)
                                                                if a is not None])


def _text_arithmetic(node: exp.Add | exp.Sub, replace: Callable) -> exp.Expression:
    """`+` and `-` as Postgres computes them where an operand is a date or timestamp, which SQLite holds as text
    (and would add to or subtract from as the number the text begins with): by icesink_add or icesink_sub, which
    move a date by days and give the interval or days between moments; anything else in SQLite's own terms. The
    operands are converted first; one that is large, or not deterministic, is not written again in a CASE: the
    call then takes every row."""
    name = "icesink_add" if isinstance(node, exp.Add) else "icesink_sub"
    if _numbers_only(node):  # `1 + 1 + …`: no moment among them, and a long chain stays as flat as written
        return node
    left, right = node.this.transform(replace), node.expression.transform(replace)
    if not (_repeatable(left) and _repeatable(right)):
        return exp.Anonymous(this=name, expressions=[left, right])
    call = exp.Anonymous(this=name, expressions=[left.copy(), right.copy()])
    native = type(node)(this=left.copy(), expression=right.copy())
    return exp.Case(ifs=[exp.If(this=exp.or_(_moment_text(left), _moment_text(right)), true=call)],
                    default=exp.Paren(this=native))


def _repeatable(value: exp.Expression) -> bool:
    """Whether a converted operand may be written again in a CASE that tests it (unlike `cheap`, which judges an
    operand before it is converted, it may hold calls SQLite makes at once): small, and the same each time."""
    return not value.find(exp.Rand, exp.Select) and sum(1 for _ in value.walk()) <= _CASE_NODES


_CASE_NODES = 20  # nodes of an operand written up to four times over: beyond, one call costs less than the copies


def _numbers_only(node: exp.Expression) -> bool:
    """Whether `node` is arithmetic of number literals alone."""
    return all(isinstance(n, (exp.Add, exp.Sub, exp.Mul, exp.Neg, exp.Paren)) or (
        isinstance(n, exp.Literal) and not n.is_string) for n in node.walk())


def _moment_text(value: exp.Expression) -> exp.Expression:
    """Whether `value` is a date or timestamp as the store keeps it ('2026-01-31…'), in SQLite's own terms."""
    return exp.and_(typeof_is(value, "text"),
                    exp.Glob(this=value.copy(), expression=exp.Literal.string("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*")))


def _is_interval(node: exp.Expression) -> bool:
    """Whether `node` is an interval literal: `INTERVAL '1 hour'`, `'1 hour'::interval`."""
    while isinstance(node, exp.Paren):
        node = node.this
    return isinstance(node, exp.Interval) or (isinstance(node, exp.Cast) and node.this.is_string
                                              and node.to.is_type(exp.DataType.Type.INTERVAL))


def _interval_text(node: exp.Expression) -> str:
    """The interval a literal writes (_is_interval), in Postgres's output form."""
    while isinstance(node, exp.Paren):
        node = node.this
    text = node.this.name
    unit = node.args.get("unit") if isinstance(node, exp.Interval) else None
    text = f"{text} {unit.name}" if unit is not None else text
    try:
        return interval_text(*interval_parts(text))
    except (TypeError, ValueError):
        raise PlanError(f'invalid input syntax for type interval: "{text}"') from None


def _intervals_by_length(tree: exp.Expression) -> exp.Expression:
    """What ORDER BY, `min`, `max` and a comparison of two differences take that may be an interval (a difference,
    an interval cast or literal, or an output that is one) compared by its length under INTERVAL_COLLATION, as
    Postgres compares intervals, rather than as text ('9 days' after '10 days'). The collation compares text alone:
    a difference of numbers is unaffected. An interval column of a view or a subquery still compares as text."""
    for select in list(tree.find_all(exp.Select)):
        items = select.expressions
        outputs = {item.alias: item.this for item in items if isinstance(item, exp.Alias)}

        def may_be_interval(node: exp.Expression) -> bool:
            while isinstance(node, exp.Paren):
                node = node.this
            if isinstance(node, exp.Column) and not node.table and node.name in outputs:
                node = outputs[node.name]
            elif (isinstance(node, exp.Literal) and node.is_int and isinstance(node.parent, exp.Ordered)
                  and 1 <= int(node.name) <= len(items)):  # ORDER BY an ordinal
                node = items[int(node.name) - 1].unalias()
            return (isinstance(node, exp.Sub) and not _numbers_only(node)) or isinstance(node, exp.Interval) or (
                isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.INTERVAL))
        mine = [node for node in select.find_all(exp.Max, exp.Min, exp.Ordered, exp.GT, exp.GTE, exp.LT, exp.LTE,
                                                  exp.EQ, exp.NEQ) if node.parent_select is select]
        operands = [node.this for node in mine if isinstance(node, (exp.Max, exp.Min, exp.Ordered))]
        # two differences compared (one with a literal compares epochs); a collation on one side alone would keep
        # an index of the other from serving a join on a computed key (`w.id = e.user_id - 1`)
        operands += [node.this for node in mine if isinstance(node, exp.Binary) and may_be_interval(node.expression)
                     and not _is_interval(node.this) and not _is_interval(node.expression)]
        for operand in operands:
            if may_be_interval(operand):
                operand.replace(exp.Collate(this=exp.Paren(this=operand.copy()),
                                            expression=exp.Var(this=INTERVAL_COLLATION)))
    return tree


def _moved_by_interval(node: exp.Add | exp.Sub, replace: Callable) -> exp.Expression | None:
    """`moment ± interval` (or `interval + moment`) as icesink_plus_interval computes it, which SQLite's own date
    functions cannot: they drop microseconds and a zone. None when neither operand is an interval literal."""
    left, right = node.this, node.expression
    if _is_interval(right):
        moment, interval, sign = left, _interval_text(right), -1 if isinstance(node, exp.Sub) else 1
    elif isinstance(node, exp.Add) and _is_interval(left):
        moment, interval, sign = right, _interval_text(left), 1
    else:
        return None
    # a replaced node's operands are not visited again: the moment is converted here
    return exp.Anonymous(this="icesink_plus_interval", expressions=[
        moment.transform(replace), exp.Literal.string(interval), exp.Literal.number(sign)])


def _date_trunc(unit: str, value: exp.Expression) -> exp.Expression:
    """date_trunc(unit, value) as SQLite runs it. Of a column, to the day, hour or minute: a timestamp in the store's
    own form ('2026-11-01 10:42:07') is cut in SQLite's own terms, as sql_functions.date_trunc would cut it, and
    anything else goes to that function. A view keyed by the hour computes it for each row a write moves in its
    index: 50,000 rows' UPDATE spent 0.29 s of its 1.9 s calling Python."""
    call = exp.Anonymous(this="icesink_date_trunc", expressions=[exp.Literal.string(unit), value])
    cut = DATE_CUTS.get(unit.lower())
    if cut is None or not isinstance(value, exp.Column):
        return call
    def text(*arguments) -> exp.Expression:
        return exp.Anonymous(this="substr", expressions=[value.copy(), *map(exp.Literal.number, arguments)])
    canonical = exp.and_(
        typeof_is(value, "text"),
        exp.EQ(this=exp.Anonymous(this="length", expressions=[value.copy()]), expression=exp.Literal.number(19)),
        exp.EQ(this=text(11, 1), expression=exp.Literal.string(" ")),
        exp.EQ(this=text(5, 1), expression=exp.Literal.string("-")))
    cut_text = exp.DPipe(this=text(1, cut[0]), expression=exp.Literal.string(cut[1]))
    return exp.Case(ifs=[exp.If(this=canonical, true=cut_text)], default=call)


def _series(call: exp.Expression, column: str) -> exp.Expression:
    """generate_series(start, end[, step]) as a recursive query SQLite runs, its values in `column`."""
    start, end = (call.args[k].sql("sqlite") for k in ("start", "end"))
    step = (call.args.get("step") or exp.Literal.number(1)).sql("sqlite")
    return sqlglot.parse_one(
        f"SELECT value AS {exp.to_identifier(column).sql('sqlite')} FROM (WITH RECURSIVE s(value) AS (SELECT "
        f"{start} UNION ALL SELECT value + ({step}) FROM s WHERE CASE WHEN ({step}) > 0 THEN value + ({step}) <= "
        f"({end}) ELSE value + ({step}) >= ({end}) END) SELECT value FROM s)", read="sqlite")


def _series_joined(select: exp.Select) -> None:
    """generate_series as Postgres runs it: in FROM, a relation of one column named as its alias; in a select list,
    a row per value, joined to the rest of the query (its arguments constant)."""
    for table in list(select.find_all(exp.Table)):
        if isinstance(table.this, (exp.ExplodingGenerateSeries, exp.GenerateSeries)):
            name = table.alias or "generate_series"
            table.replace(exp.Subquery(this=_series(table.this, name),
                                       alias=exp.TableAlias(this=exp.to_identifier(name))))
    calls = [c for e in select.expressions for c in e.find_all(exp.ExplodingGenerateSeries, exp.GenerateSeries)]
    for index, call in enumerate(calls):
        alias = f"_icesink_series{index}"
        value = exp.column("value", table=alias)
        relation = exp.Subquery(this=_series(call, "value"), alias=exp.TableAlias(this=exp.to_identifier(alias)))
        call.replace(exp.alias_(value, "generate_series") if call.parent is select else value)
        if select.args.get("from_") is None:
            select.set("from_", exp.From(this=relation))
        else:
            select.append("joins", exp.Join(this=relation, kind="CROSS"))


def sqlite_sql(tree: exp.Expression) -> str:
    """A statement's tree as SQLite runs it: columns lose schema qualifiers (system views live in one schema here),
    arithmetic and functions follow Postgres, DISTINCT ON is a ranking."""
    for column in tree.find_all(exp.Column):
        column.set("db", None)
        column.set("catalog", None)
    tree = _postgres_functions(_postgres_arithmetic(_intervals_by_length(tree)))
    for select in list(tree.find_all(exp.Select)):
        if select.args.get("distinct") is not None and select.args["distinct"].args.get("on") is not None:
            replaced = _distinct_on(select)
            if select is tree:
                tree = replaced
            else:
                select.replace(replaced)
    return tree.sql(dialect="sqlite")


def distinct_on_terms(select: exp.Select) -> tuple[list[exp.Expression], list[tuple[exp.Expression, exp.Ordered]]]:
    """A `SELECT DISTINCT ON (…) … ORDER BY …`'s DISTINCT ON expressions, and each ORDER BY item's expression with
    the item: an ordinal or an output name stands for its column's expression."""
    items = select.expressions
    outputs = {item.alias: item.this for item in items if isinstance(item, exp.Alias)}

    def resolved(value: exp.Expression) -> exp.Expression:
        if isinstance(value, exp.Literal) and value.is_int and 1 <= int(value.name) <= len(items):
            return items[int(value.name) - 1].unalias().copy()
        if isinstance(value, exp.Column) and not value.table and value.name in outputs:
            return outputs[value.name].copy()
        return value.copy()

    order = select.args.get("order")
    return ([resolved(e) for e in select.args["distinct"].args["on"].expressions],
            [(resolved(o.this), o) for o in (order.expressions if order else [])])


def _distinct_on(select: exp.Select) -> exp.Select:
    """`SELECT DISTINCT ON (k) … ORDER BY k, o` as SQLite runs it: the rows ranked within each k by the ORDER BY
    (ROW_NUMBER() OVER (PARTITION BY k ORDER BY …)), the first of each kept, under the names the query gives its
    columns. An ordinal or an output name in DISTINCT ON or ORDER BY stands for its column's expression."""
    items = select.expressions
    on, ordered = distinct_on_terms(select)
    inner = select.copy()
    for key in ("distinct", "order", "limit", "offset"):
        inner.set(key, None)
    names = [item.alias_or_name if isinstance(item, (exp.Alias, exp.Column)) else item.sql(dialect="sqlite")
             for item in items]
    rank = exp.Window(this=exp.RowNumber(), partition_by=on,
                      order=exp.Order(expressions=[exp.Ordered(this=v, desc=o.args.get("desc"),
                                                               nulls_first=o.args.get("nulls_first"))
                                                   for v, o in ordered]) if ordered else None)
    inner.set("expressions", [exp.alias_(item.unalias().copy(), f"_icesink_c{i}", quoted=True)
                              for i, item in enumerate(items)]
              + [exp.alias_(rank, "_icesink_rank", quoted=True)]
              + [exp.alias_(v, f"_icesink_o{i}", quoted=True) for i, (v, _) in enumerate(ordered)])
    outer = exp.select(*[exp.alias_(exp.column(f"_icesink_c{i}", quoted=True), name, quoted=True)
                         for i, name in enumerate(names)]).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("_icesink_distinct_on"))))
    outer = outer.where(exp.EQ(this=exp.column("_icesink_rank", quoted=True), expression=exp.Literal.number(1)))
    if ordered:
        outer.set("order", exp.Order(expressions=[
            exp.Ordered(this=exp.column(f"_icesink_o{i}", quoted=True), desc=o.args.get("desc"),
                        nulls_first=o.args.get("nulls_first")) for i, (_, o) in enumerate(ordered)]))
    for key in ("limit", "offset"):
        if select.args.get(key) is not None:
            outer.set(key, select.args[key].copy())
    return outer


def sqlite_tables(binder: Binder, refs: list[ast.TableRef], replicated: Replicated | None = None,
                  generated: list | None = None) -> tuple[Callable, bool]:
    """How each relation of a query is named in SQLite (system views by their name, engine tables by their
    storage, views by their query, aliased as written so that `orders.id` keeps its meaning), and whether they are
    engine tables. Relations a Postgres source replicates are noted in `replicated`; with `generated`, a load
    generator's relations are read from the tables that keep them, noted there."""
    storage = {ref.name.name: engine_table_storage(binder, ref, replicated, generated=generated) for ref in refs}
    tables = {name for name, stored in storage.items() if stored is not None}
    if tables and len(tables) != len(storage):
        raise NotSupportedYet("a query that joins system views with other relations is not supported yet")

    def name_table(ref: ast.TableRef) -> exp.Expression:
        stored = storage[ref.name.name]
        if stored is None:
            return exp.Table(this=identifier(ref.name.parts[-1]))
        return _named(stored, ast.TableRef(ref.name))  # the alias, if any, is set by the caller
    return name_table, bool(tables)


def _plan_iceberg_query(binder: Binder, stmt: ast.Select, refs: list[ast.TableRef]) -> IcebergQueryPlan:
    views, names = {}, {}
    for index, ref in enumerate(refs):
        if not ref.iceberg:
            raise NotSupportedYet("a query that joins ICEBERG tables with other relations is not supported yet",
                                  ref.name.pos)
        if len(ref.name.parts) < 3:
            raise PlanError(f"name the Iceberg table as connection.namespace.table, not {ref.name}", ref.name.pos)
        connection = binder.connection(ast.ObjectName(ref.name.parts[:1]), "iceberg-catalog")
        names[id(ref)] = view = f"iceberg_{index}"
        views[view] = (connection, tuple(p.value for p in ref.name.parts[1:-1]), ref.name.name)

    def name_table(ref: ast.TableRef) -> exp.Table:
        return exp.Table(this=exp.to_identifier(names[id(ref)]),
                         alias=exp.TableAlias(this=identifier(ref.name.parts[-1])))
    return IcebergQueryPlan(render.spark_sql(render.query(stmt.query, name_table, named=True)), views)


def generator_source(binder: Binder, obj):
    """The load generator source whose relation `obj` is (the source itself, or a subsource of it); else None."""
    if obj is None:
        return None
    if obj.kind == "source":
        return obj if obj.type == "load-generator" else None
    source_id = getattr(obj.descriptor, "source_id", None)
    source = binder.catalog.get_by_id(source_id) if source_id else None
    return source if source is not None and source.type == "load-generator" else None


def _generator_of(binder: Binder, obj) -> bool:
    """Whether `obj` is a load generator's relation, or a materialized view over one."""
    if obj is not None and obj.kind == "materialized-view":
        from ..grammar.parser import parse_statement

        return any(_generator_of(binder, binder.find(ref.name))
                   for ref in table_refs(parse_statement(obj.descriptor.query_sql).query))
    return generator_source(binder, obj) is not None


def over_generators(binder: Binder, query: ast.Query,
                    refused: Callable[[ast.TableRef], Exception]) -> tuple[exp.Expression, dict]:
    """`query` over load generators' relations, each named by `generated_name`, the views between inlined; and the
    relations it reads, by id. `refused(ref)` is the error for a relation that is not a load generator's."""
    from ..grammar.parser import parse_statement

    relations: dict[str, object] = {}

    def name_table(ref: ast.TableRef, depth: int = 0) -> exp.Expression:
        obj = binder.find(ref.name)
        alias = exp.TableAlias(this=identifier(ref.alias if ref.alias is not None else ref.name.parts[-1]))
        if obj is not None and obj.kind == "materialized-view":
            if depth >= MAX_VIEW_DEPTH:
                raise PlanError(f"materialized view '{obj.name}' reads views {MAX_VIEW_DEPTH} deep", ref.name.pos)
            inner = parse_statement(obj.descriptor.query_sql).query
            return exp.Subquery(this=render.query(inner, lambda r: name_table(r, depth + 1)), alias=alias)
        if generator_source(binder, obj) is None:
            raise refused(ref)
        relations[obj.id] = obj
        return exp.Table(this=exp.to_identifier(generated_name(obj.id)), alias=alias)
    return render.query(query, name_table, named=True), relations


def _plan_generator_query(tree: exp.Expression, relations: dict) -> GeneratorQueryPlan:
    """A query over load generators' relations alone (`over_generators`'s): Spark generates each one's rows up to
    now and runs the query."""
    if any(isinstance(f, exp.Anonymous) and f.name.lower() == "timezone" for f in tree.find_all(exp.Anonymous)):
        raise NotSupportedYet("AT TIME ZONE in a query over load generators alone (which Spark answers) is not "
                              "supported yet")
    return GeneratorQueryPlan(render.spark_sql(tree), {generated_name(i): obj for i, obj in relations.items()})


def _with_shows(binder: Binder, name_table: Callable) -> Callable:
    """`name_table`, and each `(SHOW CREATE …)` in FROM as the system view's row it shows."""
    def name(ref):
        if not isinstance(ref, ast.ShowRef):
            return name_table(ref)
        plan = plan_show_create(binder, ref.show)
        shown = sqlglot.parse_one(plan.sql.replace("?", "'" + plan.params[0].replace("'", "''") + "'"),
                                  read="sqlite")
        return exp.Subquery(this=shown)
    return name


def check_table_functions(query: ast.Query) -> None:
    """generate_series is the one table function that runs (as SQLite runs it: queries.py `_series`)."""
    for node in walk(query):
        if isinstance(node, ast.FunctionRef) and node.call.name.value != "generate_series":
            raise NotSupportedYet(f"the table function {node.call.name.value}() is not supported yet; "
                                  "generate_series() is", node.call.name.pos)


# functions whose value changes while a view's inputs do not: Materialize refuses them in a materialized view
UNMATERIALIZABLE = frozenset({"now", "current_timestamp", "random"})


def check_functions(query, materialized: bool = False) -> None:
    """Refuses, where it is written, a call SQLite would not run (a function it lacks, or the wrong number of
    arguments), so that a view is refused when it is created rather than failing each batch; in a materialized
    view, a function Materialize cannot materialize either."""
    for call in walk(query):
        if isinstance(call, ast.Predicate) and call.kind in ("regex", "iregex"):
            _check_literal(call.operands[1], postgres_regex)
        if not isinstance(call, ast.FunctionCall) or call.name.value == "[]":
            continue
        name, pos = call.name.value, call.name.pos
        if name == "timezone" and len(call.args) == 2:
            _check_literal(call.args[0], time_zone)
        if name == "mz_now":
            raise NotSupportedYet("mz_now() is not supported yet: icesink's views keep no temporal filters", pos)
        if name in ("substring", "substr") and len(call.args) == 3 and _negative(call.args[2]):
            raise PlanError("negative substring length not allowed", call.args[2].pos)
        if materialized and name in UNMATERIALIZABLE:
            raise PlanError(f"cannot materialize call to {name}(): its value changes while the view's inputs "
                            "do not", pos)
        problem, known = _tried_alone(name, len(call.args), call.distinct, call.star, call.over is not None)
        if problem is not None:
            _refuse_call(name, len(call.args), problem, known, pos)


def _negative(value) -> bool:
    return (isinstance(value, ast.UnaryOp) and value.op == "-" and isinstance(value.operand, ast.Literal)
            and value.operand.type == "numeric" and float(value.operand.value) > 0)


def _check_literal(value, read: Callable) -> None:
    """A text literal `read` cannot take (a pattern of `~`, a zone of AT TIME ZONE) is refused where it is written,
    in `read`'s words (its ValueError), not by each row."""
    if isinstance(value, ast.Literal) and value.type == "text":
        try:
            read(value.value)
        except ValueError as exc:
            raise PlanError(str(exc), value.pos) from None


@lru_cache(maxsize=1024)
def _tried_alone(name: str, arguments: int, distinct: bool, star: bool, windowed: bool) -> tuple[str | None, bool]:
    """What SQLite answers a call of this kind tried alone, its arguments NULL (None: it runs), and whether sqlglot
    knows the function as SQL. Every SELECT checks its calls: each kind is tried once a process."""
    alone = ast.FunctionCall(ast.Name(name), tuple(ast.Literal(None, "null") for _ in range(arguments)), distinct,
                             star, over=ast.Window() if windowed else None)
    rendered = render.expression(alone)
    known = not isinstance(rendered.this if windowed else rendered, exp.Anonymous)
    db = sqlite3.connect(":memory:")
    try:
        add_functions(db)
        db.execute("EXPLAIN " + sqlite_sql(exp.select(rendered)))
        return None, known
    except sqlite3.OperationalError as exc:
        return str(exc), known
    finally:
        db.close()


def _refuse_call(name: str, arguments: int, problem: str, known: bool, pos: int) -> None:
    """Raises what SQLite's refusal of a call, tried alone, means for the query that makes it."""
    if "wrong number of arguments" in problem:
        raise PlanError(f"function {name}() does not take {arguments} argument{'s' if arguments != 1 else ''}", pos)
    if "DISTINCT aggregates must have exactly one argument" in problem:
        raise NotSupportedYet(f"{name}(DISTINCT …) with more than one argument is not supported yet", pos)
    if "misuse of window function" in problem:
        raise PlanError(f"window function {name}() requires an OVER clause", pos)
    if "no such function" in problem:
        if known or name in _POSTGRES_ONLY:
            raise NotSupportedYet(f"function {name}() is not supported yet", pos)
        raise PlanError(f"function {name}() does not exist", pos)


# Postgres's and Materialize's functions sqlglot does not know by name, which no query here runs yet
_POSTGRES_ONLY = frozenset({"jsonb_agg", "json_agg", "list_agg", "jsonb_object_agg", "json_object_agg",
                            "percentile_cont", "percentile_disc", "to_char", "regexp_match", "regexp_replace",
                            "age", "isfinite", "quote_ident", "quote_literal", "jsonb_build_object",
                            "json_build_object", "make_timestamp", "make_interval", "date_bin", "justify_hours",
                            "justify_interval", "array_to_string", "regexp_split_to_array", "jsonb_array_length"})


def plan_select(binder: Binder, stmt: ast.Select, text: str) -> QueryPlan | IcebergQueryPlan:
    check_table_functions(stmt.query)
    refs = table_refs(stmt.query)
    shows = [node for node in walk(stmt.query) if isinstance(node, ast.ShowRef)]
    if any(ref.iceberg for ref in refs):
        if shows:
            raise NotSupportedYet("a query that joins ICEBERG tables with SHOW is not supported yet",
                                  shows[0].show.name.pos)
        return _plan_iceberg_query(binder, stmt, refs)
    check_qualified_columns(stmt.query)
    query = expand_distinct_on_stars(stmt.query, lambda ref: binder.relation(ref.name)[1])
    check_distinct_on_order(query)
    if any(_generator_of(binder, binder.find(ref.name)) for ref in refs if not ref.name.qualifier):
        if shows:
            raise NotSupportedYet("a query that joins load generators with SHOW is not supported yet",
                                  shows[0].show.name.pos)
        generated_only = _over_generators_only(binder, query)
        if generated_only is not None:
            return _plan_generator_query(*generated_only)
    check_functions(query)  # SQLite runs it (Spark, over load generators alone, knows more functions)
    replicated: Replicated = []
    generated: list = []
    name_table, engine_tables = sqlite_tables(binder, refs, replicated, generated)
    if shows and engine_tables:
        raise NotSupportedYet("a query that joins engine tables with SHOW is not supported yet",
                              shows[0].show.name.pos)
    name_table = _with_shows(binder, name_table) if shows else name_table
    return QueryPlan(sqlite_sql(render.query(query, name_table, named=True)),
                     target="tables" if engine_tables else "catalog",
                     column_positions=column_positions(stmt), replicated=tuple(replicated),
                     generated=tuple(dict.fromkeys(generated)), booleans=_boolean_outputs(binder, query))


# the system views' columns of type boolean (SQLite gives them as 0 and 1, as it does every truth value)
_SYSTEM_BOOLEANS = {("mz_columns", "nullable")}


def _boolean_outputs(binder: Binder, query: ast.Query) -> tuple[int, ...]:
    """Which output columns are booleans, which SQLite answers as 0 and 1: the binder's types, where it knows them
    (a query over relations of unknown columns, such as most system views, has none it can tell)."""
    if any(isinstance(node, (ast.FunctionRef, ast.ShowRef)) for node in walk(query)):
        return ()

    def resolve(ref: ast.TableRef) -> Relation:
        qualifier = ref.name.qualifier
        if (qualifier and qualifier[0] in _SYSTEM_SCHEMAS) or (not qualifier and ref.name.name in VIEWS):
            view = ref.name.name
            names = [d[0] for d in binder.catalog.db.execute(f"SELECT * FROM {view} LIMIT 0").description]
            return Relation(view, view, tuple(Column(n, "boolean" if (view, n) in _SYSTEM_BOOLEANS else UNKNOWN)
                                              for n in names))
        return binder.relation(ref.name)[1]
    try:
        columns = bind_query(query, resolve).columns
    except IcesinkError:  # SQLite's run says it, where it is written
        return ()
    return tuple(i for i, c in enumerate(columns or ()) if base_type(c.type) == "boolean")


def _over_generators_only(binder: Binder, query: ast.Query) -> tuple[exp.Expression, dict] | None:
    """`over_generators(query)` when it reads load generators' relations alone (Spark generates them); None when it
    reads other relations too (SQLite reads them all, the generators' from the tables that keep their rows)."""
    class Other(Exception):
        pass

    def other(ref):
        return Other()
    try:
        return over_generators(binder, query, other)
    except Other:
        return None


def column_positions(stmt) -> dict[str, int]:
    """Where each column reference, and the first division, is written: to point at what SQLite complains of."""
    positions: dict[str, int] = {}
    for node in walk(stmt):
        if isinstance(node, ast.ColumnRef):
            positions.setdefault(".".join(p.value for p in node.parts), node.pos)
            positions.setdefault(node.column, node.parts[-1].pos)
        elif isinstance(node, ast.BinaryOp) and node.op in ("/", "%"):
            positions.setdefault("division by zero", node.pos)
    return positions


def plan_show(binder: Binder, stmt: ast.ShowObjects) -> QueryPlan:
    sql, condition = _SHOW[stmt.kind]
    conditions = [condition] if condition else []
    params = ()
    if stmt.on is not None:
        if stmt.kind != "subsources":
            raise PlanError("ON applies only to SHOW SUBSOURCES (ON source)", stmt.on.pos)
        source = binder.lookup(stmt.on, ("source",), "source")
        conditions.append("id IN (SELECT object_id FROM dependencies WHERE depends_on = ?)")
        params = (source.id,)
    if stmt.like is not None:
        conditions.append("name LIKE ?")
        params = (*params, stmt.like)
    if conditions:
        sql += " WHERE " + " AND ".join(conditions)
    return QueryPlan(sql + " ORDER BY name", params)


def plan_show_create(binder: Binder, stmt: ast.ShowCreate) -> QueryPlan:
    kinds = ("source", "subsource") if stmt.kind == "source" else (stmt.kind,)
    obj = binder.lookup(stmt.name, kinds, KIND_WORDS[stmt.kind])
    column = "redacted_create_sql" if stmt.redacted else "create_sql"
    view = _CREATE_VIEW.get(stmt.kind)
    if view is None:  # secrets: their create_sql never holds the value
        return QueryPlan("SELECT name, create_sql FROM objects WHERE id = ?", (obj.id,))
    return QueryPlan(f"SELECT name, {column} AS create_sql FROM {view} WHERE id = ?", (obj.id,))


def plan_show_columns(binder: Binder, stmt: ast.ShowColumns) -> QueryPlan:
    obj = binder.lookup(stmt.name, RELATION_KINDS + ("sink",), "source, table, materialized view or sink")
    return QueryPlan("SELECT name, nullable, type FROM mz_columns WHERE id = ? ORDER BY position", (obj.id,),
                     booleans=(1,))
