"""What the planner hands the runtime, typed: one frozen dataclass per kind of catalog object, each with its JSON form
for the catalog's `definition` column (whose keys the system views read) and a format version for migrations.
Nothing outside `to_json`/`from_json` reads a descriptor by string key.

FORMAT 1 is the layout icesink wrote before descriptors existed (it carried no "format" key): from_json reads it
as it reads its own.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from typing import Optional, Union

from .types import Column

FORMAT = 1


class DescriptorError(ValueError):
    """A catalog row whose definition this icesink cannot read (written by a newer one, or damaged)."""


def _format(data: dict) -> None:
    found = data.get("format", 1)
    if found > FORMAT:
        raise DescriptorError(f"definition format {found} is newer than this icesink's ({FORMAT})")


def _columns(data) -> Optional[tuple[Column, ...]]:
    if data is None:
        return None
    return tuple(Column(c["name"], c["type"], c.get("nullable", True)) for c in data)


def _columns_json(columns) -> Optional[list[dict]]:
    return None if columns is None else [c.as_dict() for c in columns]


# ---------------------------------------------------------------- option values of connections
@dataclass(frozen=True)
class SecretRef:
    """`SECRET name`, or `'prefix' || SECRET name`: the value is read from the secret store when connecting."""

    secret_id: str
    prefix: Optional[str] = None

    def to_json(self) -> dict:
        return {"secret": self.secret_id, **({"prefix": self.prefix} if self.prefix is not None else {})}


@dataclass(frozen=True)
class ConnectionRef:
    """`AWS CONNECTION name`."""

    connection_id: str

    def to_json(self) -> dict:
        return {"connection": self.connection_id}


OptionValue = Union[str, int, float, bool, SecretRef, ConnectionRef, tuple, None]


def _value_from_json(value) -> OptionValue:
    if isinstance(value, dict) and "secret" in value:
        return SecretRef(value["secret"], value.get("prefix"))
    if isinstance(value, dict) and "connection" in value:
        return ConnectionRef(value["connection"])
    if isinstance(value, list):
        return tuple(value)
    return value


def _value_to_json(value: OptionValue):
    if isinstance(value, (SecretRef, ConnectionRef)):
        return value.to_json()
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass(frozen=True)
class _Options:
    """Options of one connection kind: a field per option, named as its words in snake case."""

    @classmethod
    def from_json(cls, data: dict):
        names = {f.name for f in fields(cls)}
        return cls(**{k: _value_from_json(v) for k, v in data.items() if k in names})

    def to_json(self) -> dict:
        return {f.name: _value_to_json(getattr(self, f.name)) for f in fields(self)
                if getattr(self, f.name) is not None}

    def given(self) -> dict[str, OptionValue]:
        """The options the statement gave, by their snake-case names."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class AwsOptions(_Options):
    region: Optional[str] = None
    endpoint: Optional[str] = None
    access_key_id: Union[str, SecretRef, None] = None
    secret_access_key: Optional[SecretRef] = None
    session_token: Union[str, SecretRef, None] = None
    assume_role_arn: Optional[str] = None
    assume_role_session_name: Optional[str] = None
    external_id: Optional[str] = None


@dataclass(frozen=True)
class IcebergCatalogOptions(_Options):
    catalog_type: str = "local"
    url: Optional[str] = None
    warehouse: Optional[str] = None
    credential: Union[str, SecretRef, None] = None
    token: Optional[SecretRef] = None
    scope: Optional[str] = None
    oauth2_server_url: Optional[str] = None
    access_delegation: Optional[str] = None
    aws_connection: Optional[ConnectionRef] = None
    storage_provider: Optional[str] = None  # 's3' (the default) or 'gcs'
    gcp_connection: Optional[ConnectionRef] = None


@dataclass(frozen=True)
class GcpOptions(_Options):
    service_account_key: Optional[SecretRef] = None


@dataclass(frozen=True)
class PostgresOptions(_Options):
    host: Optional[str] = None
    port: Union[int, str, None] = None
    database: Optional[str] = None
    user: Union[str, SecretRef, None] = None
    password: Optional[SecretRef] = None
    ssl_mode: Optional[str] = None
    ssl_certificate_authority: Union[str, SecretRef, None] = None
    ssl_certificate: Union[str, SecretRef, None] = None
    ssl_key: Optional[SecretRef] = None
    aws_connection: Optional[ConnectionRef] = None


CONNECTION_OPTIONS = {"aws": AwsOptions, "iceberg-catalog": IcebergCatalogOptions, "postgres": PostgresOptions,
                      "gcp": GcpOptions}


@dataclass(frozen=True)
class ConnectionDescriptor:
    kind: str  # 'aws', 'iceberg-catalog', 'postgres', 'gcp'
    options: _Options
    external_id: Optional[str] = None  # AWS role assumption: what the trust policy must require
    example_trust_policy: Optional[str] = None

    def to_json(self) -> dict:
        data = {"format": FORMAT, "options": self.options.to_json()}
        if self.external_id is not None:
            data.update(external_id=self.external_id, example_trust_policy=self.example_trust_policy)
        return data

    @classmethod
    def from_json(cls, kind: str, data: dict) -> "ConnectionDescriptor":
        _format(data)
        return cls(kind, CONNECTION_OPTIONS[kind].from_json(data.get("options", {})), data.get("external_id"),
                   data.get("example_trust_policy"))


# ---------------------------------------------------------------- relations
@dataclass(frozen=True)
class TableDescriptor:
    """CREATE TABLE: an engine table (its rows kept by icesink), or one fed by a source (`source_id`)."""

    columns: Optional[tuple[Column, ...]]
    primary_key: tuple[str, ...] = ()
    source_id: Optional[str] = None
    upstream: Optional[str] = None  # the source's table it reads, when fed by a source

    @property
    def is_engine_table(self) -> bool:
        return self.source_id is None

    def to_json(self) -> dict:
        data = {"format": FORMAT, "columns": _columns_json(self.columns), "primary_key": list(self.primary_key)}
        if self.source_id is not None:
            data.update(source_id=self.source_id, upstream=self.upstream)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "TableDescriptor":
        _format(data)
        return cls(_columns(data.get("columns")), tuple(data.get("primary_key", ())), data.get("source_id"),
                   data.get("upstream"))


@dataclass(frozen=True)
class SubsourceDescriptor:
    """One upstream table of a source; its columns are None until the source has asked the upstream system."""

    upstream: str
    columns: Optional[tuple[Column, ...]] = None
    primary_key: tuple[str, ...] = ()
    source_id: Optional[str] = None

    def to_json(self) -> dict:
        return {"format": FORMAT, "upstream": self.upstream, "columns": _columns_json(self.columns),
                "primary_key": list(self.primary_key), "source_id": self.source_id}

    @classmethod
    def from_json(cls, data: dict) -> "SubsourceDescriptor":
        _format(data)
        return cls(data.get("upstream", ""), _columns(data.get("columns")), tuple(data.get("primary_key", ())),
                   data.get("source_id"))


@dataclass(frozen=True)
class GeneratorSettings:
    """A load generator's options, as Materialize names them (TICK INTERVAL in milliseconds)."""

    tick_interval_ms: Optional[int] = None
    up_to: Optional[int] = None
    as_of: Optional[int] = None  # ticks already made when the source is created
    seed: Optional[int] = None
    max_cardinality: Optional[int] = None
    keys: Optional[int] = None
    batch_size: Optional[int] = None
    scale_factor: Optional[float] = None

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_json(cls, data: dict) -> "GeneratorSettings":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class LoadGeneratorDescriptor:
    generator: str  # 'counter', 'auction', 'key value', 'tpch'
    settings: GeneratorSettings = field(default_factory=GeneratorSettings)
    columns: Optional[tuple[Column, ...]] = None  # a generator of one relation (COUNTER, KEY VALUE) is that relation
    primary_key: tuple[str, ...] = ()

    def to_json(self) -> dict:
        data = {"format": FORMAT, "generator": self.generator, "options": self.settings.to_json()}
        if self.columns is not None:
            data.update(columns=_columns_json(self.columns), primary_key=list(self.primary_key))
        return data

    @classmethod
    def from_json(cls, data: dict) -> "LoadGeneratorDescriptor":
        _format(data)
        return cls(data["generator"], GeneratorSettings.from_json(data.get("options", {})),
                   _columns(data.get("columns")), tuple(data.get("primary_key", ())))


def referenced_column(reference: str, upstream: str) -> Optional[str]:
    """The column a TEXT/EXCLUDE COLUMNS reference ('table.col' or 'schema.table.col') names in the upstream table
    'schema.table', or None when it names another table."""
    *relation, column = reference.split(".")
    schema, name = upstream.split(".", 1)
    return column if relation in ([name], [schema, name]) else None


@dataclass(frozen=True)
class PostgresSourceDescriptor:
    connection_id: str
    publication: str
    text_columns: tuple[str, ...] = ()
    exclude_columns: tuple[str, ...] = ()
    tables: Optional[str] = None  # 'all', 'schemas', 'tables' or None
    schemas: Optional[tuple[str, ...]] = None

    @property
    def columns(self) -> None:
        return None  # a Postgres source is its subsources

    def to_json(self) -> dict:
        options = {"publication": self.publication}
        if self.text_columns:
            options["text_columns"] = list(self.text_columns)
        if self.exclude_columns:
            options["exclude_columns"] = list(self.exclude_columns)
        return {"format": FORMAT, "connection_id": self.connection_id, "options": options, "tables": self.tables,
                "schemas": list(self.schemas) if self.schemas is not None else None}

    @classmethod
    def from_json(cls, data: dict) -> "PostgresSourceDescriptor":
        _format(data)
        options = data.get("options", {})
        schemas = data.get("schemas")
        return cls(data["connection_id"], options.get("publication", ""), tuple(options.get("text_columns", ())),
                   tuple(options.get("exclude_columns", ())), data.get("tables"),
                   tuple(schemas) if schemas is not None else None)


@dataclass(frozen=True)
class ViewDescriptor:
    query_sql: str
    columns: Optional[tuple[Column, ...]]
    unique_keys: tuple[tuple[str, ...], ...] = ()
    # each column's numeric scale where its query fixes one (floor(n): 0, n * 2: 2), else None; () before they were
    # kept, when a column's declared type's was taken
    scales: tuple[Optional[int], ...] = ()
    # which columns are numerics the query computes (held as SQLite computes them, not as the store keeps one)
    computed: tuple[bool, ...] = ()

    @property
    def primary_key(self) -> tuple[str, ...]:
        return ()

    def to_json(self) -> dict:
        data = {"format": FORMAT, "query_sql": self.query_sql, "columns": _columns_json(self.columns),
                "unique_keys": [list(k) for k in self.unique_keys]}
        if self.scales:
            data["scales"] = list(self.scales)
        if any(self.computed):
            data["computed"] = list(self.computed)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "ViewDescriptor":
        _format(data)
        return cls(data["query_sql"], _columns(data.get("columns")),
                   tuple(tuple(k) for k in data.get("unique_keys", ())), tuple(data.get("scales", ())),
                   tuple(data.get("computed", ())))


# ---------------------------------------------------------------- a sink's view input
@dataclass(frozen=True)
class ViewSide:
    """Another relation a view joins (beside ViewInput.input_id): its changes' `changed_columns`, loaded into
    temp._icesink_changes, and `touched_sql`, which finds the view's keys they touch (through the joins)."""
    table_id: str
    changed_columns: tuple[str, ...]
    touched_sql: str

    def to_json(self) -> dict:
        return {"table_id": self.table_id, "changed_columns": list(self.changed_columns),
                "touched_sql": self.touched_sql}

    @classmethod
    def from_json(cls, data: dict) -> "ViewSide":
        return cls(data["table_id"], tuple(data["changed_columns"]), data["touched_sql"])


@dataclass(frozen=True)
class ViewInput:
    """How a sink keeps a materialized view up to date, as SQLite statements over icesink's store planned at CREATE
    SINK (engine/sources/view.py runs them). `input_id` is the relation the view's key comes from: the key is
    expressions over it (its GROUP BY, else its primary key). A batch loads its changes' `changed_columns` into
    temp._icesink_changes, `touched_sql` finds the keys they touch (with the newest offset and time of each), and
    `query_sql` computes the view's rows for those keys alone, each followed by its key (_icesink_g0, …).
    `key_outputs`: for each of the view's columns, which key expression it is (None: not one), to write a key's
    deletion. `index_keys`: the key's expressions as an index of the input takes them, for `query_sql` to look each
    touched key up by. A sink's first batch computes the whole view by `whole_sql` in one pass over its tables (or,
    with `split_sql`, in ranges of the first of `index_keys`, one pass each), and when the view is empty, recomputes
    the key `any_key_sql` finds, so that its commit records the batch's offset. `share_column`: an integer or text
    column of the input that is one of the key's expressions; a batch's partitions then each take every change of the
    batch whose value of it falls to them (an integer by its remainder, text by a hash), so that each key is
    recomputed by one of them.

    A view that joins relations has `others`, the other relations it reads (engine/sources/joined_view.py),
    `all_keys_sql`, every key the view has now (the first batch of a sink planned before `whole_sql`), and
    `join_indexes`, the (relation, column) pairs its joins look rows up by.

    A view whose keys a change cannot be traced to is `recomputed` whole (engine/sources/recomputed_view.py):
    `query_sql` is its whole query, `key_outputs` places the sink's KEY among its columns, and `input_id` and
    `others` are the tables it reads."""
    input_id: str
    changed_columns: tuple[str, ...]
    touched_sql: str
    query_sql: str
    key_outputs: tuple[Optional[int], ...]
    index_keys: tuple[str, ...] = ()
    others: tuple[ViewSide, ...] = ()
    all_keys_sql: str = ""
    join_indexes: tuple[tuple[str, str], ...] = ()
    recomputed: bool = False
    any_key_sql: str = ""  # one key of the driving relation, whatever it is (offset and time its parameters)
    whole_sql: str = ""  # the whole view's query over the store (a sink's first batch), columns in the view's order
    split_sql: str = ""  # whole_sql for the keys whose first index expression is between :lo and :hi
    share_column: str = ""

    @property
    def index_name(self) -> str:
        """The index of the input a sink on the view creates, named by what it indexes: sinks on views with one key
        share it, and the last of them to go drops it."""
        digest = hashlib.sha1(", ".join(self.index_keys).encode()).hexdigest()[:12]
        return f"view_key_{self.input_id}_{digest}"

    @property
    def indexes(self) -> list[tuple[str, str, str]]:
        """(relation, index name, indexed expressions) of every index the view's sinks have its relations keep."""
        found = [(self.input_id, self.index_name, ", ".join(self.index_keys))] if self.index_keys else []
        for table_id, column in self.join_indexes:
            digest = hashlib.sha1(column.encode()).hexdigest()[:12]
            found.append((table_id, f"view_join_{table_id}_{digest}", column))
        return found

    @property
    def table_ids(self) -> tuple[str, ...]:
        return (self.input_id, *(side.table_id for side in self.others))

    def to_json(self) -> dict:
        data = {"input_id": self.input_id, "changed_columns": list(self.changed_columns),
                "touched_sql": self.touched_sql, "query_sql": self.query_sql, "key_outputs": list(self.key_outputs),
                "index_keys": list(self.index_keys)}
        if self.others:
            data.update(others=[side.to_json() for side in self.others],
                        join_indexes=[list(pair) for pair in self.join_indexes])
        if self.all_keys_sql:
            data["all_keys_sql"] = self.all_keys_sql
        if self.any_key_sql:
            data["any_key_sql"] = self.any_key_sql
        if self.whole_sql:
            data["whole_sql"] = self.whole_sql
        if self.split_sql:
            data["split_sql"] = self.split_sql
        if self.share_column:
            data["share_column"] = self.share_column
        if self.recomputed:
            data["recomputed"] = True
        return data

    @classmethod
    def from_json(cls, data: Optional[dict]) -> Optional["ViewInput"]:
        if data is None:
            return None
        return cls(data["input_id"], tuple(data["changed_columns"]), data["touched_sql"], data["query_sql"],
                   tuple(data["key_outputs"]), tuple(data.get("index_keys", ())),
                   tuple(ViewSide.from_json(side) for side in data.get("others", ())), data.get("all_keys_sql", ""),
                   tuple(tuple(pair) for pair in data.get("join_indexes", ())), bool(data.get("recomputed", False)),
                   data.get("any_key_sql", ""), data.get("whole_sql", ""), data.get("split_sql", ""),
                   data.get("share_column", ""))


# ---------------------------------------------------------------- sinks
@dataclass(frozen=True)
class PartitionField:
    transform: str  # 'identity', 'year', 'month', 'day', 'hour', 'bucket', 'truncate'
    column: str
    argument: Optional[int] = None

    @property
    def name(self) -> str:
        """The partition field's name in the table's spec: the column's, with the transform after it."""
        return self.column if self.transform == "identity" else f"{self.column}_{self.transform}"

    def to_json(self) -> dict:
        return {"transform": self.transform, "column": self.column,
                **({"argument": self.argument} if self.argument is not None else {})}

    @classmethod
    def from_json(cls, data: dict) -> "PartitionField":
        return cls(data["transform"], data["column"], data.get("argument"))


@dataclass(frozen=True)
class FoldPolicy:
    """How a merge-on-read sink folds deletes (WITH (FOLD …)): a data file is rewritten once `threshold` of its rows
    are deleted, small files once `small_files` of them have gathered, at least max(`rows_per_batch`, 4 × its
    changes) rows after a batch when there are, more when the time left before the next batch allows;
    `rows_per_batch` 0 folds nothing."""
    threshold: float = 0.05
    small_files: int = 16
    rows_per_batch: int = 500_000

    def to_json(self) -> dict:
        return {"threshold": self.threshold, "small_files": self.small_files, "rows_per_batch": self.rows_per_batch}

    @classmethod
    def from_json(cls, data: Optional[dict]) -> "FoldPolicy":
        return cls(**(data or {}))


# MODE APPEND's columns after the input's: Materialize's names for a change's diff and timestamp
APPEND_COLUMNS = (Column("_mz_diff", "integer"), Column("_mz_timestamp", "bigint"))
MZ_DIFF, MZ_TIMESTAMP = (c.name for c in APPEND_COLUMNS)


@dataclass(frozen=True)
class SinkDescriptor:
    input_id: str
    connection_id: str
    namespace: str  # dot-separated levels
    table: str
    mode: str  # 'upsert' | 'append'
    commit_interval_ms: int
    key: tuple[str, ...] = ()
    key_enforced: bool = True
    key_checked: bool = True  # False: the input's columns were unknown when it was planned
    partition_by: tuple[PartitionField, ...] = ()
    columns: Optional[tuple[Column, ...]] = None
    aws_connection_id: Optional[str] = None
    write_mode: str = "copy-on-write"  # MODE UPSERT's: 'copy-on-write' | 'merge-on-read'
    fold: FoldPolicy = FoldPolicy()  # merge-on-read's
    # the input before the first ALTER SINK … SET FROM: the one progress written without its input's id counts
    first_input_id: Optional[str] = None
    view: Optional[ViewInput] = None  # when the input is a materialized view: how its changes are computed

    @property
    def unnamed_input_id(self) -> str:
        """The input whose changes a progress that names none counts (icesink before it named them)."""
        return self.first_input_id or self.input_id

    @property
    def writer(self) -> str:
        """Which writer writes the sink's batches (engine/sink/writers WRITERS)."""
        if self.mode == "upsert" and self.write_mode == "merge-on-read":
            return "merge-on-read"
        return self.mode

    @property
    def namespace_levels(self) -> tuple[str, ...]:
        return tuple(self.namespace.split("."))

    @property
    def identifier(self) -> tuple[str, ...]:
        return (*self.namespace_levels, self.table)

    @property
    def table_columns(self) -> tuple[Column, ...]:
        """The Iceberg table's columns: the input's, then MODE APPEND's own."""
        return self.columns + APPEND_COLUMNS if self.mode == "append" else self.columns

    def to_json(self) -> dict:
        return {"format": FORMAT, "input_id": self.input_id, "connection_id": self.connection_id,
                "aws_connection_id": self.aws_connection_id, "namespace": self.namespace, "table": self.table,
                "mode": self.mode, "key": list(self.key), "key_enforced": self.key_enforced,
                "key_checked": self.key_checked, "partition_by": [p.to_json() for p in self.partition_by],
                "commit_interval_ms": self.commit_interval_ms, "columns": _columns_json(self.columns),
                "write_mode": self.write_mode, "fold": self.fold.to_json(),
                **({"first_input_id": self.first_input_id} if self.first_input_id else {}),
                **({"view": self.view.to_json()} if self.view else {})}

    # the JSON paths of the Iceberg table a sink writes, for the catalog to look sinks up by it in SQL
    TABLE_PATHS = ("$.namespace", "$.table")

    @classmethod
    def from_json(cls, data: dict) -> "SinkDescriptor":
        _format(data)
        return cls(data["input_id"], data["connection_id"], data["namespace"], data["table"], data["mode"],
                   data["commit_interval_ms"], tuple(data.get("key", ())), data.get("key_enforced", True),
                   data.get("key_checked", True), tuple(PartitionField.from_json(p) for p in data.get("partition_by", ())),
                   _columns(data.get("columns")), data.get("aws_connection_id"),
                   data.get("write_mode", "copy-on-write"), FoldPolicy.from_json(data.get("fold")),
                   data.get("first_input_id"), ViewInput.from_json(data.get("view")))


@dataclass(frozen=True)
class TypeDescriptor:
    """CREATE TYPE: the type a column of this name has (model/types: a record's, a list's or a map's name)."""
    type_name: str

    def to_json(self) -> dict:
        return {"format": FORMAT, "type_name": self.type_name}

    @classmethod
    def from_json(cls, data: dict) -> "TypeDescriptor":
        _format(data)
        return cls(data["type_name"])


@dataclass(frozen=True)
class SecretDescriptor:
    """A secret's value is in the secret store; the catalog keeps nothing of it."""

    def to_json(self) -> dict:
        return {"format": FORMAT}

    @classmethod
    def from_json(cls, data: dict) -> "SecretDescriptor":
        _format(data)
        return cls()


Descriptor = Union[SecretDescriptor, ConnectionDescriptor, TableDescriptor, SubsourceDescriptor, LoadGeneratorDescriptor,
                   PostgresSourceDescriptor, ViewDescriptor, SinkDescriptor, TypeDescriptor]


def from_json(kind: str, type_: str, data: dict) -> Descriptor:
    """The descriptor of a catalog row of `kind` and `type_` from its definition column."""
    if kind == "connection":
        return ConnectionDescriptor.from_json(type_, data)
    if kind == "source":
        return LoadGeneratorDescriptor.from_json(data) if type_ == "load-generator" \
            else PostgresSourceDescriptor.from_json(data)
    reader = {"secret": SecretDescriptor, "table": TableDescriptor, "subsource": SubsourceDescriptor,
              "materialized-view": ViewDescriptor, "sink": SinkDescriptor, "type": TypeDescriptor}.get(kind)
    if reader is None:
        raise DescriptorError(f"unknown kind of object {kind!r}")
    return reader.from_json(data)
