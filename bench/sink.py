"""Sink throughput and freshness: LOAD GENERATOR KEY VALUE upserting into an Iceberg table of --keys rows.

    .venv/bin/python bench/sink.py --keys 1000000 --batch 100000 --interval 5s --seconds 120 [--catalog s3tables]

Prints upserts committed per second in steady state (after --warmup), p50/p95 freshness (a change made -> the
commit holding it, i.e. visible to readers), and batch latency from the first batch on. A figure, not a test.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ICESINK_SECRET_STORE", "file")

import icesink  # noqa: E402
from bench.stats import percentile  # noqa: E402
from icesink.catalog_connections import connector_for  # noqa: E402
from icesink.engine.scheduler import Scheduler  # noqa: E402
from icesink.engine.sources.generators import TICK_BITS  # noqa: E402
from icesink.engine.spark import get_spark  # noqa: E402

COMMIT_LINE = re.compile(r"""committed (\d+) changes up to \{["']offset["']: (\d+)\} in ([\d.]+)s""")


class Commits(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen: list[tuple[float, int, float, int]] = []  # (when, changes, seconds, upper offset)

    def emit(self, record):
        match = COMMIT_LINE.search(record.getMessage())
        if match:
            self.seen.append((time.time(), int(match.group(1)), float(match.group(3)), int(match.group(2))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=200_000, help="upserts per generator tick")
    parser.add_argument("--tick", default="1s")
    parser.add_argument("--interval", default="5s", help="COMMIT INTERVAL")
    parser.add_argument("--seconds", type=int, default=120, help="steady-state measuring time")
    parser.add_argument("--warmup", type=int, default=30, help="seconds after loading before measuring, for the "
                        "backlog the load left to drain")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--catalog", choices=("local", "s3tables"), default="local",
                        help="s3tables: SeaweedFS's S3 Tables endpoint and S3, started on 127.0.0.1 for the run")
    args = parser.parse_args()

    logging.basicConfig(level=logging.WARNING)
    commits = Commits()
    sink_log = logging.getLogger("icesink.sink")
    sink_log.setLevel(logging.INFO)
    sink_log.addHandler(commits)

    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-"))
    try:
        measure(args, data_dir, commits)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)  # the table's files and the sink's state


def measure(args, data_dir: Path, commits: Commits) -> None:
    session = icesink.connect(data_dir)
    spark = get_spark(args.master)
    if args.catalog == "s3tables":
        from tests.servers import SEAWEED_KEY, SEAWEED_SECRET, SeaweedFS

        seaweed = SeaweedFS(data_dir / "seaweedfs").start()
        session.execute(f"""
            CREATE SECRET s3_secret AS '{SEAWEED_SECRET}';
            CREATE CONNECTION s3 TO AWS (ENDPOINT '{seaweed.s3_endpoint}', REGION 'us-east-1',
                ACCESS KEY ID '{SEAWEED_KEY}', SECRET ACCESS KEY SECRET s3_secret);
            CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 's3tablesrest', URL '{seaweed.iceberg_url}',
                WAREHOUSE 's3://tables', AWS CONNECTION s3);""")
    else:
        session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local')")
    session.execute(f"""
        CREATE SOURCE kv FROM LOAD GENERATOR KEY VALUE (KEYS {args.keys}, BATCH SIZE {args.batch},
            TICK INTERVAL '{args.tick}');
        CREATE SINK kv_lake FROM kv INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'bench', TABLE 'kv')
            KEY (key) MODE UPSERT WITH (COMMIT INTERVAL '{args.interval}');""")
    scheduler = Scheduler(data_dir, session.executor.secret_value, lambda: spark)
    started = time.time()
    scheduler.start()
    source = session.catalog.get("kv")
    tick_ms = source.descriptor.settings.tick_interval_ms or 1000
    start_ms = int(datetime.fromisoformat(source.created_at).timestamp() * 1000)
    catalog = connector_for(session.catalog.get("lake"), session.executor.secret_value,
                            session.catalog).load_catalog()

    def committed_rows():
        try:
            snapshot = catalog.load_table(("bench", "kv")).current_snapshot()
        except Exception:
            return 0
        return int(snapshot.summary["total-records"]) if snapshot else 0

    print(f"loading {args.keys:,} keys ({args.batch:,} upserts per {args.tick} tick, commit interval "
          f"{args.interval}) ...", flush=True)
    while committed_rows() < args.keys:
        time.sleep(1)
    loaded_at = time.time()
    print(f"table holds {args.keys:,} rows after {loaded_at - started:.0f}s", flush=True)
    time.sleep(args.warmup)
    first_steady = len(commits.seen)
    time.sleep(args.seconds)
    scheduler.stop()
    if args.catalog == "s3tables":
        seaweed.stop(graceful=False)

    steady = commits.seen[first_steady:]
    if len(steady) < 2:
        print("too few commits in the measuring window; give it more --seconds")
        return
    changes = sum(n for _, n, _, _ in steady[1:])
    elapsed = steady[-1][0] - steady[0][0]
    print(f"steady state: {len(steady)} commits, {changes / elapsed:,.0f} upserted rows/s committed "
          f"(changes per commit: median {statistics.median(n for _, n, _, _ in steady):,.0f})")
    latencies = [s for _, _, s, _ in commits.seen]  # from the first commit: latency against commit count
    print(f"batch latency (read, merge, write, commit): first {latencies[0]:.2f}s, "
          f"median {statistics.median(latencies):.2f}s, last {latencies[-1]:.2f}s, "
          f"p95 {percentile(latencies, 0.95):.2f}s over {len(latencies)} commits")

    # A tick's changes become visible with the commit whose range holds it. The commit's time is when the sink
    # logged it, a little after the snapshot landed, so these figures err on the slow side. (Snapshot
    # timestamps would be exact, but expiry keeps only the newest few.)
    freshness = []
    for (_, _, _, lower), (when, _, _, upper) in zip(commits.seen[first_steady - 1:], commits.seen[first_steady:]):
        for tick in range((lower >> TICK_BITS) + 1, (upper >> TICK_BITS) + 1):
            freshness.append(when - (start_ms + (tick - 1) * tick_ms) / 1000)
    if freshness:
        print(f"freshness (change made -> visible): p50 {percentile(freshness, 0.5):.1f}s, "
              f"p95 {percentile(freshness, 0.95):.1f}s over {len(freshness)} ticks")


if __name__ == "__main__":
    main()
