"""What the shapes of a sink's first batch over a copy cost in Spark on this machine, whatever icesink's own code:

    .venv/bin/python bench/spark_pipelines.py [--rows 10000000] [--rounds 2]

A --rows, 4-column input (bigint key, int, text, timestamp; 250,000 rows a partition) is written to Parquet files by
Python tasks (`mapInArrow`, zstd, as the writers do), the input read in four ways: by a Python data source (as a sink
reads a copy) or by Spark's own Parquet reader, each with the rows sent to their tasks by key ranges (a shuffle, as
the writers do so that a file holds one range of keys) or written where they were read. Each round runs the four
once; the first round includes the JVM's warm-up. A figure, not a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402

from icesink.engine.spark import get_spark  # noqa: E402

ROWS_PER_PARTITION = 250_000
ROWS_PER_BATCH = 50_000
TASKS = 54  # as many as a 10M-row copy's first batch has


class Rows(InputPartition):
    def __init__(self, first: int, count: int):
        super().__init__((first, count))
        self.first, self.count = first, count


class GeneratedRows(DataSource):
    """Options: rows."""

    @classmethod
    def name(cls) -> str:
        return "bench_rows"

    def schema(self) -> str:
        return "id long, a long, b string, c timestamp"

    def reader(self, schema) -> "GeneratedRowsReader":
        return GeneratedRowsReader(int(self.options["rows"]))


class GeneratedRowsReader(DataSourceReader):
    def __init__(self, rows: int):
        self.rows = rows

    def partitions(self) -> list[Rows]:
        return [Rows(first, min(ROWS_PER_PARTITION, self.rows - first))
                for first in range(0, self.rows, ROWS_PER_PARTITION)]

    def read(self, partition: Rows):
        import numpy as np
        import pyarrow as pa

        for start in range(partition.first, partition.first + partition.count, ROWS_PER_BATCH):
            ids = np.arange(start, min(start + ROWS_PER_BATCH, partition.first + partition.count), dtype=np.int64)
            yield pa.RecordBatch.from_arrays(
                [pa.array(ids), pa.array(ids % 1000), pa.array([f"row {i}" for i in ids.tolist()]),
                 pa.array(ids * 1000, pa.timestamp("us", tz="UTC"))], names=["id", "a", "b", "c"])


def parquet_writer(directory: str):
    def write(batches):
        import uuid

        import pyarrow as pa
        import pyarrow.parquet as pq

        writer, rows = None, 0
        for batch in batches:
            if writer is None:
                writer = pq.ParquetWriter(f"{directory}/{uuid.uuid4()}.parquet", batch.schema, compression="zstd")
            writer.write_batch(batch)
            rows += batch.num_rows
        if writer is not None:
            writer.close()
        yield pa.RecordBatch.from_pydict({"rows": [rows]})
    return write


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()

    spark = get_spark(args.master)
    spark.dataSource.register(GeneratedRows)
    work = Path(tempfile.mkdtemp(prefix="icesink-pipelines-"))
    try:
        generated = spark.read.format("bench_rows").option("rows", str(args.rows)).load()
        generated.write.parquet(str(work / "input"))
        inputs = {"a Python data source": lambda: spark.read.format("bench_rows").option("rows", str(args.rows)).load(),
                  "Spark's Parquet reader": lambda: spark.read.parquet(str(work / "input"))}
        for round_ in range(1, args.rounds + 1):
            for read, frame in inputs.items():
                for by_range in (True, False):
                    out = work / "out"
                    shutil.rmtree(out, ignore_errors=True)
                    out.mkdir()
                    started = time.time()
                    rows = frame()
                    if by_range:
                        rows = rows.repartitionByRange(TASKS, "id")
                    written = rows.mapInArrow(parquet_writer(str(out)), "rows long").agg(F.sum("rows")).first()[0]
                    took = time.time() - started
                    assert written == args.rows, written
                    print(f"round {round_}: read by {read}, {'sent to tasks by key ranges' if by_range else 'written where read'}: "
                          f"{took:.1f}s, {args.rows / took:,.0f} rows/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
