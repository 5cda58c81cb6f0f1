"""The one SparkSession of a process. Starting Spark takes seconds: it starts on first use, once."""
from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

log = logging.getLogger("icesink.spark")
_lock = threading.Lock()
_session = None
_settings = None  # (master, conf) the session was started with
SPARK_SITE = str(Path(__file__).with_name("spark_site"))
LOG4J_OPTION = f"-Dlog4j2.configurationFile=file:{Path(__file__).with_name('log4j2.properties')}"

DEFAULT_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.streaming.stopTimeout": "30s",
    "spark.scheduler.mode": "FAIR",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.sql.adaptive.enabled": "true",
    "spark.python.daemon.module": "icesink.engine.spark_daemon",  # workers start with the engine imported (spark_daemon.py)
}


def get_spark(master: str | None = None, conf: dict[str, str] | None = None):
    """The process's SparkSession, created with `master` and `conf` the first time; asked later for other settings,
    it says so in the log (one process has one SparkSession)."""
    global _session, _settings
    with _lock:
        if _session is not None and (master, conf) != _settings and master is not None:
            log.warning("Spark already runs in this process with master %s; %s applies to the next process",
                        _settings[0] or "local[*]", master)
        if _session is None:
            _settings = (master, conf)
            # Workers must run this interpreter, or they miss the packages icesink needs.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # every Python process Spark starts runs spark_site/sitecustomize.py, which imports the installed pyspark
            paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SPARK_SITE]
            os.environ["PYTHONPATH"] = os.pathsep.join([*paths, SPARK_SITE])
            from pyspark.sql import SparkSession

            from .class_archive import java_options

            builder = SparkSession.builder.appName("icesink").master(master or "local[*]")
            settings = {**DEFAULT_CONF, **(conf or {})}
            # a user's own options go after icesink's (the later of two options wins), not in their place
            settings["spark.driver.extraJavaOptions"] = " ".join(
                filter(None, (LOG4J_OPTION, java_options(), settings.get("spark.driver.extraJavaOptions"))))
            for key, value in settings.items():
                builder = builder.config(key, value)
            _session = builder.getOrCreate()
            _session.sparkContext.setLogLevel("ERROR")
            from .sources.engine_table import EngineTableSource
            from .sources.generators import GeneratorSource
            from .sources.joined_view import JoinedViewSource
            from .sources.recomputed_view import RecomputedViewSource
            from .sources.view import ViewSource

            _session.dataSource.register(EngineTableSource)
            _session.dataSource.register(GeneratorSource)
            _session.dataSource.register(ViewSource)
            _session.dataSource.register(JoinedViewSource)
            _session.dataSource.register(RecomputedViewSource)
            _start_python_daemon(_session.sparkContext)
            log.info("Spark started: master %s", master or "local[*]")
        return _session


def _start_python_daemon(context) -> None:
    """Spark starts its Python daemon for the first job that runs Python code, and that job waits for it: a copy's
    first task began 1.8 s after its job was submitted, and 0.06 s after when the daemon already ran. Such jobs come
    soon after Spark starts (a source's copy, a sink's first batch), so a job of nothing starts the daemon now, in
    the background; it lives as long as Spark."""
    slots = context.defaultParallelism

    def run() -> None:
        try:
            context.setJobDescription("icesink: start Python workers")
            context.parallelize(range(slots), slots).foreach(_nothing)
        except BaseException as exc:  # Spark stopped meanwhile: nothing was waiting for it
            log.debug("Python workers not started: %s", exc)

    threading.Thread(target=run, name="icesink-python-daemon", daemon=True).start()


def _nothing(_) -> None:
    pass
