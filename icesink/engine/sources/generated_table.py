"""Input kind 'generated table': a load generator's relation as a view over it reads it, from the table of the store
that keeps its rows (engine/generated_tables.py), read as an engine table's; the view's reader brings the table up to
the generator's tick before each batch. A sink on the relation itself reads the generator (generators.py)."""
from __future__ import annotations

import json

from ..generated_tables import catch_up, spec
from .engine_table import EngineTableInput


class GeneratedTableInput(EngineTableInput):
    def __init__(self, catalog, relation, origin):
        super().__init__(catalog, relation, origin)
        self.spec = spec(catalog, relation)
        catch_up(catalog.data_dir, [self.spec])  # the table exists before the view's index goes on it

    @staticmethod
    def log_readers(catalog, table_id: str) -> set[str]:
        """Only the sinks on views over the relation read its table's log: one on the relation itself reads the
        generator, and acknowledges nothing here."""
        sinks = [catalog.get_by_id(s) for s in catalog.sinks_reading(table_id)]
        return {s.id for s in sinks if s is not None and s.descriptor.view is not None
                and table_id in s.descriptor.view.table_ids}


def generated_option(inputs) -> str:
    """The `generated` option of a view's reader over `inputs` (ViewInputs.stream's): the load generators' relations
    among them, which the reader catches up before each batch."""
    return json.dumps([i.spec for i in inputs if isinstance(i, GeneratedTableInput)])
