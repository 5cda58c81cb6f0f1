"""Run by the Spark 3.5 venv (tests/spark35/install.sh): reads an Iceberg table by its metadata file with Iceberg's
own Spark runtime, and writes its rows, pickled, to stdout.

    <venv>/bin/python tests/spark35/read.py <metadata.json> <column,column,...>
"""
import pickle
import sys
from pathlib import Path

from pyspark.sql import SparkSession


def main() -> None:
    metadata, columns = sys.argv[1], sys.argv[2].split(",")
    venv = Path(sys.executable).parent.parent  # install.sh puts the jars there
    jars = [next(venv.glob("iceberg-spark-runtime-*.jar")), venv / "iceberg-shaded-deps.jar"]
    spark = (SparkSession.builder.master("local[1]").appName("icesink-test-reader")
             .config("spark.jars", ",".join(map(str, jars)))
             .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows = spark.read.format("iceberg").load(metadata.removeprefix("file://")).select(*columns).collect()
        sys.stdout.buffer.write(pickle.dumps([tuple(row) for row in rows]))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
