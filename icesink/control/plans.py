"""What the planner hands to the executor: bound, validated changes and queries."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from ..catalog.store import CatalogObject
from ..model.descriptors import Descriptor, SecretDescriptor
from ..model.types import Column
from .copy_from import CopyOptions


@dataclass
class CreatePlan:
    kind: str
    type: str
    name: str
    create_sql: str
    redacted_create_sql: str
    descriptor: Descriptor = field(default_factory=SecretDescriptor)
    depends_on: tuple[str, ...] = ()
    cluster: Optional[str] = None
    connection_id: Optional[str] = None
    envelope: Optional[str] = None
    if_not_exists: bool = False
    secret_value: Optional[str] = None
    validate: Optional[bool] = None  # connections: True/False as written, None when defaulted
    children: list["CreatePlan"] = field(default_factory=list)  # subsources, created with the source
    notices: list[str] = field(default_factory=list)


@dataclass
class DropPlan:
    objects: list[CatalogObject]  # dependents first
    named: set[str] = field(default_factory=set)  # ids the statement named; the rest go along with them
    notices: list[str] = field(default_factory=list)


@dataclass
class UpdatePlan:
    """Changes to existing objects applied in one transaction (renames, ALTER SINK SET)."""

    objects: list[CatalogObject]
    status: str
    depends_on: dict[str, tuple[str, ...]] = field(default_factory=dict)  # by object id: what it now depends on


@dataclass
class AlterConnectionPlan:
    """ALTER CONNECTION … SET/RESET: the connection with its new options, what it now depends on, and whether to
    validate it first (as CreatePlan.validate)."""

    connection: CatalogObject
    depends_on: tuple[str, ...]
    validate: Optional[bool] = None
    notices: list[str] = field(default_factory=list)


@dataclass
class AddColumnPlan:
    """ALTER TABLE … ADD COLUMN on an engine table: the table with its new column and statement, and its sinks with
    the table's new columns (they start again with them, and their Iceberg tables gain the column)."""

    table: CatalogObject
    sinks: list[CatalogObject]
    types: tuple[str, ...] = ()  # the types CREATE TYPE made that the new column is of: the table depends on them


@dataclass
class SetSecretPlan:
    secret: CatalogObject
    value: str


@dataclass
class ValidatePlan:
    connection: CatalogObject


@dataclass
class QueryPlan:
    sql: str  # SQLite
    params: tuple = ()
    target: str = "catalog"  # 'catalog' (system views) or 'tables' (engine tables)
    column_positions: dict[str, int] = field(default_factory=dict)  # 'col' and 'rel.col' -> where first written
    replicated: tuple = ()  # (object id, name, source id): relations a Postgres source replicates, read once copied
    generated: tuple = ()  # ids of load generators' relations, read from the tables that keep them, caught up first
    booleans: tuple = ()  # positions of the output columns of type boolean (or arrays of it): SQLite gives 0 and 1
    moments: tuple = ()  # positions of the output columns of type timestamp, timestamptz or time: shown as Postgres
    # prints them
    scales: tuple = ()  # (position, scale) of numeric output columns shown with their scale's digits (2.50)


@dataclass
class IcebergQueryPlan:
    """A query over Iceberg tables, run by Spark: each table is a temporary view named in `views`."""

    # Spark SQL with every `ICEBERG conn.ns.table` replaced by its view, given each view's columns (known once its
    # table is loaded): bound over them, as Postgres would type the query
    sql: Callable[[dict[str, tuple[Column, ...]]], str]
    views: dict[str, tuple[CatalogObject, tuple[str, ...], str]]  # view -> (connection, namespace, table)


@dataclass
class GeneratorQueryPlan:
    """A query over load generators' relations (and views over them), run by Spark: each relation's rows now are a
    temporary view named in `relations`."""

    sql: str  # Spark SQL
    relations: dict[str, CatalogObject]  # view -> the relation (a load generator source or subsource)
    scales: tuple = ()  # as QueryPlan's


@dataclass
class WritePlan:
    table: CatalogObject
    sql: str  # SQLite over the table's storage, each new value through icesink_in(type, column, value)
    verb: str  # INSERT, UPDATE, DELETE
    positions: dict[str, int] = field(default_factory=dict)  # column (or 'division by zero') -> where to point
    generated: tuple = ()  # ids of load generators' relations its SELECT reads (QueryPlan's)


@dataclass
class InsertRowsPlan:
    """INSERT of literal rows: converted by each column's input function in Python, then written in one go."""

    table: CatalogObject
    columns: list[dict]  # the columns the values go to, in order
    rows: Iterable  # (values, positions) per row


@dataclass
class CopyPlan:
    """COPY … FROM a file: its rows go in as literal rows do."""

    table: CatalogObject
    columns: list[dict]
    path: str  # absolute
    options: CopyOptions
    path_pos: int  # where the statement names the file


@dataclass
class SetVariablePlan:
    name: str
    value: Optional[str]  # None: back to the default
    system: bool = False  # ALTER SYSTEM SET: stored in the catalog for every session


@dataclass
class NoticePlan:
    notice: str
    status: str
