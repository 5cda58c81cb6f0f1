"""Spark's Python daemon (`spark.python.daemon.module`): every Python worker that runs a task is a fork of it.

With pyspark's own daemon each fork imported icesink's engine anew (measured: about 1 s of CPU per fork with
pyspark also compiled from Spark's archives, 0.3 s with this daemon). This one imports the engine once, and its forks
inherit it. Like every Python process Spark starts for icesink, it has already taken Spark's archives off its path
at its start (spark_site/sitecustomize.py), so the engine and pyspark come from the installed packages."""
import icesink.engine.sink.writers  # noqa: F401
import icesink.engine.sources  # noqa: F401


def main() -> None:
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
