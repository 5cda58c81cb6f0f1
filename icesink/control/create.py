"""Planning of CREATE statements other than sinks."""
from __future__ import annotations

import json
import os
import re
from dataclasses import replace

from ..errors import NotSupportedYet, PlanError
from ..grammar import ast
from ..grammar import render
from ..grammar.parser import parse_statement
from ..grammar.render import statement_sql, stored_sql, subsource_sql
from . import options as opts
from .binder import Binder
from .intervals import parse_interval_ms
from .plans import AlterConnectionPlan, CreatePlan, NoticePlan
from .call_checks import check_functions
from .query import (bind_query, check_distinct_on_order, check_qualified_columns, expand_distinct_on_stars,
                    computed_columns, output_scales, table_refs, walk)
from ..catalog_connections import CONNECTION_KINDS
from ..catalog_connections.iceberg import s3_tables_region
from ..model.options import Given, OptionSpec
from ..model.descriptors import (ConnectionDescriptor, ConnectionRef, GeneratorSettings,
                                 LoadGeneratorDescriptor, PostgresSourceDescriptor, SubsourceDescriptor, TableDescriptor,
                                 TypeDescriptor, ViewDescriptor)
from ..model.types import record_type
from .types import LOAD_GENERATORS, Column, NamedTypes, normalize


def _texts(stmt) -> tuple[str, str]:
    """What the catalog keeps of a statement: its text, and the same with literal credentials masked."""
    return statement_sql(stmt), statement_sql(stmt, redacted=True)


def exists_notice(kind: str, name: str, status: str) -> NoticePlan:
    return NoticePlan(f"{kind} '{name}' already exists, skipping", status)


def plan_create_secret(binder: Binder, stmt: ast.CreateSecret):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("secret", stmt.name.name, "CREATE SECRET")
    sql = statement_sql(stmt)  # a secret's value never reaches the catalog
    return CreatePlan("secret", "secret", stmt.name.name, sql, sql, secret_value=stmt.value.value)


# ---------------------------------------------------------------- connections
def plan_create_connection(binder: Binder, stmt: ast.CreateConnection, text: str, default_validation: bool):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("connection", stmt.name.name, "CREATE CONNECTION")
    return _connection_plan(binder, stmt, len(text), default_validation)


def plan_alter_connection(binder: Binder, obj, stmt: ast.Alter, default_validation: bool) -> AlterConnectionPlan:
    """ALTER CONNECTION … SET (…) / RESET (…) / DROP (…) [WITH (VALIDATE = …)]: the connection as if created with
    its options so changed, checked and (unless told not to) validated as a new one would be."""
    created = parse_statement(obj.create_sql)
    kind = CONNECTION_KINDS[created.connection_type]
    action = stmt.action
    if isinstance(action, ast.SetOptions):
        named = {o.name for o in action.options}
        options = tuple(o for o in created.options if o.name not in named) + action.options
    else:
        for option in action.names:
            if option.name not in kind.options:
                raise PlanError(f"unknown {kind.what} option {option.name}; the options are: "
                                f"{', '.join(kind.options)}", option.pos)
        named = {o.name for o in action.names}
        options = tuple(o for o in created.options if o.name not in named)
    altered = replace(created, options=options, with_options=stmt.with_options, if_not_exists=False)
    try:
        plan = _connection_plan(binder, altered, stmt.action_pos, default_validation)
    except PlanError as exc:
        if exc.pos is None or exc.pos < stmt.action_pos:  # about an option kept from the stored statement
            exc.pos = stmt.action_pos
        raise
    kept = replace(altered, with_options=())
    changed = replace(obj, create_sql=statement_sql(kept), redacted_create_sql=statement_sql(kept, redacted=True),
                      descriptor=plan.descriptor)
    return AlterConnectionPlan(changed, plan.depends_on, plan.validate, plan.notices)


_CONNECTION_OPTIONS = {"AWS CONNECTION": "aws", "GCP CONNECTION": "gcp"}  # options naming another connection


def _connection_plan(binder: Binder, stmt: ast.CreateConnection, end: int, default_validation: bool) -> CreatePlan:
    kind = CONNECTION_KINDS[stmt.connection_type]
    specs = kind.options
    given = opts.check_options(stmt.options, specs, kind.what)
    kind.check({name: Given(opts.stored_value(option, specs[name], str) if name not in _CONNECTION_OPTIONS
                            else opts.scalar(option), option.pos, option.value.pos)
                for name, option in given.items()}, end)
    depends: list[str] = []

    def resolve_secret(name: ast.ObjectName) -> str:
        secret = binder.secret(name)
        depends.append(secret.id)
        return secret.id

    stored = {}
    for name, option in given.items():
        if name in _CONNECTION_OPTIONS:
            other = binder.connection(option.value.name, _CONNECTION_OPTIONS[name])
            depends.append(other.id)
            stored[opts.snake(name)] = ConnectionRef(other.id)
        else:
            stored[opts.snake(name)] = opts.stored_value(option, specs[name], resolve_secret)
    if stored.get("catalog_type") == "s3tablesrest":
        _check_s3_tables_region(binder, given)
    notices = []
    if stmt.connection_type == "iceberg-catalog" and stored["catalog_type"] == "local" and "warehouse" in stored:
        stored["warehouse"] = _local_warehouse(stored["warehouse"], given["WAREHOUSE"], binder, notices)
    with_options = opts.check_options(stmt.with_options, opts.CONNECTION_WITH_OPTIONS, "connection")
    validate = with_options["VALIDATE"].value.value if "VALIDATE" in with_options else None
    external_id = trust_policy = None
    if stmt.connection_type == "aws" and "assume_role_arn" in stored:
        external_id = stored.get("external_id") or f"icesink_{binder.catalog.install_id}"
        trust_policy = json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"AWS": "<the ARN icesink runs as>"},
                           "Action": "sts:AssumeRole",
                           "Condition": {"StringEquals": {"sts:ExternalId": external_id}}}]})
    if validate is None and (not default_validation or stmt.connection_type in ("aws", "gcp")):
        validate = False  # Materialize does not validate AWS connections by default; nor icesink GCP ones
    descriptor = ConnectionDescriptor(stmt.connection_type, kind.stored(**stored), external_id, trust_policy)
    return CreatePlan("connection", stmt.connection_type, stmt.name.name, *_texts(stmt), descriptor,
                      tuple(dict.fromkeys(depends)), validate=validate, notices=notices)


def _check_s3_tables_region(binder: Binder, given: dict) -> None:
    """An S3 Tables bucket is reached through its region's endpoint, signed for that region: an AWS connection of
    another region would be refused by AWS at the first request, so it is refused here (as Materialize does)."""
    warehouse = opts.scalar(given["WAREHOUSE"])
    bucket_region = s3_tables_region(warehouse)
    if bucket_region is None:
        return
    aws = binder.connection(given["AWS CONNECTION"].value.name, "aws")
    region = aws.descriptor.options.region
    if region and region != bucket_region:
        raise PlanError(f"the S3 Tables bucket {warehouse} is in region {bucket_region}, but AWS connection "
                        f"'{aws.name}' is in region {region}: they must be in the same region",
                        given["WAREHOUSE"].value.pos)


def _local_warehouse(warehouse: str, option: ast.Option, binder: Binder, notices: list[str]) -> str:
    """A 'local' catalog's warehouse is a directory of this machine: an absolute path, or one relative to the data
    directory (said in a notice), never a URL of another store."""
    path = warehouse.removeprefix("file://")
    if re.match(r"^[a-z][a-z0-9+.-]*://", path, re.I) or not path.strip():
        raise PlanError(f"a 'local' catalog keeps its warehouse in a directory of this machine: WAREHOUSE must be a "
                        f"path or a file:// URL, not '{warehouse}'; for object storage use CATALOG TYPE 'rest', "
                        "'s3tablesrest' or 'glue'", option.value.pos)
    if os.path.isabs(path):
        return path
    resolved = str((binder.catalog.data_dir / path).absolute())
    notices.append(f"WAREHOUSE '{warehouse}' is a relative path: it is taken in the data directory, as {resolved}")
    return resolved


# ---------------------------------------------------------------- sources and tables
def _cluster(stmt) -> str:
    return stmt.cluster.value if stmt.cluster else "default"


def plan_create_postgres_source(binder: Binder, stmt: ast.CreatePostgresSource):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("source", stmt.name.name, "CREATE SOURCE")
    connection = binder.connection(stmt.connection, "postgres")
    given = opts.check_options(stmt.options, opts.POSTGRES_SOURCE_OPTIONS, "Postgres source")
    if "PUBLICATION" not in given:
        raise PlanError("a Postgres source needs PUBLICATION 'name'", stmt.connection.end)
    options = {opts.snake(k): opts.stored_value(v, opts.POSTGRES_SOURCE_OPTIONS[k], str) for k, v in given.items()}
    descriptor = PostgresSourceDescriptor(
        connection.id, options["publication"], tuple(options.get("text_columns", ())),
        tuple(options.get("exclude_columns", ())), stmt.tables_kind,
        tuple(n.value for n in stmt.tables) if stmt.tables_kind == "schemas" else None)
    plan = CreatePlan("source", "postgres", stmt.name.name, *_texts(stmt), descriptor, (connection.id,),
                      _cluster(stmt), connection.id)
    if stmt.tables_kind == "tables":
        seen = set()
        for ref in stmt.tables:
            sub_name = ref.alias or ref.upstream.parts[-1]
            if sub_name.value in seen:
                raise PlanError(f"two tables would both become subsource '{sub_name.value}'; name one with AS",
                                sub_name.pos)
            seen.add(sub_name.value)
            binder.new_name(sub_name)
            upstream = ".".join(p.value for p in ref.upstream.parts)
            if len(ref.upstream.parts) == 1:
                upstream = "public." + upstream
            sub_sql = subsource_sql(sub_name.value, stmt.name.name, upstream)
            plan.children.append(CreatePlan("subsource", "subsource", sub_name.value, sub_sql, sub_sql,
                                            SubsourceDescriptor(upstream), cluster=_cluster(stmt)))
    return plan


def plan_create_load_generator(binder: Binder, stmt: ast.CreateLoadGeneratorSource):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("source", stmt.name.name, "CREATE SOURCE")
    generator = stmt.generator.value
    if generator not in LOAD_GENERATORS:
        raise PlanError(f"unknown load generator {generator.upper()}; expected COUNTER, AUCTION, KEY VALUE or TPCH",
                        stmt.generator.pos)
    given = opts.check_options(stmt.options, opts.LOAD_GENERATOR_OPTIONS, "load generator")
    settings = {}
    for name, option in given.items():
        if name == "TICK INTERVAL":
            try:
                settings["tick_interval_ms"] = parse_interval_ms(option.value.value)
            except ValueError as exc:
                raise PlanError(f"TICK INTERVAL: {exc}", option.value.pos) from None
            if settings["tick_interval_ms"] < 1:
                raise PlanError(f"TICK INTERVAL must be at least 1 millisecond, not '{option.value.value}'",
                                option.value.pos)
            continue
        number = float(option.value.text)
        if name == "SCALE FACTOR" and generator != "tpch":
            raise PlanError("SCALE FACTOR applies only to LOAD GENERATOR TPCH", option.pos)
        if name in ("KEYS", "BATCH SIZE") and generator != "key value":
            raise PlanError(f"{name} applies only to LOAD GENERATOR KEY VALUE", option.pos)
        if name in ("UP TO", "AS OF", "MAX CARDINALITY", "SEED", "KEYS", "BATCH SIZE") and (not number.is_integer()
                                                                                    or number < 0):
            raise PlanError(f"{name} must be a whole number, not {option.value.text}", option.value.pos)
        if name == "SCALE FACTOR" and number <= 0:
            raise PlanError(f"SCALE FACTOR must be positive, not {option.value.text}", option.value.pos)
        settings[opts.snake(name)] = int(number) if number.is_integer() else number
    if settings.get("as_of", 0) > settings.get("up_to", float("inf")):
        raise PlanError(f"AS OF ({settings['as_of']}) must not be past UP TO ({settings['up_to']})",
                        given["AS OF"].value.pos)
    relations = LOAD_GENERATORS[generator]
    single = len(relations) == 1
    if not single and not stmt.all_tables:
        raise PlanError(f"LOAD GENERATOR {generator.upper()} produces several tables: add FOR ALL TABLES",
                        stmt.generator.end)
    descriptor = LoadGeneratorDescriptor(generator, GeneratorSettings(**settings),
                                         relations[0].columns if single else None,
                                         relations[0].primary_key if single else ())
    plan = CreatePlan("source", "load-generator", stmt.name.name, *_texts(stmt), descriptor, (), _cluster(stmt))
    if not single:
        for relation in relations:
            binder.new_name(ast.Name(relation.name, pos=stmt.name.pos))
            sub_sql = subsource_sql(relation.name, stmt.name.name, relation.name)
            plan.children.append(CreatePlan(
                "subsource", "subsource", relation.name, sub_sql, sub_sql,
                SubsourceDescriptor(relation.name, relation.columns, relation.primary_key), cluster=_cluster(stmt)))
    return plan


def named_types(binder: Binder, used: list[str]) -> NamedTypes:
    """Types CREATE TYPE made, for normalize(); the ids of those it resolves go into `used` (what a new object
    depends on)."""
    def named(name: str) -> str | None:
        obj = binder.named_type(name)
        if obj is None:
            return None
        used.append(obj.id)
        return obj.descriptor.type_name
    return named


def plan_create_type(binder: Binder, stmt: ast.CreateType):
    """A record (its fields), or a named list or map, as Materialize has them; columns of the type get its type."""
    if binder.new_name(stmt.name):
        return exists_notice("type", stmt.name.name, "CREATE TYPE")
    used: list[str] = []
    named = named_types(binder, used)
    if stmt.category == "record":
        fields, seen = [], set()
        for field in stmt.fields:
            if field.name.value in seen:
                raise PlanError(f"field \"{field.name.value}\" specified more than once", field.name.pos)
            if field.not_null or field.primary_key or field.default is not None:
                raise PlanError("a record's fields take no constraints or defaults", field.name.pos)
            seen.add(field.name.value)
            fields.append((field.name.value, normalize(field.type, named)))
        type_name = record_type(fields)
    else:
        wanted = ("ELEMENT TYPE",) if stmt.category == "list" else ("KEY TYPE", "VALUE TYPE")
        given = opts.check_options(stmt.options, {name: OptionSpec(("word", "string")) for name in wanted},
                                   f"{stmt.category} type")
        for name in wanted:
            if name not in given:
                raise PlanError(f"CREATE TYPE … AS {stmt.category.upper()} needs {name}", stmt.name.end)
        kinds = {name: normalize(ast.DataType(str(opts.scalar(given[name])).lower(), pos=given[name].value.pos),
                                 named) for name in wanted}
        if stmt.category == "list":
            type_name = kinds["ELEMENT TYPE"] + "[]"
        elif kinds["KEY TYPE"] != "text":
            raise PlanError(f"a map's keys must be text, not {kinds['KEY TYPE']}", given["KEY TYPE"].value.pos)
        else:
            type_name = f"map[text=>{kinds['VALUE TYPE']}]"
    return CreatePlan("type", stmt.category, stmt.name.name, *_texts(stmt), TypeDescriptor(type_name),
                      tuple(dict.fromkeys(used)))


def plan_create_table(binder: Binder, stmt: ast.CreateTable):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("table", stmt.name.name, "CREATE TABLE")
    columns, seen, used = [], set(), []
    pk = {n.value for n in stmt.primary_key}
    for col in stmt.columns:
        if col.name.value in seen:
            raise PlanError(f"column \"{col.name.value}\" specified more than once", col.name.pos)
        if col.default is not None:
            raise NotSupportedYet("column DEFAULT values are not supported yet", col.name.pos)
        seen.add(col.name.value)
        columns.append(Column(col.name.value, normalize(col.type, named_types(binder, used)),
                              not (col.not_null or col.name.value in pk)))
    for key in stmt.primary_key:
        if key.value not in seen:
            raise PlanError(f"PRIMARY KEY column \"{key.value}\" does not exist", key.pos)
    descriptor = TableDescriptor(tuple(columns), tuple(k.value for k in stmt.primary_key))
    return CreatePlan("table", "table", stmt.name.name, *_texts(stmt), descriptor, tuple(dict.fromkeys(used)))


def plan_create_table_from_source(binder: Binder, stmt: ast.CreateTableFromSource):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("table", stmt.name.name, "CREATE TABLE")
    source = binder.lookup(stmt.source, ("source",), "source")
    if stmt.reference is None and source.type == "load-generator":
        stmt = _implied_relation(stmt, source)
    if stmt.reference is None:  # a generator of one relation (COUNTER, KEY VALUE) is that relation; a Postgres
        # source's one published table is found when the upstream is asked (postgres_source.resolve_table)
        descriptor = TableDescriptor(source.descriptor.columns, getattr(source.descriptor, "primary_key", ()),
                                     source.id, None)
        return CreatePlan("table", "table", stmt.name.name, *_texts(stmt), descriptor, (source.id,))
    reference = ".".join(p.value for p in stmt.reference.parts)
    descriptor = TableDescriptor(None, (), source.id, reference)
    if source.type == "load-generator":
        relations = {r.name: r for r in LOAD_GENERATORS[source.descriptor.generator] if r.name}
        relation = relations.get(stmt.reference.name)
        if relation is None:
            raise PlanError(f"load generator source '{source.name}' has no table '{reference}'; its tables are: "
                            f"{', '.join(relations) or 'none'}", stmt.reference.pos)
        descriptor = TableDescriptor(relation.columns, relation.primary_key, source.id, reference)
    elif len(stmt.reference.parts) == 1:
        descriptor = TableDescriptor(None, (), source.id, "public." + reference)
    return CreatePlan("table", "table", stmt.name.name, *_texts(stmt), descriptor, (source.id,))


def _implied_relation(stmt: ast.CreateTableFromSource, source) -> ast.CreateTableFromSource:
    """CREATE TABLE … FROM SOURCE without (REFERENCE …) on a load generator, as Materialize takes it: a generator of
    one relation is that relation; one of several is refused, naming them."""
    if source.descriptor.columns is not None:
        return stmt
    tables = [r.name for r in LOAD_GENERATORS[source.descriptor.generator] if r.name]
    raise PlanError(f"source '{source.name}' has {len(tables)} tables ({', '.join(sorted(tables))}): name one with "
                    "(REFERENCE …)", stmt.source.end)


def plan_create_materialized_view(binder: Binder, stmt: ast.CreateMaterializedView):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("materialized view", stmt.name.name, "CREATE MATERIALIZED VIEW")

    def resolve(ref: ast.TableRef):
        if ref.iceberg:
            raise PlanError("a materialized view cannot read an ICEBERG table", ref.name.pos)
        return binder.relation(ref.name)[1]

    for node in walk(stmt.query):
        if isinstance(node, ast.ShowRef):
            raise PlanError("a materialized view cannot read SHOW CREATE: it shows the catalog as it is, not a "
                            "relation that changes", node.show.name.pos)
        if isinstance(node, ast.FunctionRef):
            raise NotSupportedYet(f"a materialized view over the table function {node.call.name.value}() is not "
                                  "supported yet", node.call.name.pos)

    check_qualified_columns(stmt.query)
    check_functions(stmt.query, materialized=True)
    descriptor, depends = view_descriptor(stmt.query, resolve)
    _check_distinct_names(stmt, descriptor.columns)
    return CreatePlan("materialized-view", "materialized-view", stmt.name.name, *_texts(stmt), descriptor, depends,
                      _cluster(stmt))


def _check_distinct_names(stmt: ast.CreateMaterializedView, columns) -> None:
    """A view's columns are named apart, as Postgres and Materialize require (its sink's Iceberg table could not
    hold two columns of one name); refused at the second one's item, where the select list has no star before it."""
    seen: set[str] = set()
    for index, column in enumerate(columns or ()):  # none: a Postgres table's, known once its source is asked
        if column.name in seen:
            items = stmt.query.cores[0].items
            starred = any(isinstance(item.expr, ast.Star) for item in items[:index + 1])
            where = stmt.name.pos if starred or index >= len(items) else getattr(items[index].expr, "pos", 0)
            raise PlanError(f'column "{column.name}" specified more than once', where or stmt.name.pos)
        seen.add(column.name)


def view_descriptor(query: ast.Query, resolve) -> tuple[ViewDescriptor, tuple[str, ...]]:
    """A materialized view's descriptor for its query, and the ids of the relations it reads; `resolve` gives a
    table reference's relation."""
    query = expand_distinct_on_stars(query, resolve)
    check_distinct_on_order(query)
    with render.typed():  # the stored text is written with its operands' types (a truth value's text)
        bound = bind_query(query, resolve)
        descriptor = ViewDescriptor(stored_sql(render.query(query)), bound.columns,
                                    tuple(tuple(sorted(k)) for k in bound.unique_keys), output_scales(bound.columns),
                                    computed_columns(bound.columns))
    # a relation read only in a subquery (IN, EXISTS, a value) is one the view cannot lose either
    depends = tuple(dict.fromkeys([r.id for r in bound.relations] + [resolve(ref).id for ref in table_refs(query)]))
    return descriptor, depends
