"""The copy-on-write UPSERT writer, batch by batch, against a real Iceberg table written by Spark: the table
read back equals a model of the input, for the key types icesink allows, whatever ranges the keys fall in."""
import datetime as dt
import random

import pytest
from pyiceberg.catalog.sql import SqlCatalog

from icesink.engine.sink.committer import Committer
from icesink.engine.sink.table import ensure_table
from icesink.engine.sink.writers import KeyViolation, UpsertWriter
from icesink.engine.sources.engine_table import change_schema
from icesink.model.descriptors import PartitionField, SinkDescriptor
from icesink.model.frontier import Offset
from icesink.model.types import Column
from tests.readers import duckdb_rows

pytestmark = pytest.mark.timeout(600)


class Sink:
    """A table, its writer and committer, and the offsets of the changes fed to it so far."""

    def __init__(self, spark, directory, columns, key, enforced=False, properties=None, partition_by=()):
        self.spark, self.columns, self.key = spark, columns, key
        catalog = SqlCatalog("t", uri=f"sqlite:///{directory}/catalog.db", warehouse=f"file://{directory}")
        sink = SinkDescriptor("u0", "u0", "ns", "t", "upsert", 1000, tuple(key), partition_by=tuple(
            PartitionField(p["transform"], p["column"], p.get("argument")) for p in partition_by),
            columns=tuple(Column(c["name"], c["type"]) for c in columns))
        table = ensure_table(catalog, sink, "s1")
        if properties:
            with table.transaction() as tx:
                tx.set_properties(properties)
        self.load = lambda: catalog.load_table(("ns", "t"))
        self.writer = UpsertWriter([c["name"] for c in columns], key, enforced)
        self.committer = Committer(self.load, "u1", 1, "t1")
        self.offset = 0

    def apply(self, changes):
        """Commits one batch of (row tuple, diff) changes, in order; returns what the commit removed/added."""
        lower = self.offset
        rows = []
        for values, diff in changes:
            self.offset += 1
            rows.append((*values, self.offset, diff, 0))
        frame = self.spark.createDataFrame(rows, change_schema(self.columns))
        outcome = self.committer.commit(Offset(lower), lambda table, after: self.writer.plan(frame, table, after))
        return outcome.files

    def read(self):
        table = self.load()
        names = ", ".join(c["name"] for c in self.columns)
        return duckdb_rows(table.metadata_location, names, ", ".join(self.key)) if table.current_snapshot() else []


def model_apply(state: dict, key_of, changes):
    for values, diff in changes:
        if diff > 0:
            state[key_of(values)] = values
        else:
            state.pop(key_of(values), None)


@pytest.mark.parametrize("key_type, make_key", [
    ("bigint", lambda n: n),
    ("text", lambda n: f"customer-{n:07d}"),
    ("date", lambda n: dt.date(2020, 1, 1) + dt.timedelta(days=n)),
    ("timestamp", lambda n: dt.datetime(2024, 1, 1) + dt.timedelta(seconds=n)),
])
def test_random_batches_leave_the_table_equal_to_the_input(spark, tmp_path, key_type, make_key):
    sink = Sink(spark, tmp_path, [{"name": "k", "type": key_type}, {"name": "v", "type": "text"}], ["k"],
                properties={"write.target-file-size-bytes": "2048"})  # small files: many key ranges
    rng = random.Random(key_type)
    state: dict = {}
    for batch in range(6):
        changes = []
        for _ in range(400):
            n = rng.randrange(3000) if batch else rng.randrange(1000, 2000)  # later keys fall below and above
            key = make_key(n)
            if key in state and rng.random() < 0.3:
                changes.append(((key, state[key][1]), -1))
            else:
                changes.append(((key, f"v{batch}-{rng.randrange(100)}"), 1))
            model_apply(state, lambda values: values[0], changes[-1:])
        sink.apply(changes)
    assert sink.read() == sorted(state.values())


def test_a_batch_rewrites_only_the_files_holding_its_keys(spark, tmp_path):
    sink = Sink(spark, tmp_path, [{"name": "k", "type": "bigint"}, {"name": "v", "type": "text"}], ["k"],
                properties={"write.target-file-size-bytes": "65536"})
    sink.apply([((k, "first"), 1) for k in range(20_000)])
    files = len(sink.load().inspect.files())
    assert files >= 4
    written = sink.apply([((k, "second"), 1) for k in range(100, 200)])
    assert 1 <= len(written.removed) < files / 2
    assert sink.read() == [(k, "second" if 100 <= k < 200 else "first") for k in range(20_000)]


def test_a_key_partitioned_table_rewrites_only_the_changed_keys_partitions(spark, tmp_path):
    sink = Sink(spark, tmp_path, [{"name": "k", "type": "bigint"}, {"name": "v", "type": "text"}], ["k"],
                partition_by=[{"column": "k", "transform": "bucket", "argument": 8}])
    sink.apply([((k, "first"), 1) for k in range(4000)])
    files = sink.load().inspect.files()
    assert len(files) >= 8  # a file per bucket and task, each spanning its task's keys: ranges alone pick 8
    written = sink.apply([((7, "second"), 1), ((1234, "gone"), -1)])
    assert 1 <= len(written.removed) <= 2
    assert sink.read() == [(k, "second" if k == 7 else "first") for k in range(4000) if k != 1234]


def test_composite_key_keeps_the_last_change_per_key_in_source_order(spark, tmp_path):
    sink = Sink(spark, tmp_path, [{"name": "region", "type": "text"}, {"name": "id", "type": "integer"},
                                  {"name": "v", "type": "text"}], ["region", "id"])
    sink.apply([(("eu", 1, "a"), 1), (("us", 1, "b"), 1), (("eu", 2, "c"), 1)])
    sink.apply([(("eu", 1, "a"), -1), (("eu", 1, "a2"), 1), (("eu", 1, "a2"), -1), (("eu", 1, "a3"), 1),
                (("us", 1, "b"), -1), (("eu", 3, "d"), 1)])
    assert sink.read() == [("eu", 1, "a3"), ("eu", 2, "c"), ("eu", 3, "d")]


def test_enforced_key_reports_a_violation_and_writes_nothing(spark, tmp_path):
    sink = Sink(spark, tmp_path, [{"name": "id", "type": "bigint"}, {"name": "v", "type": "text"}], ["id"],
                enforced=True)
    sink.apply([((1, "a"), 1), ((2, "b"), 1)])
    with pytest.raises(KeyViolation, match=r"KEY \(id\) is not unique in the input: id = 3 \(adds 2 rows\)"):
        sink.apply([((3, "x"), 1), ((3, "y"), 1)])
    assert sink.read() == [(1, "a"), (2, "b")]


def test_not_enforced_key_takes_the_last_of_duplicate_rows(spark, tmp_path):
    sink = Sink(spark, tmp_path, [{"name": "id", "type": "bigint"}, {"name": "v", "type": "text"}], ["id"])
    sink.apply([((3, "x"), 1), ((3, "y"), 1), ((4, "z"), 1)])
    assert sink.read() == [(3, "y"), (4, "z")]


def test_progress_an_older_icesink_wrote_counts_the_input_the_sink_had_before_it_first_switched(spark, tmp_path):
    """Progress without icesink.input (written before icesink named it) counts the sink's first input: a sink
    switched since (ALTER SINK … SET FROM) replaces the table at its next commit rather than resuming the new input
    at the old one's offset."""
    from icesink.engine.pyiceberg_internals import commit_files
    from icesink.engine.sink.progress import INPUT, latest_progress, summary_properties

    sink = Sink(spark, tmp_path, [{"name": "k", "type": "bigint"}, {"name": "v", "type": "text"}], ["k"])
    sink.apply([((k, "old"), 1) for k in range(5)])
    properties = summary_properties("u1", 1, Offset(5), {}, "t1")
    del properties[INPUT]
    commit_files(sink.load(), [], [], properties)  # what an older icesink left
    progress = latest_progress(sink.load(), "u1")
    assert progress.input is None and progress.frontier == Offset(5)
    assert Committer(sink.load, "u1", 2, "t1").counts(progress)  # never switched: resumes at offset 5
    switched = Committer(sink.load, "u1", 2, "t2", unnamed_input_id="t1")
    assert not switched.counts(progress)
    frame = spark.createDataFrame([(7, "new", 1, 1, 0)], change_schema(sink.columns))
    switched.commit(Offset(0), lambda table, after: sink.writer.plan(frame, table, after))
    assert sink.read() == [(7, "new")]
    assert latest_progress(sink.load(), "u1").input == "t2"
