"""Iceberg catalog connections. 'local' is the embedded default: a warehouse directory under the
data directory (or WAREHOUSE), which needs nothing external to check."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

from ..catalog.private import private_file
from ..errors import NotSupportedYet
from .base import ConnectionInvalid, Connector

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

    def load_catalog(self):
        """A pyiceberg catalog for this connection."""
        if self.catalog_type != "local":
            raise NotSupportedYet(f"writing to '{self.catalog_type}' Iceberg catalogs is not supported yet; "
                                  "use CATALOG TYPE 'local'")
        from pyiceberg.catalog.sql import SqlCatalog

        from sqlalchemy.exc import OperationalError

        warehouse = self.local_warehouse()
        warehouse.mkdir(parents=True, exist_ok=True)
        private_file(self.data_dir / LOCAL_CATALOG_FILE)
        for attempt in range(5):
            try:
                return SqlCatalog("icesink", uri=f"sqlite:///{self.data_dir / LOCAL_CATALOG_FILE}",
                                  warehouse=f"file://{warehouse.resolve()}")
            except OperationalError:  # another process created the catalog's tables at the same moment
                if attempt == 4:
                    raise
