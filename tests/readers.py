"""Independent readers of what a sink wrote: DuckDB's iceberg extension, loaded offline from its wheel."""
import glob
import os

import duckdb


def _extension(package: str) -> str:
    module = __import__(package)
    return glob.glob(os.path.join(os.path.dirname(module.__file__), "**", "*.duckdb_extension"), recursive=True)[0]


def duckdb_rows(metadata_location: str, columns: str = "*", order_by: str = "1") -> list[tuple]:
    con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    try:
        con.execute(f"LOAD '{_extension('duckdb_extension_avro')}'")
        con.execute(f"LOAD '{_extension('duckdb_extension_iceberg')}'")
        path = metadata_location.removeprefix("file://")
        return con.execute(f"SELECT {columns} FROM iceberg_scan('{path}') ORDER BY {order_by}").fetchall()
    finally:
        con.close()
