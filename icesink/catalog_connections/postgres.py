"""Postgres connections (the upstream of Postgres sources)."""
from .base import Connector


class PostgresConnector(Connector):
    def validate(self) -> None:
        raise self.not_supported("Postgres connections")
