"""A sink on a materialized view over a load generator, as the generator's history grows: whether a batch costs the
generator's changes since the last one, or all it has made since it started.

    .venv/bin/python bench/generated_views.py [--history 10000,100000] [--tick 10ms] [--seconds 30]
        [--view grouped|joined]
    .venv/bin/python bench/generated_views.py --tpch 0.1

For each history: an AUCTION source created AS OF that many ticks (three bids, an auction and two account changes a
tick), a view over it (`grouped`: each auction's bids, count and top amount; `joined`: the same from auctions joined
with their bids, with the item) and a sink on it (COMMIT INTERVAL 1 s, merge-on-read). Once the sink is live (its
first batch of fewer than 2,000 changes after the first), prints the batch times over --seconds (p50, p95; and over
the second half of them) and when the first commit came, from the scheduler's start. With --tpch SCALE: how long the first query that joins TPCH's
lineitem with a table takes (it brings lineitem's table of the store up to the snapshot), and the same query again.
A figure, not a test.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ICESINK_SECRET_STORE", "file")

import icesink  # noqa: E402
from bench.stats import Commits, percentile  # noqa: E402
from icesink.engine.scheduler import Scheduler  # noqa: E402
from icesink.engine.spark import get_spark  # noqa: E402

LIVE = 2_000  # changes of a batch past which the sink is still catching up with the history

VIEWS = {
    "grouped": """CREATE MATERIALIZED VIEW bid_stats AS
SELECT auction_id, count(*) AS bids, max(amount) AS top, max(bid_time) AS last_bid FROM bids GROUP BY auction_id;
CREATE SINK bid_stats_lake FROM bid_stats INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'auction', TABLE 'bid_stats')
  KEY (auction_id) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');""",
    "joined": """CREATE MATERIALIZED VIEW bid_stats AS
SELECT a.id AS auction, a.item, count(b.id) AS bids, max(b.amount) AS top FROM auctions a JOIN bids b
  ON b.auction_id = a.id GROUP BY a.id, a.item;
CREATE SINK bid_stats_lake FROM bid_stats INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'auction', TABLE 'bid_stats')
  KEY (auction, item) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');""",
}


def run(spark, history: int, tick: str, seconds: int, view: str) -> None:
    recorder = Commits()
    logging.getLogger("icesink.sink").addHandler(recorder)
    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-generated-"))
    session = icesink.connect(data_dir)
    try:
        session.execute(f"CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');\n"
                        f"CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '{tick}', AS OF {history}) "
                        f"FOR ALL TABLES;\n{VIEWS[view]}")
        scheduler = Scheduler(data_dir, session.executor.secret_value, lambda: spark)
        started = time.time()
        scheduler.start()
        try:
            while not recorder.batches:
                time.sleep(0.2)
            first = recorder.batches[0].at - started
            while not any(c.changes < LIVE for c in recorder.batches[1:]):
                time.sleep(0.2)
            live = time.time()
            time.sleep(seconds)
        finally:
            scheduler.stop()
        times = [c.seconds for c in recorder.batches if c.at > live]
        changes = [c.changes for c in recorder.batches if c.at > live]
        later = [c.seconds for c in recorder.batches if c.at > live + seconds / 2]
        print(f"AUCTION AS OF {history:,} ticks (tick {tick}), view {view}: first commit {first:.1f}s after the "
              f"scheduler started, live {live - started:.1f}s after; {len(times)} batches in {seconds}s: p50 "
              f"{statistics.median(times):.2f}s, p95 {percentile(times, 0.95):.2f}s, worst {max(times):.2f}s, "
              f"{statistics.median(changes):.0f} changes a batch (median); in the window's second half p50 "
              f"{statistics.median(later):.2f}s, p95 {percentile(later, 0.95):.2f}s", flush=True)
    finally:
        logging.getLogger("icesink.sink").removeHandler(recorder)
        session.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def tpch(scale: float) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-generated-"))
    session = icesink.connect(data_dir)
    try:
        session.execute(f"CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR {scale}) FOR ALL TABLES;\n"
                        "CREATE TABLE one (n bigint); INSERT INTO one VALUES (1);")
        query = "SELECT count(*), sum(l_quantity) FROM lineitem JOIN one ON n = 1"
        started = time.time()
        count = session.execute(query)[-1].rows[0][0]
        first = time.time() - started
        started = time.time()
        session.execute(query)
        print(f"TPCH scale {scale}: lineitem's {count:,} rows kept in the store by the first query that joins it "
              f"in {first:.1f}s ({count / first:,.0f} rows/s); the query again {time.time() - started:.2f}s",
              flush=True)
    finally:
        session.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--history", default="10000,100000", help="ticks the generator has made at the start")
    parser.add_argument("--tick", default="10ms")
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--view", choices=tuple(VIEWS), default="grouped")
    parser.add_argument("--tpch", type=float, help="time keeping TPCH's lineitem at this scale instead")
    args = parser.parse_args()
    if args.tpch:
        tpch(args.tpch)
        return
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("icesink.sink").setLevel(logging.INFO)
    spark = get_spark()
    for history in (int(h) for h in args.history.split(",")):
        run(spark, history, args.tick, args.seconds, args.view)


if __name__ == "__main__":
    main()
