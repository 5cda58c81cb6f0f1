"""Bulk loading into an engine table: a large INSERT … VALUES, COPY FROM CSV and COPY FROM Parquet, INSERT … SELECT
from generate_series, each in a fresh
process so its peak memory is its own; and how fast an error at the end of the large INSERT is reported.

    .venv/bin/python bench/bulk.py [--rows 250000]

Prints figures; it is not a test. With the default 250,000 rows the INSERT statement is about 20 MB.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ("CREATE TABLE events (id bigint PRIMARY KEY, name text, amount numeric(12,2), happened timestamptz, "
         "note text)")
NOTE = "a note long enough to make each row about eighty bytes"

CHILD = textwrap.dedent("""
    import json, os, resource, sys, time
    sys.path.insert(0, {root!r})
    os.environ["ICESINK_SECRET_STORE"] = "file"
    import icesink
    kind, data_dir, payload = sys.argv[1:4]
    session = icesink.connect(data_dir)
    session.execute({table!r})
    sql = open(payload).read() if kind in ("insert", "insert-error") else payload
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    try:
        session.execute(sql)
        outcome = "ok"
    except icesink.IcesinkError as error:
        outcome = f"{{error.position.line}}:{{error.position.column}} {{error.message[:60]}}"
    took = time.perf_counter() - started
    count = session.execute("SELECT count(*) FROM events")[0].rows[0][0]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({{"seconds": took, "rows": count, "peak_mb": peak / 1024, "growth_mb": (peak - before) / 1024,
                       "outcome": outcome}}))
""")


def rows(n: int):
    for i in range(n):
        yield i, f"name {i}", f"{i % 100000}.{i % 100:02d}", f"2024-01-{1 + i % 28:02d} 10:{i % 60:02d}:00+00"


def run(kind: str, payload: str, work: Path) -> dict:
    data_dir = tempfile.mkdtemp(dir=work)
    script = CHILD.format(root=str(ROOT), table=TABLE)
    done = subprocess.run([sys.executable, "-c", script, kind, data_dir, payload], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=250_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        values = ",\n".join(f"({i}, '{name}', {amount}, '{ts}', '{NOTE}')" for i, name, amount, ts in rows(args.rows))
        insert = work / "insert.sql"
        insert.write_text(f"INSERT INTO events VALUES\n{values}")
        broken = work / "broken.sql"
        broken.write_text(f"INSERT INTO events VALUES\n{values[:-1]} §)")  # a typo in the last row
        csv = work / "events.csv"
        with open(csv, "w") as f:
            f.write("id,name,amount,happened,note\n")
            for i, name, amount, ts in rows(args.rows):
                f.write(f"{i},{name},{amount},{ts},{NOTE}\n")
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
        parquet = work / "events.parquet"
        table = pacsv.read_csv(csv, convert_options=pacsv.ConvertOptions(
            column_types={"amount": pa.decimal128(12, 2), "happened": pa.timestamp("us", "UTC")}))
        pq.write_table(table, parquet)
        print(f"{args.rows:,} rows; INSERT statement {insert.stat().st_size / 1e6:.1f} MB, CSV "
              f"{csv.stat().st_size / 1e6:.1f} MB, Parquet {parquet.stat().st_size / 1e6:.1f} MB")
        cases = [("INSERT … VALUES", "insert", str(insert)),
                 ("COPY FROM CSV", "copy", f"COPY events FROM '{csv}' (FORMAT CSV, HEADER)"),
                 ("COPY FROM Parquet", "copy", f"COPY events FROM '{parquet}'"),
                 # computed by SQLite alone (bench/views.py fills its events so)
                 ("INSERT … SELECT FROM generate_series", "copy",
                  f"INSERT INTO events SELECT n, 's' || (n % 50), (n * 7919) % 100000 + 0.25, datetime(1793491200 + "
                  f"(n * 104729) % 86400, 'unixepoch'), '{NOTE}' FROM generate_series(1, {args.rows}) AS n"),
                 ("INSERT with an error in its last row", "insert-error", str(broken))]
        for label, kind, payload in cases:
            got = run(kind, payload, work)
            rate = f"{got['rows'] / got['seconds']:,.0f} rows/s, " if got["outcome"] == "ok" else ""
            print(f"{label:40s} {got['seconds']:6.1f} s  {rate}peak {got['peak_mb']:,.0f} MB "
                  f"(+{got['growth_mb']:,.0f} MB)  {got['outcome']}")


if __name__ == "__main__":
    main()
