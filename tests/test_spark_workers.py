"""Spark's Python workers are forks of icesink's daemon: pyspark imported from the installed package (compiled
once), not from the archives Spark puts first on their path, and the engine already imported."""
import sys
from pathlib import Path

import pyarrow as pa

import pyspark
from icesink.engine.spark_daemon import without_spark_archives


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


def test_archives_stay_when_the_installed_pyspark_is_not_sparks_home(tmp_path):
    home = tmp_path / "spark"  # a Spark of its own, whose pyspark comes from its zip
    (home / "python" / "lib").mkdir(parents=True)
    path = [str(home / "python" / "lib" / "pyspark.zip"), str(home / "jars" / "spark-core.jar"), *sys.path]
    assert without_spark_archives(path, str(home)) == path
    installed = str(Path(pyspark.__file__).parent)
    path = [installed + "/python/lib/pyspark.zip", installed + "/jars/spark-core.jar", *sys.path]
    assert without_spark_archives(path, installed) == sys.path
    assert without_spark_archives(path, None) == path
