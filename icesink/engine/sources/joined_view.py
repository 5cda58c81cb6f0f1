"""Input kind 'materialized-view' for a view that joins relations of icesink's store (engine tables, tables a
Postgres source replicates): the changes of all of them, in the store's one sequence of offsets, as the view's
upserts and deletions. A partition holds one relation's changes; on an executor it finds the view's keys they touch
(control/view_joins.py wrote how, per relation) and recomputes those keys from the relations' current rows, as
view.py does for a view over one table. A sink's first batch computes the whole view, as view.py's does.

Offsets are the store's, shared by its tables, so one offset is the frontier of all the view's relations: a batch
reads each relation's changes up to it, and the sink acknowledges it to each."""
from __future__ import annotations

import json
import time
from pathlib import Path

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from ...catalog.store import Catalog, CatalogObject
from ...model.descriptors import ViewInput
from .engine_table import EngineTableInput, EngineTableReader
from .generated_table import generated_option
from .view import (ViewChanges, ViewInputs, changes_of, create_indexes, recompute, recompute_keys, view_partition,
                   whole_partitions)


class Changes(InputPartition):
    """A partition of the changes of the view's relation number `side` (0: the one its key comes from)."""

    def __init__(self, side: int, part: InputPartition):
        super().__init__((side, part.value))
        self.side, self.part = side, part


class AllKeys(InputPartition):
    """Every key of the view, recomputed at offset `upto`: the first batch of a sink planned before whole_sql."""

    def __init__(self, upto: int, ts: int):
        super().__init__((upto, ts))
        self.upto, self.ts = upto, ts


class JoinedViewSource(ViewChanges):
    """Options: data_dir, start (exclusive offset), view (ViewInput's JSON), view_columns, cores (Spark's
    parallelism), and relations: a JSON list of {table_id, columns} in the order of ViewInput.table_ids."""

    @classmethod
    def name(cls) -> str:
        return "icesink_joined_view"

    def streamReader(self, schema) -> "JoinedViewReader":
        return JoinedViewReader(self.options)


class JoinedViewReader(DataSourceStreamReader):
    def __init__(self, options):
        self.data_dir = Path(options["data_dir"])
        self.start = int(options.get("start", "0"))
        self.view = ViewInput.from_json(json.loads(options["view"]))
        self.view_columns = json.loads(options["view_columns"])
        self.relations = json.loads(options["relations"])
        # each relation's changes as its own reader finds them (its log, segments and base; never a snapshot: the
        # first batch computes the whole view instead)
        self.cores = int(options.get("cores") or 1)
        self.readers = [EngineTableReader({"data_dir": options["data_dir"], "table_id": r["table_id"],
                                           "columns": json.dumps(r["columns"]), "start": options.get("start", "0"),
                                           "cores": str(self.cores)})
                        for r in self.relations]
        self.planned = self.start  # the end of the last batch Spark planned
        self.generated = options.get("generated")

    def initialOffset(self) -> dict:
        return {"offset": self.start}

    def latestOffset(self) -> dict:
        from ..generated_tables import catch_up_given
        from ..tables import TableStore

        catch_up_given(self.data_dir, self.generated)
        store = TableStore(self.data_dir)
        try:
            if self.planned == 0 and any(store.loading(r["table_id"]) for r in self.relations):  # as view.py's
                return {"offset": self.start}
            return {"offset": max([self.start, *(store.latest_offset(r["table_id"]) for r in self.relations)])}
        finally:
            store.close()

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        self.planned = max(self.planned, end["offset"])
        if start["offset"] == 0:
            if self.view.whole_sql:
                return whole_partitions(self.data_dir, self.view, end["offset"], self.cores)
            return [AllKeys(end["offset"], int(time.time() * 1000))]  # a sink planned before whole_sql
        return [Changes(side, part) for side, reader in enumerate(self.readers)
                for part in reader.partitions(start, end)]

    def read(self, partition):
        def changed(db):
            if isinstance(partition, AllKeys):
                return recompute_keys(db, self.view, self.view.all_keys_sql, (partition.upto, partition.ts))
            side = ([self.view] + list(self.view.others))[partition.side]
            changes = changes_of(self.relations[partition.side]["table_id"],
                                 self.relations[partition.side]["columns"], side.changed_columns, partition.part)
            return recompute(db, self.view, changes, side.touched_sql, side.changed_columns,
                             fallback=self.view.any_key_sql)
        yield from view_partition(self.data_dir, self.view, partition, self.view_columns, changed)

    def commit(self, end: dict) -> None:
        """Nothing to do: the sink acknowledges what it committed to Iceberg, not what Spark read."""


class JoinedViewInput(ViewInputs):
    """A sink's view over several tables, each read through its own input for acknowledgements and resumption."""

    def __init__(self, catalog: Catalog, relation: CatalogObject, view: ViewInput, inputs: list[EngineTableInput]):
        super().__init__(catalog, relation, view, inputs)
        create_indexes(inputs[0].log.db, view, relation.name)

    def stream(self, spark, start):
        tables = [{"table_id": i.relation.id, "columns": [c.as_dict() for c in i.relation.descriptor.columns]}
                  for i in self.inputs]
        return (spark.readStream.format(JoinedViewSource.name())
                .option("data_dir", str(Path(self.catalog.data_dir).resolve())).option("start", str(start.offset))
                .option("view", json.dumps(self.view.to_json())).option("relations", json.dumps(tables))
                .option("generated", generated_option(self.inputs))
                .option("view_columns", self._columns()).option("cores", str(spark.sparkContext.defaultParallelism))
                .load())
