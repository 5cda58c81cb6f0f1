"""Planning of CREATE SINK and ALTER SINK: the Iceberg sink rules (README: Sink rules)."""
from __future__ import annotations

import dataclasses
import unicodedata

from ..catalog.store import CatalogObject
from ..errors import PlanError
from ..grammar import ast
from ..grammar.render import statement_sql
from ..grammar.parser import parse_statement
from ..model.descriptors import APPEND_COLUMNS, MZ_DIFF, MZ_TIMESTAMP, FoldPolicy, PartitionField, SinkDescriptor
from . import options as opts
from .binder import Binder
from .create import exists_notice
from .intervals import parse_interval_ms
from .plans import CreatePlan
from .query import Relation
from .types import check_partition_field, key_type_problem
from .view_inputs import plan_view_input

MIN_COMMIT_INTERVAL_MS = 1000
MAX_COMMIT_INTERVAL_MS = 86_400_000  # a day: a sink that commits less often is not keeping a table in sync
DEFAULT_WRITE_MODE = "copy-on-write"


def commit_interval_ms(option: ast.Option) -> int:
    text = option.value.value
    try:
        ms = parse_interval_ms(text)
    except ValueError as exc:
        raise PlanError(f"COMMIT INTERVAL: {exc}", option.value.pos) from None
    if ms < MIN_COMMIT_INTERVAL_MS:
        raise PlanError(f"COMMIT INTERVAL must be at least 1 second, not '{text}'", option.value.pos)
    if ms > MAX_COMMIT_INTERVAL_MS:
        raise PlanError(f"COMMIT INTERVAL must be at most 1 day, not '{text}'", option.value.pos)
    return ms


def write_mode(options: dict[str, ast.Option], mode: str) -> str:
    """WRITE MODE: how MODE UPSERT replaces rows (MODE APPEND replaces none)."""
    given = options.get("WRITE MODE")
    if given is None:
        return DEFAULT_WRITE_MODE
    if mode != "upsert":
        raise PlanError("WRITE MODE applies to MODE UPSERT: MODE APPEND only appends", given.pos)
    return opts.scalar(given).lower().replace("_", "-")


FOLD_OPTIONS = {"FOLD THRESHOLD": "threshold", "FOLD SMALL FILES": "small_files",
                "FOLD ROWS PER BATCH": "rows_per_batch"}


def fold_policy(options: dict[str, ast.Option], policy: FoldPolicy, writes_by_position: bool) -> FoldPolicy:
    """`policy` with the FOLD options given: a threshold in (0, 1], at least 2 small files, rows per batch ≥ 0."""
    given = {name: options[name] for name in FOLD_OPTIONS if name in options}
    if given and not writes_by_position:
        name, option = next(iter(given.items()))
        raise PlanError(f"{name} applies to WRITE MODE 'merge-on-read', which leaves delete files to fold",
                        option.pos)
    changes = {}
    for name, option in given.items():
        number = float(option.value.text)
        if name == "FOLD THRESHOLD" and not 0 < number <= 1:
            raise PlanError(f"FOLD THRESHOLD is the fraction of a file's rows deleted before it is rewritten: more than "
                            f"0 and at most 1, not {option.value.text}", option.value.pos)
        if name != "FOLD THRESHOLD" and (not number.is_integer() or number < (2 if name == "FOLD SMALL FILES" else 0)):
            least = 2 if name == "FOLD SMALL FILES" else 0
            raise PlanError(f"{name} must be a whole number of at least {least}, not {option.value.text}",
                            option.value.pos)
        changes[FOLD_OPTIONS[name]] = number if name == "FOLD THRESHOLD" else int(number)
    return dataclasses.replace(policy, **changes)


def _identifier_part(option: ast.Option, what: str) -> list[str]:
    """NAMESPACE (dot-separated levels) or TABLE: non-empty names without '/' or control characters, which
    catalogs and object stores cannot hold or would read as paths."""
    value = opts.scalar(option)
    levels = value.split(".") if what == "NAMESPACE" else [value]
    for level in levels:
        if not level.strip():
            empty = "is empty" if not value.strip() else f"'{value}' has an empty level"
            raise PlanError(f"{what} {empty}: name the Iceberg {what.lower()}", option.value.pos)
        bad = next((c for c in level if c == "/" or unicodedata.category(c)[0] == "C"), None)
        if bad is not None:
            shown = "'/'" if bad == "/" else f"U+{ord(bad):04X}"
            raise PlanError(f"{what} '{value}' contains {shown}, which an Iceberg catalog cannot hold in a name",
                            option.value.pos)
    return levels


def _catalog_identity(connection: CatalogObject) -> tuple:
    """Connections that reach the same catalog: every 'local' one shares the data directory's catalog."""
    options = connection.descriptor.options
    if options.catalog_type == "local":
        return ("local",)
    return (options.catalog_type, options.url, options.warehouse)


def _check_table_is_free(binder: Binder, connection: CatalogObject, namespace: str, table: str, pos: int) -> None:
    identity = _catalog_identity(connection)
    for other in binder.catalog.sinks_writing(namespace, table):
        other_connection = binder.catalog.get_by_id(other.descriptor.connection_id)
        if other_connection is not None and _catalog_identity(other_connection) == identity:
            raise PlanError(f"sink '{other.name}' already writes Iceberg table {namespace}.{table} in this catalog; "
                            "two sinks on one table would fence each other out: choose another TABLE or drop "
                            f"'{other.name}' first", pos)


def _sink_input(binder: Binder, name: ast.ObjectName) -> tuple[CatalogObject, Relation]:
    obj, relation = binder.relation(name)
    if obj.kind == "source" and relation.columns is None:
        subsources = [d.name for d in binder.catalog.dependents(obj.id) if d.kind == "subsource"]
        listing = f": {', '.join(subsources)}" if subsources else ""
        raise PlanError(f"source '{obj.name}' has one subsource per upstream table; sink one of them{listing}",
                        name.pos)
    return obj, relation


def _unique_keys(obj: CatalogObject, relation: Relation) -> list[set[str]]:
    if obj.kind == "materialized-view":
        return [set(k) for k in obj.descriptor.unique_keys]
    return [set(relation.primary_key)] if relation.primary_key else []


def _check_key(stmt: ast.CreateSink, obj: CatalogObject, relation: Relation) -> None:
    seen = set()
    for key in stmt.key:
        if key.value in seen:
            raise PlanError(f"KEY column \"{key.value}\" is listed twice", key.pos)
        seen.add(key.value)
    if relation.columns is None:
        return  # checked when the upstream schema is known
    columns = {c.name: c for c in relation.columns}
    for key in stmt.key:
        column = columns.get(key.value)
        if column is None:
            raise PlanError(f"KEY column \"{key.value}\" does not exist in '{obj.name}'; its columns are: "
                            f"{', '.join(columns)}", key.pos)
        problem = key_type_problem(column.type)
        if problem:
            raise PlanError(f"KEY column \"{key.value}\" cannot be part of a key: {problem}", key.pos)
    if not stmt.key_enforced:
        return
    unique = _unique_keys(obj, relation)
    if not any(k <= seen for k in unique):
        key_list = ", ".join(k.value for k in stmt.key)
        known = "; its unique keys are: " + ", ".join(f"({', '.join(sorted(k))})" for k in unique) if unique else ""
        raise PlanError(
            f"KEY ({key_list}) is not known to be unique in '{obj.name}'{known}",
            stmt.key[0].pos,
            hint=f"write KEY ({key_list}) NOT ENFORCED to accept it anyway: when two rows share a key within a "
                 "commit, the last change wins")


def misfit(mode: str, partition_by, columns: list[str], relation: str) -> tuple[str, int | None] | None:
    """Why a sink's table cannot have these input columns (CREATE SINK, and ALTER TABLE … ADD COLUMN of its input):
    the message, and which partition field it is about (None: the mode). None when they fit."""
    taken = [c for c in columns if c in (MZ_DIFF, MZ_TIMESTAMP)] if mode == "append" else []
    if taken:
        return f"MODE APPEND adds the column {taken[0]}, which '{relation}' already has", None
    names = set(columns) | ({c.name for c in APPEND_COLUMNS} if mode == "append" else set())
    for index, field in enumerate(partition_by):
        if field.transform != "identity" and field.name in names:
            written_as = f"{field.argument}, {field.column}" if field.argument is not None else field.column
            return (f"PARTITION BY {field.transform}({written_as}) makes the partition field {field.name}, which is "
                    f"also a column of '{relation}': Iceberg needs partition fields and columns to have different "
                    "names", index)
    return None


def plan_create_sink(binder: Binder, stmt: ast.CreateSink, text: str):
    if binder.new_name(stmt.name, stmt.if_not_exists):
        return exists_notice("sink", stmt.name.name, "CREATE SINK")
    input_obj, relation = _sink_input(binder, stmt.input)
    connection = binder.connection(stmt.connection, "iceberg-catalog")
    depends = [input_obj.id, connection.id]
    aws_id = None
    if stmt.aws_connection is not None:
        aws_id = binder.connection(stmt.aws_connection, "aws").id
        depends.append(aws_id)

    target = opts.check_options(stmt.target, opts.SINK_TARGET_OPTIONS, "Iceberg sink")
    for name in ("NAMESPACE", "TABLE"):
        if name not in target:
            raise PlanError(f"an Iceberg sink needs {name}: INTO ICEBERG CATALOG CONNECTION "
                            f"{stmt.connection} (NAMESPACE 'ns', TABLE 't')", stmt.connection.end)
    namespace = ".".join(_identifier_part(target["NAMESPACE"], "NAMESPACE"))
    table = _identifier_part(target["TABLE"], "TABLE")[0]
    _check_table_is_free(binder, connection, namespace, table, target["TABLE"].value.pos)

    if stmt.mode is None:
        raise PlanError("an Iceberg sink must specify MODE UPSERT or MODE APPEND", len(text))
    if stmt.mode not in ("upsert", "append"):
        raise PlanError(f"ENVELOPE {stmt.mode.upper()} is not supported by Iceberg sinks; use MODE UPSERT or "
                        "MODE APPEND", stmt.mode_pos)
    if stmt.mode == "upsert" and not stmt.key:
        raise PlanError("MODE UPSERT requires a KEY: add KEY (column, …) before the mode", stmt.mode_pos)
    if stmt.mode == "append" and stmt.key:
        raise PlanError(f"MODE APPEND does not take a KEY: every change is appended as a row with {MZ_DIFF} and "
                        f"{MZ_TIMESTAMP}", stmt.key[0].pos)
    if stmt.key:
        _check_key(stmt, input_obj, relation)
    if stmt.partition_by_clauses > 1:
        raise PlanError("PARTITION BY is given twice; give it once, before or after the mode",
                        stmt.partition_by[-1].column.pos)
    partition_spec = []
    if relation.columns is not None:
        columns = {c.name: c for c in relation.columns}
        if stmt.mode == "append":
            columns.update({c.name: c for c in APPEND_COLUMNS})
        partition_spec = [check_partition_field(f, columns) for f in stmt.partition_by]
        problem = misfit(stmt.mode, partition_spec, [c.name for c in relation.columns], input_obj.name)
        if problem is not None:
            message, field = problem
            raise PlanError(message, stmt.mode_pos if field is None else stmt.partition_by[field].transform.pos)
    else:
        partition_spec = [PartitionField(f.transform.value if f.transform else "identity", f.column.value, f.argument)
                          for f in stmt.partition_by]
    if len({(p.transform, p.column) for p in partition_spec}) != len(partition_spec):
        raise PlanError("PARTITION BY lists the same field twice", stmt.partition_by[-1].column.pos)

    if stmt.with_options is None:
        raise PlanError("an Iceberg sink must specify COMMIT INTERVAL: add WITH (COMMIT INTERVAL = '10s')",
                        len(text))
    with_options = opts.check_options(stmt.with_options, opts.SINK_WITH_OPTIONS, "sink")
    if "COMMIT INTERVAL" not in with_options:
        raise PlanError("an Iceberg sink must specify COMMIT INTERVAL: add WITH (COMMIT INTERVAL = '10s')",
                        len(text))
    descriptor = SinkDescriptor(
        input_obj.id, connection.id, namespace, table, stmt.mode, commit_interval_ms(with_options["COMMIT INTERVAL"]),
        tuple(k.value for k in stmt.key), stmt.key_enforced, relation.columns is not None, tuple(partition_spec),
        relation.columns, aws_id, write_mode(with_options, stmt.mode))
    descriptor = dataclasses.replace(descriptor, fold=fold_policy(with_options, FoldPolicy(),
                                                                  descriptor.writer == "merge-on-read"))
    notices = []
    if input_obj.kind == "materialized-view":
        view, notice = plan_view_input(binder, input_obj, descriptor.key, stmt.mode, stmt.input.pos)
        descriptor = dataclasses.replace(descriptor, view=view)
        notices += [notice] if notice else []
    return CreatePlan("sink", "iceberg", stmt.name.name, statement_sql(stmt), statement_sql(stmt, redacted=True),
                      descriptor, tuple(dict.fromkeys(depends)),
                      stmt.cluster.value if stmt.cluster else "default", connection.id, stmt.mode, notices=notices)


def alter_sink_input(binder: Binder, sink: CatalogObject, action: ast.SetFrom) -> tuple[SinkDescriptor, ast.CreateSink,
                                                                                     tuple[str, ...]]:
    """ALTER SINK … SET FROM: the sink's new descriptor and statement, and what it then depends on. As in
    Materialize, the new relation must have the sink's columns (names and types, in order), and its KEY must hold
    there as it did."""
    descriptor, statement = sink.descriptor, parse_statement(sink.create_sql)
    new, relation = _sink_input(binder, action.relation)
    if relation.columns is None:
        raise PlanError(f"the columns of '{new.name}' are not known yet: its source has not described them",
                        action.relation.pos)
    def shown(columns) -> str:
        return ", ".join(f"{c.name} {c.type}" for c in columns)
    if [(c.name, c.type) for c in relation.columns] != [(c.name, c.type) for c in descriptor.columns]:
        raise PlanError(f"'{new.name}' ({shown(relation.columns)}) does not have the columns of sink '{sink.name}' "
                        f"({shown(descriptor.columns)}): a sink switches only to a relation with the same column "
                        "names and types, in the same order", action.relation.pos)
    statement = dataclasses.replace(statement, input=action.relation)
    if statement.key:
        try:
            _check_key(statement, new, relation)
        except PlanError as exc:
            raise PlanError(exc.message, action.relation.pos) from None
    depends = (new.id, descriptor.connection_id) + ((descriptor.aws_connection_id,)
                                                    if descriptor.aws_connection_id else ())
    view = plan_view_input(binder, new, descriptor.key, descriptor.mode, action.relation.pos)[0] \
        if new.kind == "materialized-view" else None
    return (dataclasses.replace(descriptor, input_id=new.id, columns=relation.columns, view=view,
                                first_input_id=descriptor.unnamed_input_id), statement, depends)


def alter_sink_options(sink: CatalogObject, action) -> tuple[SinkDescriptor, ast.CreateSink]:
    """The sink's new descriptor, and its statement with the new options, from which its text is made again."""
    descriptor, statement = sink.descriptor, parse_statement(sink.create_sql)
    if isinstance(action, ast.ResetOptions):
        for option in action.names:
            if option.name == "COMMIT INTERVAL":
                raise PlanError("an Iceberg sink must have a COMMIT INTERVAL; change it with ALTER SINK … SET "
                                "(COMMIT INTERVAL = '…')", option.pos)
            if option.name not in opts.SINK_WITH_OPTIONS:
                raise PlanError(f"unknown sink option {option.name}; the options are: "
                                f"{', '.join(opts.SINK_WITH_OPTIONS)}", option.pos)
        given, removed, defaults = {}, {option.name for option in action.names}, FoldPolicy()
        if "WRITE MODE" in removed:
            descriptor = dataclasses.replace(descriptor, write_mode=DEFAULT_WRITE_MODE)
        descriptor = dataclasses.replace(descriptor, fold=dataclasses.replace(descriptor.fold, **{
            field: getattr(defaults, field) for name, field in FOLD_OPTIONS.items() if name in removed}))
    else:
        given, removed = opts.check_options(action.options, opts.SINK_WITH_OPTIONS, "sink"), set()
        if "COMMIT INTERVAL" in given:
            descriptor = dataclasses.replace(descriptor,
                                             commit_interval_ms=commit_interval_ms(given["COMMIT INTERVAL"]))
        if "WRITE MODE" in given:
            descriptor = dataclasses.replace(descriptor, write_mode=write_mode(given, descriptor.mode))
        descriptor = dataclasses.replace(descriptor, fold=fold_policy(given, descriptor.fold,
                                                                      descriptor.writer == "merge-on-read"))
    if descriptor.writer != "merge-on-read":  # a sink that no longer folds loses its FOLD options
        descriptor, removed = dataclasses.replace(descriptor, fold=FoldPolicy()), removed | set(FOLD_OPTIONS)
    kept = tuple(o for o in statement.with_options or () if o.name not in removed and o.name not in given)
    return descriptor, dataclasses.replace(statement, with_options=kept + tuple(given.values()))
