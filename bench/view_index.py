"""What a view's index costs the writes of its table, by the order of its expressions: seed 004's events in plain
SQLite (the store's settings: WAL, synchronous FULL, a 128 MiB cache; a trigger logging each old and new row as the
store's does), indexed on (user_id, the hour) or (the hour, user_id), or not indexed, each updated as
bench/views.py's writing client updates it (a range of ids moved to one hour and a new session):

    .venv/bin/python bench/view_index.py [--rows 10000000] [--rate 50000] [--rounds 6]

Prints, per round, each variant's seconds for one UPDATE (wall and CPU), the variants in turn. A figure, not a test.
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

VARIANTS = {"user first": "user_id, hour_of(event_timestamp)", "hour first": "hour_of(event_timestamp), user_id",
            "no index": None}


def hour_of(value):
    return None if value is None else value[:13] + ":00:00"


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.create_function("hour_of", 1, hour_of, deterministic=True)  # a Python function, as the store's date_trunc
    for pragma in ("journal_mode = WAL", "synchronous = FULL", "cache_size = -131072"):
        db.execute(f"PRAGMA {pragma}")
    return db


def fill(path: Path, rows: int, index: str | None) -> sqlite3.Connection:
    db = connect(path)
    db.execute("CREATE TABLE events (id INTEGER NOT NULL PRIMARY KEY, user_id INTEGER, session_id TEXT, "
               "event_timestamp TEXT) WITHOUT ROWID")
    db.execute(f"INSERT INTO events WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {rows}) "
               "SELECT n, (n * 7919) % 100000, 's' || (n % 50), datetime(1793491200 + (n * 104729) % 86400, "
               "'unixepoch') FROM s")
    if index is not None:
        db.execute(f"CREATE INDEX by_key ON events ({index})")
    db.execute("CREATE TABLE changes (offset INTEGER PRIMARY KEY AUTOINCREMENT, row TEXT)")
    logged = ", ".join(f"{{0}}.{c}" for c in ("id", "user_id", "session_id", "event_timestamp"))
    db.execute("CREATE TRIGGER logged AFTER UPDATE ON events BEGIN "
               f"INSERT INTO changes (row) VALUES (json_array({logged.format('old')})); "
               f"INSERT INTO changes (row) VALUES (json_array({logged.format('new')})); END")
    return db


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rate", type=int, default=50_000, help="events one UPDATE moves")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="icesink-bench-view-index-"))
    dbs = {}
    try:
        for name, index in VARIANTS.items():
            started = time.time()
            dbs[name] = fill(directory / f"{name.replace(' ', '_')}.db", args.rows, index)
            print(f"{name}: {args.rows:,} events loaded and indexed in {time.time() - started:.1f}s", flush=True)
        for round_ in range(args.rounds):
            first = 1 + round_ * 1_000_003 % args.rows
            shown = []
            for name, db in dbs.items():
                wall, cpu = time.time(), time.process_time()
                db.execute(f"UPDATE events SET session_id = 'u{round_}', event_timestamp = "
                           f"'2026-11-02 {round_ % 24:02d}:30:00' WHERE id >= {first} AND id < {first + args.rate}")
                shown.append(f"{name} {time.time() - wall:.2f}s ({time.process_time() - cpu:.2f}s CPU)")
            print(f"round {round_ + 1}, {args.rate:,} events moved: " + "; ".join(shown), flush=True)
    finally:
        for db in dbs.values():
            db.close()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
