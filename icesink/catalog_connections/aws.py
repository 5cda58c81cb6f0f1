"""AWS connections: credentials for S3, Glue and S3 Tables, through boto3. Static keys (with a session token), or
a role assumed through STS with the process's own credentials (boto3's default chain) and refreshed before it
expires; one of the two, as Materialize requires. ENDPOINT points every service at an S3-compatible store or a
test server."""
from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Optional

from ..errors import PlanError
from ..model.descriptors import AwsOptions
from ..model.options import OptionSpec, Rules, text
from .base import ConnectionInvalid, ConnectionKind, Connector

OPTIONS = {
    "REGION": text(),
    "ENDPOINT": text(),
    "ACCESS KEY ID": text("secret"),
    "SECRET ACCESS KEY": OptionSpec(("secret",)),
    "SESSION TOKEN": text("secret"),
    "ASSUME ROLE ARN": text(),
    "ASSUME ROLE SESSION NAME": text(),
    "EXTERNAL ID": text(),
}
DEFAULT_REGION = "us-east-1"
ROLE_SECONDS = 3600  # asked of STS for an assumed role's credentials
REFRESH_BEFORE_EXPIRY = 300  # seconds: a batch started with credentials this close to expiring gets new ones


def check(given, end: int) -> None:
    rules = Rules(given, PlanError)
    rules.needs("SECRET ACCESS KEY", "ACCESS KEY ID")
    rules.needs("ACCESS KEY ID", "SECRET ACCESS KEY")
    rules.needs("SESSION TOKEN", "ACCESS KEY ID")
    rules.needs("ASSUME ROLE SESSION NAME", "ASSUME ROLE ARN")
    rules.needs("EXTERNAL ID", "ASSUME ROLE ARN")
    rules.excludes("ACCESS KEY ID", "ASSUME ROLE ARN")  # as in Materialize: a role is assumed with the engine's own
    if "ACCESS KEY ID" not in given and "ASSUME ROLE ARN" not in given:
        raise PlanError("an AWS connection must specify either ASSUME ROLE ARN or ACCESS KEY ID and SECRET ACCESS "
                        "KEY", end)


@dataclass(frozen=True)
class AwsCredentials:
    access_key_id: str
    secret_access_key: str
    session_token: Optional[str] = None
    expires_at: Optional[float] = None  # epoch seconds; None when nothing says

    def fresh(self) -> bool:
        return self.expires_at is None or self.expires_at - time.time() > REFRESH_BEFORE_EXPIRY


_roles: dict[tuple, AwsCredentials] = {}  # assumed roles' credentials, shared by every runner of this process
_roles_lock = threading.Lock()


class AwsConnector(Connector):
    type_words = "AWS connection"

    @property
    def region(self) -> str:
        return self.options.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") \
            or DEFAULT_REGION

    @property
    def external_id(self) -> Optional[str]:
        """EXTERNAL ID, else the one icesink made up for this installation (shown in mz_aws_connections)."""
        return self.descriptor.external_id or self.options.external_id

    @property
    def endpoint(self) -> Optional[str]:
        return self.options.endpoint

    def _base_credentials(self) -> AwsCredentials:
        """The keys the connection names, else (to assume its role with) boto3's default chain (environment,
        profile, instance role)."""
        if self.options.access_key_id is not None:
            return AwsCredentials(self.value(self.options.access_key_id),
                                  self.value(self.options.secret_access_key),
                                  self.value(self.options.session_token))
        import boto3

        found = boto3.Session(region_name=self.region).get_credentials()
        if found is None:
            raise ConnectionInvalid(f"AWS connection '{self.name}': no credentials to assume its role with: "
                                    "configure AWS's default credential chain (environment, profile or instance "
                                    "role) for the icesink process")
        frozen = found.get_frozen_credentials()
        return AwsCredentials(frozen.access_key, frozen.secret_key, frozen.token)

    def credentials(self) -> AwsCredentials:
        """What to sign requests with now: the role's credentials when the connection assumes one (assumed again
        when they come within REFRESH_BEFORE_EXPIRY of expiring), else the base credentials."""
        base = self._base_credentials()
        if not self.options.assume_role_arn:
            return base
        key = (base.access_key_id, self.options.assume_role_arn, self.external_id, self.endpoint)
        with _roles_lock:
            held = _roles.get(key)
            if held is None or not held.fresh():
                held = _roles[key] = self._assume_role(base)
            return held

    def _assume_role(self, base: AwsCredentials) -> AwsCredentials:
        arguments = {"RoleArn": self.options.assume_role_arn, "DurationSeconds": ROLE_SECONDS,
                     "RoleSessionName": self.options.assume_role_session_name or f"icesink-{self.name}"}
        if self.external_id:
            arguments["ExternalId"] = self.external_id
        try:
            issued = self._client("sts", base).assume_role(**arguments)["Credentials"]
        except Exception as exc:
            raise self.explain(exc, f"assuming the role {self.options.assume_role_arn}") from None
        return AwsCredentials(issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"],
                              issued["Expiration"].timestamp())

    def _client(self, service: str, credentials: AwsCredentials):
        import boto3
        from botocore.config import Config

        return boto3.client(service, region_name=self.region, endpoint_url=self.endpoint,
                            aws_access_key_id=credentials.access_key_id,
                            aws_secret_access_key=credentials.secret_access_key,
                            aws_session_token=credentials.session_token,
                            config=Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 2}))

    def client(self, service: str):
        """A boto3 client for `service` with the connection's current credentials."""
        return self._client(service, self.credentials())

    def validate(self) -> None:
        """Asks STS who the base credentials are, then assumes the role when the connection names one."""
        try:
            self._client("sts", self._base_credentials()).get_caller_identity()
        except ConnectionInvalid:
            raise
        except Exception as exc:
            expired = self._expired_message(exc)
            raise (ConnectionInvalid(expired) if expired else
                   self.explain(exc, "checking its credentials with STS")) from None
        if self.options.assume_role_arn:
            with _roles_lock:
                _roles.clear()
            assumed = self.credentials()
            try:
                self._client("sts", assumed).get_caller_identity()
            except Exception as exc:
                raise self.explain(exc, f"using the role {self.options.assume_role_arn}") from None

    def s3_properties(self) -> dict[str, str]:
        """pyiceberg's FileIO properties for data files on S3 with these credentials (its pyarrow FileIO on Spark's
        executors writes them straight to S3)."""
        credentials = self.credentials()
        properties = {"s3.region": self.region, "s3.access-key-id": credentials.access_key_id,
                      "s3.secret-access-key": credentials.secret_access_key}
        if credentials.session_token:
            properties["s3.session-token"] = credentials.session_token
        if self.endpoint:
            properties["s3.endpoint"] = self.endpoint
            properties["s3.force-virtual-addressing"] = "false"
        return properties

    def client_properties(self, prefix: str = "client") -> dict[str, str]:
        """pyiceberg's properties for its own AWS clients (Glue, SigV4 signing) with these credentials."""
        credentials = self.credentials()
        properties = {f"{prefix}.region": self.region, f"{prefix}.access-key-id": credentials.access_key_id,
                      f"{prefix}.secret-access-key": credentials.secret_access_key}
        if credentials.session_token:
            properties[f"{prefix}.session-token"] = credentials.session_token
        return properties

    def expired_temporary_credentials(self) -> Optional[str]:
        """When the connection holds temporary keys (SESSION TOKEN) that STS no longer accepts, says so. An object
        store refuses expired ones as it refuses any other request (S3 answers a HEAD with a bare 403), so a failure
        is only blamed on expiry once STS confirms it."""
        if self.options.session_token is None or self.options.assume_role_arn:
            return None
        try:
            self._client("sts", self._base_credentials()).get_caller_identity()
        except Exception as exc:
            return self._expired_message(exc)
        return None

    def _expired_message(self, exc: BaseException) -> Optional[str]:
        code = error_of(exc).get("Code")
        if self.options.session_token is None or code not in _REFUSED_KEYS:
            return None
        return (f"AWS connection '{self.name}': its temporary credentials (SESSION TOKEN) have expired or were "
                f"revoked ({code}): give it new ones with ALTER SECRET (ACCESS KEY ID, SECRET ACCESS KEY and "
                "SESSION TOKEN), or use ASSUME ROLE ARN, whose credentials icesink renews itself")

    def explain(self, exc: BaseException, step: str) -> ConnectionInvalid:
        return ConnectionInvalid(f"AWS connection '{self.name}': {step} failed: {aws_cause(exc, self.endpoint)}")


def error_of(exc: BaseException) -> dict:
    """The Code and Message botocore read from a refusal. An S3-compatible STS answers in S3's error form, which
    botocore leaves at the top of the response."""
    response = getattr(exc, "response", None) or {}
    error = response.get("Error", {})
    return response if error.get("Code") in (None, "Unknown") and "Code" in response else error


def aws_cause(exc: BaseException, endpoint: Optional[str] = None) -> str:
    """One line a user can act on, from botocore's exceptions (or any other)."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError

    if isinstance(exc, ClientError):
        error = error_of(exc)
        code, message = error.get("Code", "?"), error.get("Message") or ""
        hint = _HINTS.get(code)
        return f"{code}: {message}".rstrip(": ") + (f" ({hint})" if hint else "")
    if isinstance(exc, EndpointConnectionError):
        return f"cannot reach {endpoint or exc.kwargs.get('endpoint_url', 'the AWS endpoint')}"
    if isinstance(exc, NoCredentialsError):
        return "no credentials"
    return f"{type(exc).__name__}: {exc}"


_HINTS = {
    "InvalidClientTokenId": "the access key ID is not known",
    "InvalidAccessKeyId": "the access key ID is not known",
    "SignatureDoesNotMatch": "the secret access key is wrong",
    "ExpiredToken": "the session token has expired",
    "AccessDenied": "permission denied",
    "NoSuchBucket": "the bucket does not exist",
    "403": "permission denied",
}
_REFUSED_KEYS = ("ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "InvalidAccessKeyId",
                 "InvalidToken")
# pyarrow's S3 errors (on the driver or a Spark executor) spell the same codes in upper snake case, deep in the text
_HINTS_IN_TEXT = [(re.compile(rf"\b({code}|{re.sub(r'(?<!^)(?=[A-Z])', '_', code).upper()})\b"), hint)
                  for code, hint in _HINTS.items() if not code.isdigit()]


def storage_hint(cause: str) -> str:
    """A failure an object store reported, said first in a user's words when it names an AWS error code."""
    for pattern, hint in _HINTS_IN_TEXT:
        if pattern.search(cause):
            return f"object store: {hint}: {cause}"
    return cause

KIND = ConnectionKind("aws", "AWS connection", OPTIONS, AwsOptions, check, AwsConnector)
