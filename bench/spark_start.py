"""How long a process's Spark takes to start, with Spark's class archive (engine/class_archive.py) and without:

    .venv/bin/python bench/spark_start.py [--runs 3]

Each run is a fresh process that starts the SparkSession icesink starts (local[2]) and runs one small query; the
archive is built first if this machine has none. Prints the median seconds of each. A figure, not a test.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icesink.engine import class_archive  # noqa: E402

PROBE = """
import time
started = time.monotonic()
from icesink.engine.spark import get_spark
spark = get_spark("local[2]")
ready = time.monotonic()
spark.range(1000).selectExpr("id % 7 AS k").groupBy("k").count().toArrow()
print(ready - started, time.monotonic() - started)
"""


def run(archive: bool) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if not archive:
        env["ICESINK_SPARK_CLASS_ARCHIVE"] = "off"
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout
    start, query = out.split()[-2:]
    return float(start), float(query)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    archive = class_archive._archive_path()
    if archive is None:
        sys.exit("the class archive is turned off (ICESINK_SPARK_CLASS_ARCHIVE)")
    if not archive.exists():
        print(f"building {archive} …", flush=True)
        if class_archive._claim(archive):
            class_archive.build(archive)
    for label, use in (("without the class archive", False), ("with the class archive", True)):
        timings = [run(use) for _ in range(runs)]
        print(f"{label}: Spark started in {statistics.median(t[0] for t in timings):.1f} s, first query done "
              f"{statistics.median(t[1] for t in timings):.1f} s after start (median of {runs})")


if __name__ == "__main__":
    main()
