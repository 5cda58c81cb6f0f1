"""Input kind 'materialized-view', recomputed whole: a view whose keys a change cannot be traced to (a subquery, a
view over a grouped view, a GROUP BY over two joined tables' columns, EXCEPT, LIMIT, …). A batch in which any table
the view reads changed computes the whole view in SQLite, in one partition, and writes the difference from the
view as the sink last saw it: an upsert per key whose row is new or changed, a deletion per key that is gone.

What the sink last saw is a file in its state directory named by the offset it was computed at (the batch's end):
written before the batch's rows leave the partition, so a commit never lands without it; read by the next batch,
which starts at that offset; deleted once the sink acknowledges a later one. The Iceberg table holds exactly that
file's rows after each commit (a batch with no difference commits nothing, and its file holds the same rows)."""
from __future__ import annotations

import json
import logging
import os
import pickle
import time
from pathlib import Path

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from ...catalog.store import Catalog, CatalogObject
from ...model.descriptors import ViewInput
from .base import Input
from .generated_table import generated_option
from .view import ViewChanges, ViewInputs, query_errors, view_batches

log = logging.getLogger("icesink.sink")
RESULTS_DIR = "view-results"


class Whole(InputPartition):
    """The whole view at offset `upto`, against the view at `after`."""

    def __init__(self, after: int, upto: int):
        super().__init__((after, upto))
        self.after, self.upto = after, upto


class RecomputedViewSource(ViewChanges):
    """Options: data_dir, start (exclusive offset), view (ViewInput's JSON), view_columns, table_ids (JSON list),
    results (the directory of the sink's results)."""

    @classmethod
    def name(cls) -> str:
        return "icesink_recomputed_view"

    def streamReader(self, schema) -> "RecomputedViewReader":
        return RecomputedViewReader(self.options)


def result_path(results: Path, offset: int) -> Path:
    return results / f"{offset}.pickle"


class RecomputedViewReader(DataSourceStreamReader):
    def __init__(self, options):
        self.data_dir = Path(options.get("data_dir", "."))
        self.start = int(options.get("start", "0"))
        self.view = ViewInput.from_json(json.loads(options["view"]))
        self.view_columns = json.loads(options["view_columns"])
        self.table_ids = json.loads(options.get("table_ids", "[]"))
        self.results = Path(options["results"])
        self.generated = options.get("generated")

    def initialOffset(self) -> dict:
        return {"offset": self.start}

    def latestOffset(self) -> dict:
        from ..generated_tables import catch_up_given
        from ..tables import TableStore

        catch_up_given(self.data_dir, self.generated)
        store = TableStore(self.data_dir)
        try:
            return {"offset": max([self.start, *(store.latest_offset(t) for t in self.table_ids)])}
        finally:
            store.close()

    def partitions(self, start: dict, end: dict) -> list[Whole]:
        return [Whole(start["offset"], end["offset"])]

    def read(self, partition: Whole):
        yield from self._difference(partition, self._rows(partition.upto))

    def _rows(self, upto: int) -> list[tuple]:
        """The whole view now (at or after `upto`)."""
        from ..tables import TableStore

        store = TableStore(self.data_dir)
        try:
            with query_errors():
                return store.db.execute(self.view.query_sql).fetchall()
        finally:
            store.close()

    def _difference(self, partition: Whole, rows: list[tuple]):
        """The changes from the view as the sink saw it at the partition's start to `rows`, kept as it saw it at the
        partition's end first."""
        keyed = [i for i, k in enumerate(self.view.key_outputs) if k is not None]
        now = {tuple(row[i] for i in keyed): tuple(row) for row in rows}
        before = self._result(partition.after)
        self._keep(partition.upto, now)
        ts = int(time.time() * 1000)
        changed = [(*row, partition.upto, 1, ts) for key, row in now.items()
                   if before is None or before.get(key) != row]
        if before is not None:
            width = len(self.view_columns)
            changed += [(*(key[keyed.index(i)] if i in keyed else None for i in range(width)), partition.upto, -1, ts)
                        for key in before.keys() - now.keys()]
        if not changed and now:  # one row as it is, for the commit to record the changes behind it
            changed = [(*next(iter(now.values())), partition.upto, 1, ts)]
        yield from view_batches(changed, self.view_columns)

    def _result(self, offset: int) -> dict | None:
        """The view as the sink saw it at `offset`; None when that is unknown (its file is gone)."""
        if offset == 0:
            return {}
        path = result_path(self.results, offset)
        if not path.exists():
            log.warning("the view as sink saw it at offset %d is gone (%s): every row of the view is written again, "
                        "and rows of keys deleted meanwhile stay", offset, path)
            return None
        with open(path, "rb") as file:
            return pickle.load(file)

    def _keep(self, offset: int, result: dict) -> None:
        self.results.mkdir(parents=True, exist_ok=True)
        path = result_path(self.results, offset)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        with open(partial, "wb") as file:
            pickle.dump(result, file, protocol=pickle.HIGHEST_PROTOCOL)
            file.flush()
            os.fsync(file.fileno())
        partial.replace(path)

    def commit(self, end: dict) -> None:
        """Nothing to do: the sink acknowledges what it committed to Iceberg, not what Spark read."""


class RecomputedViewInput(ViewInputs):
    """A sink's view recomputed whole: the tables it reads say when it changed, and are acknowledged; `results` is
    where the view is kept as the sink saw it."""

    def __init__(self, catalog: Catalog, relation: CatalogObject, view: ViewInput, inputs: list[Input],
                 results: Path):
        super().__init__(catalog, relation, view, inputs)
        self.results = results

    def stream(self, spark, start):
        return (self._options(spark.readStream.format(RecomputedViewSource.name()), start)
                .option("data_dir", str(Path(self.catalog.data_dir).resolve()))
                .option("table_ids", json.dumps([i.relation.id for i in self.inputs]))
                .option("generated", generated_option(self.inputs)).load())

    def _options(self, reader, start):
        """The options every view recomputed whole reads."""
        return (reader.option("start", str(start.offset)).option("view", json.dumps(self.view.to_json()))
                .option("results", str(self.results)).option("view_columns", self._columns()))

    def acknowledge(self, sink_id: str, frontier) -> None:
        """The view's tables may forget what the sink committed, and the sink the views it saw before."""
        super().acknowledge(sink_id, frontier)
        for path in self.results.glob("*.pickle"):
            if int(path.stem) < frontier.offset:
                path.unlink(missing_ok=True)
