"""A batch's recompute of the groups its changes touch, by the evaluator icesink runs (SQLite, over the store's rows
through the view's index, as a partition does: engine/sources/view.py) and by Spark SQL over the same groups' rows
(read out of the store through the same index by a Python data source, one partition as a batch's partition of
changes is, then aggregated by the view's query in Spark SQL and joined to the touched keys, as a Spark evaluator
would):

    .venv/bin/python bench/evaluators.py [--rows 1000000] [--touched 100000] [--rounds 3]

Fills seed 004's `user_events` (--rows events over a day, about 5 to a group of user and hour), plans
`user_activity_summary` and a sink on it, and recomputes --touched groups picked at random, both ways in turn, each
round. Prints each round's seconds and a touched group's cost. A figure, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ICESINK_SECRET_STORE", "file")

import icesink  # noqa: E402
from icesink.engine.spark import get_spark  # noqa: E402

SETUP = """
CREATE TABLE user_events (id bigint NOT NULL, user_id bigint, session_id text, event_timestamp timestamp,
  PRIMARY KEY (id));
INSERT INTO user_events SELECT n, (n * 7919) % {users}, 's' || (n % 50),
  datetime(1793491200 + (n * 104729) % 86400, 'unixepoch') FROM generate_series(1, {rows}) AS n;
CREATE MATERIALIZED VIEW user_activity_summary AS
SELECT user_id, DATE_TRUNC('hour', event_timestamp) AS hour, COUNT(*) AS event_count,
       COUNT(DISTINCT session_id) AS session_count, MAX(event_timestamp) AS last_event_time
FROM user_events GROUP BY user_id, DATE_TRUNC('hour', event_timestamp);
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE SINK user_activity_iceberg FROM user_activity_summary INTO ICEBERG CATALOG CONNECTION lake
  (NAMESPACE 'analytics', TABLE 'user_activity') KEY (user_id, hour) MODE UPSERT WITH (COMMIT INTERVAL '5s');
"""
KEYS = "_bench_keys"
# the view's query in Spark SQL over the touched groups' rows, each group's rows tagged by the key that touched it
SPARK_QUERY = """
SELECT k._touch, v.user_id, v.hour, v.event_count, v.session_count, v.last_event_time
FROM (SELECT DISTINCT _touch FROM touched_rows) k LEFT JOIN (
  SELECT _touch, user_id, date_trunc('HOUR', event_timestamp) AS hour, count(*) AS event_count,
         count(DISTINCT session_id) AS session_count, max(event_timestamp) AS last_event_time
  FROM touched_rows WHERE user_id IS NOT NULL GROUP BY _touch, user_id, date_trunc('HOUR', event_timestamp)) v
ON v._touch = k._touch
"""


def touched_rows_source():
    """A Python data source whose one partition reads the rows of the touched groups (a JSON file of keys) from the
    store through the view's index, as Arrow batches of (touch, user_id, session_id, event_timestamp)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader

    class TouchedRows(DataSource):
        @classmethod
        def name(cls):
            return "bench_touched_rows"

        def schema(self):
            return "_touch bigint, user_id bigint, session_id string, event_timestamp timestamp"

        def reader(self, schema):
            return Reader(self.options)

    class Reader(DataSourceReader):
        def __init__(self, options):
            self.options = options

        def read(self, partition):
            import pyarrow as pa

            from icesink.engine.tables import TableStore

            store = TableStore(Path(self.options["data_dir"]))
            try:
                db = store.db
                db.execute(f"CREATE TEMP TABLE {KEYS} (k0, k1)")
                db.executemany(f"INSERT INTO temp.{KEYS} VALUES (?, ?)", json.loads(Path(self.options["keys"])
                                                                                     .read_text()))
                rows = db.execute(self.options["sql"]).fetchall()
            finally:
                store.close()
            schema = pa.schema([("_touch", pa.int64()), ("user_id", pa.int64()), ("session_id", pa.string()),
                                ("event_timestamp", pa.timestamp("us", tz="UTC"))])
            for start in range(0, len(rows), 100_000):
                touch, user, session, at = zip(*rows[start:start + 100_000])
                yield pa.RecordBatch.from_arrays(
                    [pa.array(touch, pa.int64()), pa.array(user, pa.int64()), pa.array(session, pa.string()),
                     pa.array(at, pa.string()).cast(pa.timestamp("us")).cast(schema.field(3).type)], schema=schema)
    return TouchedRows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--touched", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from icesink.engine.sources.view import create_indexes, recompute_keys, view_batches
    from icesink.engine.tables import TableStore, storage_name

    spark = get_spark()
    spark.dataSource.register(touched_rows_source())
    data_dir = Path(tempfile.mkdtemp(prefix="icesink-bench-evaluators-"))
    session = icesink.connect(data_dir)
    try:
        session.execute(SETUP.format(rows=args.rows, users=max(1, args.rows // (5 * 24))))
        view = session.catalog.get("user_activity_iceberg").descriptor.view
        table = storage_name(session.catalog.get("user_events").id)
        columns = [c.as_dict() for c in session.catalog.get("user_activity_summary").descriptor.columns]
        create_indexes(session.tables.db, view, "user_activity_summary")
        hour = next(k for k in view.index_keys if "DATE_TRUNC" in k.upper())  # the key's other expression: user_id
        keys = session.tables.db.execute(
            f"SELECT DISTINCT user_id, {hour} FROM {table} ORDER BY random() LIMIT ?", (args.touched,)).fetchall()
        keys_file = data_dir / "keys.json"
        keys_file.write_text(json.dumps(keys))
        rows_sql = (f"SELECT k.rowid, e.user_id, e.session_id, e.event_timestamp FROM temp.{KEYS} k "
                    f"LEFT JOIN {table} e ON {hour} IS k.k1 AND e.user_id IS k.k0")
        print(f"{args.rows:,} events, {len(keys):,} groups touched (of "
              f"{session.execute('SELECT count(*) FROM user_activity_summary')[-1].rows[0][0]:,})", flush=True)
        for round_ in range(args.rounds):
            store = TableStore(data_dir)
            try:
                started = time.time()
                store.db.execute(f"CREATE TEMP TABLE {KEYS} (k0, k1)")
                store.db.executemany(f"INSERT INTO temp.{KEYS} VALUES (?, ?)", keys)
                found = recompute_keys(store.db, view, f"SELECT k0 AS _icesink_k0, k1 AS _icesink_k1, 1, 1 "
                                                       f"FROM temp.{KEYS}")
                batches = list(view_batches(found, columns))  # the rows as Spark takes them from a partition
                sqlite = time.time() - started
            finally:
                store.close()
            started = time.time()
            df = (spark.read.format("bench_touched_rows").option("data_dir", str(data_dir))
                  .option("keys", str(keys_file)).option("sql", rows_sql).load())
            df.createOrReplaceTempView("touched_rows")
            spark.sql(SPARK_QUERY).write.format("noop").mode("overwrite").save()
            spark_seconds = time.time() - started
            print(f"round {round_ + 1}: SQLite {sqlite:.2f}s ({sum(b.num_rows for b in batches):,} rows, {sqlite / len(keys) * 1e6:.1f} µs "
                  f"a group); Spark SQL {spark_seconds:.2f}s ({spark_seconds / len(keys) * 1e6:.1f} µs a group)",
                  flush=True)
    finally:
        session.close()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
