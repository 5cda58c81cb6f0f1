"""Upserts spread evenly over the key space, into tables of growing size, with each write mode.

    .venv/bin/python bench/scatter.py [--rows 1000000,10000000] [--rates 10000,100000]
        [--modes merge-on-read,copy-on-write] [--interval 5] [--batches 8] [--long 120] [--long-rows 10000000]

For each table size and mode, the table is filled (one batch holding every key, as a sink's first batch), then, for
each rate, `--batches` batches of rate x interval changes each go through the sink's own writer and committer (and,
in merge-on-read, the fold that follows each batch, which may take up what is left of the interval), the changed keys spread over the whole key space (key = i x a
large odd stride mod rows, so consecutive changes land far apart). The batches run back to back and the clock of a
processing-time trigger is simulated: a change made at a uniformly random moment of an interval waits for the next
trigger (or for the batch before it to end), then for its batch, so freshness = commit end - change time (a fold comes after the commit); the idle
waits a real trigger would have are not spent. Streaming's own overhead per batch (well under 0.1 s) is not in it.

`--long N`: N batches at the first rate into a `--long-rows` table in merge-on-read, reporting the worst batch
against the median, over the run and over each ten minutes of it (N = 120 is ten minutes of 5 s commits), the
slowest commits with the share of their Spark job (locating keys, writing files: the rest is the catalog's commit),
and the time DuckDB takes to scan the table then
against a copy of its rows written afresh (sorted by key, in files of the size icesink writes, no delete files). Prints figures; it is not a test.
"""
from __future__ import annotations

import argparse
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

from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from bench.stats import percentile  # noqa: E402
from icesink.engine.sink.committer import Committer  # noqa: E402
from icesink.engine.sink.table import ensure_table  # noqa: E402
from icesink.engine.sink.writers import writer_for  # noqa: E402
from icesink.engine.sink.writers.base import DEFAULT_TARGET_FILE_BYTES  # noqa: E402
from icesink.engine.sources.engine_table import DIFF, TS  # noqa: E402
from icesink.engine.spark import get_spark  # noqa: E402
from icesink.model.descriptors import SinkDescriptor  # noqa: E402
from icesink.model.frontier import OFFSET, Offset  # noqa: E402
from icesink.model.types import Column  # noqa: E402

STRIDE = 2_654_435_761  # odd and larger than any table here: i -> i x STRIDE mod rows visits every key once
COLUMNS = (Column("id", "bigint", False), Column("value", "text"), Column("round", "bigint"))


class Bench:
    def __init__(self, spark, directory: Path, rows: int, mode: str):
        self.spark, self.rows, self.mode = spark, rows, mode
        catalog = SqlCatalog("bench", uri=f"sqlite:///{directory}/catalog.db", warehouse=f"file://{directory}")
        descriptor = SinkDescriptor("u0", "u0", "bench", f"t{rows}_{mode.replace('-', '_')}", "upsert", 5000,
                                    ("id",), True, True, (), COLUMNS, None, mode)
        ensure_table(catalog, descriptor, "u1")
        self.load = lambda: catalog.load_table(descriptor.identifier)
        self.committer = Committer(self.load, "u1", 1, "t1")
        self.writer = writer_for(descriptor.writer, [c.name for c in COLUMNS], ["id"], True, str(directory / "state"))
        self.offset = 0
        self.changed = 0  # changes made so far, so each batch moves on through the permutation
        self.interval = 5.0  # COMMIT INTERVAL: a fold may take up the time left of it
        self.commits: list[float] = []  # of each batch, the seconds until its commit
        self.folds: list[float] = []  # of each batch, the seconds its fold took
        self.jobs: list[float] = []  # of each batch, the seconds of its Spark job (locating, writing), in its commit

    def changes(self, count: int, first: bool = False):
        """`count` upserts as a change stream (the sink's columns, then OFFSET, DIFF, TS), made on the executors."""
        base, start = self.offset, self.changed
        key = F.col("id") if first else ((F.col("id") + F.lit(start)) * F.lit(STRIDE)) % F.lit(self.rows)
        frame = self.spark.range(count, numPartitions=max(2, count // 250_000)).select(
            key.alias("id"), F.concat(F.lit("v"), F.col("id").cast("string")).alias("value"),
            F.lit(start).alias("round"), (F.col("id") + F.lit(base + 1)).alias(OFFSET),
            F.lit(1).cast("int").alias(DIFF), F.lit(int(time.time() * 1000)).alias(TS))
        self.offset += count
        if not first:
            self.changed += count
        return frame

    def batch(self, count: int, first: bool = False) -> float:
        """One batch as a sink runs it (commit, expiry, fold); its seconds."""
        frame = self.changes(count, first)
        started = time.perf_counter()
        job = [0.0]

        def plan(table, after):
            planning = time.perf_counter()
            files = self.writer.plan(frame, table, after)
            job[0] += time.perf_counter() - planning
            return files
        self.committer.commit(Offset(self.offset - count), plan)
        folding = time.perf_counter()
        self.jobs.append(job[0])
        if hasattr(self.writer, "plan_fold"):
            left = self.interval - (folding - started)
            self.committer.fold(lambda table: self.writer.plan_fold(self.spark, table, count, left))
        ended = time.perf_counter()
        self.commits.append(folding - started)
        self.folds.append(ended - folding)
        return ended - started


def simulate(durations: list[float], commits: list[float], interval: float, seed: int = 7) -> list[float]:
    """Freshness of changes made uniformly over time under Spark's processing-time trigger: a batch starts at the
    interval boundary after the previous batch's start, or at its end (fold included) if it ran past it, holds the
    changes made since the previous batch started, and makes them visible when it commits, before it folds. (Each
    batch here holds rate x interval changes whatever its window; when batches run past the interval, a real sink's
    would grow, so the figure is then a floor: `run` says so.)"""
    import random

    rng, start, previous, fresh = random.Random(seed), 0.0, -interval, []
    for duration, commit in zip(durations, commits):
        fresh += [start + commit - rng.uniform(previous, start) for _ in range(200)]
        previous, start = start, max(start + duration, start - start % interval + interval)
    return fresh


def run(spark, rows: int, mode: str, rates: list[int], interval: float, batches: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="icesink-scatter-"))
    try:
        bench = Bench(spark, directory, rows, mode)
        bench.interval = interval
        fill = bench.batch(rows, first=True)
        files = len(bench.load().inspect.files())
        print(f"{rows:>11,} rows  {mode:<14} filled in {fill:.1f}s ({files} files)", flush=True)
        for rate in rates:
            bench.folds.clear()
            bench.commits.clear()
            durations = [bench.batch(int(rate * interval)) for _ in range(batches)]
            fresh = simulate(durations, bench.commits, interval)
            folded = (f" (to its commit p50 {statistics.median(bench.commits):.2f}s p95 "
                      f"{percentile(bench.commits, 0.95):.2f}s, then its fold p50 {statistics.median(bench.folds):.2f}s)"
                      if mode == "merge-on-read" else "")
            behind = " - falls behind: batches outlast the interval" if max(durations) > interval else ""
            print(f"{rows:>11,} rows  {mode:<14} {rate:>7,} changes/s: batch p50 {statistics.median(durations):.2f}s "
                  f"p95 {percentile(durations, 0.95):.2f}s{folded}  freshness p95 {percentile(fresh, 0.95):.1f}s "
                  f"(interval {interval:g}s, {batches} batches){behind}", flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def scan_seconds(metadata_location: str) -> float:
    from tests.readers import duckdb_rows

    started = time.perf_counter()
    duckdb_rows(metadata_location, "count(*), sum(round)", "1")
    return time.perf_counter() - started


def long_run(spark, rows: int, rate: int, interval: float, batches: int) -> None:
    import pyarrow as pa

    directory = Path(tempfile.mkdtemp(prefix="icesink-scatter-long-"))
    try:
        bench = Bench(spark, directory, rows, "merge-on-read")
        bench.interval = interval
        bench.batch(rows, first=True)
        bench.commits.clear()
        bench.jobs.clear()
        durations = [bench.batch(int(rate * interval)) for _ in range(batches)]
        table = bench.load()
        summary = table.current_snapshot().summary
        commits = bench.commits
        window = max(1, round(600 / interval))  # ten minutes of batches

        def worst_window(times: list[float]) -> float:
            return max(max(times[i:i + window]) / statistics.median(times[i:i + window])
                       for i in range(0, max(1, len(times) - window + 1), window))
        worst, slowest = worst_window(commits), commits.index(max(commits))
        # the first batch after a start also compiles the batch's plan and warms the workers: not housekeeping
        warm = worst_window(commits[1:])
        late = sum(d > interval for d in durations)
        print(f"long run: {batches} batches of {int(rate * interval):,} scattered changes into {rows:,} rows "
              f"(merge-on-read): batch with its fold median {statistics.median(durations):.2f}s, worst "
              f"{max(durations):.2f}s ({max(durations) / statistics.median(durations):.2f}x the median); to its "
              f"commit median {statistics.median(commits):.2f}s, worst {max(commits):.2f}s "
              f"({max(commits) / statistics.median(commits):.2f}x, batch {slowest + 1}; in the worst ten minutes "
              f"{worst:.2f}x its median, {warm:.2f}x without the first batch after the start); "
              f"{late} batches with their fold outlasted the interval; freshness p95 "
              f"{percentile(simulate(durations, commits, interval), 0.95):.1f}s; then {summary['total-data-files']} "
              f"data files, {summary['total-delete-files']} delete files, {summary['total-position-deletes']} "
              "position deletes", flush=True)
        slowest5 = sorted(range(len(commits)), key=lambda i: -commits[i])[:5]
        print("slowest commits: " + ", ".join(f"batch {i + 1} {commits[i]:.2f}s (its Spark job {bench.jobs[i]:.2f}s)"
                                              for i in slowest5) + f"; median Spark job {statistics.median(bench.jobs):.2f}s",
              flush=True)
        worn = min(scan_seconds(table.metadata_location) for _ in range(3))
        fresh_catalog = SqlCatalog("fresh", uri=f"sqlite:///{directory}/fresh.db", warehouse=f"file://{directory}/f")
        fresh_catalog.create_namespace("bench")
        rows_now = table.scan().to_arrow()
        copy = fresh_catalog.create_table(("bench", "copy"), schema=table.schema(), properties={
            "format-version": "2", "write.target-file-size-bytes": str(DEFAULT_TARGET_FILE_BYTES)})  # as icesink
        # writes files
        copy.append(pa.Table.from_batches(rows_now.to_batches(), schema=rows_now.schema).sort_by("id"))
        compact = min(scan_seconds(copy.metadata_location) for _ in range(3))
        print(f"DuckDB scan of it: {worn:.2f}s; of its rows written afresh: {compact:.2f}s "
              f"({worn / compact:.2f}x)", flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1000000,10000000")
    parser.add_argument("--rates", default="10000,100000")
    parser.add_argument("--modes", default="merge-on-read,copy-on-write")
    parser.add_argument("--interval", type=float, default=5.0, help="COMMIT INTERVAL, seconds")
    parser.add_argument("--batches", type=int, default=8, help="batches per rate")
    parser.add_argument("--long", type=int, default=0, help="batches of the long merge-on-read run (0: none)")
    parser.add_argument("--long-rows", type=int, default=10_000_000)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()
    spark = get_spark(args.master)
    rates = [int(r) for r in args.rates.split(",")]
    for rows in (int(r) for r in args.rows.split(",")):
        for mode in args.modes.split(","):
            run(spark, rows, mode, rates, args.interval, args.batches)
    if args.long:
        long_run(spark, args.long_rows, rates[0], args.interval, args.long)


if __name__ == "__main__":
    main()
