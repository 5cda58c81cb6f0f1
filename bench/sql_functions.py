"""What Postgres's answers cost per row in SQLite, against SQLite's own (different) answers: each pair of
expressions over the same rows (a table of text, a numeric's text, a double and an integer, as the store holds them), with the
functions icesink registers in every store connection:

    .venv/bin/python bench/sql_functions.py [--rows 200000] [--rounds 5]

Prints, per pair, the best of --rounds for a `SELECT sum(length(…))` over every row (the expression computed once a
row), and the cost a row of icesink's over SQLite's. A figure, not a test.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from icesink.catalog.sqlite import add_functions  # noqa: E402

# (what, SQLite's own expression, icesink's, as sqlite_sql writes them)
PAIRS = [
    ("upper(s)", "upper(s)", "icesink_upper(s)"),
    ("lower(s)", "lower(s)", "icesink_lower(s)"),
    ("s ILIKE 'a%'", "lower(s) LIKE lower('a%')", "icesink_lower(s) LIKE icesink_lower('a%') ESCAPE '\\'"),
    ("replace(s, 'a', 'b')", "replace(s, 'a', 'b')", "icesink_replace(s, 'a', 'b')"),
    ("n::numeric(10,2)", "round(CAST(n AS REAL), 2)", "icesink_numeric(n, 10, 2)"),  # a stored numeric(p,2)'s
    ("n::numeric(10,1)", "round(CAST(n AS REAL), 1)", "icesink_numeric(n, 10, 1)"),  # digits cut
    ("f % 0.3", "f % 0.3", "icesink_mod(f, 0.3)"),
    # an integer cast, or an integer output of arithmetic, kept to the type's range: by a Python call each row (the
    # release before, for a cast), or by SQLite where the value is an integer in range
    ("i::int, by a call", "CAST(i AS INTEGER)", "icesink_integer(i, 'integer')"),
    ("i::int", "CAST(i AS INTEGER)", "CASE WHEN TYPEOF(i) = 'integer' AND i BETWEEN -2147483648 AND 2147483647 "
     "THEN i ELSE icesink_integer(i, 'integer') END"),
    ("i * 2 + 1 (an output)", "i * 2 + 1", "CASE WHEN TYPEOF((i * 2 + 1)) = 'integer' AND (i * 2 + 1) BETWEEN "
     "-2147483648 AND 2147483647 THEN (i * 2 + 1) ELSE icesink_integer((i * 2 + 1), 'integer') END"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    db = sqlite3.connect(":memory:")
    add_functions(db)
    db.execute("CREATE TABLE t (s TEXT, n TEXT, f REAL, i INTEGER)")
    db.execute(f"INSERT INTO t WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {args.rows}) "
               "SELECT 'Äpfel and apples ' || i, printf('%.2f', i / 7.0), i / 3.0, i FROM k")
    print(f"{args.rows:,} rows, best of {args.rounds}")
    for what, own, ours in PAIRS:
        times = []
        for expression in (own, ours):
            best = min(_timed(db, f"SELECT sum(length({expression})) FROM t") for _ in range(args.rounds))
            times.append(best)
        extra = (times[1] - times[0]) / args.rows * 1e6
        print(f"{what:22} SQLite's {times[0]:.3f}s  icesink's {times[1]:.3f}s  (+{extra:.2f} µs a row)", flush=True)


def _timed(db, sql: str) -> float:
    started = time.perf_counter()
    db.execute(sql).fetchall()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
