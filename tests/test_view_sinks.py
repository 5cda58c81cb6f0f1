"""Sinks on materialized views: each batch recomputes the view's rows for the keys its input's changes touch, and the
Iceberg table, read by DuckDB, holds exactly what the view's query gives over the final input (SQLite evaluating it
from scratch, as SELECT does)."""
import random
import signal
import threading
import time

import pytest

import icesink
from icesink.engine.scheduler import Scheduler
from tests.conftest import error_of, kill_serve_repeatedly, rows, serve
from tests.readers import duckdb_rows
from tests.runtime import committed_offset, iceberg_table, sink_status, wait_for

pytestmark = pytest.mark.timeout(600)

SETUP = """
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE TABLE user_events (id bigint NOT NULL, user_id bigint, session_id text, event_timestamp timestamp,
  amount numeric(10,2), PRIMARY KEY (id));
CREATE MATERIALIZED VIEW user_activity_summary AS
SELECT user_id, DATE_TRUNC('hour', event_timestamp) AS hour, COUNT(*) AS event_count,
       COUNT(DISTINCT session_id) AS session_count, MAX(event_timestamp) AS last_event_time
FROM user_events GROUP BY user_id, DATE_TRUNC('hour', event_timestamp);
CREATE MATERIALIZED VIEW big_spenders AS
SELECT user_id % 7 AS cohort, SUM(amount) AS total, MIN(amount) AS least, AVG(id) AS mean_id,
       SUM(CASE WHEN session_id LIKE 's1%' THEN 1 ELSE 0 END) AS s1_events
FROM user_events WHERE amount > 10 GROUP BY user_id % 7 HAVING COUNT(*) > 2;
CREATE MATERIALIZED VIEW recent AS SELECT id, user_id, CAST(amount AS double precision) AS amount
FROM user_events WHERE event_timestamp >= '2026-11-01 12:00:00';
CREATE TABLE users (id bigint NOT NULL, region text, PRIMARY KEY (id));
CREATE MATERIALIZED VIEW region_totals AS
SELECT u.region, COUNT(*) AS events, SUM(e.amount) AS total, COUNT(DISTINCT e.user_id) AS active_users
FROM user_events e JOIN users u ON e.user_id = u.id WHERE e.amount > 1 GROUP BY u.region;
CREATE MATERIALIZED VIEW enriched AS SELECT e.id, e.amount, u.region, w.region AS buddy_region
FROM user_events e LEFT JOIN users u ON u.id = e.user_id LEFT JOIN users w ON w.id = e.user_id + 1;
CREATE TABLE refunds (id bigint NOT NULL, user_id bigint, amount numeric(10,2), PRIMARY KEY (id));
CREATE MATERIALIZED VIEW ledger AS
SELECT 'event' AS kind, e.id, e.user_id, e.amount, u.region FROM user_events e LEFT JOIN users u ON u.id = e.user_id
WHERE e.amount > 30
UNION ALL SELECT 'refund', id, user_id, -amount, NULL FROM refunds;
CREATE MATERIALIZED VIEW pairs AS SELECT DISTINCT user_id, session_id FROM user_events WHERE amount > 5;
CREATE MATERIALIZED VIEW big_events AS SELECT e.id, e.user_id, e.amount * 2 AS doubled, u.region
FROM user_events e JOIN users u ON u.id = e.user_id WHERE e.amount > 20;
CREATE MATERIALIZED VIEW big_by_region AS SELECT region, count(*) AS n, max(doubled) AS top FROM big_events
GROUP BY region;
CREATE MATERIALIZED VIEW latest_event AS SELECT DISTINCT ON (user_id) user_id, id, amount,
  event_timestamp + INTERVAL '1 day' AS due, EXTRACT(minute FROM event_timestamp) AS minute
FROM user_events WHERE amount > 3 ORDER BY user_id, event_timestamp DESC, id;
CREATE MATERIALIZED VIEW top_by_user AS SELECT DISTINCT ON (e.user_id) e.user_id, u.region, e.amount
FROM user_events e JOIN users u ON u.id = e.user_id ORDER BY e.user_id, e.amount DESC, e.id;
CREATE MATERIALIZED VIEW per_hour AS SELECT date_trunc('hour', event_timestamp) AS hour, count(*) AS n,
  every(amount > 1) AS all_paid, string_agg(session_id, ',' ORDER BY event_timestamp DESC, id) AS newest_sessions
FROM user_events GROUP BY hour;
CREATE MATERIALIZED VIEW paid_by_user AS WITH paid AS (SELECT user_id, amount, session_id FROM user_events
  WHERE amount > 2) SELECT user_id, count(*) AS n, sum(amount) AS total, count(DISTINCT session_id) AS sessions,
  array_agg(DISTINCT session_id) FILTER (WHERE amount > 40) AS big_sessions
FROM paid GROUP BY user_id;
CREATE MATERIALIZED VIEW placed_events AS SELECT e.id, e.doubled, r.region FROM (SELECT id, user_id, amount * 2 AS
  doubled FROM user_events WHERE amount > 10) e JOIN (SELECT id, region FROM users) r ON r.id = e.user_id;
CREATE SINK paid_lake FROM paid_by_user INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'paid') KEY (user_id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK placed_lake FROM placed_events INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'placed') KEY (id) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK per_hour_lake FROM per_hour INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'per_hour') KEY (hour) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK latest_event_lake FROM latest_event INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'latest_event') KEY (user_id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK top_by_user_lake FROM top_by_user INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'top_by_user') KEY (user_id) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');
CREATE SINK summary_lake FROM user_activity_summary INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'summary') KEY (user_id, hour) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK spenders_lake FROM big_spenders INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'spenders') KEY (cohort) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');
CREATE SINK recent_lake FROM recent INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'recent') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK regions_lake FROM region_totals INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'regions') KEY (region) MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');
CREATE SINK pairs_lake FROM pairs INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'pairs') KEY (user_id, session_id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK big_by_region_lake FROM big_by_region INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'big_by_region') KEY (region) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK ledger_lake FROM ledger INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'ledger') KEY (kind, id) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK enriched_lake FROM enriched INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'views', TABLE 'enriched') KEY (id) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
"""

VIEWS = {"summary_lake": ("user_activity_summary", "user_id, hour, event_count, session_count, last_event_time",
                          "user_id, hour"),
         "spenders_lake": ("big_spenders", "cohort, total, least, mean_id, s1_events", "cohort"),
         "recent_lake": ("recent", "id, user_id, amount", "id"),
         "regions_lake": ("region_totals", "region, events, total, active_users", "region"),
         "enriched_lake": ("enriched", "id, amount, region, buddy_region", "id"),
         "pairs_lake": ("pairs", "user_id, session_id", "user_id, session_id"),
         "big_by_region_lake": ("big_by_region", "region, n, top", "region"),
         "ledger_lake": ("ledger", "kind, id, user_id, amount, region", "kind, id"),
         "latest_event_lake": ("latest_event", "user_id, id, amount, due, minute", "user_id"),
         "top_by_user_lake": ("top_by_user", "user_id, region, amount", "user_id"),
         "per_hour_lake": ("per_hour", "hour, n, all_paid, newest_sessions", "hour"),
         "paid_lake": ("paid_by_user", "user_id, n, total, sessions, big_sessions", "user_id"),
         "placed_lake": ("placed_events", "id, doubled, region", "id")}
INPUTS = {"regions_lake": ("user_events", "users"), "enriched_lake": ("user_events", "users"),
          "big_by_region_lake": ("user_events", "users"), "ledger_lake": ("user_events", "users", "refunds"),
          "top_by_user_lake": ("user_events", "users"), "placed_lake": ("user_events", "users")}


def _event(rng, key: int) -> str:
    stamp = f"2026-11-01 {rng.randint(10, 13):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    return (f"({key}, {rng.randint(1, 12)}, 's{rng.randint(1, 30)}', '{stamp}', "
            f"{rng.randint(0, 5000) / 100})")


def _random_changes(session, rng, count: int, next_id: int) -> int:
    live = [r[0] for r in rows(session, "SELECT id FROM user_events")]
    for _ in range(count):
        if rng.random() < 0.1:  # a refund comes or goes
            refunds = [r[0] for r in rows(session, "SELECT id FROM refunds")]
            if refunds and rng.random() < 0.3:
                session.execute(f"DELETE FROM refunds WHERE id = {rng.choice(refunds)}")
            else:  # sharing ids with events: the view's rows are told apart by their kind
                session.execute(f"INSERT INTO refunds VALUES ({max(refunds, default=0) + 1}, {rng.randint(1, 12)}, "
                                f"{rng.randint(1, 900) / 100})")
            continue
        if rng.random() < 0.15:  # a user joins, moves to another region, or leaves: the joined views' rows move
            user, region = rng.randint(1, 13), f"'r{rng.randint(1, 4)}'"
            if rng.random() < 0.2:
                session.execute(f"DELETE FROM users WHERE id = {user}")
            elif rows(session, f"SELECT 1 FROM users WHERE id = {user}"):
                session.execute(f"UPDATE users SET region = {region} WHERE id = {user}")
            else:
                session.execute(f"INSERT INTO users VALUES ({user}, {region})")
            continue
        op = rng.random()
        if op < 0.55 or not live:
            session.execute(f"INSERT INTO user_events VALUES {_event(rng, next_id)}")
            live.append(next_id)
            next_id += 1
        elif op < 0.8:  # may move the event to another user, hour or cohort: both groups change
            key = rng.choice(live)
            session.execute(f"UPDATE user_events SET user_id = {rng.randint(1, 12)}, amount = amount + 7, "
                            f"event_timestamp = '2026-11-01 {rng.randint(10, 13):02d}:30:00' WHERE id = {key}")
        else:
            session.execute(f"DELETE FROM user_events WHERE id = {live.pop(rng.randrange(len(live)))}")
    return next_id


def _caught_up(session, sink: str, view: str, *tables: str):
    """Whether the sink on `view` has committed every change of `tables`, the view's inputs."""
    view_id = session.catalog.get(view).id
    ids = [session.catalog.get(table).id for table in tables or ("user_events",)]
    return lambda: committed_offset(session, sink, view_id) >= max(session.tables.latest_offset(i) for i in ids)


def _run_until_caught_up(session, spark, sink: str, view: str, *tables: str) -> None:
    """Runs the sinks until `sink` on `view` has committed every change of `tables`, then stops them."""
    scheduler = Scheduler(session.data_dir, session.executor.secret_value, lambda: spark)
    scheduler.start()
    try:
        wait_for(_caught_up(session, sink, view, *tables), what=f"{sink} to commit")
    finally:
        scheduler.stop()


def _normal(value):
    """SQLite answers timestamps and numeric values as text, numeric sums and averages as floats, and arrays as JSON
    (array_agg's elements in no set order)."""
    import datetime as dt
    import json
    from decimal import Decimal, InvalidOperation

    if isinstance(value, str) and value.startswith("["):
        value = json.loads(value)
    if isinstance(value, list):
        return tuple(sorted(value, key=str))
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):  # DuckDB's date is SQLite's text
        return value.isoformat()

    if isinstance(value, str) and value[:4].isdigit() and len(value) >= 19:
        return dt.datetime.fromisoformat(value)
    if isinstance(value, str):
        try:
            value = Decimal(value)
        except InvalidOperation:
            return value
    if isinstance(value, (float, Decimal)):
        return round(float(value), 6)
    return value


def _view_and_table(session, sink: str, view: str, columns: str, order: str) -> tuple[list, list]:
    """The view's rows as SELECT computes them from scratch, and the sink's Iceberg table's as DuckDB reads them."""
    expected = [tuple(_normal(v) for v in r)
                for r in rows(session, f"SELECT {columns} FROM {view} ORDER BY {order}")]
    got = [tuple(_normal(v) for v in r)
           for r in duckdb_rows(iceberg_table(session, sink).metadata_location, columns, order)]
    return expected, got


def _check(session, sink: str) -> int:
    expected, got = _view_and_table(session, sink, *VIEWS[sink])
    assert got == expected, sink
    return len(expected)


def test_sinks_on_views_hold_the_views_query_over_the_final_input(session, scheduler):
    session.execute(SETUP)
    assert not any(session.catalog.get(sink).descriptor.view.recomputed for sink in VIEWS)  # each kept incrementally
    rng = random.Random(4)
    next_id = 1
    for _ in range(5):  # changes keep arriving while batches commit
        next_id = _random_changes(session, rng, 150, next_id)
        time.sleep(0.6)
    session.execute("DELETE FROM user_events WHERE user_id = 3")  # whole groups go
    for sink in VIEWS:
        inputs = INPUTS.get(sink, ("user_events",))
        wait_for(_caught_up(session, sink, VIEWS[sink][0], *inputs), what=f"{sink} to commit every change")
        assert sink_status(session, sink) == ("running", None)
    assert min(_check(session, sink) for sink in VIEWS) > 3


def test_a_key_two_relations_changes_touch_in_one_batch_is_written_once(session, spark):
    """A user's move touches every event of theirs (one offset for all of them), and an event's own change touches
    it again, later in the same batch: the key's row is written once, as its newest change left it."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE users (id bigint NOT NULL, region text, PRIMARY KEY (id));
        CREATE TABLE events (id bigint NOT NULL, user_id bigint, amount numeric(10,2), PRIMARY KEY (id));
        CREATE MATERIALIZED VIEW placed AS SELECT e.id, e.amount, u.region FROM events e JOIN users u ON u.id = e.user_id;
        CREATE SINK placed_lake FROM placed INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'placed')
          KEY (id) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
        INSERT INTO users VALUES (1, 'north'), (2, 'south');
        INSERT INTO events VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30);
    """)

    _run_until_caught_up(session, spark, "placed_lake", "placed", "events", "users")
    # while the sink is stopped, so that its next batch holds both changes
    session.execute("UPDATE users SET region = 'east' WHERE id = 1; UPDATE events SET amount = 21 WHERE id = 2")
    _run_until_caught_up(session, spark, "placed_lake", "placed", "events", "users")
    got = duckdb_rows(iceberg_table(session, "placed_lake").metadata_location, "id, amount, region", "id")
    assert [(i, float(a), r) for i, a, r in got] == [(1, 10.0, "east"), (2, 21.0, "east"), (3, 30.0, "south")]


def test_a_first_batch_over_a_view_without_rows_commits_and_later_rows_follow(session, spark):
    """A sink's first batch computes the whole view in one pass; a view whose table's rows are all filtered out has no
    row to carry the batch's offset, yet the batch commits it, and the rows that pass later reach the table."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE orders (id bigint NOT NULL, customer text, price numeric(10,2), PRIMARY KEY (id));
        INSERT INTO orders VALUES (1, 'ann', 5), (2, 'bob', 7);
        CREATE MATERIALIZED VIEW large AS SELECT customer, sum(price) AS total FROM orders WHERE price > 100
          GROUP BY customer;
        CREATE SINK large_lake FROM large INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'large')
          KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)

    def run():
        _run_until_caught_up(session, spark, "large_lake", "large", "orders")
        return duckdb_rows(iceberg_table(session, "large_lake").metadata_location, "customer, total", "customer")
    assert run() == []
    session.execute("INSERT INTO orders VALUES (3, 'ann', 150), (4, 'cy', 120.50); UPDATE orders SET price = 200 "
                    "WHERE id = 2")
    assert [(c, float(t)) for c, t in run()] == [("ann", 150.0), ("bob", 200.0), ("cy", 120.5)]


def test_a_first_batch_over_a_view_of_star_keeps_the_views_columns_when_its_table_gains_one(session, spark):
    """`SELECT *` is the table's columns when the view was made: a column the table gains before the sink's first
    batch is no column of the view, and takes no other column's place."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE orders (id bigint NOT NULL, customer text, price numeric(10,2), PRIMARY KEY (id));
        CREATE MATERIALIZED VIEW dear AS SELECT * FROM orders WHERE price > 10;
        CREATE SINK dear_lake FROM dear INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'dear')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        ALTER TABLE orders ADD COLUMN note text;
        INSERT INTO orders VALUES (1, 'ann', 50, 'gift'), (2, 'bob', 5, NULL), (3, 'cy', 12.25, 'rush');
    """)
    _run_until_caught_up(session, spark, "dear_lake", "dear", "orders")
    got = duckdb_rows(iceberg_table(session, "dear_lake").metadata_location, "id, customer, price", "id")
    assert [(i, c, float(p)) for i, c, p in got] == [(1, "ann", 50.0), (3, "cy", 12.25)]


def test_a_first_batch_waits_for_a_copy_still_loading_into_its_table(session):
    """A Postgres source's copy counts as its table's changes from the start, and goes into the table in blocks while
    sinks run: a sink's first batch on a view over the table waits until every copied row is in, or the view it
    computed from part of them would never see the rest."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from icesink.engine.sources.view import ViewReader
    from icesink.engine.tables import base_dir

    session.execute(REFUSED_VIEWS + "CREATE SINK s FROM per_customer INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE "
                                    "'v', TABLE 's') KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    orders, view = session.catalog.get("orders"), session.catalog.get("per_customer")
    columns = orders.descriptor.columns
    rows = [(i, f"c{i % 2}", "1.50") for i in range(1, 5)]
    path = base_dir(session.data_dir, orders.id) / "copy.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table({c.name: [r[i] for r in rows] for i, c in enumerate(columns)}), path)
    store = session.tables
    with store.transaction():
        store.add_base(orders.id, [(str(path), len(rows))])
    reader = ViewReader({"data_dir": str(session.data_dir), "table_id": orders.id, "start": "0",
                         "columns": json.dumps([c.as_dict() for c in columns]), "replicated": "true",
                         "view": json.dumps(session.catalog.get("s").descriptor.view.to_json()),
                         "view_columns": json.dumps([c.as_dict() for c in view.descriptor.columns])})
    store.load_base(orders.id, columns, rows[:2], 2)
    assert reader.latestOffset() == {"offset": 0}  # no batch yet
    store.load_base(orders.id, columns, rows[2:], 4)
    assert reader.latestOffset() == {"offset": store.base(orders.id).upto}


REFUSED_VIEWS = """
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE TABLE orders (id bigint NOT NULL, customer text, price numeric(10,2), PRIMARY KEY (id));
CREATE TABLE notes (body text);
CREATE MATERIALIZED VIEW per_customer AS SELECT customer, count(*) AS n FROM orders GROUP BY customer;
CREATE TABLE customers (id bigint NOT NULL, name text, PRIMARY KEY (id));
CREATE MATERIALIZED VIEW renamed AS SELECT coalesce(customer, 'none') AS customer, count(*) AS n FROM orders
  GROUP BY customer;
CREATE MATERIALIZED VIEW newest AS SELECT DISTINCT ON (c.id) o.id, c.name FROM customers c
  JOIN orders o ON o.customer = c.name ORDER BY c.id, o.id DESC;
"""
# views no change can be traced to a key of: each batch recomputes them whole
RECOMPUTED_VIEWS = {
    "nested": ("SELECT id, price FROM orders WHERE customer IN (SELECT body FROM notes)", "id"),
    "over_view": ("SELECT customer, n FROM per_customer WHERE n > 1", "customer"),
    "total": ("SELECT count(*) AS n, sum(price) AS revenue FROM orders", "n"),
    "first_ten": ("SELECT id, price FROM orders ORDER BY price DESC, id LIMIT 10", "id"),
    "across": ("SELECT o.customer, p.price, count(*) AS n FROM orders o JOIN orders p ON p.customer = o.customer "
               "WHERE p.price > 50 GROUP BY o.customer, p.price", "customer, price"),
    "latest": ("SELECT DISTINCT ON (customer) customer, id, price FROM orders ORDER BY customer, price DESC, id "
               "LIMIT 5", "customer"),
    # a grouped common table expression cannot be merged into the query that reads it
    "with": ("WITH spend AS (SELECT customer, sum(price) AS total FROM orders GROUP BY customer) SELECT customer, "
             "total FROM spend WHERE total > 100", "customer"),
    # a computed column of a subquery on a LEFT JOIN's right side: merged, unmatched rows would get 1, not NULL
    "left_flag": ("SELECT o.id, x.flag FROM orders o LEFT JOIN (SELECT id, 1 AS flag FROM orders WHERE price > 50) x "
                  "ON x.id = o.id + 1", "id"),
    "top_two": ("SELECT customer, id, price FROM (SELECT customer, id, price, row_number() OVER (PARTITION BY "
                "customer ORDER BY price DESC, id) AS rn FROM orders) AS ranked WHERE rn <= 2", "customer, id"),
    "ranked": ("SELECT id, rank() OVER (PARTITION BY customer ORDER BY price DESC) AS place FROM orders", "id"),
    "unkeyed": ("SELECT body, count(*) AS n FROM notes GROUP BY body HAVING count(*) > 1 "
                "EXCEPT SELECT customer, 2 FROM orders", "body"),
}


@pytest.mark.parametrize("view, key, message", [
    ("per_customer", "customer, n", "a sink on materialized view 'per_customer' is keyed by the view's key: "
     "KEY (customer), not KEY (customer, n)"),
    # GROUP BY names the input column, not the output it shares a name with: NULL and 'none' are one output
    ("renamed", "customer ENFORCED", "KEY (customer) is not known to be unique in 'renamed'"),
    # one row per customer, and o.id is an order's id: no key of the view's rows
    ("newest", "id ENFORCED", "KEY (id) is not known to be unique in 'newest'"),
])
def test_a_view_a_sink_cannot_keep_up_to_date_is_refused_at_create_sink_naming_why(session, view, key, message):
    session.execute(REFUSED_VIEWS)
    enforced = key.endswith(" ENFORCED")
    error = error_of(session, f"CREATE SINK s FROM {view} INTO ICEBERG CATALOG CONNECTION lake "
                              f"(NAMESPACE 'v', TABLE 't') KEY ({key.removesuffix(' ENFORCED')})"
                              f"{'' if enforced else ' NOT ENFORCED'} MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    assert error.message == message
    assert rows(session, "SELECT count(*) FROM mz_sinks") == [(0,)]


def test_a_view_grouped_by_integer_arithmetic_is_kept_by_its_groups(session):
    """An integer output of arithmetic is kept to its type's range, but a group's key stays as grouped, so that its
    sink finds the view's key and recomputes the groups a batch touches (it had been recomputed whole)."""
    session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local'); "
                    "CREATE TABLE events (id bigint NOT NULL, account int, PRIMARY KEY (id)); "
                    "CREATE MATERIALIZED VIEW per_account AS SELECT account + 1 AS k, count(*) AS n, account * 2 AS "
                    "twice FROM events GROUP BY account + 1, account * 2")
    created = session.execute("CREATE SINK per_account_lake FROM per_account INTO ICEBERG CATALOG CONNECTION lake "
                              "(NAMESPACE 'v', TABLE 'per_account') KEY (k, twice) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    assert created[-1].notices == [] and not session.catalog.get("per_account_lake").descriptor.view.recomputed


def test_views_no_change_can_be_traced_to_a_key_of_are_recomputed_whole(session, scheduler):
    session.execute(REFUSED_VIEWS)
    for view, (query, key) in RECOMPUTED_VIEWS.items():
        created = session.execute(f"CREATE MATERIALIZED VIEW {view}_v AS {query}; CREATE SINK {view}_lake FROM "
                                  f"{view}_v INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE '{view}') "
                                  f"KEY ({key}) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s')")[-1]
        assert created.notices[0].startswith(f"materialized view '{view}_v' is recomputed whole in each batch in "
                                             "which a table it reads changed, as its query "), created.notices
    rng = random.Random(5)
    customers = [f"c{i}" for i in range(8)]
    for round_ in range(6):
        for _ in range(60):
            op, key = rng.random(), rng.randint(1, 80)
            if op < 0.5:
                session.execute(f"DELETE FROM orders WHERE id = {key}; INSERT INTO orders VALUES ({key}, "
                                f"'{rng.choice(customers)}', {rng.randint(1, 10000) / 100})")
            elif op < 0.7:
                session.execute(f"DELETE FROM orders WHERE id = {key}")
            elif op < 0.9:
                session.execute(f"INSERT INTO notes VALUES ('{rng.choice(customers)}')")
            else:
                session.execute(f"DELETE FROM notes WHERE body = '{rng.choice(customers)}'")
        time.sleep(0.7 if round_ < 5 else 0)
    ids = [session.catalog.get(t).id for t in ("orders", "notes")]
    for view, (query, key) in RECOMPUTED_VIEWS.items():
        view_id = session.catalog.get(f"{view}_v").id
        wait_for(lambda: committed_offset(session, f"{view}_lake", view_id) >= max(
            session.tables.latest_offset(i) for i in ids), what=f"{view}_lake to commit every change")
        assert _same_rows(session, view, key), view
        assert sink_status(session, f"{view}_lake") == ("running", None)


def _same_rows(session, view: str, key: str) -> bool:
    columns = ", ".join(session.execute(f"SELECT * FROM {view}_v LIMIT 0")[-1].columns)
    expected = sorted(tuple(_normal(v) for v in r) for r in rows(session, f"SELECT {columns} FROM {view}_v"))
    got = sorted(tuple(_normal(v) for v in r)
                 for r in duckdb_rows(iceberg_table(session, f"{view}_lake").metadata_location, columns, key))
    return got == expected


def test_a_sink_on_a_view_writes_upserts(session):
    session.execute(REFUSED_VIEWS)
    error = error_of(session, "CREATE SINK s FROM per_customer INTO ICEBERG CATALOG CONNECTION lake "
                              "(NAMESPACE 'v', TABLE 't') MODE APPEND WITH (COMMIT INTERVAL '1s')")
    assert error.message == ("a sink on materialized view 'per_customer' writes MODE UPSERT, keyed by the view's "
                             "key; MODE APPEND (which writes each change's retraction) is not supported yet on a "
                             "view")


SEED_004 = """
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE TABLE user_events (id bigint NOT NULL, user_id bigint, session_id text, event_timestamp timestamp,
  PRIMARY KEY (id));
CREATE TABLE orders (id bigint NOT NULL, product_id bigint, order_timestamp timestamp, quantity integer,
  revenue numeric(12,2), PRIMARY KEY (id));
CREATE MATERIALIZED VIEW user_activity_summary AS
SELECT user_id, DATE_TRUNC('hour', event_timestamp) AS hour, COUNT(*) AS event_count,
       COUNT(DISTINCT session_id) AS session_count, MAX(event_timestamp) AS last_event_time
FROM user_events GROUP BY user_id, DATE_TRUNC('hour', event_timestamp);
CREATE MATERIALIZED VIEW daily_sales_summary AS
SELECT product_id, DATE_TRUNC('day', order_timestamp) AS sale_date, COUNT(*) AS order_count,
       SUM(quantity) AS total_quantity, SUM(revenue) AS total_revenue
FROM orders GROUP BY product_id, DATE_TRUNC('day', order_timestamp);
CREATE TABLE products (id bigint NOT NULL, category text, PRIMARY KEY (id));
CREATE MATERIALIZED VIEW category_sales AS
SELECT p.category, COUNT(*) AS order_count, SUM(o.revenue) AS total_revenue, MAX(o.order_timestamp) AS last_order
FROM orders o JOIN products p ON p.id = o.product_id GROUP BY p.category;
CREATE MATERIALIZED VIEW top_products AS SELECT product_id, SUM(revenue) AS revenue FROM orders GROUP BY product_id
ORDER BY 2 DESC, 1 LIMIT 3;
CREATE SINK top_products_iceberg FROM top_products INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'sales', TABLE 'top_products') KEY (product_id) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK category_sales_iceberg FROM category_sales INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'sales', TABLE 'categories') KEY (category) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK user_activity_iceberg FROM user_activity_summary INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'analytics', TABLE 'user_activity') KEY (user_id, hour) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE SINK daily_sales_iceberg FROM daily_sales_summary INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'sales', TABLE 'daily_summary') KEY (product_id, sale_date) MODE UPSERT
  WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');
CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL '50ms', UP TO 200) FOR ALL TABLES;
CREATE MATERIALIZED VIEW category_bids AS
SELECT p.category, COUNT(*) AS bids, MAX(b.amount) AS top FROM bids b JOIN products p ON p.id = b.buyer
GROUP BY p.category;
CREATE SINK category_bids_iceberg FROM category_bids INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'auction', TABLE 'category_bids') KEY (category) MODE UPSERT WITH (COMMIT INTERVAL '1s');
"""


class Writer(threading.Thread):
    """Random INSERT/UPDATE/DELETE on both inputs until stopped, from its own session."""

    def __init__(self, data_dir):
        super().__init__(daemon=True)
        self.data_dir, self.stopped, self.rng = data_dir, threading.Event(), random.Random(11)

    def run(self):
        rng = self.rng
        with icesink.connect(self.data_dir) as session:
            live = {"user_events": [], "orders": []}
            next_id = 1
            while not self.stopped.is_set():
                if rng.random() < 0.1:  # a product comes, changes category or goes: its orders move
                    product, category = rng.randint(1, 9), f"'c{rng.randint(1, 4)}'"
                    if rng.random() < 0.2:
                        session.execute(f"DELETE FROM products WHERE id = {product}")
                    elif session.execute(f"SELECT 1 FROM products WHERE id = {product}")[0].rows:
                        session.execute(f"UPDATE products SET category = {category} WHERE id = {product}")
                    else:
                        session.execute(f"INSERT INTO products VALUES ({product}, {category})")
                    continue
                table = rng.choice(list(live))
                keys = live[table]
                day = f"2026-11-{rng.randint(1, 3):02d} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"
                if rng.random() < 0.55 or not keys:
                    values = (f"({next_id}, {rng.randint(1, 9)}, 's{rng.randint(1, 20)}', '{day}')"
                              if table == "user_events" else
                              f"({next_id}, {rng.randint(1, 9)}, '{day}', {rng.randint(1, 5)}, {rng.randint(1, 99999) / 100})")
                    session.execute(f"INSERT INTO {table} VALUES {values}")
                    keys.append(next_id)
                    next_id += 1
                elif rng.random() < 0.6:
                    moved = (f"user_id = {rng.randint(1, 9)}, event_timestamp = '{day}'" if table == "user_events"
                             else f"quantity = quantity + 1, order_timestamp = '{day}'")
                    session.execute(f"UPDATE {table} SET {moved} WHERE id = {rng.choice(keys)}")
                else:
                    session.execute(f"DELETE FROM {table} WHERE id = {keys.pop(rng.randrange(len(keys)))}")
                time.sleep(0.005)


SEED_004_SINKS = {
    "user_activity_iceberg": ("user_activity_summary", "user_events",
                              "user_id, hour, event_count, session_count, last_event_time", "user_id, hour"),
    "daily_sales_iceberg": ("daily_sales_summary", "orders",
                            "product_id, sale_date, order_count, total_quantity, total_revenue", "product_id, sale_date"),
    "category_sales_iceberg": ("category_sales", "orders, products",
                               "category, order_count, total_revenue, last_order", "category"),
    "top_products_iceberg": ("top_products", "orders", "product_id, revenue", "product_id"),
    # a load generator's bids (its ticks over by the final run) joined with a table the writer changes
    "category_bids_iceberg": ("category_bids", "bids, products", "category, bids, top", "category"),
}


@pytest.mark.timeout(900)
def test_seed_004_views_reach_iceberg_exactly_while_serve_is_killed(session):
    session.execute(SEED_004)
    writer = Writer(session.data_dir)
    writer.start()
    try:
        seams = kill_serve_repeatedly(session.data_dir, ("files-written", "committed", None), random.Random(8), (5, 12))
    finally:
        writer.stopped.set()
        writer.join()
    assert seams == 2  # killed at both seams of the commit protocol
    # the generator is past UP TO (200 ticks of 3 bids), and its bids all kept (a query that joins them catches up)
    assert rows(session, "SELECT (SELECT count(*) FROM bids), (SELECT count(*) FROM products)")[0][0] == 600
    final, stalled = serve(session.data_dir), None
    try:
        for sink, (view, tables, _, _) in SEED_004_SINKS.items():
            try:
                wait_for(_caught_up(session, sink, view, *tables.split(", ")), timeout=180)
            except AssertionError:
                stalled = sink
                break
    finally:
        final.send_signal(signal.SIGTERM)
        ended = final.wait(timeout=120)
    if stalled:  # why, in the sink's and the server's words
        statuses = rows(session, "SELECT h.status, h.error FROM mz_sinks s JOIN mz_internal.mz_sink_status_history h "
                                 f"ON s.id = h.sink_id WHERE s.name = '{stalled}'")[-8:]
        pytest.fail(f"{stalled} did not catch up; statuses {statuses}; serve said: {final.stderr.read()[-4000:]}")
    assert ended == 0
    for sink, (view, _, columns, order) in SEED_004_SINKS.items():
        expected, got = _view_and_table(session, sink, view, columns, order)
        assert len(expected) > {"category_sales": 1, "top_products": 2, "category_bids": 1}.get(view, 20)
        assert got == expected, sink
    assert ("failed",) not in rows(session, "SELECT DISTINCT status FROM mz_internal.mz_sink_status_history")


def test_a_views_index_lives_as_long_as_a_sink_on_a_view_with_that_key(session):
    """A sink on a view of a table it keeps no copy of (here one without a primary key) indexes the table by the
    view's key when it starts; the table's writes keep the index up to date, so the last sink that needs it drops
    it."""
    from icesink.engine.sources import input_for

    session.execute(REFUSED_VIEWS + "CREATE MATERIALIZED VIEW per_body AS SELECT body, count(*) AS n FROM notes "
                                    "GROUP BY body; CREATE MATERIALIZED VIEW per_body_too AS SELECT body, "
                                    "max(length(body)) AS longest FROM notes GROUP BY body;")
    for sink, view in (("s1", "per_body"), ("s2", "per_body_too")):
        session.execute(f"CREATE SINK {sink} FROM {view} INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', "
                        f"TABLE '{sink}') KEY (body) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
        sink_object = session.catalog.get(sink)
        made = input_for(session.catalog, session.catalog.get(view), sink_object.descriptor.view, sink_object.id)
        made.close()
        assert made.arranged is None

    def indexes():
        return [name for (name,) in session.tables.db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'view_key_%'")]
    assert len(indexes()) == 1  # one key, one index
    session.execute("DROP SINK s1")
    assert len(indexes()) == 1
    session.execute("DROP SINK s2")
    assert indexes() == []


def _batch_plan(session, sink: str, view_name: str):
    """The sink's view input, and SQLite's plan of a batch's recompute of its touched keys over the sink's copy of
    the view's table (made as a batch's partition makes it), indexed by the view's key."""
    from icesink.engine.sources import arrangement, input_for
    from icesink.engine.sources.view import CHANGES, TOUCHED, _indexer

    sink_object = session.catalog.get(sink)
    view = sink_object.descriptor.view
    made = input_for(session.catalog, session.catalog.get(view_name), view, sink_object.id)
    made.close()
    db = arrangement.open_share(session.data_dir, made.arranged, 0, 1)
    try:
        arrangement.make(db, made.arranged, 0, 1, 0, _indexer(view, made.arranged))
        names = ", ".join(f'"{c}"' for c in (*view.changed_columns, "_icesink_offset", "_icesink_ts"))
        db.execute(f"CREATE TEMP TABLE {CHANGES} ({names})")
        db.execute(f"CREATE TEMP TABLE {TOUCHED} AS {view.touched_sql}")
        return view, [row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {view.query_sql}")]
    finally:
        db.close()


def test_a_batch_reads_a_touched_group_through_the_index_by_its_whole_key(session):
    """A batch recomputes the groups its changes touch from their rows alone, found through the view's index by every
    expression of the key (the time bucket first, where a table's writes bunch) and read from the index alone: not by
    a scan of the table, which would make a batch's cost follow the table's size, nor row by row from wherever the
    table holds them."""
    session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');"
                    "CREATE TABLE events (id bigint NOT NULL, customer text, at timestamp, PRIMARY KEY (id));"
                    "CREATE MATERIALIZED VIEW hourly AS SELECT customer, date_trunc('hour', at) AS hour, count(*) AS n "
                    "FROM events GROUP BY customer, date_trunc('hour', at);"
                    "CREATE SINK s FROM hourly INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'hourly') "
                    "KEY (customer, hour) MODE UPSERT WITH (COMMIT INTERVAL '1s');")
    view, plan = _batch_plan(session, "s", "hourly")
    # the index holds the table's other columns too: a group's rows are read from it alone, not the table
    assert any(step.startswith(f"SEARCH events USING COVERING INDEX {view.index_name} (<expr>=? AND customer=?)")
               for step in plan), plan
    assert not any(step.startswith("SCAN events") for step in plan), plan


def test_a_distinct_on_batch_finds_each_touched_keys_first_row_by_one_seek_with_nulls_where_postgres_puts_them(
        session, spark):
    """DISTINCT ON's "latest row per key" over one table: a batch looks each touched key's first row up through an
    index on the key and the ORDER BY (one seek, not a read and a sort of every row of the key), among the rows the
    WHERE keeps, with NULLs first in a descending order and last in an ascending one, as Postgres orders them."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE readings (id bigint NOT NULL, sensor int, at timestamp, v int, PRIMARY KEY (id));
        INSERT INTO readings VALUES (1, 1, '2026-01-01 10:00:00', 5), (2, 1, '2026-01-01 11:00:00', 6),
          (3, 2, '2026-01-01 09:00:00', 7), (4, 2, '2026-01-01 12:00:00', -1), (5, 3, NULL, 8);
        CREATE MATERIALIZED VIEW newest AS SELECT DISTINCT ON (sensor) sensor, id, at, v FROM readings WHERE v > 0
          ORDER BY sensor, at DESC, id;
        CREATE MATERIALIZED VIEW oldest AS SELECT DISTINCT ON (sensor) sensor, id AS first_id FROM readings
          ORDER BY 1, at, v DESC;
        CREATE SINK newest_lake FROM newest INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'newest')
          KEY (sensor) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK oldest_lake FROM oldest INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'oldest')
          KEY (sensor) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE MATERIALIZED VIEW sensors AS SELECT DISTINCT ON (sensor) sensor FROM readings ORDER BY sensor;
        CREATE SINK sensors_lake FROM sensors INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'sensors')
          KEY (sensor) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE MATERIALIZED VIEW lowest AS SELECT DISTINCT ON (sensor) sensor, -v AS v FROM readings
          ORDER BY sensor, v;
        CREATE SINK lowest_lake FROM lowest INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'lowest')
          KEY (sensor) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    view, plan = _batch_plan(session, "newest_lake", "newest")
    assert any(step.startswith("SEARCH _icesink_first USING ") and f"INDEX {view.index_name} (sensor=?)" in step
               for step in plan), plan
    assert not any("TEMP B-TREE" in step or step.startswith("SCAN readings") for step in plan), plan

    sinks = (("newest_lake", "newest"), ("oldest_lake", "oldest"), ("sensors_lake", "sensors"),
             ("lowest_lake", "lowest"))
    for sink, view_name in sinks:  # each first batch: the whole view
        _run_until_caught_up(session, spark, sink, view_name, "readings")
    session.execute("""
        INSERT INTO readings VALUES (6, 1, NULL, 9), (7, 2, '2026-01-01 13:00:00', 0), (8, 3, '2026-01-01 08:00:00', 1),
          (9, 4, NULL, 2), (10, 4, NULL, 3), (11, 5, '2026-01-01 10:00:00', 4);
        UPDATE readings SET v = 10 WHERE id = 4;
        DELETE FROM readings WHERE id = 11;
    """)
    for sink, view_name in sinks:
        _run_until_caught_up(session, spark, sink, view_name, "readings")
    newest = duckdb_rows(iceberg_table(session, "newest_lake").metadata_location, "sensor, id", "sensor")
    # a NULL comes first in a descending order; ties go to the lower id; v <= 0 is not kept; sensor 5 has gone
    assert newest == [(1, 6), (2, 4), (3, 5), (4, 9)] == [r[:2] for r in rows(session, "SELECT * FROM newest")]
    oldest = duckdb_rows(iceberg_table(session, "oldest_lake").metadata_location, "sensor, first_id", "sensor")
    assert oldest == [(1, 1), (2, 3), (3, 8), (4, 10)] == rows(session, "SELECT * FROM oldest")
    # no order past the key: any row of it; ORDER BY names the output v (-v), not the column v
    assert duckdb_rows(iceberg_table(session, "sensors_lake").metadata_location, "sensor", "sensor") == [
        (1,), (2,), (3,), (4,)]
    assert duckdb_rows(iceberg_table(session, "lowest_lake").metadata_location, "sensor, v", "sensor") == [
        (1, -9), (2, -10), (3, -8), (4, -3)] == rows(session, "SELECT * FROM lowest")


def test_a_first_batch_computes_ranges_of_the_views_key_on_every_core_and_misses_no_key(session, spark):
    """A sink's first batch cuts the whole view into ranges of its index's first expression, one per core of Spark's:
    between a time bucket's distinct values, or, past SPLIT_SEEKS of them, into spans of integers, or of text at even
    offsets of the index. Every key of the view reaches the table once, whichever range it fell in, a range's first
    and last keys included."""
    from icesink.engine.sources import input_for
    from icesink.engine.sources.view import SPLIT_SEEKS, whole_partitions

    ids = SPLIT_SEEKS + 900
    session.execute(f"""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE events (id bigint NOT NULL, customer text, at timestamp, price numeric(10,2), tag text,
          PRIMARY KEY (id));
        INSERT INTO events SELECT n, 'c' || (n % 37), datetime(1793491800 + (n % 29) * 3600, 'unixepoch'), n % 100,
          't' || (n % {ids - 5}) FROM generate_series(1, {ids}) AS n;
        CREATE MATERIALIZED VIEW hourly AS SELECT customer, date_trunc('hour', at) AS hour, count(*) AS n,
          sum(price) AS total FROM events GROUP BY customer, date_trunc('hour', at);
        CREATE MATERIALIZED VIEW dear AS SELECT id, customer, price FROM events WHERE price > 10;
        CREATE MATERIALIZED VIEW tagged AS SELECT tag, count(*) AS n, max(price) AS top FROM events GROUP BY tag;
        CREATE SINK hourly_lake FROM hourly INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'hourly')
          KEY (customer, hour) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK dear_lake FROM dear INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'dear')
          KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK tagged_lake FROM tagged INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'tagged')
          KEY (tag) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    upto = session.tables.latest_offset(session.catalog.get("events").id)
    for sink, view in (("hourly_lake", "hourly"), ("dear_lake", "dear"), ("tagged_lake", "tagged")):
        planned = session.catalog.get(sink).descriptor.view
        input_for(session.catalog, session.catalog.get(view), planned).close()  # as the sink starts: the index made
        bounds = [p.bounds for p in whole_partitions(session.data_dir, planned, upto, 2)]
        assert len(bounds) == 2 and bounds[0][0] < bounds[-1][1], (sink, bounds)
    _run_until_caught_up(session, spark, "hourly_lake", "hourly", "events")
    _run_until_caught_up(session, spark, "dear_lake", "dear", "events")
    _run_until_caught_up(session, spark, "tagged_lake", "tagged", "events")
    for sink, view, columns, key in (("hourly_lake", "hourly", "customer, hour, n, total", "customer, hour"),
                                     ("dear_lake", "dear", "id, customer, price", "id"),
                                     ("tagged_lake", "tagged", "tag, n, top", "tag")):
        expected, got = _view_and_table(session, sink, view, columns, key)
        assert got == expected and len(got) > 900, sink


def test_a_later_batchs_partitions_share_the_views_keys_by_an_integer_or_text_key_column(session, spark):
    """A later batch's partitions, one per core of Spark's, each read the whole batch's changes and take those of
    the keys whose integer key column falls to them (negative values too), or text key column: every key the batch
    touches is recomputed and written once, where partitions cut by offsets each recomputed the keys both their
    halves touch."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE events (id bigint NOT NULL, account bigint, at timestamp, price numeric(10,2), tag text,
          PRIMARY KEY (id));
        INSERT INTO events SELECT n, n % 5, datetime(1793491200 + (n % 3) * 86400, 'unixepoch'), n % 100,
          't' || (n % 4) FROM generate_series(1, 1000) AS n;
        CREATE MATERIALIZED VIEW daily AS SELECT account, date_trunc('day', at) AS day, count(*) AS n,
          sum(price) AS total FROM events GROUP BY account, date_trunc('day', at);
        CREATE MATERIALIZED VIEW by_tag AS SELECT tag, count(*) AS n, max(price) AS top FROM events GROUP BY tag;
        CREATE SINK daily_lake FROM daily INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'daily')
          KEY (account, day) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK by_tag_lake FROM by_tag INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'by_tag')
          KEY (tag) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    assert session.catalog.get("daily_lake").descriptor.view.share_column == "account"
    assert session.catalog.get("by_tag_lake").descriptor.view.share_column == "tag"
    _run_until_caught_up(session, spark, "daily_lake", "daily", "events")
    _run_until_caught_up(session, spark, "by_tag_lake", "by_tag", "events")

    def written(sink: str) -> int:
        return rows(session, "SELECT messages_committed FROM mz_internal.mz_sink_statistics st JOIN mz_sinks s "
                             f"ON s.id = st.id WHERE s.name = '{sink}'")[0][0]
    before = {sink: written(sink) for sink in ("daily_lake", "by_tag_lake")}
    # 30,000 log entries, two partitions' worth, every one of them touching one of 16 accounts' 3 days, and of 9 tags
    session.execute("INSERT INTO events SELECT n, n % 16 - 8, datetime(1793491200 + (n % 3) * 86400, 'unixepoch'), "
                    "n % 7, 't' || (n % 9) FROM generate_series(1001, 31000) AS n")
    _run_until_caught_up(session, spark, "daily_lake", "daily", "events")
    _run_until_caught_up(session, spark, "by_tag_lake", "by_tag", "events")
    assert written("daily_lake") - before["daily_lake"] == 16 * 3
    assert written("by_tag_lake") - before["by_tag_lake"] == 9
    expected, got = _view_and_table(session, "daily_lake", "daily", "account, day, n, total", "account, day")
    assert got == expected and len(got) == 16 * 3  # accounts 0 to 4 among them
    expected, got = _view_and_table(session, "by_tag_lake", "by_tag", "tag, n, top", "tag")
    assert got == expected and len(got) == 9


def test_a_null_in_a_sinks_key_fails_the_sink_saying_which_column_and_writes_nothing_of_the_batch(session,
                                                                                                  scheduler):
    """An Iceberg table's key columns are required: a view's group of null (or a table's row with a null key
    column) cannot be written. The sink fails, naming the column and what to do, whichever mode it writes in, and
    the table keeps what earlier batches wrote."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE events (id bigint NOT NULL, account bigint, PRIMARY KEY (id));
        INSERT INTO events VALUES (1, 1), (2, 2), (3, 2);
        CREATE MATERIALIZED VIEW per_account AS SELECT account, count(*) AS n FROM events GROUP BY account;
        CREATE SINK per_account_lake FROM per_account INTO ICEBERG CATALOG CONNECTION lake
          (NAMESPACE 'v', TABLE 'per_account') KEY (account) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK events_lake FROM events INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'events')
          KEY (account) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s', WRITE MODE 'merge-on-read');
    """)
    wait_for(_caught_up(session, "per_account_lake", "per_account", "events"), what="the view's first batch")
    wait_for(_caught_up(session, "events_lake", "events", "events"), what="the table's first batch")
    session.execute("INSERT INTO events VALUES (4, NULL), (5, 1)")
    for sink in ("per_account_lake", "events_lake"):
        status, error = wait_for(lambda: (found := sink_status(session, sink))[0] == "failed" and found,
                                 what=f"{sink} to fail")
        assert error == ("KEY column account is null in 1 of this batch's changes, and the Iceberg table's column "
                         "account is required (a table's key columns are): nothing of this batch was written. Keep "
                         "nulls out of the sink's input (a view with WHERE account IS NOT NULL, or COALESCE(account, "
                         "…) in it) and recreate the sink")
    got = duckdb_rows(iceberg_table(session, "per_account_lake").metadata_location, "account, n", "account")
    assert got == [(1, 1), (2, 2)]
    got = duckdb_rows(iceberg_table(session, "events_lake").metadata_location, "account", "account")
    assert got == [(1,), (2,)]


def test_a_view_whose_query_fails_over_its_rows_stalls_its_sink_in_postgres_words_until_the_rows_change(
        session, scheduler):
    """An integer output past its type's range (SQLite's integers go to 64 bits, and Arrow refused the value with
    its own words) or a division by zero: SELECT refuses the view as Postgres would, and its sink stalls saying
    why, writes nothing of that batch, and goes on once the rows that caused it change."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE events (id bigint NOT NULL, account int, n int, PRIMARY KEY (id));
        INSERT INTO events VALUES (1, 1, 5), (2, 2, 7);
        CREATE MATERIALIZED VIEW doubled AS SELECT id, n * 2 AS twice, 100 / account AS share FROM events;
        CREATE SINK doubled_lake FROM doubled INTO ICEBERG CATALOG CONNECTION lake
          (NAMESPACE 'v', TABLE 'doubled') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    wait_for(_caught_up(session, "doubled_lake", "doubled", "events"), what="the view's first batch")
    for change, message in (("INSERT INTO events VALUES (3, 1, 2000000000)", "integer out of range"),
                            ("UPDATE events SET n = 1, account = 0 WHERE id = 3", "division by zero")):
        session.execute(change)
        assert error_of(session, "SELECT * FROM doubled").message == message
        status, error = wait_for(lambda: (found := sink_status(session, "doubled_lake"))[0] == "stalled" and
                                 found[1] == f"ValueError: computing the view's changes: {message}" and found,
                                 what=f"the sink to stall: {message}")
    got = duckdb_rows(iceberg_table(session, "doubled_lake").metadata_location, "id, twice, share", "id")
    assert got == [(1, 10, 100), (2, 14, 50)]
    session.execute("UPDATE events SET account = 4 WHERE id = 3")
    wait_for(_caught_up(session, "doubled_lake", "doubled", "events"), what="the sink to go on")
    got = duckdb_rows(iceberg_table(session, "doubled_lake").metadata_location, "id, twice, share", "id")
    assert got == [(1, 10, 100), (2, 14, 50), (3, 2, 25)]


def test_views_with_outputs_of_no_alias_reach_iceberg_by_the_names_postgres_gives_them(session, spark):
    """`count(*)`, `max(ts)`, `upper(s)`, `ts::date` are the columns count, max, upper and ts, in the view, its
    Iceberg table and SELECT alike; each view is kept incrementally, through inserts, updates and deletes."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE ev (id bigint NOT NULL, u bigint, s text, ts timestamp, PRIMARY KEY (id));
        INSERT INTO ev SELECT n, n % 5, 's' || (n % 7), datetime(1793491200 + n * 61, 'unixepoch')
          FROM generate_series(1, 200) AS n;
        CREATE MATERIALIZED VIEW per_u AS SELECT u, count(*), max(ts), string_agg(s, ',' ORDER BY ts DESC, id)
          FROM ev GROUP BY u;
        CREATE MATERIALIZED VIEW newest AS SELECT DISTINCT ON (u) u, upper(s), ts::date FROM ev ORDER BY u, ts DESC, id;
        CREATE SINK per_u_lake FROM per_u INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'named', TABLE 'per_u')
          KEY (u) MODE UPSERT WITH (COMMIT INTERVAL '1s');
        CREATE SINK newest_lake FROM newest INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'named', TABLE 'newest')
          KEY (u) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    assert not any(session.catalog.get(s).descriptor.view.recomputed for s in ("per_u_lake", "newest_lake"))
    for view, columns in (("per_u", ["u", "count", "max", "string_agg"]), ("newest", ["u", "upper", "ts"])):
        assert session.execute(f"SELECT * FROM {view}")[-1].columns == columns
    _run_until_caught_up(session, spark, "per_u_lake", "per_u", "ev")
    session.execute("UPDATE ev SET u = 9, s = 'moved' WHERE id % 11 = 0; DELETE FROM ev WHERE u = 3; "
                    "INSERT INTO ev VALUES (1000, 4, 'late', '2026-11-03 00:00:00')")
    _run_until_caught_up(session, spark, "per_u_lake", "per_u", "ev")
    _run_until_caught_up(session, spark, "newest_lake", "newest", "ev")
    for sink, view, columns in (("per_u_lake", "per_u", '"u", "count", "max", "string_agg"'),
                                ("newest_lake", "newest", '"u", "upper", "ts"')):
        expected, got = _view_and_table(session, sink, view, columns, "1")
        assert got == expected and len(got) == 5, sink


def test_a_views_integer_division_reaches_iceberg_truncated_as_postgres_divides(session, spark):
    """`/` of integers in a view truncates toward zero, in its sink's Iceberg table too: the view's stored query
    had divided as doubles (2.5 in a column of type bigint)."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE ev (id bigint NOT NULL, u bigint, PRIMARY KEY (id));
        INSERT INTO ev SELECT n, n % 5 FROM generate_series(1, 50) AS n;
        CREATE MATERIALIZED VIEW halves AS SELECT u, count(*) / 4 AS quarter, -max(id) / 7 AS down FROM ev GROUP BY u;
        CREATE SINK halves_lake FROM halves INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'div', TABLE 'halves')
          KEY (u) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    _run_until_caught_up(session, spark, "halves_lake", "halves", "ev")
    expected = [(u, 10 // 4, -((45 + (u or 5)) // 7)) for u in range(5)]  # each u's greatest id: 45 + u
    assert rows(session, "SELECT * FROM halves ORDER BY u") == expected
    _, got = _view_and_table(session, "halves_lake", "halves", '"u", "quarter", "down"', "1")
    assert got == expected


def test_a_sink_keeps_its_own_indexed_copy_of_a_views_table_which_converges_when_lost_set_back_or_ahead(session,
                                                                                                      spark):
    """A sink on a view of one engine table keeps its own copy of the table's rows, a file per share of the view's
    keys, indexed by the key: the table's writes keep no index for the view. A copy that went missing, that lost its
    last transactions (as a power loss can take them), that was written before the machine last started, or that
    holds changes no commit covers (a batch applied them and was lost) is made again or brought level: the Iceberg
    table, read by DuckDB, holds the view."""
    import sqlite3

    from icesink.engine.sink import state_dir
    from icesink.engine.sources import arrangement, input_for
    from icesink.engine.sources.view import SharedRange, arranged_changes

    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE events (id bigint NOT NULL, account bigint, at timestamp, price numeric(10,2),
          PRIMARY KEY (id));
        INSERT INTO events SELECT n, n % 13, datetime(1793491200 + (n % 3) * 86400, 'unixepoch'), n % 100
          FROM generate_series(1, 2000) AS n;
        CREATE MATERIALIZED VIEW daily AS SELECT account, date_trunc('day', at) AS day, count(*) AS n,
          sum(price) AS total, max(id) AS newest FROM events GROUP BY account, date_trunc('day', at);
        CREATE SINK daily_lake FROM daily INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v', TABLE 'daily')
          KEY (account, day) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    columns, key = "account, day, n, total, newest", "account, day"

    def level() -> None:
        _run_until_caught_up(session, spark, "daily_lake", "daily", "events")
        expected, got = _view_and_table(session, "daily_lake", "daily", columns, key)
        assert got == expected and len(got) > 30

    level()
    indexes = session.tables.db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'view_%'")
    assert indexes.fetchall() == []
    sink = session.catalog.get("daily_lake")
    directory = state_dir(session.data_dir, sink.id) / "arrangement"
    copies = sorted(directory.glob("*.db"))
    assert [p.name for p in copies] == ["0-of-2.db", "1-of-2.db"]
    with sqlite3.connect(copies[0]) as db:  # the copy is indexed by the view's key
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE 'view_key_%'"
                          ).fetchone() == (1,)

    # changes applied to the copies by a batch that was never committed, then more changes
    session.execute("UPDATE events SET account = account + 1 WHERE id % 3 = 0; DELETE FROM events WHERE id % 11 = 0;"
                    "INSERT INTO events SELECT n, n % 17, datetime(1793491200 + (n % 4) * 86400, 'unixepoch'), 7 "
                    "FROM generate_series(2001, 2300) AS n")
    table_id = session.catalog.get("events").id
    frontier, upto = committed_offset(session, "daily_lake"), session.tables.latest_offset(table_id)
    view_input = input_for(session.catalog, session.catalog.get("daily"), sink.descriptor.view, sink.id)
    try:
        for part in range(2):
            list(arranged_changes(session.data_dir, sink.descriptor.view, view_input.arranged,
                                  SharedRange(frontier, upto, part, 2)))
    finally:
        view_input.close()
    session.execute("UPDATE events SET price = price + 1, account = account - 2 WHERE id % 5 = 0;"
                    "DELETE FROM events WHERE id % 7 = 0")
    level()

    # one copy loses rows and its record of them (a power loss), the other goes
    db = arrangement.open_share(session.data_dir, view_input.arranged, 0, 2)
    try:
        db.execute(f"DELETE FROM t_{table_id} WHERE id % 2 = 0")
        db.execute("UPDATE _icesink_arranged SET upto = 1")
    finally:
        db.close()
    for path in directory.glob("1-of-2.db*"):
        path.unlink()
    session.execute("UPDATE events SET price = price + 2 WHERE id % 4 = 1")
    level()

    # a copy written before the machine last started, whose writes are not synced: a power loss left it unreadable
    copy = directory / "1-of-2.db"
    copy.write_bytes(bytes(range(256)) * (copy.stat().st_size // 256))
    copy.with_name("1-of-2.db.boot").write_text("an earlier start")
    session.execute("UPDATE events SET price = price + 1 WHERE id % 4 = 2")
    level()

    # the table gains a column: the sink starts again, and its copies, of the columns before, are made again
    session.execute("ALTER TABLE events ADD COLUMN note text; UPDATE events SET note = 'n', price = price + 3 "
                    "WHERE id % 6 = 1")
    level()


def test_a_view_that_joins_its_table_with_itself_reaches_iceberg_whole(session, spark):
    """A view that joins a table with itself finds the keys a change touches through other rows of the table, which
    may be of any share of the view's keys: its sink keeps no copies a share each, and the Iceberg table holds the
    view."""
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE items (id bigint NOT NULL, account bigint, parent bigint, price int, PRIMARY KEY (id));
        INSERT INTO items SELECT n, n % 10, n - 1 - (n % 7), n % 50 FROM generate_series(1, 600) AS n;
        CREATE MATERIALIZED VIEW parents AS SELECT a.account, count(*) AS n, sum(b.price) AS parents_price
          FROM items a JOIN items b ON b.id = a.parent GROUP BY a.account;
        CREATE SINK parents_lake FROM parents INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'v',
          TABLE 'parents') KEY (account) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    """)
    _run_until_caught_up(session, spark, "parents_lake", "parents", "items")
    session.execute("UPDATE items SET price = price + 100 WHERE account = 3; DELETE FROM items WHERE id % 9 = 0")
    _run_until_caught_up(session, spark, "parents_lake", "parents", "items")
    expected, got = _view_and_table(session, "parents_lake", "parents", "account, n, parents_price", "account")
    assert got == expected and len(got) == 10
