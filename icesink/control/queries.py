"""Planning of SELECT over the system catalog, SHOW, and the statements that need the runtime."""
from __future__ import annotations

from functools import lru_cache
from typing import Callable

import sqlglot
from sqlglot import exp

from ..catalog.schema import SCHEMA_OF_VIEW, VIEWS
from ..errors import NotSupportedYet, PlanError
from ..model.types import Column, base_type
from .types import UNKNOWN
from ..grammar import ast
from .binder import KIND_WORDS, RELATION_KINDS, Binder, describe
from ..engine.tables import generated_name, is_engine_table, storage_name
from ..grammar import render
from ..grammar.output_names import named_as
from ..grammar.render import identifier
from .plans import GeneratorQueryPlan, IcebergQueryPlan, QueryPlan
from .call_checks import check_functions, check_table_functions
from .sqlite_sql import SHOWN_MOMENTS, sqlite_sql
from .grouping import GroupingError
from .query import (OperandError, Relation, bind_query, check_distinct_on_order, check_qualified_columns,
                    expand_distinct_on_stars, output_scales, table_refs, walk)

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
    source = binder.source_of(obj)
    if obj.kind in ("subsource", "table") and source is not None and source.type == "postgres":
        if replicated is not None:
            replicated.append((obj.id, obj.name, source.id))
        return storage_name(obj.id)
    if obj.kind == "materialized-view":
        return _view_query(binder, obj, replicated, depth, ref.name.pos, generated)
    if generated is not None and binder.generator_source(obj) is not None:
        generated.append(obj.id)
        return storage_name(obj.id)
    raise NotSupportedYet(f"reading {KIND_WORDS[obj.kind]} '{obj.name}' is not supported yet: {_RUNTIME}",
                          ref.name.pos)


def _view_query(binder: Binder, view, replicated: Replicated | None, depth: int, pos: int,
                generated: list | None = None) -> exp.Expression:
    """A materialized view's query, its relations named as SQLite holds them: what it holds now, computed from its
    inputs' current rows (a view over system views cannot be, yet)."""
    if depth >= MAX_VIEW_DEPTH:
        raise PlanError(f"materialized view '{view.name}' reads views {MAX_VIEW_DEPTH} deep", pos)
    query = stored_view_query(view)
    stored = {}
    for inner in table_refs(query):
        try:
            found = engine_table_storage(binder, inner, replicated, depth + 1, generated)
        except NotSupportedYet as exc:
            raise NotSupportedYet(f"reading materialized view '{view.name}': {exc.message}", pos) from None
        if found is None:
            raise NotSupportedYet(f"reading materialized view '{view.name}', which reads system views, is not "
                                  "supported yet", pos)
        stored[inner.name.name] = found
    return render.query(query, lambda inner: _named(stored[inner.name.name], inner), named=True)


def stored_view_query(view) -> ast.Query:
    """A materialized view's query as stored, its outputs named as its catalog entry names them (its stored text
    holds EXTRACT as date_part, which would name the column otherwise)."""
    return named_as(stored_query(view.descriptor.query_sql),
                    tuple(ast.Name(c.name, quoted=True) for c in view.descriptor.columns))


@lru_cache(maxsize=256)
def stored_query(sql: str) -> ast.Query:
    """A stored query parsed once a process (its tree is immutable): a SELECT over a view reads its query more than
    once (whether it reads load generators, then its relations)."""
    from ..grammar.parser import parse_statement

    return parse_statement(sql).query


def _named(stored: str | exp.Expression, ref: ast.TableRef) -> exp.Expression:
    """A relation of a query over engine tables, under the name (or alias) the query gives it."""
    alias = exp.TableAlias(this=identifier(ref.alias if ref.alias is not None else ref.name.parts[-1]))
    if isinstance(stored, str):
        return exp.Table(this=exp.to_identifier(stored), alias=alias)
    return exp.Subquery(this=stored, alias=alias)




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

    def spark_sql(columns: dict[str, tuple[Column, ...]]) -> str:
        """Bound over the tables' columns first, so that `/` of integers truncates as Postgres's does; what the
        binder does not take (a USING join, a column named in other capitals, a struct's field) is left to Spark, as
        is everything else it would note."""
        with render.typed():
            try:
                bind_query(stmt.query, lambda ref: Relation(names[id(ref)], ref.name.name, columns[names[id(ref)]]))
            except (PlanError, NotSupportedYet):
                pass
            render.keep_integer_divisions()
            tree = render.query(stmt.query, name_table, named=True)
        return render.spark_sql(tree)
    _check_spark_runs(render.query(stmt.query, name_table, named=True), "ICEBERG tables")  # refused when planned
    return IcebergQueryPlan(spark_sql, views)


def _generator_of(binder: Binder, obj) -> bool:
    """Whether `obj` is a load generator's relation, or a materialized view over one."""
    if obj is not None and obj.kind == "materialized-view":
        return any(_generator_of(binder, binder.find(ref.name)) for ref in table_refs(stored_view_query(obj)))
    return binder.generator_source(obj) is not None


def over_generators(binder: Binder, query: ast.Query,
                    refused: Callable[[ast.TableRef], Exception]) -> tuple[exp.Expression, dict]:
    """`query` over load generators' relations, each named by `generated_name`, the views between inlined; and the
    relations it reads, by id. `refused(ref)` is the error for a relation that is not a load generator's."""
    relations: dict[str, object] = {}

    def name_table(ref: ast.TableRef, depth: int = 0) -> exp.Expression:
        obj = binder.find(ref.name)
        alias = exp.TableAlias(this=identifier(ref.alias if ref.alias is not None else ref.name.parts[-1]))
        if obj is not None and obj.kind == "materialized-view":
            if depth >= MAX_VIEW_DEPTH:
                raise PlanError(f"materialized view '{obj.name}' reads views {MAX_VIEW_DEPTH} deep", ref.name.pos)
            inner = stored_view_query(obj)
            bind_query(inner, lambda r: binder.relation(r.name)[1])  # its operands' types, as Spark needs them
            return exp.Subquery(this=render.query(inner, lambda r: name_table(r, depth + 1)), alias=alias)
        if binder.generator_source(obj) is None:
            raise refused(ref)
        relations[obj.id] = obj
        return exp.Table(this=exp.to_identifier(generated_name(obj.id)), alias=alias)
    return render.query(query, name_table, named=True), relations


def _check_spark_runs(tree: exp.Expression, what: str) -> None:
    """Refuses what icesink computes in SQLite alone (its own functions), in a query Spark answers."""
    if any(isinstance(f, exp.Anonymous) and f.name.lower() == "timezone" for f in tree.find_all(exp.Anonymous)):
        raise NotSupportedYet(f"AT TIME ZONE in a query over {what} (which Spark answers) is not supported yet")
    if tree.find(exp.Any):  # an array's: ANY over a subquery's rows is read as IN
        raise NotSupportedYet(f"= ANY (array) and <> ALL (array) in a query over {what} (which Spark answers) are "
                              "not supported yet")
    if any(isinstance(o.parent, (exp.GroupConcat, exp.ArrayAgg, exp.Anonymous)) for o in tree.find_all(exp.Order)):
        raise NotSupportedYet(f"ORDER BY inside an aggregate in a query over {what} (which Spark answers) is not "
                              "supported yet")


def _plan_generator_query(tree: exp.Expression, relations: dict, scales: tuple = ()) -> GeneratorQueryPlan:
    """A query over load generators' relations alone (`over_generators`'s): Spark generates each one's rows up to
    now and runs the query."""
    _check_spark_runs(tree, "load generators alone")
    return GeneratorQueryPlan(render.spark_sql(tree), {generated_name(i): obj for i, obj in relations.items()},
                              scales)


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
        with render.typed():  # bound first: a cast's text, and a numeric's digits, as SQLite's answer shows them
            scales = _typed_outputs(binder, query)["scales"]
            generated_only = _over_generators_only(binder, query)
        if generated_only is not None:
            return _plan_generator_query(*generated_only, scales)
    check_functions(query)  # SQLite runs it (Spark, over load generators alone, knows more functions)
    replicated: Replicated = []
    generated: list = []
    name_table, engine_tables = sqlite_tables(binder, refs, replicated, generated)
    if shows and engine_tables:
        raise NotSupportedYet("a query that joins engine tables with SHOW is not supported yet",
                              shows[0].show.name.pos)
    name_table = _with_shows(binder, name_table) if shows else name_table
    with render.typed():  # bound first: how a cast is written may depend on its operand's type
        outputs = _typed_outputs(binder, query)
        sql = sqlite_sql(render.query(query, name_table, named=True))
    return QueryPlan(sql, target="tables" if engine_tables else "catalog", column_positions=column_positions(stmt),
                     replicated=tuple(replicated), generated=tuple(dict.fromkeys(generated)), **outputs)


# the system views' columns of type boolean (SQLite gives them as 0 and 1, as it does every truth value)
_SYSTEM_BOOLEANS = {("mz_columns", "nullable")}


@lru_cache(maxsize=None)
def _system_view(name: str) -> Relation:
    """A system view's columns, read from its definition once a process (not asked of the catalog each query)."""
    names = sqlglot.parse_one(VIEWS[name], read="sqlite").named_selects
    return Relation(name, name, tuple(Column(n, "boolean" if (name, n) in _SYSTEM_BOOLEANS else UNKNOWN)
                                      for n in names))



def _typed_outputs(binder: Binder, query: ast.Query) -> dict[str, tuple[int, ...]]:
    """Which output columns are booleans or arrays of them, which SQLite answers as 0 and 1, which are moments,
    which the store holds in a text of its own, and which numerics of a known scale, which SQLite computes as
    doubles: the binder's types, where it knows them."""
    columns = bound_columns(binder, query)
    types = [c.type for c in columns]
    return {"booleans": tuple(i for i, t in enumerate(types) if base_type(t.rstrip("[]")) == "boolean"),
            "moments": tuple(i for i, t in enumerate(types) if base_type(t) in SHOWN_MOMENTS),
            "scales": _numeric_scales(columns)}


def _numeric_scales(columns) -> tuple[tuple[int, int], ...]:
    """(position, scale) of the numeric output columns whose scale Postgres's rules fix (numeric_scale.py)."""
    return tuple((i, scale) for i, scale in enumerate(output_scales(columns)) if scale is not None)


def bound_columns(binder: Binder, query: ast.Query) -> tuple[Column, ...]:
    """A query's output columns as the binder types them (none where it cannot tell: a relation of unknown columns,
    or a mistake SQLite's run names where it is written); what the binder finds not supported yet (interval
    arithmetic, an aggregate ordered by numeric text), and an operand of a type Postgres refuses (`n + 'x'`,
    `n IS TRUE`), are refused here, before SQLite computes them wrong."""
    def resolve(ref: ast.TableRef) -> Relation:
        qualifier = ref.name.qualifier
        if (qualifier and qualifier[0] in _SYSTEM_SCHEMAS) or (not qualifier and ref.name.name in VIEWS):
            return _system_view(ref.name.name)
        return binder.relation(ref.name)[1]
    try:
        return bind_query(query, resolve).columns or ()
    except (OperandError, GroupingError):
        raise
    except PlanError:
        return ()


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
