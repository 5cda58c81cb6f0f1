"""Upstream schema changes. Each time pgoutput describes a table (a Relation message: at the first change of a
replication session, and again after an ALTER TABLE), its columns are checked against the subsource's. An added
column or a widened type is followed: the replication stops before applying the change, the subsource, its local
table and the sinks reading it take the new columns (the sinks' Iceberg tables evolve when they restart), and the
replication starts again from where it stopped. Anything else stops it with what the user can do."""
from __future__ import annotations

import dataclasses
import logging

from ...catalog.store import Catalog
from ...catalog_connections.postgres_upstream import UpstreamTable, describe_type, identity_holds_key
from ...model.descriptors import referenced_column
from ...model.postgres_types import replicated_type, widens
from ...model.types import Column
from ..tables import TableStore
from ..values import replicated_input
from .pgoutput import Relation

log = logging.getLogger("icesink.ingest")


class UpstreamChanged(Exception):
    """An upstream table changed in a way its subsource cannot follow; the message says what to do."""


class SchemaChanged(Exception):
    """An upstream table changed in a way its subsource follows: it takes `columns`, and the rows it holds take
    `fills` (the value each added column holds in rows written before it was added)."""

    def __init__(self, subsource_id: str, table: str, columns: tuple[Column, ...], fills: dict[str, str]):
        super().__init__(f"upstream table {table} changed its columns")
        self.subsource_id, self.table, self.columns, self.fills = subsource_id, table, columns, fills
        self.transactions_before = 0  # of the batch being applied, those that came before the change


class UpstreamTypes:
    """The icesink type of each (type oid, modifier) a Relation message names, read once from the upstream."""

    def __init__(self, connection):
        self.connection, self.known = connection, {}

    def __call__(self, oid: int, modifier: int) -> str | None:
        if (oid, modifier) not in self.known:
            self.known[(oid, modifier)] = replicated_type(*describe_type(self.connection, oid, modifier))
        return self.known[(oid, modifier)]


def relation_types(relation: Relation, types: UpstreamTypes) -> dict[str, str | None]:
    """The icesink type of each column of a table as pgoutput describes it."""
    return {name: types(*typed) for name, typed in zip(relation.columns, relation.types)}


def table_types(table: UpstreamTable) -> dict[str, str | None]:
    """The icesink type of each column of a table as Postgres's catalog describes it."""
    return {c.name: replicated_type(c.type_name, c.kind, c.type_modifier, c.element, c.element_kind)
            for c in table.columns}


def reconcile(subsource_id: str, table: str, columns: tuple[Column, ...], upstream: dict[str, str | None], source,
              fills: dict[str, str] | None = None) -> None:
    """Returns when the upstream table's columns (`upstream`: name to icesink type, None for one icesink cannot
    replicate) are the subsource's; raises SchemaChanged when it has more or wider ones, UpstreamChanged for anything
    else. `fills` has the value an added column holds in rows written before it (None: rows are copied)."""
    excluded = {c for r in source.exclude_columns if (c := referenced_column(r, table))}
    as_text = {c for r in source.text_columns if (c := referenced_column(r, table))}
    upstream = {name: "text" if name in as_text else kind for name, kind in upstream.items() if name not in excluded}
    have = {c.name: c for c in columns}
    dropped = [name for name in have if name not in upstream]
    if dropped:
        raise UpstreamChanged(f"upstream table {table} dropped column {', '.join(dropped)}, which its subsource "
                              "replicates: recreate the source (DROP SOURCE … CASCADE, then CREATE SOURCE) to "
                              "replicate the table as it is now")
    changed, evolved = [], []
    for column in columns:
        new = upstream[column.name]
        if new != column.type:
            if new is None or not widens(column.type, new):
                changed.append(f"{column.name} from {column.type} to {new or 'a type icesink cannot replicate'}")
            column = dataclasses.replace(column, type=new)
        evolved.append(column)
    if changed:
        raise UpstreamChanged(f"upstream table {table} changed the type of column {'; '.join(changed)}, which "
                              "the Iceberg table cannot follow: recreate the source (DROP SOURCE … CASCADE, then "
                              "CREATE SOURCE), naming the column in TEXT COLUMNS if it should stay text")
    added = [name for name in upstream if name not in have]
    unreadable = [name for name in added if upstream[name] is None]
    if unreadable:
        raise UpstreamChanged(f"upstream table {table} added column {', '.join(unreadable)} of a type icesink "
                              f"cannot replicate as such: name it in the source's TEXT COLUMNS or EXCLUDE COLUMNS "
                              f"(recreate the source)")
    evolved += [Column(name, upstream[name]) for name in added]
    if tuple(evolved) != tuple(columns):
        kept = {column: fills[column] for column in added if fills and fills.get(column) is not None}
        raise SchemaChanged(subsource_id, table, tuple(evolved), kept)


def matched_by_key(relation: Relation, key) -> None:
    """Updates and deletions name their row by the table's replica identity: with an index, it must hold the key
    the local copy matches rows by (CREATE SOURCE checks it too, but the table may change since)."""
    if not identity_holds_key(relation.replica_identity, relation.key_columns, key):
        raise UpstreamChanged(f"upstream table {relation.qualified} now identifies its updated and deleted rows by an "
                              "index that does not hold its primary key, so icesink cannot match them: ALTER TABLE "
                              f"{relation.qualified} REPLICA IDENTITY DEFAULT (or FULL), then recreate the source "
                              "(DROP SOURCE … CASCADE, then CREATE SOURCE)")


def follow(catalog: Catalog, store: TableStore, change: SchemaChanged) -> None:
    """Gives the subsource, its local table and the sinks reading it the new columns. The local table first: were
    icesink to stop in between, the replication would find the catalog behind and do it again."""
    subsource = catalog.get_by_id(change.subsource_id)
    inputs = {c.name: replicated_input(c.type) for c in change.columns}
    fills = {name: inputs[name](value) for name, value in change.fills.items()}
    store.evolve(subsource.id, change.columns, fills, replicated=True)
    catalog.update(dataclasses.replace(subsource, descriptor=dataclasses.replace(subsource.descriptor,
                                                                                 columns=change.columns)))
    for sink in catalog.dependents(subsource.id):
        if sink.kind == "sink":  # restarted by the scheduler, which sees its descriptor change
            catalog.update(dataclasses.replace(sink, descriptor=dataclasses.replace(sink.descriptor,
                                                                                    columns=change.columns)))
    log.info("subsource %s now has the columns of upstream table %s: %s", subsource.name, change.table,
             ", ".join(f"{c.name} {c.type}" for c in change.columns))
