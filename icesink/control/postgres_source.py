"""A Postgres source's subsources, from what its upstream says when the source is created (Materialize calls this
purification): which tables the publication covers, and each one's columns in icesink's types, primary key and
replica identity. Anything a source could not replicate is refused now, naming the table or column and the fix."""
from __future__ import annotations

import dataclasses

from ..catalog_connections.postgres_upstream import (UpstreamColumn, UpstreamTable, describe, identity_holds_key,
                                                     may_read, publication_exists, published_tables, table_exists)
from ..catalog.store import CatalogObject
from ..errors import PlanError, first_line
from ..grammar import ast
from ..grammar.parser import parse_statement
from ..grammar.render import statement_sql, subsource_sql
from ..model.descriptors import PostgresSourceDescriptor, SubsourceDescriptor, referenced_column
from ..model.postgres_types import replicated_type
from ..model.types import Column
from .plans import CreatePlan


def resolve_subsources(plan: CreatePlan, connector, name_taken) -> None:
    """Fills `plan.children` (one subsource per upstream table) from the upstream; `name_taken(name)` says whether
    a catalog object already has that name."""
    import psycopg

    try:
        tables = _upstream_tables(plan.name, plan.descriptor, connector,
                                  lambda published, connection: _wanted(plan, plan.descriptor, published, connection))
    except psycopg.Error as exc:
        raise PlanError(f"source '{plan.name}': reading the upstream catalog through connection '{connector.name}' "
                        f"failed: {first_line(exc)}") from None
    children = {child.descriptor.upstream: child for child in plan.children}
    plan.children = []
    for table in tables:
        child = children.get(table.qualified) or _new_child(plan, table, name_taken)
        columns, key = _columns(plan.name, table, plan.descriptor)
        child.descriptor = dataclasses.replace(child.descriptor, columns=columns, primary_key=key)
        plan.children.append(child)
    _check_named_columns(plan.name, plan.descriptor, tables)


def resolve_table(plan: CreatePlan, source: CatalogObject, connector, replicated: dict[str, str]) -> None:
    """CREATE TABLE … FROM SOURCE on a Postgres source: the table's columns and primary key, from the upstream
    table its REFERENCE names (`replicated`: the upstream tables the source already replicates, and as what)."""
    import psycopg

    if plan.descriptor.upstream is None:  # no REFERENCE: the publication's one table
        _implied_reference(plan, source, connector)
    parts = plan.descriptor.upstream.split(".")
    if len(parts) == 3:
        if parts[0] != connector.database:
            raise PlanError(f"source '{source.name}' replicates database '{connector.database}', not "
                            f"'{parts[0]}' (REFERENCE {plan.descriptor.upstream})")
        parts = parts[1:]
    qualified = ".".join(parts)
    if qualified in replicated:
        raise PlanError(f"source '{source.name}' already replicates upstream table {qualified}, as "
                        f"'{replicated[qualified]}': create sinks from that one")

    def wanted(published, connection):
        return _covered(source.name, source.descriptor, published, connection, [tuple(parts)])
    try:
        (table,) = _upstream_tables(source.name, source.descriptor, connector, wanted)
    except psycopg.Error as exc:
        raise PlanError(f"source '{source.name}': reading the upstream catalog through connection "
                        f"'{connector.name}' failed: {first_line(exc)}") from None
    columns, key = _columns(source.name, table, source.descriptor)
    plan.descriptor = dataclasses.replace(plan.descriptor, columns=columns, primary_key=key, upstream=qualified)


def _implied_reference(plan: CreatePlan, source: CatalogObject, connector) -> None:
    """As Materialize takes CREATE TABLE … FROM SOURCE without (REFERENCE …) from a source whose publication has
    one table: that table, written into the statement the catalog keeps."""
    import psycopg

    try:
        with connector.connect() as connection:
            published = published_tables(connection, source.descriptor.publication)
    except psycopg.Error as exc:
        raise PlanError(f"source '{source.name}': reading the upstream catalog through connection "
                        f"'{connector.name}' failed: {first_line(exc)}") from None
    if len(published) != 1:
        names = ", ".join(sorted(f"{schema}.{name}" for schema, name in published)) or "none"
        raise PlanError(f"source '{source.name}': publication '{source.descriptor.publication}' has "
                        f"{len(published)} tables ({names}): name one with (REFERENCE …)")
    (schema, name), = published
    statement = parse_statement(plan.create_sql)
    statement = dataclasses.replace(statement, reference=ast.ObjectName((ast.Name(schema, quoted=True),
                                                                         ast.Name(name, quoted=True))))
    plan.create_sql, plan.redacted_create_sql = statement_sql(statement), statement_sql(statement, redacted=True)
    plan.descriptor = dataclasses.replace(plan.descriptor, upstream=f"{schema}.{name}")


def _upstream_tables(source_name: str, source: PostgresSourceDescriptor, connector, wanted_of) -> list[UpstreamTable]:
    with connector.connect() as connection, connection.transaction():
        connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        if not publication_exists(connection, source.publication):
            raise PlanError(f"source '{source_name}': publication '{source.publication}' does not exist in database "
                            f"'{connector.database}' of connection '{connector.name}': CREATE PUBLICATION "
                            f"{source.publication} FOR TABLE … (or FOR ALL TABLES) there")
        published = published_tables(connection, source.publication)
        wanted = wanted_of(published, connection)
        for schema, name in wanted:
            if not may_read(connection, schema, name):
                raise PlanError(f"source '{source_name}': user '{connector.user}' may not read table {schema}.{name}, "
                                f"which the source copies first: GRANT SELECT ON {schema}.{name} TO "
                                f"\"{connector.user}\"")
        return [describe(connection, schema, name) for schema, name in wanted]


def _wanted(plan: CreatePlan, source: PostgresSourceDescriptor, published, connection) -> list[tuple[str, str]]:
    if source.tables == "tables":
        return _covered(plan.name, source, published, connection,
                        [tuple(child.descriptor.upstream.split(".", 1)) for child in plan.children])
    if source.tables == "schemas":
        return [(schema, name) for schema, name in published if schema in source.schemas]
    if source.tables == "all":
        return published
    return []  # tables are named later, one by one, with CREATE TABLE … FROM SOURCE


def _covered(source_name: str, source: PostgresSourceDescriptor, published, connection, wanted):
    for schema, name in wanted:
        if (schema, name) not in published:
            if not table_exists(connection, schema, name):
                raise PlanError(f"source '{source_name}': table {schema}.{name} does not exist upstream")
            raise PlanError(f"source '{source_name}': publication '{source.publication}' does not cover table "
                            f"{schema}.{name}: ALTER PUBLICATION {source.publication} ADD TABLE {schema}.{name}")
    return wanted


def _new_child(plan: CreatePlan, table: UpstreamTable, name_taken) -> CreatePlan:
    taken = [c.name for c in plan.children]
    if name_taken(table.name) or table.name in taken or table.name == plan.name:
        raise PlanError(f"source '{plan.name}': upstream table {table.qualified} would become subsource "
                        f"'{table.name}', a name already taken; name its tables with FOR TABLES ({table.qualified} "
                        "AS other_name, …)")
    sql = subsource_sql(table.name, plan.name, table.qualified)
    return CreatePlan("subsource", "subsource", table.name, sql, sql, SubsourceDescriptor(table.qualified),
                      cluster=plan.cluster)


def _columns(source_name: str, table: UpstreamTable, source: PostgresSourceDescriptor):
    if table.replica_identity == "n" or (table.replica_identity == "d" and not table.primary_key):
        raise PlanError(f"source '{source_name}': table {table.qualified} has neither a primary key nor REPLICA "
                        f"IDENTITY FULL, so its updates and deletes cannot be replicated: ALTER TABLE "
                        f"{table.qualified} REPLICA IDENTITY FULL (or add a primary key)")
    if not identity_holds_key(table.replica_identity, table.identity_columns, table.primary_key):
        fix = "REPLICA IDENTITY DEFAULT (or FULL)" if table.primary_key else "REPLICA IDENTITY FULL"
        raise PlanError(f"source '{source_name}': table {table.qualified} identifies its updated and deleted rows "
                        f"upstream by index {table.identity_index} only, and icesink matches them by the primary "
                        f"key or the whole row: ALTER TABLE {table.qualified} {fix}")
    as_text = {c for ref in source.text_columns if (c := referenced_column(ref, table.qualified))}
    excluded = {c for ref in source.exclude_columns if (c := referenced_column(ref, table.qualified))}
    columns = tuple(Column(c.name, "text" if c.name in as_text else _type(source_name, table, c), not c.not_null)
                    for c in table.columns if c.name not in excluded)
    key = table.primary_key if not excluded & set(table.primary_key) else ()
    return columns, key


def _type(source_name: str, table: UpstreamTable, column: UpstreamColumn) -> str:
    mapped = replicated_type(column.type_name, column.kind, column.type_modifier, column.element,
                             column.element_kind)
    if mapped is not None:
        return mapped
    raise PlanError(f"source '{source_name}': column \"{column.name}\" of table {table.qualified} has type "
                    f"{column.display}, which icesink cannot replicate as such: name it in TEXT COLUMNS "
                    f"({table.name}.{column.name}) to replicate it as text, or in EXCLUDE COLUMNS to leave it out")


def _check_named_columns(source_name: str, source: PostgresSourceDescriptor, tables: list[UpstreamTable]) -> None:
    for option, references in (("TEXT COLUMNS", source.text_columns), ("EXCLUDE COLUMNS", source.exclude_columns)):
        for reference in references:
            if not any(referenced_column(reference, t.qualified) in {c.name for c in t.columns} for t in tables):
                raise PlanError(f"source '{source_name}': {option} names {reference}, which is not a column of a "
                                "table this source replicates")
