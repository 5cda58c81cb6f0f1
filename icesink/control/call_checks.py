"""The calls of a query checked where they are written, before anything runs: a function SQLite would not run, a
table function, a literal a pattern or time zone cannot take, a value a materialized view cannot keep."""
from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Callable

from sqlglot import exp

from ..catalog.sqlite import add_functions
from ..catalog.sql_functions import postgres_regex, regex_options, time_zone
from ..errors import NotSupportedYet, PlanError
from ..grammar import ast, render
from .query import UNMATERIALIZABLE, walk
from .sqlite_sql import sqlite_sql


def check_table_functions(query: ast.Query) -> None:
    """generate_series is the one table function that runs (as SQLite runs it: sqlite_sql.py `_series`)."""
    for node in walk(query):
        if isinstance(node, ast.FunctionRef) and node.call.name.value != "generate_series":
            raise NotSupportedYet(f"the table function {node.call.name.value}() is not supported yet; "
                                  "generate_series() is", node.call.name.pos)



def check_functions(query, materialized: bool = False) -> None:
    """Refuses, where it is written, a call SQLite would not run (a function it lacks, or the wrong number of
    arguments), so that a view is refused when it is created rather than failing each batch; in a materialized
    view, a function Materialize cannot materialize either."""
    for call in walk(query):
        if isinstance(call, ast.Predicate) and call.kind in ("regex", "iregex"):
            _check_literal(call.operands[1], postgres_regex)
        if not isinstance(call, ast.FunctionCall) or call.name.value in ("[]", "array"):
            continue
        name, pos = call.name.value, call.name.pos
        if name == "timezone" and len(call.args) == 2:
            _check_literal(call.args[0], time_zone)
        if name in _REGEX_FLAGS and len(call.args) >= 2:  # a literal pattern or option refused where it is written
            _check_literal(call.args[1], postgres_regex)
            if len(call.args) > _REGEX_FLAGS[name]:
                _check_literal(call.args[_REGEX_FLAGS[name]], lambda flags: regex_options(flags, name))
        if name == "mz_now":
            raise NotSupportedYet("mz_now() is not supported yet: icesink's views keep no temporal filters", pos)
        if name in ("substring", "substr") and len(call.args) == 3 and _negative(call.args[2]):
            raise PlanError("negative substring length not allowed", call.args[2].pos)
        if name in _ARGUMENTS and len(call.args) != _ARGUMENTS[name]:
            raise PlanError(f"function {name}() does not take {len(call.args)} argument"
                            f"{'s' if len(call.args) != 1 else ''}", pos)
        if materialized and name in UNMATERIALIZABLE:
            raise PlanError(f"cannot materialize call to {name}(): its value changes while the view's inputs "
                            "do not", pos)
        if call.distinct and call.order_by and any(o.expr != call.args[0] for o in call.order_by):
            raise PlanError("in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list", pos)
        # with ORDER BY, icesink's own aggregate takes DISTINCT over its first argument (sqlite_sql.py)
        problem, known = _tried_alone(name, len(call.args), call.distinct and not call.order_by, call.star,
                                      call.over is not None)
        if problem is not None:
            _refuse_call(name, len(call.args), problem, known, pos)


# the regular expressions' functions, by the position of their options (`'g'`, `'i'`)
_REGEX_FLAGS = {"regexp_replace": 3, "regexp_match": 2}


# aggregates whose arguments sqlglot's node takes or drops without a word (array_agg's second) or SQLite's own takes
# otherwise (group_concat's separator may be left out, string_agg's may not)
_ARGUMENTS = {"array_agg": 1, "list_agg": 1, "string_agg": 2}


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
_POSTGRES_ONLY = frozenset({"jsonb_agg", "json_agg", "jsonb_object_agg", "json_object_agg",
                            "percentile_cont", "percentile_disc",
                            "age", "isfinite", "quote_ident", "quote_literal", "jsonb_build_object",
                            "json_build_object", "make_timestamp", "make_interval", "justify_hours",
                            "justify_interval", "regexp_split_to_array"})
