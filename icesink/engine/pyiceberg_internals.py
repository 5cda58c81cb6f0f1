"""Every private pyiceberg API icesink relies on, in one place, for the pyiceberg release pyproject.toml pins
(0.12). tests/test_pyiceberg_internals.py checks each one against the installed pyiceberg, so an upgrade that
changes them fails there, loudly, rather than in a sink."""
from __future__ import annotations

import pickle
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io import load_file_io
from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files
from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntry,
                                ManifestEntryStatus, ManifestWriterV2)
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import ExpireSnapshots, _OverwriteFiles, _SnapshotProducer

PINNED_MINOR = (0, 12)


def table_context(table) -> tuple[str, dict, str]:
    """What an executor needs to write or read a table's files: its metadata as JSON, its IO properties, its
    location (a pyiceberg Table does not pickle)."""
    return table.metadata.model_dump_json(), dict(table.io.properties), table.metadata.location


def executor_context(metadata_json: str, io_properties: dict, location: str):
    """The metadata and FileIO of `table_context`, rebuilt on an executor."""
    return TableMetadataUtil.parse_raw(metadata_json), load_file_io(io_properties, location)


def shipped(data_file: DataFile) -> bytes:
    """A DataFile pickled to travel from an executor to the driver, with its spec id, which pickling drops (it is
    not one of the file's fields)."""
    return pickle.dumps((getattr(data_file, "_spec_id", None), data_file))


def received(payload: bytes) -> DataFile:
    """A DataFile from `shipped`, its spec id restored."""
    spec_id, data_file = pickle.loads(payload)
    if spec_id is not None:
        data_file.spec_id = spec_id
    return data_file


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


# The position delete file's columns, as the Iceberg spec reserves them
DELETE_FILE_PATH_ID, DELETE_POS_ID = 2147483546, 2147483545
POSITION_DELETE_SCHEMA = pa.schema([
    pa.field("file_path", pa.string(), nullable=False, metadata={b"PARQUET:field_id": str(DELETE_FILE_PATH_ID)}),
    pa.field("pos", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(DELETE_POS_ID)})])


def position_delete_file(path: str, rows: pa.Table, size: int, spec_id: int, partition) -> DataFile:
    """The DataFile of a position delete file written at `path` (`rows`: file_path and pos, sorted by both), for data
    files of one partition; the bounds of file_path let readers skip it for other data files."""
    from pyiceberg.conversions import to_bytes
    from pyiceberg.types import LongType, StringType

    paths, positions = rows["file_path"], rows["pos"]
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=path, file_format=FileFormat.PARQUET,
        partition=partition, file_size_in_bytes=size, record_count=rows.num_rows, spec_id=spec_id,
        value_counts={DELETE_FILE_PATH_ID: rows.num_rows, DELETE_POS_ID: rows.num_rows},
        null_value_counts={DELETE_FILE_PATH_ID: 0, DELETE_POS_ID: 0},
        lower_bounds={DELETE_FILE_PATH_ID: to_bytes(StringType(), paths[0].as_py()),
                      DELETE_POS_ID: to_bytes(LongType(), pc.min(positions).as_py())},
        upper_bounds={DELETE_FILE_PATH_ID: to_bytes(StringType(), paths[-1].as_py()),
                      DELETE_POS_ID: to_bytes(LongType(), pc.max(positions).as_py())},
        sort_order_id=None, equality_ids=None, key_metadata=None)
    delete_file.spec_id = spec_id  # not a field: from_args drops it, and so does pickling
    return delete_file


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg writes only data manifests; delete files go in a manifest of their own content."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _RowDelta(_Overwrite):
    """An overwrite that also adds position delete files (Java Iceberg's RowDelta, which pyiceberg lacks)."""

    def __init__(self, *args, delete_files: list, **kwargs):
        super().__init__(*args, **kwargs)
        self._added_delete_files = list(delete_files)

    def _manifests(self):
        return super()._manifests() + _delete_manifests(self, self._added_delete_files)

    def _summary(self, snapshot_properties=None):
        return _counting_deletes(self, super()._summary, snapshot_properties)


def _delete_manifests(producer, delete_files: list) -> list:
    """Manifests of the delete files a snapshot adds, one per spec."""
    by_spec: dict[int, list] = {}
    for delete_file in delete_files:
        by_spec.setdefault(delete_file.spec_id, []).append(delete_file)
    manifests = []
    for spec_id, files in by_spec.items():
        writer = _DeleteManifestWriter(producer.spec(spec_id), producer.schema(), producer.new_manifest_output(),
                                       producer._snapshot_id, producer._compression)
        with writer:
            for delete_file in files:
                writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=producer._snapshot_id,
                                                   data_file=delete_file))
        manifests.append(writer.to_manifest_file())
    return manifests


def _counting_deletes(producer, summary, snapshot_properties):
    """pyiceberg's summary, counting the added delete files too (it counts files by their content)."""
    added = producer._added_data_files
    producer._added_data_files = added + producer._added_delete_files
    try:
        return summary(snapshot_properties or {})
    finally:
        producer._added_data_files = added


def commit_files(table, removed: list, added: list, properties: dict[str, str], deletes: list = (),
                 expire: list[int] = ()) -> int:
    """One snapshot that removes `removed` and adds `added` DataFiles and `deletes` position delete files, with
    `properties` in its summary: an overwrite when it removes files or adds deletes, else a merging append. The
    same commit expires the snapshots `expire`. Returns the new snapshot's id."""
    with table.transaction() as tx:
        if deletes:
            producer = _RowDelta(operation=Operation.OVERWRITE, transaction=tx, io=table.io,
                                 snapshot_properties=properties, delete_files=deletes)
        elif removed:
            producer = _Overwrite(operation=Operation.OVERWRITE, transaction=tx, io=table.io,
                                  snapshot_properties=properties)
        else:
            producer = tx.update_snapshot(snapshot_properties=properties).merge_append()
        with producer:
            for data_file in removed:
                producer.delete_data_file(data_file)
            for data_file in added:
                producer.append_data_file(data_file)
        _expire(tx, expire)
    return table.current_snapshot().snapshot_id


def _expire(tx, snapshot_ids: list[int]) -> None:
    if snapshot_ids:
        with ExpireSnapshots(tx).by_ids(snapshot_ids):
            pass


class _Replace(_SnapshotProducer):
    """Rewritten files (the merge-on-read sink's folding): removes data files and the delete files that only they
    referenced, adds the data files holding their live rows, and writes every manifest again, one per content and
    spec (so the manifests each row-delta commit adds do not pile up)."""

    def __init__(self, transaction, io, removed: list, added: list, properties: dict[str, str], deletes: list = (),
                 operation=Operation.REPLACE):
        super().__init__(operation=operation, transaction=transaction, io=io, snapshot_properties=properties)
        self._kind = operation
        self._removed_paths = {f.file_path for f in removed}
        self._deleted_data_files = set(removed)  # what the summary counts as removed
        self._added_delete_files = list(deletes)
        for data_file in added:
            self.append_data_file(data_file)

    def _manifests(self):
        return super()._manifests() + _delete_manifests(self, self._added_delete_files)

    def _deleted_entries(self) -> list:
        return []  # written as DELETED entries of the manifests below

    def _summary(self, snapshot_properties=None):
        from pyiceberg.table.snapshots import Summary

        self._operation = Operation.OVERWRITE  # pyiceberg totals no other kind: the counts are an overwrite's
        try:
            summary = _counting_deletes(self, super()._summary, snapshot_properties)
        finally:
            self._operation = self._kind
        return Summary(self._kind, **summary.additional_properties)

    def _existing_manifests(self) -> list:
        snapshot = self._transaction.table_metadata.snapshot_by_name(self._target_branch)
        groups: dict[tuple, list] = {}
        for manifest in snapshot.manifests(self._io) if snapshot else ():
            for entry in manifest.fetch_manifest_entry(self._io, discard_deleted=True):
                groups.setdefault((manifest.content, manifest.partition_spec_id), []).append(entry)
        manifests = []
        for (content, spec_id), entries in groups.items():
            if content == ManifestContent.DELETES:
                writer = _DeleteManifestWriter(self.spec(spec_id), self.schema(), self.new_manifest_output(),
                                               self._snapshot_id, self._compression)
            else:
                writer = self.new_manifest_writer(self.spec(spec_id))
            with writer:
                for entry in entries:
                    if entry.data_file.file_path in self._removed_paths:
                        writer.delete(entry)
                    else:
                        writer.existing(entry)
            manifests.append(writer.to_manifest_file())
        return manifests


def replace_files(table, removed: list, added: list, properties: dict[str, str], deletes: list = (),
                  expire: list[int] = (), operation=Operation.REPLACE) -> int:
    """One 'replace' snapshot: `removed` data and delete files out, `added` data files and `deletes` delete files
    (the same rows, the same deletions) in; the same commit expires the snapshots `expire`. With
    Operation.OVERWRITE, the rows may differ (a sink that switched its input replaces them all)."""
    with table.transaction() as tx:
        with _Replace(tx, table.io, removed, added, properties, deletes, operation):
            pass
        _expire(tx, expire)
    return table.current_snapshot().snapshot_id


def every_file(table) -> list[DataFile]:
    """Every data and delete file of the current snapshot, whoever wrote it."""
    snapshot = table.current_snapshot()
    return [entry.data_file for manifest in (snapshot.manifests(table.io) if snapshot else ())
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)]


def live_files(table) -> tuple[list[tuple[DataFile, int]], dict[str, list[DataFile]]]:
    """The current snapshot's data files, each with its data sequence number (a newer file holds newer rows), and its
    position delete files that reference one data file each (as the merge-on-read writer writes them), by that
    file's path; one pass over the manifests."""
    from pyiceberg.conversions import from_bytes
    from pyiceberg.types import StringType

    snapshot = table.current_snapshot()
    data, deletes = [], {}
    for manifest in snapshot.manifests(table.io) if snapshot else ():
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
            if manifest.content == ManifestContent.DATA:
                data.append((entry.data_file, entry.sequence_number))
                continue
            low = (entry.data_file.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
            high = (entry.data_file.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
            if low is not None and low == high:  # another writer's, for several files: left as it is
                deletes.setdefault(from_bytes(StringType(), low), []).append(entry.data_file)
    return data, deletes
