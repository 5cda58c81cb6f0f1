"""AWS connections (credentials or role assumption for S3, Glue and S3 Tables)."""
from __future__ import annotations

from ..errors import PlanError
from ..model.descriptors import AwsOptions
from ..model.options import OptionSpec, Rules, text
from .base import ConnectionKind, Connector

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


def check(given, end: int) -> None:
    rules = Rules(given, PlanError)
    rules.needs("SECRET ACCESS KEY", "ACCESS KEY ID")
    rules.needs("ACCESS KEY ID", "SECRET ACCESS KEY")
    rules.needs("SESSION TOKEN", "ACCESS KEY ID")
    rules.needs("ASSUME ROLE SESSION NAME", "ASSUME ROLE ARN")
    rules.needs("EXTERNAL ID", "ASSUME ROLE ARN")
    rules.excludes("ACCESS KEY ID", "ASSUME ROLE ARN")


class AwsConnector(Connector):
    def validate(self) -> None:
        raise self.not_supported("AWS connections")


KIND = ConnectionKind("aws", "AWS connection", OPTIONS, AwsOptions, check, AwsConnector)
