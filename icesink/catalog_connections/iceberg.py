"""Iceberg catalog connections. 'local' is the embedded default: a warehouse directory under the
data directory (or WAREHOUSE), which needs nothing external to check."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

from ..catalog.private import private_file
from ..errors import NotSupportedYet, PlanError
from ..model.descriptors import IcebergCatalogOptions
from ..model.options import OptionSpec, Rules, text
from .base import ConnectionInvalid, ConnectionKind, Connector

OPTIONS = {
    "CATALOG TYPE": text(choices=("rest", "s3tablesrest", "glue", "local")),
    "URL": text(),
    "WAREHOUSE": text(),
    "CREDENTIAL": text("secret", "concat-secret"),
    "TOKEN": OptionSpec(("secret",)),
    "SCOPE": text(),
    "OAUTH2 SERVER URL": text(),
    "ACCESS DELEGATION": text(choices=("vended-credentials", "remote-signing")),
    "AWS CONNECTION": OptionSpec(("object", "word")),
}
_REST_ONLY = ("CREDENTIAL", "TOKEN", "SCOPE", "OAUTH2 SERVER URL", "ACCESS DELEGATION")


def check(given, end: int) -> None:
    rules = Rules(given, PlanError)
    rules.required("CATALOG TYPE", "an Iceberg catalog connection needs CATALOG TYPE ('rest', 's3tablesrest', "
                                   "'glue' or 'local')", end)
    catalog_type, type_pos = given["CATALOG TYPE"].value, given["CATALOG TYPE"].pos
    if catalog_type != "rest":
        for name in _REST_ONLY:
            if name in given:
                raise PlanError(f"{name} applies only to CATALOG TYPE 'rest', not '{catalog_type}'", given[name].pos)
    if catalog_type == "rest":
        rules.required("URL", "CATALOG TYPE 'rest' requires URL", type_pos)
    if catalog_type in ("glue", "local") and "URL" in given:
        raise PlanError(f"URL does not apply to CATALOG TYPE '{catalog_type}'", given["URL"].pos)
    if catalog_type in ("s3tablesrest", "glue"):
        for name in (("WAREHOUSE", "AWS CONNECTION") if catalog_type == "s3tablesrest" else ("AWS CONNECTION",)):
            rules.required(name, f"CATALOG TYPE '{catalog_type}' requires {name}", type_pos)
    rules.excludes("CREDENTIAL", "TOKEN")
    rules.needs("SCOPE", "CREDENTIAL", " (the OAuth2 client credentials flow)")
    rules.needs("OAUTH2 SERVER URL", "CREDENTIAL", " (the OAuth2 client credentials flow)")


LOCAL_WAREHOUSE_DIR = "warehouse"
LOCAL_CATALOG_FILE = "iceberg_catalog.db"


class IcebergCatalogConnector(Connector):
    @property
    def catalog_type(self) -> str:
        return self.options.catalog_type

    def local_warehouse(self) -> Path:
        warehouse = self.options.warehouse
        if warehouse and warehouse.startswith("file://"):
            warehouse = warehouse[len("file://"):]
        return Path(warehouse) if warehouse else self.data_dir / LOCAL_WAREHOUSE_DIR

    def validate(self) -> None:
        if self.catalog_type != "local":
            raise self.not_supported(f"'{self.catalog_type}' Iceberg catalogs")
        warehouse = self.local_warehouse()
        probe = warehouse / f".icesink-probe-{uuid.uuid4().hex}"
        try:
            warehouse.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"")
            os.unlink(probe)
        except OSError as exc:
            raise ConnectionInvalid(f"connection '{self.name}': cannot write to the warehouse {warehouse}: "
                                    f"{exc.strerror}") from None

    def catalog_properties(self) -> dict[str, str]:
        """The properties pyiceberg's load_catalog takes for this connection."""
        if self.catalog_type != "local":
            raise NotSupportedYet(f"writing to '{self.catalog_type}' Iceberg catalogs is not supported yet; "
                                  "use CATALOG TYPE 'local'")
        warehouse = self.local_warehouse()
        warehouse.mkdir(parents=True, exist_ok=True)
        private_file(self.data_dir / LOCAL_CATALOG_FILE)
        return {"type": "sql", "uri": f"sqlite:///{self.data_dir / LOCAL_CATALOG_FILE}",
                "warehouse": f"file://{warehouse.resolve()}"}

    def load_catalog(self):
        """A pyiceberg catalog for this connection."""
        from pyiceberg.catalog import load_catalog
        from sqlalchemy.exc import OperationalError

        properties = self.catalog_properties()
        for attempt in range(5):
            try:
                return load_catalog("icesink", **properties)
            except OperationalError:  # another process created the catalog's tables at the same moment
                if attempt == 4:
                    raise


KIND = ConnectionKind("iceberg-catalog", "Iceberg catalog connection", OPTIONS, IcebergCatalogOptions, check,
                      IcebergCatalogConnector)
