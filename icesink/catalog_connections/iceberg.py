"""Iceberg catalog connections, each reached through pyiceberg's load_catalog:
- 'rest': an Iceberg REST catalog (Polaris, Nessie, Lakekeeper, Tabular…), OAuth2 client credentials or a bearer
  token, data files on S3 with the credentials the catalog vends or else the AWS connection's;
- 's3tablesrest': AWS S3 Tables' Iceberg REST endpoint, requests signed with SigV4 (signing name `s3tables`) with the
  AWS connection's credentials;
- 'glue': the AWS Glue Data Catalog through boto3, data files on S3;
- 'local': the embedded default, a SQLite catalog and a warehouse directory under the data directory (or WAREHOUSE).
A REST catalog on Google Cloud (BigLake with a GCP CONNECTION, or STORAGE PROVIDER 'gcs') or Azure ('adls') is kept
but not run yet.
Secrets and AWS credentials are read each time the properties are built, so a rotated secret or a refreshed role
applies at the next connect."""
from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

from ..catalog.private import private_file
from ..errors import NotSupportedYet, PlanError
from ..model.descriptors import IcebergCatalogOptions
from ..model.options import OptionSpec, Rules, text
from .aws import error_of
from .base import ConnectionInvalid, ConnectionKind, Connector
from .gcp import GCS_NOT_SUPPORTED

OPTIONS = {
    "CATALOG TYPE": text(choices=("rest", "s3tablesrest", "glue", "local")),
    "URL": text(),
    "WAREHOUSE": text(),
    "CREDENTIAL": text("secret", "concat-secret"),
    "TOKEN": OptionSpec(("secret",)),
    "SCOPE": text(),
    "OAUTH2 SERVER URL": text(),
    "ACCESS DELEGATION": text(choices=("vended-credentials",)),  # Materialize's only one
    "AWS CONNECTION": OptionSpec(("object", "word")),
    "STORAGE PROVIDER": text(choices=("s3", "gcs", "adls")),
    "GCP CONNECTION": OptionSpec(("object", "word")),
}
_REST_ONLY = ("CREDENTIAL", "TOKEN", "SCOPE", "OAUTH2 SERVER URL", "ACCESS DELEGATION", "STORAGE PROVIDER",
              "GCP CONNECTION")
S3_TABLES_URL = "https://s3tables.{region}.amazonaws.com/iceberg"
BIGLAKE_URL = "https://biglake.googleapis.com/iceberg/v1/restcatalog"


def s3_tables_region(warehouse: str) -> str | None:
    """The region a table bucket's ARN names (None for another form of warehouse, as an S3-compatible store's)."""
    arn = re.match(r"^arn:aws[a-z-]*:s3tables:([a-z0-9-]+):", warehouse or "")
    return arn.group(1) if arn else None


def check(given, end: int) -> None:
    rules = Rules(given, PlanError)
    rules.required("CATALOG TYPE", "an Iceberg catalog connection needs CATALOG TYPE ('rest', 's3tablesrest', "
                                   "'glue' or 'local')", end)
    catalog_type, type_pos = given["CATALOG TYPE"].value, given["CATALOG TYPE"].pos
    if catalog_type == "s3tablesrest" and "STORAGE PROVIDER" in given:  # always S3: meaningless, as Materialize says
        raise PlanError("s3tablesrest connections do not support STORAGE PROVIDER", given["STORAGE PROVIDER"].pos)
    if catalog_type != "rest":
        for name in _REST_ONLY:
            if name in given:
                raise PlanError(f"{name} applies only to CATALOG TYPE 'rest', not '{catalog_type}'", given[name].pos)
    if catalog_type == "rest":
        rules.required("URL", "CATALOG TYPE 'rest' requires URL", type_pos)
    if catalog_type in ("glue", "local") and "URL" in given:
        raise PlanError(f"URL does not apply to CATALOG TYPE '{catalog_type}'", given["URL"].pos)
    if catalog_type in ("s3tablesrest", "glue"):
        for name in ("WAREHOUSE", "AWS CONNECTION") if catalog_type == "s3tablesrest" else ("AWS CONNECTION",
                                                                                           "WAREHOUSE"):
            rules.required(name, f"CATALOG TYPE '{catalog_type}' requires {name}"
                           + (" (the s3:// location new tables go under)" if name == "WAREHOUSE" and
                              catalog_type == "glue" else ""), type_pos)
    if catalog_type == "glue" and "WAREHOUSE" in given and not str(given["WAREHOUSE"].value).startswith("s3://"):
        raise PlanError("CATALOG TYPE 'glue' needs WAREHOUSE 's3://bucket/path'", given["WAREHOUSE"].value_pos)
    if "GCP CONNECTION" in given and str(given.get("URL").value if "URL" in given else "").rstrip("/") != BIGLAKE_URL:
        # the service account's token is for Google's catalog only: sent elsewhere, it could be stolen (SS-69)
        raise PlanError(f"a GCP connection can only be used with '{BIGLAKE_URL}' (BigLake's Iceberg REST catalog)",
                        given["GCP CONNECTION"].pos)
    rules.excludes("CREDENTIAL", "TOKEN")
    rules.needs("SCOPE", "CREDENTIAL", " (the OAuth2 client credentials flow)")
    rules.needs("OAUTH2 SERVER URL", "CREDENTIAL", " (the OAuth2 client credentials flow)")


LOCAL_WAREHOUSE_DIR = "warehouse"
LOCAL_CATALOG_FILE = "iceberg_catalog.db"


class IcebergCatalogConnector(Connector):
    type_words = "Iceberg catalog connection"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._loaded: tuple[dict, object] | None = None  # (properties, pyiceberg catalog)
        self._data_files_aws: str | None = None  # a sink's USING AWS CONNECTION

    def writing_with(self, aws_connection_id: str | None) -> "IcebergCatalogConnector":
        """Data and metadata files go to S3 with this AWS connection's credentials (a sink's USING AWS CONNECTION,
        as in Materialize) rather than the catalog connection's; the catalog itself is still reached with its own."""
        self._data_files_aws = aws_connection_id
        return self

    @property
    def catalog_type(self) -> str:
        return self.options.catalog_type

    def local_warehouse(self) -> Path:
        warehouse = self.options.warehouse
        if warehouse and warehouse.startswith("file://"):
            warehouse = warehouse[len("file://"):]
        return Path(warehouse) if warehouse else self.data_dir / LOCAL_WAREHOUSE_DIR

    def aws(self):
        """The AWS connection's connector, or None."""
        ref = self.options.aws_connection
        return self.connection(ref.connection_id) if ref is not None else None

    def _s3_properties(self) -> dict[str, str]:
        aws = self.connection(self._data_files_aws) if self._data_files_aws else self.aws()
        return aws.s3_properties() if aws is not None else {}

    def catalog_properties(self) -> dict[str, str]:
        """The properties pyiceberg's load_catalog takes for this connection, credentials as of now."""
        if self.options.gcp_connection is not None:
            self.connection(self.options.gcp_connection.connection_id).key()  # a broken key is said first
        if self.options.storage_provider in ("gcs", "adls") or self.options.gcp_connection is not None:
            raise ElsewhereNotSupported(f"connection '{self.name}': {_elsewhere(self.options.storage_provider)}")
        return getattr(self, f"_{self.catalog_type}_properties")()

    def _local_properties(self) -> dict[str, str]:
        warehouse = self.local_warehouse()
        warehouse.mkdir(parents=True, exist_ok=True)
        private_file(self.data_dir / LOCAL_CATALOG_FILE)
        return {"type": "sql", "uri": f"sqlite:///{self.data_dir / LOCAL_CATALOG_FILE}",
                "warehouse": f"file://{warehouse.resolve()}"}

    def _rest_properties(self) -> dict[str, str]:
        options = self.options
        properties = {"type": "rest", "uri": options.url}
        for key, value in (("warehouse", options.warehouse), ("credential", self.value(options.credential)),
                           ("token", self.value(options.token)), ("scope", options.scope),
                           ("oauth2-server-uri", options.oauth2_server_url)):
            if value:
                properties[key] = value
        if "credential" in properties and "oauth2-server-uri" not in properties:  # the spec's default, said aloud
            properties["oauth2-server-uri"] = f"{options.url.rstrip('/')}/v1/oauth/tokens"
        if options.access_delegation:
            properties["header.X-Iceberg-Access-Delegation"] = options.access_delegation
        properties.update(self._s3_properties())  # unless the catalog vends credentials (which take precedence)
        return properties

    def _s3tablesrest_properties(self) -> dict[str, str]:
        aws = self.aws()
        # the bucket's own region when the AWS connection names none (CREATE refused two that differ)
        region = (not aws.options.region and s3_tables_region(self.options.warehouse)) or aws.region
        return {"type": "rest", "uri": self.options.url or S3_TABLES_URL.format(region=region),
                "warehouse": self.options.warehouse, "rest.sigv4-enabled": "true", "rest.signing-name": "s3tables",
                **aws.client_properties(), **self._s3_properties(),
                "rest.signing-region": region, "client.region": region, "s3.region": region}

    def _glue_properties(self) -> dict[str, str]:
        aws = self.aws()
        properties = {"type": "glue", "warehouse": self.options.warehouse.rstrip("/"),
                      **aws.client_properties("glue"), **self._s3_properties()}
        if aws.endpoint:
            properties["glue.endpoint"] = aws.endpoint
        return properties

    def load_catalog(self):
        """A pyiceberg catalog for this connection with the credentials of now: the same one while they hold, a new
        one once a secret was rotated or an assumed role's credentials were refreshed."""
        properties = self.catalog_properties()
        if self._loaded is not None and self._loaded[0] == properties:
            return self._loaded[1]
        try:
            catalog = self._load(properties)
        except Exception as exc:
            raise self.explain(exc) from None
        self._loaded = (properties, catalog)
        return catalog

    def _load(self, properties: dict[str, str]):
        from pyiceberg.catalog import load_catalog
        from sqlalchemy.exc import OperationalError

        for attempt in range(5):
            try:
                return load_catalog("icesink", **properties)
            except OperationalError:  # another process created the local catalog's tables at the same moment
                if attempt == 4:
                    raise

    def validate(self) -> None:
        if self.catalog_type == "local":
            return self._validate_local()
        catalog = self.load_catalog()
        try:
            catalog.list_namespaces()
        except Exception as exc:
            raise self.explain(exc) from None
        if self.catalog_type == "glue":  # Glue keeps only names: the bucket is first met when writing
            self._check_bucket()

    def _check_bucket(self) -> None:
        bucket = self.options.warehouse.removeprefix("s3://").split("/", 1)[0]
        try:
            self.aws().client("s3").head_bucket(Bucket=bucket)
        except Exception as exc:
            code = error_of(exc).get("Code")
            if code in ("404", "NoSuchBucket"):
                raise ConnectionInvalid(f"connection '{self.name}': the bucket '{bucket}' of WAREHOUSE does not "
                                        "exist") from None
            raise self.explain(exc) from None

    def _validate_local(self) -> None:
        warehouse = self.local_warehouse()
        probe = warehouse / f".icesink-probe-{uuid.uuid4().hex}"
        try:
            warehouse.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"")
            os.unlink(probe)
        except OSError as exc:
            raise ConnectionInvalid(f"connection '{self.name}': cannot write to the warehouse {warehouse}: "
                                    f"{exc.strerror}") from None

    def explain(self, exc: BaseException) -> ConnectionInvalid:
        """A failure to reach or use the catalog, in words a user can act on."""
        from .iceberg_errors import catalog_cause

        if isinstance(exc, ConnectionInvalid):
            return exc
        return ConnectionInvalid(self.expired_temporary_credentials()
                                 or f"connection '{self.name}': {catalog_cause(exc, self)}")

    def expired_temporary_credentials(self) -> str | None:
        """Why a failure happened when it is that an AWS connection's temporary keys expired (see AwsConnector)."""
        for connection_id in dict.fromkeys((self._data_files_aws, self.options.aws_connection
                                            and self.options.aws_connection.connection_id)):
            if connection_id:
                expired = self.connection(connection_id).expired_temporary_credentials()
                if expired:
                    return expired
        return None


class ElsewhereNotSupported(NotSupportedYet):
    """A catalog on Google Cloud (BigLake, files on Cloud Storage) or files on Azure: a sink on it fails with why."""


def _elsewhere(storage_provider: str | None) -> str:
    if storage_provider == "adls":
        return ("writing to Azure Data Lake Storage is not supported yet: no Iceberg catalog over it runs where "
                "icesink's sinks are tested")
    return GCS_NOT_SUPPORTED


KIND = ConnectionKind("iceberg-catalog", "Iceberg catalog connection", OPTIONS, IcebergCatalogOptions, check,
                      IcebergCatalogConnector)
