"""The one interface every input kind of a sink implements: the runner knows no kind by name. An input kind is a
module beside this one and a line in INPUTS (__init__.py)."""
from __future__ import annotations

from pyspark.sql import DataFrame

from ...catalog.store import Catalog, CatalogObject
from ...model.frontier import Frontier, Offset
from ..failures import NeedsAction


class ProgressBehindInput(NeedsAction):
    """The sink's progress is older than what its input still holds: the changes after it are gone."""


class UnreadableInput(NeedsAction):
    """The sink reads an object its input kind reads otherwise (a Postgres source, read through its subsources)."""


class Input:
    """One sink's input: `relation` is the catalog object the sink reads (a table, a source, a subsource), `origin`
    the object that produces its changes (its source, or itself)."""

    # Every change replaces its key's row (no retractions): live rows per key cannot be counted, so an enforced KEY
    # is not checked against it.
    upsert_stream = False
    # What the input's frontiers are: called with no argument, the frontier before its first change.
    frontier_kind: type[Frontier] = Offset

    def __init__(self, catalog: Catalog, relation: CatalogObject, origin: CatalogObject):
        self.catalog, self.relation, self.origin = catalog, relation, origin

    def stream(self, spark, start: Frontier) -> DataFrame:
        """The input's changes above `start` as a streaming DataFrame: its columns, then OFFSET, DIFF and TS."""
        raise NotImplementedError

    def end(self) -> Frontier | None:
        """For a finite input (a load generator's UP TO), the frontier that covers all of its changes; None for
        one that never ends."""
        return None

    def holds_changes_after(self, frontier: Frontier) -> bool:
        """Whether a change past `frontier` is there to read now (an input that cannot tell says so)."""
        return True

    def key_sample(self, frontier: Frontier, column: str) -> list | None:
        """Values of `column` spread over the changes after `frontier`, as Python values that compare with the
        column's in Spark (integers, strings), when the input can tell without reading them all; None when it
        cannot."""
        return None

    def check_resume(self, frontier: Frontier) -> None:
        """Raises ProgressBehindInput when the input no longer holds the changes after `frontier`."""

    def acknowledge(self, sink_id: str, frontier: Frontier) -> None:
        """The sink committed everything up to `frontier` and will not read it again."""

    def close(self) -> None:
        pass
