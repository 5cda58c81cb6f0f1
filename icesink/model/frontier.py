"""How far a sink has committed its input. The engine stores it in the snapshot summary, compares it and hands it
back to the input kind that made it; only the input kind knows what its offset counts (an engine table's log
offset, a load generator's tick << 20 | row, a Postgres LSN)."""
from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Frontier:
    """Every change with an offset at or below `offset` is committed; the next batch starts above it."""

    offset: int = 0

    def to_json(self) -> dict:
        return {"offset": self.offset}

    @classmethod
    def from_json(cls, data: dict) -> "Frontier":
        return cls(int(data.get("offset", 0)))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    def __str__(self) -> str:
        return self.dumps()
