"""Planning of INSERT, UPDATE and DELETE on engine tables. Every value that enters a table passes its column's
input function (engine/values.py): literal rows in Python, computed ones inside SQLite as icesink_in(…)."""
from __future__ import annotations

import os
from decimal import Decimal

from sqlglot import exp

from ..errors import NotSupportedYet, PlanError
from ..grammar import ast
from ..grammar.bulk import LiteralRows
from ..model.types import Column
from ..engine.tables import quote, storage_name
from ..engine.values import INT_RANGES
from .binder import Binder
from .copy_from import FORMATS, CopyOptions
from .plans import CopyPlan, InsertRowsPlan, WritePlan
from ..grammar import render
from ..grammar.render import identifier
from .call_checks import check_table_functions
from .queries import bound_columns, column_positions, engine_table_storage, sqlite_tables
from .sqlite_sql import cheap, integer_in_range, sqlite_sql, typeof_is
from .query import check_qualified_columns, table_refs

INPUT_FUNCTION = "icesink_in"
_STAGED = "_icesink_in"


_COMPUTED = object()


def _constant(expr):
    """The Python value of a literal (or a signed number); _COMPUTED when SQLite must compute it."""
    if isinstance(expr, ast.Literal):
        if expr.type == "numeric":
            text = str(expr.value)
            return int(text) if text.isdigit() else Decimal(text)
        return expr.value
    if isinstance(expr, ast.UnaryOp) and expr.op in ("-", "+") and isinstance(expr.operand, ast.Literal) \
            and expr.operand.type == "numeric":
        value = _constant(expr.operand)
        return -value if expr.op == "-" else value
    if isinstance(expr, ast.FunctionCall) and expr.name.value == "row" and not expr.star:  # a record's fields
        fields = [_constant(a) for a in expr.args]
        return _COMPUTED if _COMPUTED in fields else fields
    return _COMPUTED


def _literal_rows(stmt: ast.Insert):
    """(values, positions) per row when every value is a literal; None when some must be computed."""
    rows = []
    for row in stmt.rows:
        values = tuple(_constant(e) for e in row)
        if _COMPUTED in values:
            return None
        rows.append((values, tuple(getattr(e, "pos", 0) for e in row)))
    return rows


# a timestamp in the form the store keeps (its input function's output for it): SQLite's
# datetime(julianday()) gives it back unchanged only when it is a real moment (it carries February 30th or
# hour 24 over into the next day or month)
_STORED_TIMESTAMP = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]"


def _as_stored(type_name: str, value: exp.Expression) -> exp.Expression | None:
    """When `value` is what a column of `type_name` stores of it, unchanged: an integer in the type's range, text
    for text, a timestamp in the store's form. None for a type without such a test."""
    if type_name in INT_RANGES:
        return integer_in_range(type_name, value)
    if type_name == "text":
        return typeof_is(value, "text")
    if type_name == "timestamp":
        return exp.and_(typeof_is(value, "text"), exp.Glob(this=value.copy(), expression=exp.Literal.string(
            _STORED_TIMESTAMP)), exp.GTE(this=value.copy(), expression=exp.Literal.string("0001")),
            exp.EQ(this=exp.Anonymous(this="datetime", expressions=[
                exp.Anonymous(this="julianday", expressions=[value.copy()])]), expression=value.copy()))
    return None


def _converted(column: Column, value: exp.Expression) -> exp.Expression:
    """The column's input function of `value`. Where SQLite can tell that it would return `value` unchanged, it
    is not called: an `INSERT … SELECT` of millions of rows called it for each of their values."""
    call = exp.Anonymous(this=INPUT_FUNCTION, expressions=[
        exp.Literal.string(column.type), exp.Literal.string(column.name), value])
    stored = _as_stored(column.type, value) if cheap(value) else None
    if stored is None:
        return call
    return exp.Case(ifs=[exp.If(this=stored, true=value.copy())], default=call)


def _as_query(stmt) -> ast.Query:
    """UPDATE's new values and its WHERE (DELETE's), as a SELECT over the table binds them."""
    items = tuple(ast.SelectItem(value) for _, value in getattr(stmt, "assignments", ())) or (
        ast.SelectItem(ast.Literal("1", "numeric")),)
    table = ast.FromItem(ast.TableRef(stmt.table, stmt.alias))
    return ast.Query((ast.SelectCore(items, (table,), stmt.where),))


def _writes_refs(query: ast.Query, binder: Binder, what: str) -> list[ast.TableRef]:
    """The relations a write reads, which are engine tables' (a write runs on their store)."""
    refs = table_refs(query)
    for ref in refs:
        if engine_table_storage(binder, ref, generated=[]) is None:
            raise NotSupportedYet(f"{what} from system views is not supported", ref.name.pos)
    return refs


def _target(stmt, storage: str) -> exp.Table:
    """The table a write changes, aliased as the statement names it so its columns keep their meaning."""
    alias = stmt.alias if getattr(stmt, "alias", None) is not None else stmt.table.parts[-1]
    return exp.Table(this=exp.to_identifier(storage), alias=exp.TableAlias(this=identifier(alias)))


def _insert_sql(stmt: ast.Insert, storage: str, targets: list[Column], name_table) -> str:
    """INSERT whose every value goes through its column's input function."""
    names = ", ".join(quote(c.name) for c in targets)
    if stmt.query is None:
        rows = exp.Values(expressions=[exp.Tuple(expressions=[_converted(c, render.expression(v))
                                                             for c, v in zip(targets, row)]) for row in stmt.rows])
        return f"INSERT INTO {quote(storage)} ({names}) {sqlite_sql(rows)}"
    staged = [f"c{i}" for i in range(len(targets))]
    converted = ", ".join(_converted(c, exp.column(s)).sql(dialect="sqlite") for c, s in zip(targets, staged))
    return (f"WITH {_STAGED}({', '.join(staged)}) AS ({sqlite_sql(render.query(stmt.query, name_table))}) "
            f"INSERT INTO {quote(storage)} ({names}) SELECT {converted} FROM {_STAGED}")


def _positions(stmt) -> dict[str, int]:
    """Where a problem with a column's new value, or a division, is best pointed at."""
    positions = {key: pos for key, pos in column_positions(stmt).items() if key == "division by zero"}
    if isinstance(stmt, ast.Update):
        positions.update((name.value, getattr(expr, "pos", name.pos) or name.pos) for name, expr in stmt.assignments)
    elif isinstance(stmt, ast.Insert):
        positions.update((c.value, c.pos) for c in stmt.columns)
    return positions


def _writable(binder: Binder, stmt) -> tuple:
    """The engine table a statement writes, its columns by name, and the columns it gives values for."""
    table = binder.lookup(stmt.table, ("table",), "table")
    if not table.descriptor.is_engine_table:
        raise PlanError(f"table '{table.name}' is fed by a source and cannot be written to", stmt.table.pos)
    columns = {c.name: c for c in table.descriptor.columns}
    named = list(getattr(stmt, "columns", ())) + [name for name, _ in getattr(stmt, "assignments", ())]
    for name in named:
        if name.value not in columns:
            raise PlanError(f"column \"{name.value}\" of table '{table.name}' does not exist", name.pos)
    targets = [columns[n.value] for n in stmt.columns] if getattr(stmt, "columns", ()) else list(columns.values())
    return table, columns, targets


def _copy_option(option: ast.Option) -> tuple[str, object]:
    """FORMAT CSV reads as one option named 'FORMAT CSV': the generic option list takes words until a value."""
    words = option.name.split()
    if words[0] == "FORMAT" and len(words) == 2 and option.value is None:
        return "FORMAT", words[1].lower()
    if option.value is None:
        return option.name, True
    value = option.value
    if isinstance(value, (ast.StringValue, ast.BoolValue)):
        return option.name, value.value
    return option.name, str(getattr(value, "name", getattr(value, "text", ""))).lower()


def plan_copy(binder: Binder, stmt: ast.Copy) -> CopyPlan:
    table, _, targets = _writable(binder, stmt)
    given = {}
    for option in stmt.options:
        name, value = _copy_option(option)
        if name not in _COPY_OPTIONS:
            raise PlanError(f"unknown COPY option {name}; the options are: {', '.join(_COPY_OPTIONS)}", option.pos)
        given[name] = (value, option.pos)
    path = os.path.abspath(os.path.expanduser(stmt.path.value))
    default = {".csv": "csv", ".parquet": "parquet"}.get(os.path.splitext(path)[1].lower(), "text")
    fmt, fmt_pos = given.pop("FORMAT", (default, stmt.path.pos))
    if fmt not in FORMATS:
        raise PlanError(f"COPY FORMAT must be one of {', '.join(FORMATS)}, not {fmt}", fmt_pos)
    settings = {}
    for name, (value, pos) in given.items():
        if name == "HEADER":
            if not isinstance(value, bool) and value not in ("true", "false", "on", "off"):
                raise PlanError(f"COPY HEADER takes true or false, not {value}", pos)
            settings["header"] = value in (True, "true", "on")
        elif not isinstance(value, str):
            raise PlanError(f"COPY {name} takes a string", pos)
        elif name != "NULL" and len(value) != 1:
            raise PlanError(f"COPY {name} must be a single character, not '{value}'", pos)
        else:
            settings[name.lower()] = value
        if fmt == "parquet" or (fmt == "text" and name in ("QUOTE", "ESCAPE")):
            raise PlanError(f"COPY {name} does not apply to FORMAT {fmt}", pos)
    return CopyPlan(table, targets, path, CopyOptions(fmt, **settings), stmt.path.pos)


_COPY_OPTIONS = ("FORMAT", "HEADER", "DELIMITER", "NULL", "QUOTE", "ESCAPE")


def plan_write(binder: Binder, stmt, text: str):
    """INSERT, UPDATE, DELETE on an engine table, checked here and run on its storage."""
    table, columns, targets = _writable(binder, stmt)
    verb = type(stmt).__name__.upper()
    if isinstance(stmt, ast.Insert) and isinstance(stmt.rows, LiteralRows):
        width, pos = stmt.rows.uneven or (stmt.rows.width, next(iter(stmt.rows))[1][0])
        if width != len(targets) or stmt.rows.uneven:
            raise PlanError(f"INSERT has {width} values where {len(targets)} are expected", pos)
        return InsertRowsPlan(table, targets, stmt.rows)
    if isinstance(stmt, ast.Insert):
        for row in stmt.rows:
            if len(row) != len(targets):
                raise PlanError(f"INSERT has {len(row)} values where {len(targets)} are expected",
                                getattr(row[0], "pos", stmt.table.pos) if row else stmt.table.pos)
        rows = _literal_rows(stmt) if stmt.query is None else None
        if rows is not None:
            return InsertRowsPlan(table, targets, rows)
    storage = storage_name(table.id)
    generated: list = []
    if isinstance(stmt, ast.Insert):
        name_table = None
        if stmt.query is not None:
            check_table_functions(stmt.query)
            check_qualified_columns(stmt.query)
            name_table, _ = sqlite_tables(binder, _writes_refs(stmt.query, binder, "INSERT … SELECT"),
                                          generated=generated)
        with render.typed():
            if stmt.query is not None:
                bound_columns(binder, stmt.query)  # refuses what SQLite would compute wrong, as SELECT does
            sql = _insert_sql(stmt, storage, targets, name_table)
    else:
        # written as a SELECT over the table, so a subquery's relations are named as a query's are, and its
        # types are the binder's (a truth value's text in SET is 'true', as in a SELECT)
        query = _as_query(stmt)
        check_table_functions(query)
        name_table, _ = sqlite_tables(binder, _writes_refs(query, binder, "a subquery of " + verb), generated=generated)
        with render.typed():
            bound_columns(binder, query)
            select = render.query(query, name_table)
        where = select.args.get("where")
        if isinstance(stmt, ast.Update):
            tree = exp.Update(this=_target(stmt, storage), where=where, expressions=[
                # unaliased: a value the binder casts is named, as a select's output would be
                exp.EQ(this=exp.column(identifier(name)), expression=_converted(columns[name.value], value.unalias()))
                for (name, _), value in zip(stmt.assignments, select.expressions)])
        else:
            tree = exp.Delete(this=_target(stmt, storage), where=where)
        sql = sqlite_sql(tree)
    return WritePlan(table, sql, verb, _positions(stmt), tuple(dict.fromkeys(generated)))

