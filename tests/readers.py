"""Independent readers of what a sink wrote: DuckDB's iceberg extension (loaded offline from its wheel), pyiceberg,
polars, and Spark 3.5 with Iceberg's own runtime (in a venv of its own: tests/spark35/install.sh, run by `make
test`)."""
import glob
import os
import pickle
import subprocess
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
SPARK35 = ROOT / ".venv-spark35"


def _extension(package: str) -> str:
    module = __import__(package)
    return glob.glob(os.path.join(os.path.dirname(module.__file__), "**", "*.duckdb_extension"), recursive=True)[0]


def duckdb_rows(metadata_location: str, columns: str = "*", order_by: str = "1", s3: dict | None = None) -> list[tuple]:
    """s3: endpoint (an http:// URL), key, secret, for tables on an S3-compatible store."""
    con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    try:
        con.execute(f"LOAD '{_extension('duckdb_extension_avro')}'")
        con.execute(f"LOAD '{_extension('duckdb_extension_iceberg')}'")
        if s3 is not None:
            con.execute(f"LOAD '{_extension('duckdb_extension_httpfs')}'")
            con.execute(f"""CREATE SECRET lake (TYPE S3, KEY_ID '{s3["key"]}', SECRET '{s3["secret"]}',
                REGION 'us-east-1', ENDPOINT '{s3["endpoint"].removeprefix("http://")}', URL_STYLE 'path',
                USE_SSL false)""")
        path = metadata_location.removeprefix("file://")
        return con.execute(f"SELECT {columns} FROM iceberg_scan('{path}') ORDER BY {order_by}").fetchall()
    finally:
        con.close()


def pyiceberg_rows(table, columns: list[str]) -> list[tuple]:
    """The table's rows as pyiceberg reads them (deletes applied), sorted."""
    rows = table.scan(selected_fields=tuple(columns)).to_arrow().select(columns).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in rows)


def polars_rows(table, columns: list[str]) -> list[tuple]:
    """The table's rows as polars' scan_iceberg reads them (deletes applied), sorted."""
    import polars as pl

    frame = pl.scan_iceberg(table).select(columns).collect()
    return sorted(frame.rows())


def spark_rows(metadata_location: str, columns: list[str]) -> list[tuple]:
    """The table's rows as Spark 3.5 with Iceberg's own runtime reads them (deletes applied), sorted."""
    python = SPARK35 / "bin" / "python"
    if not (SPARK35 / ".installed").exists():
        raise AssertionError(f"no Spark 3.5 reader in {SPARK35}: `make test` installs it "
                             "(tests/spark35/install.sh)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python), SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([str(python), str(ROOT / "tests" / "spark35" / "read.py"), metadata_location,
                           ",".join(columns)], capture_output=True, timeout=300, env=env)
    if done.returncode:
        raise AssertionError(f"Spark 3.5 could not read {metadata_location}: {done.stderr.decode()[-3000:]}")
    return sorted(pickle.loads(done.stdout))
