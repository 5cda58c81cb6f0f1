"""SELECT from load generators, and views over them: over generators alone, Spark generates each relation's rows up to
now on its executors, consolidates them (retractions cancel insertions; KEY VALUE keeps each key's newest value), and
runs the query; joined with other relations, and in a sink's view, they are read from the tables of the store that
keep them, brought up to the generator's tick."""
import re
import time
from decimal import Decimal

import pytest
from pyiceberg.exceptions import NoSuchTableError

from tests.conftest import error_of, rows

pytestmark = pytest.mark.timeout(300)

SOURCES = """
CREATE SOURCE counter FROM LOAD GENERATOR COUNTER (TICK INTERVAL '10ms', UP TO 50);
CREATE SOURCE kv FROM LOAD GENERATOR KEY VALUE (KEYS 16, BATCH SIZE 4, TICK INTERVAL '10ms', UP TO 20);
CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR 0.01) FOR ALL TABLES;
CREATE MATERIALIZED VIEW evens AS SELECT counter FROM counter WHERE counter % 2 = 0;
CREATE TABLE notes (body text);
"""


def test_select_reads_load_generators_and_views_over_them(session, spark):
    session.execute(SOURCES)
    time.sleep(1)  # UP TO's last tick is past
    assert rows(session, "SELECT count(*), max(counter) FROM counter") == [(50, 50)]
    assert rows(session, "SELECT counter FROM counter ORDER BY counter DESC LIMIT 3") == [(50,), (49,), (48,)]
    assert rows(session, "SELECT count(*), sum(counter) FROM evens") == [(25, sum(range(2, 51, 2)))]
    # 80 upserts over 16 keys: each key once, at its newest round
    assert rows(session, "SELECT count(*), count(DISTINCT key), max(round), min(round) FROM kv") == [(16, 16, 4, 4)]
    assert rows(session, "SELECT count(*) FROM customer") == [(1500,)]
    assert rows(session, "SELECT r_name, count(*) FROM nation JOIN region ON n_regionkey = r_regionkey "
                         "GROUP BY r_name ORDER BY r_name") == [
        ("AFRICA", 5), ("AMERICA", 5), ("ASIA", 5), ("EUROPE", 5), ("MIDDLE EAST", 5)]
    # Spark answers, but each column is named as Postgres names it, as a query SQLite answers is
    result = session.execute("SELECT count(*), max(counter) AS top, max(counter)::text, count(*) > 0 FROM counter")[-1]
    assert result.columns == ["count", "top", "max", "?column?"]
    assert result.rows == [(50, 50, "50", True)]


def test_a_query_joining_load_generators_with_tables_reads_the_generators_rows_kept_in_the_store(session, spark):
    """SQLite answers it, from the tables that keep the generators' rows, brought up to their tick first: the same
    rows Spark generates for a query over the generators alone."""
    session.execute(SOURCES + "CREATE TABLE picks (n bigint); INSERT INTO picks VALUES (3), (7), (99);")
    time.sleep(1)  # UP TO's last tick is past
    assert rows(session, "SELECT c.counter FROM counter c JOIN picks p ON p.n = c.counter ORDER BY 1") == [(3,), (7,)]
    assert rows(session, "SELECT count(*), max(round) FROM kv JOIN picks ON n = 3") == [(16, 4)]
    alone = "SELECT count(*), sum(o_totalprice), min(o_orderdate), max(o_comment) FROM orders"
    joined = alone + " JOIN picks ON n = 3"
    assert _plain(rows(session, joined)) == _plain(rows(session, alone))
    assert _plain(rows(session, "SELECT count(*), sum(l_extendedprice) FROM lineitem JOIN picks ON n = 7")) == \
        _plain(rows(session, "SELECT count(*), sum(l_extendedprice) FROM lineitem"))


def test_the_postgres_special_forms_answer_alike_on_spark_and_in_sqlite(session, spark):
    """Over a generator alone Spark runs the query, joined with a table SQLite does: IS TRUE, position, substring
    (from a start before 1 too, which Spark and SQLite would each count otherwise) and ~, ~* give one answer."""
    session.execute(SOURCES + "CREATE TABLE picks (n bigint); INSERT INTO picks VALUES (3);")
    forms = ("SELECT n_nationkey, n_name ~ 'AN', n_name ~* '^a', n_name !~ 'I', n_name !~* 'i', position('A' IN n_name), "
             "substring(n_name FROM 0 FOR 3), substring(n_name FROM n_regionkey - 2 FOR 4), "
             "substring(n_name FROM n_regionkey - 3), (n_regionkey > 2) IS TRUE, (n_regionkey > 2) IS NOT FALSE "
             "FROM nation")
    alone = rows(session, forms + " ORDER BY n_nationkey")
    joined = rows(session, forms + " JOIN picks ON n = 3 ORDER BY n_nationkey")
    assert len(alone) == 25 and alone[1][1:7] == (False, True, False, False, 1, "AR")  # ARGENTINA
    assert [tuple(int(v) if isinstance(v, bool) else v for v in row) for row in alone] == joined


def test_moments_answer_alike_on_spark_and_in_sqlite_as_postgres_prints_them(session, spark):
    """A timestamptz, its text, its text beside ||, its hour and its cast to timestamp: Spark's answer (PySpark's
    datetimes, Spark's cast without a zone) shown as Postgres prints it, as SQLite's answer over the kept rows is."""
    session.execute("CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '1h', AS OF 20) FOR ALL TABLES;"
                    "CREATE TABLE one (n bigint); INSERT INTO one VALUES (1);")
    moments = ("SELECT a.id, a.end_time, a.end_time::text, 'ends ' || a.end_time, date_trunc('hour', a.end_time), "
               "a.end_time::timestamp, a.end_time::timestamp::text FROM auctions a")
    alone = rows(session, moments + " WHERE a.id <= 3 ORDER BY a.id")
    joined = rows(session, moments + " JOIN one ON n = 1 WHERE a.id <= 3 ORDER BY a.id")
    assert len(alone) == 3 and alone == joined
    zoned = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d*[1-9])?"
    for _, end, text, beside, hour, plain, plain_text in alone:
        assert re.fullmatch(zoned + r"\+00", end) and text == end and beside == "ends " + end
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:00:00\+00", hour) and hour[:13] == end[:13]
        assert plain == plain_text == end.removesuffix("+00")


def test_integer_division_truncates_on_spark_as_in_sqlite_and_postgres(session, spark):
    """`/` of integers truncates toward zero, as in Postgres, in a query Spark answers over load generators and in a
    view over one: Spark's own `/` gives a double (0.5 for 1 / 2)."""
    session.execute("CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '1h', AS OF 20) FOR ALL TABLES;"
                    "CREATE TABLE one (n bigint); INSERT INTO one VALUES (1);"
                    "CREATE MATERIALIZED VIEW halves AS SELECT id, id / 2 AS h, -id / 2 AS m, mod(id, 3) / 2 AS r "
                    "FROM auctions")
    division = ("SELECT a.id, a.id / 2, -a.id / 2, count(*) OVER () / 3, (a.id % 3) / 2, 10 / (a.id / 2 + 1) "
                "FROM auctions a")
    alone = rows(session, division + " WHERE a.id <= 5 ORDER BY a.id")
    joined = rows(session, division + " JOIN one ON n = 1 WHERE a.id <= 5 ORDER BY a.id")
    assert alone == joined == [(i, i // 2, -(i // 2), 1, i % 3 // 2, 10 // (i // 2 + 1)) for i in range(1, 6)]
    assert rows(session, "SELECT * FROM halves WHERE id <= 5 ORDER BY id") == \
        [(i, i // 2, -(i // 2), i % 3 // 2) for i in range(1, 6)]


def test_at_time_zone_over_a_generator_alone_is_refused_where_spark_would_need_its_operands_type(session):
    session.execute(SOURCES)
    assert error_of(session, "SELECT o_orderdate AT TIME ZONE 'UTC' FROM orders").message == (
        "AT TIME ZONE in a query over load generators alone (which Spark answers) is not supported yet")
    # Spark's collect_list would drop the order
    assert error_of(session, "SELECT array_agg(o_orderkey ORDER BY o_orderdate) FROM orders").message == (
        "ORDER BY inside an aggregate in a query over load generators alone (which Spark answers) is not supported "
        "yet")


def _plain(found: list[tuple]) -> list[tuple]:
    """SQLite's answer and Spark's in one form: SQLite sums numerics as doubles and shows dates as text."""
    return [tuple(round(float(v), 2) if isinstance(v, (float, Decimal)) else str(v) for v in row) for row in found]


def test_a_generators_kept_rows_are_its_own_each_retraction_of_a_row_it_made(session, spark):
    """AUCTION's accounts: each change of a balance retracts the one before (account 1's too, whose first change
    comes at tick 100), so Spark's consolidation and the kept table (which deletes by key, and refuses a retraction
    that finds no row) both hold each account once. A COUNTER that has made nothing yet is kept empty, every time it
    is read; INSERT … SELECT reads generators too."""
    session.execute("CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '1h', AS OF 250) FOR ALL TABLES;"
                    "CREATE SOURCE idle FROM LOAD GENERATOR COUNTER (UP TO 0);"
                    "CREATE TABLE one (n bigint); INSERT INTO one VALUES (1);"
                    "CREATE TABLE copied (id bigint, balance bigint);")
    assert rows(session, "SELECT count(*), count(DISTINCT id) FROM accounts") == [(100, 100)]
    assert rows(session, "SELECT count(*), count(DISTINCT id), sum(balance) FROM accounts JOIN one ON n = 1") == \
        rows(session, "SELECT count(*), count(DISTINCT id), sum(balance) FROM accounts")
    for _ in range(2):
        assert rows(session, "SELECT count(*) FROM idle JOIN one ON true") == [(0,)]
    session.execute("INSERT INTO copied SELECT id, balance FROM accounts WHERE id <= 10")
    assert rows(session, "SELECT count(*), sum(balance) FROM copied") == \
        rows(session, "SELECT count(*), sum(balance) FROM accounts WHERE id <= 10")


GENERATED_VIEWS = """
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '50ms', UP TO 30) FOR ALL TABLES;
CREATE MATERIALIZED VIEW bid_stats AS
SELECT a.id AS auction, a.item, count(b.id) AS bids, max(b.amount) AS top, max(b.bid_time) AS last_bid
FROM auctions a LEFT JOIN bids b ON b.auction_id = a.id GROUP BY a.id, a.item;
CREATE SINK bids_lake FROM bid_stats INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'demo', TABLE 'bids')
  KEY (auction, item) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SOURCE counter FROM LOAD GENERATOR COUNTER (TICK INTERVAL '50ms', UP TO 40);
CREATE MATERIALIZED VIEW buckets AS SELECT counter % 5 AS bucket, count(*) AS n, max(counter) AS top FROM counter
GROUP BY counter % 5;
CREATE SINK buckets_lake FROM buckets INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'demo', TABLE 'buckets')
  KEY (bucket) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR 0.001, TICK INTERVAL '50ms', UP TO 40) FOR ALL TABLES;
CREATE MATERIALIZED VIEW pricing AS SELECT l_returnflag, l_linestatus, sum(l_quantity) AS qty,
  sum(l_extendedprice * (1 - l_discount)) AS revenue, count(*) AS n FROM lineitem GROUP BY l_returnflag, l_linestatus;
CREATE SINK pricing_lake FROM pricing INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'demo', TABLE 'pricing')
  KEY (l_returnflag, l_linestatus) MODE UPSERT WITH (COMMIT INTERVAL '1s');
"""


def test_sinks_on_views_over_load_generators_hold_what_select_computes(session, scheduler):
    """The sink recomputes the view in SQLite from the rows the generator made; SELECT computes it in Spark SQL:
    two evaluators, one answer."""
    from tests.readers import duckdb_rows
    from tests.runtime import iceberg_table, wait_for

    created = session.execute(GENERATED_VIEWS)
    sink = next(r for r in created if r.status == "CREATE SINK")
    assert not sink.notices  # kept incrementally, as over engine tables
    time.sleep(2.5)  # the generators are past UP TO (TPCH's ticks replace orders and their lineitems)
    for sink, view, columns, key, least in (
            ("bids_lake", "bid_stats", "auction, item, bids, top, last_bid", "auction", 5),
            ("buckets_lake", "buckets", "bucket, n, top", "bucket", 5),
            ("pricing_lake", "pricing", "l_returnflag, l_linestatus, qty, revenue, n", "l_returnflag, l_linestatus",
             3)):
        expected = _normal(rows(session, f"SELECT {columns} FROM {view} ORDER BY {key}"))
        assert len(expected) >= least

        def written():
            try:
                table = iceberg_table(session, sink)
            except NoSuchTableError:
                return False
            return _normal(duckdb_rows(table.metadata_location, columns, key)) == expected
        wait_for(written, what=f"{sink} to hold the view")


def _normal(found: list[tuple]) -> list[tuple]:
    """Timestamps as Postgres prints them in UTC (as SELECT shows them; DuckDB gives datetimes in its zone); numerics
    to the cent (Spark sums decimals, SQLite doubles)."""
    import datetime as dt
    import re
    from icesink.catalog.sql_functions import moment_text

    def value(v):
        if isinstance(v, dt.datetime) and v.tzinfo is not None:
            return moment_text(v.astimezone(dt.timezone.utc).isoformat(sep=" "))
        if isinstance(v, (float, Decimal)) or isinstance(v, str) and re.fullmatch(r"-?\d+\.\d+", v):
            return round(float(v), 2)  # the API gives a numeric of a known scale as its text
        return v
    return [tuple(value(v) for v in row) for row in found]


WATCHED = """
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '50ms', UP TO 60) FOR ALL TABLES;
CREATE TABLE watch (auction_id bigint NOT NULL, owner text NOT NULL, PRIMARY KEY (auction_id));
INSERT INTO watch VALUES (1, 'ada'), (2, 'ada'), (3, 'grace'), (500, 'edsger');
CREATE MATERIALIZED VIEW watched AS
SELECT w.owner, count(b.id) AS bids, max(b.amount) AS top FROM watch w JOIN bids b ON b.auction_id = w.auction_id
GROUP BY w.owner;
CREATE SINK watched_lake FROM watched INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'demo', TABLE 'watched')
  KEY (owner) MODE UPSERT WITH (COMMIT INTERVAL '1s');
"""


def test_a_sink_on_a_view_joining_a_load_generator_with_a_table_follows_both(session, scheduler):
    """The view reads the generator's rows from the table that keeps them, caught up before each batch: bids that
    come in and rows of the engine table that change both reach Iceberg, as the query over the final rows says
    (computed here in Python from what Spark generates and what the table holds)."""
    from tests.readers import duckdb_rows
    from tests.runtime import iceberg_table, wait_for

    created = session.execute(WATCHED)
    assert not created[-1].notices  # kept incrementally: a batch recomputes the owners its changes touch
    time.sleep(1)
    session.execute("UPDATE watch SET owner = 'grace' WHERE auction_id = 2; DELETE FROM watch WHERE auction_id = 1; "
                    "INSERT INTO watch VALUES (40, 'barbara'), (58, 'barbara')")
    time.sleep(2.5)  # the generator is past UP TO
    bids = rows(session, "SELECT auction_id, amount FROM bids")
    assert len(bids) == 180
    owners = dict(rows(session, "SELECT auction_id, owner FROM watch"))
    expected = {}
    for auction, amount in bids:
        if auction in owners:
            count, top = expected.get(owners[auction], (0, 0))
            expected[owners[auction]] = (count + 1, max(top, amount))
    expected = sorted((owner, count, top) for owner, (count, top) in expected.items())
    assert [owner for owner, _, _ in expected] == ["barbara", "grace"]
    assert rows(session, "SELECT owner, bids, top FROM watched ORDER BY owner") == expected

    def written():
        try:
            table = iceberg_table(session, "watched_lake")
        except NoSuchTableError:
            return False
        return [tuple(r) for r in duckdb_rows(table.metadata_location, "owner, bids, top", "owner")] == expected
    wait_for(written, what="watched_lake to hold the view")
