"""The input kinds of a sink, one module each behind one interface (base.Input): the runner knows none by name.
Adding a kind (Postgres, a view, files, Kafka) is adding a module here and a line in INPUTS (docs/architecture.md,
"Where a new kind goes")."""
from __future__ import annotations

import shutil

from ...catalog.store import Catalog, CatalogObject
from ...model.descriptors import ViewInput
from ..failures import Unsupported
from ..tables import generated_name
from .arrangement import ARRANGEMENT_DIR
from .base import Input, ProgressBehindInput
from .engine_table import EngineTableInput
from .generated_table import GeneratedTableInput
from .generators import GeneratorInput
from .postgres import PostgresSubsourceInput
from .joined_view import JoinedViewInput
from .recomputed_view import RESULTS_DIR, RecomputedViewInput
from .view import MaterializedViewInput

# by the type of the object whose changes a sink reads: an engine table's own, a source's (for its subsources and the
# tables created from it)
INPUTS = {"table": EngineTableInput, "load-generator": GeneratorInput, "postgres": PostgresSubsourceInput}


def input_for(catalog: Catalog, relation: CatalogObject, view: ViewInput | None = None,
              sink_id: str | None = None) -> Input:
    """The input sink `sink_id` reads from `relation` (a table, a source, a subsource, or a materialized view, which
    `view` says how to compute: the sink's descriptor has it)."""
    if relation.kind == "materialized-view":
        if view is None:
            raise Unsupported(f"this sink was created before sinks on materialized views ran: recreate it to read "
                              f"'{relation.name}'")
        if view.recomputed and generated_name(view.input_id) in view.query_sql:
            # its progress is a generator's tick, which the tables that now keep the generator's rows do not count
            raise Unsupported(f"this sink was created when a view over a load generator was recomputed from the "
                              f"generator's history each batch: recreate it to read '{relation.name}'")
        tables = [_view_table(catalog, catalog.get_by_id(t)) for t in view.table_ids]
        from ..sink import state_dir

        state = None if sink_id is None else state_dir(catalog.data_dir, sink_id)
        if view.recomputed:
            made = RecomputedViewInput(catalog, relation, view, tables,
                                       state_dir(catalog.data_dir, sink_id) / RESULTS_DIR)
        elif view.others:
            made = JoinedViewInput(catalog, relation, view, tables)
        else:
            made = MaterializedViewInput(catalog, relation, view, tables[0], state)
        if state is not None and getattr(made, "arranged", None) is None:  # a copy for the view read before
            shutil.rmtree(state / ARRANGEMENT_DIR, ignore_errors=True)
        return made
    origin_id = getattr(relation.descriptor, "source_id", None)
    origin = catalog.get_by_id(origin_id) if origin_id else relation
    kind = INPUTS.get(origin.type)
    if kind is None:
        raise Unsupported(f"sinks from {origin.type} sources are not supported yet")
    return kind(catalog, relation, origin)


def _view_table(catalog: Catalog, relation: CatalogObject) -> Input:
    """The input of a relation a view reads: a load generator's is read from the table that keeps its rows."""
    found = input_for(catalog, relation)
    if isinstance(found, GeneratorInput):
        return GeneratedTableInput(catalog, relation, found.origin)
    return found


__all__ = ["INPUTS", "Input", "ProgressBehindInput", "input_for"]
