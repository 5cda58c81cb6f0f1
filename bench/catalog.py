"""Front-end figures: parse rate, DDL rate, and system-view query latency on a large catalog.

    .venv/bin/python bench/catalog.py [--sinks 1000] [--history 10]

Prints figures; it is not a test. The issue's target: canonical status queries answer in < 100 ms.
"""
from __future__ import annotations

import argparse
import os
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
from bench.stats import percentile  # noqa: E402
from icesink.grammar.lexical import split_statements  # noqa: E402
from icesink.grammar.parser import parse_statement  # noqa: E402

CANONICAL = {
    "status": "SELECT s.name, st.status, st.error, st.details FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st "
              "ON s.id = st.id WHERE s.name = 'sink_{n}'",
    "history": "SELECT h.occurred_at, h.status, h.error FROM mz_internal.mz_sink_status_history h JOIN mz_sinks s "
               "ON s.id = h.sink_id WHERE s.name = 'sink_{n}' ORDER BY h.occurred_at",
    "statistics": "SELECT messages_staged, messages_committed, bytes_staged, bytes_committed FROM "
                  "mz_internal.mz_sink_statistics WHERE id = (SELECT id FROM mz_sinks WHERE name = 'sink_{n}')",
    "iceberg": "SELECT id, namespace, \"table\" FROM mz_catalog.mz_iceberg_sinks WHERE id = "
               "(SELECT id FROM mz_sinks WHERE name = 'sink_{n}')",
    "all statuses": "SELECT s.name, st.status FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sinks", type=int, default=1000)
    parser.add_argument("--history", type=int, default=10, help="status rows per sink")
    args = parser.parse_args()

    corpus = [s.text for s in split_statements((ROOT / "tests/corpus/dialect.sql").read_text())]
    parse_statement(corpus[0])
    started = time.perf_counter()
    rounds = 20
    for _ in range(rounds):
        for text in corpus:
            parse_statement(text)
    elapsed = time.perf_counter() - started
    print(f"parse: {rounds * len(corpus) / elapsed:,.0f} statements/s ({len(corpus)} corpus statements x {rounds})")

    with tempfile.TemporaryDirectory() as tmp, icesink.connect(Path(tmp) / "data") as session:
        session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local')")
        started = time.perf_counter()
        for n in range(args.sinks):
            session.execute(f"CREATE TABLE t_{n} (id bigint NOT NULL, v text, at timestamptz, PRIMARY KEY (id))")
            session.execute(f"CREATE SINK sink_{n} FROM t_{n} INTO ICEBERG CATALOG CONNECTION lake "
                            f"(NAMESPACE 'ns', TABLE 't_{n}') KEY (id) PARTITION BY (day(at)) MODE UPSERT "
                            f"WITH (COMMIT INTERVAL '10s')")
        elapsed = time.perf_counter() - started
        print(f"DDL: {2 * args.sinks / elapsed:,.0f} CREATE statements/s "
              f"({args.sinks} tables + {args.sinks} sinks, one transaction each)")
        with session.catalog.transaction():
            for n in range(args.sinks):
                sink_id = session.catalog.get(f"sink_{n}").id
                for i in range(args.history):
                    session.catalog.record_status(sink_id, "sink", ("starting", "running", "stalled")[i % 3])
        for label, template in CANONICAL.items():
            samples = []
            for i in range(100):
                sql = template.format(n=(i * 7919) % args.sinks)
                started = time.perf_counter()
                session.execute(sql)
                samples.append((time.perf_counter() - started) * 1000)
            print(f"query {label!r} over {args.sinks} sinks, {args.sinks * args.history} history rows: "
                  f"p50 {statistics.median(samples):.2f} ms, p95 {percentile(samples, 0.95):.2f} ms")

    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "icesink.repl.cli", "--data-dir", tempfile.mkdtemp(), "-c", "SELECT 1"],
                   check=True, capture_output=True)
    print(f"cold start of `icesink -c 'SELECT 1'`: {(time.perf_counter() - started) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
