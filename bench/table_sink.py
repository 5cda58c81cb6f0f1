"""A sink on an engine table that receives updates spread over its whole key space, through the whole engine
(statements, the table's change log, the scheduler, Spark, the committer), as a user runs it:

    .venv/bin/python bench/table_sink.py --rows 1000000 --rate 10000 --seconds 180 [--write-mode merge-on-read]

Loads --rows rows with COPY, starts a sink (COMMIT INTERVAL 5 s), then runs `UPDATE … WHERE id % n = r` once a
second (--rate rows each) for --seconds, and prints the batch times after the first (median, p95, worst, and the
worst over the median) and the log compactions with their sizes. A batch that waits for housekeeping shows as a
worst far above the median. A figure, not a test.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ICESINK_SECRET_STORE", "file")

import icesink  # noqa: E402
from bench.stats import percentile  # noqa: E402
from icesink.engine.scheduler import Scheduler  # noqa: E402
from icesink.engine.spark import get_spark  # noqa: E402

BATCH = re.compile(r"committed (\d+) changes .* in ([\d.]+)s")
COMPACTED = re.compile(r"compacted (\d+) entries")


class Recorder(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.batches, self.compactions = [], []

    def emit(self, record):
        message = record.getMessage()
        if (found := BATCH.search(message)) is not None:
            self.batches.append((time.time(), int(found[1]), float(found[2])))
        elif (found := COMPACTED.search(message)) is not None:
            self.compactions.append((time.time(), int(found[1])))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=10_000, help="rows updated a second")
    parser.add_argument("--seconds", type=int, default=180)
    parser.add_argument("--write-mode", choices=("copy-on-write", "merge-on-read"), default="copy-on-write")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    recorder = Recorder()
    for name in ("icesink.sink", "icesink.housekeeping"):
        logging.getLogger(name).setLevel(logging.INFO)
        logging.getLogger(name).addHandler(recorder)

    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-"))
    csv = data_dir / "rows.csv"
    with open(csv, "w") as out:
        out.writelines(f"{i},0,row {i}\n" for i in range(args.rows))
    session = icesink.connect(data_dir)
    started = time.time()
    session.execute(f"""CREATE TABLE t (id bigint NOT NULL, a bigint, b text, PRIMARY KEY (id));
        COPY t FROM '{csv}' (FORMAT csv);
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SINK t_lake FROM t INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'bench', TABLE 't')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '5s', WRITE MODE '{args.write_mode}');""")
    print(f"{args.rows:,} rows loaded in {time.time() - started:.1f}s", flush=True)
    spark = get_spark()
    scheduler = Scheduler(data_dir, session.executor.secret_value, lambda: spark)
    scheduler.start()
    while not recorder.batches:
        time.sleep(0.5)
    print(f"first batch (the whole table): {recorder.batches[0][2]:.2f}s", flush=True)
    groups = max(1, args.rows // args.rate)
    ends = time.time() + args.seconds
    statement = 0
    while time.time() < ends:
        tick = time.time()
        session.execute(f"UPDATE t SET a = a + 1 WHERE id % {groups} = {statement % groups}")
        statement += 1
        time.sleep(max(0.0, 1 - (time.time() - tick)))
    time.sleep(12)  # the last changes' batch
    scheduler.stop()
    times = [seconds for _, _, seconds in recorder.batches[1:]]
    median = statistics.median(times)
    print(f"{len(times)} batches after the first ({args.write_mode}, {args.rate:,} rows updated a second, spread "
          f"over {args.rows:,}): median {median:.2f}s, p95 {percentile(times, 95):.2f}s, worst {max(times):.2f}s "
          f"({max(times) / median:.2f}x the median)")
    print(f"log compactions: {', '.join(f'{n:,} entries' for _, n in recorder.compactions) or 'none'}")


if __name__ == "__main__":
    main()
