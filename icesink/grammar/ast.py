"""Typed, immutable syntax tree for icesink statements.

Positions (`pos`, `end`) are character offsets into the statement's own text; they are
excluded from equality so that two parses of the same SQL compare equal however it was
laid out.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator, Optional, Union


def _pos():
    return field(default=0, compare=False, repr=False)


@dataclass(frozen=True)
class Name:
    value: str
    quoted: bool = False
    pos: int = _pos()
    end: int = _pos()

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ObjectName:
    parts: tuple[Name, ...]

    @property
    def name(self) -> str:
        return self.parts[-1].value

    @property
    def qualifier(self) -> tuple[str, ...]:
        return tuple(p.value for p in self.parts[:-1])

    @property
    def pos(self) -> int:
        return self.parts[0].pos

    @property
    def end(self) -> int:
        return self.parts[-1].end

    def __str__(self) -> str:
        return ".".join(p.value for p in self.parts)


# ---------------------------------------------------------------- option values
@dataclass(frozen=True)
class StringValue:
    value: str
    pos: int = _pos()
    end: int = _pos()


@dataclass(frozen=True)
class NumberValue:
    text: str
    pos: int = _pos()
    end: int = _pos()


@dataclass(frozen=True)
class BoolValue:
    value: bool
    pos: int = _pos()
    end: int = _pos()


@dataclass(frozen=True)
class WordValue:
    """A bare word (`HOST postgres`, `AWS CONNECTION aws_conn`, `SET x = on`)."""

    name: ObjectName
    pos: int = _pos()
    end: int = _pos()


@dataclass(frozen=True)
class SecretValue:
    """`SECRET s`, or `'prefix' || SECRET s` (a REST CREDENTIAL's client id)."""

    secret: ObjectName
    prefix: Optional[str] = None
    pos: int = _pos()
    end: int = _pos()


@dataclass(frozen=True)
class ListValue:
    items: tuple[Union[ObjectName, StringValue], ...]
    pos: int = _pos()
    end: int = _pos()


@dataclass(frozen=True)
class DefaultValue:
    pos: int = _pos()
    end: int = _pos()


OptionValue = Union[StringValue, NumberValue, BoolValue, WordValue, SecretValue, ListValue, DefaultValue, None]


@dataclass(frozen=True)
class Option:
    name: str  # canonical upper-case words, e.g. "ACCESS KEY ID"
    value: OptionValue
    pos: int = _pos()


# ---------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Literal:
    value: object
    type: str  # 'numeric', 'text', 'boolean', 'null', 'interval'
    pos: int = _pos()


@dataclass(frozen=True)
class ColumnRef:
    parts: tuple[Name, ...]

    @property
    def column(self) -> str:
        return self.parts[-1].value

    @property
    def qualifier(self) -> Optional[str]:
        return self.parts[-2].value if len(self.parts) > 1 else None

    @property
    def pos(self) -> int:
        return self.parts[0].pos


@dataclass(frozen=True)
class FrameBound:
    """An end of a window frame: `side` PRECEDING, FOLLOWING or CURRENT ROW; `offset` rows (or values, or groups)
    away, None for UNBOUNDED (or CURRENT ROW)."""
    side: str
    offset: Optional[object] = None


@dataclass(frozen=True)
class WindowFrame:
    """ROWS | RANGE | GROUPS [BETWEEN start AND end] (`end` None: to the current row)."""
    unit: str
    start: FrameBound
    end: Optional[FrameBound] = None


@dataclass(frozen=True)
class Window:
    """OVER (PARTITION BY … ORDER BY … [frame]): the rows a window function reads, and their order."""
    partition_by: tuple = ()
    order_by: tuple = ()  # OrderItem
    frame: Optional[WindowFrame] = None


@dataclass(frozen=True)
class FunctionCall:
    name: Name
    args: tuple
    distinct: bool = False
    star: bool = False
    filter: Optional[object] = None
    over: Optional[Window] = None
    # the output column's name where the call was written as other syntax (EXTRACT is date_part, named extract)
    shown: Optional[str] = None
    order_by: tuple = ()  # OrderItem: the order an aggregate takes its rows in, `string_agg(x, ',' ORDER BY x)`

    @property
    def pos(self) -> int:
        return self.name.pos


@dataclass(frozen=True)
class BinaryOp:
    op: str
    left: object
    right: object
    pos: int = _pos()


@dataclass(frozen=True)
class UnaryOp:
    op: str
    operand: object
    pos: int = _pos()


@dataclass(frozen=True)
class DataType:
    name: str  # normalised spelling, e.g. 'double precision', 'timestamp with time zone'
    params: tuple[int, ...] = ()
    array_depth: int = 0  # `int[]` and Materialize's `int list` alike
    pos: int = _pos()
    key: Optional["DataType"] = None  # map[key=>value]
    value: Optional["DataType"] = None

    def __str__(self) -> str:
        if self.name == "map" and self.key is not None:
            text = f"map[{self.key}=>{self.value}]"
        else:
            text = self.name + (f"({','.join(map(str, self.params))})" if self.params else "")
        return text + "[]" * self.array_depth


@dataclass(frozen=True)
class Cast:
    expr: object
    type: DataType
    pos: int = _pos()


@dataclass(frozen=True)
class Predicate:
    """IS NULL, LIKE, IN, BETWEEN, IS DISTINCT FROM, EXISTS: `kind` says which."""

    kind: str
    operands: tuple
    negated: bool = False
    pos: int = _pos()


@dataclass(frozen=True)
class Case:
    operand: Optional[object]
    whens: tuple[tuple[object, object], ...]
    default: Optional[object]
    pos: int = _pos()
    when_pos: tuple[int, ...] = field(default=(), compare=False, repr=False)  # each WHEN's, where Postgres points


@dataclass(frozen=True)
class Subquery:
    query: "Query"
    pos: int = _pos()


@dataclass(frozen=True)
class RowConstructor:
    items: tuple
    pos: int = _pos()


# ---------------------------------------------------------------- queries
@dataclass(frozen=True)
class SelectItem:
    expr: object  # an expression, or Star
    alias: Optional[Name] = None


@dataclass(frozen=True)
class Star:
    qualifier: Optional[Name] = None
    pos: int = _pos()
    schema: tuple[Name, ...] = ()  # `materialize.public.t.*`: what names the relation's schema


@dataclass(frozen=True)
class TableRef:
    name: ObjectName
    alias: Optional[Name] = None
    iceberg: bool = False


@dataclass(frozen=True)
class SubqueryRef:
    query: "Query"
    alias: Name


@dataclass(frozen=True)
class FunctionRef:
    """A table function in FROM: `generate_series(1, 10) AS n`."""
    call: "FunctionCall"
    alias: Optional[Name] = None


@dataclass(frozen=True)
class ShowRef:
    """`FROM (SHOW CREATE …)`, as Materialize's scripts read a statement's text."""
    show: "ShowCreate"
    alias: Optional[Name] = None


@dataclass(frozen=True)
class Join:
    kind: str  # 'INNER', 'LEFT', 'RIGHT', 'FULL', 'CROSS'
    right: Union[TableRef, SubqueryRef, "FunctionRef", "ShowRef"]
    on: Optional[object] = None
    using: tuple[Name, ...] = ()


@dataclass(frozen=True)
class FromItem:
    first: Union[TableRef, SubqueryRef]
    joins: tuple[Join, ...] = ()


@dataclass(frozen=True)
class SelectCore:
    items: tuple[SelectItem, ...]
    from_items: tuple[FromItem, ...] = ()
    where: Optional[object] = None
    group_by: tuple = ()
    having: Optional[object] = None
    distinct: bool = False
    distinct_on: tuple = ()  # DISTINCT ON (…): one row per value of these, the first by the query's ORDER BY


@dataclass(frozen=True)
class OrderItem:
    expr: object
    descending: bool = False
    nulls: Optional[str] = None


@dataclass(frozen=True)
class Query:
    cores: tuple[SelectCore, ...]
    set_operators: tuple[str, ...] = ()
    order_by: tuple[OrderItem, ...] = ()
    limit: Optional[int] = None
    offset: Optional[int] = None


# ---------------------------------------------------------------- statements
@dataclass(frozen=True)
class Statement:
    pass


@dataclass(frozen=True)
class CreateSecret(Statement):
    name: ObjectName
    value: StringValue
    if_not_exists: bool = False


@dataclass(frozen=True)
class RenameTo:
    new_name: Name


@dataclass(frozen=True)
class SetSecretValue:
    value: StringValue


@dataclass(frozen=True)
class SetOptions:
    options: tuple[Option, ...]


@dataclass(frozen=True)
class ResetOptions:
    names: tuple[Option, ...]  # values are None


@dataclass(frozen=True)
class SetFrom:
    """ALTER SINK … SET FROM relation."""
    relation: ObjectName


@dataclass(frozen=True)
class AddColumn:
    column: "ColumnDef"
    if_not_exists: bool = False


@dataclass(frozen=True)
class Alter(Statement):
    kind: str  # 'secret', 'connection', 'source', 'table', 'materialized-view', 'sink', 'view'
    name: ObjectName
    action: Union[RenameTo, SetSecretValue, SetOptions, ResetOptions, AddColumn, SetFrom]
    if_exists: bool = False
    action_pos: int = _pos()
    with_options: tuple[Option, ...] = ()  # ALTER CONNECTION … WITH (VALIDATE = false)


@dataclass(frozen=True)
class Drop(Statement):
    kind: str
    names: tuple[ObjectName, ...]
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class CreateConnection(Statement):
    name: ObjectName
    connection_type: str  # 'aws', 'iceberg-catalog', 'postgres'
    options: tuple[Option, ...]
    with_options: tuple[Option, ...] = ()
    if_not_exists: bool = False


@dataclass(frozen=True)
class ValidateConnection(Statement):
    name: ObjectName


@dataclass(frozen=True)
class TableReference:
    upstream: ObjectName
    alias: Optional[Name] = None


@dataclass(frozen=True)
class CreatePostgresSource(Statement):
    name: ObjectName
    connection: ObjectName
    options: tuple[Option, ...]
    tables: Union[str, tuple[TableReference, ...], tuple[Name, ...], None] = None
    tables_kind: Optional[str] = None  # 'all', 'schemas', 'tables' or None
    cluster: Optional[Name] = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateLoadGeneratorSource(Statement):
    name: ObjectName
    generator: Name
    options: tuple[Option, ...] = ()
    all_tables: bool = False
    cluster: Optional[Name] = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class ColumnDef:
    name: Name
    type: DataType
    not_null: bool = False
    primary_key: bool = False
    default: Optional[object] = None


@dataclass(frozen=True)
class CreateType(Statement):
    """CREATE TYPE name AS (field type, …) (a record), AS LIST (ELEMENT TYPE = t), AS MAP (KEY TYPE = text,
    VALUE TYPE = t)."""
    name: ObjectName
    fields: tuple["ColumnDef", ...] = ()  # a record's
    category: str = "record"  # 'record', 'list', 'map'
    options: tuple[Option, ...] = ()  # a list's or a map's


@dataclass(frozen=True)
class CreateTable(Statement):
    name: ObjectName
    columns: tuple[ColumnDef, ...]
    primary_key: tuple[Name, ...] = ()
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateTableFromSource(Statement):
    name: ObjectName
    source: ObjectName
    reference: Optional[ObjectName]  # None: the source's one table
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateMaterializedView(Statement):
    name: ObjectName
    query: Query
    cluster: Optional[Name] = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class PartitionField:
    transform: Optional[Name]  # None: identity
    column: Name
    argument: Optional[int] = None


@dataclass(frozen=True)
class CreateSink(Statement):
    name: ObjectName
    input: ObjectName
    connection: ObjectName
    target: tuple[Option, ...]
    mode: Optional[str] = None  # 'upsert' | 'append' | other words as written
    mode_pos: int = _pos()
    key: tuple[Name, ...] = ()
    key_enforced: bool = True
    partition_by: tuple[PartitionField, ...] = ()
    partition_by_clauses: int = 0
    with_options: Optional[tuple[Option, ...]] = None
    aws_connection: Optional[ObjectName] = None
    cluster: Optional[Name] = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class ShowObjects(Statement):
    kind: str  # 'secrets', 'connections', ...
    like: Optional[str] = None
    on: Optional[ObjectName] = None  # SHOW SUBSOURCES ON source


@dataclass(frozen=True)
class ShowCreate(Statement):
    kind: str
    name: ObjectName
    redacted: bool = False


@dataclass(frozen=True)
class ShowColumns(Statement):
    name: ObjectName


@dataclass(frozen=True)
class ShowVariable(Statement):
    name: Name


@dataclass(frozen=True)
class Insert(Statement):
    table: ObjectName
    columns: tuple[Name, ...] = ()
    rows: tuple[tuple, ...] = ()
    query: Optional[Query] = None


@dataclass(frozen=True)
class Copy(Statement):
    """COPY table [(columns)] FROM 'path' [WITH (FORMAT …, HEADER, DELIMITER …, NULL …, QUOTE …, ESCAPE …)]."""

    table: ObjectName
    columns: tuple[Name, ...]
    path: StringValue
    options: tuple[Option, ...] = ()


@dataclass(frozen=True)
class Update(Statement):
    table: ObjectName
    assignments: tuple[tuple[Name, object], ...]
    where: Optional[object] = None
    alias: Optional[Name] = None


@dataclass(frozen=True)
class Delete(Statement):
    table: ObjectName
    where: Optional[object] = None
    alias: Optional[Name] = None


@dataclass(frozen=True)
class SetVariable(Statement):
    name: Name
    value: OptionValue
    system: bool = False


@dataclass(frozen=True)
class Select(Statement):
    query: Query


def children(node) -> tuple:
    """A node's fields that say what it is (not where it was written), or a tuple's members."""
    if isinstance(node, tuple):
        return node
    if dataclasses.is_dataclass(node):
        return tuple(getattr(node, f.name) for f in dataclasses.fields(node) if f.compare)
    return ()


def walk(node) -> Iterator[object]:
    """`node` and everything below it, depth first (without recursion: a long chain of operators is a deep
    tree)."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))
