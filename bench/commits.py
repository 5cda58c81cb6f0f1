"""Commit latency against commit count: 1,000 small commits through the sink's committer into one table.

    .venv/bin/python bench/commits.py [--commits 1000] [--rows 100] [--mode append|upsert]

Without Spark: it isolates what ages as a table gathers snapshots (metadata size, manifests, expiry).
`append` adds a file per commit, like MODE APPEND; `upsert` replaces the file the previous commit wrote,
beside 100 files nobody changes, like MODE UPSERT with changes in one range of keys.
The target: latency after 1,000 commits within 2x of the first.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.io.pyarrow import _dataframe_to_data_files  # noqa: E402

from icesink.engine.sink.committer import Committer  # noqa: E402
from icesink.engine.sink.table import ensure_table  # noqa: E402
from icesink.engine.sink.writers import BatchFiles  # noqa: E402
from icesink.model.descriptors import SinkDescriptor  # noqa: E402
from icesink.model.frontier import Offset  # noqa: E402
from icesink.model.types import Column  # noqa: E402


COLD_FILES = 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--mode", choices=("append", "upsert"), default="append")
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="icesink-commits-"))
    catalog = SqlCatalog("bench", uri=f"sqlite:///{directory}/catalog.db", warehouse=f"file://{directory}")
    ensure_table(catalog, SinkDescriptor("u0", "u0", "bench", "t", "append", 1000,
                                         columns=(Column("id", "bigint"), Column("v", "text"))), "u1")
    committer = Committer(lambda: catalog.load_table(("bench", "t")), "u1", 1, "t1")
    hot: list = []  # upsert: the file the previous commit wrote

    def plan(table, frontier):
        after = frontier.offset
        rows = pa.table({"id": pa.array(range(after, after + args.rows), pa.int64()),
                         "v": pa.array(["x"] * args.rows), "_mz_diff": pa.array([1] * args.rows, pa.int32()),
                         "_mz_timestamp": pa.array([0] * args.rows, pa.int64())})
        rows = rows.cast(table.schema().as_arrow())
        added = list(_dataframe_to_data_files(table.metadata, rows, table.io, write_uuid=uuid.uuid4()))
        removed = []
        if args.mode == "upsert" and after >= COLD_FILES * args.rows:  # as the table lists it, like a sink's plan
            replaced = {f.file_path for f in hot}
            removed = [task.file for task in table.scan().plan_files() if task.file.file_path in replaced]
        hot[:] = added
        return BatchFiles(removed, added, rows=args.rows, reaches=[{"offset": after + args.rows}], newest_ts=0)

    for n in range(COLD_FILES if args.mode == "upsert" else 0):
        committer.commit(Offset(n * args.rows), plan)
    start = COLD_FILES if args.mode == "upsert" else 0
    latencies = []
    for n in range(start, start + args.commits):
        started = time.perf_counter()
        committer.commit(Offset(n * args.rows), plan)
        latencies.append(time.perf_counter() - started)
    table = catalog.load_table(("bench", "t"))
    first, last = statistics.median(latencies[:20]), statistics.median(latencies[-20:])
    print(f"{args.commits} {args.mode} commits of {args.rows} rows: first 20 median {first * 1000:.0f} ms, "
          f"last 20 median {last * 1000:.0f} ms ({last / first:.2f}x); "
          f"snapshots kept {len(table.metadata.snapshots)}, metadata log {len(table.metadata.metadata_log)}, "
          f"manifests {len(table.current_snapshot().manifests(table.io))}")
    for mark in sorted({m for m in (1, 100, 250, 500, 750) if m < args.commits} | {args.commits}):
        window = latencies[max(0, mark - 20):mark]
        print(f"  commits {max(1, mark - 19)}-{mark}: median {statistics.median(window) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
