"""One module per external system: its options, their rules, and a connector with validate() and a client. Adding
a kind of connection is adding a module here and a line in CONNECTION_KINDS."""
from __future__ import annotations

from typing import Callable

from ..catalog.store import CatalogObject
from . import aws, gcp, iceberg, postgres
from .base import ConnectionInvalid, ConnectionKind, Connector

CONNECTION_KINDS: dict[str, ConnectionKind] = {kind.type: kind for kind in (aws.KIND, iceberg.KIND, postgres.KIND, gcp.KIND)}


def connector_for(obj: CatalogObject, secret: Callable[[str], str], catalog) -> Connector:
    """`catalog` gives the data directory and the connections this one names (`data_dir`, `get_by_id`)."""
    return CONNECTION_KINDS[obj.type].connector(obj.name, obj.descriptor, secret, catalog)


__all__ = ["CONNECTION_KINDS", "ConnectionInvalid", "ConnectionKind", "Connector", "connector_for"]
