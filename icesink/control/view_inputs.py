"""Planning a sink on a materialized view: how each batch brings the sink's Iceberg table up to date.

Incrementally (engine/sources/view.py, joined_view.py), over the tables icesink keeps (engine tables, those a
Postgres source replicates, and those that keep load generators' relations, engine/generated_tables.py): a
`GROUP BY` query (any aggregates, `WHERE`, `HAVING`, `CASE`, casts), whose key is its grouping; a query without
aggregates that keeps its table's primary key, whose key is that; a `SELECT DISTINCT`, keyed by its columns; a
`SELECT DISTINCT ON (…)`, keyed by those expressions (each key's first row found through an index on the key and
its `ORDER BY`, or its rows ranked again); inner and left joins of those by equalities (view_joins.py); `UNION
[ALL]` of those; views over views, subqueries in `FROM` and `WITH`'s common table expressions that filter, project
and join (merged in). A batch recomputes only the keys its changes touch.

Anything else over those tables is recomputed whole each batch and diffed (recomputed_view.py).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sqlglot import exp

from ..catalog.store import CatalogObject
from ..engine.tables import is_engine_table, storage_name
from ..errors import NotSupportedYet, PlanError
from ..grammar import ast, render
from ..grammar.render import identifier
from ..model.descriptors import ViewInput, ViewSide
from .binder import KIND_WORDS, Binder
from .query import table_refs, walk
from .queries import stored_query, stored_view_query
from .sqlite_sql import sqlite_sql

CHANGES, TOUCHED, TOUCHED_ALIAS = "_icesink_changes", "_icesink_touched", "_icesink_t"
OFFSET, TS = "_icesink_offset", "_icesink_ts"


def key_column(index: int) -> str:
    return f"_icesink_k{index}"


def group_column(index: int) -> str:
    return f"_icesink_g{index}"


class NotIncremental(NotSupportedYet):
    """A view a batch cannot bring up to date from its tables' changes alone; `what` says why ("has a subquery")."""

    def __init__(self, message: str, pos: int, what: str):
        super().__init__(message, pos)
        self.what = what


def _refuse(view: CatalogObject, what: str, pos: int):
    raise NotIncremental(f"a sink on materialized view '{view.name}', whose query {what}, is not supported yet: a "
                         "sink reads a view over tables joined by equalities, grouped (GROUP BY) by one table's "
                         "columns or keeping one table's primary key", pos, what)


@dataclass(frozen=True)
class Relation:
    """A relation a view reads, by its alias in the query; `side`: FROM, INNER or LEFT (how it is joined)."""
    alias: str
    obj: CatalogObject
    side: str


def _inputs_of(binder: Binder, view: CatalogObject, query: ast.Query, pos: int) -> list[Relation]:
    if len(query.cores) > 1:
        _refuse(view, f"combines queries with {query.set_operators[0]}", pos)
    if query.limit is not None or query.offset is not None:
        _refuse(view, "has LIMIT or OFFSET", pos)
    core = query.cores[0]
    if not core.from_items:
        _refuse(view, "reads no relation", pos)
    found = []
    for index, item in enumerate(core.from_items):
        found += _relations(binder, view, item.first, "FROM" if index == 0 else "INNER", pos)
        for join in item.joins:
            if join.kind in ("RIGHT", "FULL"):
                _refuse(view, f"has a {join.kind} JOIN", pos)
            if join.using:
                _refuse(view, "joins with USING (write the join's condition with ON)", pos)
            found += _relations(binder, view, join.right, "LEFT" if join.kind == "LEFT" else "INNER", pos)
    return found


def _relations(binder: Binder, view: CatalogObject, ref, side: str, pos: int) -> list[Relation]:
    """The relation `ref` names, or those a subquery in FROM reads (which the view's query is merged with, as with a
    view it reads: a `WITH` query's common table expressions are such subqueries)."""
    if isinstance(ref, ast.SubqueryRef):
        return _inputs_of(binder, view, ref.query, pos)
    return [_relation(binder, view, ref, side, pos)]


def _relation(binder: Binder, view: CatalogObject, ref, side: str, pos: int) -> Relation:
    if not isinstance(ref, ast.TableRef) or ref.iceberg:
        _refuse(view, "reads a table function in FROM" if not isinstance(ref, ast.TableRef)
                else "reads an ICEBERG table", pos)
    found = binder.find(ref.name)
    if found is None:
        raise PlanError(f"materialized view '{view.name}' reads \"{ref.name}\", which no longer exists", pos)
    source = binder.source_of(found)
    replicated = found.kind in ("subsource", "table") and source is not None and source.type == "postgres"
    generated = source is not None and source.type == "load-generator"
    if not (is_engine_table(found) or replicated or generated or found.kind == "materialized-view"):
        if found.kind == "source":
            what = f"{found.type.replace('-', ' ')} source '{found.name}'"
        elif source is not None:
            what = f"{KIND_WORDS[found.kind]} '{found.name}' of {source.type.replace('-', ' ')} source '{source.name}'"
        else:
            what = f"{KIND_WORDS[found.kind]} '{found.name}'"
        _refuse(view, f"reads {what}", pos)
    return Relation(_alias(ref).value, found, side)


def _alias(ref: ast.TableRef) -> ast.Name:
    return ref.alias if ref.alias is not None else ref.name.parts[-1]


def _render(binder: Binder, view: CatalogObject, query: ast.Query, pos: int,
            tables: dict[str, CatalogObject] | None = None, top: bool = True) -> tuple[exp.Select, list[Relation]]:
    """`query` (the view's, or that of a view it reads: not `top`) as sqlglot's tree over the store's tables, and
    the relations it reads. A view it reads is merged into it (its columns' expressions and conditions take its
    place) when it only filters, projects and joins; one that cannot be merged is refused."""
    relations = _inputs_of(binder, view, query, pos)
    from_subqueries = any(isinstance(n, ast.SubqueryRef) for n in walk(query))
    tables = {} if tables is None else tables

    def name_table(inner: ast.TableRef, nested: bool = True) -> exp.Expression:
        alias = _alias(inner)
        if not any(r.alias == alias.value for r in relations):  # a relation of a subquery in an expression
            _refuse(view, "has a subquery", pos)
        found = _relation(binder, view, inner, "", pos).obj  # by its name: subqueries may reuse an alias
        if found.kind == "materialized-view" and nested:
            inner_tree, _ = _render(binder, view, stored_view_query(found), pos, tables, top=False)
            return exp.Subquery(this=inner_tree, alias=exp.TableAlias(this=identifier(alias)))
        tables[storage_name(found.id)] = found
        return exp.Table(this=exp.to_identifier(storage_name(found.id)), alias=exp.TableAlias(this=identifier(alias)))
    if not from_subqueries:
        flat = render.query(query, lambda inner: name_table(inner, nested=False), named=True)
        if flat.find(exp.Subquery, exp.Exists) or len(list(flat.find_all(exp.Select))) > 1:
            _refuse(view, "has a subquery", pos)
        if not any(r.obj.kind == "materialized-view" for r in relations):
            return flat, relations
    tree = render.query(query, name_table, named=True)
    if not top:
        return tree, relations
    return _merged(view, tree, tables, relations, pos)


def _merged(view: CatalogObject, tree: exp.Select, tables: dict[str, CatalogObject], relations: list[Relation],
            pos: int) -> tuple[exp.Select, list[Relation]]:
    """`tree` with the views it reads (subqueries in FROM) merged into it, and the tables it then reads."""
    from sqlglot.optimizer.merge_subqueries import merge_subqueries
    from sqlglot.optimizer.qualify import qualify

    for join in tree.find_all(exp.Join):
        inner = join.this.this if isinstance(join.this, exp.Subquery) else None
        # merged, a computed column would be computed for the rows the join leaves without a match, not NULL
        if join.side == "LEFT" and isinstance(inner, exp.Select) and not all(
                isinstance(_unaliased(e), exp.Column) for e in inner.expressions):
            _refuse(view, "computes a column of a view or subquery on the right side of a LEFT JOIN", pos)
    schema = {name: {c.name: "TEXT" for c in obj.descriptor.columns} for name, obj in tables.items()}
    tree = merge_subqueries(qualify(tree, schema=schema, quote_identifiers=False, validate_qualify_columns=False))
    merged = []
    joins = tree.args.get("joins") or []
    for node, side in [(tree.args["from_"].this, "FROM"), *((j.this, j.side or "INNER") for j in joins)]:
        if not isinstance(node, exp.Table):
            inner = next((r.obj for r in relations if r.alias == node.alias_or_name
                          and r.obj.kind == "materialized-view"), None)
            what = f"reads materialized view '{inner.name}'" if inner is not None else "has a subquery in FROM"
            _refuse(view, f"{what}, which it cannot be merged with (a view or subquery read by a view may filter, "
                    "project and join, not group, aggregate or have DISTINCT or LIMIT)", pos)
        merged.append(Relation(node.alias_or_name, tables[node.name], "LEFT" if side == "LEFT" else side))
    if tree.find(exp.Subquery, exp.Exists):
        _refuse(view, "has a subquery", pos)
    return tree, merged


def _unaliased(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Alias) else node


def plan_view_input(binder: Binder, view: CatalogObject, key: tuple[str, ...], mode: str,
                    pos: int) -> tuple[ViewInput, str | None]:
    """How a sink with `key` and `mode` reads `view` (`pos` is where the sink names it), and, for a view it
    recomputes whole, a notice saying so and why."""
    if mode != "upsert":
        raise NotSupportedYet(f"a sink on materialized view '{view.name}' writes MODE UPSERT, keyed by the view's key; "
                              "MODE APPEND (which writes each change's retraction) is not supported yet on a view", pos)
    query = stored_query(view.descriptor.query_sql)  # as written: its outputs are the sink's by position
    names = [c.name for c in view.descriptor.columns]
    try:
        return _plan_incremental(binder, view, query, key, names, pos), None
    except NotIncremental as exc:
        planned = _plan_recomputed(binder, view, query, key, names, exc)
        return planned, (f"materialized view '{view.name}' is recomputed whole in each batch in which a table it reads "
                         f"changed, as its query {exc.what}: a batch costs the whole view, not its changes")


def _plan_recomputed(binder: Binder, view: CatalogObject, query: ast.Query, key: tuple[str, ...], names: list[str],
                     why: NotIncremental) -> ViewInput:
    """A view whose keys a change cannot be traced to (`why` says what is in the way): recomputed whole when a table
    it reads changes, and diffed against what the sink last wrote. Its query is a SELECT's over the store; a view
    SELECT cannot read from the store (over system views) is refused for `why`."""
    from .queries import sqlite_tables

    refs = table_refs(query)
    try:
        name_table, engine_tables = sqlite_tables(binder, refs, [], [])
    except NotSupportedYet:
        raise why from None
    if not engine_tables:  # system views
        raise why
    tree = render.query(query, name_table, named=True)
    tables = list(dict.fromkeys(t.name[len(storage_name("")):] for t in tree.find_all(exp.Table)
                                if t.name.startswith(storage_name(""))))
    if not tables:
        raise why
    key_outputs = tuple(key.index(n) if n in key else None for n in names)
    return ViewInput(tables[0], (), "", sqlite_sql(tree), key_outputs,
                     others=tuple(ViewSide(t, (), "") for t in tables[1:]), recomputed=True)


def _plan_incremental(binder: Binder, view: CatalogObject, query: ast.Query, key: tuple[str, ...], names: list[str],
                      pos: int) -> ViewInput:
    """A view over one table is a join of one: the join planner writes its statements too."""
    from .view_joins import view_input

    if len(query.cores) > 1:
        return _plan_union(binder, view, query, key, names, pos)
    branch = _branch(binder, view, query, names, pos)
    _check_key(view, branch, names, key, pos)
    return view_input([(branch.joins, branch.keys)], branch.key_outputs, branch.index_keys, branch.tree.copy())


def _plan_union(binder: Binder, view: CatalogObject, query: ast.Query, key: tuple[str, ...], names: list[str],
                pos: int) -> ViewInput:
    """A UNION [ALL] of queries each keyed as a view of its own would be, by the same columns: a key's row is any
    branch's (rows sharing a key across branches make the key NOT ENFORCED's: one of them is kept)."""
    from .view_joins import view_input

    combined = next((o for o in query.set_operators if o not in ("UNION", "UNION ALL")), None)
    if combined is not None:
        _refuse(view, f"combines queries with {combined}", pos)
    if query.limit is not None or query.offset is not None:
        _refuse(view, "has LIMIT or OFFSET", pos)
    branches = [_branch(binder, view, ast.Query(cores=(core,)), names, pos) for core in query.cores]
    # a column each query gives a constant of, named in the KEY, tells the queries' rows apart: part of the key
    constant = [j for j, name in enumerate(names) if name in key and all(
        isinstance(_unaliased(b.tree.expressions[j]), exp.Literal) for b in branches)]
    if constant:
        branches = [_keyed(view, dataclasses.replace(b, keys=b.keys + [_unaliased(b.tree.expressions[j]).copy()
                                                                       for j in constant]), pos) for b in branches]
    first = branches[0]
    if any(b.key_outputs != first.key_outputs for b in branches[1:]):
        _refuse(view, "combines queries whose keys are not the same columns", pos)
    _check_key(view, first, names, key, pos)
    whole = branches[0].tree.copy()
    for operator, branch in zip(query.set_operators, branches[1:]):
        whole = exp.union(whole, branch.tree.copy(), distinct=operator == "UNION")
    return view_input([(b.joins, b.keys) for b in branches], first.key_outputs, first.index_keys, whole)


@dataclass
class _Branch:
    """One query of a view (the view's, or one of its UNION's) as planned: its tree over the store's tables, the
    relations it reads, its key, which of its columns is which key expression, and its join graph (`joins`: a
    query over one table is a join of one)."""
    tree: exp.Select
    relations: list[Relation]
    keys: list[exp.Expression]
    key_outputs: tuple
    index_keys: tuple[str, ...]
    joins: object


def _branch(binder: Binder, view: CatalogObject, query: ast.Query, names: list[str], pos: int) -> _Branch:
    from .view_joins import Joins

    tree, relations = _render(binder, view, query, pos)
    distinct = tree.args.get("distinct")
    distinct_on = distinct.args.get("on") if distinct is not None else None
    if tree.find(exp.Window):
        _refuse(view, "has a window function", pos)
    if distinct_on is not None and tree.args.get("group") is not None:
        _refuse(view, "has DISTINCT ON and GROUP BY", pos)
    if distinct_on is None:
        tree.set("order", None)  # a view's rows have no order; DISTINCT ON's ORDER BY says which row is kept
    _expand_stars(tree, relations)
    _qualify(tree, relations)
    columns = {c.name for r in relations for c in r.obj.descriptor.columns}
    outputs = [_unaliased(e) for e in tree.expressions]
    if len(outputs) != len(names):
        raise PlanError(f"materialized view '{view.name}' selects * from a relation that has gained columns since "
                        "the view was created: recreate the view to sink it", pos)
    by_alias = {name: node for name, node in zip(names, outputs)}
    def output_of(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Literal) and node.is_int:
            return outputs[int(node.name) - 1]
        if isinstance(node, exp.Column) and not node.table and node.name not in columns and node.name in by_alias:
            return by_alias[node.name]  # GROUP BY an output's name
        return node
    group = tree.args.get("group")
    keys = None
    if group is not None:
        keys = [output_of(node) for node in group.expressions]
    elif tree.find(exp.AggFunc):
        _refuse(view, "aggregates without GROUP BY", pos)
    elif distinct_on is not None:  # one row per value of its expressions, which SQLite ranks within each
        keys = [output_of(node) for node in distinct_on.expressions]
    # SELECT DISTINCT without GROUP BY is grouped by its columns, unless it keeps the key of the rows it reads
    distinct = [o.copy() for o in outputs] if keys is None and tree.args.get("distinct") is not None else None
    joins = Joins(view, tree, relations, pos)
    keys = joins.key(keys, distinct)
    return _keyed(view, _Branch(tree, relations, keys, (), (), joins), pos)


def _keyed(view: CatalogObject, branch: _Branch, pos: int) -> _Branch:
    """`branch` with which of its columns is which key expression, and the key as an index takes it (a constant is
    no part of an index)."""
    keys, outputs = branch.keys, [_unaliased(e) for e in branch.tree.expressions]
    key_outputs = tuple(next((i for i in range(len(keys)) if _same(o, keys[i])), None) for o in outputs)
    missing = [_shown(keys[i]) for i in range(len(keys)) if i not in key_outputs]
    if missing:
        _refuse(view, f"leaves its key ({missing[0]}) out of its columns", pos)
    return dataclasses.replace(branch, key_outputs=key_outputs, index_keys=branch.joins.index_keys(keys))


def index_order(keys: list[exp.Expression]) -> list[exp.Expression]:
    """The key's expressions over columns in the order of its index, a time bucket (`date_trunc`) first: a batch
    looks each key up by all of them, so their order is free, and a table's writes come in bunches of time (new
    events now, a correction of an hour's), whose entries then share a few pages of the index rather than one page
    each."""
    over_columns = [k for k in keys if k.find(exp.Column)]
    return sorted(over_columns, key=lambda k: not isinstance(k, (exp.TimestampTrunc, exp.DateTrunc)))


def index_keys(keys: list[exp.Expression]) -> tuple[str, ...]:
    """The key's expressions as its index takes them (`index_order`)."""
    return tuple(_index_key(k) for k in index_order(keys))


def _shown(key: exp.Expression) -> str:
    """A key expression as a message names it (without the quotes the planner gave its names)."""
    key = key.copy()
    for name in key.find_all(exp.Identifier):
        name.set("quoted", False)
    return key.sql()


def _check_key(view: CatalogObject, branch: _Branch, names: list[str], key: tuple[str, ...], pos: int) -> None:
    keyed = {names[j] for j, i in enumerate(branch.key_outputs) if i is not None}
    if set(key) != keyed:
        raise PlanError(f"a sink on materialized view '{view.name}' is keyed by the view's key: KEY "
                        f"({', '.join(n for n in names if n in keyed)}), not KEY ({', '.join(key)})", pos)


def _index_key(key: exp.Expression) -> str:
    """A key expression as CREATE INDEX takes it: its columns unqualified."""
    key = key.copy()
    for column in key.find_all(exp.Column):
        column.set("table", None)
    return sqlite_sql(key)


def _same(output: exp.Expression, key: exp.Expression) -> bool:
    """Whether a column of the view is a key expression: the same column of the same relation (`o.id` is not
    `c.id`), or the same expression."""
    if isinstance(output, exp.Column) and isinstance(key, exp.Column):
        return output.name == key.name and (not output.table or not key.table or output.table == key.table)
    return output == key


def _expand_stars(tree: exp.Select, relations: list[Relation]) -> None:
    """`*` and `t.*` as the relations' columns, so that each select item is one of the view's columns."""
    expanded = []
    for node in tree.expressions:
        star = isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star))
        if star:
            qualifier = node.table if isinstance(node, exp.Column) else ""
            expanded += [exp.column(c.name, table=r.alias, quoted=True) for r in relations
                         if not qualifier or r.alias == qualifier for c in r.obj.descriptor.columns]
        else:
            expanded.append(node)
    tree.set("expressions", expanded)


def _qualify(tree: exp.Select, relations: list[Relation]) -> None:
    """Names each unqualified column by the one relation that has it, so that a column says which relation's rows
    it reads (an output's name stays as it is)."""
    owners: dict[str, list[str]] = {}
    for r in relations:
        for c in r.obj.descriptor.columns:
            owners.setdefault(c.name, []).append(r.alias)
    outputs = {e.alias for e in tree.expressions if isinstance(e, exp.Alias)}
    order = tree.args.get("order")
    # ORDER BY names an output before a column, as Postgres reads it (DISTINCT ON's order)
    by_output = {id(o.this) for o in (order.expressions if order else [])
                 if isinstance(o.this, exp.Column) and not o.this.table and o.this.name in outputs}
    for column in list(tree.find_all(exp.Column)):
        if not column.table and len(owners.get(column.name, ())) == 1 and id(column) not in by_output:
            column.set("table", exp.to_identifier(owners[column.name][0]))
