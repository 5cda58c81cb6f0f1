"""icesink: keeps Apache Iceberg tables continuously in sync with operational data."""
from .control.executor import Result
from .errors import CatalogError, IcesinkError, NotSupportedYet, ParseError, PlanError
from .session import Session, connect

__all__ = ["CatalogError", "IcesinkError", "NotSupportedYet", "ParseError", "PlanError", "Result", "Session",
           "connect"]
