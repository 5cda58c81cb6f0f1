"""Postgres connections against a real PostgreSQL 15 started on 127.0.0.1 by the tests: what VALIDATE (and CREATE)
says for each thing logical replication needs that is missing."""
from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.conftest import error_of, rows
from tests.servers import Postgres, free_port

REPL_PASSWORD = "repl-pw-7d1"


@pytest.fixture(scope="module")
def postgres():
    server = Postgres().start()
    with server.admin() as admin:
        admin.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{REPL_PASSWORD}'")
        admin.execute(f"CREATE ROLE plain LOGIN PASSWORD '{REPL_PASSWORD}'")
        admin.execute("CREATE DATABASE shop OWNER repl")
    yield server
    server.stop()


def connection(postgres, name="pg", user="repl", port=None, database="shop", secret="pg_pass",
               host="127.0.0.1") -> str:
    return (f"CREATE CONNECTION {name} TO POSTGRES (HOST '{host}', PORT {port or postgres.port}, "
            f"DATABASE '{database}', USER '{user}', PASSWORD SECRET {secret})")


def test_a_valid_connection_is_created_and_validates(session, postgres):
    session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'")
    session.execute(connection(postgres))
    assert session.execute("VALIDATE CONNECTION pg")[0].status == "VALIDATE CONNECTION"
    assert rows(session, "SELECT name, type FROM mz_connections") == [("pg", "postgres")]


@pytest.mark.parametrize("change, message", [
    (dict(port="unreachable"), "Postgres connection 'pg': cannot reach 127.0.0.1:{port}: Connection refused"),
    (dict(host="nosuchhost.invalid"), "Postgres connection 'pg': cannot reach nosuchhost.invalid:{port}: unknown host "
                                      "'nosuchhost.invalid'"),
    (dict(secret="wrong"), "Postgres connection 'pg': the server refused the login of user 'repl': password "
                           "authentication failed for user \"repl\""),
    (dict(database="nosuch"), "Postgres connection 'pg': the database 'nosuch' does not exist"),
    (dict(user="plain"), "Postgres connection 'pg': user 'plain' may not replicate: ALTER ROLE \"plain\" WITH "
                         "REPLICATION (as a superuser), or use a user that may"),
])
def test_creation_says_what_is_wrong(session, postgres, change, message):
    session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'; CREATE SECRET wrong AS 'not-the-password'")
    if change.get("port") == "unreachable":
        change["port"] = free_port()
    error = error_of(session, connection(postgres, **change))
    assert error.message.startswith(message.format(**{"port": postgres.port, **change})), error.message
    assert REPL_PASSWORD not in error.message and "not-the-password" not in error.message
    assert rows(session, "SELECT count(*) FROM mz_connections") == [(0,)]  # nothing stored


def test_validation_can_be_deferred_and_rotating_the_secret_fixes_it(session, postgres):
    session.execute("CREATE SECRET pg_pass AS 'stale'")
    session.execute(connection(postgres) + " WITH (VALIDATE = false)")
    assert "password authentication failed" in error_of(session, "VALIDATE CONNECTION pg").message
    session.execute(f"ALTER SECRET pg_pass AS '{REPL_PASSWORD}'")
    assert session.execute("VALIDATE CONNECTION pg")[0].status == "VALIDATE CONNECTION"


def test_no_free_replication_slot(session, postgres):
    session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'")
    with postgres.admin() as admin:
        free = admin.execute("SELECT current_setting('max_replication_slots')::int - count(*) "
                             "FROM pg_replication_slots").fetchone()[0]
        names = [f"filler_{n}" for n in range(free)]
        for name in names:
            admin.execute("SELECT pg_create_physical_replication_slot(%s)", (name,))
        try:
            error = error_of(session, connection(postgres))
        finally:
            for name in names:
                admin.execute("SELECT pg_drop_replication_slot(%s)", (name,))
    assert error.message == ("Postgres connection 'pg': no free replication slot: all 10 of max_replication_slots "
                             "are in use; drop an unused slot (pg_drop_replication_slot) or raise "
                             "max_replication_slots")


def test_wal_level_must_be_logical(session):
    server = Postgres(wal_level="replica").start()
    try:
        with server.admin() as admin:
            admin.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{REPL_PASSWORD}'")
        session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'")
        error = error_of(session, connection(server, database="postgres"))
    finally:
        server.stop()
    assert error.message == ("Postgres connection 'pg': wal_level is 'replica', and logical replication needs "
                             "'logical': set wal_level = logical in postgresql.conf (or ALTER SYSTEM) and restart "
                             "the server")


# ---------------------------------------------------------------- sources: what the upstream says at CREATE SOURCE
UPSTREAM = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10,2) NOT NULL, note varchar(20), tags text[],
                     placed timestamptz, mood mood, qty positive, raw numeric, doc jsonb, at_time timetz);
CREATE TABLE customers (id int PRIMARY KEY, name text);
CREATE TABLE events (kind text, at timestamp);
CREATE TABLE logs (line text);
ALTER TABLE logs REPLICA IDENTITY FULL;
CREATE TABLE hosts (id int PRIMARY KEY, address inet);
CREATE SCHEMA audit;
CREATE TABLE audit.trail (id int PRIMARY KEY, what text);
CREATE TABLE unpublished (id int PRIMARY KEY);
CREATE TABLE private (id int PRIMARY KEY);
CREATE TABLE badges (id int PRIMARY KEY, code text NOT NULL UNIQUE);
ALTER TABLE badges REPLICA IDENTITY USING INDEX badges_code_key;
CREATE PUBLICATION badges FOR TABLE badges;
CREATE PUBLICATION icesink FOR TABLE orders, customers, events, logs, hosts, audit.trail, private;
GRANT USAGE ON SCHEMA audit TO repl;
GRANT SELECT ON orders, customers, events, logs, hosts, audit.trail, unpublished, badges TO repl;
"""


@pytest.fixture(scope="module")
def upstream(postgres):
    with postgres.admin("shop") as admin:
        admin.execute(UPSTREAM)
    return postgres


@pytest.fixture
def pg(session, upstream):
    session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'; " + connection(upstream))
    return session


def test_subsources_get_the_upstream_columns_types_and_key(pg):
    pg.execute("CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink') "
               "FOR TABLES (public.orders, customers AS people)")
    assert rows(pg, "SHOW COLUMNS FROM orders") == [
        ("id", 0, "bigint"), ("amount", 0, "numeric(10,2)"), ("note", 1, "text"), ("tags", 1, "text[]"),
        ("placed", 1, "timestamp with time zone"), ("mood", 1, "text"), ("qty", 1, "integer"), ("raw", 1, "numeric"),
        ("doc", 1, "jsonb"), ("at_time", 1, "text")]
    assert rows(pg, "SHOW COLUMNS FROM people") == [("id", 0, "integer"), ("name", 1, "text")]
    # the primary key is known: a sink may use it as an enforced KEY, and no other
    pg.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local')")
    sink = ("CREATE SINK s{n} FROM people INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'p{n}') "
            "KEY ({key}) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    pg.execute(sink.format(n=1, key="id"))
    assert "name" in error_of(pg, sink.format(n=2, key="name")).message


def test_all_tables_and_schemas_become_subsources(pg, upstream):
    with upstream.admin("shop") as admin:  # every table, for this test
        admin.execute("GRANT SELECT ON private TO repl; ALTER TABLE events REPLICA IDENTITY FULL")
    try:
        pg.execute("CREATE SOURCE everything FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink', "
                   "TEXT COLUMNS (hosts.address)) FOR ALL TABLES")
    finally:
        with upstream.admin("shop") as admin:
            admin.execute("REVOKE SELECT ON private FROM repl; ALTER TABLE events REPLICA IDENTITY DEFAULT")
    assert rows(pg, "SHOW SUBSOURCES ON everything") == [(n, "subsource") for n in (
        "customers", "events", "hosts", "logs", "orders", "private", "trail")]
    assert rows(pg, "SHOW COLUMNS FROM hosts") == [("id", 0, "integer"), ("address", 1, "text")]
    pg.execute("DROP SOURCE everything CASCADE")
    pg.execute("CREATE SOURCE audited FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink') FOR SCHEMAS (audit)")
    assert rows(pg, "SHOW SUBSOURCES ON audited") == [("trail", "subsource")]
    assert "ON applies only to SHOW SUBSOURCES" in error_of(pg, "SHOW SINKS ON audited").message


@pytest.mark.parametrize("statement, message", [
    ("(PUBLICATION 'nosuch') FOR TABLES (orders)",
     "source 'src': publication 'nosuch' does not exist in database 'shop' of connection 'pg': CREATE PUBLICATION "
     "nosuch FOR TABLE … (or FOR ALL TABLES) there"),
    ("(PUBLICATION 'icesink') FOR TABLES (unpublished)",
     "source 'src': publication 'icesink' does not cover table public.unpublished: ALTER PUBLICATION icesink ADD "
     "TABLE public.unpublished"),
    ("(PUBLICATION 'icesink') FOR TABLES (private)",
     "source 'src': user 'repl' may not read table public.private, which the source copies first: GRANT SELECT ON "
     "public.private TO \"repl\""),
    ("(PUBLICATION 'icesink') FOR TABLES (nosuch)", "source 'src': table public.nosuch does not exist upstream"),
    ("(PUBLICATION 'icesink') FOR TABLES (events)",
     "source 'src': table public.events has neither a primary key nor REPLICA IDENTITY FULL, so its updates and "
     "deletes cannot be replicated: ALTER TABLE public.events REPLICA IDENTITY FULL (or add a primary key)"),
    ("(PUBLICATION 'badges') FOR TABLES (badges)",
     "source 'src': table public.badges identifies its updated and deleted rows upstream by index badges_code_key "
     "only, and icesink matches them by the primary key or the whole row: ALTER TABLE public.badges REPLICA "
     "IDENTITY DEFAULT (or FULL)"),
    ("(PUBLICATION 'icesink') FOR TABLES (hosts)",
     "source 'src': column \"address\" of table public.hosts has type inet, which icesink cannot replicate as "
     "such: name it in TEXT COLUMNS (hosts.address) to replicate it as text, or in EXCLUDE COLUMNS to leave it out"),
    ("(PUBLICATION 'icesink', EXCLUDE COLUMNS (hosts.nosuch)) FOR TABLES (customers)",
     "source 'src': EXCLUDE COLUMNS names hosts.nosuch, which is not a column of a table this source replicates"),
])
def test_a_source_the_upstream_cannot_feed_is_refused(pg, statement, message):
    error = error_of(pg, f"CREATE SOURCE src FROM POSTGRES CONNECTION pg {statement}")
    assert error.message == message
    assert rows(pg, "SELECT count(*) FROM mz_sources WHERE name = 'src'") == [(0,)]


def test_replica_identity_full_and_excluded_columns(pg):
    pg.execute("CREATE SOURCE src FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink', EXCLUDE COLUMNS "
               "(public.hosts.address)) FOR TABLES (logs, hosts)")
    assert rows(pg, "SHOW COLUMNS FROM logs") == [("line", 1, "text")]
    assert rows(pg, "SHOW COLUMNS FROM hosts") == [("id", 0, "integer")]


NAMING_TABLE = ("CREATE TABLE t (id int NOT NULL, g text, x int, ok boolean, doc jsonb, PRIMARY KEY (id)); "
                "INSERT INTO t VALUES (1, 'a', 3, true, '{\"k\": 1, \"on\": true, \"s\": \"x\", \"n\": "
                "{\"m\": [1.5, \"y\"]}}'), (2, 'a', 5, false, '{\"k\": 2, \"on\": false, \"n\": null}'), "
                "(3, 'b', NULL, NULL, NULL)")


@pytest.mark.parametrize("sql", [
    "SELECT x, x * 2 FROM t UNION SELECT 2.5::float8, 1 ORDER BY 1",  # read as doubles, named as written
    "SELECT g, count(*), max(x), sum(x) + 1, x::text, 1::int, 2::bigint, 'a'::text, 1.5::double precision, "
    "DATE '2026-01-01', TIMESTAMP '2026-01-01 10:00:00', true, INTERVAL '1 day', CASE WHEN x > 1 THEN 1 END, "
    "coalesce(x, 0), upper(g), -x, x || 'y' FROM t GROUP BY g, x ORDER BY g, x",
    "SELECT (SELECT max(id) FROM t), EXISTS (SELECT 1 FROM t), (SELECT g AS name FROM t LIMIT 1), "
    "length(g)::text, EXTRACT(year FROM DATE '2026-01-31')::int, position('a' IN g), substring(g FROM 1 FOR 1), "
    "date_part('month', DATE '2026-01-31')::int FROM t WHERE id = 1",
    "SELECT * FROM (SELECT upper(g), x::text, count(*) FROM t GROUP BY g, x) s ORDER BY 1, 2",
    "SELECT count FROM (SELECT count(*) FROM t) s",
    "SELECT upper(g), count(*) FROM t GROUP BY upper ORDER BY count DESC, upper",
    "SELECT id, ok, NOT ok, x > 3, x IS NULL, ok IS TRUE, 'yes' IS TRUE, 'off' IS FALSE, g LIKE 'a%', "
    "EXISTS (SELECT 1 FROM t WHERE ok) FROM t ORDER BY id",
    "SELECT ok, count(*) FROM t GROUP BY ok ORDER BY ok",
    "SELECT g, bool_and(ok), bool_or(ok), every(x > 3) FROM t GROUP BY g ORDER BY g",
    # ->> gives text, as Postgres does, whatever the JSON value; -> and ->> chain from the left
    "SELECT id, doc ->> 'k', doc->>'on', doc ->> 's', doc -> 'n' -> 'm' ->> 0, doc->'n'->'m'->>1, "
    "(doc ->> 'k')::int + 1, doc ->> 'k' = '1', doc ->> 'missing' FROM t ORDER BY id",
    "SELECT g, array_agg(x) FILTER (WHERE x > 4), array_agg(id) FILTER (WHERE false), array_agg(DISTINCT g) "
    "FROM t GROUP BY g ORDER BY g",
    "SELECT g, string_agg(x::text, ',' ORDER BY x DESC), array_agg(id ORDER BY id DESC), array_agg(x ORDER BY x "
    "NULLS FIRST), string_agg(DISTINCT g, '|' ORDER BY g) FILTER (WHERE id > 1), array_agg(ok ORDER BY ok DESC, id) "
    "FROM t GROUP BY g ORDER BY g",
    "SELECT string_agg(g, '' ORDER BY g DESC, id), array_agg(x ORDER BY x DESC NULLS LAST) FROM t",
    "VALUES (1, 'a', true), (2, NULL, false)",
    "SELECT n, n > 1, t.ok FROM t, generate_series(1, 2) AS n WHERE t.id = 1 ORDER BY n",
    "SELECT v.n, t.g, v.label FROM (VALUES (1, 'x'), (3, 'y')) AS v(n, label) JOIN t ON t.id = v.n ORDER BY 1",
    "SELECT * FROM (VALUES (1, 2)) AS v(a)",
    # jsonb is kept as Postgres prints it: keys once, shorter first, numbers as numeric prints them
    "SELECT id, doc::text, (CASE WHEN ok THEN 1 END)::text, INTERVAL '1 day'::text, (x::text)::int FROM t "
    "ORDER BY 1",
    "SELECT '{\"b\":1,\"a\":2, \"a\": 3, \"ccc\": 1e2, \"dd\": [1.50, {\"é\": \"\\n\", \"ab\": null}]}'::jsonb::text",
    # -> gives an object or array as Postgres prints a jsonb, ->> a number as its JSON text
    "SELECT id, (doc -> 'n')::text, doc ->> 'n', (doc -> 'n' -> 'm')::text, doc -> 'n' -> 'm' ->> 0, "
    "('{\"a\": {\"b\": 1.50, \"c\": [2.0, {\"d\": true}]}}'::jsonb -> 'a')::text, "
    "'{\"a\": {\"b\": 1.50, \"c\": [2.0]}}'::jsonb -> 'a' ->> 'c', '{\"n\": 1.50}'::jsonb ->> 'n' FROM t ORDER BY id",
    # ARRAY[…], = ANY and <> ALL over arrays (a subquery's, cast) and subqueries (in parentheses too), subscripts counted from 1
    "SELECT id, ARRAY[x, 5], x = ANY (ARRAY[3, 4]), x <> ALL (ARRAY[3, NULL]), 3 = ANY (ARRAY[x, 5]), "
    "x = ANY (SELECT x FROM t WHERE id > 1), id <> ALL (SELECT x FROM t WHERE x IS NOT NULL), (ARRAY[g, 'z'])[1], "
    "(ARRAY[1, 2, 3])[id], (ARRAY[1, 2])[0], ARRAY[ok, NOT ok], x = ANY ((SELECT array_agg(x) FROM t WHERE id < 3)::int[]), "
    "id <> ALL ((SELECT array_agg(x) FROM t)::int[]), x = ANY ((SELECT x FROM t WHERE id > 1)) FROM t ORDER BY id",
    "SELECT g, array_agg(x ORDER BY x), 5 = ANY (array_agg(x)), (array_agg(id ORDER BY id DESC))[1] FROM t "
    "GROUP BY g ORDER BY g",
    # a cast to an integer type rounds a numeric half away from zero (SQLite's CAST truncates, and reads '1.50' as 1),
    # and reads text as the type's input does; text that looks like a moment's is no moment
    "SELECT g, ' 12 '::int, '10:00:00.500000'::text, '2026-01-01 10:00:00.50+00:00'::text, 2.5::int, (-2.5)::int, 3.7::bigint, 2.5::smallint, '1.50'::numeric::int, (7 / 2.0)::int, "
    "avg(x)::int, (sum(x) / 4.0)::bigint, '12'::int FROM t GROUP BY g ORDER BY g",
    # regular expressions' functions, arrays' and jsonb's
    "SELECT id, regexp_replace(g || 'bab', 'b(.)', 'X\\1Y', 'g'), regexp_replace(g || 'Bx', 'b', '<\\&>', 'i'), "
    "regexp_replace('aaa', 'a', 'b'), regexp_match(g || '=v', '(\\w)=(\\w)'), regexp_match(g, 'z'), "
    "(regexp_match('k=v', '(\\w)=(\\w)'))[2], array_to_string(ARRAY[x, NULL, id], ','), "
    "array_to_string(ARRAY[ok, NOT ok, x > 3], ','), array_to_string(ARRAY[g, NULL], '-', '*'), array_length(ARRAY[1, 2, id], 1), array_length(ARRAY[]::int[], 1), "
    "cardinality(ARRAY[x, id]), jsonb_array_length(doc -> 'n' -> 'm'), jsonb_typeof(doc -> 'k'), "
    "'{1,2,NULL}'::int[], '{a,b}'::text[] FROM t WHERE id < 3 ORDER BY id",
    # a moment's text as Postgres prints it: a fraction without trailing zeros, a zone of whole hours as +00
    "SELECT (TIMESTAMP '2026-02-01 23:59:59.5')::text, (TIMESTAMP '2026-02-01 23:59:59.5' + INTERVAL '1 day')::text, "
    "to_timestamp(1.5)::text, length(to_timestamp(0.25)::text), "
    "(TIMESTAMP '2026-01-01 10:00:00' AT TIME ZONE 'Asia/Kolkata')::text, "
    "'x' || (TIMESTAMP '2026-01-01 10:00:00.120' - INTERVAL '1 hour')::text",
    # to_char of timestamps and dates by Postgres's templates, and date_bin
    "SELECT to_char(TIMESTAMP '2026-01-05 14:03:07.25', 'Month DD, YYYY HH12:MI:SS AM'), "
    "to_char(DATE '2026-01-05' + id * 40, 'FMMonth FMDDth, YYYY \"at\" HH24:MI:SS.MS US Dy "
    "IW Q DDD FMDay D WW CC J'), to_char(DATE '2026-03-01', 'YYYY-MM mon MON RM Y,YYY IYYY-IW-ID hh24 fmdd'), "
    "to_char(to_timestamp(86400 * id), 'YYYY-MM-DD HH24:MI:SS TZ OF TZH'), to_char(TIMESTAMP '2026-02-22 00:00:00', "
    "'DDth DDTH FMDDth HH12 am A.M. p.m.'), date_bin('15 minutes', TIMESTAMP '2026-01-05 14:03:07', "
    "TIMESTAMP '2000-01-01')::text, date_bin(INTERVAL '1 hour', to_timestamp(5000 * id), TIMESTAMP '2000-01-01 "
    "00:30:00')::text, date_bin('15 minutes', TIMESTAMP '1999-12-31 23:59:00', TIMESTAMP '2000-01-01')::text "
    "FROM t ORDER BY id",
    # what depends on an operand's type: a truth value's text, a double rounded half to even
    "SELECT id, ok::text, (x > 3)::text, 'x' || ok, ok || 'y', CAST(x IS NULL AS text), round(x::float8 / 2), "
    "(x::float8 / 2)::int, round(2.5::float8), 2.5::float8::int, (x / 2.0)::int FROM t ORDER BY id",
    # a double's and a real's text: shortest digits, no .0, exponent form from 1e15 (1e6 for a real) and below 1e-4
    "SELECT id, (x / 2.0::float8)::text, 1e15::float8::text, 0.1::real::text, (x::float8 * 1.5)::text, "
    "'v' || x::float8 / 4, 3.0::float8::text, 1e-5::float8::text, 123456.0::real::text, 1234567.0::real::text "
    "FROM t ORDER BY id",
    # a text literal beside a number is that number (SQLite compares a computed number with text as unequal)
    "SELECT id, id + 1 = '2', x * 2 > ' 7 ', (SELECT max(x) FROM t) = '5', x::float8 > '-Infinity', 1 + '2', "
    "x::numeric(10,2) + 0 = '3.00', '3' < x - 1 FROM t ORDER BY id",
    # a text literal among values of one type (CASE's results, coalesce's, nullif's, greatest's) is of that type
    "SELECT id, coalesce(x, '0'), nullif(x, '3'), CASE WHEN x IS NULL THEN '-1' ELSE x END, greatest(x, '4'), "
    "least('4', x) + 1, CASE x WHEN '5' THEN 'five' END, CASE WHEN ok::text = 'true' THEN 'y' END FROM t ORDER BY id",
    # a text literal compared with a truth value or a jsonb is one (SQLite compared 1 with 'true')
    "SELECT id, ok = 'true', ok <> 'no', ok IN ('t', 'off'), coalesce(ok, 'f'), doc -> 'n' = '{\"m\": [1.5, \"y\"]}' "
    "FROM t ORDER BY id",
    # TRIM's special forms, and the clock's functions without parentheses (by their names and types)
    "SELECT trim(both 'x' from 'xaxx'), trim(leading from '  a '), trim(trailing 'x' from 'xax'), "
    "trim('x' from 'xax'), trim(' b '), localtimestamp > TIMESTAMP '2020-01-01 00:00:00', "
    "current_date > DATE '2020-01-01', now() > to_timestamp(0), current_timestamp >= now() - INTERVAL '1 hour'",
    "SELECT id, EXTRACT(EPOCH FROM to_timestamp(id * 100000000 + 0.25))::float8, to_timestamp(id) < "
    "to_timestamp(id + 1), EXTRACT(hour FROM to_timestamp(id * 3600))::int FROM t ORDER BY id",
])
def test_a_select_names_its_columns_and_gives_its_truth_values_as_postgres_does(session, postgres, sql):
    """Each column as psql shows it, by Postgres's own answer to the same query over the same rows: an output
    without an alias named as Postgres names it (`count`, `max`, `?column?`, a cast by its operand or its type, ...),
    booleans as booleans (psql's t and f) where SQLite computes them as 0 and 1."""
    session.execute(NAMING_TABLE)
    with postgres.admin() as admin:
        admin.execute("DROP TABLE IF EXISTS t")
        for statement in NAMING_TABLE.split("; "):
            admin.execute(statement)
        cursor = admin.execute(sql)
        expected_columns = [d.name for d in cursor.description]
        expected = cursor.fetchall()
    result = session.execute(sql)[-1]
    assert result.columns == expected_columns
    # psycopg gives dates and intervals as Python's, whose text is not psql's: those are compared by name alone
    compared = [i for i, v in enumerate(expected[0]) if not hasattr(v, "isoformat") and not hasattr(v, "days")]
    # an array is held as JSON, which SELECT shows; psycopg gives Postgres's as a list
    got = [tuple(json.loads(v) if isinstance(e, list) and isinstance(v, str) else v for v, e in zip(row, expected[0]))
           for row in result.rows]
    assert [[_typed(row[i]) for i in compared] for row in got] == [[_typed(row[i]) for i in compared]
                                                                    for row in expected]


def test_a_text_literal_compared_with_a_moment_is_that_moment_as_postgres_reads_it(session, postgres):
    """`ts > '2024-01-01'` compares moments, not the store's text with the literal's (which put midnight after
    '2024-01-01' and never equal to it), in WHERE, IN and BETWEEN, for every kind of moment; so do two moments of
    different kinds (`ts = p` never held: the store's texts of the two kinds differ)."""
    table = ("CREATE TABLE m (id int NOT NULL, ts timestamptz, p timestamp, d date, PRIMARY KEY (id)); "
             "INSERT INTO m VALUES (1, '2024-01-01', '2024-01-01', '2024-01-01'), "
             "(2, '2024-01-01 10:30:00.5+02', '2024-01-01 10:30', '2024-01-02'), (3, NULL, NULL, NULL)")
    query = ("SELECT id, ts > '2024-01-01', ts = '2024-01-01', ts = '2024-01-01 08:30:00.5', p = '2024-01-01 10:30', "
             "d = '2024-1-2', date_trunc('hour', ts) = '2024-01-01 08:00:00+00', ts IN ('2024-01-01', 'epoch'), "
             "p BETWEEN '2024-01-01 00:00:01' AND '2024-01-01 11:00', d < '2024-01-02', id + 1 IN ('2', ' 3 '), "
             # moments of two kinds, compared as the wider: a date as its midnight, a timestamp as UTC's
             "ts = p, d = p, d = ts, ts = DATE '2024-01-01', p < d, ts IN (p, d), p BETWEEN d AND ts, "
             "d + 1 = p + INTERVAL '1 day' FROM m ORDER BY id")
    session.execute(table)
    expected = _postgres_rows(postgres, table, "m", query)
    assert session.execute(query)[-1].rows == expected
    assert expected[0][1:3] == (False, True) and expected[0][12:15] == (True, True, True)  # SQLite's text: the
    # first two the other way round, the last three never


def test_a_numeric_computed_from_a_column_compares_as_a_number_as_postgres_compares_it(session, postgres):
    """max(n), coalesce(n, 0), nullif(n, 0), a CASE over n: the store's text of a numeric, which no column's
    collation compares once computed, is compared as a number (SQLite put any text above any number: HAVING
    max(n) > 50 held for every group, and 1 / nullif(n, 0) divided by zero)."""
    table = ("CREATE TABLE p (g int NOT NULL, n numeric(10,2), m numeric(10,2)); INSERT INTO p VALUES "
             "(1, 9.00, 1), (1, 10.00, 2), (2, 100.00, 3), (2, 2.50, 4), (3, 0.00, 0), (4, NULL, NULL)")
    queries = ["SELECT g, max(n) > 50, 2 > min(n), max(n) BETWEEN 5 AND 20, max(n) > max(m) FROM p GROUP BY g "
               "ORDER BY g",
               "SELECT g, nullif(n, 0), 1 / nullif(n, 0) > 0.2, coalesce(n, 0) > 5, least(n, m), 10 IN (n), "
               "greatest(n, 2) = 2, CASE WHEN g = 1 THEN n END >= 10 FROM p ORDER BY g, n"]
    session.execute(table)
    for query in queries:
        expected = [tuple(str(v) if isinstance(v, Decimal) else v for v in row)
                    for row in _postgres_rows(postgres, table, "p", query)]
        assert session.execute(query)[-1].rows == expected, query


def test_a_view_keeps_what_its_operands_types_decide_as_postgres_does(session, postgres):
    """A materialized view's stored query is written with its operands' types, so a truth value's text and a
    double's rounding are Postgres's in the view too, not SQLite's 1 and half away from zero."""
    query = ("SELECT id, ok::text AS t, 'x' || (x > 3) AS s, round(x::float8 / 2) AS r, (x::float8 / 2)::int AS i "
             "FROM t")
    session.execute(NAMING_TABLE + f"; CREATE MATERIALIZED VIEW typed_v AS {query}")
    expected = _postgres_rows(postgres, NAMING_TABLE, "t", query + " ORDER BY id")
    assert session.execute("SELECT * FROM typed_v ORDER BY id")[-1].rows == expected
    assert expected[0][1:3] == ("true", "xfalse")  # what SQLite alone would have written as '1' and 'x0'


def test_a_numeric_shows_the_digits_of_its_scale_as_postgres_does(session, postgres):
    """A numeric whose scale Postgres's rules fix is shown, cast to text and written beside || with that many
    digits, where SQLite computes a double (2.5 for 2.50, 1.0 for 1); one of scale 0 is an integer."""
    query = ("SELECT id, x * 1.50, x::numeric(10,2) + 1, round(x / 3.0, 2), floor(1.5), trunc(1.256, 2), "
             "round(155.5, -1), trunc(-1.5), 'n' || x * 1.50, floor(x * 1.5)::text, (x * 0.10)::text, "
             "abs(-x::numeric(5,1)), sign(x) / 3 FROM t ORDER BY id")
    session.execute(NAMING_TABLE)
    expected = _as_shown(_postgres_rows(postgres, NAMING_TABLE, "t", query))
    assert session.execute(query)[-1].rows == expected
    assert expected[0][1:3] == ("4.50", "4.00")  # what SQLite alone would have shown as 4.5 and 4.0


def test_update_and_delete_read_other_tables_and_write_what_postgres_writes(session, postgres):
    """UPDATE's SET and WHERE and DELETE's WHERE may read other tables through subqueries, correlated too, and
    write a truth value's or a double's text as Postgres does: the table afterwards is Postgres's."""
    statements = [
        "CREATE TABLE w (id int NOT NULL, x int, PRIMARY KEY (id))",
        "INSERT INTO w VALUES (1, 30), (3, 10), (4, NULL)",
        "UPDATE t SET g = ok::text || '/' || (x::float8 / 2)::text WHERE id IN (SELECT id FROM w)",
        "UPDATE t AS a SET x = (SELECT max(w.x) FROM w WHERE w.id = a.id) + a.id",
        "DELETE FROM t WHERE id NOT IN (SELECT id FROM w WHERE x IS NOT NULL) AND EXISTS (SELECT 1 FROM w)",
    ]
    session.execute(NAMING_TABLE + "; " + "; ".join(statements))
    with postgres.admin() as admin:
        admin.execute("DROP TABLE IF EXISTS t, w")
        for statement in NAMING_TABLE.split("; ") + statements:
            admin.execute(statement)
        expected = admin.execute("SELECT id, g, x FROM t ORDER BY id").fetchall()
    assert session.execute("SELECT id, g, x FROM t ORDER BY id")[-1].rows == expected
    assert expected[0] == (1, "true/1.5", 31)  # what SQLite alone would have written as '1/1.5'


@pytest.mark.parametrize("sql", [
    "SELECT id FROM t WHERE x = 'abc'",
    "SELECT id + ' 1.5 ' FROM t",
    "SELECT id FROM t WHERE id + 1 = g",
    "SELECT x * (SELECT g FROM t WHERE id = 1) FROM t",
    "SELECT ok IS TRUE, x IS TRUE FROM t",
    "SELECT id FROM t WHERE doc ->> 'k' = 1",
    "SELECT id FROM t WHERE x = '99999999999'",  # out of the integer's range (SQLite compared it as a number)
    "SELECT id FROM t WHERE ok = g",  # a truth value, a moment, a uuid or a jsonb beside text that is no literal
    "SELECT id FROM t WHERE g < now()::timestamp",
    # what takes a truth value takes no number (SQLite read one as whether it is not 0)
    "SELECT id FROM t WHERE x + 1",
    "SELECT id FROM t WHERE ok AND x",
    "SELECT NOT x FROM t",
    "SELECT CASE WHEN x THEN 1 END FROM t",
    "SELECT g FROM t GROUP BY g HAVING count(*)",
    "SELECT 1 FROM t a JOIN t b ON a.x",
    # Postgres's % and mod take no floating-point number
    "SELECT x % 2.5::float8 FROM t",
    "SELECT mod(x::real, 2) FROM t",
    # a truth value is no number, nor a moment (SQLite read true as 1, and now()'s text as its year)
    "SELECT x < NOT ok FROM t",
    "SELECT (x > 1) * 2 FROM t",
    "SELECT id FROM t WHERE ok + ok",
    "SELECT now()::timestamp * 2 FROM t",
    "SELECT id FROM t WHERE now()::date > x",
    "SELECT now()::date + id::bigint FROM t",  # a date moves by an integer's days, not a bigint's
    # so in IN, BETWEEN and IS DISTINCT FROM, at the predicate's first keyword, by the comparison Postgres names
    "SELECT id FROM t WHERE x NOT IN (ok, true)",
    "SELECT x NOT BETWEEN ok AND 3 FROM t",
    "SELECT x BETWEEN 1 AND ok FROM t",
    "SELECT id FROM t WHERE x NOT IN (SELECT ok FROM t)",
    "SELECT x IS DISTINCT FROM ok FROM t",
    "SELECT id FROM t WHERE now()::timestamp IN (SELECT x FROM t)",
    "SELECT ok + NULL FROM t",
    # || joins text: of two values neither of which is text there is no such operator (SQLite joined their text)
    "SELECT x || 1 FROM t",
    "SELECT x || ok FROM t",
    # CASE x WHEN v compares x = v, refused at that WHEN
    "SELECT CASE ok WHEN true THEN 1 WHEN 1 THEN 2 END FROM t",
    "SELECT CASE x WHEN 1 THEN 1 WHEN g THEN 2 END FROM t",
])
def test_a_number_beside_text_and_is_true_of_a_number_are_refused_as_postgres_refuses_them(session, postgres, sql):
    """Postgres refuses these where it plans the query (SQLite would read the text's leading digits, or 0, and
    take any value for IS TRUE); icesink says what Postgres says, pointing at the operand or operator."""
    refused = _refused_over_naming_table(session, postgres, sql)
    expected = refused.diag.message_primary
    error = error_of(session, sql)
    assert error.message.removesuffix(" of type") == expected.split(" (")[0].removesuffix(" of type")
    assert error.position.column == int(refused.diag.statement_position)


@pytest.mark.parametrize("kind", ["numeric", "double precision", "real", "date"])
def test_text_cast_to_a_number_or_a_date_is_read_by_its_input_as_postgres_reads_it(session, postgres, kind):
    """SQLite's CAST read text that is no number as 0 (`g::numeric` was 0.0 for 'a', 'NaN'::float8 too), and its
    DATE() as NULL (' 2024-01-05 '::date, 'epoch'::date); the type's input refuses it in Postgres's words, and reads
    what Postgres reads."""
    sql = f"SELECT id, g::{kind} FROM t"
    refused = _refused_over_naming_table(session, postgres, sql)
    assert error_of(session, sql).message == refused.diag.message_primary == \
        f'invalid input syntax for type {kind}: "a"'
    read = ("SELECT (x::text)::numeric / 2, ' 1.5 '::float8 * 2, '-inf'::real, ' 2024-01-05 '::date::text, "
            "'epoch'::date::text FROM t ORDER BY id")
    assert rows(session, read) == _postgres_rows(postgres, NAMING_TABLE, "t", read)


def _refused_over_naming_table(session, postgres, sql: str):
    """Postgres's error for `sql` over NAMING_TABLE's table, which the session has too."""
    import psycopg

    session.execute(NAMING_TABLE)
    with postgres.admin() as admin:
        admin.execute("DROP TABLE IF EXISTS t")
        for statement in NAMING_TABLE.split("; "):
            admin.execute(statement)
        with pytest.raises(psycopg.Error) as refused:
            admin.execute(sql)
    return refused.value


@pytest.mark.parametrize("sql", [
    "SELECT x * 1000000000 FROM t",
    "SELECT -x - 2147483647 FROM t",
    "SELECT id + 9223372036854775807::bigint FROM t",
    "SELECT x::smallint * 20000::smallint FROM t",
])
def test_integer_arithmetic_past_its_type_is_refused_as_postgres_refuses_it(session, postgres, sql):
    """SQLite's integers go to 64 bits, and past them to doubles: an integer output kept to its type's range, as
    Postgres keeps it, is what a sink can write to the Iceberg column of that type."""
    refused = _refused_over_naming_table(session, postgres, sql)
    assert error_of(session, sql).message == refused.diag.message_primary


def _postgres_rows(postgres, tables: str, names: str, query: str) -> list[tuple]:
    """Postgres's answer to `query` over the tables the statements `tables` make (`names` dropped first)."""
    with postgres.admin() as admin:
        admin.execute(f"DROP TABLE IF EXISTS {names}")
        for statement in tables.split("; "):
            admin.execute(statement)
        return admin.execute(query).fetchall()


def _typed(value):
    """A value with its Python type, an array's elements each with theirs (True is not 1 here)."""
    return [_typed(v) for v in value] if isinstance(value, list) else (type(value).__name__, value)


def _as_shown(rows: list[tuple]) -> list[tuple]:
    """Postgres's rows as icesink's Python API gives them: a numeric as its text, one of scale 0 computed as an
    integer (sum(bigint) stays a number)."""
    return [tuple((int(v) if v.as_tuple().exponent == 0 else str(v)) if isinstance(v, Decimal) else v for v in row)
            for row in rows]


FRUIT_TABLE = ("CREATE TABLE fruit (g int NOT NULL, s text, n numeric(10,2), ok boolean, PRIMARY KEY (g)); "
               "INSERT INTO fruit VALUES (1, 'Apple', 2.50, true), (2, 'apple', 10.00, false), "
               "(3, 'Äpfel', 100.25, NULL), (4, 'straße', 9.99, true)")


@pytest.mark.parametrize("query", [
    # LIKE tells capitals apart; ILIKE, upper and lower change every letter, one character for one (not ß to SS)
    "SELECT g, s LIKE 'a%', s ILIKE 'a%', s ILIKE 'ä%', upper(s), lower(s), 'ÄB' ILIKE 'äb' FROM fruit ORDER BY g",
    # a predicate compared keeps its parentheses (SQLite bound `ok = s IS NULL` as `(ok = s) IS NULL`)
    "SELECT g, ok = (s IS NULL), ok = (s IS DISTINCT FROM 'Apple'), (s LIKE 'a%') = ok, (g IN (1, 2)) <> ok "
    "FROM fruit ORDER BY g",
    # a numeric computed from a column orders as a number, by its expression, the output's name or its position
    "SELECT g, max(n) AS m FROM fruit GROUP BY g ORDER BY m, g",
    "SELECT g, max(n) FROM fruit GROUP BY g ORDER BY 2 DESC",
    "SELECT g, nullif(n, 9.99) FROM fruit ORDER BY nullif(n, 9.99) DESC",
    "SELECT g, sum(n) OVER (ORDER BY g) AS running FROM fruit ORDER BY running DESC",
    # casts to numeric round half away from zero by the value's digits; floor of an integer is a double
    "SELECT g, n::numeric(10), (-n)::numeric(4), (n + 0.005)::numeric(10,2), n::numeric(10,1)::text, trunc(g) / 2, "
    "floor(g) / 2, round(g, 1), trunc(n, 30), round(n, 1001) = n FROM fruit ORDER BY g",
    # % of numerics by their decimal digits (1.25 % 0.01 was 0.00999…), of the larger scale
    "SELECT g, n % 3, n % 0.3, 1.25 % 0.01, n % -3 FROM fruit ORDER BY g",
    # a set operation's numeric column compares and orders its values as numbers, stored or computed
    "SELECT n FROM fruit UNION SELECT n * 1 FROM fruit ORDER BY 1",
    "SELECT n FROM fruit INTERSECT SELECT n + 0 FROM fruit ORDER BY 1",
    "SELECT count(DISTINCT x), min(x) FROM (SELECT n AS x FROM fruit UNION ALL SELECT n * 1 FROM fruit) s",
    # a subquery's column has the scale of what it computes, not its type's declared one (floor(n) showed 2.00)
    "SELECT x, y, z FROM (SELECT floor(n) AS x, n * 2 AS y, coalesce(n, 1.55) AS z, g FROM fruit) s ORDER BY g",
    "SELECT * FROM (SELECT g, n * 2 AS m FROM fruit UNION SELECT g, n FROM fruit) s ORDER BY g, m",
    # date_trunc of a date is a timestamptz; a date among timestamps (coalesce, CASE, greatest) is one
    "SELECT date_trunc('month', DATE '2024-01-15')::text, date_trunc('month', DATE '2024-01-15') = DATE "
    "'2024-01-01', coalesce(DATE '2024-01-02', TIMESTAMP '2024-01-01 10:00')::text, CASE WHEN g > 1 THEN DATE "
    "'2024-01-02' ELSE TIMESTAMP '2024-01-01 10:00' END::text FROM fruit ORDER BY g",
    # ON and IS DISTINCT FROM compare as WHERE's comparisons do (a computed numeric as a number)
    "SELECT x.g FROM fruit x JOIN fruit y ON x.g = y.g AND coalesce(x.n, 0) > 50 ORDER BY 1",
    "SELECT g FROM fruit WHERE coalesce(n, 0) IS NOT DISTINCT FROM 2.5 ORDER BY 1",
    # EXISTS's and IN's queries compare as any query's: a computed numeric as a number, a date as its midnight
    "SELECT g FROM fruit WHERE 100 IN (SELECT floor(max(n)) FROM fruit) AND 'true' AND CASE WHEN 'yes' THEN true END "
    "ORDER BY g",
    "SELECT g FROM fruit f WHERE EXISTS (SELECT 1 FROM fruit o WHERE o.g = f.g AND coalesce(o.n, 0) > 50) ORDER BY g",
    "SELECT g, DATE '2024-01-02' + g IN (SELECT TIMESTAMP '2024-01-03 00:00') FROM fruit ORDER BY g",
    # min and max of a computed numeric compare numbers (SQLite's text put '9.99' above '100.25'); a date part
    # divides as a number of a floating type; an integer literal past 32 bits is a bigint
    "SELECT max(CASE WHEN ok THEN n ELSE n END), min(CASE WHEN g > 0 THEN n END), count(*) / extract(doy FROM DATE "
    "'2024-03-10') > 0.05, mod(2.5, floor(sum(3000000000))) = 2.5 FROM fruit",
    # a stored numeric among computed numbers is one value with an equal one (coalesce(n, 0) made two groups of 0)
    "SELECT (SELECT count(*) FROM (SELECT DISTINCT CASE WHEN g > 1 THEN n ELSE 10 END FROM fruit) s), (SELECT "
    "count(*) FROM (SELECT coalesce(CASE WHEN g > 1 THEN n END, 10) AS c FROM fruit GROUP BY 1) s), (SELECT "
    "count(*) FROM (SELECT DISTINCT coalesce(CASE WHEN g = 2 THEN n END, g * 5) FROM fruit) s), "
    "coalesce(max(g), 0.5) FROM fruit",
    # NOT after an operator takes what follows it (a syntax error here before)
    "SELECT g, ok = NOT g > 2, g > 2 IS DISTINCT FROM NOT EXISTS (SELECT 1 FROM fruit WHERE g > 3) FROM fruit "
    "ORDER BY g",
    # a computed numeric SQLite holds as an integer divides as a numeric, however deep in the expression
    "SELECT g, (extract(day FROM DATE '2024-01-15') + g) / 2 > 8, (g::numeric + 0) / 4 = g / 4.0, sum(g::numeric) "
    "OVER (ORDER BY g) / 4 > 2 FROM fruit ORDER BY g",
    # an IN list takes its left side's collation alone: a computed numeric there never equalled a column's text
    "SELECT g, coalesce(n, 0) IN (n, 1), coalesce(n, 0) NOT IN (n) FROM fruit ORDER BY g",
    # LIKE's escape is a backslash, as Postgres's; a comparison compared keeps its parentheses
    "SELECT g, s LIKE 'a\\_b', replace(s, 'p', '_') LIKE '_\\_%', (ok <> false) > ok FROM fruit ORDER BY g",
    # a subquery's computed numeric compares and orders as a number
    "SELECT c FROM (SELECT max(n) AS c FROM fruit GROUP BY g) d WHERE c > 50 ORDER BY c DESC",
    # a set operation's column is of its queries' common type: an integer among doubles, a date among timestamps
    "SELECT x / 2, (SELECT TIMESTAMP '2024-01-02 10:00' UNION ALL SELECT DATE '2024-01-02' ORDER BY 1 LIMIT 1)::text "
    "FROM (SELECT g AS x FROM fruit UNION ALL SELECT 2.5::float8) d ORDER BY 1",
    # IS DISTINCT FROM a subquery (a traceback); a whole number cut or rounded still divides as a numeric
    "SELECT g, n IS DISTINCT FROM (SELECT max(n) FROM fruit), n::numeric(10) / 4 = 0.75, trunc(n, 0) / 4 = 0.5, "
    "round(n, -1) / 4 = 2.5 FROM fruit ORDER BY g",
    # % of numerics past a double's digits
    "SELECT 1e30 % 7, 2.50 % 0.000000000000000000000000001 = 0",
    # a NULL beside a stored numeric column keeps its digits
    "SELECT n FROM fruit UNION ALL SELECT NULL ORDER BY 1",
    # a negative interval's days, as Postgres writes them
    "SELECT (TIMESTAMP '2024-01-01' - TIMESTAMP '2024-01-02')::text, (TIMESTAMP '2024-01-01' - TIMESTAMP "
    "'2024-01-02 01:00')::text",
    # mod of integers is an integer, which divides as one (a sum of them divided as a numeric, 1.25); mod and div of
    # numerics keep mod's scale and div's none
    "SELECT g, 5 / sum(mod(g, 3)) OVER (), mod(n, 2), div(n, 2), power(g, 2) / 8, mod('7', g) + 1 FROM fruit "
    "ORDER BY g",
    # text cast to numeric keeps its digits (' 3 '::numeric was shown 3.0, '1.50'::numeric 1.5)
    "SELECT ' 3 '::numeric, '1.50'::numeric, concat(' 3 '::numeric, 'x', '1.50'::numeric), '2.500'::numeric || 'x', "
    "'1e3'::numeric, '1.123456789012'::numeric",
    # EXTRACT gives a second's and an epoch's microseconds, a millisecond's 3 digits, a date's none; date_part is a
    # double (they were all shown as SQLite's double)
    "SELECT g, extract(epoch FROM TIMESTAMP '2024-01-01 00:00:30.5') + g, extract(second FROM TIMESTAMPTZ "
    "'2024-01-01 00:00:30+00'), extract(millisecond FROM TIMESTAMP '2024-01-01 00:00:30.5'), extract(epoch FROM "
    "DATE '2024-01-01'), extract(day FROM TIMESTAMP '2024-01-01 10:00'), date_part('second', TIMESTAMP "
    "'2024-01-01 00:00:30.5') FROM fruit ORDER BY g",
    # an ordered aggregate, or string_agg, in ORDER BY alone groups the query as one (SQLite: misuse of aggregate)
    "SELECT 1, 'n' FROM fruit ORDER BY length(string_agg(s, ',' ORDER BY s)), string_agg(s, ',')",
    # replace of a NULL is NULL; concat writes each value as its type's output does (a boolean's t and f)
    "SELECT g, replace(s, '', NULL), replace(s, 'p', ''), concat(s, ok, n, NULL), concat_ws('-', ok, n * 2) "
    "FROM fruit ORDER BY g",
])
def test_text_order_and_numbers_answer_as_postgres_answers(session, postgres, query):
    """Each was answered otherwise by SQLite's own semantics: a LIKE that ignored capitals, upper() of ASCII letters
    alone, a predicate's parentheses dropped, max(n) ordered as text (10.00 before 2.50), n::numeric(10) truncated
    (2 for 2.50), floor(7) / 2 as 3, round(n, 1001) a traceback, replace(s, '', NULL) as s, concat's 1 for true."""
    session.execute(FRUIT_TABLE)
    assert session.execute(query)[-1].rows == _as_shown(_postgres_rows(postgres, FRUIT_TABLE, "fruit CASCADE", query))


def test_a_view_divides_integers_as_postgres_does(session, postgres):
    """`/` of integers in a view truncates, as in a SELECT: the view's stored query had cast the dividend to double
    precision (sqlglot's division), so that `g / 2` was 0.5 in a column of type integer."""
    query = "SELECT g, g / 2 AS h, -g / 2 AS m, count(*) OVER () / 3 AS c, sum(g) OVER (ORDER BY g) / 2 AS s FROM fruit"
    session.execute(f"{FRUIT_TABLE}; CREATE MATERIALIZED VIEW dv AS {query}")
    expected = _as_shown(_postgres_rows(postgres, FRUIT_TABLE, "fruit CASCADE", query + " ORDER BY g"))
    assert session.execute("SELECT * FROM dv ORDER BY g")[-1].rows == expected
    assert expected[0][1:3] == (0, 0)


def test_a_views_columns_of_math_functions_are_of_postgres_types(session, postgres):
    """A view's column of mod, div or a mathematical function is of the type Postgres gives it, which a sink writes
    as the Iceberg column's: these had no type (`unknown`), and a sink wrote them as strings."""
    query = ("SELECT mod(g, 3) AS m, mod(g::bigint, 2) AS mb, mod(n, 2) AS mn, div(n, 2) AS d, sqrt(g) AS r, "
             "sqrt(n) AS rn, power(g, 2) AS p, exp(n::float8) AS e, log(2, g) AS lb, pi() AS pi, degrees(g) AS deg "
             "FROM fruit")
    session.execute(f"{FRUIT_TABLE}; CREATE MATERIALIZED VIEW mv AS {query}")
    expected = _postgres_rows(postgres, f"{FRUIT_TABLE}; CREATE VIEW mv AS {query}", "fruit CASCADE",
                              "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                              "'mv'::regclass AND attnum > 0 ORDER BY attnum")
    assert [(name, kind) for name, _, kind in session.execute("SHOW COLUMNS FROM mv")[-1].rows] == expected
    assert ("r", "double precision") in expected


def test_a_view_shows_the_scale_its_query_computes_as_postgres_does(session, postgres):
    """A materialized view's numeric columns keep the scale of what its query computes, read by SELECT * and by
    a view over it: floor(n) of a numeric(10,2) showed 2.00 (its type's declared scale), n * 2 the double 5.0."""
    view = ("CREATE MATERIALIZED VIEW fv AS SELECT g, floor(n) AS x, n * 2 AS y, round(n, 1) AS r, n FROM fruit; "
            "CREATE MATERIALIZED VIEW fw AS SELECT * FROM fv")
    session.execute(f"{FRUIT_TABLE}; {view}")
    expected = _as_shown(_postgres_rows(postgres, f"{FRUIT_TABLE}; {view}", "fruit CASCADE",
                                        "SELECT * FROM fw ORDER BY g"))
    assert session.execute("SELECT * FROM fw ORDER BY g")[-1].rows == expected
    assert expected[0][1:4] == (2, "5.00", "2.5")
    # a view's computed numeric compares and orders as a number (SQLite compared max(n)'s text)
    query = "SELECT g, top FROM fm WHERE top > 9.995 ORDER BY top DESC"
    view = "CREATE MATERIALIZED VIEW fm AS SELECT g, max(n) AS top FROM fruit GROUP BY g"
    session.execute(view)
    assert session.execute(query)[-1].rows == _as_shown(_postgres_rows(
        postgres, f"{FRUIT_TABLE}; {view}", "fruit CASCADE", query)) == [(3, "100.25"), (2, "10.00")]


def test_a_cast_past_a_numeric_precision_is_refused_as_postgres_refuses_it(session, postgres):
    """`n::numeric(4,2)` of 100.25 has more digits before the point than the type takes: Postgres says so where
    SQLite's cast kept them all."""
    import psycopg

    query = "SELECT n::numeric(4,2) FROM fruit"
    with pytest.raises(psycopg.Error) as refused:
        _postgres_rows(postgres, FRUIT_TABLE, "fruit CASCADE", query)
    session.execute(FRUIT_TABLE)
    assert error_of(session, query).message == refused.value.diag.message_primary == "numeric field overflow"
    assert session.execute("SELECT n::numeric(5,2) FROM fruit ORDER BY g")[-1].rows[2] == ("100.25",)


def test_a_set_operation_of_integer_and_numeric_columns_and_an_ordered_series_answer_as_postgres_does(session,
                                                                                                      postgres):
    """An integer column beside a stored numeric one in UNION: SQLite never took 2 equal to '2.00' (three rows
    came out four); ORDER BY the output of a series in the select list (no such function, once ordered as a
    number)."""
    table = "CREATE TABLE mix (i int, n numeric(10,2)); INSERT INTO mix VALUES (2, 2.00), (10, 3.00)"
    session.execute(table)
    query = "SELECT count(*) FROM (SELECT i FROM mix UNION SELECT n FROM mix) s"
    assert session.execute(query)[-1].rows == _postgres_rows(postgres, table, "mix", query) == [(3,)]
    query = "SELECT generate_series(1, 3) * 1.5 AS x ORDER BY x DESC"
    expected = [tuple(float(v) for v in row) for row in _postgres_rows(postgres, table, "mix", query)]
    assert session.execute(query)[-1].rows == expected == [(4.5,), (3.0,), (1.5,)]


@pytest.mark.parametrize("query", [
    "SELECT g, s, count(*) FROM fruit GROUP BY s",  # Postgres's rule: a grouped query outputs its groups
    "SELECT s FROM fruit GROUP BY s ORDER BY g",
    "SELECT s, count(*) FROM fruit GROUP BY 1 HAVING max(n) > 1 AND g > 1",
    "SELECT max(n), s FROM fruit",
    "SELECT s, sum(g) OVER () FROM fruit GROUP BY s",
    "SELECT upper(s), count(*) FROM fruit GROUP BY lower(s)",
    "SELECT n AS s, count(*) FROM fruit GROUP BY s",  # an input column comes before an output's name
    "SELECT f.* FROM fruit f JOIN fruit o ON o.g = f.g GROUP BY o.g",
    # a constant of GROUP BY or ORDER BY is a position among the outputs, or refused
    "SELECT s FROM fruit GROUP BY s, 2.5",
    "SELECT s FROM fruit ORDER BY 'x'",
    "SELECT s, g FROM fruit ORDER BY -1",
    "SELECT s FROM fruit GROUP BY 0",
    "SELECT s FROM fruit UNION SELECT s FROM fruit ORDER BY 2",
    # a subquery reading an ungrouped column of the query around it
    "SELECT s, (SELECT count(*) FROM fruit o WHERE o.n < f.n) FROM fruit f GROUP BY s",
    "SELECT s FROM fruit f GROUP BY s HAVING EXISTS (SELECT 1 FROM fruit o WHERE o.n < f.n)",
    "SELECT s FROM fruit f GROUP BY s ORDER BY (SELECT count(*) FROM fruit o WHERE o.n < f.n)",
    "SELECT s, (SELECT max(o.g + f.g) FROM fruit o) FROM fruit f GROUP BY s",  # the subquery's aggregate
    "SELECT s FROM fruit ORDER BY -(-0.5)",
    "SELECT s FROM fruit GROUP BY -0",
])
def test_an_ungrouped_column_and_a_constant_to_group_or_order_by_are_refused_as_postgres_refuses_them(session, postgres, query):
    """SQLite took an ungrouped column's value from any row of the group, which each batch of a view's sink could
    take differently; Postgres and Materialize refuse it, and icesink says what Postgres says, where it says it.
    So with constants SQLite ordered or grouped by (`ORDER BY 'x'`), or positions it named otherwise."""
    import psycopg

    with pytest.raises(psycopg.Error) as refused:
        _postgres_rows(postgres, FRUIT_TABLE, "fruit CASCADE", query)
    session.execute(FRUIT_TABLE)
    error = error_of(session, query)
    assert error.message == refused.value.diag.message_primary
    assert error.position.column == int(refused.value.diag.statement_position)
    view = error_of(session, f"CREATE MATERIALIZED VIEW v AS {query}")
    assert view.message == refused.value.diag.message_primary


@pytest.mark.parametrize("query", [
    "SELECT upper(f.s) AS u, count(*) FROM fruit f GROUP BY u ORDER BY upper(s)",
    "SELECT s || '!', count(*) FROM fruit GROUP BY s ORDER BY 1",
    "SELECT * FROM fruit GROUP BY g ORDER BY g",  # the primary key grouped decides the other columns
    "SELECT s, sum(count(*)) OVER () FROM fruit GROUP BY s ORDER BY s",
    # an expression grouped by, however written: a type by another of its names, a name quoted, TRIM as btrim
    "SELECT g::int4, \"upper\"(s), trim(s), count(*) FROM fruit GROUP BY g::integer, upper(s), trim(both from s) "
    "ORDER BY 1",
    "SELECT s FROM fruit f GROUP BY s HAVING EXISTS (SELECT 1 FROM fruit o WHERE o.s = f.s AND o.g > 1) ORDER BY s",
    "SELECT s, (SELECT max(o.g) FROM fruit o WHERE o.s = f.s) FROM fruit f GROUP BY s ORDER BY s",
    "SELECT s, (SELECT max(f.g) FROM fruit o WHERE o.g = 1) FROM fruit f GROUP BY s ORDER BY s",  # the query's
    # the aggregate of the nearest query whose columns it reads, a query further out's read too
    "SELECT (SELECT count(*) FROM fruit q1 GROUP BY q1.s HAVING (SELECT max(q1.g + q0.g) FROM fruit i LIMIT 1) > 0 "
    "ORDER BY 1 LIMIT 1) FROM fruit q0 ORDER BY 1",
    # HAVING, or an aggregate in ORDER BY, groups every row as one (SQLite: `HAVING clause on a non-aggregate query`)
    "SELECT 'some' AS rows, 2 FROM fruit HAVING count(*) > 3",
    "SELECT 'many' FROM fruit HAVING count(*) > 30",
    "SELECT 'none' FROM fruit WHERE g > 10 HAVING true",
    "SELECT 1 + 1 FROM fruit ORDER BY max(n)",
])
def test_a_grouped_query_postgres_answers_is_answered_alike(session, postgres, query):
    session.execute(FRUIT_TABLE)
    assert session.execute(query)[-1].rows == _as_shown(_postgres_rows(postgres, FRUIT_TABLE, "fruit CASCADE",
                                                                       query))
