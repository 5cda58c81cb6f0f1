"""Spark's Python workers are forks of icesink's daemon: pyspark imported from the installed package (compiled
once), not from the archives Spark puts first on their path, and the engine already imported. Spark's other Python
processes (data source planners, streaming source runners) import the installed pyspark too."""
import json
import sys
from pathlib import Path

import pyarrow as pa

import pyspark
from icesink.engine.spark_site.sitecustomize import without_spark_archives


def test_a_tasks_worker_imports_the_installed_pyspark_and_has_the_engine_already(spark):
    def worker_state(batches):  # nested, so Spark's pickling sends it by value
        import pyspark as worker_pyspark

        for _ in batches:
            yield pa.RecordBatch.from_pylist([{
                "pyspark": worker_pyspark.__file__,
                "archives": [p for p in sys.path if p.endswith((".zip", ".jar")) and "pyspark" in p],
                "engine": "icesink.engine.sources.engine_table" in sys.modules}])

    state = spark.range(1, numPartitions=1).mapInArrow(
        worker_state, "pyspark string, archives array<string>, engine boolean").collect()[0]
    assert Path(state.pyspark) == Path(pyspark.__file__)  # not pyspark.zip/pyspark/__init__.py
    assert state.archives == []
    assert state.engine


def test_data_source_planners_and_streaming_runners_import_the_installed_pyspark(spark):
    from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

    def where() -> str:  # in the process that plans: pyspark's file, and the Spark archives on its path
        import pyspark as planner_pyspark

        return json.dumps([planner_pyspark.__file__,
                           [p for p in sys.path if p.endswith((".zip", ".jar")) and "pyspark" in p]])

    class Planned(DataSourceReader):
        def partitions(self):  # in Spark's data source planner
            return [InputPartition(where())]

        def read(self, partition):
            yield (partition.value,)

    class Streamed(DataSourceStreamReader):
        def initialOffset(self):  # in the query's streaming source runner
            return {"where": where()}

        def latestOffset(self):
            return {"where": where()}

        def partitions(self, start, end):
            return [InputPartition(end["where"])]

        def read(self, partition):
            yield (partition.value,)

    class Reporting(DataSource):
        @classmethod
        def name(cls):
            return "icesink_test_where"

        def schema(self):
            return "where string"

        def reader(self, schema):
            return Planned()

        def streamReader(self, schema):
            return Streamed()

    spark.dataSource.register(Reporting)
    planned = spark.read.format("icesink_test_where").load().collect()[0].where
    streamed = []
    query = (spark.readStream.format("icesink_test_where").load().writeStream
             .foreachBatch(lambda frame, _: streamed.extend(r.where for r in frame.collect())).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    installed = [pyspark.__file__, []]
    assert json.loads(planned) == installed  # not pyspark.zip/pyspark/__init__.py
    assert streamed and json.loads(streamed[0]) == installed


def test_archives_stay_when_the_installed_pyspark_is_not_sparks_home(tmp_path):
    home = tmp_path / "spark"  # a Spark of its own, whose pyspark comes from its zip
    (home / "python" / "lib").mkdir(parents=True)
    path = [str(home / "python" / "lib" / "pyspark.zip"), str(home / "jars" / "spark-core.jar"), *sys.path]
    assert without_spark_archives(path, str(home)) == path
    installed = str(Path(pyspark.__file__).parent)
    path = [installed + "/python/lib/pyspark.zip", installed + "/jars/spark-core.jar", *sys.path]
    assert without_spark_archives(path, installed) == sys.path
    assert without_spark_archives(path, None) == path
