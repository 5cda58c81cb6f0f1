"""icesink: keeps Apache Iceberg tables continuously in sync with operational data."""
from .errors import CatalogError, IcesinkError, NotSupportedYet, ParseError, PlanError

__all__ = ["CatalogError", "IcesinkError", "NotSupportedYet", "ParseError", "PlanError", "Result", "Session",
           "connect"]


def __getattr__(name: str):
    # the session and its executor load the whole engine: a process that needs only a small part of the package
    # (the replication's slot reader, engine/ingest/slot_reader.py) does not pay for them
    if name == "Result":
        from .control.executor import Result
        return Result
    if name in ("Session", "connect"):
        from . import session
        return getattr(session, name)
    raise AttributeError(f"module 'icesink' has no attribute {name!r}")
