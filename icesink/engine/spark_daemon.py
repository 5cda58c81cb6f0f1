"""Spark's Python daemon (`spark.python.daemon.module`): every Python worker that runs a task is a fork of it.

Spark puts pyspark.zip, py4j's zip and spark-core's jar first on its workers' path. Imports from them compile
pyspark from source in every process (a zip holds no compiled files), and each new fork reads their directories
again when it puts its files' directory on the path; with pyspark's own daemon each fork also imported icesink's
engine anew (measured: about 1 s of CPU per fork, 0.3 s with this daemon). This daemon takes the archives off the
path when the installed pyspark is Spark's home (as pip installs it), imports the engine once, and its forks
inherit both. (Spark's other Python processes take the archives off in spark_site/sitecustomize.py.)"""
import os
import sys

from icesink.engine.spark_site.sitecustomize import without_spark_archives


def main() -> None:
    sys.path[:] = without_spark_archives(sys.path, os.environ.get("SPARK_HOME"))
    import icesink.engine.sink.writers  # noqa: F401
    import icesink.engine.sources  # noqa: F401
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
