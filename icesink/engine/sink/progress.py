"""The sink's progress, kept in the summary of the snapshot that holds the data it describes."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

from ...model.frontier import Frontier

SINK_ID, SINK_VERSION, FRONTIER, BATCH = "icesink.sink-id", "icesink.sink-version", "icesink.frontier", "icesink.batch"
SEALED = "icesink.sealed"  # "true": the sink's input is finite and the table holds all of it
INPUT = "icesink.input"  # the catalog id of the relation whose changes the frontier counts (ALTER SINK … SET FROM)


@dataclass(frozen=True)
class Progress:
    snapshot_id: int
    sink_id: str
    version: int
    frontier: Frontier  # what is committed
    foreign_writes: tuple[int, ...] = ()  # snapshots of other writers found above ours
    sealed: bool = False
    input: Optional[str] = None  # None: written before icesink named it (SinkDescriptor.unnamed_input_id)

    def counts(self, input_id: str, unnamed_input_id: str) -> bool:
        """Whether the frontier counts changes of `input_id` (else the sink has switched to it since)."""
        return (self.input or unnamed_input_id) == input_id


def summary_properties(sink_id: str, version: int, frontier: Frontier, batch: dict, input_id: str) -> dict[str, str]:
    return {SINK_ID: sink_id, SINK_VERSION: str(version), FRONTIER: frontier.dumps(),
            BATCH: json.dumps(batch, sort_keys=True), INPUT: input_id}


def latest_progress(table, sink_id: str) -> Optional[Progress]:
    """Walks main's snapshots newest first: the first carrying this sink's id says where it stands.
    Compactions ('replace') are skipped; other writers' snapshots on the way are reported."""
    metadata = table.metadata
    snapshot = table.current_snapshot()
    foreign = []
    while snapshot is not None:
        summary = snapshot.summary
        props = summary.additional_properties if summary is not None else {}
        if props.get(SINK_ID) == sink_id:
            return Progress(snapshot.snapshot_id, sink_id, int(props[SINK_VERSION]),
                            Frontier.from_json(json.loads(props[FRONTIER])), tuple(foreign), props.get(SEALED) == "true",
                            props.get(INPUT))
        operation = summary.operation.value if summary is not None else ""
        if operation != "replace":
            foreign.append(snapshot.snapshot_id)
        parent = snapshot.parent_snapshot_id
        snapshot = metadata.snapshot_by_id(parent) if parent is not None else None
    return None
