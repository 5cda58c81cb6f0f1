"""An archive of the classes Spark's JVM loads (Java's class-data sharing), built once per machine and Spark, so
that each later process's Spark starts in about half the time: the JVM maps the archive instead of finding,
parsing and verifying some 15,000 classes in 250 jars.

The first process that finds no archive starts a builder in the background (`python -m
icesink.engine.class_archive`): a short Spark run whose JVM writes the archive as it exits. The builder moves it
into place only once that JVM has exited cleanly, because a JVM that maps a truncated archive crashes.
`ICESINK_SPARK_CLASS_ARCHIVE=off` turns it off."""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("icesink.spark")
STALE_BUILD_SECONDS = 900  # a builder that was killed leaves its claim behind
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # an archive the JVM cannot use is skipped: no warning on stdout


def java_options() -> str:
    """The JVM options that use the archive; none while it is missing, and then a builder is started."""
    try:
        archive = _archive_path()
    except (OSError, RuntimeError) as exc:  # no home directory, an unreadable jar: Spark starts without it
        log.info("no class archive for Spark: %s", exc)
        return ""
    if archive is None:
        return ""
    if archive.exists():
        return f"-XX:SharedArchiveFile={archive} {QUIET}"
    if _claim(archive):
        subprocess.Popen([sys.executable, "-m", __name__, str(archive)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         env={**os.environ, "ICESINK_SPARK_CLASS_ARCHIVE": "off"})
        log.info("building Spark's class archive %s in the background", archive)
    return ""


def _archive_path() -> Path | None:
    if os.environ.get("ICESINK_SPARK_CLASS_ARCHIVE", "").lower() in ("off", "false", "0"):
        return None
    import pyspark

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "icesink"
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    # An archive holds one JVM's view of these exact jars: either changing makes a new one.
    jars = Path(pyspark.__file__).parent / "jars"
    fingerprint = hashlib.sha256(repr((
        os.environ.get("JAVA_HOME"), os.path.realpath(shutil.which("java") or ""),
        sorted((p.name, stat.st_size, int(stat.st_mtime)) for p in jars.glob("*.jar") for stat in [p.stat()]),
    )).encode()).hexdigest()[:16]
    return cache / f"spark-{pyspark.__version__}-{fingerprint}.jsa"


def _claim(archive: Path) -> bool:
    claim = archive.with_suffix(".building")
    try:
        if time.time() - claim.stat().st_mtime > STALE_BUILD_SECONDS:
            claim.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return False
    for partial in archive.parent.glob(f"{archive.name}.*.partial"):  # left by a builder that was killed
        partial.unlink(missing_ok=True)
    return True


def build(archive: Path) -> None:
    """A Spark run that touches what a sink's batches use (Arrow, Parquet, a streaming query, a shuffle); its JVM
    writes the archive when it exits."""
    from .spark import LOG4J_OPTION, get_spark

    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    try:
        spark = get_spark("local[2]", {"spark.driver.extraJavaOptions":
                                       f"{LOG4J_OPTION} -XX:ArchiveClassesAtExit={partial}"})
        jvm = spark.sparkContext._gateway.proc
        with tempfile.TemporaryDirectory() as scratch:
            spark.range(10000).selectExpr("id", "id % 7 AS k", "CAST(id AS decimal(10,2)) AS amount") \
                .write.parquet(f"{scratch}/rows")
            rows = spark.read.parquet(f"{scratch}/rows")
            rows.groupBy("k").count().toArrow()
            spark.createDataFrame(rows.limit(10).toArrow().to_pandas()).collect()
            query = (spark.readStream.schema(rows.schema).parquet(f"{scratch}/rows").writeStream
                     .foreachBatch(lambda batch, _: batch.groupBy("k").count().toArrow())
                     .option("checkpointLocation", f"{scratch}/checkpoint").trigger(availableNow=True).start())
            query.awaitTermination()
        spark.stop()
        jvm.stdin.close()  # Spark's gateway exits when its stdin closes, and the JVM writes the archive then
        if jvm.wait(timeout=300) == 0 and partial.exists():
            os.replace(partial, archive)
    finally:
        partial.unlink(missing_ok=True)
        archive.with_suffix(".building").unlink(missing_ok=True)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
