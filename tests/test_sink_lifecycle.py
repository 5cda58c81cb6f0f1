"""Sink lifecycle: live ALTER, DROP, stalls that heal, fencing of a zombie, incompatible tables."""
import json
import os
import time

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from icesink.catalog_connections import connector_for
from icesink.engine.sink.runner import SinkRunner
from tests.conftest import rows
from tests.readers import duckdb_rows
from tests.runtime import caught_up, committed_offset, iceberg_table, wait_for

pytestmark = pytest.mark.timeout(600)


def statuses(session, sink):
    return rows(session, "SELECT h.status, h.error FROM mz_internal.mz_sink_status_history h JOIN mz_sinks s "
                         f"ON s.id = h.sink_id WHERE s.name = '{sink}' ORDER BY h.occurred_at")


ORDERS = """
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE TABLE orders (id bigint NOT NULL, name text, PRIMARY KEY (id));
CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders')
  KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
"""


def test_alter_commit_interval_live_and_drop(session, scheduler):
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SOURCE counter FROM LOAD GENERATOR COUNTER (TICK INTERVAL '100ms', UP TO 80);
        CREATE SINK counter_log FROM counter INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'gen', TABLE 'counter')
          MODE APPEND WITH (COMMIT INTERVAL '1s');""")
    wait_for(lambda: committed_offset(session, "counter_log") > 0, what="a first commit")
    before = statuses(session, "counter_log")
    session.execute("ALTER SINK counter_log SET (COMMIT INTERVAL = '1000ms')")  # the interval it has: no restart
    time.sleep(1)  # two scheduler polls: time enough to see a restart
    assert statuses(session, "counter_log") == before
    session.execute("ALTER SINK counter_log SET (COMMIT INTERVAL = '2s')")
    # the restart is a new incarnation, with a higher version that fences the one before it
    versions = "SELECT h.details FROM mz_internal.mz_sink_status_history h WHERE h.status = 'running'"
    wait_for(lambda: [json.loads(d)["version"] for (d,) in rows(session, versions)] == [1, 2], what="the restart")
    wait_for(lambda: committed_offset(session, "counter_log") >> 20 == 80, what="every tick")
    counters = duckdb_rows(iceberg_table(session, "counter_log").metadata_location, "counter", "1")
    assert counters == [(n,) for n in range(1, 81)]
    assert [s for s, _ in statuses(session, "counter_log")].count("starting") == 2  # restarted with the new interval
    assert "COMMIT INTERVAL = '2s'" in rows(session, "SHOW CREATE SINK counter_log")[0][1]
    table = iceberg_table(session, "counter_log")
    session.execute("DROP SINK counter_log")
    wait_for(lambda: not scheduler.slots, what="the sink to stop")
    table.refresh()  # the table stays, with what the sink wrote
    assert duckdb_rows(table.metadata_location, "count(*)", "1") == [(80,)]
    assert rows(session, "SELECT status FROM mz_internal.mz_sink_status_history ORDER BY occurred_at DESC LIMIT 1") \
        == [("dropped",)]


def test_an_idle_sink_commits_nothing_and_then_a_late_change_without_error(session, scheduler):
    """Idle for several commit intervals, a sink adds no snapshot, and the change that comes after commits as any
    other, with nothing but `running` in its history."""
    session.execute(ORDERS + "INSERT INTO orders VALUES (1, 'a')")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first row")
    snapshots = len(iceberg_table(session, "orders_lake").metadata.snapshots)
    time.sleep(3)  # three commit intervals with nothing to commit
    assert len(iceberg_table(session, "orders_lake").metadata.snapshots) == snapshots
    session.execute("UPDATE orders SET name = 'b' WHERE id = 1")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the late change")
    assert duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, name", "1") == [(1, "b")]
    assert statuses(session, "orders_lake") == [("starting", None), ("running", None)]


def test_a_running_sink_starts_again_with_its_altered_connection(session, scheduler):
    """ALTER CONNECTION reaches the sinks that use it: each starts again (a new incarnation) with the connection as
    it now is, and goes on from its committed progress."""
    session.execute(ORDERS + "INSERT INTO orders VALUES (1, 'a')")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first row")
    result = session.execute("ALTER CONNECTION lake SET (WAREHOUSE = 'warehouse')")[0]  # where it was, said aloud
    assert result.status == "ALTER CONNECTION" and "relative path" in result.notices[0]
    wait_for(lambda: [s for s, _ in statuses(session, "orders_lake")].count("starting") == 2, what="the restart")
    session.execute("INSERT INTO orders VALUES (2, 'b')")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the row after the restart")
    assert duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, name", "1") == [(1, "a"),
                                                                                                    (2, "b")]
    assert "WAREHOUSE = " in rows(session, "SHOW CREATE CONNECTION lake")[0][1]


def test_unwritable_warehouse_stalls_then_recovers(session, scheduler):
    session.execute(ORDERS + "INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first rows")
    data = os.path.join(iceberg_table(session, "orders_lake").location().removeprefix("file://"), "data")
    os.rename(data, data + ".aside")
    with open(data, "w"):
        pass  # a file where the data directory was: every write fails, even as root
    session.execute("INSERT INTO orders VALUES (3, 'c'); UPDATE orders SET name = 'A' WHERE id = 1")
    stalled = wait_for(lambda: [e for s, e in statuses(session, "orders_lake") if s == "stalled"], what="stalled")
    assert stalled[0]
    os.remove(data)
    os.rename(data + ".aside", data)
    wait_for(caught_up(session, "orders_lake", "orders"), what="recovery")
    assert statuses(session, "orders_lake")[-1] == ("running", None)
    got = duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, name", "1")
    assert got == [(1, "A"), (2, "b"), (3, "c")]


def _newer_incarnation(session, spark) -> SinkRunner:
    """Once the scheduler's runner (version 1) has committed, a second runner of the same sink starts: version 2."""
    session.execute(ORDERS + "INSERT INTO orders VALUES (1, 'a')")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the first commit")
    newer = SinkRunner(session.catalog, session.catalog.get("orders_lake"), spark, session.executor.secret_value)
    newer.start()
    return newer


def test_a_zombie_is_fenced_and_the_table_stays_intact(session, scheduler, spark):
    newer = _newer_incarnation(session, spark)
    try:
        for i in range(2, 6):
            session.execute(f"INSERT INTO orders VALUES ({i}, 'n{i}')")
            time.sleep(0.5)
        wait_for(lambda: any(s == "failed" for s, _ in statuses(session, "orders_lake")), what="the zombie to fail")
        wait_for(caught_up(session, "orders_lake", "orders"), what="the newer engine to catch up")
    finally:
        newer.stop()
    errors = [e for s, e in statuses(session, "orders_lake") if s == "failed"]
    assert errors == ["fenced by newer sink version 2 (this process runs version 1); another engine writes this sink"]
    got = duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, name", "1")
    assert got == [(1, "a")] + [(i, f"n{i}") for i in range(2, 6)]


def test_a_zombie_fenced_in_its_own_batch_fails_once_and_is_not_started_again(session, scheduler, spark, monkeypatch):
    """Without the idle check, the zombie learns of the newer version from its next batch; the scheduler then sees its
    query stop, and must neither start it again nor record the failure twice."""
    monkeypatch.setattr("icesink.engine.scheduler.FENCING_CHECK_SECONDS", 3600)
    newer = _newer_incarnation(session, spark)
    try:
        version = lambda: iceberg_table(session, "orders_lake").current_snapshot().summary.additional_properties.get(
            "icesink.sink-version")
        session.execute("INSERT INTO orders VALUES (2, 'b')")
        wait_for(lambda: version() == "2", what="the newer version to commit")
        session.execute("INSERT INTO orders VALUES (3, 'c')")  # the zombie's next batch meets the newer version
        wait_for(lambda: any(s == "failed" for s, _ in statuses(session, "orders_lake")), what="the zombie to fail")
        time.sleep(3)  # several scheduler ticks
        wait_for(caught_up(session, "orders_lake", "orders"), what="the newer engine to catch up")
    finally:
        newer.stop()
    history = [s for s, _ in statuses(session, "orders_lake")]
    # the newer incarnation (the same sink id) may go on recording `running`; the zombie is never started again
    assert history.count("failed") == 1 and set(history[history.index("failed") + 1:]) <= {"running"}
    got = duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, name", "1")
    assert got == [(1, "a"), (2, "b"), (3, "c")]


def test_an_incompatible_table_fails_the_sink_with_the_difference(session, scheduler):
    session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local')")
    catalog = connector_for(session.catalog.get("lake"), None, session.catalog).load_catalog()
    catalog.create_namespace("shop")
    catalog.create_table(("shop", "orders"), Schema(NestedField(1, "id", StringType(), required=False),
                                                    NestedField(2, "extra", LongType(), required=True)))
    session.execute("CREATE TABLE orders (id bigint NOT NULL, name text, PRIMARY KEY (id));"
                    "CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'shop', TABLE 'orders') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    failed = wait_for(lambda: [e for s, e in statuses(session, "orders_lake") if s == "failed"], what="failed")
    assert failed == ["the Iceberg table shop.orders does not fit the sink: missing columns: name string; "
                      "id is string, the sink writes long; required columns the sink does not write: extra"]


def test_serve_stopped_by_sigterm_leaves_its_sinks_paused_and_a_new_one_resumes_them(session):
    import json
    import signal
    import subprocess

    from tests.conftest import ICESINK, cli_env

    session.execute(ORDERS + "INSERT INTO orders VALUES (1, 'a')")

    def serve():
        return subprocess.Popen(ICESINK + ["serve", "--data-dir", str(session.data_dir)], env=cli_env(
            ICESINK_SPARK_MASTER="local[1]"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def last_status():
        return rows(session, "SELECT st.status, st.details FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st "
                             "ON s.id = st.id")[0]

    first = serve()
    wait_for(lambda: last_status()[0] == "running", what="the sink to run")
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=120) == 0
    status, details = last_status()
    assert status == "paused"
    assert json.loads(details)["hints"][0].startswith(f"icesink serve stopped (pid {first.pid}); it resumes")
    second = serve()
    try:
        wait_for(lambda: last_status()[0] == "running", what="the sink to run again")
        session.execute("INSERT INTO orders VALUES (2, 'b')")
        wait_for(caught_up(session, "orders_lake", "orders"), what="the new row")
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=120) == 0
    history = [s for s, _ in statuses(session, "orders_lake")]
    assert history == ["starting", "running", "paused", "starting", "running", "paused"]


TAKE_OVER = """
import sys, time
import icesink
from icesink.engine.sink.runner import SinkRunner
session = icesink.connect(sys.argv[1], spark_master="local[1]")
runner = SinkRunner(session.catalog, session.catalog.get("orders_lake"), session.spark(), session.executor.secret_value)
runner.start()
print("started", runner.committer.version, flush=True)
sys.stdin.readline()
runner.stop()
"""


def test_an_incarnation_in_another_process_fences_the_older_one(session):
    """Each start is a new incarnation with a higher version: a runner in a second process (one that took the sink
    over while the first still ran, say on another host) fences the first at its next commit."""
    import signal
    import subprocess
    import sys

    from tests.conftest import ICESINK, cli_env

    session.execute(ORDERS + "INSERT INTO orders VALUES (1, 'a')")
    first = subprocess.Popen(ICESINK + ["serve", "--data-dir", str(session.data_dir)],
                             env=cli_env(ICESINK_SPARK_MASTER="local[1]"), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        wait_for(caught_up(session, "orders_lake", "orders"), what="the first process to commit")
        second = subprocess.Popen([sys.executable, "-c", TAKE_OVER, str(session.data_dir)], env=cli_env(),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert second.stdout.readline().split() == ["started", "2"]
            for i in range(2, 6):
                session.execute(f"INSERT INTO orders VALUES ({i}, 'n{i}')")
                time.sleep(0.5)
            wait_for(lambda: any(s == "failed" for s, _ in statuses(session, "orders_lake")), what="the fencing")
            wait_for(caught_up(session, "orders_lake", "orders"), what="the second process to catch up")
        finally:
            second.communicate("stop\n", timeout=120)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=120)
    errors = [e for s, e in statuses(session, "orders_lake") if s == "failed"]
    assert errors == ["fenced by newer sink version 2 (this process runs version 1); another engine writes this sink"]
    got = duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, name", "1")
    assert got == [(1, "a")] + [(i, f"n{i}") for i in range(2, 6)]
