"""The AST rendered for each engine that runs it, from the one tree the grammar built: queries and expressions become
sqlglot's expression tree (one tree, one generator per dialect: SQLite for system views and engine tables, Spark for
Iceberg tables, Postgres for the text icesink keeps and shows); statements that create objects become the dialect's
own text (`statement_sql`), which is what the catalog stores and what renames and ALTERs regenerate."""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Optional

from sqlglot import exp
from sqlglot.dialects.dialect import rename_func
from sqlglot.dialects.postgres import Postgres
from sqlglot.dialects.spark import Spark as SparkDialect
from sqlglot.errors import ParseError

from ..errors import PlanError
from ..model.substrings import substring_span
from . import ast
from .masking import CREDENTIAL_OPTIONS, REDACTED
from .output_names import output_name

# How tightly each operator binds (higher: tighter), to parenthesise only where the tree needs it.
_BINARY = {
    "OR": (1, exp.Or), "AND": (2, exp.And),
    "=": (4, exp.EQ), "<>": (4, exp.NEQ), "!=": (4, exp.NEQ), "<": (4, exp.LT), "<=": (4, exp.LTE),
    ">": (4, exp.GT), ">=": (4, exp.GTE),
    "||": (6, exp.DPipe), "+": (7, exp.Add), "-": (7, exp.Sub), "*": (8, exp.Mul), "/": (8, exp.Div),
    "%": (8, exp.Mod),
}
_NOT, _COMPARISON, _PREDICATE, _JSON, _UNARY, _ATOM = 3, 4, 5, 6, 9, 11
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


class Stored(Postgres):
    """The dialect of the text icesink keeps and shows: Postgres, with the functions Postgres writes in special forms
    (SUBSTRING(a FROM 1 FOR 2), POSITION(b IN a)) written as plain calls, which the grammar reads back."""

    class Generator(Postgres.Generator):
        TRANSFORMS = {**Postgres.Generator.TRANSFORMS,
                      exp.Substring: rename_func("SUBSTRING"),
                      exp.StrPosition: lambda self, e: self.func("STRPOS", e.this, e.args.get("substr")),
                      exp.Extract: rename_func("EXTRACT")}


def stored_sql(tree: exp.Expression) -> str:
    """A tree as the text icesink keeps and shows (SHOW CREATE, a view's definition)."""
    return tree.sql(dialect=Stored)


def integer_literal(node: Optional[exp.Expression]) -> Optional[int]:
    """The value of `3` or `-3` as sqlglot holds them; None for anything else."""
    if isinstance(node, exp.Neg):
        inner = integer_literal(node.this)
        return None if inner is None else -inner
    return int(node.name) if isinstance(node, exp.Literal) and node.is_int else None


def literal_substring(node: exp.Substring, text: exp.Expression) -> Optional[exp.Substring]:
    """substring of `text` with `node`'s bounds worked out as Postgres counts them, when they are literals (a
    negative literal count, an error, is refused at CREATE); None otherwise."""
    start, count = node.args.get("start"), node.args.get("length")
    fixed = integer_literal(start), integer_literal(count) if count is not None else None
    if fixed[0] is None or (count is not None and (fixed[1] is None or fixed[1] < 0)):
        return None
    begin, length = substring_span(*fixed)
    return exp.Substring(this=text, start=exp.Literal.number(begin),
                         length=None if length is None else exp.Literal.number(length))


def _spark_substring(self, node: exp.Substring) -> str:
    """substring as Postgres counts (Spark reads a start of 0 as 1, and a negative one from the end): worked out
    here for literal bounds, else the start below 1 moved to 1 and the count shortened to match."""
    text, start, count = node.this, node.args.get("start"), node.args.get("length")
    fixed = literal_substring(node, text)
    if fixed is not None:
        return self.func("SUBSTRING", fixed.this, fixed.args["start"], fixed.args.get("length"))
    low = exp.Anonymous(this="SUBSTRING", expressions=[text.copy(), exp.Literal.number(1)] + (
        [] if count is None else [exp.Sub(this=exp.Add(this=exp.paren(start.copy()), expression=exp.paren(count.copy())),
                                          expression=exp.Literal.number(1))]))
    high = exp.Anonymous(this="SUBSTRING", expressions=[text, start] + ([] if count is None else [count]))
    return self.sql(exp.Case(ifs=[exp.If(this=exp.LT(this=exp.paren(start.copy()), expression=exp.Literal.number(1)),
                                         true=low)], default=high))


def _spark_iregex(self, node: exp.RegexpILike) -> str:
    """`~*`: Spark's RLIKE with the pattern made case-insensitive, as Java's regular expressions write it."""
    pattern = node.expression
    flagged = (exp.Literal.string("(?i)" + pattern.name) if isinstance(pattern, exp.Literal) and pattern.is_string
               else exp.Concat(expressions=[exp.Literal.string("(?i)"), pattern]))
    return self.sql(exp.RegexpLike(this=node.this, expression=flagged))


class Spark(SparkDialect):
    """Spark SQL, with Postgres's meaning where Spark's functions of the same name differ."""

    class Generator(SparkDialect.Generator):
        TRANSFORMS = {**SparkDialect.Generator.TRANSFORMS, exp.Substring: _spark_substring,
                      exp.RegexpILike: _spark_iregex}
        # Postgres's timestamp has no zone; Spark's TIMESTAMP is its timestamptz
        TYPE_MAPPING = {**SparkDialect.Generator.TYPE_MAPPING, exp.DataType.Type.TIMESTAMP: "TIMESTAMP_NTZ"}


def spark_sql(tree: exp.Expression) -> str:
    """A tree as Spark runs it (Iceberg tables, load generators); a view's stored query may hold icesink's own text of
    a double or a numeric, which Spark writes by its cast. A timestamptz's text has its zone, UTC (Spark's session
    zone) as Postgres writes it, `+00`; Spark's cast writes none."""
    tree = tree.copy()
    for division in list(tree.find_all(exp.Div)):  # each in place, those inside another too
        if division.meta.get("integers"):  # Spark's `/` gives a double
            division.replace(exp.IntDiv(this=division.this, expression=division.expression))

    def spark_text(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and node.name.lower() in (FLOAT_TEXT, NUMERIC_TEXT):
            return exp.Cast(this=node.expressions[0].transform(spark_text), to=exp.DataType.build("text"))
        if (isinstance(node, exp.Cast) and node.meta.get("operand") == "timestamp with time zone"
                and node.to.is_type(*exp.DataType.TEXT_TYPES)):
            return exp.Concat(expressions=[node, exp.Literal.string("+00")])
        return node
    return tree.transform(spark_text).sql(dialect=Spark)


_SET_OPERATIONS = {"UNION": exp.Union, "EXCEPT": exp.Except, "INTERSECT": exp.Intersect}


def identifier(name: ast.Name) -> exp.Identifier:
    return exp.to_identifier(name.value, quoted=name.quoted or not re.fullmatch(r"[a-z_][a-z0-9_$]*", name.value))


def _precedence(node) -> int:
    if isinstance(node, ast.BinaryOp):
        return _BINARY[node.op][0] if node.op in _BINARY else _JSON
    if isinstance(node, ast.UnaryOp):
        return _NOT if node.op == "NOT" else _UNARY
    if isinstance(node, ast.Predicate):  # a negated one is written NOT …, which binds as loosely as NOT
        return _NOT if node.negated and node.kind != "is_distinct" else _PREDICATE
    return _ATOM


def _operand(node, parent: int, right: bool = False) -> exp.Expression:
    """`node` converted, in parentheses where it binds less tightly than its parent (or as tightly, on the right of a
    left-associative operator)."""
    converted = expression(node)
    child = _precedence(node)
    if (isinstance(node, ast.Predicate) and node.kind != "exists" or isinstance(node, ast.BinaryOp) and _BINARY.get(
            node.op, (0,))[0] == _COMPARISON) and parent >= _COMPARISON:
        return exp.Paren(this=converted)  # `ok = (s IS NULL)`, `(a <> b) > c`: each dialect binds IS, LIKE, IN,
        # BETWEEN and comparisons beside a comparison its own way (Postgres IS more loosely; SQLite `>` more tightly
        # than `<>`)
    return exp.Paren(this=converted) if child < parent or (right and child == parent) else converted


def _function(call: ast.FunctionCall) -> exp.Expression:
    name = call.name.value
    if name == "[]":  # a subscript, counted from 1 as Postgres counts (offset): Spark's generator counts from 0
        return exp.Bracket(this=expression(call.args[0]), expressions=[expression(call.args[1])], offset=1)
    if name == "array":  # ARRAY[a, b]
        array = exp.Array(expressions=[expression(a) for a in call.args])
        array.meta["booleans"] = [i for i, t in enumerate(_typed(call) or ()) if t == "boolean"]
        return array
    if name == "round" and len(call.args) == 1 and (_typed(call) or ("",))[0] in _DOUBLES:
        return exp.Anonymous(this="rint", expressions=[expression(call.args[0])])  # Postgres's round of a double
    args = [exp.Star()] if call.star else [expression(a) for a in call.args]
    if name in ("concat", "concat_ws") and _typed(call):  # each value's text as its type's output writes it
        args = [_truth_text(arg, ("t", "f")) if kind == "boolean" else _shown_text(arg, kind, node)
                for arg, kind, node in zip(args, _typed(call), call.args)]
    if call.distinct and call.order_by:  # `string_agg(DISTINCT x, ',' ORDER BY x)`: DISTINCT is the value's
        args = [exp.Distinct(expressions=args[:1]), *args[1:]]
    elif call.distinct:
        args = [exp.Distinct(expressions=args)]
    if call.order_by:
        node = _ordered_aggregate(name, args, call.order_by)
    elif name in _AS_WRITTEN:
        node = exp.Anonymous(this=name, expressions=args)
    else:
        try:
            node = exp.func(name, *args, dialect="postgres")
        except (ValueError, TypeError):
            node = exp.Anonymous(this=name, expressions=args)
    if call.filter is not None:
        node = exp.Filter(this=node, expression=exp.Where(this=expression(call.filter)))
    if call.over is not None:
        node = exp.Window(this=node, partition_by=[expression(e) for e in call.over.partition_by] or None,
                          order=_order(call.over.order_by) if call.over.order_by else None,
                          spec=_frame(call.over.frame) if call.over.frame is not None else None)
    return node


# functions sqlglot's tree would turn into others of its own (to_char into strftime's formats, date_bin's origin
# into a bare word): called as written, icesink's own in SQLite
_AS_WRITTEN = frozenset({"to_char", "date_bin"})


def _ordered_aggregate(name: str, args: list, order_by: tuple) -> exp.Expression:
    """`string_agg(x, ',' ORDER BY y)` and the like as sqlglot's Postgres reader holds them: the order around the
    first argument (its DISTINCT too), so that each engine's SQL puts it where that engine takes it."""
    ordered = exp.Order(this=args[0], expressions=_order(order_by).expressions)
    if name == "string_agg" and len(args) == 2:
        return exp.GroupConcat(this=ordered, separator=args[1])
    if name == "array_agg" and len(args) == 1:
        return exp.ArrayAgg(this=ordered)
    return exp.Anonymous(this=name, expressions=[ordered, *args[1:]])


def _frame(frame: ast.WindowFrame) -> exp.WindowSpec:
    """A window's frame as sqlglot holds one; a frame of one bound ends at the current row."""
    def bound(end: ast.FrameBound) -> tuple:
        if end.side == "CURRENT ROW":
            return "CURRENT ROW", None
        return ("UNBOUNDED" if end.offset is None else expression(end.offset)), end.side
    start, start_side = bound(frame.start)
    end, end_side = bound(frame.end or ast.FrameBound("CURRENT ROW"))
    return exp.WindowSpec(kind=frame.unit, start=start, start_side=start_side, end=end, end_side=end_side)


def _json_path(key) -> exp.Expression:
    if isinstance(key, ast.Literal) and key.type in ("text", "numeric"):
        part = exp.JSONPathKey(this=key.value) if key.type == "text" else exp.JSONPathSubscript(this=int(key.value))
        return exp.JSONPath(expressions=[exp.JSONPathRoot(), part])
    return expression(key)


def _binary(node: ast.BinaryOp) -> exp.Expression:
    if node.op in ("->", "->>"):
        cls = exp.JSONExtract if node.op == "->" else exp.JSONExtractScalar
        return cls(this=_operand(node.left, _JSON), expression=_json_path(node.right), only_json_types=True)
    precedence, cls = _BINARY[node.op]
    left, right = _operand(node.left, precedence), _operand(node.right, precedence, right=True)
    if node.op == "||":  # Postgres binds arithmetic before ||, SQLite after it, Spark as tightly (left to right)
        left, right = (exp.Paren(this=side) if isinstance(side, _ARITHMETIC) else side for side in (left, right))
        kinds = _typed(node) or ("", "")
        left, right = (_shown_text(side, kind, operand) for side, kind, operand
                       in zip((left, right), kinds, (node.left, node.right)))
    # `/` as Postgres divides, by its operands' types: sqlglot's untyped division is a double's, which it writes for
    # Postgres (a view's stored text) as CAST(a AS DOUBLE PRECISION) / b
    built = cls(this=left, expression=right, typed=True) if cls is exp.Div else cls(this=left, expression=right)
    if node.op in ("+", "-") and _typed(node) == ("number", "number"):
        built.meta["numbers"] = True  # no moment among the operands: SQLite's own + and -
    if node.op == "/" and _recorded(("integer division", id(node))):
        built.meta["integers"] = True  # truncated, as SQLite does by the values' own types and Spark by `DIV`
    return built


# ---------------------------------------------------------------- what the binder's types change
# The binder records, by node, the types of the operands whose SQL depends on them (a truth value's text, a double's
# rounding), while it binds a statement inside `typed()`; the statement rendered inside the same `typed()` is
# written with them. A materialized view's stored text is rendered so, so that every query reading it has them.
_operand_types: ContextVar[dict | None] = ContextVar("icesink_operand_types", default=None)
_INTEGERS = ("smallint", "integer", "bigint")
_DOUBLES = ("double precision", "real")
_MOMENTS = ("timestamp", "timestamp with time zone", "time")


@contextmanager
def typed():
    token = _operand_types.set({})
    try:
        yield
    finally:
        _operand_types.reset(token)


def record_integer_division(node) -> None:
    """Notes that the division `node` is of two integers, which truncates (Spark's `/` gives a double), inside
    `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None:
        recorded[("integer division", id(node))] = True


def _recorded(key) -> bool:
    recorded = _operand_types.get()
    return recorded is not None and key in recorded


def keep_integer_divisions() -> None:
    """Forgets, inside `typed()`, all the binder noted but which divisions are of integers: Spark computes the rest by
    its own types (a decimal's division exactly, where SQLite's double would lose digits)."""
    recorded = _operand_types.get()
    if recorded is not None:
        kept = {key: value for key, value in recorded.items()
                if isinstance(key, tuple) and key[0] == "integer division"}
        recorded.clear()
        recorded.update(kept)


def record_scale(node, scale) -> None:
    """Notes the scale a numeric `node`'s text is written with (numeric_scale.py), inside `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None and scale is not None:
        recorded[("scale", id(node))] = scale


def record_column_scale(column, scale) -> None:
    """Notes the scale (None: none fixed) of a subquery's or a set operation's output `column`, which each reference
    to it takes, rather than its type's declared one (floor(n) of a numeric(10,2) has none), inside `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None:  # the column kept with it: a column gone would leave its id to another object
        recorded[("column scale", id(column))] = (column, scale)


def record_computed(node) -> None:
    """Notes that `node` (an output column, or a reference to one) is a numeric a query computes, which SQLite holds
    as it computed it (a double, or max(n)'s text) rather than as the store keeps one, inside `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None:
        recorded[("computed", id(node))] = node  # kept: a node gone would leave its id to another object


def is_computed(node) -> bool:
    recorded = _operand_types.get()
    return recorded is not None and recorded.get(("computed", id(node))) is node


def column_scale(column) -> tuple[bool, int | None]:
    """Whether a scale was noted for `column`, and which."""
    recorded = _operand_types.get()
    noted, scale = (None, None) if recorded is None else recorded.get(("column scale", id(column)), (None, None))
    return (True, scale) if noted is column else (False, None)


def scale(node):
    """The scale noted for `node`, or None."""
    recorded = _operand_types.get()
    return None if recorded is None else recorded.get(("scale", id(node)))


def record_literal(literal: ast.Literal, value, kind: str) -> None:
    """Notes that a text literal beside a number, a moment, a truth value, … is of that type, as Postgres reads it:
    its value as the store holds it, written as a `kind` of literal ("number": its digits, inf as float's repr
    writes it; "boolean"; "text"), inside `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None:
        recorded[("literal", id(literal))] = (value, kind)


def _typed_literal(literal: ast.Literal) -> exp.Expression | None:
    recorded = _operand_types.get()
    value, kind = (None, None) if recorded is None else recorded.get(("literal", id(literal)), (None, None))
    if kind == "boolean":
        return exp.Boolean(this=bool(value))
    if kind == "text":
        return exp.Literal.string(value)
    if kind == "number":  # a double's infinity, which SQLite reads from a literal past its range
        return exp.Literal.number(value.replace("inf", "9e999") if value in ("inf", "-inf") else value)
    return None


def record_types(node, types) -> bool:
    """Notes the operand types the rendering of `node` depends on; False outside `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None:
        recorded[id(node)] = types
    return recorded is not None


def _typed(node):
    recorded = _operand_types.get()
    return None if recorded is None else recorded.get(id(node))


def _truth_text(value: exp.Expression, words: tuple[str, str] = ("true", "false")) -> exp.Expression:
    """A truth value as Postgres writes it as text, 'true' or 'false' (SQLite holds it as 1 or 0); as its output
    function writes it (concat's), 't' or 'f'."""
    return exp.Case(ifs=[exp.If(this=value, true=exp.Literal.string(words[0])),
                         exp.If(this=exp.Not(this=value.copy()), true=exp.Literal.string(words[1]))])


def _shown_text(value: exp.Expression, kind: str, operand) -> exp.Expression:
    """`value`, of type `kind`, written as text as Postgres writes it where SQLite's text differs: a truth value's,
    a double's, a moment's, a numeric's of a known scale (`operand`'s, the AST node); else `value` as it is."""
    if kind == "boolean":
        return _truth_text(value)
    if kind in _DOUBLES:
        return _float_text(value, kind)
    if kind in _MOMENTS:  # the store's text of a moment is not Postgres's: each engine's writer converts the cast
        cast = exp.Cast(this=value, to=exp.DataType.build("text"))
        cast.meta["operand"] = kind
        return cast
    digits = scale(operand) if kind == "numeric" else None
    if digits is not None:
        return exp.Anonymous(this=NUMERIC_TEXT, expressions=[value, exp.Literal.number(digits)])
    return value


def _float_text(value: exp.Expression, kind: str) -> exp.Expression:
    """A double's or real's text as Postgres writes it (icesink's function in SQLite; Spark's query is given its
    own cast back, spark_sql)."""
    return exp.Anonymous(this=FLOAT_TEXT, expressions=[value, exp.Literal.string(kind)])


FLOAT_TEXT = "icesink_float_text"
NUMERIC_TEXT = "icesink_numeric_text"


def _cast(node: ast.Cast) -> exp.Expression:
    """A cast; of a boolean to text, its truth value's text; of a double to an integer, rounded half to even first,
    as Postgres rounds it (`rint`, which SQLite and Spark both have)."""
    value = _operand(node.expr, _ATOM)
    operand, target = _typed(node) or ("", "")
    if target == "text":
        shown = _shown_text(value, operand, node.expr)
        if shown is not value:
            return shown
    if operand in _DOUBLES and target in _INTEGERS:
        value = exp.Anonymous(this="rint", expressions=[value])
    cast = exp.Cast(this=value, to=data_type(node.type))
    if operand and operand != "unknown":  # how SQLite's writer converts the cast: text read strictly as an
        cast.meta["operand"] = operand  # integer, a moment's text
    return cast


def _predicate(node: ast.Predicate) -> exp.Expression:
    ops = node.operands
    if node.kind == "exists":
        built = exp.Exists(this=query(ops[0].query))
    elif node.kind == "is_null":
        built = exp.Is(this=_operand(ops[0], _PREDICATE), expression=exp.Null())
    elif node.kind == "is":  # IS TRUE, IS FALSE; IS UNKNOWN, which is IS NULL of a boolean
        tested = ops[0]
        if isinstance(tested, ast.Literal) and tested.type == "text":  # 'yes' IS TRUE reads the text as a boolean
            tested = ast.Cast(tested, ast.DataType("boolean"), tested.pos)
        built = exp.Is(this=_operand(tested, _PREDICATE), expression=expression(ops[1]))
    elif node.kind in ("regex", "iregex"):
        cls = exp.RegexpLike if node.kind == "regex" else exp.RegexpILike
        built = cls(this=_operand(ops[0], _PREDICATE), expression=_operand(ops[1], _PREDICATE, True))
    elif node.kind == "is_distinct":
        cls = exp.NullSafeEQ if node.negated else exp.NullSafeNEQ
        return cls(this=_operand(ops[0], _PREDICATE), expression=_operand(ops[1], _PREDICATE, True))
    elif node.kind in ("like", "ilike"):
        cls = exp.Like if node.kind == "like" else exp.ILike
        built = cls(this=_operand(ops[0], _PREDICATE), expression=_operand(ops[1], _PREDICATE, True))
    elif node.kind == "in":
        if len(ops) == 2 and isinstance(ops[1], ast.Subquery):
            built = exp.In(this=_operand(ops[0], _PREDICATE), query=exp.Subquery(this=query(ops[1].query)))
        else:
            built = exp.In(this=_operand(ops[0], _PREDICATE), expressions=[expression(o) for o in ops[1:]])
    elif node.kind == "any":  # `x = ANY (array)`; `x <> ALL (array)` is its negation
        built = exp.EQ(this=_operand(ops[0], _PREDICATE), expression=exp.Any(this=exp.Paren(this=expression(ops[1]))))
    elif node.kind == "between":
        built = exp.Between(this=_operand(ops[0], _PREDICATE), low=_operand(ops[1], _PREDICATE),
                            high=_operand(ops[2], _PREDICATE))
    else:
        raise ValueError(f"predicate {node.kind}")
    return exp.Not(this=built) if node.negated else built


def data_type(node: ast.DataType) -> exp.DataType:
    try:
        return exp.DataType.build(str(node), dialect="postgres")
    except (ParseError, ValueError):
        raise PlanError(f'type "{node}" does not exist', node.pos) from None


def expression(node) -> exp.Expression:
    """An AST expression as sqlglot's tree; a moment compared with one of a wider kind, cast to it (noted by the
    binder: SQLite holds each kind as text of its own form, which would compare wrongly across kinds)."""
    recorded = _operand_types.get()
    origin = None if recorded is None else recorded.get(("as number", id(node)))
    if origin is not None:
        return exp.Cast(this=expression(origin), to=exp.DataType.build("double precision", dialect="postgres"))
    converted = _expression(node)
    integer = None if recorded is None else recorded.get(("integer", id(node)))
    if integer is not None:  # cast to its own type, which checks the type's range
        converted = exp.Cast(this=exp.paren(converted) if isinstance(converted, exp.Binary) else converted,
                             to=exp.DataType.build(integer, dialect="postgres"))
    wider = None if recorded is None else recorded.get(("widen", id(node)))
    if wider is None:
        return converted
    return exp.Cast(this=exp.paren(converted) if isinstance(converted, exp.Binary) else converted,
                    to=exp.DataType.build(wider, dialect="postgres"))


def record_widening(node, wider: str) -> None:
    """Notes that a moment `node` is compared as the wider kind of moment `wider`, inside `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None:
        recorded[("widen", id(node))] = wider


def record_integer_output(node, kind: str) -> None:
    """Notes that the output `node`, integer arithmetic, is of the integer type `kind`, whose range Postgres
    keeps to (`integer out of range`), where SQLite's integers go to 64 bits and past them to doubles, inside
    `typed()`: a sink writes the type's values alone."""
    recorded = _operand_types.get()
    if recorded is not None:
        recorded[("integer", id(node))] = kind


def record_ordered_as_number(node, origin) -> None:
    """Notes that ORDER BY's `node` (an expression, or an output's name or position) orders by the numeric value
    `origin` (that output's expression) read as a number, inside `typed()`."""
    recorded = _operand_types.get()
    if recorded is not None:
        recorded[("as number", id(node))] = origin


def _expression(node) -> exp.Expression:
    if isinstance(node, ast.Literal):
        if node.type == "numeric":
            return exp.Literal.number(node.value)
        if node.type == "boolean":
            return exp.Boolean(this=node.value)
        if node.type == "null":
            return exp.Null()
        if node.type == "interval":
            return exp.Interval(this=exp.Literal.string(node.value))
        return _typed_literal(node) or exp.Literal.string(node.value)
    if isinstance(node, ast.ColumnRef):
        parts = [identifier(p) for p in node.parts]
        keys = ("this", "table", "db", "catalog")
        return exp.Column(**dict(zip(keys, reversed(parts))))
    if isinstance(node, ast.FunctionCall):
        return _function(node)
    if isinstance(node, ast.BinaryOp):
        return _binary(node)
    if isinstance(node, ast.UnaryOp):
        if node.op == "NOT":
            return exp.Not(this=_operand(node.operand, _NOT))
        inner = _operand(node.operand, _UNARY)
        return exp.Neg(this=inner) if node.op == "-" else inner
    if isinstance(node, ast.Predicate):
        return _predicate(node)
    if isinstance(node, ast.Cast):
        return _cast(node)
    if isinstance(node, ast.Case):
        return exp.Case(this=expression(node.operand) if node.operand is not None else None,
                        ifs=[exp.If(this=expression(w), true=expression(t)) for w, t in node.whens],
                        default=expression(node.default) if node.default is not None else None)
    if isinstance(node, ast.Subquery):
        return exp.Subquery(this=query(node.query))
    if isinstance(node, ast.RowConstructor):
        return exp.Tuple(expressions=[expression(i) for i in node.items])
    raise ValueError(f"cannot render {type(node).__name__}")


# ---------------------------------------------------------------- queries
TableNamer = Callable[[ast.TableRef], exp.Expression]


def table(ref: ast.TableRef) -> exp.Table:
    """A relation by name: its parts (database, schema, name) as they were written."""
    parts = [identifier(p) for p in ref.name.parts]
    keys = ("this", "db", "catalog")
    return exp.Table(**dict(zip(keys, reversed(parts))))


def _relation(item, name_table: TableNamer) -> exp.Expression:
    """A relation of FROM: a table, a subquery, or what a `(SHOW …)` shows (which only the namer knows)."""
    if isinstance(item, ast.SubqueryRef):
        return exp.Subquery(this=query(item.query, name_table), alias=exp.TableAlias(this=identifier(item.alias)))
    if isinstance(item, ast.FunctionRef):
        node = exp.Table(this=_function(item.call))
        if item.alias is not None:
            node.set("alias", exp.TableAlias(this=identifier(item.alias)))
        return node
    node = name_table(item)
    if item.alias is not None:
        node.set("alias", exp.TableAlias(this=identifier(item.alias)))
    return node


def _join(join: ast.Join, name_table: TableNamer) -> exp.Join:
    node = exp.Join(this=_relation(join.right, name_table))
    if join.kind in ("LEFT", "RIGHT", "FULL"):
        node.set("side", join.kind)
    elif join.kind == "CROSS":
        node.set("kind", "CROSS")
    if join.on is not None:
        node.set("on", expression(join.on))
    if join.using:
        node.set("using", [identifier(n) for n in join.using])
    return node


def _select_item(item: ast.SelectItem) -> exp.Expression:
    if isinstance(item.expr, ast.Star):
        star = exp.Star()
        return exp.Column(this=star, table=identifier(item.expr.qualifier)) if item.expr.qualifier else star
    node = expression(item.expr)
    if item.alias is not None:
        return exp.Alias(this=node, alias=identifier(item.alias))
    widened = isinstance(node, exp.Cast) and not isinstance(item.expr, ast.Cast)  # read as a wider type, or kept to
    # its integer type's range: SQLite would name it by the cast
    if widened or _named_outputs.get() and not isinstance(item.expr, ast.ColumnRef):  # quoted: it may be a keyword
        return exp.Alias(this=node, alias=exp.to_identifier(output_name(item), quoted=True))
    return node


def _core(core: ast.SelectCore, name_table: TableNamer) -> exp.Select:
    select = exp.Select(expressions=[_select_item(i) for i in core.items])
    if core.distinct:
        select.set("distinct", exp.Distinct())
    if core.distinct_on:
        select.set("distinct", exp.Distinct(on=exp.Tuple(expressions=[expression(e) for e in core.distinct_on])))
    joins = []
    for index, item in enumerate(core.from_items):
        if index == 0:
            select.set("from_", exp.From(this=_relation(item.first, name_table)))
        else:  # FROM a, b
            joins.append(exp.Join(this=_relation(item.first, name_table)))
        joins.extend(_join(j, name_table) for j in item.joins)
    if joins:
        select.set("joins", joins)
    if core.where is not None:
        select.set("where", exp.Where(this=expression(core.where)))
    if core.group_by:
        select.set("group", exp.Group(expressions=[expression(e) for e in core.group_by]))
    if core.having is not None:
        select.set("having", exp.Having(this=expression(core.having)))
    return select


# The namer of the query being rendered: a subquery inside an expression (IN, EXISTS, a scalar subquery) names its
# relations as the query around it does, though the expressions between them do not carry it
_enclosing_namer: ContextVar[Optional[TableNamer]] = ContextVar("icesink_enclosing_namer", default=None)
# whether each output column without an alias is given its Postgres name, in the subqueries too (which the query
# around them reads by those names)
_named_outputs: ContextVar[bool] = ContextVar("icesink_named_outputs", default=False)


def query(node: ast.Query, name_table: Optional[TableNamer] = None, named: Optional[bool] = None) -> exp.Expression:
    """A query as sqlglot's tree; `name_table` turns each relation it reads into the table the target engine knows
    (by default, as the enclosing query names them, else the name as written). `named`: each output column is
    aliased with the name Postgres gives it (output_names.py), not left to the engine to name (by default, as the
    enclosing query is; a stored query keeps the text as written)."""
    name_table = name_table or _enclosing_namer.get() or table
    token = _enclosing_namer.set(name_table)
    naming = _named_outputs.set(named) if named is not None else None
    try:
        return _query(node, name_table)
    finally:
        _enclosing_namer.reset(token)
        if naming is not None:
            _named_outputs.reset(naming)


def _query(node: ast.Query, name_table: TableNamer) -> exp.Expression:
    tree = _core(node.cores[0], name_table)
    for operator, core in zip(node.set_operators, node.cores[1:]):
        words = operator.split()
        tree = _SET_OPERATIONS[words[0]](this=tree, expression=_core(core, name_table),
                                         distinct=not (len(words) > 1 and words[1] == "ALL"))
    if node.order_by:
        tree.set("order", _order(node.order_by))
    if node.limit is not None:
        tree.set("limit", exp.Limit(expression=exp.Literal.number(node.limit)))
    if node.offset is not None:
        tree.set("offset", exp.Offset(expression=exp.Literal.number(node.offset)))
    return tree


def _order(items: tuple) -> exp.Order:
    """ORDER BY as Postgres orders: NULLS LAST ascending, NULLS FIRST descending, unless said otherwise."""
    return exp.Order(expressions=[exp.Ordered(this=expression(o.expr), desc=o.descending,
                                              nulls_first=(o.nulls == "first") if o.nulls else o.descending)
                                  for o in items])


# ---------------------------------------------------------------- statements that create objects
_CONNECTION_TYPES = {"aws": "AWS", "iceberg-catalog": "ICEBERG CATALOG", "postgres": "POSTGRES", "gcp": "GCP"}


def name_sql(name: ast.Name) -> str:
    """A name as it reads back the same: quoted when it is not a plain lower-case word or is a keyword."""
    from .lexical import keywords

    plain = re.fullmatch(r"[a-z_][a-z0-9_$]*", name.value) and name.value.upper() not in keywords()
    return name.value if plain else '"' + name.value.replace('"', '""') + '"'


def object_name_sql(name: ast.ObjectName) -> str:
    return ".".join(name_sql(p) for p in name.parts)


def literal_sql(value: str) -> str:
    """A string literal: '…', or E'…' when the value holds characters a line of SQL should not show raw."""
    if re.search(r"[\x00-\x1f\x7f\\]", value) and re.search(r"[\x00-\x1f\x7f]", value):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        escaped = re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", escaped)
        return f"E'{escaped}'"
    return "'" + value.replace("'", "''") + "'"


def _value_sql(value, hidden: bool) -> str:
    if isinstance(value, ast.StringValue):
        return REDACTED if hidden else literal_sql(value.value)
    if isinstance(value, ast.NumberValue):
        return value.text
    if isinstance(value, ast.BoolValue):
        return "true" if value.value else "false"
    if isinstance(value, ast.WordValue):
        return object_name_sql(value.name)
    if isinstance(value, ast.SecretValue):
        secret = f"SECRET {object_name_sql(value.secret)}"
        if value.prefix is None:
            return secret
        return f"{REDACTED if hidden else literal_sql(value.prefix)} || {secret}"
    if isinstance(value, ast.ListValue):
        return "(" + ", ".join(object_name_sql(i) if isinstance(i, ast.ObjectName) else literal_sql(i.value)
                               for i in value.items) + ")"
    raise ValueError(f"cannot render option value {type(value).__name__}")


def options_sql(options, redacted: bool = False) -> str:
    """`(NAME = value, …)`; with `redacted`, literal values of credential options are masked."""
    parts = []
    for option in options:
        if option.value is None:
            parts.append(option.name)
        else:
            hidden = redacted and option.name in CREDENTIAL_OPTIONS
            parts.append(f"{option.name} = {_value_sql(option.value, hidden)}")
    return "(" + ", ".join(parts) + ")"


def _cluster(cluster: Optional[ast.Name]) -> str:
    return f" IN CLUSTER {name_sql(cluster)}" if cluster is not None else ""


def _column_sql(column: ast.ColumnDef) -> str:
    return f"{name_sql(column.name)} {column.type}" + (" NOT NULL" if column.not_null else "")


def _partition_sql(field: ast.PartitionField) -> str:
    if field.transform is None:
        return name_sql(field.column)
    args = ([str(field.argument)] if field.argument is not None else []) + [name_sql(field.column)]
    return f"{name_sql(field.transform)}({', '.join(args)})"


def statement_sql(stmt, redacted: bool = False) -> str:
    """The text the catalog keeps of a statement that creates an object (what SHOW CREATE shows), in one normalised
    form that the grammar reads back to the same statement; `redacted` masks literal credentials. A secret's value
    is never in it."""
    name = object_name_sql(stmt.name)
    if isinstance(stmt, ast.CreateSecret):
        return f"CREATE SECRET {name} AS {REDACTED}"
    if isinstance(stmt, ast.CreateConnection):
        text = (f"CREATE CONNECTION {name} TO {_CONNECTION_TYPES[stmt.connection_type]} "
                f"{options_sql(stmt.options, redacted)}")
        return text + (f" WITH {options_sql(stmt.with_options)}" if stmt.with_options else "")
    if isinstance(stmt, ast.CreatePostgresSource):
        text = (f"CREATE SOURCE {name}{_cluster(stmt.cluster)} FROM POSTGRES CONNECTION "
                f"{object_name_sql(stmt.connection)} {options_sql(stmt.options)}")
        if stmt.tables_kind == "all":
            return text + " FOR ALL TABLES"
        if stmt.tables_kind == "schemas":
            return text + f" FOR SCHEMAS ({', '.join(name_sql(n) for n in stmt.tables)})"
        if stmt.tables_kind == "tables":
            return text + " FOR TABLES (" + ", ".join(
                object_name_sql(t.upstream) + (f" AS {name_sql(t.alias)}" if t.alias else "") for t in stmt.tables) + ")"
        return text
    if isinstance(stmt, ast.CreateLoadGeneratorSource):
        text = f"CREATE SOURCE {name}{_cluster(stmt.cluster)} FROM LOAD GENERATOR {stmt.generator.value.upper()}"
        text += f" {options_sql(stmt.options)}" if stmt.options else ""
        return text + (" FOR ALL TABLES" if stmt.all_tables else "")
    if isinstance(stmt, ast.CreateTable):
        elements = [_column_sql(c) for c in stmt.columns]
        if stmt.primary_key:
            elements.append(f"PRIMARY KEY ({', '.join(name_sql(k) for k in stmt.primary_key)})")
        return f"CREATE TABLE {name} ({', '.join(elements)})"
    if isinstance(stmt, ast.CreateType):
        if stmt.category != "record":
            return f"CREATE TYPE {name} AS {stmt.category.upper()} {options_sql(stmt.options)}"
        return f"CREATE TYPE {name} AS ({', '.join(_column_sql(c) for c in stmt.fields)})"
    if isinstance(stmt, ast.CreateTableFromSource):
        reference = f" (REFERENCE = {object_name_sql(stmt.reference)})" if stmt.reference is not None else ""
        return f"CREATE TABLE {name} FROM SOURCE {object_name_sql(stmt.source)}{reference}"
    if isinstance(stmt, ast.CreateMaterializedView):
        return f"CREATE MATERIALIZED VIEW {name}{_cluster(stmt.cluster)} AS {stored_sql(query(stmt.query))}"
    if isinstance(stmt, ast.CreateSink):
        text = (f"CREATE SINK {name}{_cluster(stmt.cluster)} FROM {object_name_sql(stmt.input)} INTO ICEBERG CATALOG "
                f"CONNECTION {object_name_sql(stmt.connection)} {options_sql(stmt.target)}")
        if stmt.aws_connection is not None:
            text += f" USING AWS CONNECTION {object_name_sql(stmt.aws_connection)}"
        if stmt.key:
            text += f" KEY ({', '.join(name_sql(k) for k in stmt.key)})" + ("" if stmt.key_enforced else " NOT ENFORCED")
        if stmt.partition_by:
            text += f" PARTITION BY ({', '.join(_partition_sql(f) for f in stmt.partition_by)})"
        if stmt.mode is not None:
            text += f" MODE {stmt.mode.upper()}" if stmt.mode in ("upsert", "append") else f" ENVELOPE {stmt.mode.upper()}"
        return text + (f" WITH {options_sql(stmt.with_options)}" if stmt.with_options is not None else "")
    raise ValueError(f"cannot render {type(stmt).__name__}")


def subsource_sql(name: str, source: str, upstream: str) -> str:
    """A subsource has no statement of its own: its text says where it comes from."""
    return (f"CREATE SUBSOURCE {name_sql(ast.Name(name))} FROM SOURCE {name_sql(ast.Name(source))} "
            f"(REFERENCE = {upstream})")
