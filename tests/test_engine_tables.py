"""Engine tables: writes are durable and logged with increasing offsets; SELECT shows the current rows."""
import re
import threading
import time
from decimal import Decimal

import pytest

import icesink
from tests.conftest import error_of, rows
from tests.runtime import wait_for


@pytest.fixture
def orders(session):
    session.execute("CREATE TABLE orders (id bigint NOT NULL, name text, amount numeric(10,2), ok boolean, "
                    "PRIMARY KEY (id))")
    return session


def test_writes_change_the_rows_and_the_log(orders):
    results = orders.execute("INSERT INTO orders VALUES (1, 'a', 1.5, true), (2, 'b', 2, false);"
                             "UPDATE orders SET name = upper(name) || '!' WHERE id = 1;"
                             "DELETE FROM orders WHERE NOT ok")
    assert [r.status for r in results] == ["INSERT 0 2", "UPDATE 1", "DELETE 1"]
    assert rows(orders, "SELECT id, name, amount FROM orders ORDER BY id") == [(1, "A!", "1.50")]
    table_id = orders.catalog.get("orders").id
    log = orders.tables.changes(table_id, 0, orders.tables.latest_offset(table_id))
    assert [(offset, diff, row[:2]) for offset, diff, _, row in log] == [
        (1, 1, [1, "a"]), (2, 1, [2, "b"]), (3, -1, [1, "a"]), (4, 1, [1, "A!"]), (5, -1, [2, "b"])]


def test_another_session_sees_committed_writes(orders, data_dir):
    orders.execute("INSERT INTO orders (id, name) VALUES (7, 'seven')")
    with icesink.connect(data_dir) as other:
        assert rows(other, "SELECT orders.name FROM orders WHERE orders.id = 7") == [("seven",)]


@pytest.mark.parametrize("sql, message", [
    ("INSERT INTO orders VALUES (1, 'x', 1, true)", "INSERT into table 'orders': duplicate key value violates the primary key"),
    ("INSERT INTO orders (name) VALUES ('x')", "INSERT into table 'orders': null value in column \"id\" violates its NOT NULL constraint"),
    ("INSERT INTO orders VALUES ('one', 'x', 1, true)", "INSERT into table 'orders', column \"id\": invalid input syntax for type bigint: \"one\""),
    ("UPDATE orders SET id = 'x'", "UPDATE of table 'orders', column \"id\": invalid input syntax for type bigint: \"x\""),
    # text cast to an integer is read as the type's input reads it, not as a numeric rounded (SQLite would give 2)
    ("UPDATE orders SET id = '1.5'::int", "UPDATE of table 'orders': invalid input syntax for type integer: \"1.5\""),
    ("DELETE FROM orders WHERE id = (SELECT name::int FROM orders)",
     "DELETE from table 'orders': invalid input syntax for type integer: \"a\""),
])
def test_constraint_errors_leave_the_table_unchanged(orders, sql, message):
    orders.execute("INSERT INTO orders VALUES (1, 'a', 1, true)")
    assert error_of(orders, sql).message == message
    assert rows(orders, "SELECT id, name FROM orders") == [(1, "a")]
    assert orders.tables.latest_offset(orders.catalog.get("orders").id) == 1


def test_drop_table_removes_its_rows_and_log(orders):
    orders.execute("INSERT INTO orders (id) VALUES (1)")
    table_id = orders.catalog.get("orders").id
    orders.execute("DROP TABLE orders; CREATE TABLE orders (id int)")
    assert orders.tables.changes(table_id, 0, 10) == []
    assert rows(orders, "SELECT count(*) FROM orders") == [(0,)]


def test_table_without_primary_key_keeps_duplicates(session):
    session.execute("CREATE TABLE events (kind text, n int); INSERT INTO events VALUES ('a', 1), ('a', 1)")
    assert rows(session, "SELECT kind, count(*) FROM events GROUP BY kind") == [("a", 2)]


def test_the_log_is_compacted_below_what_every_reader_acknowledged(orders, monkeypatch):
    monkeypatch.setattr("icesink.engine.tables.COMPACT_AT_LEAST", 1)
    orders.execute("INSERT INTO orders VALUES (1, 'a', 1, true), (2, 'b', 2, true), (3, 'c', 3, true);"
                   "UPDATE orders SET name = 'a2' WHERE id = 1; DELETE FROM orders WHERE id = 2")
    table_id, store = orders.catalog.get("orders").id, orders.tables
    store.acknowledge("u90", table_id, 7)
    assert store.compact(table_id, lambda: {"u90", "u91"}) == 0  # u91 has acknowledged nothing yet
    store.acknowledge("u91", table_id, 5)
    assert store.compact(table_id, lambda: {"u90", "u91"}) == 2  # up to 5: the first version of row 1 went at 4
    orders.execute("INSERT INTO orders VALUES (2, 'b2', 2, true);"
                   "UPDATE orders SET name = 'c2' WHERE id = 3; UPDATE orders SET name = 'c3' WHERE id = 3")
    store.acknowledge("u91", table_id, 11)
    # u90 holds the floor at 7, and two new entries are not worth rereading the three compacted ones
    assert store.compact(table_id, lambda: {"u90", "u91"}) == 0
    assert store.compact(table_id, lambda: {"u91"}) == 6  # u90's sink was dropped
    log = store.changes(table_id, 0, store.latest_offset(table_id))
    assert [(offset, diff, row[:2]) for offset, diff, _, row in log] == [
        (5, 1, [1, "a2"]), (7, 1, [2, "b2"]), (11, 1, [3, "c3"])]
    assert store.floor(table_id) == 11


def test_a_sink_created_while_the_log_is_compacted_stops_the_compaction(orders, monkeypatch):
    """Its first read, planned in parts below where the floor is about to go, must not meet a pair half removed."""
    monkeypatch.setattr("icesink.engine.tables.COMPACT_AT_LEAST", 1)
    orders.execute("INSERT INTO orders VALUES (1, 'a', 1, true), (2, 'b', 2, true); DELETE FROM orders WHERE id = 2")
    table_id, store = orders.catalog.get("orders").id, orders.tables
    store.acknowledge("u90", table_id, 3)
    asked = iter([{"u90"}, {"u90", "u91"}])  # u91 appears while the pairs are searched for
    assert store.compact(table_id, lambda: next(asked)) == 0
    assert store.floor(table_id) == 0 and len(store.changes(table_id, 0, 3)) == 3
    assert store.compact(table_id, lambda: {"u90"}) == 2  # once it is gone again (or has acknowledged)


def test_a_sinks_acknowledgement_does_not_wait_for_the_log_compaction(orders, monkeypatch):
    """A compaction reads the log up to the floor: it runs on the housekeeping thread, not in the sink's batch, and
    removes entries a few per transaction, so a writer of the table is not held up either."""
    from icesink.engine.sources import input_for
    from icesink.engine.tables import TableStore
    from icesink.model.frontier import Offset

    monkeypatch.setattr("icesink.engine.tables.COMPACT_AT_LEAST", 1)
    monkeypatch.setattr("icesink.engine.tables.COMPACT_PAIRS", 1)
    orders.execute("""CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'n', TABLE 'orders')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        INSERT INTO orders VALUES (1, 'a', 1, true), (2, 'b', 2, true), (3, 'c', 3, true);
        DELETE FROM orders WHERE id = 2; UPDATE orders SET name = 'c2' WHERE id = 3""")
    table_id, store = orders.catalog.get("orders").id, orders.tables
    compacting, release = threading.Event(), threading.Event()
    compact = TableStore.compact

    def held_compact(self, *args):
        compacting.set()
        release.wait(30)
        return compact(self, *args)
    monkeypatch.setattr(TableStore, "compact", held_compact)
    sink = orders.catalog.get("orders_lake")
    started = time.monotonic()
    input_for(orders.catalog, orders.catalog.get("orders")).acknowledge(sink.id, Offset(6))
    assert time.monotonic() - started < 1 and compacting.wait(10)  # acknowledged while the compaction waits
    orders.execute("INSERT INTO orders VALUES (4, 'd', 4, true)")  # so does a writer
    release.set()
    wait_for(lambda: store.floor(table_id) == 6, timeout=30, what="the compaction")
    log = store.changes(table_id, 0, store.latest_offset(table_id))
    assert [(offset, diff, row[:2]) for offset, diff, _, row in log] == [
        (1, 1, [1, "a"]), (6, 1, [3, "c2"]), (7, 1, [4, "d"])]  # two pairs gone, in two transactions


def test_numeric_values_compare_as_numbers(session):
    """numeric is kept as exact decimal text; comparisons, ORDER BY, min/max and the key still follow its value."""
    session.execute("CREATE TABLE prices (id int, amount numeric(10, 2), PRIMARY KEY (amount));"
                    "INSERT INTO prices VALUES (1, 10), (2, 9.5), (3, 100)")
    assert rows(session, "SELECT amount FROM prices ORDER BY amount") == [("9.50",), ("10.00",), ("100.00",)]
    assert rows(session, "SELECT id FROM prices WHERE amount > 20") == [(3,)]
    assert rows(session, "SELECT id FROM prices WHERE amount > id * 5 ORDER BY id") == [(1,), (3,)]
    assert rows(session, "SELECT min(amount), max(amount) FROM prices") == [("9.50", "100.00")]
    # NaN, above every number as Postgres orders it (the comparison raised a traceback from Decimal)
    assert rows(session, "SELECT count(*) FROM prices WHERE amount < 'NaN'") == [(3,)]
    assert rows(session, "SELECT count(*) FROM prices WHERE amount >= 'NaN'") == [(0,)]
    assert "duplicate" in error_of(session, "INSERT INTO prices VALUES (4, 10.0)").message.lower()


@pytest.fixture
def two_tables(session):
    """Tables a (1, 2) and b (2, 3), one column x each."""
    session.execute("CREATE TABLE a (x int); CREATE TABLE b (x int); INSERT INTO a VALUES (1), (2);"
                    "INSERT INTO b VALUES (2), (3)")
    return session


@pytest.mark.parametrize("sql, expected", [
    ("(SELECT x FROM a) UNION ALL (SELECT x FROM b) ORDER BY x", [(1,), (2,), (2,), (3,)]),
    ("SELECT x FROM a UNION (SELECT x FROM b) ORDER BY x", [(1,), (2,), (3,)]),
    ("(SELECT x FROM a UNION ALL SELECT x FROM b) UNION ALL (SELECT 7) ORDER BY x", [(1,), (2,), (2,), (3,), (7,)]),
    ("SELECT x FROM ((SELECT x FROM a) INTERSECT (SELECT x FROM b)) s", [(2,)]),
    ("SELECT ((SELECT max(x) FROM a))", [(2,)]),
])
def test_set_operations_take_parenthesized_operands(two_tables, sql, expected):
    """As Materialize's scripts write them, in queries and views."""
    assert rows(two_tables, sql) == expected
    two_tables.execute(f"CREATE MATERIALIZED VIEW v AS {sql.split(' ORDER BY')[0]}")


@pytest.mark.parametrize("sql, message", [
    ("(SELECT 1 UNION ALL SELECT 2) EXCEPT (SELECT 2)",
     "a parenthesized set operation beside a set operation of another kind is not supported yet"),
    ("(SELECT 1 ORDER BY 1 LIMIT 1) UNION ALL (SELECT 2)",
     "ORDER BY, LIMIT or OFFSET inside a parenthesized operand of a set operation is not supported yet"),
])
def test_parenthesized_operands_that_would_change_meaning_are_refused(session, sql, message):
    assert error_of(session, sql).message == message


@pytest.mark.parametrize("sql, expected", [
    ("SELECT (SELECT max(x) FROM a)", [(2,)]),
    ("SELECT x FROM b WHERE x IN (SELECT x FROM a)", [(2,)]),
    ("SELECT x FROM b WHERE EXISTS (SELECT 1 FROM a WHERE a.x = b.x)", [(2,)]),
])
def test_subqueries_in_expressions_read_engine_tables(two_tables, sql, expected):
    assert rows(two_tables, sql) == expected


def test_insert_select_loads_rows_in_bulk_with_postgres_functions(session):
    """As Materialize's scripts load test data: INSERT … SELECT over generate_series, with Postgres's functions."""
    session.execute("CREATE TABLE t (id bigint NOT NULL, note text, at timestamp, PRIMARY KEY (id))")
    session.execute("INSERT INTO t SELECT n, concat(left(md5(n::text), 6), '-', repeat('x', 2), NULL), "
                    "'2024-03-05 10:11:12.5' FROM generate_series(1, 1000) AS n")
    assert rows(session, "SELECT count(*), min(id), max(id), count(DISTINCT note) FROM t") == [(1000, 1, 1000, 1000)]
    assert rows(session, "SELECT note FROM t WHERE id = 1") == [("c4ca42-xx",)]  # md5('1') begins c4ca42
    session.execute("INSERT INTO t SELECT generate_series(2001, 2010, 3), lpad('7', 3, '0'), NULL")
    assert rows(session, "SELECT id, note FROM t WHERE id > 2000 ORDER BY id") == [
        (2001, "007"), (2004, "007"), (2007, "007"), (2010, "007")]
    assert rows(session, "SELECT date_trunc('hour', at), date_trunc('month', at), right('abcdef', -2), "
                         "split_part('a,b,c', ',', 2) FROM t WHERE id = 1") == [
        ("2024-03-05 10:00:00", "2024-03-01 00:00:00", "cdef", "b")]
    assert rows(session, "SELECT k FROM generate_series(5, 1, -2) k") == [(5,), (3,), (1,)]


def test_date_trunc_of_a_column_agrees_whatever_form_its_timestamps_take(session):
    """date_trunc of a column to the day, hour or minute: a timestamp in the store's form takes the function's short
    path, any other form its full one; fractions, time zones and NULLs come out as Postgres gives them."""
    session.execute("CREATE TABLE ts (id int NOT NULL, at timestamp, tz timestamptz, PRIMARY KEY (id))")
    session.execute("INSERT INTO ts VALUES (1, '2024-03-05 10:11:12', '2024-03-05 10:11:12+02'), "
                    "(2, '2024-03-05 10:11:12.5', NULL), (3, NULL, '2024-03-05 23:59:59.25+00')")
    assert rows(session, "SELECT id, date_trunc('day', at), date_trunc('hour', at), date_trunc('minute', at), "
                         "date_trunc('hour', tz) FROM ts ORDER BY id") == [
        (1, "2024-03-05 00:00:00", "2024-03-05 10:00:00", "2024-03-05 10:11:00", "2024-03-05 08:00:00+00"),
        (2, "2024-03-05 00:00:00", "2024-03-05 10:00:00", "2024-03-05 10:11:00", None),
        (3, None, None, None, "2024-03-05 23:00:00+00")]
    assert rows(session, "SELECT date_trunc('HOUR', at), count(*) FROM ts GROUP BY 1 "
                         "ORDER BY 1") == [("2024-03-05 10:00:00", 2), (None, 1)]  # NULLs last, as Postgres


def test_insert_select_stores_and_refuses_what_each_columns_input_function_would(session):
    """Values SQLite computes go into a table as the columns' input functions take them, whether SQLite can tell
    they are already stored as such (integers in range, text, timestamps in the store's form) or not."""
    session.execute("CREATE TABLE v (id bigint NOT NULL, small smallint, n int, note text, at timestamp, "
                    "PRIMARY KEY (id))")
    session.execute("INSERT INTO v SELECT n, n - 32769, n * 1000, n % 7, '2024-02-' || (n + 27) || ' 10:11:12' "
                    "FROM generate_series(1, 2) AS n")
    session.execute("INSERT INTO v SELECT 3, '12', 2147483647, 7 / 2, '2024-02-29T10:11:12'")
    assert rows(session, "SELECT id, small, n, note, at FROM v ORDER BY id") == [
        (1, -32768, 1000, "1", "2024-02-28 10:11:12"), (2, -32767, 2000, "2", "2024-02-29 10:11:12"),
        (3, 12, 2147483647, "3", "2024-02-29 10:11:12")]
    for sql, message in [
            ("INSERT INTO v SELECT 4, n - 32770, 0, '', NULL FROM generate_series(1, 1) AS n", "smallint out of range"),
            ("INSERT INTO v SELECT 4, 0, n + 2147483647, '', NULL FROM generate_series(1, 1) AS n",
             "integer out of range"),
            ("INSERT INTO v SELECT 4, 0, 0, '', '2024-02-' || n || ' 00:00:00' FROM generate_series(30, 30) AS n",
             'invalid input syntax for type timestamp without time zone: "2024-02-30 00:00:00"'),
            ("INSERT INTO v SELECT 4, 0, 0, '', '2024-03-05 24:00:00'",
             'invalid input syntax for type timestamp without time zone: "2024-03-05 24:00:00"'),
            ("INSERT INTO v SELECT 4, 0, 0, '', '0000-01-01 00:00:00'",
             'invalid input syntax for type timestamp without time zone: "0000-01-01 00:00:00"')]:
        assert message in error_of(session, sql).message, sql
    assert rows(session, "SELECT count(*) FROM v") == [(3,)]
    assert rows(session, "SELECT 'n' || (id + 1) || '-' || id * 2, id + 1 || 'x' FROM v WHERE id = 1") == [
        ("n2-2", "2x")]  # Postgres binds arithmetic before ||, SQLite after


def test_division_and_modulo_compute_as_postgres_does(session):
    session.execute("CREATE TABLE d (id int NOT NULL, a bigint, b bigint, x double precision, PRIMARY KEY (id))")
    session.execute("INSERT INTO d VALUES (1, -7, 2, 7.5), (2, 7, -1, -2), (3, 5, 0, 0)")
    assert rows(session, "SELECT a / b, a % b, x / b, a / (b + 0) FROM d WHERE id < 3 ORDER BY id") == [
        (-3, -1, 3.75, -3), (-7, 0, 2.0, -7)]
    assert rows(session, "SELECT -9223372036854775807 - 1 % 2, (-9223372036854775807 - 1) / 2") == [
        (-9223372036854775808, -4611686018427387904)]
    for sql in ("SELECT a / b FROM d WHERE id = 3", "SELECT a % b FROM d WHERE id = 3",
                "SELECT 1 / (a / b) FROM d WHERE id = 3", "SELECT x / (b * 1) FROM d WHERE id = 3"):
        assert "division by zero" in error_of(session, sql).message, sql


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM unnest(1)", "the table function unnest() is not supported yet; generate_series() is"),
    ("SELECT date_trunc('fortnight', '2024-01-01')", 'unit "fortnight" not recognized for date_trunc; one of '
     "microseconds, milliseconds, second, minute, hour, day, week, month, quarter, year, decade, century, millennium"),
    ("CREATE MATERIALIZED VIEW v AS SELECT * FROM generate_series(1, 3)",
     "a materialized view over the table function generate_series() is not supported yet"),
])
def test_functions_outside_what_runs_are_refused_by_name(session, sql, message):
    assert error_of(session, sql).message == message


def _segment_entries(store, table_id, columns):
    """(offset, diff, values) of a replicated table's changes, read as a sink reads them."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from icesink.engine import segments
    from icesink.engine.sources.engine_table import change_schema

    described = [c.as_dict() for c in columns]
    schema = to_arrow_schema(change_schema(described), timezone="UTC")
    found = []
    for after, upto, ts, path in segments.segments(store, table_id, 0, store.latest_offset(table_id)):
        for batch in segments.spark_batches(path, 0, upto - after, after + 1, ts, described, schema, 1000):
            for row in batch.to_pylist():
                found.append((row["_icesink_offset"], row["_icesink_diff"], [row[c.name] for c in columns]))
    return found


def test_a_replicated_tables_changes_are_logged_as_segments_with_the_rows_they_replace(tmp_path):
    from decimal import Decimal

    from icesink.engine import segments
    from icesink.engine.tables import TableStore
    from icesink.model.types import Column

    store = TableStore(tmp_path)
    columns = (Column("id", "bigint"), Column("amount", "numeric"), Column("note", "text"),
               Column("ratio", "double precision"))
    store.create("r1", columns, ("id",))
    store.segments.follow("r1", columns)
    table = '"t_r1"'
    with store.transaction() as db:
        db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?)",
                       [(1, "1.50", "a", 0.1 + 0.2), (2, "2", None, None)])
    with store.transaction() as db:
        db.execute(f"INSERT INTO {table} VALUES (1, '9.99', 'b', 1e308 * 10) ON CONFLICT (id) DO UPDATE SET"
                   " amount = excluded.amount, note = excluded.note, ratio = excluded.ratio")
        db.execute(f"DELETE FROM {table} WHERE id = 2")
    with pytest.raises(RuntimeError):  # rolled back: neither its rows nor a segment
        with store.transaction() as db:
            db.execute(f"DELETE FROM {table}")
            raise RuntimeError("stop")
    assert store.changes("r1", 0, 100) == []  # nothing in the JSON log
    assert _segment_entries(store, "r1", columns) == [  # every digit of a double kept
        (1, 1, [1, Decimal("1.50"), "a", 0.30000000000000004]), (2, 1, [2, Decimal("2"), None, None]),
        (3, -1, [1, Decimal("1.50"), "a", 0.30000000000000004]), (4, 1, [1, Decimal("9.99"), "b", float("inf")]),
        (5, -1, [2, Decimal("2"), None, None])]
    assert len(list((tmp_path / "segments" / "r1").glob("*.parquet"))) == 2

    assert segments.prune(store, "r1", lambda: {"sink1"}) == 0  # it has acknowledged nothing
    store.acknowledge("sink1", "r1", 2)
    assert segments.prune(store, "r1", lambda: {"sink1"}) == 1 and store.floor("r1") == 2
    assert [entry[0] for entry in _segment_entries(store, "r1", columns)] == [3, 4, 5]
    assert segments.prune(store, "r1", lambda: set()) == 1 and store.floor("r1") == 5  # no sink: none kept
    assert not list((tmp_path / "segments" / "r1").glob("*.parquet"))

    offset, path, count = segments.export_snapshot(store, "r1", columns)  # what a sink starting now reads
    assert (offset, count) == (5, 1)
    import pyarrow.parquet as pq
    assert pq.read_table(path).to_pylist() == [{"_icesink_diff": 1, "id": 1, "amount": "9.99", "note": "b",
                                                "ratio": float("inf")}]
    store.drop("r1")
    assert not (tmp_path / "segments" / "r1").exists() and not (tmp_path / "snapshots" / "r1").exists()


def test_a_replicated_tables_small_segments_are_read_together_in_offset_order(tmp_path):
    """A store transaction makes a segment, several a second when changes trickle in: a sink's batch reads them
    a partition of many at a time, not a Spark task each."""
    import json

    from icesink.engine.sources.engine_table import EngineTableReader
    from icesink.engine.tables import TableStore
    from icesink.model.types import Column

    store = TableStore(tmp_path)
    columns = (Column("id", "bigint"), Column("note", "text"))
    store.create("r2", columns, ("id",))
    store.segments.follow("r2", columns)
    expected, state, offset = [], {}, 0
    for n in range(30):
        key = n % 10
        with store.transaction() as db:
            db.execute('INSERT INTO "t_r2" VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET note = excluded.note',
                       (key, f"v{n}"))
        if key in state:
            offset += 1
            expected.append((offset, -1, key, state[key]))
        offset += 1
        expected.append((offset, 1, key, f"v{n}"))
        state[key] = f"v{n}"
    reader = EngineTableReader({"data_dir": str(tmp_path), "table_id": "r2",
                                "columns": json.dumps([c.as_dict() for c in columns])})
    parts = reader.partitions({"offset": 0}, {"offset": store.latest_offset("r2")})
    assert len(parts) == 1 and len(parts[0].pieces) == 30
    read = [(r["_icesink_offset"], r["_icesink_diff"], r["id"], r["note"])
            for batch in reader.read(parts[0]) for r in batch.to_pylist()]
    assert read == expected
    store.close()


def test_a_batch_of_an_engine_tables_log_is_read_in_even_parts_one_per_core(tmp_path):
    """A batch's changes are read a partition per core of Spark's, each as many as the others (a view's partition
    recomputes what its changes touch, seconds of one core: a batch cut into 250,000 entries and a rest left a core
    idle), and every change once, in offset order."""
    import json

    from icesink.engine.sources.engine_table import EngineTableReader
    from icesink.engine.tables import TableStore
    from icesink.model.types import Column

    store = TableStore(tmp_path)
    columns = (Column("id", "bigint"), Column("note", "text"))
    store.create("e1", columns, ("id",))
    with store.transaction() as db:
        db.execute("INSERT INTO t_e1 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000) "
                   "SELECT i, 'a' FROM n")
    with store.transaction() as db:
        db.execute("UPDATE t_e1 SET note = 'b' WHERE id <= 2000")
    reader = EngineTableReader({"data_dir": str(tmp_path), "table_id": "e1", "cores": "2",
                                "columns": json.dumps([c.as_dict() for c in columns])})
    parts = reader.partitions({"offset": 0}, {"offset": store.latest_offset("e1")})
    assert len(parts) == 2, parts
    assert parts[-1].upto - parts[-1].after <= parts[0].upto - parts[0].after
    offsets = [r["_icesink_offset"] for p in parts for batch in reader.read(p) for r in batch.to_pylist()]
    assert offsets == list(range(1, 34001))
    store.close()


def test_a_reader_that_read_a_replicated_table_from_the_start_exports_no_snapshot_once_the_log_is_pruned(tmp_path):
    """Only a reader that has read nothing yet starts from a snapshot of the rows when the log below it is gone; one
    that read from offset 0 follows the log on (exporting a snapshot of 10M rows held such a sink up by 19-23 s)."""
    import json

    from icesink.engine import segments
    from icesink.engine.sources.engine_table import EngineTableReader
    from icesink.engine.tables import TableStore
    from icesink.model.types import Column

    store = TableStore(tmp_path)
    columns = (Column("id", "bigint"), Column("note", "text"))
    store.create("r3", columns, ("id",))
    store.segments.follow("r3", columns)

    def write(key, note):
        with store.transaction() as db:
            db.execute('INSERT INTO "t_r3" VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET note = excluded.note',
                       (key, note))
    options = {"data_dir": str(tmp_path), "table_id": "r3", "columns": json.dumps([c.as_dict() for c in columns]),
               "replicated": "true"}
    snapshots = tmp_path / "snapshots" / "r3"
    early = EngineTableReader(options)
    for key in range(3):
        write(key, "a")
    first = early.latestOffset()
    early.partitions(early.initialOffset(), first)  # its first batch: the log from 0
    store.acknowledge("sink1", "r3", first["offset"])
    assert segments.prune(store, "r3", lambda: {"sink1"}) == 3 and store.floor("r3") == first["offset"]
    write(0, "b")
    assert early.latestOffset() == {"offset": store.latest_offset("r3")}
    assert not list(snapshots.glob("*.parquet"))

    late = EngineTableReader(options)  # a sink created now: the changes before the floor are gone
    assert late.latestOffset() == {"offset": store.latest_offset("r3")}
    assert len(list(snapshots.glob("*.parquet"))) == 1
    store.close()


@pytest.mark.parametrize("sql, message, call", [
    ("CREATE MATERIALIZED VIEW v AS SELECT id, foo(v) FROM ev", "function foo() does not exist", "foo(v)"),
    ("CREATE MATERIALIZED VIEW v AS SELECT u, jsonb_agg(v) FROM ev GROUP BY u",
     "function jsonb_agg() is not supported yet", "jsonb_agg"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id, upper(v, 2) FROM ev", "function upper() does not take 2 arguments", "upper"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM ev WHERE ts > now() - INTERVAL '1 day'",
     "cannot materialize call to now(): its value changes while the view's inputs do not", "now()"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id, random() FROM ev",
     "cannot materialize call to random(): its value changes while the view's inputs do not", "random()"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM ev WHERE mz_now() <= ts + INTERVAL '1 day'",
     "mz_now() is not supported yet: icesink's views keep no temporal filters", "mz_now"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id, ts + 1 FROM ev", "operator does not exist: timestamp without time zone + integer", "+ 1"),
    ("CREATE MATERIALIZED VIEW v AS WITH RECURSIVE x AS (SELECT 1) SELECT * FROM x",
     "WITH RECURSIVE is not supported yet", "RECURSIVE"),
    ("CREATE MATERIALIZED VIEW v AS WITH x (a) AS (SELECT 1) SELECT * FROM x",
     "WITH x (columns …) is not supported yet: name the columns in its SELECT", "a)"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id, row_number() FROM ev",
     "window function row_number() requires an OVER clause", "row_number"),
    ("CREATE MATERIALIZED VIEW v AS SELECT u, string_agg(DISTINCT v, ',') FROM ev GROUP BY u",
     "string_agg(DISTINCT …) with more than one argument is not supported yet", "string_agg"),
    ("SELECT id, coalesce(lower(foo(v)), 'x') FROM ev", "function foo() does not exist", "foo(v)"),
    ("SELECT EXTRACT(hour FROM ts) + bar(1) FROM ev", "function bar() does not exist", "bar"),
    ("CREATE MATERIALIZED VIEW v AS SELECT DISTINCT ON (u) id, v FROM ev ORDER BY ts DESC, u",
     "SELECT DISTINCT ON expressions must match initial ORDER BY expressions", "u)"),
    ("SELECT * FROM (SELECT DISTINCT ON (u, v) id FROM ev ORDER BY v, id) AS s",
     "SELECT DISTINCT ON expressions must match initial ORDER BY expressions", "u,"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM ev WHERE v ~* '[[:letter:]]'",
     "invalid regular expression: invalid character class [:letter:]", "'[[:"),
    ("SELECT id, v !~ 'a(' FROM ev", "invalid regular expression: missing ), unterminated subpattern at position 1",
     "'a("),
    ("CREATE MATERIALIZED VIEW v AS SELECT id, u IS NOT TRUE FROM ev",
     "argument of IS TRUE must be type boolean, not type integer", "u IS NOT"),  # at the argument, as Postgres
    ("SELECT substring(v FROM 2 FOR -1) FROM ev", "negative substring length not allowed", "-1"),
    ("CREATE MATERIALIZED VIEW v AS SELECT ts AT TIME ZONE 'Mars/Olympus' FROM ev",
     "time zone \"Mars/Olympus\" not recognized", "'Mars"),
    ("CREATE MATERIALIZED VIEW v AS SELECT u, array_agg(id, v) FROM ev GROUP BY u",
     "function array_agg() does not take 2 arguments", "array_agg"),
    ("SELECT string_agg(v) FROM ev", "function string_agg() does not take 1 argument", "string_agg"),
    # refused on every path SQLite computes, beside a table function and in INSERT … SELECT too
    ("INSERT INTO ev (id, v) SELECT g, (ts - INTERVAL '1 hour' * g)::text FROM ev, generate_series(1, 2) AS g",
     "interval arithmetic (interval * unknown) is not supported yet: a timestamp or date plus or minus an interval "
     "literal is", "* g"),
    ("CREATE MATERIALIZED VIEW v AS SELECT u, array_agg(v ORDER BY id::numeric) FROM ev GROUP BY u",
     "ORDER BY a value of type numeric inside array_agg() is not supported yet", "numeric)"),
    ("SELECT string_agg(DISTINCT v, ',' ORDER BY id) FROM ev",
     "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list", "string_agg"),
    ("SELECT * FROM (VALUES (1, 'a'), (2)) AS x", "VALUES lists must all be the same length", "2)"),
    ("SELECT * FROM (VALUES (1, 'a')) AS x(a, b, c)", "table \"x\" has 2 columns available but 3 columns specified",
     "c)"),
    ("SELECT upper(v ORDER BY id) FROM ev",
     "ORDER BY in a call of upper() is not supported yet; array_agg, list_agg, string_agg take it", "upper"),
    # SQLite would compute a number from the interval's text ('01:00:00' * 2 is 2), or fail on a row
    ("SELECT ts - INTERVAL '1 hour' * 2 FROM ev", "interval arithmetic (interval * integer) is not supported yet: a "
     "timestamp or date plus or minus an interval literal is", "* 2"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id, ts + (ts - ts) FROM ev", "interval arithmetic (timestamp + interval) "
     "is not supported yet: a timestamp or date plus or minus an interval literal is", "+ (ts"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM ev WHERE ts < localtimestamp",
     "cannot materialize call to localtimestamp(): its value changes while the view's inputs do not", "localtimestamp"),
    ("CREATE MATERIALIZED VIEW v AS SELECT regexp_match(v, '(a)', 'g') FROM ev",
     "regexp_match() does not support the \"global\" option", "'g'"),
    ("SELECT regexp_replace(v, 'a(', 'b') FROM ev",
     "invalid regular expression: missing ), unterminated subpattern at position 1", "'a("),
    ("CREATE MATERIALIZED VIEW v AS SELECT to_char(u, '999') FROM ev",
     "to_char of a number is not supported yet: to_char takes a timestamp or a date here", "to_char"),
    ("SELECT id FROM ev WHERE u > ALL (SELECT u FROM ev)",
     "> ALL (…) is not supported yet: = ANY (…) and <> ALL (…) are", "ALL"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM ev WHERE u = ANY (v)", "op ANY/ALL (array) requires an array on its right, not type text", "ANY"),
])
def test_a_call_that_would_not_run_is_refused_where_it_is_written(events_with_times, sql, message, call):
    """A view's query is refused when it is created, not accepted and then failed by each batch of its sinks."""
    error = error_of(events_with_times, "SELECT 1;\n" + sql)
    assert (error.message, error.position.line, error.position.column) == (message, 2, sql.index(call) + 1)
    assert rows(events_with_times, "SELECT count(*) FROM mz_materialized_views") == [(0,)]


@pytest.fixture
def events_with_times(session):
    session.execute("""
        CREATE TABLE ev (id int NOT NULL, u int, ts timestamp, v text, PRIMARY KEY (id));
        INSERT INTO ev VALUES (1, 1, '2026-01-31 10:15:00', 'a'), (2, 1, '2026-02-01 23:59:59.5', 'b'),
          (3, 2, '2026-01-31 10:15:00', 'c'), (4, 2, '2025-12-31 00:00:00', NULL), (5, NULL, NULL, 'e');
    """)
    return session


def _duckdb_answer(session, sql: str) -> list[tuple]:
    """`sql` answered by DuckDB over the same rows: an evaluator of its own."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE ev (id int, u int, ts timestamp, v text)")
    con.executemany("INSERT INTO ev VALUES (?, ?, ?, ?)", rows(session, "SELECT id, u, ts, v FROM ev"))
    con.execute("CREATE TABLE us (id int, name text)")
    con.executemany("INSERT INTO us VALUES (?, ?)", rows(session, "SELECT id, name FROM us"))
    return [tuple(_as_postgres_prints(v) if hasattr(v, "isoformat") else v for v in r)
            for r in con.execute(sql).fetchall()]


def _as_postgres_prints(moment) -> str:
    """A date or time's text as Postgres prints it: a fraction without trailing zeros, `+00` for UTC."""
    text = str(moment)
    if "." in text:
        whole, rest = text.split(".", 1)
        digits = re.match(r"\d*", rest).group()
        text = whole + ("." + digits.rstrip("0") if digits.rstrip("0") else "") + rest[len(digits):]
    return re.sub(r"([+-]\d{2}):00$", r"\1", text)


@pytest.mark.parametrize("sql", [
    "SELECT DISTINCT ON (u) u, ts, v FROM ev ORDER BY u, ts DESC",
    "SELECT DISTINCT ON (u) * FROM ev ORDER BY u, ts DESC NULLS LAST, id",
    "SELECT DISTINCT ON (1) u AS who, v FROM ev ORDER BY 1, id DESC",
    "SELECT DISTINCT ON (who) u AS who, id FROM ev ORDER BY who, v",
    "SELECT DISTINCT ON (e.u) e.u, us.name, e.v FROM ev e JOIN us ON us.id = e.u ORDER BY e.u, e.ts",
    "SELECT DISTINCT ON (u, date_trunc('day', ts)) u, date_trunc('day', ts) AS day, id FROM ev "
    "ORDER BY u, date_trunc('day', ts), id DESC LIMIT 3",
    "SELECT id, ts + INTERVAL '1 month', ts - INTERVAL '36 hours', DATE '2024-01-31' + INTERVAL '1 month' FROM ev "
    "ORDER BY id",
    "SELECT id, EXTRACT(hour FROM ts), EXTRACT(dow FROM ts), date_part('minute', ts), EXTRACT(epoch FROM ts) "
    "FROM ev ORDER BY id",
    "SELECT id FROM ev WHERE ts >= TIMESTAMP '2026-01-31 10:15:00' AND ts < DATE '2026-02-02' ORDER BY id",
    "SELECT id, ts::date + 3, 2 + ts::date, id + 0.5 FROM ev ORDER BY id",
    "SELECT id, ts::date - DATE '2026-01-01' + 1, ts::date + 30 + 1, ts::date - 1, id + 1 - 1 FROM ev ORDER BY id",
    "SELECT id FROM ev WHERE ts - TIMESTAMP '2026-01-21 10:15:00' > INTERVAL '10 days' ORDER BY id",
    "SELECT id FROM ev WHERE (id * 1.255)::numeric(10,2) > 2.5 ORDER BY (id * 1.255)::numeric(10,2) DESC",
    "SELECT coalesce(u, 0) AS c, count(*), bool_and(v < 'c') FROM ev GROUP BY c ORDER BY c",
    "SELECT id, u, row_number() OVER (PARTITION BY u ORDER BY ts DESC, id) AS rn, count(*) OVER (ORDER BY id), "
    "lag(v) OVER (ORDER BY id), rank() OVER (ORDER BY u), max(ts) OVER (PARTITION BY u) FROM ev ORDER BY id",
    "SELECT * FROM (SELECT id, u, row_number() OVER (PARTITION BY u ORDER BY id DESC) AS rn FROM ev) AS t "
    "WHERE rn <= 1 ORDER BY id",
    "WITH per AS (SELECT u, count(*) AS n FROM ev GROUP BY u), one AS (SELECT u FROM per WHERE n = 2 AND u > 1) "
    "SELECT ev.id, one.u FROM ev JOIN one ON one.u = ev.u ORDER BY ev.id",
    "WITH x AS (SELECT id, u FROM ev) SELECT a.id, count(b.id) FROM x a LEFT JOIN x b ON b.u = a.u AND b.id < a.id "
    "WHERE a.id IN (SELECT id FROM x WHERE id > 1) GROUP BY a.id ORDER BY a.id",
    "SELECT id, ts::timestamptz, (ts + INTERVAL '0.25 seconds')::timestamp, CAST('true' AS boolean) FROM ev "
    "ORDER BY id",
    "SELECT e.id, (SELECT name FROM us WHERE us.id = e.u) AS name, (SELECT count(*) FROM ev i WHERE i.u = e.u) "
    "FROM ev e ORDER BY e.id",
    "SELECT id, EXTRACT(epoch FROM ts - TIMESTAMP '2026-01-01 00:00:00'), EXTRACT(hour FROM ts - TIMESTAMP "
    "'2025-12-30 20:30:00'), EXTRACT(minute FROM TIMESTAMP '2025-12-30 20:30:00' - ts), ts::date - DATE '2025-12-25' "
    "FROM ev ORDER BY id",
    "SELECT u, string_agg(v, ',') FROM (SELECT u, v FROM ev WHERE id IN (1, 3, 4)) AS one GROUP BY u ORDER BY u",
    "SELECT id, concat_ws('-', v, u, NULL), starts_with(v, 'a'), reverse(v), translate(v || 'abc', 'ab', 'B'), "
    "ascii(v), make_date(2026, 1, id), gcd(id, 4), lcm(id, 4), round(cbrt(id * 8), 9) FROM ev ORDER BY id",
    "SELECT id, ts - TIMESTAMP '2025-12-25 00:00:00' > INTERVAL '30 days' FROM ev "
    "ORDER BY ts - TIMESTAMP '2025-12-25 00:00:00' DESC NULLS FIRST, id",
    "SELECT u, EXTRACT(epoch FROM max(ts - TIMESTAMP '2025-12-25 00:00:00')), EXTRACT(epoch FROM min(TIMESTAMP "
    "'2026-03-01 00:00:00' - ts)) AS least FROM ev GROUP BY u ORDER BY least NULLS FIRST, u",
    "SELECT a.id, b.id FROM ev a JOIN ev b ON a.ts - TIMESTAMP '2026-01-01 00:00:00' > b.ts - TIMESTAMP "
    "'2026-01-30 00:00:00' ORDER BY 1, 2",
    "SELECT id, sum(id) OVER (PARTITION BY u ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), count(*) OVER "
    "(ORDER BY u RANGE UNBOUNDED PRECEDING), max(id) OVER (ORDER BY id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING), "
    "first_value(id) OVER (ORDER BY u GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW), sum(id) OVER (ORDER BY id ROWS "
    "2 PRECEDING) FROM ev ORDER BY id",
    "SELECT u, round(stddev(id), 6), round(var_pop(id * 1.5), 6), round(stddev_pop(id), 6), round(variance(id), 6), "
    "round(var_samp(id), 6), round(stddev_samp(id), 6) FROM ev GROUP BY u ORDER BY u",
    "SELECT id, (u > 1) IS TRUE, (v < 'c') IS NOT TRUE, (u = 1) IS FALSE, (u = 1) IS NOT FALSE, (v > 'b') IS UNKNOWN, "
    "(v > 'b') IS NOT UNKNOWN FROM ev WHERE (ts > TIMESTAMP '2026-01-01 00:00:00') IS NOT TRUE ORDER BY id",
    "SELECT id, position('b' IN v || 'b'), position('' IN v), position(v IN 'abcde'), position('x' IN (v)) FROM ev "
    "ORDER BY id",
    "SELECT id, substring(v || 'xyz' FROM 0 FOR 3), substring(v || 'xyz' FROM 2), substring(v || 'xyz' FOR 2), "
    "substring(v || 'xyz' FROM u - 1 FOR 2), substring(v || 'xyz' FROM u), substring(ts::text FROM 12 FOR 5) FROM ev "
    "ORDER BY id",
])
def test_distinct_on_intervals_typed_literals_and_extract_answer_as_another_evaluator_does(events_with_times, sql):
    events_with_times.execute("CREATE TABLE us (id int NOT NULL, name text, PRIMARY KEY (id)); "
                              "INSERT INTO us VALUES (1, 'ann'), (2, 'bob')")
    expected = _duckdb_answer(events_with_times, sql)
    assert expected  # the case says something
    # a numeric is shown as Postgres's text of it ('1.50'), which DuckDB gives as a number
    answer = rows(events_with_times, sql)
    assert len(answer) == len(expected)
    got = [tuple(float(v) if isinstance(v, str) and isinstance(e, (float, Decimal)) else v for v, e in zip(row, want))
           for row, want in zip(answer, expected)]
    assert got == expected


def test_postgres_functions_sqlite_lacks_answer_as_postgres_does(events_with_times):
    assert rows(events_with_times, "SELECT initcap('hello wORLD-x1y o''neil'), octet_length('héllo'), "
                                   "concat_ws(NULL, 'a'), make_date(2026, 2, 28), cbrt(64), cbrt(-27)") == [
        ("Hello World-X1y O'Neil", 6, None, "2026-02-28", 4.0, -3.0)]
    assert error_of(events_with_times, "SELECT make_date(2026, 2, 30)").message == \
        "date field value out of range: 2026-02-30"
    events_with_times.execute("CREATE MATERIALIZED VIEW spread AS SELECT u, stddev(id) AS s, initcap(max(v)) AS "
                              "top, starts_with(min(v), 'a') AS a FROM ev GROUP BY u")
    assert [(r[0], r[2]) for r in rows(events_with_times, "SHOW COLUMNS FROM spread")] == [
        ("u", "integer"), ("s", "numeric"), ("top", "text"), ("a", "boolean")]
    assert error_of(events_with_times, "SELECT age(ts) FROM ev").message == "function age() is not supported yet"


def test_at_time_zone_turns_a_local_time_into_a_moment_and_back_as_postgres_does(events_with_times):
    """A timestamp read as the zone's local time is a moment (held in UTC, daylight saving time counted); a moment
    is the zone's local time then; zone names in any case, as Postgres takes them."""
    events_with_times.execute("CREATE TABLE zoned (id int, at timestamptz); INSERT INTO zoned VALUES "
                              "(1, '2026-01-31 10:00:00+02'), (2, '2026-07-01 12:00:00+00'), (3, NULL)")
    assert rows(events_with_times, "SELECT id, at AT TIME ZONE 'Europe/Paris', at AT TIME ZONE 'america/new_york', "
                                   "(at AT TIME ZONE 'UTC') AT TIME ZONE 'Asia/Tokyo' FROM zoned ORDER BY id") == [
        (1, "2026-01-31 09:00:00", "2026-01-31 03:00:00", "2026-01-30 23:00:00+00"),
        (2, "2026-07-01 14:00:00", "2026-07-01 08:00:00", "2026-07-01 03:00:00+00"), (3, None, None, None)]
    assert rows(events_with_times, "SELECT ts AT TIME ZONE 'Europe/Paris', ts::date AT TIME ZONE 'Europe/Paris' "
                                   "FROM ev WHERE id = 1") == [("2026-01-31 09:15:00+00", "2026-01-31 01:00:00")]
    events_with_times.execute("CREATE MATERIALIZED VIEW local_days AS SELECT zoned.id, date_trunc('day', at AT TIME ZONE "
                              "'Asia/Tokyo') AS day, ts AT TIME ZONE 'UTC' AS moment FROM zoned, ev WHERE ev.id = zoned.id")
    assert [(r[0], r[2]) for r in rows(events_with_times, "SHOW COLUMNS FROM local_days")] == [
        ("id", "integer"), ("day", "timestamp"), ("moment", "timestamp with time zone")]
    assert rows(events_with_times, "SELECT id, day FROM local_days ORDER BY id") == [
        (1, "2026-01-31 00:00:00"), (2, "2026-07-01 00:00:00"), (3, None)]


def test_is_and_regular_expressions_bind_as_postgres_binds_them(events_with_times):
    """IS binds more loosely than a comparison and `~` more tightly, as in Postgres: `u > 1 IS TRUE` is
    `(u > 1) IS TRUE`, `v ~ 'a' = true` is `(v ~ 'a') = true`."""
    assert rows(events_with_times, "SELECT id, u > 1 IS TRUE, v ~ 'a' = true, v ~ 'a' IS NULL, NOT u > 1 IS NOT FALSE, "
                                   "u + 1 IS DISTINCT FROM 2 FROM ev ORDER BY id") == [
        (1, 0, 1, 0, 1, 0), (2, 0, 0, 0, 1, 0), (3, 1, 0, 0, 0, 1), (4, 1, None, 1, 0, 1), (5, 0, 0, 0, 0, 1)]


def test_regular_expressions_match_as_postgres_matches(events_with_times):
    """`~` finds the pattern anywhere, as Postgres's does (DuckDB's `~` must match the whole text), `.` takes a
    newline and `$` is the end alone; Postgres's bracket classes and word boundaries read as Postgres reads them."""
    assert rows(events_with_times, "SELECT 'abc' ~ 'b', 'abc' ~ '^b', 'ABC' ~ 'b', 'ABC' ~* 'b', 'abc' !~ 'b', "
                                   "'ABC' !~* 'b', NULL ~ 'b', 'b' ~ NULL, E'abc\\n' ~ 'c$', E'a\\nb' ~ 'a.b', "
                                   "'x1' ~ '^[[:alpha:]][[:digit:]]$', 'a_' ~ '^[^[:alpha:]_]', "
                                   "'foo bar' ~ '\\mbar\\M', 'foobar' ~ '\\mbar'") == [
        (1, 0, 0, 1, 0, 0, None, None, 0, 1, 1, 0, 1, 0)]
    assert rows(events_with_times, "SELECT id, v ~ '[ab]', v !~* 'B' FROM ev WHERE v ~* '^[A-C]$' ORDER BY id") == [
        (1, 1, 1), (2, 1, 0), (3, 0, 1)]
    assert error_of(events_with_times, "SELECT v ~ ('(' || v) FROM ev").message == \
        "invalid regular expression: missing ), unterminated subpattern at position 0"


def test_substring_counts_from_a_start_before_1_as_postgres_does(events_with_times):
    """The characters from start to start + count, of those there are: SQLite's substr (and DuckDB's) reads a negative
    start from the end instead."""
    assert rows(events_with_times, "SELECT substring('abcdef' FROM -1 FOR 3), substring('abcdef' FROM -2), "
                                   "substr('abcdef', 0, 3), substring('abcdef' FOR 0)") == [("a", "abcdef", "ab", "")]
    assert rows(events_with_times, "SELECT id, substr(v || 'xyz', u - 3, 3), substring(v || 'xyz' FROM 1 - u) FROM ev "
                                   "ORDER BY id") == [
        (1, "", "axyz"), (2, "", "bxyz"), (3, "c", "cxyz"), (4, None, None), (5, None, None)]


def test_a_view_of_the_postgres_special_forms_is_typed_and_runs(events_with_times):
    """IS TRUE, POSITION(… IN …), SUBSTRING(… FROM … FOR …) and `~` pass the check of calls at CREATE, have their
    columns' types, and what SHOW CREATE keeps reads back to the same answers."""
    events_with_times.execute("CREATE MATERIALIZED VIEW forms AS SELECT id, (u = 1) IS NOT TRUE AS t, "
                              "position('b' IN v) AS p, substring(v || 'xyz' FROM u - 1 FOR 2) AS s, "
                              "v ~* 'B' AS r FROM ev")
    assert [(r[0], r[2]) for r in rows(events_with_times, "SHOW COLUMNS FROM forms")] == [
        ("id", "integer"), ("t", "boolean"), ("p", "integer"), ("s", "text"), ("r", "boolean")]
    assert rows(events_with_times, "SELECT * FROM forms ORDER BY id") == [
        (1, 0, 0, "a", 0), (2, 0, 1, "b", 1), (3, 1, 0, "cx", 0), (4, 1, None, None, None), (5, 1, 0, None, 0)]


def test_intervals_ordered_by_ordinal_and_distinct_on_ordinals_over_star(events_with_times):
    assert rows(events_with_times, "SELECT id, ts - TIMESTAMP '2025-12-25 00:00:00' FROM ev WHERE id < 5 "
                                   "ORDER BY 2 DESC, id") == [
        (2, "38 days 23:59:59.5"), (1, "37 days 10:15:00"), (3, "37 days 10:15:00"), (4, "6 days")]
    # an ordinal of DISTINCT ON or ORDER BY over `*` is the table's column, as Postgres reads it
    assert rows(events_with_times, "SELECT DISTINCT ON (2) * FROM ev ORDER BY u, id DESC") == rows(
        events_with_times, "SELECT DISTINCT ON (u) id, u, ts, v FROM ev ORDER BY 2, id DESC") == [
        (2, 1, "2026-02-01 23:59:59.5", "b"), (4, 2, "2025-12-31 00:00:00", None), (5, None, None, "e")]


def test_computed_columns_are_named_as_postgres_names_them(events_with_times):
    """An output without an alias is named as psql shows it (Postgres's rule), whatever SQLite computes it by."""
    assert events_with_times.execute("SELECT id + 1, count(*) - 1, ts::timestamptz, INTERVAL '1 day', "
                                     "string_agg(v, ',') FROM ev GROUP BY id")[-1].columns == [
        "?column?", "?column?", "ts", "interval", "string_agg"]


def test_a_view_is_read_by_the_column_names_it_shows_and_views_over_it_are_kept_incrementally(session):
    """A view's computed columns are named as Postgres names them (`x::text` is x, `upper(g)` is upper): SHOW
    COLUMNS, SELECT *, a query naming them, and a view over the view all read those names."""
    session.execute("CREATE TABLE t (id int NOT NULL, g text, x int, PRIMARY KEY (id)); "
                    "INSERT INTO t VALUES (1, 'a', 3), (2, 'a', 5), (3, 'b', NULL); "
                    "CREATE MATERIALIZED VIEW v1 AS SELECT id, x::text, upper(g) FROM t; "
                    "CREATE MATERIALIZED VIEW v2 AS SELECT upper, count(*), max(x) FROM v1 GROUP BY upper")
    assert [r[0] for r in rows(session, "SHOW COLUMNS FROM v1")] == session.execute(
        "SELECT * FROM v1")[-1].columns == ["id", "x", "upper"]
    # its stored text reads EXTRACT as date_part: the view's own names are the ones SELECT gives
    session.execute("CREATE MATERIALIZED VIEW v3 AS SELECT id, EXTRACT(year FROM DATE '2026-01-01') FROM t")
    assert session.execute("SELECT * FROM v3")[-1].columns == ["id", "extract"]
    assert rows(session, "SELECT extract FROM v3 WHERE id = 1") == [(2026,)]
    assert rows(session, "SELECT x, upper FROM v1 WHERE x IS NOT NULL ORDER BY x") == [("3", "A"), ("5", "A")]
    result = session.execute("SELECT * FROM v2 ORDER BY upper")[-1]
    assert (result.columns, result.rows) == (["upper", "count", "max"], [("A", 2, "5"), ("B", 1, None)])
    created = session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local'); "
                              "CREATE SINK s FROM v2 INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'a', TABLE 'b') "
                              "KEY (upper) MODE UPSERT WITH (COMMIT INTERVAL '1s')")[-1]
    assert created.status == "CREATE SINK" and created.notices == []  # merged with v1, not recomputed whole


def test_a_moment_moved_by_an_interval_is_a_timestamp_column(events_with_times):
    events_with_times.execute("CREATE MATERIALIZED VIEW due AS SELECT id, ts + INTERVAL '1 day' AS due, "
                              "DATE '2026-01-01' + INTERVAL '2 hours' AS start, EXTRACT(hour FROM ts) AS h FROM ev")
    assert [(r[0], r[2]) for r in rows(events_with_times, "SHOW COLUMNS FROM due")] == [
        ("id", "integer"), ("due", "timestamp"), ("start", "timestamp"), ("h", "numeric")]
    events_with_times.execute("CREATE MATERIALIZED VIEW spans AS SELECT id, ts - TIMESTAMP '2026-01-01 00:00:00' AS "
                              "span, ts::date - DATE '2026-01-01' AS days FROM ev")
    assert [(r[0], r[2]) for r in rows(events_with_times, "SHOW COLUMNS FROM spans")] == [
        ("id", "integer"), ("span", "interval"), ("days", "integer")]
    assert rows(events_with_times, "SELECT ts - TIMESTAMP '2026-01-31 08:00:00', TIMESTAMP '2026-01-30 08:00:00' - ts, "
                                   "ts - ts FROM ev WHERE id = 2") == [("1 day 15:59:59.5", "-2 days -15:59:59.5", "00:00:00")]
    assert rows(events_with_times, "SELECT 1.239::numeric(10,2), '1 day 2 hours'::interval, 2::boolean, "
                                   "'yes'::boolean") == [("1.24", "1 day 02:00:00", True, True)]
    assert rows(events_with_times, "SELECT occurred_at::timestamptz FROM mz_internal.mz_sink_status_history") == []
    assert error_of(events_with_times, "SELECT ts + INTERVAL 'a fortnight' FROM ev").message == \
        'invalid input syntax for type interval: "a fortnight"'
