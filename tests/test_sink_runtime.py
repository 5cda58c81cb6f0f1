"""The sink runtime end to end: engine-table changes reach the Iceberg table once each, as an
independent reader (DuckDB) sees it."""
import datetime as dt
import json
import random
import time
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.types import IntegerType

import icesink
from icesink.catalog_connections import connector_for
from icesink.engine.scheduler import Scheduler
from tests.conftest import rows
from tests.readers import duckdb_rows
from tests.runtime import caught_up, committed_offset, iceberg_table, sink_status, wait_for

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def runtime(session, scheduler):
    return session


def random_changes(session, rng, count, next_id):
    live = [r[0] for r in rows(session, "SELECT id FROM orders")]
    for _ in range(count):
        op = rng.random()
        if op < 0.5 or not live:
            statements = f"INSERT INTO orders VALUES ({next_id}, 'n{next_id}', {rng.randint(1, 10**6) / 100})"
            live.append(next_id)
            next_id += 1
        elif op < 0.8:
            key = rng.choice(live)
            statements = f"UPDATE orders SET name = 'u{rng.randint(0, 999)}', amount = amount + 1 WHERE id = {key}"
        else:
            key = live.pop(rng.randrange(len(live)))
            statements = f"DELETE FROM orders WHERE id = {key}"
        session.execute(statements)
    return next_id


SETUP = """
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE TABLE orders (id bigint NOT NULL, name text, amount numeric(12,2), PRIMARY KEY (id));
"""


# a sink of each writer on orders: copy-on-write and merge-on-read upserts, and append
EVERY_WRITER = """
CREATE SINK upserted FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'upserted')
  KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK merged FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'merged')
  KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');
CREATE SINK logged FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'logged')
  MODE APPEND WITH (COMMIT INTERVAL '1s');"""


def test_upserts_reach_iceberg_exactly(runtime):
    runtime.execute(SETUP + "CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'orders') KEY (id) PARTITION BY (bucket(4, id)) MODE UPSERT "
                    "WITH (COMMIT INTERVAL '1s')")
    rng = random.Random(7)
    next_id = 1
    for _ in range(6):  # changes keep arriving while batches commit
        next_id = random_changes(runtime, rng, 400, next_id)
        time.sleep(0.7)
    wait_for(caught_up(runtime, "orders_lake", "orders"), what="the sink to commit every change")
    expected = rows(runtime, "SELECT id, name, amount FROM orders ORDER BY id")
    got = duckdb_rows(iceberg_table(runtime, "orders_lake").metadata_location, "id, name, amount", "id")
    assert got == [(i, n, Decimal(a)) for i, n, a in expected]
    history = [s for (s,) in rows(runtime, "SELECT h.status FROM mz_internal.mz_sink_status_history h "
                                           "JOIN mz_sinks s ON s.id = h.sink_id WHERE s.name = 'orders_lake'")]
    assert history[:2] == ["starting", "running"] and "failed" not in history
    committed = rows(runtime, "SELECT messages_committed, snapshots_committed, bytes_committed "
                              "FROM mz_internal.mz_sink_statistics")
    assert committed[0][0] >= 2400 and committed[0][1] >= 2 and committed[0][2] > 0


def test_append_replays_to_the_same_state(runtime):
    runtime.execute(SETUP + "CREATE SINK orders_log FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'orders_log') MODE APPEND WITH (COMMIT INTERVAL '1s')")
    rng = random.Random(11)
    next_id = 1
    for _ in range(3):
        next_id = random_changes(runtime, rng, 300, next_id)
        time.sleep(0.7)
    wait_for(caught_up(runtime, "orders_log", "orders"), what="the sink to commit every change")
    got = duckdb_rows(iceberg_table(runtime, "orders_log").metadata_location, "*", "_mz_timestamp")
    state = {}
    for id_, name, amount, diff, _ in got:
        state[(id_, name, amount)] = state.get((id_, name, amount), 0) + diff
    final = sorted(k for k, n in state.items() if n > 0)
    assert all(n in (0, 1) for n in state.values())
    expected = rows(runtime, "SELECT id, name, amount FROM orders ORDER BY id")
    assert final == [(i, n, Decimal(a)) for i, n, a in expected]


def test_append_writes_an_update_as_a_retraction_and_an_insertion_at_one_time(runtime):
    """MODE APPEND, as Materialize writes it: an update is -1 for the old row and +1 for the new one with the same
    _mz_timestamp, a delete is -1, and the table never holds a delete file."""
    runtime.execute(SETUP + "CREATE SINK orders_log FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'orders_log') MODE APPEND WITH (COMMIT INTERVAL '1s');"
                    "INSERT INTO orders VALUES (1, 'a', 1.00), (2, 'b', 2.00)")
    wait_for(caught_up(runtime, "orders_log", "orders"), what="the inserts")
    runtime.execute("UPDATE orders SET name = 'A' WHERE id = 1")
    runtime.execute("DELETE FROM orders WHERE id = 2")
    wait_for(caught_up(runtime, "orders_log", "orders"), what="the update and the delete")
    table = iceberg_table(runtime, "orders_log")
    got = duckdb_rows(table.metadata_location, "id, name, _mz_diff, _mz_timestamp", "id, _mz_timestamp, _mz_diff")
    first, second = [r for r in got if r[0] == 1], [r for r in got if r[0] == 2]
    assert [(n, d) for _, n, d, _ in first] == [("a", 1), ("a", -1), ("A", 1)]
    assert first[1][3] == first[2][3] > first[0][3]  # one time for both halves of the update, after the insert
    assert [(n, d) for _, n, d, _ in second] == [("b", 1), ("b", -1)]
    assert int(table.current_snapshot().summary.get("total-delete-files", "0")) == 0


def test_acknowledged_changes_are_compacted_and_a_later_sink_starts_from_the_snapshot(runtime):
    runtime.execute(SETUP + "CREATE SINK first FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'first') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    table_id, log = runtime.catalog.get("orders").id, runtime.tables
    rng = random.Random(5)
    next_id = random_changes(runtime, rng, 300, 1)
    for _ in range(4):  # updates and deletes of the same rows: a log much longer than the table
        next_id = random_changes(runtime, rng, 300, next_id)
        wait_for(caught_up(runtime, "first", "orders"), what="the first sink to commit every change")
    live = Counter(rows(runtime, "SELECT id, name, amount FROM orders"))

    def compacted() -> bool:
        """Below the floor, only the insertions of the rows live at the floor: the rows now, less the changes after
        it (a compaction may end at an offset some later changes follow, and removes its pairs after the floor
        moves)."""
        floor = log.floor(table_id)
        at_floor = Counter(live)
        for _, diff, _, row in log.changes(table_id, floor, log.latest_offset(table_id)):
            at_floor[tuple(row)] -= diff
        below = log.changes(table_id, 0, floor)
        return floor > 0 and all(diff == 1 for _, diff, _, _ in below) and \
            Counter(tuple(row) for _, _, _, row in below) == +at_floor
    wait_for(compacted, what="the acknowledged log to be compacted to the rows live at its floor")

    runtime.execute("CREATE SINK second FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'second') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    random_changes(runtime, rng, 200, next_id)
    expected = [(i, n, Decimal(a)) for i, n, a in rows(runtime, "SELECT id, name, amount FROM orders ORDER BY id")]
    for sink in ("first", "second"):
        wait_for(caught_up(runtime, sink, "orders"), what=f"sink {sink} to commit every change")
        assert duckdb_rows(iceberg_table(runtime, sink).metadata_location, "id, name, amount", "id") == expected


def test_a_counter_as_of_a_tick_starts_with_the_ticks_before_it(runtime):
    """`COUNTER (AS OF 5, UP TO 8)`, as Materialize's scripts write it: ticks 0 to 5 are there at once (values 1 to
    6), the rest come one a tick up to 8; a table from the source without REFERENCE reads the same."""
    runtime.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SOURCE counter FROM LOAD GENERATOR COUNTER (TICK INTERVAL '1h', AS OF 5, UP TO 8);
        CREATE TABLE counted FROM SOURCE counter;
        CREATE SINK counter_log FROM counted INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'counter')
          MODE APPEND WITH (COMMIT INTERVAL '1s');""")
    wait_for(lambda: committed_offset(runtime, "counter_log") >> 20 == 6, what="the ticks as of 5")
    time.sleep(1.5)  # a commit or so more: no tick comes before the hour is up
    assert committed_offset(runtime, "counter_log") >> 20 == 6
    counters = duckdb_rows(iceberg_table(runtime, "counter_log").metadata_location, "counter, _mz_diff", "1")
    assert counters == [(n, 1) for n in range(1, 7)]


def test_a_finite_input_ends_with_a_sealing_snapshot_and_an_empty_one_gives_one_snapshot(session, spark):
    """As Materialize's sink does: a COUNTER (UP TO 5) gives its rows, then one empty snapshot saying the input is
    complete; an empty table, and a COUNTER (UP TO 0), give exactly one empty snapshot; a restart adds nothing."""
    from icesink.engine.sink.progress import SEALED

    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SOURCE five FROM LOAD GENERATOR COUNTER (TICK INTERVAL '100ms', UP TO 5);
        CREATE SOURCE nothing FROM LOAD GENERATOR COUNTER (UP TO 0);
        CREATE TABLE empty (id bigint NOT NULL, PRIMARY KEY (id));
        CREATE SINK five_log FROM five INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'five')
          MODE APPEND WITH (COMMIT INTERVAL '1s');
        CREATE SINK none_log FROM nothing INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'none')
          MODE APPEND WITH (COMMIT INTERVAL '1s');
        CREATE SINK empty_lake FROM empty INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'empty')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');""")

    def sealed(name):
        try:
            snapshot = iceberg_table(session, name).current_snapshot()
        except Exception:  # not created yet
            return False
        return snapshot is not None and snapshot.summary.additional_properties.get(SEALED) == "true"

    def started(name):
        try:
            return iceberg_table(session, name).current_snapshot() is not None
        except Exception:
            return False

    def history(name):
        table = iceberg_table(session, name)
        summaries = [s.summary.additional_properties for s in sorted(table.metadata.snapshots,
                                                                      key=lambda s: s.sequence_number)]
        return [(props.get(SEALED), props.get("added-records", "0")) for props in summaries]
    for run in range(2):  # the second run, a restart, must add nothing
        scheduler = Scheduler(session.data_dir, session.executor.secret_value, lambda: spark)
        scheduler.start()
        try:
            wait_for(lambda: sealed("five_log") and sealed("none_log") and started("empty_lake"), what="the seals")
            time.sleep(1.5)  # commit intervals in which nothing more may come
            if run == 0:
                first = {name: history(name) for name in ("five_log", "none_log", "empty_lake")}
            else:
                assert {name: history(name) for name in ("five_log", "none_log", "empty_lake")} == first
        finally:
            scheduler.stop()
    assert first["none_log"] == [("true", "0")] and first["empty_lake"] == [(None, "0")]
    five = first["five_log"]
    assert five[0] == (None, "0") and five[-1] == ("true", "0") and sum(int(n) for _, n in five) == 5
    counters = duckdb_rows(iceberg_table(session, "five_log").metadata_location, "counter", "1")
    assert counters == [(n,) for n in range(1, 6)]
    assert duckdb_rows(iceberg_table(session, "empty_lake").metadata_location, "count(*)", "1") == [(0,)]


def test_load_generators_resume_exactly_after_a_restart(session, spark):
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SOURCE counter FROM LOAD GENERATOR COUNTER (TICK INTERVAL '100ms', UP TO 60);
        CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '200ms', UP TO 40) FOR ALL TABLES;
        CREATE SINK counter_log FROM counter INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'counter')
          MODE APPEND WITH (COMMIT INTERVAL '1s');
        CREATE SINK accounts_lake FROM accounts INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'accounts')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK bids_lake FROM bids INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'bids')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    first = Scheduler(session.data_dir, session.executor.secret_value, lambda: spark)
    first.start()
    wait_for(lambda: committed_offset(session, "counter_log") > 0 and committed_offset(session, "bids_lake") > 0,
             what="first commits")
    first.stop()  # stops mid-stream; the second run must continue exactly where the tables say
    second = Scheduler(session.data_dir, session.executor.secret_value, lambda: spark)
    second.start()
    try:
        wait_for(lambda: committed_offset(session, "counter_log") >> 20 == 60
                 and committed_offset(session, "bids_lake") >> 20 == 40
                 and committed_offset(session, "accounts_lake") >> 20 == 40, what="every tick")
    finally:
        second.stop()
    counters = duckdb_rows(iceberg_table(session, "counter_log").metadata_location, "counter, _mz_diff", "1")
    assert counters == [(n, 1) for n in range(1, 61)]
    bids = duckdb_rows(iceberg_table(session, "bids_lake").metadata_location, "id", "1")
    assert bids == [(n,) for n in range(1, 121)]
    accounts = duckdb_rows(iceberg_table(session, "accounts_lake").metadata_location, "id, balance", "1")
    assert [a for a, _ in accounts] == list(range(1, 101))
    from icesink.engine.sources.generators import tick_rows
    balances = {}
    for tick in range(1, 41):
        for (account, _, balance), diff in tick_rows("auction", "accounts", {"tick_interval_ms": 200, "up_to": 40}, 0, tick):
            if diff > 0:
                balances[account] = balance
    assert accounts == sorted(balances.items())


def test_tpch_generator_makes_its_snapshot_then_replaces_an_order_each_tick(runtime):
    from icesink.engine.sources import tpch

    runtime.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR 0.001, TICK INTERVAL '100ms', UP TO 40)
          FOR ALL TABLES;
        CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'tpch', TABLE 'orders')
          KEY (o_orderkey) ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK lineitem_lake FROM lineitem INTO ICEBERG CATALOG CONNECTION lake
          (NAMESPACE 'tpch', TABLE 'lineitem') KEY (l_orderkey, l_linenumber) ENFORCED MODE UPSERT
          WITH (COMMIT INTERVAL '1s');
        CREATE SINK partsupp_lake FROM partsupp INTO ICEBERG CATALOG CONNECTION lake
          (NAMESPACE 'tpch', TABLE 'partsupp') KEY (ps_partkey, ps_suppkey) ENFORCED MODE UPSERT
          WITH (COMMIT INTERVAL '1s');
    """)
    done = lambda name: committed_offset(runtime, name) >> 32  # noqa: E731
    wait_for(lambda: done("orders_lake") == 40 and done("lineitem_lake") == 40 and done("partsupp_lake") == 1,
             timeout=120, what="every tick")
    location = {name: iceberg_table(runtime, f"{name}_lake").metadata_location
                for name in ("orders", "lineitem", "partsupp")}
    count = tpch.counts(0.001)["orders"]
    assert count == 1500 and duckdb_rows(location["partsupp"], "count(*)", "1") == [(800,)]
    # from scratch: every order in the version the 39 updates left it in, and its lineitems
    versions = np.zeros(count, np.int64)
    for update in range(39):
        index, version = tpch.updated_order(update, count)
        versions[index - 1] = version
    assert versions.sum() == 39
    orders, lineitem = tpch._orders(np.arange(1, count + 1, dtype=np.int64), versions, tpch.counts(0.001))
    expected = sorted(zip(orders["o_orderkey"].to_pylist(), orders["o_custkey"].to_pylist(),
                          orders["o_totalprice"].to_pylist(), orders["o_orderdate"].to_pylist()))
    assert duckdb_rows(location["orders"], "o_orderkey, o_custkey, o_totalprice, o_orderdate", "1") == expected
    expected = sorted(zip(lineitem["l_orderkey"].to_pylist(), lineitem["l_linenumber"].to_pylist(),
                          lineitem["l_partkey"].to_pylist(), lineitem["l_extendedprice"].to_pylist()))
    assert duckdb_rows(location["lineitem"], "l_orderkey, l_linenumber, l_partkey, l_extendedprice",
                       "1, 2") == expected
    totals = {}  # an order's total is its lineitems' charges, as another reader sees them
    for key, price, tax, discount in duckdb_rows(location["lineitem"], "l_orderkey, l_extendedprice, l_tax, "
                                                 "l_discount", "1"):
        charge = (price * (1 + tax) * (1 - discount)).quantize(Decimal("0.01"), ROUND_HALF_UP)
        totals[key] = totals.get(key, 0) + charge
    assert dict(duckdb_rows(location["orders"], "o_orderkey, o_totalprice", "1")) == totals


def test_select_from_iceberg_reads_back_what_a_sink_wrote(runtime):
    runtime.execute(SETUP + "INSERT INTO orders VALUES (1, 'a', 1.50), (2, 'b', 2.25), (3, 'c', 3);"
                    "CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'orders') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    wait_for(caught_up(runtime, "orders_lake", "orders"), what="the first commit")
    result = runtime.execute("SELECT o.id, name, amount FROM ICEBERG lake.shop.orders o WHERE amount > 2 "
                             "ORDER BY id")[0]
    assert result.columns == ["id", "name", "amount"]
    assert result.rows == [(2, "b", Decimal("2.25")), (3, "c", Decimal("3.00"))]
    assert runtime.execute("SELECT count(*) AS n FROM ICEBERG lake.shop.orders")[0].rows == [(3,)]
    # bound over the table's columns as its scan gives them: integers divide as integers (Spark's `/` gave 0.5), a
    # division inside another too, and a decimal's division is Spark's exact one
    divided = runtime.execute("SELECT id / 2, -id / 2, count(*) OVER () / 2, 10 / (id / 2 + 1), amount / 4 "
                              "FROM ICEBERG lake.shop.orders ORDER BY id")[0].rows
    assert [row[:4] for row in divided] == [(0, 0, 1, 10), (1, -1, 1, 5), (1, -1, 1, 5)]
    assert [row[4] for row in divided] == [Decimal("0.375"), Decimal("0.5625"), Decimal("0.75")]
    assert all(isinstance(row[4], Decimal) for row in divided)  # not a double
    missing = pytest.raises(icesink.PlanError, runtime.execute, "SELECT * FROM ICEBERG lake.shop.nothing")
    assert missing.value.message == "Iceberg table shop.nothing does not exist in catalog 'lake'"
    zoned = pytest.raises(icesink.NotSupportedYet, runtime.execute,
                          "SELECT name AT TIME ZONE 'UTC' FROM ICEBERG lake.shop.orders")  # Spark has no timezone()
    assert zoned.value.message == ("AT TIME ZONE in a query over ICEBERG tables (which Spark answers) is not "
                                   "supported yet")


def test_key_value_generator_upserts_the_latest_value_per_key(runtime):
    runtime.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SOURCE kv FROM LOAD GENERATOR KEY VALUE (KEYS 50, BATCH SIZE 20, TICK INTERVAL '100ms', UP TO 12);
        CREATE SINK kv_lake FROM kv INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'kv')
          KEY (key) MODE UPSERT WITH (COMMIT INTERVAL '1s');""")
    wait_for(lambda: committed_offset(runtime, "kv_lake") >> 20 == 12, what="every tick")
    from icesink.engine.sources.generators import key_value_batch
    generated = key_value_batch({"keys": 50, "batch_size": 20}, 0, 1, 12).to_pylist()
    latest = {row["key"]: (row["value"], row["round"]) for row in generated}  # later rows win
    got = duckdb_rows(iceberg_table(runtime, "kv_lake").metadata_location, "key, value, round", "1")
    assert got == [(k, *latest[k]) for k in sorted(latest)] and len(got) == 50


def test_each_commit_expires_old_snapshots_and_the_files_only_they_held_are_deleted(runtime, monkeypatch, caplog):
    """Expiry goes in the batches' own commits (no second writer of the table races them): the table keeps its
    newest snapshots and, once the housekeeping thread has deleted what only expired ones referenced, the files
    they reference and no other data file; pyiceberg warns of nothing it could not tidy."""
    from icesink.engine.sink import committer

    monkeypatch.setattr(committer, "KEEP_SNAPSHOTS", 2)
    runtime.execute(SETUP + "CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'orders') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');"
                    "INSERT INTO orders VALUES (1, 'a', 1), (2, 'b', 2)")
    wait_for(caught_up(runtime, "orders_lake", "orders"), what="the first commit")
    with caplog.at_level("WARNING", logger="pyiceberg"):
        for n in range(6):
            runtime.execute(f"UPDATE orders SET name = 'v{n}' WHERE id = 1")
            wait_for(caught_up(runtime, "orders_lake", "orders"), what=f"update {n}")
            assert len(iceberg_table(runtime, "orders_lake").metadata.snapshots) == 2
        runtime.execute("UPDATE orders SET name = 'last' WHERE id = 2")
        wait_for(caught_up(runtime, "orders_lake", "orders"), what="the last update")

    def tidied():
        table = iceberg_table(runtime, "orders_lake")
        referenced = {task.file.file_path for snapshot in table.metadata.snapshots
                      for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files()}
        stored = {f"file://{p}" for p in Path(table.location().removeprefix("file://"), "data").glob("*.parquet")}
        return stored == referenced
    wait_for(tidied, timeout=30, what="the files of expired snapshots to be deleted")
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("pyiceberg")]
    got = duckdb_rows(iceberg_table(runtime, "orders_lake").metadata_location, "id, name", "id")
    assert got == [(1, "v5"), (2, "last")]


def test_a_column_added_to_a_table_appears_in_its_sinks_iceberg_tables(runtime):
    """ALTER TABLE … ADD COLUMN: the sinks start again with the column, their Iceberg tables gain it (rows written
    before hold null), and a sink whose Iceberg table is not its own to change says why it stops."""
    runtime.execute(SETUP + """
        INSERT INTO orders VALUES (1, 'a', 1.00), (2, 'b', 2.00);
""" + EVERY_WRITER)
    for sink in ("upserted", "merged", "logged"):
        wait_for(caught_up(runtime, sink, "orders"), what=f"{sink} to commit the first rows")
    runtime.execute("ALTER TABLE orders ADD COLUMN note text; INSERT INTO orders VALUES (3, 'c', 3.00, 'new');"
                    "UPDATE orders SET note = 'old' WHERE id = 1")
    for sink in ("upserted", "merged", "logged"):
        wait_for(caught_up(runtime, sink, "orders"), what=f"{sink} to commit the rows with the new column")
    expected = [(1, "a", Decimal("1.00"), "old"), (2, "b", Decimal("2.00"), None), (3, "c", Decimal("3.00"), "new")]
    for sink in ("upserted", "merged"):
        assert duckdb_rows(iceberg_table(runtime, sink).metadata_location, "id, name, amount, note", "id") == expected
    log = duckdb_rows(iceberg_table(runtime, "logged").metadata_location, "id, note, _mz_diff",
                      "_mz_timestamp, id, _mz_diff")  # the INSERT and the UPDATE may fall in one millisecond
    assert [r for r in log if r[0] == 1][-2:] == [(1, None, -1), (1, "old", 1)] and (3, "new", 1) in log
    assert "amount numeric(12,2), note text, PRIMARY KEY" in rows(runtime, "SHOW CREATE TABLE orders")[0][1]

    history = rows(runtime, "SELECT DISTINCT h.status FROM mz_internal.mz_sink_status_history h "
                            "JOIN mz_sinks s ON s.id = h.sink_id WHERE s.name IN ('upserted', 'merged', 'logged')")
    assert ("stalled",) not in history and ("failed",) not in history  # each stopped where the column came

    # an Iceberg table someone else wrote first is not the sink's to change: it stops and says what differs
    lake = connector_for(runtime.catalog.get("lake"), runtime.executor.secret_value, runtime.catalog).load_catalog()
    shared = lake.create_table("shop.shared", schema=pa.schema(
        [pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("amount", pa.decimal128(12, 2))]))
    shared.append(pa.table({"id": [7], "name": ["elsewhere"], "amount": [Decimal("7.00")]},
                           schema=shared.schema().as_arrow()))
    runtime.execute("CREATE TABLE other (id bigint NOT NULL, name text, amount numeric(12,2), PRIMARY KEY (id));"
                    "ALTER TABLE other ADD COLUMN extra int;"
                    "CREATE SINK borrower FROM other INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'shared') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    status, error = wait_for(lambda: sink_status(runtime, "borrower")[1] and sink_status(runtime, "borrower"),
                             what="the borrowing sink to stop")
    assert status == "failed"
    assert "the Iceberg table shop.shared does not fit the sink: missing columns: extra int" in error
    # what the README says to do: give the Iceberg table the column, then ALTER the sink to start it again
    with shared.update_schema() as update:
        update.add_column("extra", IntegerType())
    runtime.execute("INSERT INTO other VALUES (8, 'here', 8.00, 80);"
                    "ALTER SINK borrower SET (COMMIT INTERVAL '2s')")
    wait_for(caught_up(runtime, "borrower", "other"), what="the borrowing sink to start again")
    assert duckdb_rows(iceberg_table(runtime, "borrower").metadata_location, "id, name, extra", "id") == [
        (7, "elsewhere", None), (8, "here", 80)]


def test_a_sink_switched_to_another_relation_holds_exactly_that_relation(runtime):
    """ALTER SINK … SET FROM, with Materialize's semantics: from the switch on the Iceberg table holds exactly what the
    new relation holds (in the switch's one snapshot: no row of the old one left, no moment without rows), then its
    changes; the sink's version goes up, so the old incarnation is fenced."""
    from icesink.engine.sink.progress import latest_progress

    runtime.execute(SETUP + """
        CREATE TABLE replacement (id bigint NOT NULL, name text, amount numeric(12,2), PRIMARY KEY (id));
        CREATE TABLE nothing (id bigint NOT NULL, name text, amount numeric(12,2), PRIMARY KEY (id));
        INSERT INTO orders VALUES (1, 'old', 1.00), (2, 'old', 2.00), (3, 'old', 3.00);
        INSERT INTO replacement VALUES (2, 'new', 20.00), (4, 'new', 40.00), (5, 'new', 50.00);
""" + EVERY_WRITER)
    sinks = ("upserted", "merged", "logged")
    for sink in sinks:
        wait_for(caught_up(runtime, sink, "orders"), what=f"{sink} to commit the old relation")
    runtime.execute("UPDATE orders SET name = 'older' WHERE id = 1")  # a delete file in merged
    wait_for(caught_up(runtime, "merged", "orders"), what="the update")
    before = {sink: latest_progress(iceberg_table(runtime, sink), runtime.catalog.get(sink).id) for sink in sinks}

    for sink in sinks:
        runtime.execute(f"ALTER SINK {sink} SET FROM replacement")
    assert "CREATE SINK upserted FROM replacement INTO" in rows(runtime, "SHOW CREATE SINK upserted")[0][1]
    for sink in sinks:
        wait_for(caught_up(runtime, sink, "replacement"), what=f"{sink} to switch")
    runtime.execute("INSERT INTO orders VALUES (6, 'old', 6.00); INSERT INTO replacement VALUES (7, 'new', 70.00);"
                    "UPDATE replacement SET amount = 21.00 WHERE id = 2")
    for sink in sinks:
        wait_for(caught_up(runtime, sink, "replacement"), what=f"{sink} to commit the new relation's changes")
    expected = [(2, "new", Decimal("21.00")), (4, "new", Decimal("40.00")), (5, "new", Decimal("50.00")),
                (7, "new", Decimal("70.00"))]
    for sink in ("upserted", "merged"):
        table = iceberg_table(runtime, sink)
        assert duckdb_rows(table.metadata_location, "id, name, amount", "id") == expected
        switch = next(s for s in sorted(table.metadata.snapshots, key=lambda s: s.sequence_number)
                      if s.summary.additional_properties.get("icesink.input") == runtime.catalog.get("replacement").id)
        assert int(switch.summary["total-records"]) >= 3  # the switch's own snapshot holds the new rows
        after = latest_progress(table, runtime.catalog.get(sink).id)
        assert after.version > before[sink].version
    log = duckdb_rows(iceberg_table(runtime, "logged").metadata_location, "id, name, amount, _mz_diff", "id")
    state = {}
    for id_, name, amount, diff in log:
        state[(id_, name, amount)] = state.get((id_, name, amount), 0) + diff
    assert sorted(k for k, n in state.items() if n) == expected and all(n in (0, 1) for n in state.values())

    runtime.execute("ALTER SINK upserted SET FROM nothing")  # an empty relation empties the table at once
    wait_for(caught_up(runtime, "upserted", "nothing"), what="the switch to an empty relation")
    assert duckdb_rows(iceberg_table(runtime, "upserted").metadata_location, "id", "id") == []
    history = rows(runtime, "SELECT DISTINCT h.status FROM mz_internal.mz_sink_status_history h "
                            "JOIN mz_sinks s ON s.id = h.sink_id")
    assert ("stalled",) not in history and ("failed",) not in history


def test_maps_lists_ranges_and_unsigned_integers_reach_iceberg_as_materialize_writes_them(runtime):
    """map[text=>T] as an Iceberg map, `T list` as a list, uint8 as decimal(20,0) (uint2 and uint4 as int and
    long), a range as Materialize's struct of its canonical bounds; read back by DuckDB, through both upsert
    writers."""
    runtime.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE shapes (id uint8 NOT NULL, small uint2, mid uint4, attrs map[text=>int], tags text list,
                             span int4range, days daterange, amounts numrange, PRIMARY KEY (id));
        INSERT INTO shapes VALUES
          (18446744073709551615, 65535, 4294967295, '{a=>1, "b c"=>NULL}', '{x,"y z"}', '(1,5]',
           '[2024-01-01,2024-01-31]', '[1.5,)'),
          (1, 0, 0, '{}', '{}', 'empty', NULL, '(,)');
        INSERT INTO shapes (id, span) VALUES (2, 'empty');
        CREATE SINK copied FROM shapes INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'copied')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK merged FROM shapes INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'merged')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');""")
    for sink in ("copied", "merged"):
        wait_for(caught_up(runtime, sink, "shapes"), what=f"{sink} to commit")
    runtime.execute("UPDATE shapes SET attrs = '{c=>3}', span = '[7,9]' WHERE id = 1")
    for sink in ("copied", "merged"):
        wait_for(caught_up(runtime, sink, "shapes"), what=f"{sink} to commit the update")
    def span(lower, upper, lower_inclusive=True, upper_inclusive=False, empty=False):
        return {"lower": lower, "upper": upper, "lower_inclusive": lower_inclusive,
                "upper_inclusive": upper_inclusive, "empty": empty}
    expected = [
        (Decimal(1), 0, 0, {"c": 3}, [], span(7, 10), None, span(None, None, False)),
        (Decimal(2), None, None, None, None, span(None, None, False, False, True), None, None),
        (Decimal(18446744073709551615), 65535, 4294967295, {"a": 1, "b c": None}, ["x", "y z"], span(2, 6),
         span(dt.date(2024, 1, 1), dt.date(2024, 2, 1)), span(Decimal("1.5"), None))]
    for sink in ("copied", "merged"):
        table = iceberg_table(runtime, sink)
        assert [str(f.field_type) for f in table.schema().fields[:5]] == [
            "decimal(20, 0)", "int", "long", "map<string, int>", "list<string>"]
        assert [[str(f.field_type) for f in c.field_type.fields] for c in table.schema().fields[5:]] == [
            ["int", "int", "boolean", "boolean", "boolean"], ["date", "date", "boolean", "boolean", "boolean"],
            ["decimal(38, 10)", "decimal(38, 10)", "boolean", "boolean", "boolean"]]
        got = duckdb_rows(table.metadata_location, "id, small, mid, attrs, tags, span, days, amounts", "id")
        assert got == expected


def test_a_catalog_on_google_cloud_storage_is_kept_and_its_sinks_fail_saying_why(runtime):
    """GCP connections and STORAGE PROVIDER 'gcs' parse, plan and are stored (Materialize's scripts run on); the
    key's shape is checked; a sink that writes through such a catalog fails with the reason, not a traceback."""
    key = json.dumps({"type": "service_account", "project_id": "p", "client_email": "sa@p.iam.gserviceaccount.com",
                      "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIB\\n-----END PRIVATE KEY-----\\n"})
    results = runtime.execute(f"""
        CREATE SECRET gcp_key AS '{key}';
        CREATE CONNECTION gcp TO GCP (SERVICE ACCOUNT KEY = SECRET gcp_key);
        CREATE CONNECTION biglake TO ICEBERG CATALOG (CATALOG TYPE = 'rest',
          URL = 'https://biglake.googleapis.com/iceberg/v1/restcatalog', WAREHOUSE = 'gs://bucket',
          STORAGE PROVIDER = 'gcs', GCP CONNECTION = gcp);
        CREATE TABLE t (id bigint NOT NULL, PRIMARY KEY (id));
        CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION biglake (NAMESPACE 'shop', TABLE 't')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')""")
    reason = ("writing to Google Cloud Storage is not supported yet: icesink's sinks are tested against every "
              "catalog and store they write, and no Iceberg REST catalog over Cloud Storage runs where they are tested")
    assert results[2].notices == [f"connection 'biglake': {reason}; the connection is kept (a sink that uses it "
                                  "fails, saying so), as Materialize's scripts expect"]
    assert rows(runtime, "SHOW CREATE CONNECTION gcp") == [
        ("gcp", 'CREATE CONNECTION "gcp" TO GCP (SERVICE ACCOUNT KEY = SECRET gcp_key)')]
    status = wait_for(lambda: sink_status(runtime, "s")[0] == "failed" and sink_status(runtime, "s"),
                      what="the sink to fail")
    assert status == ("failed", f"not supported yet: connection 'biglake': {reason}")
    runtime.execute("ALTER SECRET gcp_key AS 'not json'")
    with pytest.raises(icesink.IcesinkError) as refused:
        runtime.execute("VALIDATE CONNECTION gcp")
    assert refused.value.message == ("connection 'gcp': SERVICE ACCOUNT KEY is not JSON; give the key file Google "
                                     "Cloud made for the service account, as it is")
    assert "not json" not in str(refused.value)


def test_records_reach_iceberg_as_structs(runtime):
    """Materialize's test/iceberg/nested-records.td, here: CREATE TYPE records (one inside another too), ROW(…) in
    INSERT and UPDATE, NULL fields and NULL records, upserted and appended, read back by DuckDB as structs."""
    runtime.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TYPE address AS (street text, city text, zip int);
        CREATE TYPE inner_record AS (x int, y text);
        CREATE TYPE outer_record AS (inner inner_record, z bool);
        CREATE TABLE users_with_address (id int, name text, addr address, data outer_record);
        INSERT INTO users_with_address VALUES
          (1, 'Alice', ROW('123 Main St', 'Springfield', 12345), ROW(ROW(10, 'ten'), true)),
          (2, 'Bob', ROW('456 Oak Ave', NULL, 67890), ROW(ROW(20, 'twenty'), false)),
          (3, 'Charlie', NULL, NULL);
        CREATE SINK nested FROM users_with_address INTO ICEBERG CATALOG CONNECTION lake
          (NAMESPACE 'shop', TABLE 'nested') KEY (id) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK nested_log FROM users_with_address INTO ICEBERG CATALOG CONNECTION lake
          (NAMESPACE 'shop', TABLE 'nested_log') MODE APPEND WITH (COMMIT INTERVAL '1s');""")
    for sink in ("nested", "nested_log"):
        wait_for(caught_up(runtime, sink, "users_with_address"), what=f"{sink} to commit")
    runtime.execute("UPDATE users_with_address SET addr = ROW('999 New St', 'New Town', 99999) WHERE id = 1")
    for sink in ("nested", "nested_log"):
        wait_for(caught_up(runtime, sink, "users_with_address"), what=f"{sink} to commit the update")
    assert duckdb_rows(iceberg_table(runtime, "nested").metadata_location,
                       "id, addr.street, addr.city, addr.zip, data.inner.x, data.inner.y, data.z", "id") == [
        (1, "999 New St", "New Town", 99999, 10, "ten", True), (2, "456 Oak Ave", None, 67890, 20, "twenty", False),
        (3, None, None, None, None, None, None)]
    log = duckdb_rows(iceberg_table(runtime, "nested_log").metadata_location, "id, addr.city, _mz_diff",
                      "_mz_timestamp, id, _mz_diff")
    assert log[-2:] == [(1, "Springfield", -1), (1, "New Town", 1)]


def test_an_existing_table_partitioned_otherwise_than_the_sink_says_is_refused(runtime):
    """As Materialize's test/iceberg/partition-by.td: the same PARTITION BY against the table a sink wrote before
    runs; none against a partitioned table, one against an unpartitioned table, or another transform, fail."""
    runtime.execute(SETUP + """
        CREATE TABLE events (ts timestamp, v int);
        INSERT INTO events VALUES ('2024-01-01 10:00', 1);
        CREATE SINK first FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'events')
          PARTITION BY (day(ts)) MODE APPEND WITH (COMMIT INTERVAL '1s');
        CREATE SINK plain FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'plain')
          MODE APPEND WITH (COMMIT INTERVAL '1s');""")
    for sink in ("first", "plain"):
        wait_for(caught_up(runtime, sink, "events"), what=f"{sink} to write its table")

    def error_of_sink(name):
        return wait_for(lambda: sink_status(runtime, name)[0] in ("failed", "running") and sink_status(runtime, name),
                        what=f"{name} to start")

    runtime.execute("DROP SINK first; DROP SINK plain;"
                    "CREATE SINK again FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                    "TABLE 'events') PARTITION BY (day(ts)) MODE APPEND WITH (COMMIT INTERVAL '1s')")
    assert error_of_sink("again") == ("running", None)
    runtime.execute("DROP SINK again;"
                    "CREATE SINK unpartitioned FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                    "TABLE 'events') MODE APPEND WITH (COMMIT INTERVAL '1s');"
                    "CREATE SINK partitioned FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                    "TABLE 'plain') PARTITION BY (bucket(4, v)) MODE APPEND WITH (COMMIT INTERVAL '1s')")
    assert error_of_sink("unpartitioned") == ("failed", "the Iceberg table shop.events is partitioned by (day(ts)) "
                                              "but sink has no PARTITION BY: give the sink the table's PARTITION BY, "
                                              "or another TABLE")
    assert error_of_sink("partitioned") == ("failed", "the Iceberg table shop.plain is unpartitioned but sink "
                                            "specifies PARTITION BY (bucket(4, v)): give the sink the table's "
                                            "PARTITION BY, or another TABLE")
    runtime.execute("DROP SINK unpartitioned;"
                    "CREATE SINK monthly FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                    "TABLE 'events') PARTITION BY (month(ts)) MODE APPEND WITH (COMMIT INTERVAL '1s')")
    assert error_of_sink("monthly") == ("failed", "the Iceberg table shop.events has a partition spec mismatch: the "
                                        "table is partitioned by (day(ts)), the sink by (month(ts)): give the sink "
                                        "the table's PARTITION BY, or another TABLE")
