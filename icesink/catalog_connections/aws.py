"""AWS connections (credentials or role assumption for S3, Glue and S3 Tables)."""
from .base import Connector


class AwsConnector(Connector):
    def validate(self) -> None:
        raise self.not_supported("AWS connections")
