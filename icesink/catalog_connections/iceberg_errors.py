"""Why an Iceberg catalog could not be reached or used, in words a user can act on: pyiceberg's, requests' and
botocore's exceptions name the HTTP status or the error code; the user needs to know which setting to fix."""
from __future__ import annotations

import re

from ..errors import first_line
from .aws import aws_cause, storage_hint


def catalog_cause(exc: BaseException, connector) -> str:
    import requests
    from botocore.exceptions import BotoCoreError, ClientError
    from pyiceberg import exceptions as iceberg

    where = connector.options.url or connector.catalog_type
    message = first_line(exc)
    if isinstance(exc, OSError) and not isinstance(exc, requests.exceptions.RequestException):
        return storage_hint(f"{type(exc).__name__}: {message}")  # pyarrow's, from the object store
    if isinstance(exc, requests.exceptions.ConnectionError):
        return f"cannot reach the Iceberg catalog at {where}"
    if isinstance(exc, requests.exceptions.Timeout):
        return f"the Iceberg catalog at {where} did not answer in time"
    if isinstance(exc, iceberg.OAuthError):
        return f"the OAuth2 server refused the client credentials (CREDENTIAL): {message}"
    if isinstance(exc, (iceberg.UnauthorizedError, iceberg.AuthorizationExpiredError)):
        return f"the Iceberg catalog refused the credentials: {message}"
    if isinstance(exc, iceberg.ForbiddenError):
        if _BAD_CREDENTIALS.search(message):  # SigV4 catalogs answer 403 to a wrong key
            return f"the Iceberg catalog refused the credentials: {message}"
        return f"permission denied by the Iceberg catalog: {message}"
    if _is_unknown_warehouse(exc, message):
        return (f"unknown warehouse {connector.options.warehouse!r}" +
                (" (for S3 Tables, the table bucket's ARN)" if connector.catalog_type == "s3tablesrest" else "")
                + f": {message}")
    if isinstance(exc, (ClientError, BotoCoreError)):
        return aws_cause(exc, connector.aws().endpoint if connector.options.aws_connection else None)
    if isinstance(exc, (iceberg.ServerError, iceberg.RESTError, iceberg.BadRequestError)):
        return f"the Iceberg catalog at {where} answered: {message}"
    return storage_hint(f"{type(exc).__name__}: {message}")


_WAREHOUSE = re.compile(r"warehouse|table ?bucket|NoSuchBucket", re.I)
_BAD_CREDENTIALS = re.compile(r"signature .*does not match|InvalidAccessKeyId|access key .*(does not exist|invalid)|"
                              r"security token .*(invalid|expired)|ExpiredToken", re.I)


def _is_unknown_warehouse(exc: BaseException, message: str) -> bool:
    from pyiceberg import exceptions as iceberg

    if not type(exc).__module__.startswith("pyiceberg") or isinstance(
            exc, (iceberg.NoSuchIcebergTableError, iceberg.NoSuchTableError)):
        return False
    return bool(_WAREHOUSE.search(message)) and not isinstance(exc, (iceberg.UnauthorizedError,
                                                                      iceberg.ForbiddenError))
