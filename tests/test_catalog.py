"""The persistent catalog: system views, canonical queries, speed, ids, migrations, two processes."""
import json
import sqlite3
import subprocess
import time

import pytest

import icesink
from icesink.catalog.schema import MIGRATIONS
from tests.conftest import ICESINK, cli_env, rows

SETUP = """
CREATE SECRET pw AS 'hunter2';
CREATE CONNECTION aws TO AWS (ASSUME ROLE ARN = 'arn:aws:iam::123456789012:role/icesink', REGION = 'us-east-1');
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE = 'local');
CREATE TABLE orders (id bigint NOT NULL, customer text, PRIMARY KEY (id));
CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE = 'shop', TABLE = 'orders')
  KEY (id) MODE UPSERT WITH (COMMIT INTERVAL = '10s');
"""

# shared/reference/system-catalog.md: view -> columns it must have
VIEW_COLUMNS = {
    "mz_catalog.mz_sinks": ["id", "oid", "schema_id", "name", "type", "connection_id", "envelope_type", "cluster_id",
                            "owner_id", "create_sql", "redacted_create_sql"],
    "mz_catalog.mz_iceberg_sinks": ["id", "namespace", "table"],
    "mz_catalog.mz_sources": ["id", "oid", "schema_id", "name", "type", "connection_id", "envelope_type", "cluster_id",
                              "owner_id", "create_sql", "redacted_create_sql"],
    "mz_catalog.mz_connections": ["id", "oid", "schema_id", "name", "type", "owner_id", "create_sql", "redacted_create_sql"],
    "mz_catalog.mz_secrets": ["id", "oid", "schema_id", "name", "owner_id"],
    "mz_internal.mz_sink_statuses": ["id", "name", "type", "last_status_change_at", "status", "error", "details"],
    "mz_internal.mz_sink_status_history": ["occurred_at", "sink_id", "status", "error", "details", "replica_id"],
    "mz_internal.mz_sink_statistics": ["id", "replica_id", "messages_staged", "messages_committed", "bytes_staged",
                                       "bytes_committed", "snapshots_committed", "last_commit_at", "lag_ms"],
    "mz_internal.mz_aws_connections": ["id", "endpoint", "region", "access_key_id", "assume_role_arn",
                                       "assume_role_session_name", "principal", "external_id", "example_trust_policy"],
    "mz_internal.mz_source_statuses": ["id", "name", "type", "last_status_change_at", "status", "error", "details"],
    "mz_internal.mz_source_status_history": ["occurred_at", "source_id", "status", "error", "details", "replica_id"],
}

CANONICAL = [
    """SELECT s.name, st.status, st.error, st.details
FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id WHERE s.name = 'orders_lake';""",
    """SELECT h.occurred_at, h.status, h.error
FROM mz_internal.mz_sink_status_history h JOIN mz_sinks s ON s.id = h.sink_id
WHERE s.name = 'orders_lake' ORDER BY h.occurred_at;""",
    """SELECT messages_staged, messages_committed, bytes_staged, bytes_committed
FROM mz_internal.mz_sink_statistics WHERE id = (SELECT id FROM mz_sinks WHERE name = 'orders_lake');""",
    """SELECT id, namespace, "table" FROM mz_catalog.mz_iceberg_sinks
WHERE id = (SELECT id FROM mz_sinks WHERE name = 'orders_lake');""",
]


@pytest.fixture
def filled(session):
    session.execute(SETUP)
    return session


@pytest.mark.parametrize("view", VIEW_COLUMNS)
def test_system_view_columns(filled, view):
    result = filled.execute(f"SELECT * FROM {view}")[0]
    assert result.columns == VIEW_COLUMNS[view]


def test_canonical_queries_verbatim(filled):
    status, history, statistics, iceberg = (filled.execute(q)[0] for q in CANONICAL)
    assert status.rows == [("orders_lake", "created", None, None)]
    assert history.rows == []
    assert statistics.rows == [(0, 0, 0, 0)]
    assert iceberg.columns == ["id", "namespace", "table"] and iceberg.rows == [("u5", "shop", "orders")]


def test_status_history_shows_in_the_canonical_queries(filled):
    sink_id = filled.catalog.get("orders_lake").id
    filled.catalog.record_status(sink_id, "sink", "starting")
    filled.catalog.record_status(sink_id, "sink", "stalled", "warehouse not writable", {"hints": ["check permissions"]})
    status = filled.execute(CANONICAL[0])[0].rows[0]
    assert status[:3] == ("orders_lake", "stalled", "warehouse not writable")
    assert json.loads(status[3]) == {"hints": ["check permissions"]}
    assert [r[1] for r in filled.execute(CANONICAL[1])[0].rows] == ["starting", "stalled"]


def test_a_sink_dropped_while_it_starts_keeps_dropped_as_its_last_status(filled):
    sink_id = filled.catalog.get("orders_lake").id
    filled.catalog.record_status(sink_id, "sink", "starting")
    filled.execute("DROP SINK orders_lake")
    filled.catalog.record_status(sink_id, "sink", "running")  # the runner finishing its start
    assert filled.catalog.last_status(sink_id) == "dropped"
    history = rows(filled, f"SELECT status FROM mz_internal.mz_sink_status_history WHERE sink_id = '{sink_id}' "
                           "ORDER BY occurred_at")
    assert history == [("starting",), ("dropped",)]


def test_canonical_queries_answer_in_under_100_ms(filled):
    for query in CANONICAL:
        filled.execute(query)  # warm
        started = time.perf_counter()
        for _ in range(10):
            filled.execute(query)
        assert (time.perf_counter() - started) / 10 < 0.1


def test_ids_and_catalog_rows(filled):
    got = rows(filled, "SELECT id, name, type FROM mz_objects ORDER BY oid")
    assert got == [("u1", "pw", "secret"), ("u2", "aws", "connection"), ("u3", "lake", "connection"),
                   ("u4", "orders", "table"), ("u5", "orders_lake", "sink")]
    sink = rows(filled, "SELECT connection_id, envelope_type, type, cluster_id FROM mz_sinks")
    assert sink == [("u3", "upsert", "iceberg", "default")]
    aws = filled.execute("SELECT region, assume_role_arn, external_id, example_trust_policy FROM mz_internal.mz_aws_connections")[0].rows[0]
    assert aws[:2] == ("us-east-1", "arn:aws:iam::123456789012:role/icesink")
    policy = json.loads(aws[3])
    assert policy["Statement"][0]["Condition"]["StringEquals"]["sts:ExternalId"] == aws[2]
    # ids are never reused
    filled.execute("DROP SINK orders_lake; CREATE TABLE t2 (a int)")
    assert rows(filled, "SELECT id FROM mz_tables WHERE name = 't2'") == [("u6",)]


def test_select_supports_what_users_write(filled):
    got = rows(filled, "SELECT name FROM mz_objects WHERE name LIKE 'or%' AND type <> 'secret' ORDER BY name DESC LIMIT 1")
    assert got == [("orders_lake",)]
    got = rows(filled, "SELECT type, count(*) AS n FROM mz_connections GROUP BY type ORDER BY n DESC, type")
    assert got == [("aws", 1), ("iceberg-catalog", 1)]
    got = rows(filled, "SELECT id::text FROM mz_sinks WHERE name ILIKE 'ORDERS%'")
    assert got == [("u5",)]
    got = rows(filled, "SELECT 1 + 1 AS two")
    assert got == [(2,)]


def test_show_commands(filled):
    assert rows(filled, "SHOW SECRETS") == [("pw",)]
    assert rows(filled, "SHOW CONNECTIONS LIKE 'l%'") == [("lake", "iceberg-catalog")]
    assert rows(filled, "SHOW SINKS") == [("orders_lake", "iceberg", "default")]
    assert rows(filled, "SHOW TABLES") == [("orders",)]
    assert rows(filled, "SHOW COLUMNS FROM orders") == [("id", 0, "bigint"), ("customer", 1, "text")]
    assert filled.execute("SHOW CREATE SINK orders_lake")[0].columns == ["name", "create_sql"]


def test_schema_is_versioned(data_dir):
    with icesink.connect(data_dir):
        pass
    db = sqlite3.connect(data_dir / "catalog.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    db.commit()
    db.close()
    with pytest.raises(icesink.CatalogError, match="written by a newer icesink"):
        icesink.connect(data_dir)


def _start(data_dir):
    return subprocess.Popen(ICESINK + ["--data-dir", str(data_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=cli_env(), bufsize=1)


def _ask(process, statement):
    """Sends one statement and reads its answer, up to the row count or command tag."""
    process.stdin.write(statement + "\n")
    process.stdin.flush()
    lines = []
    while True:
        line = process.stdout.readline()
        assert line, process.stderr.read()
        lines.append(line.rstrip())
        if line.startswith("(") or line.strip().isupper():
            return lines


def test_two_processes_share_one_data_directory(data_dir):
    first, second = _start(data_dir), _start(data_dir)
    try:
        assert _ask(second, "SHOW CONNECTIONS;")[-1] == "(0 rows)"
        assert _ask(first, "CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE = 'local');") == ["CREATE CONNECTION"]
        listing = _ask(second, "SHOW CONNECTIONS;")
        assert any(line.split()[:2] == ["lake", "iceberg-catalog"] for line in listing) and listing[-1] == "(1 row)"
        assert _ask(second, "CREATE TABLE t (id int);") == ["CREATE TABLE"]
        assert _ask(first, "SELECT name FROM mz_objects ORDER BY id;")[-3:] == ["lake", "t", "(2 rows)"]
    finally:
        for process in (first, second):
            process.stdin.close()
            assert process.wait(timeout=30) == 0


def test_concurrent_writers_get_distinct_ids(data_dir):
    icesink.connect(data_dir).close()
    scripts = ["".join(f"CREATE TABLE {prefix}{i} (id int);\n" for i in range(40)) for prefix in ("a", "b")]
    processes = [subprocess.Popen(ICESINK + ["--data-dir", str(data_dir), "-c", script], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, env=cli_env()) for script in scripts]
    for process in processes:
        assert process.wait(timeout=60) == 0, process.stderr.read()
    with icesink.connect(data_dir) as session:
        ids = rows(session, "SELECT id FROM mz_tables")
        assert len(ids) == 80 and len(set(ids)) == 80
