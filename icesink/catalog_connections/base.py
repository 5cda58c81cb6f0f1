"""The small interface every external system's connector implements."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import IcesinkError
from ..model.descriptors import ConnectionDescriptor, SecretRef
from ..model.options import OptionSpec


class ConnectionInvalid(IcesinkError):
    kind = "connection error"


class Connector(ABC):
    type_words = "connection"

    def __init__(self, name: str, descriptor: ConnectionDescriptor, secret: Callable[[str], str], catalog):
        self.name = name
        self.descriptor = descriptor
        self.options = descriptor.options
        self._secret = secret  # secret id -> value, read only when connecting
        self._catalog = catalog  # for the connections this one names
        self.data_dir = Path(catalog.data_dir)

    def value(self, option):
        """An option's value, a secret read from the store as of now (`'prefix' || SECRET s` joined)."""
        if isinstance(option, SecretRef):
            return (option.prefix or "") + self._secret(option.secret_id)
        return option

    def connection(self, connection_id: str) -> "Connector":
        """The connector of another connection this one uses (an Iceberg catalog's AWS connection)."""
        from . import connector_for

        return connector_for(self._catalog.get_by_id(connection_id), self._secret, self._catalog)

    @abstractmethod
    def validate(self) -> None:
        """Contacts the system with the connection's settings; raises ConnectionInvalid with the cause."""


@dataclass(frozen=True)
class ConnectionKind:
    """Everything about one kind of connection, in its own module: the options CREATE CONNECTION takes, the typed
    options the catalog keeps, the rules over their combination, and the connector that reaches the system."""

    type: str  # as the catalog and mz_connections name it
    what: str  # 'AWS connection'
    options: dict[str, OptionSpec]
    stored: type  # the descriptor's options dataclass
    check: Callable  # check(given: dict[str, Given], end: int) raises PlanError
    connector: type

    @property
    def a_what(self) -> str:
        return f"an {self.what}" if self.what[0] in "AEIOU" else f"a {self.what}"
