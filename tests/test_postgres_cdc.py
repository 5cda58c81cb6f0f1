"""Postgres sources end to end against a real PostgreSQL 15: the initial copy, then pgoutput changes (inserts,
updates, primary-key updates, deletes, unchanged TOASTed values, TRUNCATE) reach the Iceberg table, read back by
DuckDB and compared with what Postgres holds."""
from __future__ import annotations

import pytest

from tests.conftest import rows
from tests.readers import duckdb_rows
from tests.runtime import iceberg_table, wait_for
from tests.servers import Postgres

PASSWORD = "cdc-pw-31"


@pytest.fixture(scope="module")
def postgres():
    server = Postgres().start()
    with server.admin() as admin:
        admin.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{PASSWORD}'")
        admin.execute("CREATE DATABASE shop OWNER repl")
    yield server
    server.stop()


@pytest.fixture
def upstream(postgres):
    """A fresh set of tables per test, and the connection as the source's user sees it."""
    with postgres.admin("shop") as admin:
        admin.execute("DROP PUBLICATION IF EXISTS icesink; DROP TABLE IF EXISTS orders, notes")
        admin.execute("CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10,2) NOT NULL, note text);"
                      "ALTER TABLE orders ALTER COLUMN note SET STORAGE EXTERNAL;"  # TOASTed out of line, uncompressed
                      "CREATE TABLE notes (line text); ALTER TABLE notes REPLICA IDENTITY FULL;"
                      "GRANT SELECT ON orders, notes TO repl; CREATE PUBLICATION icesink FOR TABLE orders, notes")
    yield postgres
    with postgres.admin() as admin:
        admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active")


def upstream_rows(postgres, table="orders", columns="id, amount, note"):
    with postgres.admin("shop") as admin:
        return [tuple(r) for r in admin.execute(f"SELECT {columns} FROM {table} ORDER BY 1").fetchall()]


def iceberg_rows(session, sink, columns="id, amount, note"):
    try:
        location = iceberg_table(session, sink).metadata_location
    except Exception:
        return None
    return duckdb_rows(location, columns, "1")


def in_sync(session, postgres, sink="orders_lake", table="orders", columns="id, amount, note"):
    expected = upstream_rows(postgres, table, columns)
    wait_for(lambda: iceberg_rows(session, sink, columns) == expected, timeout=90,
             what=f"{sink} to hold what Postgres holds ({len(expected)} rows)")
    return expected


SETUP = """CREATE SECRET pg_pass AS '{password}';
CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {port}, DATABASE 'shop', USER 'repl', PASSWORD SECRET pg_pass);
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink') FOR ALL TABLES;
CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders')
  KEY (id) ENFORCED ENVELOPE UPSERT WITH (COMMIT INTERVAL '1s');
"""


def test_snapshot_then_every_kind_of_change(session, scheduler, upstream):
    big = "x" * 100_000
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n * 1.5, 'note ' || n FROM generate_series(1, 1000) n")
        admin.execute("UPDATE orders SET note = %s WHERE id = 7", (big,))
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    assert len(in_sync(session, upstream)) == 1000  # the initial copy

    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders VALUES (1001, 2.50, NULL), (1002, 3.00, 'b')")
        admin.execute("UPDATE orders SET amount = 99.99 WHERE id = 7")  # note stays TOASTed and unsent
        admin.execute("UPDATE orders SET id = 2000 WHERE id = 1")  # a changed primary key
        admin.execute("DELETE FROM orders WHERE id BETWEEN 10 AND 19")
        with admin.transaction():  # one upstream transaction, one commit
            admin.execute("UPDATE orders SET note = 'moved' WHERE id = 2")
            admin.execute("DELETE FROM orders WHERE id = 3")
    synced = in_sync(session, upstream)
    assert dict((r[0], r[2]) for r in synced)[7] == big  # never written as NULL
    assert 2000 in {r[0] for r in synced} and 1 not in {r[0] for r in synced}

    with upstream.admin("shop") as admin:
        admin.execute("TRUNCATE orders")
        admin.execute("INSERT INTO orders VALUES (5, 1.00, 'after truncate')")
    assert in_sync(session, upstream) == [(5, 1, "after truncate")]
    status = rows(session, "SELECT st.status FROM mz_sources s JOIN mz_internal.mz_source_statuses st "
                           "ON s.id = st.id WHERE s.name = 'shop'")
    assert status == [("running",)]


def test_a_table_without_a_key_replicates_with_replica_identity_full(session, scheduler, upstream):
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port).replace(
        "CREATE SINK orders_lake FROM orders", "CREATE SINK notes_lake FROM notes").replace(
        "KEY (id) ENFORCED ENVELOPE UPSERT", "MODE APPEND").replace("TABLE 'orders'", "TABLE 'notes'"))
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO notes VALUES ('a'), ('a'), ('b')")
        admin.execute("UPDATE notes SET line = 'c' WHERE line = 'b'")
        admin.execute("DELETE FROM notes WHERE ctid = (SELECT min(ctid) FROM notes WHERE line = 'a')")

    def net():  # MODE APPEND writes every change with its diff: the sum per value is what the table holds
        got = iceberg_rows(session, "notes_lake", "line, _mz_diff")
        if got is None:
            return None
        counts = {}
        for line, diff in got:
            counts[line] = counts.get(line, 0) + diff
        return sorted((k, v) for k, v in counts.items() if v)
    wait_for(lambda: net() == [("a", 1), ("c", 1)], timeout=90, what="the notes to replicate")
