"""The private pyiceberg API icesink depends on, checked against the installed pyiceberg: an upgrade that changes
any of it fails here, with the name of what changed, before a sink meets it."""
import inspect
import uuid
from importlib import metadata as package_metadata

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files
from pyiceberg.table.update.snapshot import _OverwriteFiles

from icesink.engine import pyiceberg_internals as internals
from tests.readers import duckdb_rows


def test_pyiceberg_is_the_release_the_wrapper_was_written_for():
    installed = tuple(int(p) for p in package_metadata.version("pyiceberg").split(".")[:2])
    assert installed == internals.PINNED_MINOR, (
        f"pyiceberg {installed} is installed; pyiceberg_internals.py was checked against {internals.PINNED_MINOR}")


def test_the_private_signatures_are_the_ones_used():
    assert list(inspect.signature(_dataframe_to_data_files).parameters)[:4] == ["table_metadata", "df", "io",
                                                                                 "write_uuid"]
    assert {"operation", "transaction", "io", "snapshot_properties"} <= set(
        inspect.signature(_OverwriteFiles.__init__).parameters)
    assert callable(getattr(_OverwriteFiles, "_existing_manifests", None))
    assert list(inspect.signature(ArrowScan.__init__).parameters)[1:5] == ["table_metadata", "io", "projected_schema",
                                                                           "row_filter"]


@pytest.fixture
def table(tmp_path):
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path}")
    catalog.create_namespace("n")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    return catalog.create_table(("n", "t"), schema=schema)


def _files(table, ids):
    rows = pa.table({"id": pa.array(ids, pa.int64()), "v": [f"v{i}" for i in ids]},
                    schema=table.schema().as_arrow())
    metadata, io = internals.executor_context(*internals.table_context(table))
    return list(internals.write_data_files(metadata, rows, io, uuid.uuid4()))


def test_write_commit_and_read_back(table):
    first = _files(table, [1, 2, 3])
    internals.commit_files(table, [], first, {"icesink.test": "append"})
    table.refresh()
    assert table.current_snapshot().summary.additional_properties["icesink.test"] == "append"
    second = _files(table, [3, 4])
    live = [task.file for task in table.scan().plan_files()]  # files to remove come from a scan, as in the writers
    snapshot = internals.commit_files(table, live, second, {"icesink.test": "overwrite"})
    table.refresh()
    assert table.current_snapshot().snapshot_id == snapshot
    metadata, io = internals.executor_context(*internals.table_context(table))
    read = internals.scan(metadata, io).to_table(list(table.scan().plan_files()))
    assert sorted(read["id"].to_pylist()) == [3, 4]
    assert duckdb_rows(table.metadata_location, "id, v", "id") == [(3, "v3"), (4, "v4")]


def test_overwrites_do_not_carry_manifests_of_deleted_files_along(table):
    """The reason for the overwrite subclass: without it, 30 overwrites leave 30 manifests behind."""
    internals.commit_files(table, [], _files(table, [1]), {})
    for i in range(30):
        table.refresh()
        live = [task.file for task in table.scan().plan_files()]
        internals.commit_files(table, live, _files(table, [i + 2]), {})
    table.refresh()
    manifests = table.current_snapshot().manifests(table.io)
    assert len(manifests) <= 3, len(manifests)


def test_position_deletes_commit_and_read_back(table):
    """The row delta (pyiceberg writes no delete files): a position delete file in a delete manifest of its own,
    counted in the summary, applied by pyiceberg and DuckDB; live_files gives each data file its sequence number, and
    the delete files by the data file they reference."""
    import pyarrow.parquet as pq

    first = _files(table, [1, 2, 3])
    internals.commit_files(table, [], first, {})
    table.refresh()
    (data_file, sequence), = internals.live_files(table)[0]
    rows = pa.table({"file_path": [data_file.file_path], "pos": pa.array([1], pa.int64())},
                    schema=internals.POSITION_DELETE_SCHEMA)
    path = f"{table.metadata.location}/data/deletes-1.parquet"
    pq.write_table(rows, path.removeprefix("file://"))
    size = len(open(path.removeprefix("file://"), "rb").read())
    deletes = internals.position_delete_file(path, rows, size, 0, data_file.partition)
    internals.commit_files(table, [], _files(table, [2]), {"icesink.test": "delta"}, deletes=[deletes])
    table.refresh()
    summary = table.current_snapshot().summary
    assert (summary["added-position-deletes"], summary["added-delete-files"], summary["total-records"]) == ("1", "1", "4")
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert duckdb_rows(table.metadata_location, "id, v", "id") == [(1, "v1"), (2, "v2"), (3, "v3")]
    contents = sorted(m.content for m in table.current_snapshot().manifests(table.io))
    assert contents == [0, 0, 1]  # two data manifests, one delete manifest
    data, deletes = internals.live_files(table)
    assert sorted(s for _, s in data) == [sequence, sequence + 1]
    assert [(p, [d.file_path for d in files]) for p, files in deletes.items()] == [(data_file.file_path, [path])]
