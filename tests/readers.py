"""Independent readers of what a sink wrote: DuckDB's iceberg extension, loaded offline from its wheel."""
import glob
import os

import duckdb


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
