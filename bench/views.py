"""Seed 004's `user_activity_summary` kept in Iceberg by a sink while its input receives changes, through the whole
engine (statements, the table's change log, the scheduler, Spark, the view's recomputation, the committer):

    .venv/bin/python bench/views.py [--rows 10000000,1000000] [--rate 50000] [--seconds 60] [--users 100000]
        [--write-mode merge-on-read|copy-on-write] [--view summary|joined|latest] [--changes moves|inserts]

For each input size: fills `user_events` (`INSERT … SELECT … FROM generate_series`: --users users, timestamps over
a day: 100,000 users make 10M events about 4 to a group of user and hour, and 1M events about 1; `--users
1000000,100000` keeps both at about 1), creates the view and a sink on it (COMMIT INTERVAL 5 s), waits for the first batch (the whole view), then
a writing client (a process of its own) changes --rate events once a second for --seconds: `moves` updates a
range of ids, moving each event to another hour and session (two groups touched per change, and an entry of the
view's index moved from anywhere in it); `inserts` adds new events, a second of the next day's time each
statement, of users all over (the groups of that hour, which grow as the run goes on). Prints the changes a second offered (what
the store took) and committed (end to end, from the client's first statement to the commit that covers its last,
and while the client wrote, between the commits in that time), the batch times after the first (p50, p95), freshness (from an UPDATE's commit in
the table to the sink's commit that covers it: p50, p95), a batch's time per change, and the writing client's
statement times and CPU. Each input after the first
receives the changes a second the first one's store took, and its batch times, against the first's, say whether
the cost follows the changes or the input.
A figure, not a test.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
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


SETUP = """
CREATE TABLE user_events (id bigint NOT NULL, user_id bigint, session_id text, event_timestamp timestamp,
  PRIMARY KEY (id));
INSERT INTO user_events SELECT n, (n * 7919) % {users}, 's' || (n % 50),
  datetime(1793491200 + (n * 104729) % 86400, 'unixepoch') FROM generate_series(1, {rows}) AS n;
{view}
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE SINK user_activity_iceberg FROM user_activity_summary INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'analytics', TABLE 'user_activity') KEY ({key}) MODE UPSERT WITH (COMMIT INTERVAL '5s', WRITE MODE '{mode}');
"""


VIEWS = {
    "summary": """CREATE MATERIALIZED VIEW user_activity_summary AS
SELECT user_id, DATE_TRUNC('hour', event_timestamp) AS hour, COUNT(*) AS event_count,
       COUNT(DISTINCT session_id) AS session_count, MAX(event_timestamp) AS last_event_time
FROM user_events GROUP BY user_id, DATE_TRUNC('hour', event_timestamp);""",
    # the same groups, each with its user's region: a join, its key from the events
    "joined": """CREATE TABLE users (id bigint NOT NULL, region text, PRIMARY KEY (id));
INSERT INTO users SELECT n, 'r' || (n % 10) FROM generate_series(0, {users} - 1) AS n;
CREATE MATERIALIZED VIEW user_activity_summary AS
SELECT e.user_id, DATE_TRUNC('hour', e.event_timestamp) AS hour, MAX(u.region) AS region, COUNT(*) AS event_count,
       COUNT(DISTINCT e.session_id) AS session_count, MAX(e.event_timestamp) AS last_event_time
FROM user_events e JOIN users u ON u.id = e.user_id GROUP BY e.user_id, DATE_TRUNC('hour', e.event_timestamp);""",
    # each user's newest event (Materialize's DISTINCT ON idiom): one row per user, its events ranked again
    "latest": """CREATE MATERIALIZED VIEW user_activity_summary AS
SELECT DISTINCT ON (user_id) user_id, id, session_id, event_timestamp AS last_event_time
FROM user_events ORDER BY user_id, event_timestamp DESC, id;""",
}
KEYS = {"summary": "user_id, hour", "joined": "user_id, hour", "latest": "user_id"}


def run(spark, rows: int, users: int, rate: int, seconds: int, mode: str,
        view: str = "summary", changes: str = "moves") -> tuple[float, float, int]:
    """One input size; returns the median batch time, the median time a batch takes per change, and the changes a
    second the store took."""
    recorder = Commits()
    logging.getLogger("icesink.sink").addHandler(recorder)
    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-views-"))
    session = icesink.connect(data_dir)
    try:
        started = time.time()
        session.execute(SETUP.format(rows=rows, users=users, mode=mode, view=VIEWS[view].format(users=users),
                                     key=KEYS[view]))
        print(f"{rows:,} events of {users:,} users loaded in {time.time() - started:.1f}s", flush=True)
        scheduler = Scheduler(data_dir, session.executor.secret_value, lambda: spark)
        started = time.time()
        scheduler.start()
        try:
            while not recorder.batches:
                time.sleep(0.5)
            first_commit = recorder.batches[0].at - started
            groups = session.execute("SELECT count(*) FROM user_activity_summary")[-1].rows[0][0]
            print(f"first batch (index built, every group written: {groups:,} rows): committed "
                  f"{first_commit:.1f}s after the scheduler started", flush=True)
            # the writing client is a process of its own, as an application's would be
            writer = subprocess.run([sys.executable, __file__, "--write", str(data_dir), str(rows), str(rate),
                                     str(seconds), changes, str(users)], capture_output=True, text=True,
                                    check=True)
            written = [json.loads(line) for line in writer.stdout.splitlines()]
            made = [tuple(line[:3]) for line in written]
            statements = [line[3] for line in written]
            cpu = [line[4] for line in written]
            offered = sum(n for _, _, n in made) / (made[-1][0] - made[0][0] + 1)
            deadline = time.time() + 300
            while recorder.batches[-1].offset < made[-1][1] and time.time() < deadline:
                time.sleep(0.5)
        finally:
            scheduler.stop()
        batches = recorder.batches[1:]
        fresh = []
        for at, offset, _ in made:
            covering = next((c.at for c in batches if c.offset >= offset), None)
            if covering is not None:
                fresh.append(covering - at)
        caught_up = next((c.at for c in batches if c.offset >= made[-1][1]), None)
        committed = sum(n for _, _, n in made) / (caught_up - made[0][0] + 1) if caught_up else 0
        times = [c.seconds for c in batches]
        median = statistics.median(times)
        # a moved event is two entries of the table's log (its old row and its new), a new one is one
        entries = 2 if changes == "moves" else 1
        # while the client wrote: the changes the commits between its first statement and its last covered
        during = [c for c in batches if made[0][0] <= c.at <= made[-1][0]]
        steady = ((during[-1].offset - during[0].offset) / entries / (during[-1].at - during[0].at)
                  if len(during) > 1 else 0)
        per_change = statistics.median(c.seconds / ((c.offset - b.offset) / entries) * 1e6
                                       for b, c in zip(recorder.batches, batches) if c.offset > b.offset)
        slowest = sorted(sorted(range(len(statements)), key=statements.__getitem__)[-5:])
        print(f"view {view}, input {rows:,} rows, {mode}, {changes}: {rate:,} changes/s offered for {seconds}s ({offered:,.0f}/s measured), "
              f"{committed:,.0f}/s committed end to end, {steady:,.0f}/s while it wrote; {len(times)} batches "
              f"after the first: p50 {median:.2f}s, "
              f"p95 {percentile(times, 0.95):.2f}s, worst {max(times):.2f}s; freshness p50 "
              f"{statistics.median(fresh):.1f}s, p95 {percentile(fresh, 0.95):.1f}s "
              f"({len(fresh)} of {len(made)} updates committed); a batch takes {per_change:.1f} µs a change "
              f"(median over the batches); the writing client's statements took p50 "
              f"{statistics.median(statements):.2f}s, p95 {percentile(statements, 0.95):.2f}s (of CPU p50 "
              f"{statistics.median(cpu):.2f}s; slowest, by when they started: "
              f"{', '.join(f'{statements[i]:.2f}s at {made[i][0] - made[0][0]:.0f}s' for i in slowest)})",
              flush=True)
        return median, per_change, int(offered)
    finally:
        logging.getLogger("icesink.sink").removeHandler(recorder)
        session.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def move(statement: int, first: int, last: int) -> str:
    """The writing client's `statement`th move: events `first` to `last` (not included) to another hour and session
    each."""
    return (f"UPDATE user_events SET session_id = 'u{statement}', event_timestamp = "
            f"'2026-11-02 {statement % 24:02d}:30:00' WHERE id >= {first} AND id < {last}")


def write(data_dir: str, rows: int, rate: int, seconds: int, changes: str, users: int) -> None:
    """The writing client: once a second, `rate` events move to another hour and session, or `rate` new events come;
    prints, per statement, the time it committed, the table's offset then, the rows it changed, its seconds and
    the seconds of CPU the client spent on it."""
    with icesink.connect(data_dir) as session:
        table_id = session.catalog.get("user_events").id
        ends, statement = time.time() + seconds, 0
        while time.time() < ends:
            tick, cpu = time.time(), time.process_time()
            if changes == "moves":
                first = 1 + (statement * rate) % rows
                session.execute(move(statement, first, first + rate))
                made = min(rate, rows + 1 - first)
            else:
                first = rows + 1 + statement * rate
                session.execute(f"INSERT INTO user_events SELECT n, (n * 7919) % {users}, 's' || (n % 50), "
                                f"datetime({1793577600 + statement}, 'unixepoch') "
                                f"FROM generate_series({first}, {first + rate - 1}) AS n")
                made = rate
            print(json.dumps([time.time(), session.tables.latest_offset(table_id), made, time.time() - tick,
                              time.process_time() - cpu]), flush=True)
            statement += 1
            time.sleep(max(0.0, 1 - (time.time() - tick)))


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        data_dir, rows, rate, seconds, changes, users = sys.argv[2:8]
        write(data_dir, int(rows), int(rate), int(seconds), changes, int(users))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="10000000,1000000")
    parser.add_argument("--users", default="100000",
                        help="users of each input size, in --rows's order (the last for the rest): the same users "
                             "make a larger input's groups larger, and users in proportion keep their sizes")
    parser.add_argument("--rate", type=int, default=50_000, help="events updated a second")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--write-mode", choices=("merge-on-read", "copy-on-write"), default="merge-on-read",
                        help="the view's groups change all over its key space, which merge-on-read writes best")
    parser.add_argument("--view", choices=tuple(VIEWS), default="summary",
                        help="seed 004's view, the same joined with a users table for each group's region, or each "
                             "user's newest event (DISTINCT ON)")
    parser.add_argument("--changes", choices=("moves", "inserts"), default="moves",
                        help="events moved to another hour and session, or new events")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("icesink.sink").setLevel(logging.INFO)
    spark = get_spark()
    sizes = [int(r) for r in args.rows.split(",")]
    users = [int(u) for u in args.users.split(",")]
    users += users[-1:] * (len(sizes) - len(users))
    first = run(spark, sizes[0], users[0], args.rate, args.seconds, args.write_mode, args.view, args.changes)
    for rows, each in zip(sizes[1:], users[1:]):  # the same changes a second as the first took, so batches compare
        other = run(spark, rows, each, first[2], args.seconds, args.write_mode, args.view, args.changes)
        print(f"over {sizes[0]:,} input rows against {rows:,}, at {first[2]:,} changes/s: batch p50 "
              f"{first[0] / other[0]:.2f}x, time per change {first[1] / other[1]:.2f}x (target ≤ 1.5x: the cost "
              "follows the changes)")


if __name__ == "__main__":
    main()
