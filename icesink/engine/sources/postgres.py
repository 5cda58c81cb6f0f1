"""Input kind 'postgres': a Postgres subsource. Its source's replication (engine/ingest/postgres.py) keeps each
subsource as an engine table, rows and change log, so a sink reads it as it reads a table: log offsets as its
frontier, the same acknowledgements and compaction."""
from __future__ import annotations

from .engine_table import EngineTableInput


class PostgresSubsourceInput(EngineTableInput):
    def __init__(self, catalog, relation, origin):
        if relation.kind != "subsource":
            from ...errors import PlanError

            raise PlanError(f"source '{relation.name}' is read through its subsources: CREATE SINK … FROM one of "
                            "them (SHOW SUBSOURCES ON " + relation.name + ")")
        super().__init__(catalog, relation, origin)
