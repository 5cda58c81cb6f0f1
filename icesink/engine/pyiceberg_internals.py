"""Every private pyiceberg API icesink relies on, in one place, for the pyiceberg release pyproject.toml pins
(0.12). tests/test_pyiceberg_internals.py checks each one against the installed pyiceberg, so an upgrade that
changes them fails there, loudly, rather than in a sink."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io import load_file_io
from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _OverwriteFiles

PINNED_MINOR = (0, 12)


def table_context(table) -> tuple[str, dict, str]:
    """What an executor needs to write or read a table's files: its metadata as JSON, its IO properties, its
    location (a pyiceberg Table does not pickle)."""
    return table.metadata.model_dump_json(), dict(table.io.properties), table.metadata.location


def executor_context(metadata_json: str, io_properties: dict, location: str):
    """The metadata and FileIO of `table_context`, rebuilt on an executor."""
    return TableMetadataUtil.parse_raw(metadata_json), load_file_io(io_properties, location)


def write_data_files(metadata, rows: pa.Table, io, write_uuid) -> Iterator:
    """DataFiles holding `rows` (already in the table's schema), written as the table's properties say."""
    return _dataframe_to_data_files(metadata, rows, io, write_uuid=write_uuid)


def scan(metadata, io) -> ArrowScan:
    """Reads FileScanTasks of the table into Arrow, deletes applied."""
    return ArrowScan(metadata, io, metadata.schema(), AlwaysTrue())


class _Overwrite(_OverwriteFiles):
    """pyiceberg 0.12's overwrite carries a manifest that holds only deleted entries into every later snapshot,
    so an upserting table's manifest list, and each commit's cost, grew with its age. Such manifests are
    dropped here, as Java Iceberg drops them."""

    def _existing_manifests(self):
        return [m for m in super()._existing_manifests() if m.has_added_files() or m.has_existing_files()]


def commit_files(table, removed: list, added: list, properties: dict[str, str]) -> int:
    """One snapshot that removes `removed` and adds `added` DataFiles, with `properties` in its summary: an
    overwrite when it removes files, else a merging append. Returns the new snapshot's id."""
    with table.transaction() as tx:
        if removed:
            producer = _Overwrite(operation=Operation.OVERWRITE, transaction=tx, io=table.io,
                                  snapshot_properties=properties)
        else:
            producer = tx.update_snapshot(snapshot_properties=properties).merge_append()
        with producer:
            for data_file in removed:
                producer.delete_data_file(data_file)
            for data_file in added:
                producer.append_data_file(data_file)
    return table.current_snapshot().snapshot_id
