"""Postgres connections (the upstream of Postgres sources)."""
from __future__ import annotations

from ..errors import PlanError
from ..model.descriptors import PostgresOptions
from ..model.options import OptionSpec, Rules, text
from .base import ConnectionKind, Connector

OPTIONS = {
    "HOST": text(),
    "PORT": OptionSpec(("number", "string")),
    "DATABASE": text(),
    "USER": text("secret"),
    "PASSWORD": OptionSpec(("secret",)),
    "SSL MODE": text(choices=("disable", "require", "verify-ca", "verify-full")),
    "SSL CERTIFICATE AUTHORITY": text("secret"),
    "SSL CERTIFICATE": text("secret"),
    "SSL KEY": OptionSpec(("secret",)),
    "AWS CONNECTION": OptionSpec(("object", "word")),
}


def check(given, end: int) -> None:
    rules = Rules(given, PlanError)
    for name in ("HOST", "USER"):
        rules.required(name, f"a Postgres connection needs {name}", end)
    rules.needs("SSL CERTIFICATE", "SSL KEY")
    rules.needs("SSL KEY", "SSL CERTIFICATE")
    if "PORT" in given:
        port = str(given["PORT"].value)
        if not port.isdigit() or not 1 <= int(port) <= 65535:
            raise PlanError(f"PORT must be a number from 1 to 65535, not {port}", given["PORT"].value_pos)


class PostgresConnector(Connector):
    def validate(self) -> None:
        raise self.not_supported("Postgres connections")


KIND = ConnectionKind("postgres", "Postgres connection", OPTIONS, PostgresOptions, check, PostgresConnector)
