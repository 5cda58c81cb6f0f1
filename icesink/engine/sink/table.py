"""Creating the sink's Iceberg table, or checking that an existing one fits."""
from __future__ import annotations

import itertools
import re

from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError, ResolveError, TableAlreadyExistsError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema, promote
from pyiceberg.transforms import (BucketTransform, DayTransform, HourTransform, IdentityTransform,
                                  MonthTransform, TruncateTransform, YearTransform)
from pyiceberg.types import NestedField

from ...model.descriptors import PartitionField as SinkPartition
from ...model.descriptors import SinkDescriptor
from ..columns import iceberg_type
from ..failures import NeedsAction
from .progress import latest_progress

# Keeps commits cheap as the table ages: old metadata files go, manifests are merged.
TABLE_PROPERTIES = {
    "format-version": "2",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "5",
    "commit.manifest-merge.enabled": "true",
    "commit.manifest.min-count-to-merge": "20",
}
# pyiceberg rebases and replays a commit that lost a race unless told not to; a replay could write a batch
# on top of progress it never checked (docs/commit-protocol.md, step 5), so the committer retries itself.
NO_LIBRARY_RETRIES = {"commit.retry.num-retries": "0"}


class IncompatibleTable(NeedsAction):
    """The existing Iceberg table cannot take the sink's rows; the message says what differs."""


def iceberg_schema(sink: SinkDescriptor) -> Schema:
    columns = sink.table_columns
    counter = itertools.count(len(columns) + 1)
    key = set(sink.key)
    fields = [NestedField(i + 1, c.name, iceberg_type(c.type, lambda: next(counter)), required=c.name in key)
              for i, c in enumerate(columns)]
    identifier_ids = [f.field_id for f in fields if f.name in key]
    return Schema(*fields, identifier_field_ids=identifier_ids)


_TRANSFORMS = {"identity": IdentityTransform, "year": YearTransform, "month": MonthTransform, "day": DayTransform,
               "hour": HourTransform, "bucket": BucketTransform, "truncate": TruncateTransform}


def _transform(entry: SinkPartition):
    cls = _TRANSFORMS[entry.transform]
    return cls(entry.argument) if entry.argument is not None else cls()


def partition_spec(sink: SinkDescriptor, schema: Schema) -> PartitionSpec:
    fields = []
    for i, entry in enumerate(sink.partition_by):
        source = schema.find_field(entry.column)
        fields.append(PartitionField(source.field_id, 1000 + i, _transform(entry), entry.name))
    return PartitionSpec(*fields)


def _differences(table, want: dict[str, str]):
    """The table's columns (name to type), then the sink's columns it lacks, those of another type, and its required
    columns the sink does not write."""
    have = _describe(table.schema())
    return (have, [n for n in want if n not in have], [n for n, t in want.items() if n in have and have[n] != t],
            [f.name for f in table.schema().fields if f.name not in want and f.required])


def _its_own(table, sink_id: str) -> bool:
    """Whether only this sink has written the table (or nothing has): then its schema is the sink's to evolve."""
    return table.current_snapshot() is None or latest_progress(table, sink_id) is not None


def _evolve(table, wanted: Schema, missing: list[str], different: list[str]):
    """Adds the columns the sink gained (optional: rows written before hold null) and widens the types Iceberg can
    promote; a type it cannot promote is left for the caller to report."""
    widened = [n for n in different if _promotes(table.schema().find_field(n).field_type,
                                                 wanted.find_field(n).field_type)]
    if missing or widened:
        with table.update_schema() as update:
            for name in missing:
                update.add_column(name, wanted.find_field(name).field_type)
            for name in widened:
                update.update_column(name, field_type=wanted.find_field(name).field_type)
    return table


def _promotes(old, new) -> bool:
    try:
        promote(old, new)
        return True
    except ResolveError:
        return False


def _describe(schema: Schema) -> dict[str, str]:
    return {f.name: str(f.field_type) for f in schema.fields}


def _check_partitioning(table, sink: SinkDescriptor) -> None:
    """An existing table must be partitioned as the sink's PARTITION BY says, as Materialize checks it: its files
    would otherwise be laid out one way by the sink and another by the table's spec."""
    spec, name = table.spec(), ".".join(sink.identifier)
    names = {f.field_id: f.name for f in table.schema().fields}
    have = [(names.get(f.source_id, f"<column {f.source_id}>"), str(f.transform)) for f in spec.fields]
    want = [(p.column, str(_transform(p))) for p in sink.partition_by]
    if have == want:
        return
    def shown(fields):
        def one(column, transform):
            sized = re.fullmatch(r"(\w+)\[(\d+)\]", transform)  # bucket[16]
            return (column if transform == "identity" else f"{sized[1]}({sized[2]}, {column})" if sized
                    else f"{transform}({column})")
        return ", ".join(one(*field) for field in fields)
    if not want:
        problem = f"is partitioned by ({shown(have)}) but sink has no PARTITION BY"
    elif not have:
        problem = f"is unpartitioned but sink specifies PARTITION BY ({shown(want)})"
    else:
        problem = (f"has a partition spec mismatch: the table is partitioned by ({shown(have)}), the sink by "
                   f"({shown(want)})")
    raise IncompatibleTable(f"the Iceberg table {name} {problem}: give the sink the table's PARTITION BY, or "
                            "another TABLE")


def ensure_table(catalog, sink: SinkDescriptor, sink_id: str):
    """The sink's table: created (with its namespace) when missing, checked when it exists, and evolved when the sink
    has gained columns or widened types since it wrote to it (its input's upstream changed)."""
    namespace, name = sink.namespace, sink.table
    wanted = iceberg_schema(sink)
    try:
        table = catalog.load_table(sink.identifier)
    except NoSuchTableError:
        try:
            catalog.create_namespace(sink.namespace_levels)
        except NamespaceAlreadyExistsError:
            pass
        try:
            return catalog.create_table(sink.identifier, schema=wanted, partition_spec=partition_spec(sink, wanted),
                                        properties={**TABLE_PROPERTIES, **NO_LIBRARY_RETRIES})
        except TableAlreadyExistsError:  # created concurrently: check it like any existing table
            table = catalog.load_table(sink.identifier)
    want = _describe(wanted)
    have, missing, different, extra = _differences(table, want)
    if (missing or different) and not extra and _its_own(table, sink_id):
        have, missing, different, extra = _differences(_evolve(table, wanted, missing, different), want)
    if missing or different or extra:
        parts = ([f"missing columns: {', '.join(f'{n} {want[n]}' for n in missing)}"] if missing else []) + [
            f"{n} is {have[n]}, the sink writes {want[n]}" for n in different] + (
            [f"required columns the sink does not write: {', '.join(extra)}"] if extra else [])
        raise IncompatibleTable(f"the Iceberg table {namespace}.{name} does not fit the sink: {'; '.join(parts)}")
    _check_partitioning(table, sink)
    if any(table.properties.get(k) != v for k, v in NO_LIBRARY_RETRIES.items()):
        with table.transaction() as tx:
            tx.set_properties(NO_LIBRARY_RETRIES)
    return table

