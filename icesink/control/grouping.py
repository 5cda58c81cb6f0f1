"""Postgres's rule for a grouped query: what it outputs, filters by or orders by is grouped, an aggregate, or a
column its grouped primary key decides. SQLite takes an ungrouped column from any row of the group, which a
materialized view's batches would each take differently."""
from __future__ import annotations

import dataclasses

from ..errors import PlanError
from ..grammar import ast
from .types import normalize

class GroupingError(PlanError):
    """Refused by SELECT too (which leaves most of the binder's errors to SQLite's run): SQLite would answer."""


# min and max of one argument: of two or more, SQLite's are scalar (Postgres's greatest and least)
AGGREGATE_NAMES = frozenset({
    "count", "sum", "avg", "min", "max", "total", "bool_and", "bool_or", "every", "string_agg", "array_agg",
    "list_agg", "group_concat", "json_group_array", "json_group_object", "any_value", "stddev", "stddev_samp",
    "stddev_pop", "variance", "var_samp", "var_pop"})


def is_aggregate(node) -> bool:
    """An aggregate call (not a window function's)."""
    return (isinstance(node, ast.FunctionCall) and node.over is None and node.name.value.lower() in AGGREGATE_NAMES
            and (node.name.value.lower() not in ("min", "max") or len(node.args) == 1))


def _children(node):
    """`node`'s children at this level of the query (not a subquery's)."""
    return () if isinstance(node, (ast.Subquery, ast.Query)) else ast.children(node)


def is_ordinal(expr) -> bool:
    """`ORDER BY 2`, `GROUP BY 1`: a position among the outputs."""
    return isinstance(expr, ast.Literal) and expr.type == "numeric" and str(expr.value).isdigit()


def ordinal(expr, count: int) -> int | None:
    """The output an ordinal names (from 0), if it is one within `count` outputs."""
    return int(expr.value) - 1 if is_ordinal(expr) and 1 <= int(expr.value) <= count else None


def _has_aggregate(node) -> bool:
    """Whether `node` calls an aggregate at this level of the query (not in a subquery)."""
    return is_aggregate(node) or any(_has_aggregate(child) for child in _children(node))


def check_positions(clause: str, exprs, count: int) -> None:
    """GROUP BY's or ORDER BY's constants as Postgres reads them: an integer is a position among the `count`
    outputs, any other constant is refused (SQLite ordered by it, or grouped all rows as one)."""
    for expr in exprs:
        literal, sign = expr, 1
        while isinstance(literal, ast.UnaryOp) and literal.op == "-":  # a negated number is a constant, -(-1) too
            literal, sign = literal.operand, -sign
        if not isinstance(literal, ast.Literal) or literal.type == "interval" or (
                sign < 0 and literal.type != "numeric"):
            continue
        if literal.type == "numeric" and str(literal.value).isdigit() and int(literal.value) < 2**31:
            if not 1 <= sign * int(literal.value) <= count:
                raise GroupingError(f"{clause} position {sign * int(literal.value)} is not in select list", expr.pos)
        else:
            raise GroupingError(f"non-integer constant in {clause}", expr.pos)


def check_grouping(core: ast.SelectCore, scope, origins: list, names: list[str], order_by: tuple) -> None:
    """Refuses, as Postgres does, an ungrouped column outside an aggregate in a grouped query's select list,
    DISTINCT ON, HAVING or ORDER BY (`order_by`: the query's, when this core is the whole query). `origins`: the
    expression behind each output, named `names`."""
    ordering = [item.expr for item in order_by if not _names_output(item.expr, names)]
    checked = [item.expr for item in core.items] + list(core.distinct_on) + [core.having] + ordering
    if not (core.group_by or core.having is not None or any(_has_aggregate(expr) for expr in checked)):
        return
    Grouping(core, scope, origins, names).check(checked)


def _names_output(expr, names: list[str]) -> bool:
    """An ordinal, or an output's name: ORDER BY means the output then, which is checked itself."""
    return is_ordinal(expr) or (isinstance(expr, ast.ColumnRef) and expr.qualifier is None and expr.column in names)


class Grouping:
    def __init__(self, core: ast.SelectCore, scope, origins: list, names: list[str]):
        self.scope = scope
        self.grouped = [self._grouped(expr, origins, names) for expr in core.group_by]
        self.columns = {self.scope.source(g) for g in self.grouped if isinstance(g, ast.ColumnRef)} - {None}
        # a table whose primary key is grouped decides its other columns (Postgres's functional dependency)
        self.decided = {alias for alias, relation, _ in scope.entries
                        if relation is not None and relation.id and relation.primary_key and relation.declared_key
                        and all((alias, k) in self.columns for k in relation.primary_key)}

    def _grouped(self, expr, origins: list, names: list[str]):
        """A GROUP BY entry as the expression it groups by (an ordinal's or an output name's)."""
        index = ordinal(expr, len(origins))
        if index is not None:
            return origins[index]
        if isinstance(expr, ast.ColumnRef) and expr.qualifier is None and expr.column in names and (
                self.scope.source(expr) is None):
            return origins[names.index(expr.column)]
        return expr

    def _same(self, a, b) -> bool:
        """Whether two expressions compute the same, however written: a column however it is qualified, a type by
        any of its names (`int4`, `integer`), a name quoted or not."""
        if isinstance(a, ast.ColumnRef) and isinstance(b, ast.ColumnRef):
            return a == b or (self.scope.source(a) is not None and self.scope.source(a) == self.scope.source(b))
        if type(a) is not type(b):
            return False
        if isinstance(a, ast.Name):
            return a.value == b.value
        if isinstance(a, ast.Cast):
            return normalize(a.type) == normalize(b.type) and self._same(a.expr, b.expr)
        if isinstance(a, tuple):
            return len(a) == len(b) and all(self._same(x, y) for x, y in zip(a, b))
        if dataclasses.is_dataclass(a):
            return all(self._same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
                       if f.compare and f.name != "shown")  # how a call was written (TRIM(BOTH FROM g) is btrim)
        return a == b

    def check(self, exprs: list) -> None:
        for expr in exprs:
            if isinstance(expr, ast.Star):
                self._check_star(expr)
            else:
                self._check(expr)

    def _check_star(self, star: ast.Star) -> None:
        qualifier = star.qualifier.value if star.qualifier else None
        for alias, _, columns in self.scope.entries:
            if qualifier in (None, alias):
                for column in columns or ():
                    self._check(ast.ColumnRef((ast.Name(alias, pos=star.pos), ast.Name(column.name))))

    def _check(self, expr) -> None:
        if expr is None or is_aggregate(expr) or any(self._same(expr, g) for g in self.grouped):
            return
        if isinstance(expr, (ast.Subquery, ast.Query)):
            self._check_subquery(expr)
            return
        if isinstance(expr, ast.ColumnRef):
            source = self.scope.source(expr)
            if source is None or source in self.columns or source[0] in self.decided:
                return
            raise GroupingError(f'column "{source[0]}.{source[1]}" must appear in the GROUP BY clause or be used in an '
                            "aggregate function", expr.pos)
        for child in _children(expr):
            self._check(child)

    def _check_subquery(self, node) -> None:
        """The columns of this query a subquery reads, outside the aggregates that are this query's."""
        if isinstance(node, ast.ColumnRef) and id(node) in self.scope.read_by_subqueries:
            source = self.scope.source(node)
            if source is not None and source not in self.columns and source[0] not in self.decided:
                raise GroupingError(f'subquery uses ungrouped column "{source[0]}.{source[1]}" from outer query',
                                    node.pos)
        elif not (is_aggregate(node) and self._ours(node)):
            for child in ast.children(node):
                self._check_subquery(child)

    def _ours(self, aggregate) -> bool:
        """Whether a subquery's aggregate is this query's, as Postgres decides: the nearest query whose columns its
        arguments read, when none is the subquery's (`max(f.n)` is this query's; `max(o.n + f.n)` and `count(*)`
        are the subquery's)."""
        refs = [node for node in ast.walk(aggregate) if isinstance(node, ast.ColumnRef)]
        scopes, scope = [], self.scope
        while scope is not None:
            scopes.append(scope)
            scope = scope.outer
        return any(id(ref) in self.scope.read_by_subqueries for ref in refs) and all(
            any(id(ref) in s.read_by_subqueries for s in scopes) for ref in refs)
