"""Input kind 'materialized-view' over load generators: recomputed whole, as recomputed_view.py does for the store's
tables, from the generators' rows up to the batch's tick. A load generator's rows are stored nowhere: a batch makes
each relation's changes from its first tick (deterministic, as a sink on it reads them), consolidates them (a
retraction cancels an insertion; KEY VALUE keeps each key's newest value) into a table of an in-memory SQLite
database, and runs the view's query there. So a batch costs the generators' history, not just the view: meant for
the demos load generators are for."""
from __future__ import annotations

import json
import sqlite3
from collections import Counter

from ...model.types import Column
from ..tables import create_table, generated_name, quote
from .engine_table import DIFF, OFFSET, change_schema
from .generators import GeneratorReader
from .recomputed_view import RecomputedViewInput, RecomputedViewReader, RecomputedViewSource


class GeneratedViewSource(RecomputedViewSource):
    """Options: start, view, view_columns, results (as RecomputedViewSource's), and relations: a JSON list of
    {id, options}, each a relation's GeneratorSource options."""

    @classmethod
    def name(cls) -> str:
        return "icesink_generated_view"

    def streamReader(self, schema) -> "GeneratedViewReader":
        return GeneratedViewReader(self.options)


class GeneratedViewReader(RecomputedViewReader):
    def __init__(self, options):
        super().__init__(options)
        self.relations = json.loads(options["relations"])

    def latestOffset(self) -> dict:
        # the relations of one source share its clock: any one says which tick has come
        clock = GeneratorReader({**self.relations[0]["options"], "start": str(self.start)})
        return {"offset": max(self.start, clock.latestOffset()["offset"])}

    def _rows(self, upto: int) -> list[tuple]:
        from ...catalog.sqlite import add_functions

        db = sqlite3.connect(":memory:")
        try:
            add_functions(db)
            for relation in self.relations:
                reader = GeneratorReader({**relation["options"], "start": "0"})
                columns = [Column(c["name"], c["type"]) for c in reader.columns]
                name = generated_name(relation["id"])
                create_table(db, name, columns)
                db.executemany(f"INSERT INTO {quote(name)} VALUES ({', '.join('?' * len(columns))})",
                               _current(reader, columns, upto, relation.get("key")))
            return db.execute(self.view.query_sql).fetchall()
        finally:
            db.close()


def _current(reader: GeneratorReader, columns: list[Column], upto: int, key: list[str] | None) -> list[tuple]:
    """A relation's rows after its changes up to offset `upto`, as the store keeps values; `key`: an upsert
    stream's key (each key's newest change is its row)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(change_schema(reader.columns), timezone="UTC")
    counts: Counter = Counter()
    newest: dict = {}
    positions = [next(i for i, c in enumerate(columns) if c.name == k) for k in key or ()]
    stored = [_stored(c.type) for c in columns]

    def consume(batch: pa.RecordBatch) -> None:
        values = list(zip(*(convert(batch.column(c.name).to_pylist()) for c, convert in zip(columns, stored))))
        for row, offset, diff in zip(values, batch.column(OFFSET).to_pylist(), batch.column(DIFF).to_pylist()):
            if key is None:
                counts[row] += diff
            else:
                found = tuple(row[i] for i in positions)
                if found not in newest or newest[found][0] < offset:
                    newest[found] = (offset, row if diff > 0 else None)
    for part in reader.partitions({"offset": 0}, {"offset": upto}):
        pending = []
        for item in reader.read(part):
            if isinstance(item, pa.RecordBatch):
                consume(item)
            else:
                pending.append(item)
        if pending:
            consume(pa.RecordBatch.from_arrays([pa.array(column, type=field.type) for column, field in
                                                zip(zip(*pending), schema)], schema=schema))
    if key is not None:
        return [row for _, row in newest.values() if row is not None]
    return [row for row, count in counts.items() for _ in range(count)]


def _stored(type_name: str):
    """From a column's Python values (as Arrow gives them) to the values the store keeps: through the type's input
    function, as an INSERT's literal would go, for the types the store keeps as text."""
    from ..tables import _affinity
    from ..values import input_function

    if _affinity(type_name) in ("INTEGER", "REAL") or type_name in ("text", "character varying"):
        return lambda values: values
    parse = input_function(type_name)
    return lambda values: [None if v is None else parse(str(v)) for v in values]


class GeneratedViewInput(RecomputedViewInput):
    """A sink's view over the relations of one load generator (`inputs`, their own inputs)."""

    def stream(self, spark, start):
        relations = [{"id": i.relation.id, "options": i.options(start), "key": i.upsert_key} for i in self.inputs]
        return (self._options(spark.readStream.format(GeneratedViewSource.name()), start)
                .option("relations", json.dumps(relations)).load())
