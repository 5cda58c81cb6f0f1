"""Planning a sink on a materialized view: the view must be one a batch can bring up to date from its input's changes
alone (engine/sources/view.py), and anything else is refused here, at CREATE SINK, naming what is in the way.

The shapes that run, over one engine table or one table a Postgres source replicates: a `GROUP BY` query (any
aggregates, `WHERE`, `HAVING`, `CASE`, casts, `DISTINCT`), whose key is its grouping; and a query without aggregates
that keeps its input's primary key (projections, `WHERE`, `DISTINCT`), whose key is that primary key. A batch
recomputes only the keys its changes touch."""
from __future__ import annotations

from sqlglot import exp

from ..catalog.store import CatalogObject
from ..engine.tables import is_engine_table, storage_name
from ..errors import NotSupportedYet, PlanError
from ..grammar import ast, render
from ..grammar.parser import parse_statement
from ..grammar.render import identifier
from ..model.descriptors import ViewInput
from .binder import KIND_WORDS, Binder
from .queries import sqlite_sql

CHANGES, TOUCHED, TOUCHED_ALIAS = "_icesink_changes", "_icesink_touched", "_icesink_t"
OFFSET, TS = "_icesink_offset", "_icesink_ts"


def key_column(index: int) -> str:
    return f"_icesink_k{index}"


def group_column(index: int) -> str:
    return f"_icesink_g{index}"


def _refuse(view: CatalogObject, what: str, pos: int):
    raise NotSupportedYet(f"a sink on materialized view '{view.name}', whose query {what}, is not supported yet: a "
                          "sink reads a view over one table, grouped (GROUP BY) or keeping the table's primary key",
                          pos)


def _input_of(binder: Binder, view: CatalogObject, query: ast.Query, pos: int) -> tuple[CatalogObject, ast.TableRef]:
    if len(query.cores) > 1:
        _refuse(view, f"combines queries with {query.set_operators[0]}", pos)
    if query.limit is not None or query.offset is not None:
        _refuse(view, "has LIMIT or OFFSET", pos)
    core = query.cores[0]
    if not core.from_items:
        _refuse(view, "reads no relation", pos)
    if len(core.from_items) > 1 or core.from_items[0].joins:
        _refuse(view, "joins relations", pos)
    first = core.from_items[0].first
    if not isinstance(first, ast.TableRef) or first.iceberg:
        _refuse(view, "reads a subquery or table function in FROM" if not isinstance(first, ast.TableRef)
                else "reads an ICEBERG table", pos)
    found = binder.find(first.name)
    if found is None:
        raise PlanError(f"materialized view '{view.name}' reads \"{first.name}\", which no longer exists", pos)
    source_id = getattr(found.descriptor, "source_id", None)
    source = binder.catalog.get_by_id(source_id) if source_id else None
    replicated = found.kind in ("subsource", "table") and source is not None and source.type == "postgres"
    if not (is_engine_table(found) or replicated):
        if found.kind == "source":
            what = f"{found.type.replace('-', ' ')} source '{found.name}'"
        elif source is not None:
            what = f"{KIND_WORDS[found.kind]} '{found.name}' of {source.type.replace('-', ' ')} source '{source.name}'"
        else:
            what = f"{KIND_WORDS[found.kind]} '{found.name}'" + (
                " (a view over a view)" if found.kind == "materialized-view" else "")
        _refuse(view, f"reads {what}", pos)
    return found, first


def _unaliased(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Alias) else node


def plan_view_input(binder: Binder, view: CatalogObject, key: tuple[str, ...], mode: str, pos: int) -> ViewInput:
    """How a sink with `key` and `mode` reads `view`; `pos` is where the sink names it."""
    if mode != "upsert":
        raise NotSupportedYet(f"a sink on materialized view '{view.name}' writes MODE UPSERT, keyed by the view's key; "
                              "MODE APPEND (which writes each change's retraction) is not supported yet on a view", pos)
    query = parse_statement(view.descriptor.query_sql).query
    source, ref = _input_of(binder, view, query, pos)
    alias = ref.alias if ref.alias is not None else ref.name.parts[-1]
    columns = [c.name for c in source.descriptor.columns]

    def name_table(inner: ast.TableRef) -> exp.Expression:
        return exp.Table(this=exp.to_identifier(storage_name(source.id)), alias=exp.TableAlias(this=identifier(alias)))
    tree = render.query(query, name_table)
    if tree.find(exp.Subquery, exp.Exists) or len(list(tree.find_all(exp.Select))) > 1:
        _refuse(view, "has a subquery", pos)
    tree.set("order", None)  # a view's rows have no order
    _expand_stars(tree, alias, columns)
    outputs = [_unaliased(e) for e in tree.expressions]
    names = [c.name for c in view.descriptor.columns]
    if len(outputs) != len(names):
        raise PlanError(f"materialized view '{view.name}' selects * from '{source.name}', which has gained columns "
                        "since the view was created: recreate the view to sink it", pos)
    by_alias = {name: node for name, node in zip(names, outputs)}
    group = tree.args.get("group")
    if group is not None:
        keys = []
        for node in group.expressions:
            if isinstance(node, exp.Literal) and node.is_int:
                node = outputs[int(node.name) - 1]
            elif isinstance(node, exp.Column) and not node.table and node.name not in columns and node.name in by_alias:
                node = by_alias[node.name]  # GROUP BY an output's name
            keys.append(node)
    elif tree.find(exp.AggFunc):
        _refuse(view, "aggregates without GROUP BY", pos)
    else:
        primary = source.descriptor.primary_key
        if not primary:
            _refuse(view, f"has no GROUP BY, over '{source.name}', which has no primary key", pos)
        keys = [exp.column(c, table=alias.value, quoted=True) for c in primary]
    shown = [k.sql() for k in keys]
    key_outputs = tuple(next((i for i, k in enumerate(shown) if _same(o, keys[i])), None) for o in outputs)
    missing = [shown[i] for i in range(len(keys)) if i not in key_outputs]
    if missing:
        _refuse(view, f"leaves its key ({missing[0]}) out of its columns", pos)
    keyed = {names[j] for j, i in enumerate(key_outputs) if i is not None}
    if set(key) != keyed:
        raise PlanError(f"a sink on materialized view '{view.name}' is keyed by the view's key: KEY "
                        f"({', '.join(n for n in names if n in keyed)}), not KEY ({', '.join(key)})", pos)
    return ViewInput(source.id, *_statements(tree, keys, alias, columns), key_outputs,
                     tuple(_index_key(k) for k in keys))


def _index_key(key: exp.Expression) -> str:
    """A key expression as CREATE INDEX takes it: its columns unqualified."""
    key = key.copy()
    for column in key.find_all(exp.Column):
        column.set("table", None)
    return sqlite_sql(key)


def _same(output: exp.Expression, key: exp.Expression) -> bool:
    if isinstance(output, exp.Column) and isinstance(key, exp.Column):
        return output.name == key.name
    return output == key


def _expand_stars(tree: exp.Select, alias: ast.Name, columns: list[str]) -> None:
    """`*` and `t.*` as the input's columns, so that each select item is one of the view's columns."""
    expanded = []
    for node in tree.expressions:
        if isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
            expanded += [exp.column(c, table=alias.value, quoted=True) for c in columns]
        else:
            expanded.append(node)
    tree.set("expressions", expanded)


def _statements(tree: exp.Select, keys: list[exp.Expression], alias: ast.Name,
                columns: list[str]) -> tuple[tuple[str, ...], str, str]:
    """The columns of the changes the keys read, the SQL that finds the keys changes touch, and the view's query
    over those keys alone."""
    referenced = {c.name for k in keys for c in k.find_all(exp.Column)}
    changed = tuple(c for c in columns if c in referenced)
    table_alias = exp.TableAlias(this=identifier(alias))
    touched = exp.select(*[k.copy().as_(key_column(i)) for i, k in enumerate(keys)],
                         exp.Max(this=exp.column(OFFSET)).as_(OFFSET), exp.Max(this=exp.column(TS)).as_(TS))
    touched = touched.from_(exp.Table(this=exp.to_identifier(CHANGES), db=exp.to_identifier("temp"),
                                      alias=table_alias))
    touched = touched.group_by(*[exp.Literal.number(i + 1) for i in range(len(keys))])
    restricted = tree.copy()
    touched_key = [exp.column(key_column(i), table=TOUCHED_ALIAS) for i in range(len(keys))]

    def as_touched(node: exp.Expression) -> exp.Expression:
        """A key's expression as the touched key it equals in each row the join keeps: computed once a key."""
        found = next((i for i, k in enumerate(keys) if node == k), None)
        return node if found is None else touched_key[found].copy()
    restricted.set("expressions", [e.transform(as_touched) for e in restricted.expressions])
    for part in ("group", "having"):
        if restricted.args.get(part) is not None:
            restricted.set(part, restricted.args[part].transform(as_touched))
    on = exp.and_(*[exp.NullSafeEQ(this=k.copy(), expression=exp.column(key_column(i), table=TOUCHED_ALIAS))
                    for i, k in enumerate(keys)])
    touched_keys = exp.Table(this=exp.to_identifier(TOUCHED), db=exp.to_identifier("temp"),
                             alias=exp.TableAlias(this=exp.to_identifier(TOUCHED_ALIAS)))
    # CROSS JOIN keeps the touched keys the outer loop in SQLite: each is looked up through the input's index on the
    # key's expressions (MaterializedViewInput creates it), so a batch reads only the rows of the keys it touches
    base = restricted.args["from_"].this
    restricted.set("from_", exp.From(this=touched_keys))
    restricted = restricted.join(base, on=on, join_type="CROSS")
    restricted.set("expressions", restricted.expressions + [k.as_(group_column(i)) for i, k in enumerate(touched_key)])
    return changed, sqlite_sql(touched), sqlite_sql(restricted)

