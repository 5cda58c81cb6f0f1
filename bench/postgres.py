"""Postgres source into an Iceberg sink (local catalog), against a PostgreSQL 15 started on 127.0.0.1 for the run:

    .venv/bin/python bench/postgres.py --rows 1000000 --seconds 60 [--interval 5s] [--write-mode merge-on-read] [--no-sink]
        [--rate EVENTS_PER_SECOND] [--backlog SECONDS] [--ceiling SECONDS]

Prints, in one run: the raw `COPY … TO STDOUT` speed of a --rows, 4-column table (read by psql, and by psycopg);
the initial copy (rows/s) to Parquet files, to the Iceberg table, and into icesink's store, after which changes are
followed; sustained change events/s end to end (mixed inserts, updates and deletes on random keys over the whole key
space, committed upstream as fast as two clients can, or at --rate, until Iceberg holds the last one); p50/p95
freshness (an upstream commit -> visible in Iceberg), and peak memory of icesink's processes (driver and Spark).
With --no-sink, no sink runs: what icesink's store alone takes.

--ceiling first measures what the 2 cores allow whatever the consumer: the same clients for that many seconds with
the slot read by `pg_recvlogical` (Postgres's own C client, writing to /dev/null) instead of icesink, and the cores
Postgres, the clients and it take. --backlog then stops icesink after the live run, lets the clients change rows
unpaced for that many seconds with nothing reading the slot, starts icesink again and times how fast it catches up:
the rate icesink itself takes changes at, with Postgres only decoding its WAL meanwhile. A figure, not a test.
"""
from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ICESINK_SECRET_STORE", "file")

import icesink  # noqa: E402
from bench.sink import Commits  # noqa: E402
from bench.stats import cpu_seconds, percentile, process_tree  # noqa: E402
from icesink.catalog_connections import connector_for  # noqa: E402
from icesink.engine.ingest.pgoutput import lsn_int  # noqa: E402
from icesink.engine.scheduler import Scheduler  # noqa: E402
from icesink.engine.spark import get_spark  # noqa: E402
from tests.servers import PG_BIN, Postgres  # noqa: E402

PASSWORD = "bench-pw"
SPAWN = multiprocessing.get_context("spawn")  # not forked from a process that runs Spark's threads
CHANGES_PER_TRANSACTION = 500


def server_cpu(server) -> dict[int, float]:
    """CPU seconds of the cluster's processes: its postmaster and every backend, walsender and helper it forked."""
    postmaster = int((server.directory / "data" / "postmaster.pid").read_text().split()[0])
    return cpu_seconds(process_tree(postmaster))


def cores(before: dict[int, float], after: dict[int, float], elapsed: float) -> float:
    """The cores processes took between two readings; one started meanwhile counts from 0."""
    return sum(seconds - before.get(pid, 0) for pid, seconds in after.items()) / elapsed


class Memory(threading.Thread):
    """The peak of the summed resident memory of this process and its children (Spark's JVM, Python workers)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self.stopped = 0, threading.Event()

    def run(self):
        while not self.stopped.wait(0.5):
            total = 0
            for pid in process_tree(os.getpid()):
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1]) * 1024
                except OSError:
                    pass
            self.peak = max(self.peak, total)


class Changes(SPAWN.Process):
    """Mixed transactions on random keys over the whole key space until stopped; a process of its own, so that the
    clients do not share icesink's interpreter (and its lock) as they would as threads."""

    def __init__(self, server: Postgres, rows: int, seed: int, first_new: int, share: tuple[int, int],
                 per_second: float):
        super().__init__(daemon=True)
        self.per_second = per_second  # 0: as fast as it can
        self.connection = {"host": str(server.directory), "port": server.port, "user": "postgres"}
        self.rows, self.seed, self.first_new = rows, seed, first_new
        self.share = share  # (k, n): this client changes the keys k mod n, so that clients never deadlock
        self.counted, self.stopped = SPAWN.Value("q", 0), SPAWN.Event()

    @property
    def events(self) -> int:
        return self.counted.value

    def run(self):
        import psycopg

        rng, next_id, made, started = random.Random(self.seed), self.first_new, 0, time.monotonic()
        with psycopg.connect(**self.connection, autocommit=True) as db:
            while not self.stopped.is_set():
                if self.per_second and made > (time.monotonic() - started) * self.per_second:
                    time.sleep(made / self.per_second - (time.monotonic() - started))
                    continue
                updates, deletes, inserts = [], [], []
                for _ in range(CHANGES_PER_TRANSACTION):
                    roll = rng.random()
                    key = rng.randrange(self.share[0], self.rows + 1, self.share[1]) or self.share[1]
                    if roll < 0.5:
                        updates.append(key)
                    elif roll < 0.75:
                        deletes.append(key)
                    else:
                        inserts.append(next_id)
                        next_id += 1
                updates, deletes = sorted(set(updates) - set(deletes)), sorted(set(deletes))
                with db.transaction():  # events: the rows changed (a key deleted before is not deleted again)
                    events = db.execute("UPDATE t SET a = a + 1 WHERE id = ANY(%s)", (updates,)).rowcount
                    events += db.execute("DELETE FROM t WHERE id = ANY(%s)", (deletes,)).rowcount
                    events += db.execute("INSERT INTO t SELECT n, 0, 'new', now() FROM unnest(%s::bigint[]) n",
                                         (inserts,)).rowcount
                made += events
                with self.counted.get_lock():
                    self.counted.value += events


def ceiling(server: Postgres, rows: int, seconds: int) -> None:
    """The clients unpaced, with a slot read by pg_recvlogical (C, output to /dev/null): the most change events/s
    these cores give a consumer that costs almost nothing, and who takes the cores."""
    with server.admin() as db:
        db.execute("SELECT pg_create_logical_replication_slot('ceiling', 'pgoutput')")
    receiver = subprocess.Popen([str(PG_BIN / "pg_recvlogical"), "-h", str(server.directory), "-p", str(server.port),
                                 "-U", "postgres", "-d", "postgres", "-S", "ceiling", "--start", "-o",
                                 "proto_version=1", "-o", "publication_names=bench", "-f", "/dev/null", "-F", "1"],
                                user=server.user)
    clients = [Changes(server, rows, seed, rows + 1 + (seed + 2) * 100_000_000, (seed - 1, 2), 0) for seed in (1, 2)]
    for client in clients:
        client.start()
    time.sleep(2)  # past the clients' start
    before = (sum(c.events for c in clients), time.time(), server_cpu(server), cpu_seconds(c.pid for c in clients),
              cpu_seconds([receiver.pid]))
    time.sleep(seconds)
    after = (sum(c.events for c in clients), time.time(), server_cpu(server), cpu_seconds(c.pid for c in clients),
             cpu_seconds([receiver.pid]))
    for client in clients:
        client.stopped.set()
    for client in clients:
        client.join()
    elapsed = after[1] - before[1]
    with server.admin() as db:
        behind = db.execute("SELECT pg_current_wal_lsn() - confirmed_flush_lsn FROM pg_replication_slots "
                            "WHERE slot_name = 'ceiling'").fetchone()[0]
    receiver.terminate()
    receiver.wait()
    with server.admin() as db:
        db.execute("SELECT pg_drop_replication_slot('ceiling')")
        db.execute("VACUUM t")
    print(f"ceiling: {(after[0] - before[0]) / elapsed:,.0f} events/s from two unpaced clients with the slot read "
          f"by pg_recvlogical ({int(behind) >> 20} MiB behind at the end); cores: Postgres "
          f"{cores(before[2], after[2], elapsed):.2f}, the clients {cores(before[3], after[3], elapsed):.2f}, "
          f"pg_recvlogical {cores(before[4], after[4], elapsed):.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=int, default=60, help="how long changes are made")
    parser.add_argument("--interval", default="5s", help="COMMIT INTERVAL")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--write-mode", choices=("copy-on-write", "merge-on-read"), default="copy-on-write",
                        help="the sink's WRITE MODE")
    parser.add_argument("--no-sink", action="store_true",
                        help="no sink: how fast icesink's store takes changes with the cores to itself")
    parser.add_argument("--rate", type=float, default=0,
                        help="change events offered per second (both clients together); 0: as fast as they can")
    parser.add_argument("--backlog", type=int, default=0,
                        help="then stop icesink, make changes unpaced for this many seconds, and time its catch-up")
    parser.add_argument("--ceiling", type=int, default=0,
                        help="first, this many seconds of the clients with pg_recvlogical reading the slot")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    commits = Commits()
    sink_log = logging.getLogger("icesink.sink")
    sink_log.setLevel(logging.INFO)
    sink_log.addHandler(commits)

    memory = Memory()
    memory.start()
    server = Postgres(max_wal_size="4GB").start()
    with server.admin() as db:
        db.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{PASSWORD}'")
        db.execute("CREATE TABLE t (id bigint PRIMARY KEY, a int NOT NULL, b text, c timestamptz)")
        db.execute("INSERT INTO t SELECT n, n %% 1000, 'row ' || n, now() FROM generate_series(1, %s) n",
                   (args.rows,))
        db.execute("INSERT INTO t VALUES (0, 0, '0', now())")  # the freshness marker
        db.execute("VACUUM ANALYZE t")
        db.execute("GRANT SELECT ON t TO repl; CREATE PUBLICATION bench FOR TABLE t")
        started = time.time()
        with db.cursor().copy("COPY t TO STDOUT") as copy:
            while copy.read():
                pass
        by_psycopg = (args.rows + 1) / (time.time() - started)
    # psql reads the rows in C: the server's own speed, which the copy is measured against
    started = time.time()
    subprocess.run([str(PG_BIN / "psql"), "-h", str(server.directory), "-p", str(server.port), "-U", "postgres",
                    "-c", "COPY t TO STDOUT"], stdout=subprocess.DEVNULL, check=True)
    raw = (args.rows + 1) / (time.time() - started)
    print(f"raw COPY t TO STDOUT ({args.rows:,} rows, 4 columns): {raw:,.0f} rows/s read by psql, "
          f"{by_psycopg:,.0f} rows/s by psycopg's Copy.read()", flush=True)

    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-"))
    session = icesink.connect(data_dir)
    spark = get_spark(args.master)
    session.execute(f"""CREATE SECRET pg_pass AS '{PASSWORD}';
        CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {server.port}, USER 'repl', PASSWORD SECRET pg_pass);
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SOURCE src FROM POSTGRES CONNECTION pg (PUBLICATION 'bench') FOR TABLES (t);""")
    if not args.no_sink:
        session.execute(f"""CREATE SINK t_lake FROM t INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'bench', TABLE 't')
          KEY (id) ENFORCED ENVELOPE UPSERT WITH (COMMIT INTERVAL '{args.interval}', WRITE MODE '{args.write_mode}');""")
    catalog = connector_for(session.catalog.get("lake"), session.executor.secret_value,
                            session.catalog).load_catalog()

    def iceberg_table():
        try:
            return catalog.load_table(("bench", "t"))
        except Exception:
            return None

    def committed_rows() -> int:
        table = iceberg_table()
        snapshot = table.current_snapshot() if table is not None else None
        return int(snapshot.summary["total-records"]) if snapshot else 0

    def held() -> int:
        found = session.execute("SELECT offset_committed FROM mz_internal.mz_source_statistics st "
                                "JOIN mz_sources s ON s.id = st.id WHERE s.name = 'src'")[0].rows
        return found[0][0] if found else 0

    def staged() -> int:
        found = session.execute("SELECT snapshot_records_staged FROM mz_internal.mz_source_statistics st "
                                "JOIN mz_sources s ON s.id = st.id WHERE s.name = 'src'")[0].rows
        return found[0][0] if found else 0

    scheduler = Scheduler(data_dir, session.executor.secret_value, lambda: spark)
    started = time.time()
    scheduler.start()
    def running() -> bool:
        return session.execute("SELECT st.status FROM mz_sources s JOIN mz_internal.mz_source_statuses st "
                               "ON s.id = st.id WHERE s.name = 'src'")[0].rows == [("running",)]

    copied_at = visible_at = running_at = None
    while None in (copied_at, visible_at, running_at):
        now = time.time()
        copied_at = copied_at or (now if staged() >= args.rows + 1 else None)
        visible_at = visible_at or (now if args.no_sink or committed_rows() >= args.rows + 1 else None)
        running_at = running_at or (now if running() else None)
        time.sleep(0.2)

    def rate(at: float) -> str:
        return f"{(args.rows + 1) / (at - started):,.0f} rows/s ({at - started:.1f}s, " \
               f"{100 * (args.rows + 1) / (at - started) / raw:.0f}% of raw COPY)"
    visible = "no sink" if args.no_sink else rate(visible_at)
    first_batch = "" if args.no_sink or not commits.seen else \
        f" (its first batch, every row, took {commits.seen[0][2]:.1f}s of that)"
    print(f"initial copy to Parquet files: {rate(copied_at)}; all rows visible in the Iceberg table: "
          f"{visible}{first_batch}; rows in icesink's store, changes followed from then on: {rate(running_at)}",
          flush=True)
    first_change_batch = len(commits.seen)

    markers: list[float] = []  # the marker row's values, each a commit time upstream

    def mark(stop: threading.Event):
        with server.admin() as db:
            while not stop.wait(0.25):
                at = time.time()
                db.execute("UPDATE t SET b = %s WHERE id = 0", (repr(at),))
                markers.append(at)

    from pyiceberg.expressions import EqualTo

    def visible_marker() -> float:
        table = iceberg_table()
        found = table.scan(row_filter=EqualTo("id", 0), selected_fields=("b",)).to_arrow()["b"].to_pylist()
        return float(found[0]) if found and found[0] != "0" else 0.0

    writers = [Changes(server, args.rows, seed, args.rows + 1 + seed * 100_000_000, (seed - 1, 2), args.rate / 2)
               for seed in (1, 2)]
    stop_marking = threading.Event()
    marking = threading.Thread(target=mark, args=(stop_marking,), daemon=True)
    changes_started = time.time()
    for w in writers:
        w.start()
    marking.start()
    freshness, last_seen, last_snapshot = [], 0.0, None
    ingested_at = None  # when icesink's store held every change made upstream
    deadline = changes_started + args.seconds
    stopped_at = None
    while True:
        now = time.time()
        if stopped_at is None and now >= deadline:
            for w in writers:
                w.stopped.set()
            for w in writers:
                w.join()
            stop_marking.set()
            marking.join()
            stopped_at = time.time()
            with server.admin() as db:
                wal_at_stop = lsn_int(db.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
        if stopped_at is not None and ingested_at is None and held() >= wal_at_stop:
            ingested_at = time.time()
        if args.no_sink:  # nothing reaches Iceberg: the store is all there is to wait for
            if ingested_at is not None:
                break
            time.sleep(0.1)
            continue
        table = iceberg_table()
        snapshot = table.current_snapshot().snapshot_id if table is not None else None
        if snapshot != last_snapshot:
            seen_at = time.time()  # visible from here on: reading the marker below takes 0.2-0.5 s of its own
            last_snapshot = snapshot
            seen = visible_marker()
            freshness += [(m, seen_at - m) for m in markers if last_seen < m <= seen]
            last_seen = max(last_seen, seen)
            if stopped_at is not None and markers and last_seen >= markers[-1]:
                break
        time.sleep(0.1)
    caught_up = time.time()
    events = sum(w.events for w in writers)
    scheduler.stop()
    memory.stopped.set()
    memory.join()
    print(f"changes: {events:,} events made upstream in {stopped_at - changes_started:.0f}s "
          f"({events / (stopped_at - changes_started):,.0f}/s offered by two clients"
          f"{f', paced to {args.rate:,.0f}/s' if args.rate else ''}); Iceberg held the last one "
          f"{caught_up - stopped_at:.1f}s after they stopped: {events / (caught_up - changes_started):,.0f} "
          f"events/s end to end (icesink's store held them all {(ingested_at or caught_up) - stopped_at:.1f}s "
          f"after they stopped: {events / ((ingested_at or caught_up) - changes_started):,.0f} events/s ingested)",
          flush=True)
    if not args.no_sink:
        late = [f for m, f in freshness if m >= changes_started + args.seconds / 2]  # past the copy's wake
        freshness = [f for _, f in freshness]
        print(f"freshness (upstream commit -> visible in Iceberg): p50 {percentile(freshness, 0.5):.1f}s, "
              f"p95 {percentile(freshness, 0.95):.1f}s over {len(freshness)} markers; in the run's second half, "
              f"p50 {percentile(late, 0.5):.1f}s, p95 {percentile(late, 0.95):.1f}s")
        batches = [seconds for _, _, seconds, _ in commits.seen[first_change_batch:]]
        if batches:
            print(f"batches of changes (read, write, commit): p50 {percentile(batches, 0.5):.2f}s, "
                  f"p95 {percentile(batches, 0.95):.2f}s over {len(batches)}", flush=True)
    print(f"peak memory of icesink's processes (driver, Spark JVM, workers): {memory.peak / 2**20:,.0f} MiB",
          flush=True)
    if args.backlog:
        backlog(args, server, data_dir, session, spark, held, visible_marker, markers)
    if args.ceiling:  # last: its changes bloat the table
        ceiling(server, args.rows, args.ceiling)
    server.stop()
    shutil.rmtree(data_dir, ignore_errors=True)  # gigabytes at 10M rows


def backlog(args, server: Postgres, data_dir: Path, session, spark, held, visible_marker, markers) -> None:
    """Changes made while icesink is stopped, then the time it takes to hold them (in its store, and in Iceberg)."""
    clients = [Changes(server, args.rows, seed, args.rows + 1 + (seed + 4) * 100_000_000, (seed - 1, 2), 0)
               for seed in (1, 2)]
    for client in clients:
        client.start()
    time.sleep(args.backlog)
    for client in clients:
        client.stopped.set()
    for client in clients:
        client.join()
    events = sum(c.events for c in clients)
    with server.admin() as db:
        marker = time.time()
        db.execute("UPDATE t SET b = %s WHERE id = 0", (repr(marker),))
        markers.append(marker)
        wal = lsn_int(db.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])
        behind = db.execute("SELECT pg_current_wal_lsn() - confirmed_flush_lsn FROM pg_replication_slots "
                            "WHERE slot_name LIKE 'icesink%'").fetchone()[0]
    started, postgres_cpu = time.time(), server_cpu(server)
    scheduler = Scheduler(data_dir, session.executor.secret_value, lambda: spark)
    scheduler.start()
    stored_at = visible_at = None
    while stored_at is None or (visible_at is None and not args.no_sink):
        if stored_at is None and held() >= wal:
            stored_at, postgres_cpu = time.time(), cores(postgres_cpu, server_cpu(server), time.time() - started)
        if visible_at is None and not args.no_sink and visible_marker() >= marker:
            visible_at = time.time()
        time.sleep(0.1)
    scheduler.stop()
    took = stored_at - started
    visible = "" if args.no_sink else \
        f"; Iceberg held them {visible_at - started:.1f}s after: {events / (visible_at - started):,.0f} events/s"
    print(f"backlog: {events:,} events made in {args.backlog}s with icesink stopped ({int(behind) >> 20} MiB of WAL "
          f"behind its slot); icesink's store held them {took:.1f}s after it started again: {events / took:,.0f} "
          f"events/s (Postgres meanwhile {postgres_cpu:.2f} cores){visible}", flush=True)


if __name__ == "__main__":
    main()
