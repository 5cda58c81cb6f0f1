"""Input kind 'postgres': a Postgres subsource, or a table created from a Postgres source. Its source's replication
(engine/ingest/postgres.py) keeps each as an engine table, rows and change log, so a sink reads it as it reads a
table: log offsets as its frontier, the same acknowledgements and compaction."""
from __future__ import annotations

from .base import UnreadableInput
from .engine_table import EngineTableInput


class PostgresSubsourceInput(EngineTableInput):
    def __init__(self, catalog, relation, origin):
        if relation.kind == "source":
            raise UnreadableInput(f"source '{relation.name}' is read through its subsources: CREATE SINK … FROM one "
                                  f"of them (SHOW SUBSOURCES ON {relation.name}), or from a table created with CREATE "
                                  f"TABLE … FROM SOURCE {relation.name} (REFERENCE …)")
        super().__init__(catalog, relation, origin)
