"""Input kind 'postgres': a Postgres subsource, or a table created from a Postgres source. Its source's replication
(engine/ingest/postgres.py) keeps each as a table of icesink's store whose changes are logged as Parquet segments
(engine/segments.py), so a sink reads it as it reads a table: offsets as its frontier, the same acknowledgements.
The replication deletes the segments every sink of the table has acknowledged; a sink that starts after that reads a
snapshot of the table's rows first."""
from __future__ import annotations

from .base import UnreadableInput
from .engine_table import EngineTableInput


class PostgresSubsourceInput(EngineTableInput):
    replicated = True

    def __init__(self, catalog, relation, origin):
        if relation.kind == "source":
            raise UnreadableInput(f"source '{relation.name}' is read through its subsources: CREATE SINK … FROM one "
                                  f"of them (SHOW SUBSOURCES ON {relation.name}), or from a table created with CREATE "
                                  f"TABLE … FROM SOURCE {relation.name} (REFERENCE …)")
        super().__init__(catalog, relation, origin)

    def acknowledge(self, sink_id: str, frontier) -> None:
        self.log.acknowledge(sink_id, self.relation.id, frontier.offset)
