"""The input kinds of a sink, one module each behind one interface (base.Input): the runner knows none by name.
Adding a kind (Postgres, a view, files, Kafka) is adding a module here and a line in INPUTS."""
from __future__ import annotations

from ...catalog.store import Catalog, CatalogObject
from ...errors import NotSupportedYet
from .base import Input, ProgressBehindInput
from .engine_table import EngineTableInput
from .generators import GeneratorInput
from .postgres import PostgresSubsourceInput

INPUTS = {"engine-table": EngineTableInput, "load-generator": GeneratorInput, "postgres": PostgresSubsourceInput}


def input_for(catalog: Catalog, relation: CatalogObject) -> Input:
    """The input a sink reads from `relation` (a table, a source or a subsource)."""
    if relation.kind == "table" and relation.descriptor.is_engine_table:
        return EngineTableInput(catalog, relation, relation)
    origin_id = getattr(relation.descriptor, "source_id", None)
    origin = catalog.get_by_id(origin_id) if origin_id else relation
    kind = INPUTS.get(origin.type)
    if kind is None:
        raise NotSupportedYet(f"sinks from {origin.type} sources are not supported yet")
    return kind(catalog, relation, origin)


__all__ = ["INPUTS", "Input", "ProgressBehindInput", "input_for"]
