"""The small interface every external system's connector implements."""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable

from ..errors import IcesinkError, NotSupportedYet
from ..model.descriptors import ConnectionDescriptor


class ConnectionInvalid(IcesinkError):
    kind = "connection error"


class Connector(ABC):
    type_words = "connection"

    def __init__(self, name: str, descriptor: ConnectionDescriptor, secret: Callable[[str], str], data_dir: Path):
        self.name = name
        self.descriptor = descriptor
        self.options = descriptor.options
        self._secret = secret  # secret id -> value, read only when connecting
        self.data_dir = Path(data_dir)

    @abstractmethod
    def validate(self) -> None:
        """Contacts the system with the connection's settings; raises ConnectionInvalid with the cause."""

    def not_supported(self, what: str) -> NotSupportedYet:
        return NotSupportedYet(f"validating {what} is not supported yet: its connector arrives with the sink "
                               f"runtime; create it WITH (VALIDATE = false) to store it unchecked")
