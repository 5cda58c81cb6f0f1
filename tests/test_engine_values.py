"""Values are checked when they enter an engine table, exactly as the sink will convert them: what INSERT or UPDATE
accepts, the sink writes; what it cannot write is refused with the column named."""
import datetime as dt
import json
from decimal import Decimal

import pytest

from icesink.model.types import decoder
from icesink.engine.values import InvalidValue, input_function
from tests.conftest import error_of, rows
from tests.readers import duckdb_rows
from tests.runtime import caught_up, iceberg_table, wait_for



@pytest.fixture
def events(session):
    session.execute("CREATE TABLE events (id int PRIMARY KEY, ts timestamptz, day date, doc jsonb, n numeric(6,2),"
                    " flag boolean, small smallint, tags text[], ref uuid, span interval, blob bytea, x real)")
    return session


@pytest.mark.parametrize("column, value, message", [
    ("ts", "'not a time'", 'invalid input syntax for type timestamp with time zone: "not a time"'),
    ("ts", "'infinity'", "timestamp with time zone 'infinity' cannot be written to Iceberg"),
    ("day", "'2024-02-30'", 'invalid input syntax for type date: "2024-02-30"'),
    ("doc", "'{\"a\": }'", 'invalid input syntax for type json: "{"a": }"'),
    ("doc", "42", "a jsonb value must be written as text"),
    ("n", "12345.6", "numeric field overflow: a field with precision 6, scale 2"),
    ("n", "'NaN'", "numeric NaN is not supported: icesink keeps a numeric as an Iceberg decimal"),
    ("flag", "'maybe'", 'invalid input syntax for type boolean: "maybe"'),
    ("small", "40000", "smallint out of range"),
    ("id", "'one'", 'invalid input syntax for type integer: "one"'),
    ("tags", "'a,b'", "malformed array literal"),
    ("ref", "'not-a-uuid'", 'invalid input syntax for type uuid: "not-a-uuid"'),
    ("span", "'3 fortnights'", 'invalid input syntax for type interval: "3 fortnights"'),
    ("blob", "'\\xZZ'", 'invalid input syntax for type bytea'),
    ("x", "'NaN'", "NaN cannot be stored"),
    ("x", "1e39", "value out of range: overflow (real)"),
])
def test_insert_refuses_what_the_sink_could_not_write(events, column, value, message):
    sql = f"INSERT INTO events (id, {column}) VALUES (1, {value})"
    error = error_of(events, sql)
    assert error.message.startswith(f"INSERT into table 'events', column \"{column}\": "), error.message
    assert message in error.message
    assert error.position.column == sql.index(value) + 1
    assert rows(events, "SELECT count(*) FROM events") == [(0,)]


def test_computed_values_are_checked_too(events):
    events.execute("INSERT INTO events (id, n, ts) VALUES (1, 10, '2024-01-01 10:00:00+02')")
    error = error_of(events, "UPDATE events SET n = n * 10000")
    assert error.message.startswith("UPDATE of table 'events', column \"n\": numeric field overflow")
    error = error_of(events, "INSERT INTO events (id, ts) SELECT id + 1, 'nonsense' FROM events")
    assert 'column "ts": invalid input syntax for type timestamp with time zone: "nonsense"' in error.message
    error = error_of(events, "UPDATE events SET id = id / 0")
    assert error.message == "UPDATE of table 'events': division by zero" and error.position.column == 27
    assert rows(events, "SELECT id, n, ts FROM events") == [(1, "10.00", "2024-01-01 08:00:00+00")]


def test_postgres_special_inputs_are_converted_as_postgres_does(events):
    before = dt.datetime.now(dt.timezone.utc).date()
    events.execute("INSERT INTO events (id, ts, day) VALUES (1, 'epoch', 'yesterday'), (2, 'today', 'tomorrow'),"
                   " (3, '2024-1-5 10:00+02', 'epoch')")
    after = dt.datetime.now(dt.timezone.utc).date()
    got = rows(events, "SELECT id, ts, day FROM events ORDER BY id")

    def expected(today):
        return [(1, "1970-01-01 00:00:00+00", str(today - dt.timedelta(days=1))),
                (2, f"{today} 00:00:00+00", str(today + dt.timedelta(days=1))),
                (3, "2024-01-05 08:00:00+00", "1970-01-01")]
    # 'today' is read while the statement runs, which may straddle midnight UTC
    assert got in (expected(before), expected(after))


def test_values_are_kept_in_postgres_form(events):
    events.execute("INSERT INTO events (id, n, flag, tags, ref, span, blob) VALUES "
                   "(1, 1.005, 'yes', '{a,\"b c\",NULL}', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '1 day 2 hours',"
                   " '\\xDEADbeef')")
    assert rows(events, "SELECT n, flag, tags, ref, span, blob FROM events") == [
        ("1.01", 1, '["a", "b c", null]', "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "1 day 02:00:00", "\\xdeadbeef")]


@pytest.mark.parametrize("type_name, values", [
    ("integer", [0, -5, "12", 3.6]), ("bigint", [2 ** 62, "-9"]), ("numeric(10,3)", ["1.5", 2, 0.125, Decimal("7")]),
    ("numeric", ["123456789.123456789012", -1]), ("real", [1.5, "-Infinity", 3]), ("boolean", [True, "off", 0]),
    ("date", ["2024-02-29", dt.date(2020, 1, 1), "epoch"]), ("timestamp", ["2024-01-01T10:00:00.5", "today"]),
    ("timestamp with time zone", ["2024-01-01 10:00-05", dt.datetime(2024, 1, 1)]), ("time", ["10:30", "allballs"]),
    ("interval", ["1 year 2 mons", "-01:30:00", "2 weeks ago"]), ("jsonb", ['{"a": [1, 2]}', "null"]),
    ("uuid", ["a0eebc999c0b4ef8bb6d6bb9bd380a11"]), ("bytea", ["\\x00ff", b"\x01"]),
    ("integer[]", ["{1,2}", "[3]", [4, None]]), ("text[][]", ['{{"a","b"},{c,d}}']),
])
def test_every_accepted_value_passes_the_sinks_decoder(type_name, values):
    for value in values:
        stored = input_function(type_name)(value)
        decoder(type_name)(json.loads(json.dumps(stored)))  # through the JSON change log, as the sink reads it


def test_input_functions_refuse_rather_than_guess():
    for type_name, value in [("integer", "1.5"), ("boolean", 2), ("date", 20240101), ("text", b"\x00")]:
        with pytest.raises(InvalidValue):
            input_function(type_name)(value)


def test_a_sink_names_the_real_cause_of_a_value_it_cannot_write(session, scheduler):
    """A table written by an older icesink, which did not check values, holds one the sink cannot convert: the
    status says which column, which change and why, not Spark's wrapper."""
    session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');"
                    "CREATE TABLE events (id int PRIMARY KEY, ts timestamptz);"
                    "INSERT INTO events VALUES (1, '2024-01-01 00:00:00+00')")
    table_id = session.catalog.get("events").id
    with session.tables.transaction() as db:  # what the older version let through
        db.execute(f'INSERT INTO "t_{table_id}" VALUES (2, \'yesterday\')')
    session.execute("CREATE SINK events_lake FROM events INTO ICEBERG CATALOG CONNECTION lake "
                    "(NAMESPACE 'app', TABLE 'events') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    status = "SELECT st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id"
    status, error = wait_for(lambda: [r for r in rows(session, status) if r[0] == "stalled"], what="a stall")[0]
    assert "Python worker" not in error
    assert error.startswith("ValueError: column \"ts\" of the change at log offset 2 holds 'yesterday', which is "
                            "not a timestamp with time zone"), error
    with session.tables.transaction() as db:  # the user repairs the row; the sink goes on from where it stalled
        db.execute("UPDATE changes SET row = json_array(2, '2024-01-02 00:00:00+00:00') WHERE offset = 2")
    wait_for(caught_up(session, "events_lake", "events"), what="the sink to recover")
    got = duckdb_rows(iceberg_table(session, "events_lake").metadata_location, "id", "id")
    assert got == [(1,), (2,)]


def test_a_copy_stores_timestamps_exactly_as_the_change_stream_does():
    """A key or REPLICA IDENTITY FULL row copied in bulk must match the same value arriving later as a change, and
    a sink reading the copy must write what it writes for the change."""
    import random

    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructField, StructType

    from icesink.engine.columns import spark_type
    from icesink.engine.ingest.copy import _stored, spark_arrays
    from icesink.engine.values import input_function, replicated_input
    from icesink.model.types import Column, decoder

    rng = random.Random(3)
    for type_name, zone in (("timestamp with time zone", "+00"), ("timestamp", "")):
        printed = [None]
        for _ in range(3000):
            fraction = rng.choice(["", f".{rng.randint(1, 999999):06d}".rstrip("0"), ".5", ".000001"])
            printed.append(f"{rng.randint(1, 9999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                           f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{fraction}{zone}")
        one_by_one = [None if v is None else replicated_input(type_name)(v) for v in printed]
        assert _stored(type_name)(pa.array(printed)) == one_by_one
        assert one_by_one == [None if v is None else input_function(type_name)(v) for v in printed]
        target = to_arrow_schema(StructType([StructField("t", spark_type(type_name))]), timezone="UTC")[0].type
        read = spark_arrays(pa.record_batch([pa.array(printed)], names=["t"]), [Column("t", type_name)], [target])
        assert read[0].to_pylist() == [decoder(type_name)(v) for v in one_by_one]


def test_a_double_reaches_iceberg_with_every_digit_it_has(session, scheduler):
    """Through the change log: SQLite's JSON would keep 15 significant digits of a double's 17."""
    session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');"
                    "CREATE TABLE m (id int PRIMARY KEY, x double precision);"
                    "INSERT INTO m VALUES (1, 0.30000000000000004), (2, 1.7976931348623157e308), (3, NULL);"
                    "CREATE SINK m_lake FROM m INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'app', TABLE 'm') "
                    "KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    wait_for(caught_up(session, "m_lake", "m"), what="the sink to commit")
    got = duckdb_rows(iceberg_table(session, "m_lake").metadata_location, "id, x", "id")
    assert got == [(1, 0.30000000000000004), (2, 1.7976931348623157e308), (3, None)]
