"""Kill `icesink serve` with SIGKILL at random moments and at the commit protocol's seams, over and over,
while changes keep coming: nothing is lost, nothing duplicated, no two commits cover the same changes."""
import json
import random
import signal
import threading
import time
from decimal import Decimal

import pytest

import icesink
from tests.conftest import kill_serve_repeatedly, rows, serve
from tests.readers import duckdb_rows, polars_rows, pyiceberg_rows
from tests.runtime import caught_up, iceberg_table, wait_for

pytestmark = pytest.mark.timeout(1200)
# at each seam once (whichever of the three sinks reaches it first) and twice at a random moment: a restarted serve
# commits its first batches 20-25 s after it starts, so a random moment falls between 12 s (starting) and 26 s
CRASH_POINTS = ["files-written", None, "committed", None]


class Writer(threading.Thread):
    """Random INSERT/UPDATE/DELETE on the engine table until stopped, from its own session."""

    def __init__(self, data_dir):
        super().__init__(daemon=True)
        self.data_dir, self.stopped, self.rng = data_dir, threading.Event(), random.Random(3)

    def run(self):
        with icesink.connect(self.data_dir) as session:
            live, next_id = [], 1
            while not self.stopped.is_set():
                if self.rng.random() < 0.5 or not live:
                    session.execute(f"INSERT INTO orders VALUES ({next_id}, 'n{next_id}', {self.rng.randint(1, 9999)})")
                    live.append(next_id)
                    next_id += 1
                elif self.rng.random() < 0.7:
                    session.execute(f"UPDATE orders SET amount = amount + 1 WHERE id = {self.rng.choice(live)}")
                else:
                    session.execute(f"DELETE FROM orders WHERE id = {live.pop(self.rng.randrange(len(live)))}")
                time.sleep(0.01)


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(session):
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE orders (id bigint NOT NULL, name text, amount numeric(10,2), PRIMARY KEY (id));
        CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK orders_log FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders_log')
          MODE APPEND WITH (COMMIT INTERVAL '1s');
        CREATE SINK orders_mor FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders_mor')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');""")
    writer = Writer(session.data_dir)
    writer.start()
    try:
        seams = kill_serve_repeatedly(session.data_dir, CRASH_POINTS, random.Random(5), (12, 26))
    finally:
        writer.stopped.set()
        writer.join()
    assert seams == 2  # every crash point was reached
    final = serve(session.data_dir)
    try:
        wait_for(caught_up(session, "orders_lake", "orders"), timeout=180, what="the upsert sink to catch up")
        wait_for(caught_up(session, "orders_log", "orders"), timeout=180, what="the append sink to catch up")
        wait_for(caught_up(session, "orders_mor", "orders"), timeout=180, what="the merge-on-read sink to catch up")
    finally:
        final.send_signal(signal.SIGTERM)
        assert final.wait(timeout=120) == 0  # a graceful stop

    expected = [(i, n, Decimal(a)) for i, n, a in rows(session, "SELECT id, name, amount FROM orders ORDER BY id")]
    assert len(expected) > 100
    upserted = iceberg_table(session, "orders_lake")
    assert duckdb_rows(upserted.metadata_location, "id, name, amount", "id") == expected
    merged = iceberg_table(session, "orders_mor")  # its key index and delete files survived the kills
    assert duckdb_rows(merged.metadata_location, "id, name, amount", "id") == expected
    assert pyiceberg_rows(merged, ["id", "name", "amount"]) == polars_rows(merged, ["id", "name", "amount"]) == expected
    log = duckdb_rows(iceberg_table(session, "orders_log").metadata_location, "id, name, amount, _mz_diff", "1")
    state = {}
    for id_, name, amount, diff in log:
        state[(id_, name, amount)] = state.get((id_, name, amount), 0) + diff
    assert all(n in (0, 1) for n in state.values())  # a duplicated change would show as 2 or -1
    assert sorted(k for k, n in state.items() if n) == expected

    for table in (upserted, iceberg_table(session, "orders_log"), merged):
        batches = [json.loads(s.summary.additional_properties["icesink.batch"])
                   for s in table.metadata.snapshots if "icesink.batch" in s.summary.additional_properties]
        ranges = sorted((b["lower"]["offset"], b["upper"]["offset"]) for b in batches)
        for (_, upper), (lower, _) in zip(ranges, ranges[1:]):
            assert lower >= upper, f"overlapping commits: {ranges}"
    statuses = rows(session, "SELECT DISTINCT status FROM mz_internal.mz_sink_status_history")
    assert ("failed",) not in statuses
