"""How far a sink has committed its input: a value each input kind defines (docs/architecture.md, "Frontiers").

The engine never looks inside one. It stores it in the snapshot summary as JSON, compares two (is one past the
other?), asks it which changes of a batch lie beyond it (a SQL predicate over the change stream's columns), and asks
it where it stands after the changes of a batch, from what each write task reported of its rows (`reach`, computed
on the executors). An input kind whose position is not one number (a Kafka partition map, a view over several
inputs) is a new subclass here and a line in FRONTIERS; only `Offset` exists today. An engine table counts its log's
offsets, a load generator tick << 20 | row, a Postgres subsource its store's log offsets."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import ClassVar, Iterable

OFFSET = "_icesink_offset"  # the change stream's column that orders its changes (every input kind has it)


class Frontier:
    kind: ClassVar[str]

    def to_json(self) -> dict:
        raise NotImplementedError

    @classmethod
    def parse(cls, data: dict) -> "Frontier":
        raise NotImplementedError

    def beyond(self) -> str:
        """A Spark SQL predicate over the change stream's columns: true for the changes this frontier does not
        cover."""
        raise NotImplementedError

    @staticmethod
    def reach(rows) -> dict:
        """(On an executor) how far the changes in `rows`, an Arrow table of the change stream, go: JSON."""
        raise NotImplementedError

    def advanced(self, reaches: Iterable[dict]) -> "Frontier":
        """Where this frontier stands once the changes the `reach`es describe are committed too."""
        raise NotImplementedError

    def past(self, other: "Frontier") -> bool:
        """Covers every change `other` covers, and more."""
        raise NotImplementedError

    def joined(self, other: "Frontier") -> "Frontier":
        """The least frontier covering both."""
        raise NotImplementedError

    @staticmethod
    def from_json(data: dict) -> "Frontier":
        """Any kind's JSON back to its value; JSON without a kind is an Offset (all that releases before kinds
        wrote)."""
        kind = data.get("kind", Offset.kind)
        if kind not in FRONTIERS:
            raise ValueError(f"a frontier of kind '{kind}', which this icesink does not know (a newer release wrote it)")
        return FRONTIERS[kind].parse(data)

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def __str__(self) -> str:
        return self.dumps()


@dataclass(frozen=True)
class Offset(Frontier):
    """Changes are numbered in one sequence: every change at or below `offset` is committed."""

    kind: ClassVar[str] = "offset"
    offset: int = 0

    def to_json(self) -> dict:
        return {"offset": self.offset}  # no "kind": the summaries every release so far wrote

    @classmethod
    def parse(cls, data: dict) -> "Offset":
        return cls(int(data.get("offset", 0)))

    def beyond(self) -> str:
        return f"{OFFSET} > {self.offset}"

    @staticmethod
    def reach(rows) -> dict:
        import pyarrow.compute as pc

        return {"offset": pc.max(rows[OFFSET]).as_py()}

    def advanced(self, reaches: Iterable[dict]) -> "Offset":
        return Offset(max([self.offset, *(int(r["offset"]) for r in reaches)]))

    def past(self, other: Frontier) -> bool:
        return self.offset > _same_kind(self, other).offset

    def joined(self, other: Frontier) -> "Offset":
        return Offset(max(self.offset, _same_kind(self, other).offset))


def _same_kind(mine: Frontier, other: Frontier):
    if type(other) is not type(mine):
        raise TypeError(f"a {mine.kind} frontier compared with a {other.kind} one")
    return other


FRONTIERS: dict[str, type[Frontier]] = {Offset.kind: Offset}
