"""Run at the start of every Python process Spark starts for icesink, which finds this file on the path spark.py
gives them (`PYTHONPATH`). Spark puts pyspark.zip, py4j's zip and spark-core's jar first on their path, and pyspark
imported from a zip is compiled from source in each process: a data source planner's or a streaming source
runner's imports took 1.5 s (1.6 s of CPU) that way, 0.35 s from the installed package. When the installed pyspark
is Spark's home (as pip installs it), the archives come off the path: in Spark's Python daemon (spark_daemon.py),
whose forks run the tasks, and in the other processes alike. Any other process keeps its path, and a sitecustomize
further along the path runs as it would have."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def without_spark_archives(path: list[str], spark_home: str | None) -> list[str]:
    """`path` without the archives under `spark_home`, if pyspark is still found there and is Spark's home."""
    if not spark_home:
        return path
    kept = [p for p in path if not (p.startswith(spark_home) and p.endswith((".zip", ".jar")))]
    if len(kept) == len(path):
        return path
    found = importlib.machinery.PathFinder.find_spec("pyspark", kept)
    same = found is not None and os.path.samefile(os.path.dirname(found.origin), spark_home)
    return kept if same else path


def _run_the_next_one() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [p for p in sys.path if os.path.abspath(p or os.curdir) != here])
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if __name__ == "sitecustomize":
    sys.path[:] = without_spark_archives(sys.path, os.environ.get("SPARK_HOME"))
    _run_the_next_one()
