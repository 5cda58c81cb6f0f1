"""GCP connections: a service account key (JSON, kept as a secret), as Materialize's Iceberg catalog connections use
for a REST catalog whose files live on Google Cloud Storage (BigLake). icesink checks the key's shape; reaching
Google Cloud is not supported yet (see GCS_NOT_SUPPORTED)."""
from __future__ import annotations

import json

from ..errors import NotSupportedYet, PlanError
from ..model.descriptors import GcpOptions
from ..model.options import OptionSpec, Rules
from .base import ConnectionInvalid, ConnectionKind, Connector

OPTIONS = {"SERVICE ACCOUNT KEY": OptionSpec(("secret",))}
_KEY_FIELDS = ("type", "project_id", "private_key", "client_email")
GCS_NOT_SUPPORTED = ("writing to Google Cloud Storage is not supported yet: icesink's sinks are tested against "
                     "every catalog and store they write, and no Iceberg REST catalog over Cloud Storage runs where "
                     "they are tested")


def check(given, end: int) -> None:
    Rules(given, PlanError).required("SERVICE ACCOUNT KEY", "a GCP connection needs SERVICE ACCOUNT KEY = SECRET "
                                                            "name (the service account's JSON key)", end)


class GcpConnector(Connector):
    type_words = "GCP connection"

    def key(self) -> dict:
        """The service account key, checked for the fields Google's clients need; its value is never shown."""
        try:
            key = json.loads(self.value(self.options.service_account_key))
        except ValueError:
            raise ConnectionInvalid(f"connection '{self.name}': SERVICE ACCOUNT KEY is not JSON; give the key file "
                                    "Google Cloud made for the service account, as it is") from None
        missing = [f for f in _KEY_FIELDS if not isinstance(key, dict) or not key.get(f)]
        if missing:
            raise ConnectionInvalid(f"connection '{self.name}': SERVICE ACCOUNT KEY lacks {', '.join(missing)}: "
                                    "give the JSON key file of a service account")
        if key["type"] != "service_account":
            raise ConnectionInvalid(f"connection '{self.name}': SERVICE ACCOUNT KEY is a key of type "
                                    f"'{key['type']}', not 'service_account'")
        return key

    def validate(self) -> None:
        self.key()
        raise NotSupportedYet(f"connection '{self.name}': the key is well formed, but {GCS_NOT_SUPPORTED}")


KIND = ConnectionKind("gcp", "GCP connection", OPTIONS, GcpOptions, check, GcpConnector)
