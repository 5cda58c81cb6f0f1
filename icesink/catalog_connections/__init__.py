"""One module per external system, each behind `Connector.validate()`."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..catalog.store import CatalogObject
from .aws import AwsConnector
from .base import ConnectionInvalid, Connector
from .iceberg import IcebergCatalogConnector
from .postgres import PostgresConnector

_CONNECTORS = {"aws": AwsConnector, "iceberg-catalog": IcebergCatalogConnector, "postgres": PostgresConnector}


def connector_for(obj: CatalogObject, secret: Callable[[str], str], data_dir: Path) -> Connector:
    return _CONNECTORS[obj.type](obj.name, obj.descriptor, secret, data_dir)


__all__ = ["ConnectionInvalid", "Connector", "connector_for"]
