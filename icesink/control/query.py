"""Binding of SELECT queries: which relations they read, their output columns and types, and
which output column sets are provably unique (for KEY ENFORCED)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator

from ..engine.values import InvalidValue, input_function
from ..errors import NotSupportedYet, PlanError
from ..grammar import ast, render
from ..grammar.ast import walk
from ..grammar.output_names import output_name
from ..grammar.query_builder import CLOCK_FUNCTIONS
from .grouping import check_grouping, check_positions, is_ordinal, ordinal
from .numeric_scale import declared_scale, numeric_scale
from .types import INTEGERS, NUMERIC_ORDER, UNKNOWN, Column, base_type, normalize


@dataclass(frozen=True)
class Relation:
    """What the binder needs to know of a relation a query reads."""

    id: str
    name: str
    columns: tuple[Column, ...] | None  # None: not known until the upstream system is asked
    primary_key: tuple[str, ...] = ()
    scales: tuple[int | None, ...] = ()  # a view's columns' numeric scales, where it kept them
    computed: tuple[bool, ...] = ()  # which of a view's numeric columns it computes (held as SQLite computed them)
    # the primary key is a table's constraint, which decides its other columns in a GROUP BY (Postgres's functional
    # dependency); a load generator's key is not (nor in Materialize, which has no such rule)
    declared_key: bool = True


@dataclass(frozen=True)
class BoundQuery:
    columns: tuple[Column, ...] | None
    unique_keys: tuple[frozenset[str], ...]  # each a set of output column names known to be unique
    relations: tuple[Relation, ...]


def check_distinct_on_order(query: ast.Query) -> None:
    """Postgres's rule, which makes "each value's first row" say which row: a query's DISTINCT ON expressions, in any
    order among themselves, lead its ORDER BY (which may stop before naming them all). An ordinal or an output's
    name stands for the output's expression, as in Postgres's ORDER BY."""
    for node in walk(query):
        if not isinstance(node, ast.Query) or len(node.cores) != 1 or not node.cores[0].distinct_on:
            continue
        items = node.cores[0].items
        if any(isinstance(item.expr, ast.Star) for item in items):
            continue  # an ordinal's column is not known before `*` is expanded
        aliases = {item.alias.value: item.expr for item in items if item.alias is not None}

        def expression(expr):
            index = ordinal(expr, len(items))
            if index is not None:
                return items[index].expr
            if isinstance(expr, ast.ColumnRef) and expr.qualifier is None and expr.column in aliases:
                return aliases[expr.column]
            return expr
        on = [expression(expr) for expr in node.cores[0].distinct_on]
        pending = list(range(len(on)))
        for item in node.order_by:
            if not pending:
                break
            found = expression(item.expr)
            matched = [i for i, e in enumerate(on) if e == found or _same_column(e, found)]
            if not matched:
                raise PlanError("SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
                                getattr(node.cores[0].distinct_on[pending[0]], "pos", None))
            pending = [i for i in pending if i not in matched]


def table_refs(query: ast.Query) -> list[ast.TableRef]:
    return [n for n in walk(query) if isinstance(n, ast.TableRef)]


Resolver = Callable[[ast.TableRef], Relation]

_AGGREGATE_TYPES = {"count": "bigint"}
_MOMENTS = {"date", "timestamp", "timestamp with time zone"}
_RANKS = {"row_number": "bigint", "rank": "bigint", "dense_rank": "bigint", "ntile": "integer",
          "percent_rank": "double precision", "cume_dist": "double precision"}
_TEXT_FUNCTIONS = {"lower", "upper", "concat", "substr", "substring", "trim", "btrim", "ltrim", "rtrim",
                   "replace", "md5", "left", "right", "lpad", "rpad", "initcap", "to_char", "format", "concat_ws",
                   "reverse", "translate", "repeat", "split_part", "regexp_replace", "array_to_string",
                   "jsonb_typeof"}
_PASSTHROUGH = {"min", "max", "abs", "coalesce", "nullif", "greatest", "least", "round", "floor", "ceil", "ceiling",
                "trunc", "date_trunc", "first_value", "last_value", "any_value", "gcd", "lcm"}
_ROUNDING = ("round", "floor", "ceil", "ceiling", "trunc")
# Postgres's functions of double precision alone, and those it has of numeric too (an integer argument is read as
# a double, Postgres's preferred number type)
_DOUBLE_FUNCTIONS = {"pi", "degrees", "radians", "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "sinh",
                     "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt"}
_NUMERIC_OR_DOUBLE = {"sqrt", "exp", "ln", "log", "log10", "power", "pow"}
# functions whose value changes while a view's inputs do not: Materialize refuses them in a materialized view
UNMATERIALIZABLE = CLOCK_FUNCTIONS | {"now", "random"}
_SPREADS = {"stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop"}


class _Scope:
    """The relations of a query's FROM; `outer`: the enclosing query's, which a correlated subquery reads too."""

    def __init__(self, outer: "_Scope | None" = None):
        self.entries: list[tuple[str, Relation | None, tuple[Column, ...]]] = []
        self.outer = outer
        self.read_by_subqueries: set[int] = set()  # the ids of the column references a subquery reads here

    def add(self, alias: str, relation: Relation | None, columns: tuple[Column, ...]):
        self.entries.append((alias, relation, columns))

    def lookup(self, ref: ast.ColumnRef, from_subquery: bool = False) -> Column:
        name, qualifier = ref.column, ref.qualifier
        entries = [(alias, cols) for alias, _, cols in self.entries if qualifier in (None, alias)]
        if any(cols is None for _, cols in entries):
            return Column(name, UNKNOWN)
        found = [c for _, cols in entries for c in cols if c.name == name]
        if not found and self.outer is not None:
            return self.outer.lookup(ref, from_subquery=True)
        if found and from_subquery:
            self.read_by_subqueries.add(id(ref))
        if not found:
            where = f"{qualifier}.{name}" if qualifier else name
            raise PlanError(f"column \"{where}\" does not exist", ref.pos)
        if len(found) > 1 and qualifier is None:
            raise PlanError(f"column reference \"{name}\" is ambiguous", ref.pos)
        return found[0]

    def source(self, ref: ast.ColumnRef) -> tuple[str, str] | None:
        """The FROM item and column `ref` reads at this level; None where it is an outer query's, or unknown."""
        entries = [(alias, columns) for alias, _, columns in self.entries if ref.qualifier in (None, alias)]
        if any(columns is None for _, columns in entries):
            return None
        found = [(alias, c.name) for alias, columns in entries for c in columns if c.name == ref.column]
        return found[0] if len(found) == 1 else None

    def all_columns(self, qualifier: str | None = None) -> tuple[Column, ...] | None:
        entries = [cols for alias, _, cols in self.entries if qualifier in (None, alias)]
        if any(cols is None for cols in entries):
            return None
        return tuple(c for cols in entries for c in cols)


def _interval_literal(expr) -> bool:
    """`INTERVAL '1 day'` or `'1 day'::interval`: what a moment may be moved by (SQLite's rewrite computes no other)."""
    if isinstance(expr, ast.Cast) and normalize(expr.type) == "interval":
        expr = expr.expr
    return isinstance(expr, ast.Literal) and expr.type in ("interval", "text")


# the session's time zone is UTC: current_time is its time of day (Postgres's has a zone, which icesink's time has not)
_CLOCK_TYPES = {"current_date": "date", "localtimestamp": "timestamp", "localtime": "time", "current_time": "time"}


class OperandError(PlanError):
    """An operand of a type Postgres refuses where the query is planned: refused by SELECT too, which otherwise
    leaves the binder's errors (names, which SQLite's run points at) to SQLite."""


_ARITHMETIC = ("+", "-", "*", "/", "%")
_COMPARISONS = ("=", "<>", "!=", "<", "<=", ">", ">=")


def _check_beside_text(a, a_type: str, b, b_type: str, op: str, pos: int) -> None:
    """Operands `a` and `b` of `op` where one is text and the other a number or, compared, a moment, a truth value,
    a uuid or a jsonb, as Postgres reads them: a text literal is the other's type, read by its input function
    (`n = 'x'`: invalid input syntax for type integer; `ts > '2024-01-01'` is past midnight, where SQLite compared
    the store's text with the literal's; `ok = 'true'` holds); other text beside a number has no such operator
    (`n + name`), nor beside those others compared (`ts = name`)."""
    for side, kind, other, other_type in ((a, a_type, b, b_type), (b, b_type, a, a_type)):
        target = base_type(other_type)
        if base_type(kind) != "text" or not (target in NUMERIC_ORDER or (op in _COMPARISONS and target in _STORED)):
            continue
        if not _text_literal(side):  # `n + name`, `ts = name`
            raise OperandError(f"operator does not exist: {_named(a_type)} {op} {_named(b_type)}", pos)
        try:
            value = input_function(target)(side.value)
        except InvalidValue as exc:
            if str(exc).startswith("invalid input syntax"):  # not what an engine table cannot store ('NaN')
                raise OperandError(str(exc), side.pos) from None
            if target in INTEGERS and str(exc).endswith("out of range"):  # n = '99999999999' over an integer
                raise OperandError(f'value "{side.value}" is out of range for type {target}', side.pos) from None
            continue
        if target in _STORED:  # as the store holds the type's values: a moment's text compares as moments do
            render.record_literal(side, value, "boolean" if target == "boolean" else "text")
        elif target != "numeric" or not _stored(other):
            # SQLite compares a number with text as unequal (`n + 1 = '2'` was false); a numeric column keeps its
            # digits as text, which its collation compares exactly, where a double would lose some
            render.record_literal(side, repr(value) if isinstance(value, float) else str(value), "number")


def _check_unrelated(a_type: str, b_type: str, op: str, pos: int) -> None:
    """A truth value beside a number, or in arithmetic, and a moment compared with, multiplied or divided by a
    number: Postgres has no such operator, where SQLite reads a truth value as 1 or 0 and a moment's text as a
    number (`ts * 2` was 4048)."""
    kinds = {base_type(a_type), base_type(b_type)}
    numbers = kinds & set(NUMERIC_ORDER)
    if ("boolean" in kinds and (numbers or op in _ARITHMETIC)) or (
            kinds & _MOMENTS and numbers and op not in ("+", "-")):
        raise OperandError(f"operator does not exist: {_named(a_type)} {op} {_named(b_type)}", pos)


def _truth_argument(expr, kind: str, what: str) -> None:
    """`what` takes a truth value, as Postgres requires (SQLite reads a number's, or text's leading digits, as one):
    a text literal is one, read by the boolean's input function (`WHERE 'true'`; SQLite read 'true' as 0)."""
    if _text_literal(expr):
        try:
            render.record_literal(expr, input_function("boolean")(expr.value), "boolean")
        except InvalidValue as exc:
            raise OperandError(str(exc), expr.pos) from None
    elif base_type(kind) not in ("boolean", UNKNOWN):
        raise OperandError(f"argument of {what} must be type boolean, not type {_named(kind)}", _start(expr))


def _start(expr) -> int:
    """Where an expression begins (an operation's operator is not where Postgres's messages point)."""
    return _start(expr.left) if isinstance(expr, ast.BinaryOp) else getattr(expr, "pos", 0)


def _extract_scale(field: str, source: str) -> int | None:
    """The digits Postgres's EXTRACT gives a field: a second's, an epoch's 6 (microseconds), a millisecond's 3, any
    other's none, and none of a date at all (julian of a moment has more than a double holds: left to SQLite's)."""
    if source == "date":
        return 0
    if field in ("epoch", "second", "seconds"):
        return 6
    if field in ("millisecond", "milliseconds"):
        return 3
    return None if field == "julian" else 0


def _named(kind: str) -> str:
    """A type as Postgres's messages name it."""
    kind = base_type(kind)
    return {"timestamp": "timestamp without time zone", "time": "time without time zone"}.get(kind, kind)


# types whose values the store keeps in one form (a moment's text, a uuid's in lower case, a truth value as 1 or 0),
# which a text literal compared with one is read into
_STORED = ("date", "time", "timestamp", "timestamp with time zone", "boolean", "uuid", "jsonb")
_WIDENING = ("date", "timestamp", "timestamp with time zone")


_UNIFYING = ("coalesce", "nullif", "greatest", "least")  # of their arguments' common type, as CASE's results


def _common_type(values: list, types: list[str]) -> str:
    """The type of values that must share one (CASE's results, coalesce's arguments), as Postgres resolves it: a
    text literal takes the others' type (`coalesce(n, '0')` is an integer, 0), read by its input function."""
    known = [t for v, t in zip(values, types) if t != UNKNOWN and not _text_literal(v)]
    if not known:
        return next((t for t in types if t != UNKNOWN), UNKNOWN)
    common = known[0]
    for kind in known[1:]:
        common = _unified(common, kind)
    for value, kind in zip(values, types):
        if _text_literal(value):
            _check_beside_text(value, kind, _NO_COLUMN, common, "=", value.pos)
        elif base_type(kind) in _WIDENING and base_type(common) in _WIDENING and base_type(kind) != base_type(common):
            render.record_widening(value, base_type(common))  # the store's text of a date is not a timestamp's
    return common


def _numbers_alike(values: list, types: list[str]) -> None:
    """CASE's results or coalesce's arguments of a numeric type: a numeric's text (a stored column's, or a CASE of
    one) among numbers SQLite computes, or another scale's text, which SQLite never finds equal (coalesce(n, 0)
    was two groups of 0), each read as a double, as SQLite computes the others; stored columns of one scale keep
    their text."""
    numerics = [v for v, t in zip(values, types) if base_type(t) == "numeric" and not isinstance(v, ast.Literal)]
    others = [v for v, t in zip(values, types) if base_type(t) in NUMERIC_ORDER and v not in numerics]
    if others or not all(_stored(v) for v in numerics) or len({render.scale(v) for v in numerics}) > 1:
        for value in numerics:
            render.record_widening(value, "double precision")


def _unified(common: str, kind: str) -> str:
    """The type values of `common` and of `kind` share, as Postgres resolves it: the wider number, the wider moment
    (coalesce(d, ts) is a timestamp); else `common` (its declared precision kept where the kinds agree)."""
    if kind == UNKNOWN or base_type(kind) == base_type(common):
        return common
    if common == UNKNOWN or base_type(common) in NUMERIC_ORDER and base_type(kind) in NUMERIC_ORDER:
        return _wider(common, kind)
    if base_type(common) in _WIDENING and base_type(kind) in _WIDENING:
        return max(common, kind, key=lambda k: _WIDENING.index(base_type(k)))
    return common


def _text_literal(node) -> bool:
    return isinstance(node, ast.Literal) and node.type == "text"


_NO_COLUMN = object()  # the other side of a literal read as a type, which no column's affinity converts


def _compare_as_numbers(a, a_type: str, b, b_type: str, in_list: bool = False) -> None:
    """A numeric compared as a number where SQLite would compare it as text: the store holds a numeric as its exact
    text, which a column's collation compares as a number, but a value computed from one (max(n), coalesce(n, 0),
    a CASE) has no collation, and SQLite orders any text above any number (`HAVING max(n) > 50` always held); an
    IN list takes the left side's affinity and collation alone (`10 IN (n)` and `coalesce(n, 0) IN (n)` never
    held). Such a value is read as a double."""
    for side, kind, other, other_kind in ((a, a_type, b, b_type), (b, b_type, a, a_type)):
        if base_type(kind) != "numeric" or isinstance(side, ast.Literal):
            continue
        column_beside = _stored(other) and base_type(other_kind) == "numeric" and not (in_list and side is a)
        if _stored(side) and not (in_list and side is b and not column_beside):
            continue
        if not column_beside:  # a numeric column beside it compares the two exactly, by its collation
            render.record_widening(side, "double precision")


# the comparison Postgres names in an error of a predicate's operands (`x NOT BETWEEN a AND b` is x < a OR x > b)
_COMPARED_AS = {("in", False): ("=",), ("in", True): ("<>",), ("between", False): (">=", "<="),
                ("between", True): ("<", ">"), ("is_distinct", False): ("=",), ("is_distinct", True): ("=",)}


def _compared(a, a_type: str, b, b_type: str, op: str, pos: int, in_list: bool = False) -> None:
    """Two operands compared (a comparison, IN, BETWEEN, CASE x WHEN v), each read as Postgres compares them."""
    _check_unrelated(a_type, b_type, op, pos)
    _check_beside_text(a, a_type, b, b_type, op, pos)
    _widen_moments(a, a_type, b, b_type)
    _compare_as_numbers(a, a_type, b, b_type, in_list)


def _widen_moments(a, a_type: str, b, b_type: str) -> None:
    """Two moments of different kinds compared: the narrower read as the wider, as Postgres compares them (a date
    as its midnight, a timestamp as UTC's); the store's texts of the two kinds do not compare so."""
    kinds = base_type(a_type), base_type(b_type)
    if kinds[0] in _WIDENING and kinds[1] in _WIDENING and kinds[0] != kinds[1]:
        a_wider = _WIDENING.index(kinds[0]) > _WIDENING.index(kinds[1])
        render.record_widening(b if a_wider else a, kinds[0] if a_wider else kinds[1])


def _wider(a: str, b: str) -> str:
    a, b = base_type(a), base_type(b)
    if a in NUMERIC_ORDER and b in NUMERIC_ORDER:
        return max(a, b, key=NUMERIC_ORDER.index)
    return a if a != UNKNOWN else b


def _expr_type(expr, scope: _Scope, resolve: Resolver) -> str:
    if isinstance(expr, ast.ColumnRef):  # a subquery's column has the scale of what it computes
        column = scope.lookup(expr)
        if render.is_computed(column):  # held as SQLite computed it, not as the store keeps a numeric
            render.record_computed(expr)
        render.record_scale(expr, _column_scale(column))
        return column.type
    kind = _type_of(expr, scope, resolve)
    render.record_scale(expr, numeric_scale(expr, kind, render.scale))  # its operands' noted first
    return kind


def _type_of(expr, scope: _Scope, resolve: Resolver) -> str:
    if isinstance(expr, ast.Literal):
        if expr.type == "numeric":  # an integer literal is of the narrowest type that holds it, as Postgres's
            if not str(expr.value).isdigit():
                return "numeric"
            return next((kind for kind, top in (("integer", 2**31), ("bigint", 2**63)) if int(expr.value) < top),
                        "numeric")
        return {"null": UNKNOWN}.get(expr.type, expr.type)
    if isinstance(expr, ast.Cast):
        operand, target = _expr_type(expr.expr, scope, resolve), normalize(expr.type)
        render.record_types(expr, (base_type(operand), target))  # a truth value's text, a double's rounding
        return target
    if isinstance(expr, ast.BinaryOp):
        left, right = _expr_type(expr.left, scope, resolve), _expr_type(expr.right, scope, resolve)
        if expr.op == "-" and base_type(left) in _MOMENTS and base_type(right) in _MOMENTS:
            return "integer" if base_type(left) == base_type(right) == "date" else "interval"
        moment = next((t for t in (left, right) if base_type(t) in _MOMENTS), None)
        if "interval" in (base_type(left), base_type(right)) and expr.op in ("+", "-", "*", "/", "%"):
            interval = expr.right if base_type(right) == "interval" else expr.left
            if expr.op not in ("+", "-") or moment is None or not _interval_literal(interval):
                raise NotSupportedYet(f"interval arithmetic ({base_type(left)} {expr.op} {base_type(right)}) is not "
                                      "supported yet: a timestamp or date plus or minus an interval literal is",
                                      expr.pos)
            return "timestamp" if base_type(moment) == "date" else moment  # a date moved by an interval: a timestamp
        if expr.op in ("+", "-") and moment is not None:
            other = right if moment is left else left
            if base_type(moment) == "date" and base_type(other) in ("smallint", "integer") and (
                    expr.op == "+" or moment is left):
                return "date"
            if base_type(other) in NUMERIC_ORDER or (expr.op == "+" and base_type(other) in _MOMENTS):
                raise OperandError(f"operator does not exist: {_named(left)} {expr.op} {_named(right)}", expr.pos)
        if expr.op in _ARITHMETIC:  # a comparison's, _compared's
            _check_unrelated(left, right, expr.op, expr.pos)
        if expr.op in ("+", "-") and base_type(left) in NUMERIC_ORDER and base_type(right) in NUMERIC_ORDER:
            render.record_types(expr, ("number", "number"))
        if expr.op in _COMPARISONS:
            _compared(expr.left, left, expr.right, right, expr.op, expr.pos)
        elif expr.op in _ARITHMETIC:
            _check_beside_text(expr.left, left, expr.right, right, expr.op, expr.pos)
        if expr.op == "/":
            if base_type(left) in INTEGERS and base_type(right) in INTEGERS:
                render.record_integer_division(expr)
            # a computed numeric (a date part, a sum) may be SQLite's integer, which `/` truncates
            for side, kind in ((expr.left, left), (expr.right, right)):
                if base_type(kind) in ("numeric", "real", "double precision") and not isinstance(side, ast.Literal):
                    render.record_widening(side, "double precision")
        if expr.op == "%" and {base_type(left), base_type(right)} & {"real", "double precision"}:
            raise OperandError(f"operator does not exist: {_named(left)} % {_named(right)}", expr.pos)
        if expr.op in _ARITHMETIC:
            return _wider(left, right)
        if expr.op == "||":
            jsonb = {base_type(left), base_type(right)} == {"jsonb"} or any(  # a text literal beside jsonb is jsonb
                base_type(kind) == "jsonb" and _text_literal(other)
                for kind, other in ((left, expr.right), (right, expr.left)))
            if left.endswith("[]") or right.endswith("[]") or jsonb:
                shown = ["jsonb", "jsonb"] if jsonb else [k if k.endswith("[]") else _named(k) for k in (left, right)]
                raise NotSupportedYet(f"{shown[0]} || {shown[1]} is not supported yet: || joins text", expr.pos)
            if not {base_type(left), base_type(right)} & {"text", UNKNOWN}:  # Postgres's || takes text on one side
                raise OperandError(f"operator does not exist: {_named(left)} || {_named(right)}", expr.pos)
            render.record_types(expr, (base_type(left), base_type(right)))  # a truth value's text
            return "text"
        if expr.op == "->":
            return "jsonb"
        if expr.op == "->>":
            return "text"
        if expr.op in ("AND", "OR"):
            _truth_argument(expr.left, left, expr.op)
            _truth_argument(expr.right, right, expr.op)
        return "boolean"
    if isinstance(expr, ast.UnaryOp):
        inner = _expr_type(expr.operand, scope, resolve)
        if expr.op == "NOT":
            _truth_argument(expr.operand, inner, "NOT")
        return "boolean" if expr.op == "NOT" else inner
    if isinstance(expr, ast.Predicate):
        rows = [(o.query, bind_query(o.query, resolve, outer=scope))  # EXISTS's or IN's, typed, its outer reads noted
                for o in expr.operands if isinstance(o, ast.Subquery)]
        types = [_expr_type(o, scope, resolve) for o in expr.operands if not isinstance(o, ast.Subquery)]
        query, bound = rows[0] if rows else (None, None)
        if expr.kind == "in" and rows and types and len(query.cores) == 1 and bound.columns and not isinstance(
                query.cores[0].items[0].expr, ast.Star):  # a value IN a query's values: compared as by `=`
            _compared(expr.operands[0], types[0], query.cores[0].items[0].expr, bound.columns[0].type, "=",
                      expr.pos, in_list=True)  # NOT IN (SELECT …) is NOT (x = ANY (…)) to Postgres
        compared = expr.kind in ("in", "between", "is_distinct") and len(types) == len(expr.operands)  # not of
        # a subquery's rows, which `types` leaves out
        for i, (operand, kind) in enumerate(zip(expr.operands[1:], types[1:]) if compared else ()):  # each
            # compared with the first, by the comparison Postgres names (BETWEEN's bounds by >= and <=)
            op = _COMPARED_AS[expr.kind, expr.negated][min(i, 1) if expr.kind == "between" else 0]
            _compared(expr.operands[0], types[0], operand, kind, op, expr.pos, in_list=expr.kind == "in")
        if expr.kind == "is" and base_type(types[0]) not in ("boolean", UNKNOWN) and not _text_literal(
                expr.operands[0]):
            truth = {True: "TRUE", False: "FALSE", None: "UNKNOWN"}[expr.operands[1].value]
            raise OperandError(f"argument of IS {truth} must be type boolean, not type {types[0]}",
                               getattr(expr.operands[0], "pos", 0) or expr.pos)  # at the argument, as Postgres
        if expr.kind == "any" and types[1] != UNKNOWN and not types[1].endswith("[]"):
            raise OperandError(f"op ANY/ALL (array) requires an array on its right, not type {types[1]}", expr.pos)
        return "boolean"
    if isinstance(expr, ast.Case):
        operand = None if expr.operand is None else _expr_type(expr.operand, scope, resolve)
        for i, (when, _) in enumerate(expr.whens):
            kind = _expr_type(when, scope, resolve)
            if operand is not None:  # CASE x WHEN v: x = v, refused at its WHEN
                _compared(expr.operand, operand, when, kind, "=", expr.when_pos[i] if expr.when_pos else expr.pos)
            else:
                _truth_argument(when, kind, "CASE/WHEN")
        results = [then for _, then in expr.whens] + ([] if expr.default is None else [expr.default])
        kinds = [_expr_type(r, scope, resolve) for r in results]
        common = _common_type(results, kinds)
        if base_type(common) == "numeric":
            _numbers_alike(results, kinds)
        return common
    if isinstance(expr, ast.Subquery):
        bound = bind_query(expr.query, resolve, outer=scope)
        return bound.columns[0].type if bound.columns else UNKNOWN
    if isinstance(expr, ast.FunctionCall):
        arg_types = [_expr_type(a, scope, resolve) for a in expr.args]
        name = expr.name.value
        if expr.over is not None:
            for part in (*expr.over.partition_by, *(o.expr for o in expr.over.order_by)):
                _expr_type(part, scope, resolve)
        if name in ("round", "array", "concat", "concat_ws"):  # a double's rounding; an array's truth values,
            # JSON's true and false; the text of what concat joins
            render.record_types(expr, tuple(base_type(t) for t in arg_types))
        if name == "mod" and {base_type(t) for t in arg_types} & {"real", "double precision"}:  # as `%`
            raise OperandError(f"function mod({', '.join(_named(t) for t in arg_types)}) does not exist", expr.pos)
        if name == "to_char" and arg_types and base_type(arg_types[0]) in NUMERIC_ORDER:
            raise NotSupportedYet("to_char of a number is not supported yet: to_char takes a timestamp or a date here",
                                  expr.pos)
        if name == "[]":  # a subscript: an element of the array
            return arg_types[0][:-2] if arg_types[0].endswith("[]") else UNKNOWN
        if name == "array":  # ARRAY[a, b]: of the elements' common type
            element = UNKNOWN
            for kind in arg_types:
                element = _wider(element, kind)
            return UNKNOWN if element == UNKNOWN else f"{element}[]"
        if name in _RANKS:
            return _RANKS[name]
        if name in ("lag", "lead", "nth_value") and arg_types:
            return arg_types[0]
        for item in expr.order_by:  # the aggregate sorts SQLite's values: a numeric or an interval is held as text
            kind = base_type(_expr_type(item.expr, scope, resolve))
            if kind in ("numeric", "uint8", "interval"):
                raise NotSupportedYet(f"ORDER BY a value of type {kind} inside {name}() is not supported yet",
                                      getattr(item.expr, "pos", expr.pos))
        if name in ("array_agg", "list_agg") and len(arg_types) == 1:  # Materialize's list is icesink's array
            return UNKNOWN if arg_types[0] == UNKNOWN else f"{arg_types[0]}[]"
        if name in _AGGREGATE_TYPES:
            return _AGGREGATE_TYPES[name]
        if name == "sum" and arg_types:
            base = base_type(arg_types[0])
            return "bigint" if base in ("smallint", "integer") else (
                "double precision" if base in ("real", "double precision") else "numeric")
        if name in ("avg", *_SPREADS) and arg_types:
            return "double precision" if base_type(arg_types[0]) in ("real", "double precision") else "numeric"
        if name in _UNIFYING and arg_types:
            common = _common_type(expr.args, arg_types)
            if name == "coalesce" and base_type(common) == "numeric":
                _numbers_alike(expr.args, arg_types)
            if name != "coalesce" and base_type(common) == "numeric":  # they compare their arguments
                for arg in expr.args:
                    if not isinstance(arg, ast.Literal):
                        render.record_widening(arg, "double precision")
            return common
        if name in _ROUNDING and arg_types and base_type(arg_types[0]) in INTEGERS:
            if len(arg_types) == 1:  # Postgres's floor of an integer is its floor of a double: floor(7) / 2 is 3.5
                render.record_widening(expr.args[0], "double precision")
                return "double precision"
            return "numeric"  # round(7, 2) is numeric's round: 7.00
        if name == "date_trunc" and arg_types and base_type(arg_types[-1]) == "date":
            return "timestamp with time zone"  # Postgres's date_trunc of a date: the date read as a timestamptz
        if name in ("min", "max") and len(arg_types) == 1 and base_type(arg_types[0]) == "numeric" and not (
                _stored(expr.args[0]) or isinstance(expr.args[0], ast.Literal)):
            # a computed numeric is SQLite's text or double, which it orders as text above any number
            render.record_widening(expr.args[0], "double precision")
        if name in _PASSTHROUGH and arg_types:
            return arg_types[-1] if name == "date_trunc" else arg_types[0]
        if name == "sign" and arg_types:  # of an integer too, a double precision, Postgres's preferred number type
            return "numeric" if base_type(arg_types[0]) == "numeric" else "double precision"
        if name in _TEXT_FUNCTIONS:
            return "text"
        if name == "date_bin" and len(arg_types) == 3:
            return arg_types[1]
        if name == "regexp_match":
            return "text[]"
        if name in ("length", "char_length", "position", "strpos", "octet_length", "ascii", "array_length",
                    "cardinality", "jsonb_array_length"):
            return "integer"
        if name in ("starts_with", "bool_and", "bool_or", "every"):
            return "boolean"
        if name == "make_date":
            return "date"
        if name == "timezone" and len(arg_types) == 2:  # AT TIME ZONE: a local time to a moment, or back
            return "timestamp with time zone" if base_type(arg_types[1]) == "timestamp" else "timestamp"
        if name in _DOUBLE_FUNCTIONS:
            return "double precision"
        if name == "mod" and len(arg_types) == 2:  # as `%`: of its numbers' wider type (a double refused above; a
            # text literal is read as the other's type)
            numbers = [t for t in arg_types if base_type(t) in NUMERIC_ORDER]
            return _wider(*numbers) if len(numbers) == 2 else numbers[0] if numbers else UNKNOWN
        if name == "div" or name == "log" and len(arg_types) == 2:  # Postgres has them of numerics alone
            return "numeric"
        if name in _NUMERIC_OR_DOUBLE and arg_types:  # a numeric's is a numeric; of anything else, a double
            kinds = {base_type(t) for t in arg_types}
            return "numeric" if "numeric" in kinds and not kinds & {"real", "double precision"} else \
                "double precision"
        if name in ("now", "current_timestamp", "to_timestamp"):
            return "timestamp with time zone"
        if name in _CLOCK_TYPES:
            return _CLOCK_TYPES[name]
        if name in ("extract", "date_part"):  # Postgres's date_part is a double precision, but a view's stored
            # text holds EXTRACT as date_part, whose columns would change type when it is planned again
            if expr.shown == "extract" and len(expr.args) == 2 and isinstance(expr.args[0], ast.Literal):
                render.record_scale(expr, _extract_scale(str(expr.args[0].value), base_type(arg_types[1])))
            return "numeric"
        return UNKNOWN
    if isinstance(expr, ast.RowConstructor):
        return "record"
    return UNKNOWN


def _from_scope(core: ast.SelectCore, resolve: Resolver, relations: list[Relation],
                outer: _Scope | None = None) -> _Scope:
    scope = _Scope(outer)

    def add(item):
        if isinstance(item, ast.TableRef):
            relation = resolve(item)
            relations.append(relation)
            _note_view_columns(relation)
            scope.add(item.alias.value if item.alias else item.name.name, relation, relation.columns)
        elif isinstance(item, (ast.FunctionRef, ast.ShowRef)):  # a table function's or SHOW's rows: columns unknown
            name = item.alias.value if item.alias else getattr(getattr(item, "call", None), "name", ast.Name("")).value
            scope.add(name, None, None)
        else:
            bound = bind_query(item.query, resolve)
            relations.extend(bound.relations)
            # a subquery's unique key is a key of the rows it gives, as a table's primary key is of its rows
            keyed = Relation("", item.alias.value, bound.columns, tuple(sorted(bound.unique_keys[0]))) if (
                bound.columns is not None and bound.unique_keys) else None
            scope.add(item.alias.value, keyed, bound.columns)

    for from_item in core.from_items:
        add(from_item.first)
        for join in from_item.joins:
            add(join.right)
    return scope


def _note_view_columns(relation: Relation) -> None:
    """A view's columns as its query computes them: their scales, and which numerics it computes."""
    for column, scale, computed in zip(relation.columns or (), relation.scales, relation.computed or
                                       (False,) * len(relation.scales)):
        render.record_column_scale(column, scale)
        if computed:
            render.record_computed(column)


def _bind_core(core: ast.SelectCore, resolve: Resolver, relations: list[Relation], outer: _Scope | None = None):
    scope = _from_scope(core, resolve, relations, outer)
    columns: list[Column] = []
    origins: list[object] = []  # the expression behind each output column
    for item in core.items:
        if isinstance(item.expr, ast.Star):
            qualifier = item.expr.qualifier.value if item.expr.qualifier else None
            expanded = scope.all_columns(qualifier)
            if expanded is None:
                return scope, None, None
            for column in expanded:
                columns.append(column)
                origins.append(ast.ColumnRef((ast.Name(column.name),)))
            continue
        column = Column(output_name(item), _expr_type(item.expr, scope, resolve))
        render.record_column_scale(column, render.scale(item.expr))
        if base_type(column.type) in INTEGERS and _integer_arithmetic(item.expr) and item.expr not in core.group_by:
            # (a group's key stays as grouped, which a view's sink finds its key by)
            render.record_integer_output(item.expr, base_type(column.type))
        if base_type(column.type) == "numeric" and not _stored(item.expr):
            render.record_computed(column)
        columns.append(column)
        origins.append(item.expr)
    names = {c.name for c in columns}
    ons = [join.on for item in core.from_items for join in item.joins]  # read as WHERE is (text beside a number)
    for expr, what in ((core.where, "WHERE"), (core.having, "HAVING"), *((on, "JOIN/ON") for on in ons)):
        if expr is not None:
            _truth_argument(expr, _expr_type(expr, scope, resolve), what)
    for expr in (*core.group_by, *core.distinct_on):  # an ordinal, or an output's name, says no more
        constant = isinstance(expr, ast.Literal) and expr.type == "numeric"
        output = isinstance(expr, ast.ColumnRef) and expr.qualifier is None and expr.column in names
        if not constant and not (output and not _in_scope(scope, expr)):
            _expr_type(expr, scope, resolve)
    return scope, columns, origins


def _integer_arithmetic(expr) -> bool:
    """`+`, `-` or `*`, which may leave an integer type's range (a division may not, but by -1)."""
    return (isinstance(expr, ast.BinaryOp) and expr.op in ("+", "-", "*")) or (
        isinstance(expr, ast.UnaryOp) and expr.op == "-")


def _in_scope(scope: _Scope, ref: ast.ColumnRef) -> bool:
    """Whether FROM's relations have the column (GROUP BY and DISTINCT ON may name an output instead, as in
    Postgres, where an input column of that name comes first)."""
    try:
        scope.lookup(ref)
        return True
    except PlanError:
        return False


def _output_of(expr, names: list[str], origins: list, scope: _Scope) -> str | None:
    """The output column an expression of GROUP BY or DISTINCT ON is (by ordinal, or the same expression), if any."""
    if is_ordinal(expr):
        index = ordinal(expr, len(names))
        return None if index is None else names[index]
    matches = [n for n, o in zip(names, origins) if o == expr or _same_column(o, expr)]
    if not matches and isinstance(expr, ast.ColumnRef) and expr.qualifier is None and expr.column in names and (
            not _in_scope(scope, expr)):
        return expr.column  # an output's name (an input column of that name would come first)
    return matches[0] if matches else None


def _same_column(a, b) -> bool:
    """Whether two column references name one column: the same name, of the same relation where both say which
    (`o.id` is not `c.id`)."""
    return (isinstance(a, ast.ColumnRef) and isinstance(b, ast.ColumnRef) and a.column == b.column
            and (None in (a.qualifier, b.qualifier) or a.qualifier == b.qualifier))


def _unique_keys(core: ast.SelectCore, scope: _Scope, columns, origins) -> list[frozenset[str]]:
    names = [c.name for c in columns]
    keys = []
    if any(isinstance(n, ast.FunctionCall) and n.name.value == "generate_series" for n in walk(core.items)):
        return keys  # a row per value of the series: no key of the rows read keys them
    if core.group_by:
        grouped = [_output_of(expr, names, origins, scope) for expr in core.group_by]
        if None not in grouped:
            keys.append(frozenset(grouped))
    if core.distinct:
        keys.append(frozenset(names))
    if core.distinct_on:  # one row per value of its expressions: those among the outputs are a key
        on = [_output_of(expr, names, origins, scope) for expr in core.distinct_on]
        if None not in on:
            keys.append(frozenset(on))
    plain = len(core.from_items) == 1 and not core.from_items[0].joins and not core.group_by
    if plain and scope.entries and scope.entries[0][1] is not None and scope.entries[0][1].primary_key:
        relation = scope.entries[0][1]
        renamed = {o.column: n for n, o in zip(names, origins) if isinstance(o, ast.ColumnRef)}
        if all(k in renamed for k in relation.primary_key):
            keys.append(frozenset(renamed[k] for k in relation.primary_key))
    return keys


def bind_query(query: ast.Query, resolve: Resolver, outer: _Scope | None = None) -> BoundQuery:
    relations: list[Relation] = []
    bound_cores = [_bind_core(core, resolve, relations, outer) for core in query.cores]
    _, columns, _ = bound_cores[0]
    if any(other is None for _, other, _ in bound_cores):
        return BoundQuery(None, (), tuple(relations))
    check_positions("ORDER BY", [item.expr for item in query.order_by], len(columns))
    for core, (_, bound, _) in zip(query.cores, bound_cores):
        check_positions("GROUP BY", core.group_by, len(bound))
    for _, other, _ in bound_cores[1:]:
        if len(other) != len(columns):
            raise PlanError("each UNION/EXCEPT/INTERSECT query must have the same number of columns")
    keys: list[frozenset[str]] = []
    if len(query.cores) == 1:
        core = query.cores[0]
        scope, _, origins = bound_cores[0]
        keys = _unique_keys(core, scope, columns, origins)
        _order_numbers_as_numbers(query.order_by, scope, columns, origins, resolve)
    elif all(op in ("UNION", "UNION DISTINCT") for op in query.set_operators):
        keys = [frozenset(c.name for c in columns)]
    for core, (scope, bound, origins) in zip(query.cores, bound_cores):  # once ORDER BY's subqueries are bound
        check_grouping(core, scope, origins, [c.name for c in bound], query.order_by if len(query.cores) == 1 else ())
    if query.set_operators:
        types = _unify_set_columns(query.cores, bound_cores)
        columns = _shared_scales([other for _, other, _ in bound_cores], types)
    return BoundQuery(tuple(columns), tuple(keys), tuple(relations))


def _stored(node) -> bool:
    """Whether `node` is a column holding a numeric as the store keeps it, its exact text, which the column's
    collation compares as a number (not one a subquery or view computes: max(n) AS c)."""
    return isinstance(node, ast.ColumnRef) and not render.is_computed(node)


def computed_columns(columns) -> tuple[bool, ...]:
    """Which output columns are numerics the query computes."""
    return tuple(render.is_computed(c) for c in columns or ())


def output_scales(columns) -> tuple[int | None, ...]:
    """Each output column's numeric scale where the query fixes one (numeric_scale.py): what it computes, or a
    stored column's declared scale; None for another type or where none is fixed."""
    return tuple(_column_scale(c) if base_type(c.type) == "numeric" else None for c in columns or ())


def _column_scale(column: Column) -> int | None:
    """The scale noted for a subquery's, a set operation's or a view's column (what its query computes), else its
    type's (a stored column's: an integer's 0, a numeric's declared one)."""
    noted, scale = render.column_scale(column)
    return scale if noted else 0 if base_type(column.type) in INTEGERS else declared_scale(column.type)


def _shared_scales(cores_columns: list[list[Column]], types: list[str]) -> list[Column]:
    """A set operation's output columns, of `types`, each with the scale its queries' columns share (none where
    they differ: Postgres keeps each value's own)."""
    shared = []
    for at, column in enumerate(cores_columns[0]):
        scales = {_column_scale(columns[at]) for columns in cores_columns}
        shared.append(Column(column.name, types[at], column.nullable))
        render.record_column_scale(shared[-1], scales.pop() if len(scales) == 1 else None)
        if any(render.is_computed(columns[at]) for columns in cores_columns):
            render.record_computed(shared[-1])
    return shared


def _unify_set_columns(cores, bound_cores) -> list[str]:
    """Each column of UNION, INTERSECT and EXCEPT of its queries' common type, as Postgres resolves it (an integer
    beside a double is a double, a date beside a timestamp its midnight), each query's values read as that type
    where SQLite holds them otherwise (x / 2 of an integer among doubles truncated; a date kept its text).
    A numeric column holds numbers, which compare and order as Postgres's: SQLite holds a stored numeric as its
    text and one computed (n * 1, 2.5) as a double, which it never takes as equal (n UNION n * 1 kept both) and
    orders after every number; unless each query gives it as it is stored (which its collation compares as a
    number, and which keeps every digit), each query's value is read as a double. A column that `*` gives keeps
    what it holds, and then so do the others."""
    types = []
    for i in range(len(bound_cores[0][1])):
        kinds = [b[1][i].type for b in bound_cores]
        common = kinds[0]
        for kind in kinds[1:]:
            common = _unified(common, kind)
        types.append(common)
        values = [origins[i] for _, _, origins in bound_cores]
        if not all(any(v is item.expr for item in core.items) for v, core in zip(values, cores)):
            continue
        target, null = base_type(common), [isinstance(v, ast.Literal) and v.type == "null" for v in values]
        if target == "numeric" and not all(n or _stored(v) and base_type(k) == "numeric"
                                           for v, k, n in zip(values, kinds, null)):
            target = "double precision"  # SQLite never takes an integer or a double equal to a numeric's text
        elif target == "numeric" or target not in ("real", "double precision", *_WIDENING):
            continue  # stored numerics alone (or beside NULL), which their collation compares, every digit kept
        for value, kind, is_null in zip(values, kinds, null):
            if base_type(kind) != target and not is_null:
                render.record_widening(value, target)
    return types


def _order_numbers_as_numbers(order_by, scope: _Scope, columns, origins, resolve: Resolver) -> None:
    """ORDER BY a numeric computed from a column (max(n), coalesce(n, 0); by the output's name or position too) orders
    as a number: SQLite holds a numeric as its text, which only a stored column's collation orders as a number
    (10.00 came before 2.50)."""
    names = [c.name for c in columns]
    for item in order_by:
        expr = item.expr
        if is_ordinal(expr):
            output = ordinal(expr, len(names))
        elif isinstance(expr, ast.ColumnRef) and expr.qualifier is None and expr.column in names:
            output = names.index(expr.column)  # an output's name comes before an input column's, as in Postgres
        else:
            output = None
        if output is not None:
            kind, origin = columns[output].type, origins[output]
        else:
            try:
                kind, origin = _expr_type(expr, scope, resolve), expr
            except PlanError:  # refused where the query is run, as before
                continue
        if base_type(kind) != "numeric" or _stored(origin) or isinstance(origin, ast.Literal):
            continue
        if origin is expr:
            render.record_widening(expr, "double precision")
        elif not any(isinstance(n, ast.FunctionCall) and n.name.value in (*UNMATERIALIZABLE, "generate_series")
                     for n in walk(origin)):  # ordered by the output's expression again, which must give its value
            render.record_ordered_as_number(expr, origin)


def expand_distinct_on_stars(query: ast.Query, resolve: Resolver) -> ast.Query:
    """`SELECT DISTINCT ON (…) *` with the star written out as the columns of FROM's tables (qualified by their
    names there): DISTINCT ON runs as a ranking in a subquery, whose columns must each be named. Such a star over
    anything else, or in a subquery, is refused: name the columns."""
    cores = []
    for core in query.cores:
        if core.distinct_on and any(isinstance(i.expr, ast.Star) for i in core.items):
            _star_tables_only(core)
            scope = _from_scope(core, resolve, [])
            items = []
            for item in core.items:
                if not isinstance(item.expr, ast.Star):
                    items.append(item)
                    continue
                qualifier = item.expr.qualifier.value if item.expr.qualifier else None
                for alias, _, columns in scope.entries:
                    if qualifier in (None, alias):
                        items += [ast.SelectItem(ast.ColumnRef((ast.Name(alias), ast.Name(c.name))))
                                  for c in columns or ()]
            core = dataclasses.replace(core, items=tuple(items))
        cores.append(core)
    for node in walk(tuple(cores)):
        if isinstance(node, ast.Query):
            for inner in node.cores:
                if inner.distinct_on and any(isinstance(i.expr, ast.Star) for i in inner.items):
                    raise NotSupportedYet("DISTINCT ON with * in a subquery or WITH is not supported yet: name its "
                                          "columns", inner.distinct_on[0].pos)
    return dataclasses.replace(query, cores=tuple(cores))


def _star_tables_only(core: ast.SelectCore) -> None:
    for item in core.from_items:
        for relation in (item.first, *(j.right for j in item.joins)):
            if not isinstance(relation, ast.TableRef):
                raise NotSupportedYet("DISTINCT ON with * over a subquery or a table function is not supported yet: "
                                      "name its columns", core.distinct_on[0].pos)


def check_qualified_columns(query: ast.Query, outer: tuple = ()) -> None:
    """`schema.relation.column`, `database.schema.relation.column` and `schema.relation.*` must name a relation of
    FROM by its own name, in the schema it is in; an alias takes no schema, and hides the name it stands for (as in
    Postgres). `outer`: what the enclosing queries' FROM clauses expose, for a correlated subquery."""
    for core in query.cores:
        exposed = outer + tuple(_exposed(item) for f in core.from_items
                                for item in (f.first, *(j.right for j in f.joins)))
        order = query.order_by if len(query.cores) == 1 else ()
        for node in _this_level((core, order)):
            if isinstance(node, ast.Query):
                check_qualified_columns(node, exposed)
            elif isinstance(node, ast.ColumnRef) and len(node.parts) > 2:
                _check_path(node.parts[:-1], ".".join(p.value for p in node.parts), node.pos, exposed)
            elif isinstance(node, ast.Star) and node.schema:
                path = (*node.schema, node.qualifier)
                _check_path(path, ".".join(p.value for p in path) + ".*", node.pos, exposed)


def _exposed(item) -> tuple[str, tuple[str, str] | None, str | None]:
    """The name a FROM item goes by, the (database, schema) it is in (None for an alias), and the name an alias
    hides."""
    from ..catalog.schema import SCHEMA_OF_VIEW

    alias = getattr(item, "alias", None)
    if not isinstance(item, ast.TableRef):
        return (alias.value if alias else "", None, None)
    if alias is not None:
        return (alias.value, None, item.name.name)
    qualifier = item.name.qualifier
    schema = (qualifier if len(qualifier) == 2 else ("materialize", qualifier[0]) if qualifier
              else ("materialize", SCHEMA_OF_VIEW.get(item.name.name, "public")))
    return (item.name.name, tuple(schema), None)


def _check_path(path: tuple[ast.Name, ...], written: str, pos: int, exposed) -> None:
    *prefix, relation = (p.value for p in path)
    for name, schema, _ in reversed(exposed):  # the innermost FROM first
        if name != relation:
            continue
        if schema is None:
            raise PlanError(f"invalid reference to \"{written}\": \"{relation}\" is an alias or a subquery, which "
                            f"takes no schema; write {relation}.{written.rsplit('.', 1)[1]}", pos)
        if tuple(prefix) != schema[-len(prefix):]:
            raise PlanError(f"invalid reference to \"{written}\": the query reads {relation} from "
                            f"{'.'.join(schema)}, not {'.'.join(prefix)}", pos)
        return
    hidden = [alias for alias, _, hides in exposed if hides == relation]
    hint = f"; the query calls it \"{hidden[-1]}\"" if hidden else ""
    raise PlanError(f"invalid reference to \"{written}\": no relation \"{relation}\" in FROM{hint}", pos)


def _this_level(clauses) -> Iterator[object]:
    """The nodes of a SELECT's own clauses; a query nested in them is yielded, not entered."""
    stack = [clauses]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.Query, ast.TableRef, ast.ShowRef)):
            stack.extend(reversed(ast.children(node)))
