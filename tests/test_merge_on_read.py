"""WRITE MODE 'merge-on-read': upserts as new rows plus position deletes located through the key index, read alike
by DuckDB, pyiceberg, polars and Spark with Iceberg's own runtime; only what changed is written, wherever the changed
keys fall."""
import os
import random

import pytest

from tests.readers import duckdb_rows, polars_rows, pyiceberg_rows, spark_rows
from tests.runtime import caught_up, iceberg_table, wait_for


def _sink(session, table, write_mode="merge-on-read", key="id", options=""):
    session.execute(f"""
        CREATE SINK {table}_lake FROM {table} INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'mor', TABLE '{table}')
          KEY ({key}) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE '{write_mode}'{options})""")


def _every_reader(session, sink, columns, expected):
    table = iceberg_table(session, sink)
    assert duckdb_rows(table.metadata_location, ", ".join(columns), ", ".join(columns)) == expected
    assert pyiceberg_rows(table, columns) == expected
    assert polars_rows(table, columns) == expected
    assert spark_rows(table.metadata_location, columns) == expected


def test_scattered_upserts_and_deletes_write_only_what_changed(session, scheduler):
    """Folding is made eager, so that rewrites of worn and small files happen between the rounds, and the readers
    read through them."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE accounts (id bigint NOT NULL, balance bigint, note text, PRIMARY KEY (id));""")
    session.execute("INSERT INTO accounts VALUES " + ", ".join(f"({i}, {i * 10}, 'n{i}')" for i in range(1, 20001)))
    _sink(session, "accounts", options=", FOLD THRESHOLD = 0.01, FOLD SMALL FILES = 3")
    wait_for(caught_up(session, "accounts_lake", "accounts"), what="the initial rows")
    rng = random.Random(11)
    expected = {i: (i * 10, f"n{i}") for i in range(1, 20001)}
    def batches():
        return [t for t in iceberg_table(session, "accounts_lake").snapshots()
                if "icesink.sink-id" in t.summary.additional_properties and t.summary.operation.value != "replace"]
    for round_ in range(4):
        before = {t.snapshot_id for t in batches()}  # by id: expiry drops older snapshots as the rounds go on
        changed = rng.sample(sorted(expected), 300)
        gone, updated = changed[:50], changed[50:]
        fresh = [20000 + round_ * 100 + i for i in range(1, 40)]
        session.execute(f"UPDATE accounts SET balance = balance + 1, note = 'r{round_}' WHERE id IN "
                        f"({', '.join(map(str, updated))}); DELETE FROM accounts WHERE id IN ({', '.join(map(str, gone))});"
                        f"INSERT INTO accounts VALUES {', '.join(f'({i}, 0, {chr(39)}new{chr(39)})' for i in fresh)}")
        for i in updated:
            expected[i] = (expected[i][0] + 1, f"r{round_}")
        for i in gone:
            del expected[i]
        expected.update({i: (0, "new") for i in fresh})
        wait_for(caught_up(session, "accounts_lake", "accounts"), what=f"round {round_}")
    rows = sorted((i, b, n) for i, (b, n) in expected.items())
    _every_reader(session, "accounts_lake", ["id", "balance", "note"], rows)
    table = iceberg_table(session, "accounts_lake")
    # the last round (its three statements, in one batch or more): its new rows (upserts and inserts) in new files,
    # its old rows deleted by position, nothing rewritten
    last = [t.summary for t in batches() if t.snapshot_id not in before]
    assert sum(int(t.get("added-records", 0)) for t in last) == 289
    assert sum(int(t.get("added-position-deletes", 0)) for t in last) == 300
    assert not [t for t in last if t.get("deleted-data-files")]
    folds = [t.summary for t in table.snapshots() if t.summary.operation.value == "replace"]
    assert folds and all("icesink.folded-by" in f.additional_properties for f in folds)
    summary = table.current_snapshot().summary
    assert int(summary["total-records"]) - int(summary["total-position-deletes"]) == len(rows)
    assert int(summary["total-position-deletes"]) < 4 * 300  # folded away with their files
    assert len(table.current_snapshot().manifests(table.io)) <= 4  # a fold writes them again: one per content


def test_a_key_changed_again_and_again_keeps_one_row(session, scheduler):
    """Each upsert of a key deletes its newest row only: the same key updated, deleted and inserted again across
    batches, and a string key (the index's hash-join path). Folding is off, to count what the batches wrote."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE users (name text NOT NULL, visits int, PRIMARY KEY (name));
        INSERT INTO users VALUES ('ann', 1), ('bob', 1), ('cy', 1);""")
    _sink(session, "users", key="name", options=", FOLD ROWS PER BATCH = 0")
    wait_for(caught_up(session, "users_lake", "users"), what="the initial rows")
    for sql in ["UPDATE users SET visits = visits + 1 WHERE name = 'ann'",
                "DELETE FROM users WHERE name = 'bob'",
                "INSERT INTO users VALUES ('bob', 7); UPDATE users SET visits = 5 WHERE name = 'ann'",
                "UPDATE users SET visits = visits + 1"]:
        session.execute(sql)
        wait_for(caught_up(session, "users_lake", "users"), what=sql)
    _every_reader(session, "users_lake", ["name", "visits"], [("ann", 6), ("bob", 8), ("cy", 2)])
    summary = iceberg_table(session, "users_lake").current_snapshot().summary
    # 3 rows, then 1 + 2 + 3 new ones; one delete per changed key that had a row, plus one for 'bob' inserted again,
    # whose newest row was already deleted (the index does not read delete files: deleting it twice is harmless)
    assert (summary["total-records"], summary["total-position-deletes"]) == ("9", "7")


def test_a_key_of_two_columns_is_located_by_bisection_and_by_an_index_of_the_release_before(session, scheduler):
    """A key of an integer and a timestamp, negative values among them: each upsert and delete finds its key's
    newest row (one position delete each, no duplicate left for a reader), through the index's ORDERED bytes, and
    through an index written before it had them, which is upgraded when first read."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from icesink.engine.sink.key_index import ORDERED

    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE readings (site bigint NOT NULL, at timestamp NOT NULL, v int, PRIMARY KEY (site, at));""")
    rng = random.Random(3)
    expected = {}

    def stamp(minute):
        return f"2026-01-01 {minute // 60:02d}:{minute % 60:02d}:00"
    rows = [(site, stamp(minute)) for site in range(-30, 30) for minute in range(0, 600, 20)]
    session.execute("INSERT INTO readings VALUES " + ", ".join(f"({s}, '{t}', 0)" for s, t in rows))
    expected.update({r: 0 for r in rows})
    _sink(session, "readings", key="site, at", options=", FOLD ROWS PER BATCH = 0")
    wait_for(caught_up(session, "readings_lake", "readings"), what="the initial rows")
    index_dir = next(p for p in (session.data_dir).rglob("keys") if p.is_dir())
    deletes = 0
    for round_ in range(4):
        if round_ == 2:  # the index as the release before wrote it: no ORDERED column
            for path in index_dir.glob("*.arrow"):
                old = ipc.open_file(pa.memory_map(str(path))).read_all()
                assert ORDERED in old.column_names
                older = old.drop_columns([ORDERED])
                with pa.OSFile(str(path) + ".old", "wb") as sink, ipc.new_file(sink, older.schema) as writer:
                    writer.write_table(older)
                os.replace(str(path) + ".old", path)
        changed = rng.sample(sorted(expected), 120)
        gone, updated = changed[:20], changed[20:]
        fresh = [(site, stamp(600 + round_)) for site in range(-3, 3)]
        session.execute(
            f"UPDATE readings SET v = v + 1 WHERE (site, at) IN ({', '.join(f'({s}, {chr(39)}{t}{chr(39)})' for s, t in updated)}); "
            f"DELETE FROM readings WHERE (site, at) IN ({', '.join(f'({s}, {chr(39)}{t}{chr(39)})' for s, t in gone)}); "
            f"INSERT INTO readings VALUES {', '.join(f'({s}, {chr(39)}{t}{chr(39)}, 9)' for s, t in fresh)}")
        for r in updated:
            expected[r] += 1
        for r in gone:
            del expected[r]
        expected.update({r: 9 for r in fresh})
        deletes += 120
        wait_for(caught_up(session, "readings_lake", "readings"), what=f"round {round_}")
    assert all(ORDERED in ipc.open_file(pa.memory_map(str(p))).read_all().column_names
               for p in index_dir.glob("*.arrow"))
    table = iceberg_table(session, "readings_lake")
    got = duckdb_rows(table.metadata_location, "site, strftime(\"at\", '%Y-%m-%d %H:%M:%S'), v", "1, 2")
    assert got == sorted((s, t, v) for (s, t), v in expected.items())
    assert int(table.current_snapshot().summary["total-position-deletes"]) == deletes


def test_write_mode_is_checked_and_can_be_altered(session):
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE t (id bigint NOT NULL, PRIMARY KEY (id));""")
    with pytest.raises(Exception, match="sink option WRITE MODE must be one of 'copy-on-write', 'merge-on-read', "
                                        "not 'fast'"):
        _sink(session, "t", write_mode="fast")
    with pytest.raises(Exception, match="WRITE MODE applies to MODE UPSERT"):
        session.execute("CREATE SINK a FROM t INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'mor', TABLE 'a') "
                        "MODE APPEND WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read')")
    _sink(session, "t")
    assert session.catalog.get("t_lake").descriptor.writer == "merge-on-read"
    session.execute("ALTER SINK t_lake SET (WRITE MODE = 'copy-on-write')")
    assert session.catalog.get("t_lake").descriptor.writer == "upsert"
    session.execute("ALTER SINK t_lake SET (WRITE MODE = 'merge_on_read')")
    assert session.catalog.get("t_lake").descriptor.write_mode == "merge-on-read"
    assert "WRITE MODE = 'merge_on_read'" in session.execute("SHOW CREATE SINK t_lake")[0].rows[0][1]
    with pytest.raises(Exception, match=r"FOLD THRESHOLD is the fraction .* more than 0 and at most 1, not 1.5"):
        session.execute("ALTER SINK t_lake SET (FOLD THRESHOLD = 1.5)")
    with pytest.raises(Exception, match="FOLD SMALL FILES must be a whole number of at least 2, not 1"):
        session.execute("ALTER SINK t_lake SET (FOLD SMALL FILES = 1)")
    session.execute("ALTER SINK t_lake SET (FOLD THRESHOLD = 0.5, FOLD ROWS PER BATCH = 0)")
    fold = session.catalog.get("t_lake").descriptor.fold
    assert (fold.threshold, fold.small_files, fold.rows_per_batch) == (0.5, 16, 0)
    session.execute("ALTER SINK t_lake RESET (FOLD ROWS PER BATCH)")
    assert session.catalog.get("t_lake").descriptor.fold.rows_per_batch == 500_000
    session.execute("ALTER SINK t_lake RESET (WRITE MODE)")  # copy-on-write folds nothing: its FOLD options go
    assert session.catalog.get("t_lake").descriptor.write_mode == "copy-on-write"
    assert "FOLD" not in session.execute("SHOW CREATE SINK t_lake")[0].rows[0][1]
    with pytest.raises(Exception, match="FOLD THRESHOLD applies to WRITE MODE 'merge-on-read'"):
        session.execute("ALTER SINK t_lake SET (FOLD THRESHOLD = 0.5)")


def test_a_files_delete_files_are_merged_when_they_gather(session, scheduler):
    """Files never worn enough to be rewritten (FOLD THRESHOLD 1) still get one delete file each once they gather
    several: readers open every delete file."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE items (id bigint NOT NULL, n int, PRIMARY KEY (id));""")
    session.execute("INSERT INTO items VALUES " + ", ".join(f"({i}, 0)" for i in range(1, 10001)))
    _sink(session, "items", options=", FOLD THRESHOLD = 1, FOLD SMALL FILES = 1000")
    wait_for(caught_up(session, "items_lake", "items"), what="the initial rows")
    for round_ in range(1, 6):
        session.execute(f"UPDATE items SET n = {round_} WHERE id % 97 = {round_}")
        wait_for(caught_up(session, "items_lake", "items"), what=f"round {round_}")
    expected = sorted((i, next((r for r in range(5, 0, -1) if i % 97 == r), 0)) for i in range(1, 10001))
    _every_reader(session, "items_lake", ["id", "n"], expected)
    from icesink.engine.pyiceberg_internals import live_files
    table = iceberg_table(session, "items_lake")
    assert max(len(files) for files in live_files(table)[1].values()) < 4
    assert int(table.current_snapshot().summary["total-position-deletes"]) == sum(1 for _, n in expected if n)


def test_a_fold_takes_up_the_time_left_before_the_next_batch(spark, tmp_path):
    """A batch rewrites at least its floor of worn rows (FOLD ROWS PER BATCH, or 4 rows per change); with time left
    before the next batch is due, it rewrites as many more as the pace of its earlier folds fits in that time, so
    the deletes readers apply go down faster, and the next batch does not start later."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyspark.sql import functions as F

    from icesink.engine.sink.committer import Committer
    from icesink.engine.sink.table import ensure_table
    from icesink.engine.sink.writers import writer_for
    from icesink.engine.sources.engine_table import DIFF, TS
    from icesink.model.descriptors import FoldPolicy, SinkDescriptor
    from icesink.model.frontier import OFFSET, Offset
    from icesink.model.types import Column

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    columns = (Column("id", "bigint", False), Column("v", "bigint"))
    descriptor = SinkDescriptor("u0", "u0", "n", "t", "upsert", 1000, ("id",), True, True, (), columns, None,
                                "merge-on-read")
    ensure_table(catalog, descriptor, "u1")
    committer = Committer(lambda: catalog.load_table(descriptor.identifier), "u1", 1, "t1")
    writer = writer_for("merge-on-read", ["id", "v"], ["id"], True, str(tmp_path / "state"),
                        FoldPolicy(threshold=0.05, small_files=1000, rows_per_batch=1))
    offset = 0

    def batch(ids, value):
        nonlocal offset
        frame = spark.createDataFrame([(i, value, offset + n + 1) for n, i in enumerate(ids)],
                                      f"id bigint, v bigint, {OFFSET} bigint").select(
            "*", F.lit(1).alias(DIFF), F.lit(0).cast("bigint").alias(TS))
        committer.commit(Offset(offset), lambda table, after: writer.plan(frame, table, after))
        offset += len(ids)

    for part in range(4):  # files of 1,000 keys or fewer
        batch(range(part * 1000, (part + 1) * 1000), 0)
    batch(range(0, 4000, 10), 1)  # 10% of each file's rows deleted: all worn
    table = committer.load_table()
    worn = {task.file.file_path for task in table.scan().plan_files() if task.delete_files}

    def rewritten(seconds):
        removed, added, _ = writer.plan_fold(spark, table, 100, seconds)
        return {f.file_path for f in removed if f.content.value == 0}, sum(f.record_count for f in added)
    floor, _ = rewritten(0.0)  # no pace known yet: the floor, 400 rows
    assert len(worn) >= 4 and floor < worn
    writer.fold_pace = 1000.0  # rows a second: 5 s left fit all 4,000 (it plans on using 80% of them)
    assert rewritten(5.0) == (worn, 3600)

    # The key index learns each file as it is written, and forgets the files that are gone: after the fold lands
    # and a batch follows, it holds exactly the live files, each already indexed when the batch began.
    from icesink.engine.sink.key_index import KeyIndex

    index = KeyIndex(tmp_path / "state" / "keys", ["id"])
    committer.fold(lambda table: writer.plan_fold(spark, table, 100, 5.0))
    folded = {task.file.file_path for task in committer.load_table().scan().plan_files()}
    assert all(index._path(f).exists() for f in folded)
    batch([1, 2], 2)
    live = {task.file.file_path for task in committer.load_table().scan().plan_files()}
    assert {p.name for p in index.directory.iterdir()} == {index._path(f).name for f in live}


@pytest.mark.parametrize("write_mode", ["merge-on-read", "upsert"])
def test_a_first_batch_with_a_key_sample_is_read_once_and_written_in_disjoint_key_ranges(spark, tmp_path, write_mode):
    """A replicated table's copy gives a sink's first batch its keys' ranges (EngineTableInput.key_sample): the
    batch is then read once, where Spark's own sampling of it reads it twice (10M rows: some 10 s of 2 cores)."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.conversions import from_bytes
    from pyspark.sql import functions as F

    from icesink.engine.sink.committer import Committer
    from icesink.engine.sink.key_ranges import sample_cuts
    from icesink.engine.sink.table import ensure_table
    from icesink.engine.sink.writers import writer_for
    from icesink.engine.sources.engine_table import DIFF, TS
    from icesink.model.descriptors import SinkDescriptor
    from icesink.model.frontier import OFFSET, Offset
    from icesink.model.types import Column

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}")
    columns = (Column("id", "bigint", False), Column("v", "text"))
    descriptor = SinkDescriptor("u0", "u0", "n", "t", "upsert", 1000, ("id",), True, True, (), columns, None,
                                write_mode if write_mode != "upsert" else "copy-on-write")
    ensure_table(catalog, descriptor, "u1")
    committer = Committer(lambda: catalog.load_table(descriptor.identifier), "u1", 1, "t1")
    writer = writer_for(write_mode, ["id", "v"], ["id"], True, str(tmp_path / "state"))
    ids = random.Random(5).sample(range(1_000_000), 6000)
    read = spark.sparkContext.accumulator(0)

    def counted(batches):  # the input's rows, each time Spark computes them
        for batch in batches:
            read.add(batch.num_rows)
            yield batch
    frame = spark.createDataFrame([(i, f"v{i}", n + 1) for n, i in enumerate(ids)],
                                  f"id bigint, v string, {OFFSET} bigint").repartition(6)
    frame = frame.mapInArrow(counted, frame.schema).select("*", F.lit(1).alias(DIFF), F.lit(0).cast("bigint").alias(TS))
    asked = []

    def key_sample():
        asked.append(True)
        return ids[::50]
    committer.commit(Offset(0), lambda table, after: writer.plan(frame, table, after, key_sample))
    assert asked and read.value == len(ids)  # read once, by the writing job

    table = committer.load_table()
    assert duckdb_rows(table.metadata_location, "id, v") == sorted((i, f"v{i}") for i in ids)
    field = table.schema().find_field("id")
    ranges = sorted((from_bytes(field.field_type, task.file.lower_bounds[field.field_id]),
                     from_bytes(field.field_type, task.file.upper_bounds[field.field_id]))
                    for task in table.scan().plan_files())
    cuts = sample_cuts(ids[::50], 6)  # the batch's 6 partitions, a task per range
    assert len(ranges) == len(cuts) == 6  # a file per range: no task was given two
    lows, highs = [float("-inf")] + cuts[1:], cuts[1:] + [float("inf")]  # keys below the first cut join the first
    assert all(lowest <= low and high < highest for lowest, highest, (low, high) in zip(lows, highs, ranges))


def test_spread_ids_give_each_partition_its_ranges(spark):
    """Spark's hash partitioning of the ids spread_ids chooses sends the ranges to the partitions in key order, a
    share to each, none left idle."""
    from pyspark.sql import functions as F

    from icesink.engine.sink.key_ranges import spread_ids

    for groups, partitions in ((6, 6), (40, 8), (7, 3)):
        ids = spread_ids(groups, partitions)
        assert len(set(ids)) == groups
        placed = (spark.createDataFrame([(i,) for i in ids], "id int").repartition(partitions, "id")
                  .select("id", F.spark_partition_id().alias("p")).collect())
        where = {row.id: row.p for row in placed}
        assert [where[i] for i in ids] == [g * partitions // groups for g in range(groups)]
