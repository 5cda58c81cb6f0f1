"""SELECT … FROM ICEBERG: a table's live rows read on the executors as a Spark DataFrame."""
from __future__ import annotations

import pickle

from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from .pyiceberg_internals import executor_context, scan, table_context


def _read_files(metadata_json: str, io_properties: dict, location: str, arrow_schema):
    """An executor function: pickled FileScanTasks in, their live rows out (deletes applied)."""
    def read(batches):
        metadata, io = executor_context(metadata_json, io_properties, location)
        reader = scan(metadata, io)
        for batch in batches:
            tasks = [pickle.loads(blob) for blob in batch.column("task").to_pylist()]
            for rows in reader.to_record_batches(tasks):
                yield rows.select(arrow_schema.names).cast(arrow_schema)
    return read


def scan_frame(spark, table, tasks: list, schema) -> DataFrame:
    """The live rows of `tasks` (FileScanTasks of `table`) as a DataFrame read on the executors."""
    arrow_schema = to_arrow_schema(schema, timezone="UTC")  # the session's time zone (spark.py)
    read = _read_files(*table_context(table), arrow_schema)
    task_frame = spark.createDataFrame([(pickle.dumps(t),) for t in tasks], "task binary")
    return task_frame.repartition(max(1, min(len(tasks), spark.sparkContext.defaultParallelism * 2))) \
        .mapInArrow(read, schema)


def table_schema(table) -> StructType:
    """The Spark schema of an Iceberg table's rows."""
    return from_arrow_schema(table.schema().as_arrow())
