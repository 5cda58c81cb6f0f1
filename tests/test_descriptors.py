"""Typed descriptors: each kind's JSON round trip, and catalogs written before descriptors existed (their definition
JSON had no format) still open, answer the system views and run their sinks."""
import dataclasses
import json
import shutil
import sqlite3
import tarfile
from pathlib import Path

import pytest

import icesink
from icesink.model import descriptors as d
from icesink.model.frontier import Frontier, Offset
from icesink.model.types import Column
from tests.conftest import CORPUS, rows
from tests.readers import duckdb_rows
from tests.runtime import caught_up, iceberg_table, wait_for

COLUMNS = (Column("id", "bigint", False), Column("note", "text"), Column("tags", "text[]"))
EXAMPLES = [
    ("secret", "secret", d.SecretDescriptor()),
    ("connection", "aws", d.ConnectionDescriptor("aws", d.AwsOptions(region="eu-west-1", assume_role_arn="arn:x"),
                                                 "icesink_abc", '{"Version": "2012-10-17"}')),
    ("connection", "iceberg-catalog", d.ConnectionDescriptor("iceberg-catalog", d.IcebergCatalogOptions(
        "rest", url="http://x", credential=d.SecretRef("u1", "id:"), aws_connection=d.ConnectionRef("u2")))),
    ("connection", "postgres", d.ConnectionDescriptor("postgres", d.PostgresOptions(
        host="db", port=5432, user="repl", password=d.SecretRef("u1")))),
    ("table", "table", d.TableDescriptor(COLUMNS, ("id",))),
    ("table", "table", d.TableDescriptor(None, (), "u4", "public.orders")),
    ("subsource", "subsource", d.SubsourceDescriptor("bids", COLUMNS, ("id",), "u5")),
    ("source", "load-generator", d.LoadGeneratorDescriptor("key value", d.GeneratorSettings(keys=10, batch_size=2),
                                                            COLUMNS, ("id",))),
    ("source", "postgres", d.PostgresSourceDescriptor("u3", "icesink", ("a.b",), (), "schemas", ("public",))),
    ("materialized-view", "materialized-view", d.ViewDescriptor("SELECT 1 AS one", (Column("one", "integer"),),
                                                                (("one",),))),
    ("sink", "iceberg", d.SinkDescriptor("u4", "u3", "shop.eu", "orders", "upsert", 10_000, ("id",), True, True,
                                         (d.PartitionField("bucket", "id", 4), d.PartitionField("day", "at")),
                                         COLUMNS, "u2", "merge-on-read")),
]


@pytest.mark.parametrize("kind, type_, descriptor", EXAMPLES, ids=[f"{k}-{t}" for k, t, _ in EXAMPLES])
def test_json_round_trip(kind, type_, descriptor):
    data = json.loads(json.dumps(descriptor.to_json()))
    assert data["format"] == d.FORMAT
    assert d.from_json(kind, type_, data) == descriptor


def test_a_newer_format_is_refused_by_name(data_dir):
    with icesink.connect(data_dir) as session:
        session.execute("CREATE TABLE t (a int)")
    db = sqlite3.connect(data_dir / "catalog.db")
    db.execute("UPDATE objects SET definition = json_set(definition, '$.format', 99)")
    db.commit()
    db.close()
    with icesink.connect(data_dir) as session:
        with pytest.raises(icesink.CatalogError, match=r"the definition of table 't' cannot be read \(definition "
                                                       r"format 99 is newer than this icesink's"):
            session.execute("SHOW COLUMNS FROM t")


def test_frontier_orders_and_round_trips():
    assert Offset(10).past(Offset(3)) and not Offset(3).past(Offset(3)) and Offset(3).joined(Offset(10)) == Offset(10)
    assert Frontier.from_json(Offset(42).to_json()) == Offset(42) and Offset(42).to_json() == {"offset": 42}
    assert Offset(3).advanced([{"offset": 9}, {"offset": 7}]) == Offset(9) and Offset(3).advanced([]) == Offset(3)
    with pytest.raises(ValueError, match="a frontier of kind 'kafka', which this icesink does not know"):
        Frontier.from_json({"kind": "kafka", "partitions": {}})


def test_a_catalog_written_before_descriptors_opens_and_reads_alike(data_dir):
    """tests/corpus/catalog_before_descriptors.json: the objects table as the release before descriptors wrote it."""
    saved = json.loads((CORPUS / "catalog_before_descriptors.json").read_text())
    icesink.connect(data_dir).close()
    db = sqlite3.connect(data_dir / "catalog.db")
    db.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", saved["objects"])
    db.executemany("INSERT INTO dependencies VALUES (?, ?)", saved["dependencies"])
    db.execute("UPDATE meta SET value = '100' WHERE key = 'next_id'")
    db.commit()
    db.close()
    with icesink.connect(data_dir) as session:
        for id_, _, name, kind, type_, *_, definition, _ in saved["objects"]:
            obj = session.catalog.get(name)
            assert obj.id == id_ and obj.kind == kind
            written, kept = json.loads(definition), obj.descriptor.to_json()
            for key, value in written.items():  # everything the old version wrote reads back the same
                assert kept.get(key) == value or (not value and not kept.get(key)), (name, key)
            assert all(not value for key, value in kept.items() if key not in written and key not in (
                "format", "sink_version", "write_mode", "fold")), name
            if kind == "sink":  # keys added since: their defaults
                assert (obj.descriptor.write_mode, obj.descriptor.fold) == ("copy-on-write", d.FoldPolicy())
        assert rows(session, "SELECT name, type FROM mz_connections ORDER BY name") == [
            ("aws", "aws"), ("aws_keys", "aws"), ("lake", "iceberg-catalog"), ("pg", "postgres"),
            ("rest", "iceberg-catalog")]
        assert rows(session, "SELECT id, namespace, \"table\" FROM mz_catalog.mz_iceberg_sinks ORDER BY id") == [
            ("u20", "shop", "orders"), ("u21", "gen", "counter")]
        assert session.catalog.get("orders_lake").descriptor.partition_by == (d.PartitionField("bucket", "id", 4),)
        assert session.catalog.get("rest").descriptor.options.credential == d.SecretRef("u1", "id:")
        session.execute("CREATE SINK more FROM per_customer INTO ICEBERG CATALOG CONNECTION lake "
                        "(NAMESPACE 'shop', TABLE 'per_customer') KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
        session.execute("ALTER SINK orders_lake SET (COMMIT INTERVAL = '2s')")
        assert session.catalog.get("orders_lake").descriptor.commit_interval_ms == 2000


def test_a_sink_written_by_the_release_before_descriptors_resumes(spark):
    """tests/corpus/catalog_v1.tar.gz: a data directory written by release d6589bd (tests/corpus/make_catalog_v1.py
    says how): catalog schema version 1, definitions without a format, a sink that committed (1, 'a'), (2, 'b1') and
    a deletion of 3 to the local Iceberg catalog, and (5, 'e') inserted after its scheduler stopped. Its local
    catalog keeps absolute paths, so it is extracted where it was written."""
    from icesink.engine.scheduler import Scheduler
    from icesink.catalog.schema import MIGRATIONS
    from icesink.engine.sink.progress import BATCH, FRONTIER, SINK_ID, SINK_VERSION

    data_dir = Path("/tmp/icesink-catalog-v1")
    shutil.rmtree(data_dir, ignore_errors=True)
    try:
        with tarfile.open(CORPUS / "catalog_v1.tar.gz") as tar:
            tar.extractall(data_dir, filter="data")
        db = sqlite3.connect(data_dir / "catalog.db")  # as the old release left it
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        assert not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sink_incarnations'").fetchall()
        assert db.execute("SELECT count(*) FROM objects WHERE json_type(definition, '$.format') IS NULL").fetchone() \
            == (3,)
        db.close()
        with icesink.connect(data_dir) as session:
            db = session.catalog.db  # migration 2 ran
            assert db.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),) and len(MIGRATIONS) >= 2
            assert db.execute("SELECT * FROM sink_incarnations").fetchall() == []
            assert rows(session, "SELECT name, type FROM mz_sinks") == [("orders_lake", "iceberg")]
            assert rows(session, "SELECT namespace, \"table\" FROM mz_iceberg_sinks") == [("shop", "orders")]
            assert rows(session, "SHOW COLUMNS FROM orders") == [("id", 0, "bigint"), ("note", 1, "text")]
            assert rows(session, "SELECT status FROM mz_internal.mz_sink_statuses") == [("paused",)]
            sink = session.catalog.get("orders_lake")
            old = iceberg_table(session, "orders_lake")
            old_snapshots = [s.snapshot_id for s in old.snapshots()]
            assert [s.summary.additional_properties[SINK_VERSION] for s in old.snapshots()] == ["1", "1"]
            assert duckdb_rows(old.metadata_location, "id, note", "id") == [(1, "a"), (2, "b1")]

            again = Scheduler(data_dir, session.executor.secret_value, lambda: spark)
            again.start()
            try:
                wait_for(caught_up(session, "orders_lake", "orders"), what="the sink to resume")  # adds (5, 'e')
                session.execute("INSERT INTO orders VALUES (3, 'c2'), (4, 'd'); UPDATE orders SET note = 'a2' "
                                "WHERE id = 1; UPDATE orders SET note = 'b2' WHERE id = 2; DELETE FROM orders "
                                "WHERE id = 5")
                wait_for(caught_up(session, "orders_lake", "orders"), what="the new changes")
            finally:
                again.stop()
            table = iceberg_table(session, "orders_lake")
            assert duckdb_rows(table.metadata_location, "id, note", "id") == [(1, "a2"), (2, "b2"), (3, "c2"),
                                                                              (4, "d")]
            assert [s.snapshot_id for s in table.snapshots()][:2] == old_snapshots  # on the old release's table
            new = [s.summary.additional_properties for s in table.snapshots()[2:]]
            assert new and all(props[SINK_ID] == sink.id for props in new)
            assert {props[SINK_VERSION] for props in new} == {"2"}  # above the old release's
            # the first new commit starts where the old release stopped, and adds (5, 'e') alone: nothing replayed
            old_frontier = old.current_snapshot().summary.additional_properties[FRONTIER]
            assert json.loads(new[0][BATCH])["lower"] == json.loads(old_frontier) and new[0]["added-records"] == "1"
            assert db.execute("SELECT version FROM sink_incarnations WHERE sink_id = ?", (sink.id,)).fetchall() == [
                (2,)]
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def test_each_connection_kind_keeps_the_options_its_descriptor_reads():
    from icesink.catalog_connections import CONNECTION_KINDS
    assert set(CONNECTION_KINDS) == set(d.CONNECTION_OPTIONS)
    for kind in CONNECTION_KINDS.values():
        assert kind.stored is d.CONNECTION_OPTIONS[kind.type]
        fields = {f.name for f in dataclasses.fields(kind.stored)}
        assert {name.lower().replace(" ", "_") for name in kind.options} == fields, kind.type
