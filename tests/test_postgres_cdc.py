"""Postgres sources end to end against a real PostgreSQL 15: the initial copy, then pgoutput changes (inserts,
updates, primary-key updates, deletes, unchanged TOASTed values, TRUNCATE) reach the Iceberg table, read back by
DuckDB and compared with what Postgres holds."""
from __future__ import annotations

import datetime
import os
import random
import signal
import subprocess
import threading
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from icesink.engine.ingest.pgoutput import lsn_int
from icesink.engine.sources.postgres import PostgresSubsourceInput
from icesink.model.frontier import Offset
from tests.conftest import ICESINK, cli_env, error_of, rows, serve, serve_until_killed
from tests.readers import duckdb_rows
from tests.runtime import iceberg_table, sink_status, wait_for
from tests.servers import Postgres

PASSWORD = "cdc-pw-31"
EXAMPLES = Path(__file__).parent.parent / "examples"
KILLS = 4
ADD_COLUMN_AT = 250  # transactions, after the TRUNCATE: rows written before it must take its default


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
        admin.execute("DROP PUBLICATION IF EXISTS icesink; DROP TABLE IF EXISTS orders, notes, events")
        admin.execute("CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10,2) NOT NULL, note text);"
                      "ALTER TABLE orders ALTER COLUMN note SET STORAGE EXTERNAL;"  # TOASTed out of line, uncompressed
                      "CREATE TABLE notes (line text); ALTER TABLE notes REPLICA IDENTITY FULL;"
                      "GRANT SELECT ON orders, notes TO repl; CREATE PUBLICATION icesink FOR TABLE orders, notes")
    yield postgres
    with postgres.admin() as admin:
        def dropped():  # the test's scheduler may still stream its slot: its reader is cut off first
            admin.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                          "WHERE active_pid IS NOT NULL")
            try:
                admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots")
            except Exception:  # let go of a moment later, or taken again by the scheduler's retry
                return False
            return not admin.execute("SELECT 1 FROM pg_replication_slots").fetchall()
        wait_for(dropped, timeout=30, what="the test's replication slots to be dropped")
        admin.execute(f"ALTER ROLE repl PASSWORD '{PASSWORD}'")  # a test may rotate it


def upstream_rows(postgres, table="orders", columns="id, amount, note"):
    with postgres.admin("shop") as admin:
        return [tuple(r) for r in admin.execute(f"SELECT {columns} FROM {table} ORDER BY 1").fetchall()]


def iceberg_rows(session, sink, columns="id, amount, note"):
    try:
        location = iceberg_table(session, sink).metadata_location
    except Exception:
        return None
    try:
        return duckdb_rows(location, columns, "1")
    except duckdb.BinderException:  # a column the table has yet to gain
        return None


def in_sync(session, postgres, sink="orders_lake", table="orders", columns="id, amount, note"):
    expected = upstream_rows(postgres, table, columns)
    try:
        wait_for(lambda: iceberg_rows(session, sink, columns) == expected, timeout=90,
                 what=f"{sink} to hold what Postgres holds ({len(expected)} rows)")
    except AssertionError as exc:
        got = set(iceberg_rows(session, sink, columns) or ())
        raise AssertionError(f"{exc}; only in Postgres: {sorted(set(expected) - got)[:5]}, only in Iceberg: "
                             f"{sorted(got - set(expected))[:5]}") from None
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
        admin.execute("UPDATE orders SET note = %s WHERE id IN (7, 8)", (big,))
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
        with admin.transaction():  # a key's changes within one batch are folded: each must keep its meaning
            admin.execute("INSERT INTO orders VALUES (3000, 1.00, %s), (4000, 1.00, 'gone')", (big + "y",))
            admin.execute("UPDATE orders SET amount = 2.00 WHERE id = 3000")  # its note unsent, its row not stored
            admin.execute("UPDATE orders SET id = 3001 WHERE id = 8")  # a stored row moves, its note unsent
            admin.execute("DELETE FROM orders WHERE id IN (4000, 5)")
            admin.execute("UPDATE orders SET id = 5 WHERE id = 3001")  # and again, onto a key deleted before
    synced = in_sync(session, upstream)
    notes = dict((r[0], r[2]) for r in synced)
    assert notes[7] == big and notes[5] == big and notes[3000] == big + "y"  # never written as NULL
    assert 2000 in {r[0] for r in synced} and 1 not in {r[0] for r in synced}

    with upstream.admin("shop") as admin:
        admin.execute("TRUNCATE orders")
        admin.execute("INSERT INTO orders VALUES (5, 1.00, 'after truncate')")
    assert in_sync(session, upstream) == [(5, 1, "after truncate")]
    with upstream.admin() as admin:
        wal = lsn_int(admin.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])

    def statistics():
        got = rows(session, "SELECT snapshot_records_known, snapshot_records_staged, messages_received, "
                            "offset_known, offset_committed FROM mz_internal.mz_source_statistics st JOIN mz_sources s "
                            "ON s.id = st.id WHERE s.name = 'shop'")[0]
        return got if got[3] >= wal and got[4] >= wal else None
    known, staged, received, _, _ = wait_for(statistics, timeout=30, what="the source's statistics")
    assert known == staged == 1000 and received > 10
    status = rows(session, "SELECT st.status FROM mz_sources s JOIN mz_internal.mz_source_statuses st "
                           "ON s.id = st.id WHERE s.name = 'shop'")
    assert status == [("running",)]


def test_committed_segments_are_deleted_and_a_later_sink_starts_from_the_replicated_rows(session, scheduler,
                                                                                          upstream):
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'note ' || n FROM generate_series(1, 300) n")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    in_sync(session, upstream)
    with upstream.admin("shop") as admin:
        for batch in range(20):
            admin.execute("UPDATE orders SET amount = amount + 1 WHERE id %% 20 = %s", (batch,))
            admin.execute("DELETE FROM orders WHERE id = %s", (batch * 7 + 1,))
            time.sleep(0.1)
    in_sync(session, upstream)
    orders_id = rows(session, "SELECT id FROM mz_objects WHERE name = 'orders'")[0][0]
    segments_dir = session.data_dir / "segments" / orders_id
    wait_for(lambda: not list(segments_dir.glob("*.parquet")), timeout=30,
             what="the segments the sink committed to be deleted")
    with upstream.admin("shop") as admin:
        admin.execute("UPDATE orders SET amount = amount + 1 WHERE id = 2")
    in_sync(session, upstream)
    snapshots = session.data_dir / "snapshots" / orders_id
    assert not list(snapshots.glob("*.parquet"))  # the sink reading from the start follows the log past the prune

    session.execute("CREATE SINK orders_late FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                    "TABLE 'orders_late') KEY (id) ENFORCED ENVELOPE UPSERT WITH (COMMIT INTERVAL '1s')")
    late = in_sync(session, upstream, sink="orders_late")  # from a snapshot: the old changes are gone
    assert len(late) == 280 and (2, 4, "note 2") in late
    assert len(list(snapshots.glob("*.parquet"))) == 1
    with upstream.admin("shop") as admin:
        admin.execute("UPDATE orders SET note = 'later' WHERE id < 50")
        admin.execute("DELETE FROM orders WHERE id > 250")
    assert in_sync(session, upstream, sink="orders_late") == in_sync(session, upstream)


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


TYPES = """
DROP TABLE IF EXISTS typed; DROP TYPE IF EXISTS mood; DROP DOMAIN IF EXISTS positive;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
CREATE TABLE typed (id int PRIMARY KEY, i2 smallint, i8 bigint, n numeric(12,3), nu numeric, r real,
  d double precision, t text, vc varchar(10), ch char(4), b boolean, bin bytea, dt date, tm time, tz timetz,
  ts timestamp, tstz timestamptz, iv interval, u uuid, js json, jb jsonb, m mood, dom positive, arr int[],
  tarr text[]);
INSERT INTO typed VALUES
  (1, -32768, 9223372036854775807, -123456789.125, 3.14159265358979, 1.5, 0.30000000000000004, 'héllo ✓', 'abc', 'ab',
   true, '\\x00ff10', '2024-02-29', '23:59:59.123456', '10:00:00+02', '2024-01-05 10:00:00.5',
   '2024-01-05 10:00:00+02', '1 year 2 mons 3 days 04:05:06', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
   '{"b": 1,  "a": [1, 2]}', '{"b": 1, "a": [1, 2]}', 'happy', 7, '{1,NULL,3}', '{"a b",NULL,"c,d"}'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL),
  (4, 0, 0, 0, 0, 0.25, 0.5, '\t\\N', E'l1\nl2"q,', '', false, '', '2000-01-01', '00:00', '00:00+00', '2000-01-01',
   '2000-01-01 00:00:00+00', '0 days', '00000000-0000-0000-0000-000000000000', '"a\\"b\\tc"', '""', 'sad', 1, '{}',
   '{""}');
GRANT SELECT ON typed TO repl; ALTER PUBLICATION icesink ADD TABLE typed;
"""
COLUMNS = ("id, i2, i8, n, nu, r, d, t, vc, ch, b, bin, dt, tm, tz, ts, tstz, iv, u, js, jb, m, dom, arr, tarr")


def test_every_type_reads_back_as_postgres_holds_it(session, scheduler, upstream):
    """The copy and the change stream both: row 1 is copied, row 3 (the same values) arrives as a change; row 2
    (NULLs) and row 4 (empty strings, a tab, a newline, a quote, backslashes, zeros) are copied."""
    with upstream.admin("shop") as admin:
        admin.execute(TYPES)
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port).replace(
        "CREATE SINK orders_lake FROM orders", "CREATE SINK typed_lake FROM typed").replace(
        "TABLE 'orders'", "TABLE 'typed'"))
    wait_for(lambda: source_status(session)[0] == "running", timeout=60, what="the source to run")  # copy done
    with upstream.admin("shop") as admin:
        admin.execute(f"INSERT INTO typed SELECT 3, {COLUMNS.split(', ', 1)[1]} FROM typed WHERE id = 1")
        admin.execute("SET TimeZone = 'UTC'")
        # char(n) as stored, padded (a cast to text would trim it); unbounded numeric as written: 10 decimals
        shown = {"ch": "ch", "nu": "round(nu, 10)::text"}
        expected = [tuple(r) for r in admin.execute(
            f"SELECT {', '.join(shown.get(c, c + '::text') for c in COLUMNS.split(', '))} FROM typed "
            "ORDER BY id").fetchall()]
    wait_for(lambda: (iceberg_rows(session, "typed_lake", "id") or []) == [(1,), (2,), (3,), (4,)], timeout=90,
             what="the typed rows")
    got = iceberg_rows(session, "typed_lake", COLUMNS)
    assert [as_postgres_text(row) for row in got] == expected


def test_real_messages_of_every_type_fold_alike_a_column_and_a_message_at_a_time(upstream):
    """Postgres's own pgoutput messages for every type (copies of the typed rows, a key moved by an update, an
    update, a deletion), peeked from a slot: the batch folded a column at a time (columnar.py) holds exactly the
    values the message-at-a-time path (pgoutput.Decoder, Subsource.stage) gives."""
    import struct
    import types

    from icesink.engine.ingest import columnar
    from icesink.engine.ingest.pgoutput import Decoder
    from icesink.engine.ingest.schema import UpstreamTypes, relation_types
    from icesink.engine.ingest.stream import Taken
    from icesink.engine.ingest.subsource import GONE, Subsource
    from icesink.model.types import Column

    with upstream.admin("shop") as admin:
        admin.execute(TYPES)
        admin.execute("SELECT pg_create_logical_replication_slot('probe', 'pgoutput')")
        admin.execute("SET synchronous_commit = on")  # a peek decodes the WAL flushed so far
        others = COLUMNS.split(", ", 1)[1]
        for target, source in ((3, 1), (5, 4), (6, 2), (8, 1)):
            admin.execute(f"INSERT INTO typed SELECT {target}, {others} FROM typed WHERE id = {source}")
        admin.execute("UPDATE typed SET id = 7 WHERE id = 3")
        admin.execute("UPDATE typed SET t = 'changed', arr = '{4}' WHERE id = 1")
        admin.execute("DELETE FROM typed WHERE id IN (2, 8)")
        admin.execute("SET TimeZone = 'UTC'; SET DateStyle = 'ISO'; SET IntervalStyle = 'postgres'")
        messages = [bytes(m) for (m,) in admin.execute(
            "SELECT data FROM pg_logical_slot_peek_binary_changes('probe', NULL, NULL, 'proto_version', '1', "
            "'publication_names', 'icesink')")]
        admin.execute("SELECT pg_drop_replication_slot('probe')")
        commits = [i + 1 for i, m in enumerate(messages) if m[:1] == b"C"]
        taken = Taken.of(messages, commits, [struct.unpack_from(">q", messages[i - 1], 10)[0] for i in commits])
        decoder = Decoder()
        transactions = taken.decode(decoder)
        relation = next(r for r in decoder.relations.values() if r.name == "typed")
        typed = relation_types(relation, UpstreamTypes(admin))
    columns = tuple(Column(name, typed[name], name != "id") for name in relation.columns)
    sub = Subsource(types.SimpleNamespace(id="typed", descriptor=types.SimpleNamespace(columns=columns,
                                                                                        primary_key=("id",))))
    sub.bind(relation, {})
    for transaction in transactions:
        for change in transaction.changes:
            sub.stage(None, change)
    expected_gone = sorted(k for k, v in sub.pending.items() if v is GONE)
    expected_rows = [tuple(sub.pending[k]) for k in sorted(k for k, v in sub.pending.items() if v is not GONE)]
    folded = columnar.fold(taken, decoder, {"public.typed": sub}, 0)["public.typed"]
    assert expected_gone == [(2,), (3,), (8,)] and [row[0] for row in expected_rows] == [1, 5, 6, 7]
    assert folded.deleted == expected_gone
    assert folded.rows == expected_rows


def as_postgres_text(row) -> tuple:
    """What psql would print for each value DuckDB read (timestamps in UTC)."""
    import datetime as dt
    from decimal import Decimal

    def text(value):
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, bytes):
            return "\\x" + value.hex()
        if isinstance(value, dt.datetime):
            shown = value.strftime("%Y-%m-%d %H:%M:%S") + (f".{value.microsecond:06d}".rstrip("0")
                                                            if value.microsecond else "")
            return shown + ("+00" if value.tzinfo is not None else "")
        if isinstance(value, list):
            return "{" + ",".join("NULL" if v is None else _array_element(text(v)) for v in value) + "}"
        if isinstance(value, Decimal):
            return format(value, "f")
        return str(value)
    return tuple(text(v) for v in row)


def _array_element(value: str) -> str:
    if value == "" or value.upper() == "NULL" or any(c in value for c in ' ,{}"\\'):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def source_status(session, name="shop"):
    found = rows(session, "SELECT st.status, st.error FROM mz_sources s JOIN mz_internal.mz_source_statuses st "
                          f"ON s.id = st.id WHERE s.name = '{name}'")
    return found[0] if found else (None, None)


def test_a_copied_value_icesink_cannot_replicate_stalls_the_source_until_it_is_fixed_upstream(
        session, scheduler, upstream):
    with upstream.admin("shop") as admin:
        admin.execute("CREATE TABLE events (id int PRIMARY KEY, happened date); GRANT SELECT ON events TO repl;"
                      "ALTER PUBLICATION icesink ADD TABLE events;"
                      "INSERT INTO events VALUES (1, '2024-01-05'), (2, 'infinity')")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port) +
                    "CREATE SINK events_lake FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                    "TABLE 'events') KEY (id) ENFORCED ENVELOPE UPSERT WITH (COMMIT INTERVAL '1s')")
    status, error = wait_for(lambda: source_status(session)[0] == "stalled" and source_status(session), timeout=60,
                             what="the source to stall")
    assert error == ("source 'shop': the copy of public.events: column \"happened\" holds a value icesink cannot "
                     "replicate: date 'infinity' cannot be written to Iceberg, which has no infinite dates"), error
    with upstream.admin("shop") as admin:
        admin.execute("UPDATE events SET happened = '2024-01-06' WHERE id = 2")
    assert in_sync(session, upstream, sink="events_lake", table="events", columns="id, happened") == [
        (1, datetime.date(2024, 1, 5)), (2, datetime.date(2024, 1, 6))]
    assert source_status(session)[0] == "running"


def slot_readers() -> list[int]:
    """The processes streaming a slot (engine/ingest/slot_reader.py)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"icesink.engine.ingest.slot_reader" in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:  # ended meanwhile
            pass
    return found


def test_the_source_streams_its_slot_and_survives_its_reader_killed_and_postgres_restarting(
        session, scheduler, upstream):
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'before' FROM generate_series(1, 100) n")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    in_sync(session, upstream)
    with upstream.admin() as admin:
        streaming = admin.execute("SELECT application_name, state FROM pg_stat_replication").fetchall()
        assert streaming == [("icesink", "streaming")], streaming
        wal = lsn_int(admin.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])

        def confirmed():  # the upstream keeps no WAL for what icesink holds
            found = admin.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots").fetchone()[0]
            return lsn_int(found) >= wal
        wait_for(confirmed, timeout=30, what="the slot to confirm what the store holds")

    readers = slot_readers()
    assert len(readers) == 1, readers
    os.kill(readers[0], signal.SIGKILL)
    with upstream.admin("shop") as admin:
        admin.execute("UPDATE orders SET note = 'after the reader was killed' WHERE id % 2 = 0")
        admin.execute("DELETE FROM orders WHERE id % 5 = 0")
    assert len(in_sync(session, upstream)) == 80
    wait_for(lambda: source_status(session) == ("running", None), timeout=60, what="the source to run again")

    upstream.halt()
    try:
        status, error = wait_for(lambda: source_status(session)[0] == "stalled" and source_status(session),
                                 timeout=60, what="the source to stall")
        assert error.startswith("Postgres connection 'pg': ") and f"127.0.0.1:{upstream.port}" in error, error
        status, error = wait_for(lambda: sink_status(session, "orders_lake")[0] == "stalled" and sink_status(session, "orders_lake"),
                                 timeout=30, what="the sink to stall")
        assert error.startswith("source 'shop' is stalled: Postgres connection 'pg': "), error
    finally:
        upstream.resume()
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'after' FROM generate_series(101, 200) n")
        admin.execute("UPDATE orders SET note = 'changed' WHERE id <= 50")
    assert len(in_sync(session, upstream)) == 180
    wait_for(lambda: source_status(session) == ("running", None), timeout=60, what="the source to run again")
    wait_for(lambda: sink_status(session, "orders_lake") == ("running", None), timeout=30, what="the sink to run again")


def test_wrong_credentials_or_a_missing_publication_at_run_time_stall_the_source_with_the_cause(
        session, scheduler, upstream):
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    in_sync(session, upstream)
    with upstream.admin() as admin:
        admin.execute("ALTER ROLE repl PASSWORD 'rotated-pw'")
    upstream.halt()  # the source connects again, with the old password
    upstream.resume()
    _, error = wait_for(lambda: "refused the login" in (source_status(session)[1] or "") and source_status(session),
                        timeout=60, what="the login to be refused")
    assert error.startswith("Postgres connection 'pg': the server refused the login of user 'repl'"), error
    assert source_status(session)[0] == "stalled"
    session.execute("ALTER SECRET pg_pass AS 'rotated-pw'")
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders VALUES (1, 1, 'after the new password')")
    in_sync(session, upstream)
    wait_for(lambda: source_status(session) == ("running", None), timeout=60, what="the source to run again")

    with upstream.admin("shop") as admin:
        admin.execute("DROP PUBLICATION icesink")
        admin.execute("INSERT INTO orders VALUES (2, 2, 'unpublished')")
    status, error = wait_for(lambda: source_status(session)[0] == "stalled" and source_status(session), timeout=60,
                             what="the source to stall")
    assert error.startswith("Postgres connection 'pg': publication 'icesink' does not exist upstream, or did not "
                            "when the next change was made"), error
    assert "CREATE PUBLICATION icesink" in error and "recreate the source" in error


def test_dropping_a_source_during_its_copy_abandons_it_and_leaves_no_slot_upstream(session, scheduler, upstream):
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'n' FROM generate_series(1, 3000000) n")  # a copy of 15 s+
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))

    def copying():
        found = rows(session, "SELECT snapshot_records_staged, snapshot_records_known FROM "
                              "mz_internal.mz_source_statistics st JOIN mz_sources s ON s.id = st.id "
                              "WHERE s.name = 'shop'")
        return found and 0 < found[0][0] < found[0][1]
    wait_for(copying, timeout=60, what="the copy to be under way")
    started = time.time()
    result = session.execute("DROP SOURCE shop CASCADE")[-1]
    assert time.time() - started < 8  # the copy is abandoned, not waited for
    assert not [n for n in result.notices if "slot" in n], result.notices
    with upstream.admin() as admin:
        assert admin.execute("SELECT slot_name FROM pg_replication_slots").fetchall() == []


def test_a_slot_dropped_upstream_fails_the_source_with_what_to_do(session, scheduler, upstream):
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    wait_for(lambda: source_status(session)[0] == "running", timeout=60, what="the source to run")
    slot = rows(session, "SELECT id FROM mz_sources WHERE name = 'shop'")[0][0]
    with upstream.admin() as admin:
        def dropped():  # as a user drops a slot in use: its reader is cut off first
            try:
                admin.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                              "WHERE slot_name LIKE %s AND active_pid IS NOT NULL", (f"%\\_{slot}",))
                admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                              "WHERE slot_name LIKE %s", (f"%\\_{slot}",))
                return True
            except Exception:  # still held by the stream that was cut off, or by its next start
                return False
        wait_for(dropped, timeout=30, what="the slot to be dropped")
    status, error = wait_for(lambda: source_status(session)[0] == "failed" and source_status(session),
                             timeout=60, what="the source to fail")
    assert "replication slot" in error and "recreate the source" in error, error


def test_an_added_column_and_a_widened_type_reach_the_iceberg_table(session, scheduler, upstream):
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'before' FROM generate_series(1, 50) n")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    in_sync(session, upstream)
    with upstream.admin("shop") as admin:
        admin.execute("ALTER TABLE orders ADD COLUMN tag text DEFAULT 'old, \"quoted\"'")  # rows before hold it
        admin.execute("ALTER TABLE orders ADD COLUMN qty smallint")
        admin.execute("ALTER TABLE orders ALTER COLUMN amount TYPE numeric(14,2)")
        admin.execute("INSERT INTO orders VALUES (51, 123456789012.34, 'after', 'new', 7)")
        admin.execute("UPDATE orders SET tag = NULL, qty = 2 WHERE id = 1")
    columns = "id, amount, note, tag, qty"
    synced = in_sync(session, upstream, columns=columns)
    assert synced[1] == (2, 2, "before", 'old, "quoted"', None) and synced[-1][1] == Decimal("123456789012.34")
    with upstream.admin("shop") as admin:
        admin.execute("ALTER TABLE orders ALTER COLUMN qty TYPE bigint")
        admin.execute("UPDATE orders SET qty = 9000000000 WHERE id = 2")
    in_sync(session, upstream, columns=columns)
    assert rows(session, "SHOW COLUMNS FROM orders")[-2:] == [("tag", 1, "text"), ("qty", 1, "bigint")]
    schema = iceberg_table(session, "orders_lake").schema()
    assert [(f.name, str(f.field_type)) for f in schema.fields] == [
        ("id", "long"), ("amount", "decimal(14, 2)"), ("note", "string"), ("tag", "string"), ("qty", "long")]
    assert source_status(session) == ("running", None)


def test_a_change_iceberg_cannot_follow_stalls_the_source_with_what_to_do(session, scheduler, upstream):
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    in_sync(session, upstream)
    with upstream.admin("shop") as admin:
        admin.execute("ALTER TABLE orders DROP COLUMN note")
        admin.execute("INSERT INTO orders VALUES (1, 1)")
    status, error = wait_for(lambda: source_status(session)[0] == "stalled" and source_status(session),
                             timeout=60, what="the source to stall")
    assert error == ("upstream table public.orders dropped column note, which its subsource replicates: recreate "
                     "the source (DROP SOURCE … CASCADE, then CREATE SOURCE) to replicate the table as it is now")
    assert wait_for(lambda: sink_status(session, "orders_lake")[0] == "stalled" and sink_status(session, "orders_lake"), timeout=30,
                    what="the sink to stall") == ("stalled", f"source 'shop' is stalled: {error}")
    session.execute("DROP SOURCE shop CASCADE")  # what the message says to do
    session.execute(SETUP.split(";", 3)[3].replace("TABLE 'orders'", "TABLE 'orders_now'"))
    assert in_sync(session, upstream, columns="id, amount") == [(1, 1)]

    with upstream.admin("shop") as admin:  # deletions would name rows by amount, which the copy cannot match
        admin.execute("CREATE UNIQUE INDEX orders_amount ON orders (amount);"
                      "ALTER TABLE orders REPLICA IDENTITY USING INDEX orders_amount")
        admin.execute("DELETE FROM orders WHERE id = 1")
    status, error = wait_for(lambda: source_status(session)[0] == "stalled" and source_status(session),
                             timeout=60, what="the source to stall")
    assert error == ("upstream table public.orders now identifies its updated and deleted rows by an index that does "
                     "not hold its primary key, so icesink cannot match them: ALTER TABLE public.orders REPLICA "
                     "IDENTITY DEFAULT (or FULL), then recreate the source (DROP SOURCE … CASCADE, then CREATE SOURCE)")


def test_a_large_tables_ranges_are_copied_by_the_replication_and_sparks_tasks_once_each(session, scheduler,
                                                                                        upstream, monkeypatch):
    monkeypatch.setattr("icesink.engine.ingest.postgres.PARALLEL_PAGES", 1)
    monkeypatch.setattr("icesink.engine.ingest.postgres.PAGES_PER_RANGE", 1)
    monkeypatch.setattr("icesink.engine.ingest.postgres.PRUNE_SECONDS", 3600)  # the log kept from 0, as below
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'row ' || n FROM generate_series(1, 5000) n")
        pages = admin.execute("SELECT pg_relation_size('orders') / 8192").fetchone()[0]
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    assert len(in_sync(session, upstream)) == 5000
    table_id = rows(session, "SELECT id FROM mz_sources WHERE name = 'orders'")[0][0]
    assert len(list((session.data_dir / "bases" / table_id).iterdir())) == pages  # a file per range, nothing else
    # the copy's keys cut a sink's first batch into ranges, read from its files without the batch
    copy = PostgresSubsourceInput(session.catalog, session.catalog.get_by_id(table_id), None)
    try:
        base = copy.log.base(table_id)
        assert sorted(copy.key_sample(Offset(base.after), "id")) == list(range(1, 5001))  # 5,000 keys: each
        assert copy.key_sample(Offset(base.upto), "id") is None  # a batch after the copy
        assert copy.key_sample(Offset(base.after), "amount") is None  # numeric: not compared as Python values
    finally:
        copy.close()
    assert rows(session, "SELECT snapshot_records_staged, snapshot_records_known FROM mz_internal."
                         "mz_source_statistics st JOIN mz_sources s ON s.id = st.id WHERE s.name = 'shop'") == [
        (5000, 5000)]


def test_a_table_created_from_the_running_source_is_copied_then_replicated(session, scheduler, upstream,
                                                                         monkeypatch):
    # copied by Spark's executors in ctid ranges, as a large table is, while the writer below changes it (the
    # replication's own thread, which copies ranges until Spark's tasks begin, is kept out of it here)
    monkeypatch.setattr("icesink.engine.ingest.postgres.PARALLEL_PAGES", 1)
    monkeypatch.setattr("icesink.engine.ingest.postgres.PAGES_PER_RANGE", 4)
    monkeypatch.setattr("icesink.engine.ingest.parallel_copy.COPIES_ON_DRIVER", False)
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'before' FROM generate_series(1, 2000) n")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port).split("CREATE SOURCE")[0] +
                    "CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink') FOR TABLES (notes)")
    wait_for(lambda: source_status(session)[0] == "running", timeout=60, what="the source to run")
    stop, written = threading.Event(), []

    def write():  # changes to orders before, during and after its copy: none lost or doubled at the seam
        with upstream.admin("shop") as admin:
            n = 2000
            while not stop.is_set():
                n += 1
                admin.execute("INSERT INTO orders VALUES (%s, 1, 'new')", (n,))
                admin.execute("UPDATE orders SET amount = amount + 1, note = 'u' WHERE id = %s", (n % 2000 + 1,))
                written.append(n)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        time.sleep(1)
        session.execute("CREATE TABLE orders FROM SOURCE shop (REFERENCE public.orders);"
                        "CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                        "TABLE 'orders') KEY (id) ENFORCED ENVELOPE UPSERT WITH (COMMIT INTERVAL '1s')")
        wait_for(lambda: len(iceberg_rows(session, "orders_lake", "id") or ()) >= 2000, timeout=60,
                 what="the table's copy to reach Iceberg")
        time.sleep(2)
    finally:
        stop.set()
        writer.join()
    assert len(written) > 100
    assert len(in_sync(session, upstream)) == 2000 + len(written)
    table_id = rows(session, "SELECT id FROM mz_tables WHERE name = 'orders'")[0][0]
    assert len(list((session.data_dir / "bases" / table_id).glob("*.parquet"))) > 2  # one file per range
    assert {s for (s,) in rows(session, "SELECT status FROM mz_internal.mz_source_status_history")} == {
        "starting", "running"}  # never stalled
    assert rows(session, "SHOW COLUMNS FROM orders") == [("id", 0, "bigint"), ("amount", 0, "numeric(10,2)"),
                                                         ("note", 1, "text")]
    assert error_of(session, "CREATE TABLE again FROM SOURCE shop (REFERENCE orders)").message == (
        "source 'shop' already replicates upstream table public.orders, as 'orders': create sinks from that "
        "one")
    with upstream.admin("shop") as admin:
        admin.execute("CREATE TABLE hidden (id int PRIMARY KEY)")
    assert error_of(session, "CREATE TABLE hidden FROM SOURCE shop (REFERENCE public.hidden)").message == (
        "source 'shop': publication 'icesink' does not cover table public.hidden: ALTER PUBLICATION icesink "
        "ADD TABLE public.hidden")


class UpstreamWriter(threading.Thread):
    """Random transactions on the upstream table until stopped: inserts, updates, primary-key updates, deletes,
    several changes per transaction at times, one TRUNCATE, and later one added column (with a default, which the
    rows written before it take)."""

    def __init__(self, postgres):
        super().__init__(daemon=True)
        self.postgres, self.stopped, self.rng = postgres, threading.Event(), random.Random(11)
        self.transactions = 0

    def run(self):
        with self.postgres.admin("shop") as admin:
            next_id, truncated = 1, False
            while not self.stopped.is_set():
                with admin.transaction():
                    for _ in range(self.rng.choice((1, 1, 3, 20))):
                        roll = self.rng.random()
                        if roll < 0.5:
                            admin.execute("INSERT INTO orders (id, amount, note) VALUES (%s, %s, %s)",
                                          (next_id, self.rng.randint(1, 99999) / 100, f"n{next_id}"))
                            next_id += 1
                        elif roll < 0.75:
                            tagged = ", tag = tag || '+'" if self.transactions > ADD_COLUMN_AT else ""
                            admin.execute(f"UPDATE orders SET amount = amount + 1, note = note || '+'{tagged} WHERE "
                                          "id = (SELECT id FROM orders ORDER BY random() LIMIT 1)")
                        elif roll < 0.85:
                            admin.execute("UPDATE orders SET id = %s WHERE id = (SELECT id FROM orders ORDER BY "
                                          "random() LIMIT 1)", (next_id,))
                            next_id += 1
                        else:
                            admin.execute("DELETE FROM orders WHERE id = (SELECT id FROM orders ORDER BY random() "
                                          "LIMIT 1)")
                self.transactions += 1
                if self.transactions == ADD_COLUMN_AT:
                    admin.execute("ALTER TABLE orders ADD COLUMN tag text NOT NULL DEFAULT 't'")
                if self.transactions == 100 and not truncated:
                    admin.execute("TRUNCATE orders")
                    truncated = True
                time.sleep(0.01)


@pytest.mark.timeout(900)
def test_sigkill_of_serve_loses_and_doubles_no_upstream_change(session, upstream):
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n, 'seed' FROM generate_series(100001, 102000) n")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    writer = UpstreamWriter(upstream)
    writer.start()
    rng = random.Random(7)
    try:
        for _ in range(KILLS):
            ended = serve_until_killed(session.data_dir, rng.uniform(6, 16))
            assert ended is None, f"serve exited by itself: {ended.stderr.read()}"
    finally:
        writer.stopped.set()
        writer.join()
    assert writer.transactions > 300  # the TRUNCATE and the added column happened while serve was being killed
    final = serve(session.data_dir)
    try:
        expected = in_sync(session, upstream, columns="id, amount, note, tag")
    finally:
        final.send_signal(signal.SIGTERM)
        assert final.wait(timeout=120) == 0
    assert len(expected) > 100
    statuses = rows(session, "SELECT DISTINCT status FROM mz_internal.mz_source_status_history")
    assert ("failed",) not in statuses


@pytest.mark.timeout(600)
def test_serve_killed_between_the_copy_and_the_end_of_its_load_into_the_store_resumes_the_load(session, upstream):
    with upstream.admin("shop") as admin:  # two blocks of the store's load (LOAD_ROWS)
        admin.execute("INSERT INTO orders SELECT n, n, 'n' FROM generate_series(1, 150000) n")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    killed = serve_until_killed(session.data_dir, seconds=120, crash_at="source-loading")  # after the first block
    assert killed is not None and killed.returncode == -signal.SIGKILL
    with upstream.admin("shop") as admin:  # changes to rows copied, loaded or not
        admin.execute("UPDATE orders SET note = 'changed' WHERE id % 1000 = 0")
        admin.execute("DELETE FROM orders WHERE id > 149000")
    final = serve(session.data_dir)
    try:
        expected = in_sync(session, upstream)
    finally:
        final.send_signal(signal.SIGTERM)
        assert final.wait(timeout=120) == 0
    assert len(expected) == 149000 and expected[999] == (1000, 1000, "changed")


def test_the_postgres_example_runs(tmp_path):
    """examples/postgres.sql (what `make demo-postgres` runs) on its upstream tables, in a Postgres of its own."""
    server = Postgres().start()
    try:
        with server.admin() as admin:
            admin.execute((EXAMPLES / "postgres-upstream.sql").read_text())
        script = tmp_path / "postgres.sql"
        script.write_text((EXAMPLES / "postgres.sql").read_text().replace("PORT = 54329", f"PORT = {server.port}"))
        done = subprocess.run(ICESINK + ["--data-dir", str(tmp_path / "data"), "-f", str(script)],
                              capture_output=True, text=True, env=cli_env(ICESINK_SPARK_MASTER="local[1]"),
                              timeout=300)
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    assert ["pg_shop", "running", "NULL"] in lines and ["orders_iceberg", "running", "NULL"] in lines, done.stdout
    assert ["10000", "5004900.00"] in lines  # every order, copied and sunk


def test_select_reads_what_a_source_replicated_and_the_views_over_it(session, scheduler, upstream):
    """SELECT from a subsource, as psql users expect of a replicated table, and from a materialized view over it:
    its current rows, as Postgres holds them once replicated."""
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n * 1.5, 'note ' || n FROM generate_series(1, 200) n;"
                      "INSERT INTO notes VALUES ('a'), ('b')")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port)
                    + "CREATE MATERIALIZED VIEW big_orders AS SELECT id, amount FROM orders WHERE amount > 150;")
    in_sync(session, upstream)
    with upstream.admin("shop") as admin:
        admin.execute("DELETE FROM orders WHERE id > 190; UPDATE orders SET note = 'changed' WHERE id = 1")
    in_sync(session, upstream)
    assert rows(session, "SELECT id, amount, note FROM orders ORDER BY id") == [
        (i, str(a), n) for i, a, n in upstream_rows(upstream)]  # numeric as its exact text
    assert rows(session, "SELECT count(*), min(id), max(id) FROM big_orders") == [(90, 101, 190)]
    assert rows(session, "SELECT line FROM notes ORDER BY line") == [("a",), ("b",)]


def test_select_from_a_source_not_copied_yet_says_so(session, upstream):
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port))
    assert error_of(session, "SELECT * FROM orders").message == ("'orders' cannot be read yet: its source has not copied its tables yet; it can "
                                     "once the source has run (icesink serve, or a shell or script that runs the sinks "
                                     "and sources)")


VIEWS = """
CREATE MATERIALIZED VIEW per_note AS
  SELECT note, count(*) AS n, sum(amount) AS total, max(amount) AS top FROM orders GROUP BY note;
CREATE MATERIALIZED VIEW big_orders AS SELECT id, amount FROM orders WHERE amount > 300;
CREATE SINK per_note_lake FROM per_note INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'per_note')
  KEY (note) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');
CREATE SINK big_orders_lake FROM big_orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'big')
  KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE MATERIALIZED VIEW noted AS SELECT o.note, count(*) AS lines, sum(o.amount) AS total
  FROM orders o JOIN notes n ON n.line = o.note GROUP BY o.note;
CREATE SINK noted_lake FROM noted INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'noted')
  KEY (note) MODE UPSERT WITH (COMMIT INTERVAL '1s');
"""
PER_NOTE = "(SELECT note, count(*) AS n, sum(amount) AS total, max(amount) AS top FROM orders GROUP BY note) v"
NOTED = ("(SELECT o.note, count(*) AS lines, sum(o.amount) AS total FROM orders o JOIN notes n ON n.line = o.note "
         "GROUP BY o.note) v")


def test_sinks_on_views_over_a_replicated_table_hold_what_postgres_computes(session, scheduler, upstream):
    """The views' Iceberg tables follow the copy (read from its base), then the changes (from segments), as the
    views' queries evaluated by Postgres itself say."""
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders SELECT n, n * 1.5, 'note ' || (n % 7) FROM generate_series(1, 500) n")
        admin.execute("INSERT INTO notes VALUES ('note 1'), ('note 2'), ('note 2'), ('note 5')")
    session.execute(SETUP.format(password=PASSWORD, port=upstream.port) + VIEWS)

    def views_in_sync():
        per_note = in_sync(session, upstream, sink="per_note_lake", table=PER_NOTE, columns="note, n, total, top")
        big = in_sync(session, upstream, sink="big_orders_lake", table="orders WHERE amount > 300",
                      columns="id, amount")
        noted = in_sync(session, upstream, sink="noted_lake", table=NOTED, columns="note, lines, total")
        return per_note, big, noted
    per_note, big, noted = views_in_sync()
    assert len(per_note) == 7 and len(big) == 300 and [r[0] for r in noted] == ["note 1", "note 2", "note 5"]
    with upstream.admin("shop") as admin:
        admin.execute("INSERT INTO orders VALUES (1001, 999.00, 'new'), (1002, 1.00, 'new')")
        admin.execute("UPDATE orders SET note = 'note 1', amount = amount + 100 WHERE id % 5 = 0")  # groups move
        admin.execute("UPDATE orders SET id = 2000 WHERE id = 400")  # a changed primary key
        admin.execute("DELETE FROM orders WHERE note = 'note 3'")  # a whole group goes
        admin.execute("INSERT INTO notes VALUES ('note 4'), ('new')")  # groups join
        admin.execute("DELETE FROM notes WHERE line = 'note 5'")  # a group leaves the join
    per_note, big, noted = views_in_sync()
    assert "note 3" not in {r[0] for r in per_note} and (2000, 700) in big
    assert [r[0] for r in noted] == ["new", "note 1", "note 2", "note 4"]
    with upstream.admin("shop") as admin:
        admin.execute("TRUNCATE orders")
        admin.execute("INSERT INTO orders VALUES (1, 500.00, 'after truncate')")
        admin.execute("INSERT INTO notes VALUES ('after truncate')")
    assert views_in_sync() == ([("after truncate", 1, 500, 500)], [(1, 500)], [("after truncate", 1, 500)])
