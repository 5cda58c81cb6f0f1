"""A query's sqlglot tree as SQLite runs it, computing as Postgres computes: arithmetic and division, Postgres's
functions SQLite lacks, casts through the column types' input functions, intervals, date_trunc, generate_series and
DISTINCT ON (sqlite_sql)."""
from __future__ import annotations

from typing import Callable

import sqlglot
from sqlglot import exp

from ..catalog.sqlite import INTERVAL_COLLATION
from ..catalog.sql_functions import AGGREGATES, DATE_CUTS
from ..errors import PlanError
from ..engine.values import INT_RANGES
from ..grammar import render
from ..model.intervals import interval_parts, interval_text
from .grouping import AGGREGATE_NAMES
from .sqlite_aggregates import array_agg, array_aggregate, order_of, ordered_aggregate
from .types import SYNONYMS


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


def integer_in_range(type_name: str, value: exp.Expression) -> exp.Expression:
    """Whether `value` is an integer within the range of the integer type `type_name`, in SQLite's own terms."""
    if type_name == "bigint":  # every integer SQLite holds
        return typeof_is(value, "integer")
    bound = INT_RANGES[type_name]
    return exp.and_(typeof_is(value, "integer"), exp.Between(
        this=value.copy(), low=exp.Literal.number(-bound), high=exp.Literal.number(bound - 1)))


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
                   exp.RegexpILike: ("icesink_iregex", ("this", "expression")),
                   # SQLite has these, changing ASCII letters alone, and keeping the text beside a NULL: icesink's
                   # are Postgres's, by names of their own, so that an index a sink built on SQLite's keeps its keys
                   exp.Upper: ("icesink_upper", ("this",)), exp.Lower: ("icesink_lower", ("this",)),
                   exp.Replace: ("icesink_replace", ("this", "expression", "replacement"))}


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
        if order_of(node) is not None and not isinstance(node.parent, exp.Filter):
            return ordered_aggregate(node, replace)
        if (array_aggregate(node) and not isinstance(node.parent, exp.Filter)) or (
                isinstance(node, exp.Filter) and array_aggregate(node.this)):
            return array_agg(node, replace)
        if isinstance(node, exp.Anonymous) and node.name.lower() == "string_agg":
            return exp.Anonymous(this="group_concat", expressions=[a.transform(replace) for a in node.expressions])
        if isinstance(node, exp.Anonymous) and node.name.lower() == "row":  # a record, as its fields in JSON
            return exp.Anonymous(this="icesink_row", expressions=[a.transform(replace) for a in node.expressions])
        if isinstance(node, (exp.Add, exp.Sub)):
            moved = _moved_by_interval(node, replace)
            return moved if moved is not None else _text_arithmetic(node, replace)
        if isinstance(node, exp.Cast):
            return _cast(node, replace)
        if isinstance(node, (exp.Like, exp.ILike)) and not isinstance(node.parent, exp.Escape):
            # Postgres's LIKE takes a backslash as its escape (`'a\_b'` matches an underscore); SQLite's has none;
            # ILIKE is LIKE of both sides in lower case, Postgres's
            sides = [side.transform(replace) for side in (node.this, node.expression)]
            if isinstance(node, exp.ILike):
                sides = [exp.Anonymous(this="icesink_lower", expressions=[side]) for side in sides]
            return exp.Escape(this=exp.Like(this=sides[0], expression=sides[1]), expression=exp.Literal.string("\\"))
        if type(node) in _CLOCK:  # SQLite's own keep seconds alone, and no zone
            return sqlglot.parse_one(_CLOCK[type(node)], read="sqlite")
        if isinstance(node, exp.ArraySize):  # array_length(a, dimension): SQLite's writer would leave the dimension
            return exp.Anonymous(this="array_length", expressions=[
                a.transform(replace) for a in (node.this, node.args.get("expression")) if a is not None])
        if isinstance(node, exp.Bracket):  # `a[i]`, counted from 1 (render's offset), of an array held as JSON
            return exp.Anonymous(this="icesink_subscript", expressions=[node.this.transform(replace),
                                                                        node.expressions[0].transform(replace)])
        if isinstance(node, exp.Sign):  # a number of a floating type (SQLite's is an integer: sign(1) / 3 was 0)
            return exp.Cast(this=exp.Sign(this=node.this.transform(replace)), to=exp.DataType.build("double"))
        if isinstance(node, exp.Trunc) and node.args.get("decimals") is not None:  # SQLite's trunc takes no digits
            return exp.Anonymous(this="icesink_trunc", expressions=[node.this.transform(replace),
                                                                    node.args["decimals"].transform(replace)])
        decimals = node.args.get("decimals") if isinstance(node, exp.Round) else None
        if decimals is not None and not (isinstance(decimals, exp.Literal) and decimals.name.isdigit()):
            # SQLite's round reads digits before the point (a negative count) as none
            return exp.Anonymous(this="icesink_round", expressions=[node.this.transform(replace),
                                                                    decimals.transform(replace)])
        if isinstance(node, exp.Array):  # arrays are held as JSON, truth values as JSON's (SQLite's are 1 and 0)
            truths = node.meta.get("booleans", ())
            return exp.Anonymous(this="json_array", expressions=[
                _json_truth(a.transform(replace)) if i in truths else a.transform(replace)
                for i, a in enumerate(node.expressions)])
        if isinstance(node, exp.EQ) and isinstance(node.expression, exp.Any):
            # `x = ANY (array)` (ANY over a subquery's rows is read as IN): not `x IN (SELECT value FROM
            # json_each(array))`, which SQLite refuses over an aggregate
            return exp.Anonymous(this="icesink_array_has", expressions=[
                node.expression.this.unnest().transform(replace), node.this.transform(replace)])
        if isinstance(node, exp.JSONExtractScalar):
            return _json_text(node, replace)
        if isinstance(node, exp.JSONExtract):  # SQLite's `->` gives an object or array minified
            return _jsonb_printed(exp.JSONExtract(this=node.this.transform(replace), expression=node.expression.copy(),
                                                  only_json_types=True))
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


# aggregates sqlglot's tree may hold as calls of no function it knows: SQLite's (group_concat) and icesink's own
_OWN_AGGREGATES = frozenset({*AGGREGATE_NAMES, *AGGREGATES, "icesink_ordered_agg"})


def _is_aggregate(node: exp.Expression) -> bool:
    if not isinstance(node, exp.Anonymous):
        return isinstance(node, exp.AggFunc)
    name = node.name.lower()  # min and max of two or more are SQLite's scalar ones
    return name in _OWN_AGGREGATES and (name not in ("min", "max") or len(node.expressions) == 1)


def _own_aggregate(node: exp.Expression, select: exp.Select) -> bool:
    """Whether `node` calls an aggregate of `select`'s (not a window's, nor a subquery's)."""
    return any(_is_aggregate(call) and call.find_ancestor(exp.Window, exp.Select) is select
               for call in node.find_all(exp.AggFunc, exp.Anonymous))


def _reads_a_row(node: exp.Expression, select: exp.Select) -> bool:
    """Whether `node` reads a column of `select`'s rows outside an aggregate (or is `*`)."""
    return isinstance(node, exp.Star) or isinstance(node.this, exp.Star) or any(
        column.find_ancestor(exp.AggFunc, exp.Select) is select for column in node.find_all(exp.Column))


def _grouped_as_one(select: exp.Select) -> None:
    """A query Postgres groups as one group of every row without GROUP BY, by its HAVING or an aggregate in its
    ORDER BY, whose outputs hold no aggregate (`SELECT 'rows' FROM t HAVING count(*) > 0`): SQLite groups a query
    by an aggregate among its outputs alone (else `HAVING clause on a non-aggregate query`), so the first output
    is written as one that holds `count(*)`, its value unchanged."""
    outputs, order = select.expressions, select.args.get("order")
    if select.args.get("group") or not outputs or (
            select.args.get("having") is None and not (order and _own_aggregate(order, select))) or any(
            _own_aggregate(o, select) or _reads_a_row(o, select) for o in outputs):
        return  # SQLite refuses the query: an output reads a row's column, which the binder could not refuse
    first = outputs[0] if isinstance(outputs[0], exp.Alias) else exp.alias_(outputs[0], outputs[0].output_name
                                                                           or outputs[0].sql(dialect="sqlite"))
    counted = exp.GTE(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))
    first.set("this", exp.Case(ifs=[exp.If(this=counted, true=first.this.copy())]))
    if first is not outputs[0]:
        outputs[0].replace(first)


# casts SQLite would get wrong, by the type's name in sqlglot's tree: DATETIME() drops a timestamp's fraction and
# zone, a type named with INT in it (TIMESTAMPTZ, INTERVAL) takes the number its text begins with, and one of no
# type SQLite knows (JSONB, UUID) a number too, 0 for text that is none; they go through the column type's input
# function (icesink_in), as Postgres reads a value of the type
_CAST_TYPES = {exp.DataType.Type.TIMESTAMP: "timestamp", exp.DataType.Type.TIMESTAMPTZ: "timestamp with time zone",
               exp.DataType.Type.INTERVAL: "interval", exp.DataType.Type.JSONB: "jsonb",
               exp.DataType.Type.JSON: "jsonb", exp.DataType.Type.UUID: "uuid"}

# casts of text SQLite reads otherwise (a number from its leading digits, or 0; DATE() NULL for any other form),
# through the type's input function
_READ_FROM_TEXT = {exp.DataType.Type.DECIMAL: "numeric", exp.DataType.Type.DOUBLE: "double precision",
                   exp.DataType.Type.FLOAT: "real", exp.DataType.Type.DATE: "date"}


# the clock's functions as the store holds their types' values (a fraction of a second in six digits, none when
# it is 0), from SQLite's clock, in the session's zone, UTC; its milliseconds are all it has
_FRACTION = "CASE WHEN strftime('%f', 'now') LIKE '%.000' THEN '' ELSE substr(strftime('%f', 'now'), 3) || '000' END"
_CLOCK = {exp.CurrentTimestamp: f"strftime('%Y-%m-%d %H:%M:%S', 'now') || {_FRACTION} || '+00:00'",
          exp.Localtimestamp: f"strftime('%Y-%m-%d %H:%M:%S', 'now') || {_FRACTION}",
          exp.CurrentDate: "date('now')",
          exp.CurrentTime: f"strftime('%H:%M:%S', 'now') || {_FRACTION}",
          exp.Localtime: f"strftime('%H:%M:%S', 'now') || {_FRACTION}"}


def _json_truth(value: exp.Expression) -> exp.Expression:
    """A truth value as JSON's true or false."""
    return exp.Case(ifs=[exp.If(this=value, true=sqlglot.parse_one("json('true')", read="sqlite")),
                         exp.If(this=exp.Not(this=value.copy()), true=sqlglot.parse_one("json('false')", read="sqlite"))])


# the types whose text icesink_text writes as Postgres prints it (the store holds its own)
SHOWN_MOMENTS = ("timestamp", "timestamp with time zone", "time")

# casts to an integer type, which round and check the type's range (icesink_integer), by the type's name
_INTEGER_TYPES = {exp.DataType.Type.SMALLINT: "smallint", exp.DataType.Type.INT: "integer",
                  exp.DataType.Type.BIGINT: "bigint", exp.DataType.Type.TINYINT: "smallint"}


def _cast(node: exp.Cast, replace: Callable) -> exp.Expression:
    """A cast as Postgres computes it, its value converted here (a replaced node's arguments are not visited
    again): by the type's input function, `numeric(p, s)` as a number rounded to its scale (SQLite's CAST keeps
    every digit; half away from zero, by its decimal digits, as Postgres rounds: SQLite's round of
    the double 2.675 gives 2.67), `boolean` from text as Postgres reads it and from a number as whether it is not 0 (SQLite's
    would read 'true' as 0, and keep 2 as 2); any other by SQLite's own."""
    value, to = node.this.transform(replace), node.to
    if to.is_type(exp.DataType.Type.ARRAY):  # `'{1,2}'::int[]`, `ARRAY[]::text[]`: by the array type's input function
        return exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string(_array_type(to)), exp.Null(), value])
    if to.this in _CAST_TYPES:
        return exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string(_CAST_TYPES[to.this]), exp.Null(),
                                                             value])
    integer, operand = _INTEGER_TYPES.get(to.this), node.meta.get("operand")  # the binder's type, where it knew
    if integer is not None:
        if isinstance(value, exp.Literal) and not value.is_string and value.name.isdigit() and integer == "bigint":
            return exp.Cast(this=value, to=to)
        if operand == "text":  # read as the type's input reads it: '1.5' is no integer
            return exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string(integer), exp.Null(), value])
        call = exp.Anonymous(this="icesink_integer", expressions=[value, exp.Literal.string(integer)])
        if not cheap(value):
            return call
        # an integer within the type's range is itself, without a call
        return exp.Case(ifs=[exp.If(this=integer_in_range(integer, value), true=value.copy())], default=call)
    if to.is_type(*exp.DataType.TEXT_TYPES):
        if operand and operand not in SHOWN_MOMENTS:  # text that only looks like a moment's keeps its digits
            return exp.Cast(this=value, to=to)
        # a moment's text as Postgres prints it, not as the store holds it
        return exp.Anonymous(this="icesink_text", expressions=[exp.Cast(this=value, to=to)])
    if operand == "text" and to.this in _READ_FROM_TEXT and not to.expressions:
        # read by the type's input ('x' is no number: SQLite's CAST read it as 0, and its DATE() as NULL), then held
        # as the type's values are
        if to.this == exp.DataType.Type.DECIMAL:  # every digit and any size, as SQLite's CAST computed it
            return exp.Anonymous(this="icesink_numeric_input", expressions=[value])
        checked = exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string(_READ_FROM_TEXT[to.this]),
                                                                exp.Null(), value])
        return checked if to.this == exp.DataType.Type.DATE else exp.Cast(this=checked, to=to)
    if to.is_type(exp.DataType.Type.DECIMAL) and to.expressions:  # numeric(p) is numeric(p, 0)
        scale = to.expressions[1].name if len(to.expressions) == 2 else "0"
        return exp.Anonymous(this="icesink_numeric", expressions=[
            value, exp.Literal.number(to.expressions[0].name), exp.Literal.number(scale)])
    if to.is_type(exp.DataType.Type.BOOLEAN) and _repeatable(value):
        text = exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string("boolean"), exp.Null(), value.copy()])
        return exp.Case(ifs=[exp.If(this=typeof_is(value, "text"), true=text)],
                        default=exp.NEQ(this=value.copy(), expression=exp.Literal.number(0)))
    if to.is_type(exp.DataType.Type.BOOLEAN):
        return exp.Cast(this=value, to=exp.DataType.build("int"))
    return exp.Cast(this=value, to=to)


def _array_type(to: exp.DataType) -> str:
    """An array type in icesink's spelling (`integer[]`, `text[][]`), whose input function a cast takes."""
    depth = 0
    while to.is_type(exp.DataType.Type.ARRAY) and to.expressions:
        to, depth = to.expressions[0], depth + 1
    written = to.sql(dialect="postgres").lower()
    return SYNONYMS.get(written, written) + "[]" * depth


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
    if _numbers_only(node) or node.meta.get("numbers"):  # `1 + 1 + …`, `n + 1`: no moment among them (the
        # binder's types), and a long chain stays as flat as written
        return node
    left, right = node.this.transform(replace), node.expression.transform(replace)
    if not (_repeatable(left) and _repeatable(right)):
        return exp.Anonymous(this=name, expressions=[left, right])
    call = exp.Anonymous(this=name, expressions=[left.copy(), right.copy()])
    native = type(node)(this=left.copy(), expression=right.copy())
    return exp.Case(ifs=[exp.If(this=exp.or_(_moment_text(left), _moment_text(right)), true=call)],
                    default=exp.Paren(this=native))


def _jsonb_printed(value: exp.Expression) -> exp.Expression:
    """A JSON text as Postgres prints a jsonb, by the type's input function."""
    return exp.Anonymous(this="icesink_in", expressions=[exp.Literal.string("jsonb"), exp.Null(), value])


def _json_text(node: exp.JSONExtractScalar, replace: Callable) -> exp.Expression:
    """`doc ->> key` as Postgres gives it, text: SQLite's `->>` gives a JSON number as a number (1.50 as 1.5), true
    and false as 1 and 0, and an object or array minified; a stored jsonb's numbers are already as Postgres prints
    them, so a number is its JSON text."""
    document, path = node.this.transform(replace), node.expression
    value = exp.JSONExtractScalar(this=document, expression=path.copy(), only_json_types=True)
    json_value = exp.JSONExtract(this=document.copy(), expression=path.copy(), only_json_types=True)
    kind = exp.Anonymous(this="json_type", expressions=[document.copy(), path.copy()])
    return exp.Case(this=kind, ifs=[*(exp.If(this=exp.Literal.string(b), true=exp.Literal.string(b))
                                      for b in ("true", "false")),
                                    *(exp.If(this=exp.Literal.string(n), true=json_value.copy())
                                      for n in ("integer", "real")),
                                    *(exp.If(this=exp.Literal.string(c), true=_jsonb_printed(json_value.copy()))
                                      for c in ("object", "array"))],
                    default=exp.Cast(this=value, to=exp.DataType.build("text")))


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
    for select in list(tree.find_all(exp.Select)):  # its aggregates written as SQLite's and icesink's own by now
        _grouped_as_one(select)
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
