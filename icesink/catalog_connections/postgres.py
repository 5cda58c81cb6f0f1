"""Postgres connections (the upstream of Postgres sources), reached with psycopg. Validation checks what logical
replication needs, one cause per message: the server answers, the login is accepted, `wal_level` is `logical`, the
user may replicate and a replication slot is free."""
from __future__ import annotations

import contextlib
import os

from ..errors import PlanError, first_line
from ..model.descriptors import PostgresOptions
from ..model.options import OptionSpec, Rules, text
from .base import ConnectionInvalid, ConnectionKind, Connector

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
DEFAULT_PORT = 5432
DEFAULT_DATABASE = "postgres"
CONNECT_TIMEOUT_S = 10


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


@contextlib.contextmanager
def in_memory_files(contents: dict[str, str]):
    """libpq's file parameters (`sslrootcert` …) as paths of in-memory files holding `contents`
    (/proc/self/fd/N): certificates and keys are never written to disk."""
    descriptors, paths = [], {}
    try:
        for name, content in contents.items():
            fd = os.memfd_create("icesink-pem", os.MFD_CLOEXEC)
            descriptors.append(fd)
            os.write(fd, content.encode())
            os.fchmod(fd, 0o600)  # libpq refuses a key that others may read
            paths[name] = f"/proc/self/fd/{fd}"
        yield paths
    finally:
        for fd in descriptors:
            os.close(fd)


class PostgresConnector(Connector):
    type_words = "Postgres connection"

    @property
    def address(self) -> str:
        return f"{self.options.host}:{self.options.port or DEFAULT_PORT}"

    @property
    def database(self) -> str:
        return self.options.database or DEFAULT_DATABASE

    @property
    def user(self) -> str:
        return self.value(self.options.user)

    @contextlib.contextmanager
    def connect(self, **extra):
        """A psycopg connection (autocommit) with the secrets of now; failures are ConnectionInvalid."""
        import psycopg

        with self._parameters() as params:
            try:
                connection = psycopg.connect(**params, autocommit=True, **extra)
            except psycopg.Error as exc:
                raise self.refused(exc) from None
        try:
            yield connection
        finally:
            connection.close()

    def replication_parameters(self) -> dict:
        """libpq's parameters for a process of its own that opens a replication connection (engine/ingest/
        slot_reader.py): certificates and keys by content, which it opens in memory; it is handed them by a pipe."""
        params, contents = self._libpq()
        return {"params": params, "files": contents}

    @contextlib.contextmanager
    def _parameters(self):
        """libpq's connection parameters; certificates and keys are open in memory while they are used."""
        params, contents = self._libpq()
        with in_memory_files(contents) as paths:
            yield {**params, **paths}

    def _libpq(self) -> tuple[dict, dict]:
        options = self.options
        params = {"host": options.host, "port": int(options.port or DEFAULT_PORT),
                  "dbname": self.database, "user": self.user,
                  "sslmode": options.ssl_mode or "disable", "connect_timeout": CONNECT_TIMEOUT_S,
                  "application_name": "icesink"}
        if options.password is not None:
            params["password"] = self.value(options.password)
        contents = {name: self.value(option) for name, option in (
            ("sslrootcert", options.ssl_certificate_authority), ("sslcert", options.ssl_certificate),
            ("sslkey", options.ssl_key)) if option is not None}
        return params, contents

    def refused(self, exc) -> ConnectionInvalid:
        # libpq: 'connection failed: connection to server at "h", port p failed: FATAL:  cause\n\thint'
        text = first_line(exc).rsplit(" failed: ", 1)[-1].removeprefix("FATAL:").strip()
        lowered = text.lower()
        if any(s in lowered for s in ("authentication failed", "no password supplied", "no pg_hba.conf entry",
                                               "pg_hba.conf rejects")):
            cause = f"the server refused the login of user '{self.user}': {text}"
        elif "database" in lowered and "does not exist" in lowered:
            cause = f"the database '{self.database}' does not exist"
        elif "failed to resolve host" in lowered:
            cause = f"cannot reach {self.address}: unknown host '{self.options.host}'"
        elif "ssl" in lowered or "certificate" in lowered:
            cause = f"SSL failed ({self.options.ssl_mode or 'disable'}): {text}"
        else:
            cause = f"cannot reach {self.address}: {text}"
        return self.invalid(cause)

    def invalid(self, cause: str) -> ConnectionInvalid:
        return ConnectionInvalid(f"Postgres connection '{self.name}': {cause}")

    def validate(self) -> None:
        with self.connect() as connection:
            wal_level = connection.execute("SHOW wal_level").fetchone()[0]
            if wal_level != "logical":
                raise self.invalid(f"wal_level is '{wal_level}', and logical replication needs 'logical': set "
                                   "wal_level = logical in postgresql.conf (or ALTER SYSTEM) and restart the server")
            may_replicate = connection.execute(
                "SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]
            if not may_replicate:
                raise self.invalid(f"user '{self.user}' may not replicate: ALTER ROLE \"{self.user}\" WITH "
                                   "REPLICATION (as a superuser), or use a user that may")
            slots, used = connection.execute(
                "SELECT current_setting('max_replication_slots')::int, count(*) FROM pg_replication_slots").fetchone()
            if used >= slots:
                raise self.invalid(f"no free replication slot: all {slots} of max_replication_slots are in use; "
                                   "drop an unused slot (pg_drop_replication_slot) or raise max_replication_slots")


KIND = ConnectionKind("postgres", "Postgres connection", OPTIONS, PostgresOptions, check, PostgresConnector)
