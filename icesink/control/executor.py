"""Carries out plans: catalog changes in one transaction each, secrets, validation, queries. The last step of a
statement's life (docs/architecture.md, "The life of a statement")."""
from __future__ import annotations

import dataclasses
import json
import math
import shutil
import sqlite3
from dataclasses import dataclass, field
from datetime import timezone
from decimal import Decimal
from functools import partial

from pyiceberg.exceptions import NoSuchTableError
from typing import Callable

from ..catalog.secrets import secret_value
from ..catalog.sqlite import sqlite_message
from ..catalog.sql_functions import moment_text, numeric_text
from ..catalog.store import Catalog, CatalogObject, now
from ..catalog_connections import connector_for
from ..model.types import Column
from ..errors import CatalogError, IcesinkError, NotSupportedYet, PlanError, first_line
from .binder import KIND_WORDS
from .copy_from import CopyError, read_rows
from .postgres_source import resolve_subsources, resolve_table
from .plans import (AddColumnPlan, AlterConnectionPlan, CopyPlan, CreatePlan, DropPlan, GeneratorQueryPlan,
                    IcebergQueryPlan, InsertRowsPlan, NoticePlan, QueryPlan, SetSecretPlan, SetVariablePlan, UpdatePlan,
                    ValidatePlan, WritePlan)
from ..engine.ingest.postgres import (copy_later, drop_slot, forget, not_copied_yet, replicated_relations,
                                      slot_name)
from ..engine.generated_tables import catch_up, spec
from ..engine.lifecycle import dropped
from ..engine.sink import state_dir as sink_state_dir
from ..engine.tables import RowRefused, TableStore, add_input_function, is_engine_table, quote
from ..engine.values import InvalidValue


@dataclass
class Result:
    status: str  # command tag, e.g. 'CREATE SINK', 'SELECT 2'
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


_PREPOSITIONS = {"INSERT": "into", "UPDATE": "of", "DELETE": "from"}  # where a write's error names its table


class Executor:
    def __init__(self, catalog: Catalog, secrets, tables: TableStore, session_settings: dict[str, str], spark):
        self.catalog = catalog
        self.secrets = secrets
        self.tables = tables
        self.spark = spark  # the session's SparkSession, started with its settings on first use
        self.session_settings = session_settings
        # a query over system views casts as one over engine tables does (control/sqlite_sql.py: icesink_in)
        add_input_function(catalog.db)

    def secret_value(self, secret_id: str) -> str:
        return secret_value(self.catalog, self.secrets, secret_id)

    def run(self, plan) -> Result:
        handler: Callable = getattr(self, "_" + type(plan).__name__)
        return handler(plan)

    # ------------------------------------------------------------ changes
    def _CreatePlan(self, plan: CreatePlan) -> Result:
        result = Result(f"CREATE {KIND_WORDS[plan.kind].upper()}", notices=list(plan.notices))
        if plan.kind == "connection":
            draft = CatalogObject("", plan.name, plan.kind, plan.type, "", "", plan.descriptor)
            result.notices.extend(self._validated(draft, plan.validate))
        if plan.kind == "source" and plan.type == "postgres":
            resolve_subsources(plan, connector_for(self.catalog.get_by_id(plan.connection_id), self.secret_value,
                                                   self.catalog), lambda name: self.catalog.get(name) is not None)
        replicated_from = self._replicating_source(plan)
        if replicated_from is not None:
            replicated = {o.descriptor.upstream: o.name for o in replicated_relations(self.catalog,
                                                                                     replicated_from.id)}
            resolve_table(plan, replicated_from, connector_for(self.catalog.get_by_id(
                replicated_from.connection_id), self.secret_value, self.catalog), replicated)
        try:
            with self.catalog.transaction():
                object_id = self._insert(plan)
                for child in plan.children:
                    child.depends_on = (object_id,)
                    child.descriptor = dataclasses.replace(child.descriptor, source_id=object_id)
                    child_id = self._insert(child)
                    if plan.type == "postgres":  # replicated into an engine table of its own
                        self.tables.create(child_id, child.descriptor.columns, child.descriptor.primary_key)
                if plan.secret_value is not None:
                    self.secrets.set(object_id, plan.secret_value)
                if replicated_from is not None:  # copied by the running source, then replicated like the rest
                    copy_later(self.tables, object_id, replicated_from.id)
                if is_engine_table(plan) or replicated_from is not None:
                    self.tables.create(object_id, plan.descriptor.columns, plan.descriptor.primary_key)
        except sqlite3.IntegrityError:
            if plan.if_not_exists and self.catalog.get(plan.name) is not None:  # lost a race to another process
                return Result(result.status, notices=[f"{KIND_WORDS[plan.kind]} '{plan.name}' already exists, "
                                                      "skipping"])
            raise CatalogError(f"an object named '{plan.name}' (or one of its subsources) was just created by "
                               "another session") from None
        return result

    def _replicating_source(self, plan: CreatePlan) -> CatalogObject | None:
        """The Postgres source a CREATE TABLE … FROM SOURCE reads (its rows kept in icesink's store)."""
        source_id = getattr(plan.descriptor, "source_id", None) if plan.kind == "table" else None
        source = self.catalog.get_by_id(source_id) if source_id else None
        return source if source is not None and source.type == "postgres" else None

    def _insert(self, plan: CreatePlan) -> str:
        object_id, _ = self.catalog.allocate_id()
        self.catalog.insert(CatalogObject(object_id, plan.name, plan.kind, plan.type, plan.create_sql,
                                          plan.redacted_create_sql, plan.descriptor, plan.cluster,
                                          plan.connection_id, plan.envelope, now()), plan.depends_on)
        return object_id

    def _validated(self, connection: CatalogObject, validate: bool | None) -> list[str]:
        """Validates a connection being created or altered (unless `validate` is False). What this release cannot
        run is a notice, and the connection is kept, unless validation was asked for in so many words."""
        if validate is False:
            return []
        try:
            connector_for(connection, self.secret_value, self.catalog).validate()
        except NotSupportedYet as exc:
            if validate:
                raise
            return [f"{exc.message}; the connection is kept (a sink that uses it fails, saying so), as Materialize's "
                    "scripts expect"]
        return []

    def _DropPlan(self, plan: DropPlan) -> Result:
        kinds = {KIND_WORDS[o.kind] for o in plan.objects if o.kind != "subsource"}
        status = f"DROP {kinds.pop().upper()}" if len(kinds) == 1 else "DROP"
        replicated = [(o, self.catalog.get_by_id(o.connection_id)) for o in plan.objects
                      if o.kind == "source" and o.type == "postgres"]
        with self.catalog.transaction():
            self.catalog.delete([o.id for o in plan.objects])
            for obj in plan.objects:
                if obj.kind in ("sink", "source", "subsource"):
                    dropped(self.catalog, obj.id, "sink" if obj.kind == "sink" else "source")
        notices = list(plan.notices) + self._drop_replication(replicated)
        for obj in plan.objects:
            if obj.kind == "secret":
                self.secrets.delete(obj.id)
            elif obj.kind in ("table", "subsource") or obj.type == "load-generator":  # the rows icesink keeps, if any
                self.tables.drop(obj.id)
            elif obj.kind == "sink":
                shutil.rmtree(sink_state_dir(self.catalog.data_dir, obj.id), ignore_errors=True)
                self._drop_view_index(obj)
        cascaded = [f"{KIND_WORDS[o.kind]} '{o.name}'" for o in plan.objects if o.id not in plan.named]
        if cascaded:
            notices.append("also dropped: " + ", ".join(cascaded))
        return Result(status, notices=notices)

    def _drop_view_index(self, sink) -> None:
        """The indexes a dropped sink's view had its tables keep, unless another sink's view uses them: the tables'
        writes keep them up to date for nothing."""
        view = sink.descriptor.view
        if view is None:
            return
        used = {name for other in self.catalog.sinks() if other.descriptor.view is not None
                for _, name, _ in other.descriptor.view.indexes}
        for _, name, _ in view.indexes:
            if name not in used:
                self.tables.db.execute(f"DROP INDEX IF EXISTS {quote(name)}")

    def _drop_replication(self, sources) -> list[str]:
        """Each dropped Postgres source's replication slot, which would hold the upstream's WAL forever; a slot
        that cannot be dropped now is named in a notice, with how to drop it."""
        notices = []
        for source, connection in sources:
            forget(self.tables, source.id)
            slot = slot_name(self.catalog, source.id)
            try:
                drop_slot(connector_for(connection, self.secret_value, self.catalog), slot)
            except Exception as exc:
                reason = getattr(exc, "message", None) or first_line(exc)
                notices.append(f"the replication slot {slot} of source '{source.name}' was not dropped ({reason}); "
                               f"drop it upstream: SELECT pg_drop_replication_slot('{slot}')")
        return notices

    def _UpdatePlan(self, plan: UpdatePlan) -> Result:
        try:
            with self.catalog.transaction():
                for obj in plan.objects:
                    self.catalog.update(obj)
                for object_id, depends_on in plan.depends_on.items():
                    self.catalog.set_dependencies(object_id, depends_on)
        except sqlite3.IntegrityError:
            raise CatalogError(f"the name '{plan.objects[0].name}' was just taken by another session") from None
        return Result(plan.status)

    def _AddColumnPlan(self, plan: AddColumnPlan) -> Result:
        """Inside the catalog's write transaction, so that two ALTERs of one table take turns, each seeing the
        columns the other left. The store's table first: were the catalog's transaction to fail, the store has a
        column no one writes yet (its sinks stop before changes that hold it), which the same ALTER, run again,
        finds there and keeps."""
        with self.catalog.transaction():
            current = self.catalog.get_by_id(plan.table.id)
            if current is None or current.descriptor.columns != plan.table.descriptor.columns[:-1]:
                raise CatalogError(f"table '{plan.table.name}' was changed by another session while this ALTER "
                                   "ran; run it again")
            self.tables.evolve(plan.table.id, plan.table.descriptor.columns, {})
            for obj in (plan.table, *plan.sinks):
                self.catalog.update(obj)
            self.catalog.add_dependencies(plan.table.id, plan.types)
        return Result("ALTER TABLE")

    def _AlterConnectionPlan(self, plan: AlterConnectionPlan) -> Result:
        """Validated as the connection it becomes, then changed in one transaction; running sinks that use it
        start again with it (the scheduler sees the change)."""
        notices = list(plan.notices) + self._validated(plan.connection, plan.validate)
        with self.catalog.transaction():
            self.catalog.update(plan.connection)
            self.catalog.set_dependencies(plan.connection.id, plan.depends_on)
        return Result("ALTER CONNECTION", notices=notices)

    def _SetSecretPlan(self, plan: SetSecretPlan) -> Result:
        self.secrets.set(plan.secret.id, plan.value)
        return Result("ALTER SECRET")

    def _ValidatePlan(self, plan: ValidatePlan) -> Result:
        connector_for(plan.connection, self.secret_value, self.catalog).validate()
        return Result("VALIDATE CONNECTION")

    def _SetVariablePlan(self, plan: SetVariablePlan) -> Result:
        if plan.system:
            self.catalog.set_setting(plan.name, plan.value)
            return Result("ALTER SYSTEM")
        if plan.value is None:
            self.session_settings.pop(plan.name, None)
        else:
            self.session_settings[plan.name] = plan.value
        return Result("SET")

    def _NoticePlan(self, plan: NoticePlan) -> Result:
        return Result(plan.status, notices=[plan.notice])

    def _IcebergQueryPlan(self, plan: IcebergQueryPlan) -> Result:
        from ..engine.columns import column_type
        from ..engine.iceberg_read import scan_frame, table_schema

        spark = self.spark()
        columns = {}
        for view, (connection, namespace, name) in plan.views.items():
            connector = connector_for(connection, self.secret_value, self.catalog)
            try:
                table = connector.load_catalog().load_table((*namespace, name))
            except NoSuchTableError:
                raise PlanError(f"Iceberg table {'.'.join(namespace)}.{name} does not exist in catalog "
                                f"'{connection.name}'") from None
            except IcesinkError:
                raise
            except Exception as exc:  # the catalog's client says it in HTTP statuses and error codes
                raise connector.explain(exc) from None
            tasks = list(table.scan().plan_files())
            schema = table_schema(table)
            frame = scan_frame(spark, table, tasks, schema) if tasks else spark.createDataFrame([], schema)
            frame.createOrReplaceTempView(view)
            columns[view] = tuple(Column(f.name, column_type(f.dataType)) for f in schema.fields)
        return _spark_result(spark, plan.sql(columns))

    def _GeneratorQueryPlan(self, plan: GeneratorQueryPlan) -> Result:
        from ..engine.sources import input_for

        spark = self.spark()
        for view, relation in plan.relations.items():
            generated = input_for(self.catalog, relation)
            try:
                generated.current(spark).createOrReplaceTempView(view)
            finally:
                generated.close()
        return _shown(_spark_result(spark, plan.sql), scales=plan.scales)

    def _catch_up(self, generated: tuple) -> None:
        """The tables that keep load generators' relations a statement reads, brought up to their tick now."""
        catch_up(self.catalog.data_dir, [spec(self.catalog, self.catalog.get_by_id(i)) for i in generated], whole=True)

    def _WritePlan(self, plan: WritePlan) -> Result:
        self._catch_up(plan.generated)
        count = self.tables.write(plan.sql, f"{plan.verb} {_PREPOSITIONS[plan.verb]} table '{plan.table.name}'", plan.positions)
        return Result(f"{plan.verb} {'0 ' if plan.verb == 'INSERT' else ''}{count}")

    def _insert_rows(self, plan: InsertRowsPlan | CopyPlan, rows, what: str, file_pos: int | None = None) -> int:
        """A refused row is said with its column and where it is: its place in the statement, or (`file_pos`, where
        the statement names the file) its line in the file."""
        def refused(message: str, where) -> CatalogError:
            if file_pos is None:
                return CatalogError(f"{what}{message}", where)
            return CatalogError(f"{what}{f', line {where}' if where else ''}{message}", file_pos)

        try:
            return self.tables.insert_rows(plan.table.id, plan.columns, rows)
        except InvalidValue as exc:
            raise refused(f", column \"{exc.column}\": {exc}", exc.where) from None
        except RowRefused as exc:
            raise refused(f": {exc.message}", exc.where) from None
        except CopyError as exc:
            raise refused(f": {exc}", exc.line) from None

    def _InsertRowsPlan(self, plan: InsertRowsPlan) -> Result:
        count = self._insert_rows(plan, plan.rows, f"INSERT into table '{plan.table.name}'")
        return Result(f"INSERT 0 {count}")

    def _CopyPlan(self, plan: CopyPlan) -> Result:
        rows = read_rows(plan.path, [c.name for c in plan.columns], plan.options)
        count = self._insert_rows(plan, rows, f"COPY into table '{plan.table.name}' from {plan.path}", plan.path_pos)
        return Result(f"COPY {count}")

    # ------------------------------------------------------------ queries
    def _QueryPlan(self, plan: QueryPlan) -> Result:
        for object_id, name, source_id in plan.replicated:
            reason = not_copied_yet(self.tables, object_id, source_id)
            if reason is not None:
                raise CatalogError(f"'{name}' cannot be read yet: {reason}; it can once the source has run (icesink "
                                   "serve, or a shell or script that runs the sinks and sources)")
        self._catch_up(plan.generated)
        run = self.tables.query if plan.target == "tables" else self.catalog.query
        try:
            columns, rows = run(plan.sql, plan.params)
        except sqlite3.Error as exc:
            message = sqlite_message(exc)
            raise PlanError(message, plan.column_positions.get(str(exc).removeprefix("no such column: "),
                                                               plan.column_positions.get(message))) from None
        return _shown(Result(f"SELECT {len(rows)}", columns, rows), plan.booleans, plan.moments, plan.scales)


def _shown(result: Result, booleans=(), moments=(), scales=()) -> Result:
    """`result` with its booleans, moments and numerics of a known scale (by position) as Postgres shows them; each
    row rebuilt once, whatever the number of such columns."""
    return _converted(result, {**dict.fromkeys(booleans, _truths), **dict.fromkeys(moments, moment_text),
                               **{i: partial(numeric_text, scale=digits) if digits else _whole for i, digits in scales}})


def _converted(result: Result, converters: dict[int, Callable]) -> Result:
    """`result` with the columns at `converters`' positions converted by them."""
    if converters:
        by_column = [converters.get(i) for i in range(len(result.columns))]
        result.rows = [tuple(v if convert is None else convert(v) for v, convert in zip(row, by_column))
                       for row in result.rows]
    return result


def _whole(value):
    """A numeric of scale 0 computed as a number (sum(bigint), floor(x)) as an integer (SQLite's floor gives 1.0); a
    stored one keeps its text, as a stored numeric's is."""
    return int(value) if isinstance(value, (int, float, Decimal)) and math.isfinite(value) else value


def _truths(value):
    """A boolean column's value as Python's bool, SQLite's 0 or 1; a boolean array's (JSON) with true and false."""
    if isinstance(value, str):
        return json.dumps(_truths(json.loads(value)))
    if isinstance(value, list):
        return [_truths(v) for v in value]
    return None if value is None else bool(value)


def _spark_result(spark, sql: str) -> Result:
    """Spark's answer, its moments as Postgres prints them, as SQLite's answers give them (PySpark gives datetimes)."""
    from pyspark.sql.types import TimestampNTZType, TimestampType

    try:
        result = spark.sql(sql)
        rows = [tuple(row) for row in result.collect()]
    except Exception as exc:  # Spark's analysis errors carry the user's mistake
        raise PlanError(str(exc).splitlines()[0]) from None
    fields = result.schema.fields
    zoned = tuple(i for i, f in enumerate(fields) if isinstance(f.dataType, TimestampType))
    plain = tuple(i for i, f in enumerate(fields) if isinstance(f.dataType, TimestampNTZType))
    shown = Result(f"SELECT {len(rows)}", list(result.columns), rows)
    return _converted(shown, {**dict.fromkeys(zoned, _zoned_text), **dict.fromkeys(plain, _plain_text)})


def _zoned_text(value):
    """A timestamptz from PySpark (a naive datetime in this process's local time) as Postgres prints it, in UTC."""
    return None if value is None else moment_text(value.astimezone(timezone.utc).isoformat(sep=" "))


def _plain_text(value):
    return None if value is None else moment_text(value.isoformat(sep=" "))
