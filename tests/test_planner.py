"""The planner's rules, each with the exact message a user sees."""
import pytest

import icesink
from tests.conftest import error_of, rows
from tests.servers import Postgres

SETUP = """
CREATE SECRET pw AS 'hunter2';
CREATE CONNECTION aws TO AWS (ACCESS KEY ID = 'AKIDEXAMPLE', SECRET ACCESS KEY = SECRET pw, REGION = 'us-east-1');
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE = 'local');
CREATE CONNECTION pg TO POSTGRES (HOST '127.0.0.1', PORT {port}, DATABASE 'shop', USER 'repl', PASSWORD SECRET pw);
CREATE TABLE orders (id bigint NOT NULL, customer text, price double precision, tags text[], doc jsonb,
                     placed_at timestamp with time zone, day date, PRIMARY KEY (id));
CREATE TABLE events (kind text, at timestamp, _mz_diff int);
CREATE MATERIALIZED VIEW per_customer AS SELECT customer, count(*) AS n, sum(price) AS total FROM orders GROUP BY customer;
CREATE SOURCE auction FROM LOAD GENERATOR AUCTION FOR ALL TABLES;
CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink') FOR TABLES (public.customers);
"""
SINK = "CREATE SINK {name} FROM {input} INTO ICEBERG CATALOG CONNECTION {conn} (NAMESPACE 'shop', TABLE '{table}') {rest}"


def sink(rest, input="orders", conn="lake", name="s"):
    """One sink per table: a sink named sN writes table tN."""
    return SINK.format(name=name, input=input, conn=conn, rest=rest, table="t" + name[1:])


@pytest.fixture(scope="module")
def upstream():
    """A Postgres source reads its tables' columns and keys from the upstream when it is created."""
    server = Postgres().start()
    with server.admin() as admin:
        admin.execute("CREATE ROLE repl LOGIN REPLICATION PASSWORD 'hunter2'")
        admin.execute("CREATE DATABASE shop OWNER repl")
    with server.admin("shop") as admin:
        admin.execute("CREATE TABLE customers (id int PRIMARY KEY, name text); GRANT SELECT ON customers TO repl;"
                      "CREATE PUBLICATION icesink FOR TABLE customers")
    yield server
    server.stop()


@pytest.fixture
def planned(session, upstream):
    session.execute(SETUP.format(port=upstream.port))
    return session


CASES = [
    # COMMIT INTERVAL
    (sink("KEY (id) MODE UPSERT"), "an Iceberg sink must specify COMMIT INTERVAL: add WITH (COMMIT INTERVAL = '10s')"),
    (sink("KEY (id) MODE UPSERT WITH (SNAPSHOT = false)"), "unknown sink option SNAPSHOT; the options are: COMMIT INTERVAL, WRITE MODE, FOLD THRESHOLD, FOLD SMALL FILES, FOLD ROWS PER BATCH"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL = '500ms')"), "COMMIT INTERVAL must be at least 1 second, not '500ms'"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL = '10 parsecs')"),
     "COMMIT INTERVAL: '10 parsecs' is not an interval such as '500ms', '10s', '1min', '5 minutes' or '1h'"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL = 10)"), "sink option COMMIT INTERVAL takes a string"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s', COMMIT INTERVAL '2s')"), "sink option COMMIT INTERVAL given more than once"),
    # modes and KEY
    (sink("KEY (id) WITH (COMMIT INTERVAL '1s')"), "an Iceberg sink must specify MODE UPSERT or MODE APPEND"),
    (sink("KEY (id) ENVELOPE DEBEZIUM WITH (COMMIT INTERVAL '1s')"), "ENVELOPE DEBEZIUM is not supported by Iceberg sinks; use MODE UPSERT or MODE APPEND"),
    (sink("MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "MODE UPSERT requires a KEY: add KEY (column, …) before the mode"),
    (sink("KEY (id) MODE APPEND WITH (COMMIT INTERVAL '1s')"), "MODE APPEND does not take a KEY: every change is appended as a row with _mz_diff and _mz_timestamp"),
    (sink("KEY (nope) MODE UPSERT WITH (COMMIT INTERVAL '1s')"),
     "KEY column \"nope\" does not exist in 'orders'; its columns are: id, customer, price, tags, doc, placed_at, day"),
    (sink("KEY (price) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s')"),
     "KEY column \"price\" cannot be part of a key: a floating-point type (double precision) compares inexactly"),
    (sink("KEY (tags) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s')"),
     "KEY column \"tags\" cannot be part of a key: a list cannot be compared as a key"),
    (sink("KEY (doc) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s')"),
     "KEY column \"doc\" cannot be part of a key: a jsonb value cannot be compared as a key"),
    (sink("KEY (id, id) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "KEY column \"id\" is listed twice"),
    (sink("KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "KEY (customer) is not known to be unique in 'orders'; its unique keys are: (id)"),
    (sink("KEY (n) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="per_customer"),
     "KEY (n) is not known to be unique in 'per_customer'; its unique keys are: (customer)"),
    (sink("KEY (kind) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="events"), "KEY (kind) is not known to be unique in 'events'"),
    (sink("MODE APPEND WITH (COMMIT INTERVAL '1s')", input="events"), "MODE APPEND adds the column _mz_diff, which 'events' already has"),
    # inputs and connections
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="nothing"), "unknown source, table or materialized view 'nothing'"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="pg"), "'pg' is a Postgres connection, not a source, table or materialized view"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="auction"),
     "source 'auction' has one subsource per upstream table; sink one of them: organizations, users, accounts, auctions, bids"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", conn="aws"), "connection 'aws' is an AWS connection, not an Iceberg catalog connection"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", conn="missing"), "unknown connection 'missing'"),
    (sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", conn="pw"), "'pw' is a secret, not a connection"),
    ("CREATE SINK s FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')",
     "an Iceberg sink needs TABLE: INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'ns', TABLE 't')"),
    ("CREATE SINK s FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 't') USING AWS CONNECTION lake KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')",
     "connection 'lake' is an Iceberg catalog connection, not an AWS connection"),
    # PARTITION BY
    (sink("KEY (id) PARTITION BY (nope) MODE UPSERT WITH (COMMIT INTERVAL '1s')"),
     "PARTITION BY column \"nope\" does not exist in the sink's input; columns are: id, customer, price, tags, doc, placed_at, day"),
    (sink("KEY (id) PARTITION BY (hour(day)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "partition transform hour() does not apply to column \"day\" of type date"),
    (sink("KEY (id) PARTITION BY (year(customer)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "partition transform year() does not apply to column \"customer\" of type text"),
    (sink("KEY (id) PARTITION BY (bucket(price)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "bucket() needs a number and a column, as in bucket(16, price)"),
    (sink("KEY (id) PARTITION BY (bucket(4, price)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "partition transform bucket() does not apply to column \"price\" of type double precision"),
    (sink("KEY (id) PARTITION BY (truncate(0, customer)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "truncate() needs a positive number, not 0"),
    (sink("KEY (id) PARTITION BY (day(3, placed_at)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "day() takes only a column"),
    (sink("KEY (id) PARTITION BY (week(placed_at)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"),
     "unknown partition transform week(); expected one of identity, year, month, day, hour, bucket(n, col), truncate(w, col)"),
    (sink("KEY (id) PARTITION BY (tags) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "partition transform identity() does not apply to column \"tags\" of type text[]"),
    (sink("KEY (id) PARTITION BY (day(placed_at)) MODE UPSERT PARTITION BY (id) WITH (COMMIT INTERVAL '1s')"), "PARTITION BY is given twice; give it once, before or after the mode"),
    (sink("KEY (id) PARTITION BY (day(placed_at), days(placed_at)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"), "PARTITION BY lists the same field twice"),
    ("CREATE SOURCE c2 FROM LOAD GENERATOR COUNTER (AS OF 9, UP TO 5)", "AS OF (9) must not be past UP TO (5)"),
    ("CREATE SOURCE c2 FROM LOAD GENERATOR COUNTER (AS OF 1.5)", "AS OF must be a whole number, not 1.5"),
    # connections
    ("CREATE CONNECTION a2 TO AWS (SECRET ACCESS KEY = SECRET pw)", "SECRET ACCESS KEY requires ACCESS KEY ID"),
    ("CREATE CONNECTION a2 TO AWS (ACCESS KEY ID = 'AKID')", "ACCESS KEY ID requires SECRET ACCESS KEY"),
    ("CREATE CONNECTION a2 TO AWS (ACCESS KEY ID = 'AKID', SECRET ACCESS KEY = 'plain')", "AWS connection option SECRET ACCESS KEY takes SECRET name"),
    ("CREATE CONNECTION a2 TO AWS (ASSUME ROLE SESSION NAME = 'x')", "ASSUME ROLE SESSION NAME requires ASSUME ROLE ARN"),
    ("CREATE CONNECTION a2 TO AWS (ACCESS KEY ID = 'A', SECRET ACCESS KEY = SECRET pw, ASSUME ROLE ARN = 'arn:x')", "ACCESS KEY ID and ASSUME ROLE ARN cannot be used together"),
    ("CREATE CONNECTION a2 TO AWS (REGION = 'x', REGION = 'y')", "AWS connection option REGION given more than once"),
    # Materialize's rules (its planner's messages)
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 's3tablesrest', AWS CONNECTION = aws, WAREHOUSE = 'arn:aws:s3tables:eu-west-1:123456789012:bucket/b')",
     "the S3 Tables bucket arn:aws:s3tables:eu-west-1:123456789012:bucket/b is in region eu-west-1, but AWS connection 'aws' is in region us-east-1: they must be in the same region"),
    ("CREATE CONNECTION a2 TO AWS (REGION = 'us-east-1')", "an AWS connection must specify either ASSUME ROLE ARN or ACCESS KEY ID and SECRET ACCESS KEY"),
    ("CREATE CONNECTION a2 TO AWS (ENDPOINT = 'http://127.0.0.1:9000')", "an AWS connection must specify either ASSUME ROLE ARN or ACCESS KEY ID and SECRET ACCESS KEY"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = 'u', ACCESS DELEGATION = 'remote-signing')", "Iceberg catalog connection option ACCESS DELEGATION must be one of 'vended-credentials', not 'remote-signing'"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (URL = 'http://x')", "an Iceberg catalog connection needs CATALOG TYPE ('rest', 's3tablesrest', 'glue' or 'local')"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'hive')", "Iceberg catalog connection option CATALOG TYPE must be one of 'rest', 's3tablesrest', 'glue', 'local', not 'hive'"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'rest')", "CATALOG TYPE 'rest' requires URL"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 's3tablesrest', AWS CONNECTION = aws)", "CATALOG TYPE 's3tablesrest' requires WAREHOUSE"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 's3tablesrest', WAREHOUSE = 'arn:b')", "CATALOG TYPE 's3tablesrest' requires AWS CONNECTION"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'glue')", "CATALOG TYPE 'glue' requires AWS CONNECTION"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'glue', AWS CONNECTION = pg, WAREHOUSE = 's3://b/p')", "connection 'pg' is a Postgres connection, not an AWS connection"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'glue', AWS CONNECTION = aws)", "CATALOG TYPE 'glue' requires WAREHOUSE (the s3:// location new tables go under)"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'glue', AWS CONNECTION = aws, WAREHOUSE = 'lake')", "CATALOG TYPE 'glue' needs WAREHOUSE 's3://bucket/path'"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'local', URL = 'http://x')", "URL does not apply to CATALOG TYPE 'local'"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'local', TOKEN = SECRET pw)", "TOKEN applies only to CATALOG TYPE 'rest', not 'local'"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = 'u', TOKEN = SECRET pw, CREDENTIAL = SECRET pw)", "CREDENTIAL and TOKEN cannot be used together"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = 'u', SCOPE = 'all')", "SCOPE requires CREDENTIAL (the OAuth2 client credentials flow)"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = 'u', TOKEN = SECRET nope)", "unknown secret 'nope'"),
    ("CREATE CONNECTION c2 TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = 'u', TOKEN = SECRET lake)", "'lake' is an Iceberg catalog connection, not a secret"),
    ("CREATE CONNECTION p2 TO POSTGRES (HOST 'db')", "a Postgres connection needs USER"),
    ("CREATE CONNECTION p2 TO POSTGRES (HOST 'db', USER 'u', PORT 99999)", "PORT must be a number from 1 to 65535, not 99999"),
    ("CREATE CONNECTION p2 TO POSTGRES (HOST 'db', USER 'u', SSL MODE 'sometimes')",
     "Postgres connection option SSL MODE must be one of 'disable', 'require', 'verify-ca', 'verify-full', not 'sometimes'"),
    ("CREATE CONNECTION p2 TO POSTGRES (HOST 'db', USER 'u', PASSWORD 'plain')", "Postgres connection option PASSWORD takes SECRET name"),
    ("CREATE CONNECTION p2 TO POSTGRES (HOST 'db', USER 'u') WITH (VALIDATE = maybe)", "connection option VALIDATE takes true or false"),
    ("CREATE CONNECTION p2 TO POSTGRES (HOST 'db', USER 'u') WITH (RETRIES = 3)", "unknown connection option RETRIES; the options are: VALIDATE"),
    ("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE = 'local')", "connection 'lake' already exists"),
    ("CREATE CONNECTION mz_sinks TO ICEBERG CATALOG (CATALOG TYPE = 'local')", "the name 'mz_sinks' is taken by the system view mz_catalog.mz_sinks"),
    ("CREATE TABLE mz_sink_statuses (a int)", "the name 'mz_sink_statuses' is taken by the system view mz_internal.mz_sink_statuses"),
    ("CREATE CONNECTION other.public.c TO ICEBERG CATALOG (CATALOG TYPE = 'local')", "unknown schema 'other.public': objects live in materialize.public"),
    # sources and tables
    ("CREATE SOURCE g FROM LOAD GENERATOR MARKETING", "unknown load generator MARKETING; expected COUNTER, AUCTION, KEY VALUE or TPCH"),
    ("CREATE SOURCE g FROM LOAD GENERATOR AUCTION", "LOAD GENERATOR AUCTION produces several tables: add FOR ALL TABLES"),
    ("CREATE SOURCE g FROM LOAD GENERATOR COUNTER (SCALE FACTOR = 1)", "SCALE FACTOR applies only to LOAD GENERATOR TPCH"),
    ("CREATE SOURCE g FROM LOAD GENERATOR COUNTER (TICK INTERVAL = 'soon')",
     "TICK INTERVAL: 'soon' is not an interval such as '500ms', '10s', '1min', '5 minutes' or '1h'"),
    ("CREATE SOURCE g FROM LOAD GENERATOR COUNTER (UP TO = 1.5)", "UP TO must be a whole number, not 1.5"),
    ("CREATE SOURCE g FROM LOAD GENERATOR COUNTER (SPEED = 3)",
     "unknown load generator option SPEED; the options are: TICK INTERVAL, SCALE FACTOR, UP TO, AS OF, SEED, MAX CARDINALITY, KEYS, BATCH SIZE"),
    ("CREATE SOURCE g FROM LOAD GENERATOR AUCTION FOR ALL TABLES", "subsource 'organizations' already exists"),
    ("CREATE SOURCE p FROM POSTGRES CONNECTION pg (TEXT COLUMNS (a.b))", "a Postgres source needs PUBLICATION 'name'"),
    ("CREATE SOURCE p FROM POSTGRES CONNECTION lake (PUBLICATION 'x')", "connection 'lake' is an Iceberg catalog connection, not a Postgres connection"),
    ("CREATE SOURCE p FROM POSTGRES CONNECTION pg (PUBLICATION 'x') FOR TABLES (a.t, b.t)", "two tables would both become subsource 't'; name one with AS"),
    ("CREATE TABLE x (a int, a text)", "column \"a\" specified more than once"),
    ("CREATE TABLE x (a int, PRIMARY KEY (b))", "PRIMARY KEY column \"b\" does not exist"),
    ("CREATE TABLE x (a strang)", "type \"strang\" does not exist"),
    ("CREATE TABLE x (a numeric(50, 2))", "numeric precision 50 and scale 2 are out of range (precision 1 to 38, scale 0 to precision)"),
    ("CREATE TABLE x FROM SOURCE auction (REFERENCE lots)", "load generator source 'auction' has no table 'lots'; its tables are: organizations, users, accounts, auctions, bids"),
    ("CREATE TABLE x FROM SOURCE orders (REFERENCE a)", "'orders' is a table, not a source"),
    ("CREATE MATERIALIZED VIEW v AS SELECT nope FROM orders", "column \"nope\" does not exist"),
    ("CREATE MATERIALIZED VIEW v AS SELECT id FROM orders o JOIN orders p ON o.id = p.id", "column reference \"id\" is ambiguous"),
    ("CREATE MATERIALIZED VIEW v AS SELECT * FROM missing", "unknown source, table or materialized view 'missing'"),
    ("SELECT ARRAY[1] || 2", "integer[] || integer is not supported yet: || joins text"),
    ("SELECT doc || '{\"b\": 2}' FROM orders", "jsonb || jsonb is not supported yet: || joins text"),
    # a view's columns are named apart, as Postgres and Materialize require (SELECT * from it had shown "id:1")
    ("CREATE MATERIALIZED VIEW v AS SELECT id, customer AS id FROM orders", "column \"id\" specified more than once"),
    ("CREATE MATERIALIZED VIEW v AS SELECT max(id), max(price) FROM orders", "column \"max\" specified more than once"),
    ("CREATE MATERIALIZED VIEW v AS SELECT * FROM ICEBERG lake.a.b", "a materialized view cannot read an ICEBERG table"),
    # session settings
    ("SHOW SINKZ", "unknown configuration parameter \"sinkz\"; to list objects, SHOW SINKS"),
    ("SET cluster = 'x'", "unknown configuration parameter \"cluster\"; known: enable_iceberg_sink, enable_default_connection_validation, enable_connection_validation_syntax, enable_create_table_from_source, enable_load_generator_counter, enable_load_generator_key_value, enable_collection_partition_by, enable_alter_table_add_column"),
    ("ALTER SYSTEM SET enable_iceberg_sink = 'sometimes'", "parameter \"enable_iceberg_sink\" takes true or false, not sometimes"),
    # ALTER / DROP
    ("ALTER SINK nothing SET (COMMIT INTERVAL = '1s')", "unknown sink 'nothing'"),
    ("ALTER CONNECTION lake SET (URL = 'x')", "URL does not apply to CATALOG TYPE 'local'"),
    ("ALTER CONNECTION pg SET (PORT = 99999)", "PORT must be a number from 1 to 65535, not 99999"),
    ("ALTER CONNECTION aws RESET (ACCESS KEY ID)", "SECRET ACCESS KEY requires ACCESS KEY ID"),
    ("ALTER CONNECTION aws DROP (ACCESS KEY ID, SECRET ACCESS KEY)", "an AWS connection must specify either ASSUME ROLE ARN or ACCESS KEY ID and SECRET ACCESS KEY"),
    ("ALTER CONNECTION pg RESET (NOPE)", "unknown Postgres connection option NOPE; the options are: HOST, PORT, DATABASE, USER, PASSWORD, SSL MODE, SSL CERTIFICATE AUTHORITY, SSL CERTIFICATE, SSL KEY, AWS CONNECTION"),
    ("ALTER TABLE orders RENAME TO orders2 WITH (VALIDATE = false)", "WITH (…) applies only to ALTER CONNECTION … SET/RESET"),
    ("ALTER CONNECTION lake AS 'x'", "ALTER CONNECTION … AS applies only to secrets"),
    ("ALTER TABLE orders RENAME TO lake", "connection 'lake' already exists"),
    ("DROP SINK orders", "'orders' is a table, not a sink"),
    ("DROP TABLE nothing", "unknown table 'nothing'"),
    ("DROP SECRET pw", "cannot drop secret 'pw': connection 'aws' depends on it"),
    ("DROP SECRET pw RESTRICT", "cannot drop secret 'pw': connection 'aws' depends on it"),
    ("DROP TABLE orders", "cannot drop table 'orders': materialized view 'per_customer' depends on it"),
    # queries and writes
    ("SELECT * FROM mz_internal.mz_sinks", "relation \"mz_internal.mz_sinks\" does not exist; mz_sinks is in mz_catalog"),
    ("SELECT * FROM nowhere", "relation \"nowhere\" does not exist"),
    ("SELECT * FROM pw", "'pw' is a secret, which cannot be queried"),
    ("INSERT INTO per_customer VALUES (1)", "'per_customer' is a materialized view, not a table"),
    ("INSERT INTO orders (nope) VALUES (1)", "column \"nope\" of table 'orders' does not exist"),
    ("INSERT INTO orders (id, customer) VALUES (1)", "INSERT has 1 values where 2 are expected"),
    ("UPDATE orders SET nope = 1", "column \"nope\" of table 'orders' does not exist"),
    # a table's primary key decides its other columns in a GROUP BY (Postgres), a load generator's key does not
    # (Materialize has no such rule; Spark, which answers a query over load generators, had refused it in its words)
    ("SELECT id, seller, count(*) FROM auctions GROUP BY id",
     "column \"auctions.seller\" must appear in the GROUP BY clause or be used in an aggregate function"),
    ("CREATE MATERIALIZED VIEW v AS SELECT a.id, a.item, o.customer FROM auctions a JOIN orders o ON o.id = a.id "
     "GROUP BY a.id, o.id", "column \"a.item\" must appear in the GROUP BY clause or be used in an aggregate function"),
    # qualified column references: the schema and database must be the relation's, an alias takes none
    ("SELECT mz_internal.mz_sinks.id FROM mz_sinks",
     "invalid reference to \"mz_internal.mz_sinks.id\": the query reads mz_sinks from materialize.mz_catalog, not mz_internal"),
    ("SELECT other.public.orders.id FROM orders",
     "invalid reference to \"other.public.orders.id\": the query reads orders from materialize.public, not other.public"),
    ("SELECT public.o.id FROM orders o",
     "invalid reference to \"public.o.id\": \"o\" is an alias or a subquery, which takes no schema; write o.id"),
    ("SELECT public.orders.* FROM orders o",
     "invalid reference to \"public.orders.*\": no relation \"orders\" in FROM; the query calls it \"o\""),
    ("INSERT INTO orders (id) SELECT mz_catalog.orders.id + 1 FROM orders",
     "invalid reference to \"mz_catalog.orders.id\": the query reads orders from materialize.public, not mz_catalog"),
    ("CREATE MATERIALIZED VIEW v AS SELECT x.orders.customer FROM orders",
     "invalid reference to \"x.orders.customer\": the query reads orders from materialize.public, not x"),
]


@pytest.mark.parametrize("sql, message", CASES, ids=[m[:60] for _, m in CASES])
def test_rule(planned, sql, message):
    before = rows(planned, "SELECT count(*) FROM mz_objects")
    error = error_of(planned, sql)
    assert error.message == message, error.format()
    assert error.position is not None and error.position.statement == 1
    assert rows(planned, "SELECT count(*) FROM mz_objects") == before  # nothing half-created


def test_columns_are_qualified_by_schema_and_database(planned):
    """As in Materialize's own tests: `schema.relation.column` and `database.schema.relation.column` everywhere a
    column is named, `schema.relation.*` too."""
    planned.execute("INSERT INTO orders (id, customer) VALUES (1, 'ann'), (2, 'bob');"
                    "INSERT INTO orders (id, customer) SELECT materialize.public.orders.id + 10, public.orders.customer"
                    " FROM public.orders WHERE public.orders.id = 2;"
                    "CREATE MATERIALIZED VIEW named AS SELECT public.orders.id FROM materialize.public.orders")
    assert rows(planned, "SELECT materialize.public.orders.id, public.orders.customer FROM orders "
                         "ORDER BY public.orders.id") == [(1, "ann"), (2, "bob"), (12, "bob")]
    assert rows(planned, "SELECT public.orders.* FROM orders WHERE id = 1")[0][:2] == (1, "ann")
    assert rows(planned, "SELECT id FROM orders WHERE EXISTS (SELECT 1 FROM orders p WHERE p.id = "
                         "public.orders.id + 10)") == [(2,)]  # the outer query's orders, from a subquery
    assert rows(planned, "SELECT mz_catalog.mz_tables.name, mz_catalog.mz_columns.name FROM mz_catalog.mz_columns "
                         "JOIN mz_tables ON mz_catalog.mz_columns.id = materialize.mz_catalog.mz_tables.id "
                         "WHERE mz_tables.name = 'events' ORDER BY position") == [
        ("events", "kind"), ("events", "at"), ("events", "_mz_diff")]


def test_errors_point_at_the_offending_element(planned):
    error = error_of(planned, sink("KEY (id) PARTITION BY (hour(day)) MODE UPSERT WITH (COMMIT INTERVAL '1s')"))
    assert error.position.line_text[error.position.caret - 1:].startswith("hour(day)")
    error = error_of(planned, "SELECT 1;\nCREATE TABLE x (\n  a int,\n  b strang\n)")
    assert (error.position.line, error.position.column, error.position.statement) == (4, 5, 2)


def test_an_s3_tables_bucket_is_reached_in_its_own_region(planned):
    """An AWS connection without a REGION reaches an S3 Tables bucket through the bucket's region, which its ARN
    names: its endpoint, and the region requests are signed for."""
    from icesink.catalog_connections import connector_for

    planned.execute("""CREATE CONNECTION anywhere TO AWS (ACCESS KEY ID = 'AKIDEXAMPLE', SECRET ACCESS KEY = SECRET pw);
        CREATE CONNECTION tables TO ICEBERG CATALOG (CATALOG TYPE = 's3tablesrest', AWS CONNECTION = anywhere,
          WAREHOUSE = 'arn:aws:s3tables:eu-west-1:123456789012:bucket/b') WITH (VALIDATE = false)""")
    properties = connector_for(planned.catalog.get("tables"), planned.executor.secret_value,
                               planned.catalog).catalog_properties()
    assert properties["uri"] == "https://s3tables.eu-west-1.amazonaws.com/iceberg"
    assert properties["rest.signing-region"] == properties["s3.region"] == "eu-west-1"


def test_a_partition_field_may_not_take_a_columns_name(planned):
    """Iceberg names `day(at)` at_day: a column of that name would collide with it in the table (Materialize refuses
    it too), and only the derived name, not the column, would tell which is which."""
    planned.execute("CREATE TABLE readings (id bigint NOT NULL, at timestamp, at_day date, PRIMARY KEY (id))")
    error = error_of(planned, sink("KEY (id) PARTITION BY (day(at)) MODE UPSERT WITH (COMMIT INTERVAL '1s')",
                                   input="readings"))
    assert error.message == ("PARTITION BY day(at) makes the partition field at_day, which is also a column of "
                             "'readings': Iceberg needs partition fields and columns to have different names")
    assert error.position.line_text[error.position.caret - 1:].startswith("day(at)")
    planned.execute(sink("KEY (id) PARTITION BY (at_day, month(at)) MODE UPSERT WITH (COMMIT INTERVAL '1s')",
                         input="readings"))


def test_key_rules_accept_what_is_unique(planned):
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')"))
    planned.execute(sink("KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1min')", input="per_customer", name="s2"))
    planned.execute(sink("KEY (customer) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1 minute')", name="s3"))
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1h')", input="bids", name="s4"))
    # a Postgres subsource's primary key, read from the upstream when the source was created
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '10s')", input="customers", name="s5"))
    planned.execute(sink("PARTITION BY (bucket(16, _mz_diff), day(placed_at)) MODE APPEND WITH (COMMIT INTERVAL '2s')", name="s6"))
    got = rows(planned, "SELECT name, envelope_type FROM mz_sinks ORDER BY name")
    assert got == [("s", "upsert"), ("s2", "upsert"), ("s3", "upsert"), ("s4", "upsert"), ("s5", "upsert"), ("s6", "append")]
    intervals = [planned.catalog.get(name).descriptor.commit_interval_ms for name, _ in got]
    assert intervals == [1000, 60_000, 60_000, 3_600_000, 10_000, 2000]


def test_if_not_exists_and_if_exists(planned):
    results = planned.execute("CREATE SECRET IF NOT EXISTS pw AS 'other'; DROP SINK IF EXISTS ghost; "
                              "CREATE TABLE IF NOT EXISTS orders (x int); ALTER SINK IF EXISTS ghost RENAME TO g2")
    assert [r.notices for r in results] == [["secret 'pw' already exists, skipping"], ["sink 'ghost' does not exist, skipping"],
                                            ["table 'orders' already exists, skipping"], ["sink 'ghost' does not exist, skipping"]]
    assert planned.secrets.get(planned.catalog.get("pw").id) == "hunter2"


def test_a_view_depends_on_a_table_it_reads_only_in_a_subquery(session):
    session.execute("CREATE TABLE a (id int); CREATE TABLE b (id int); CREATE TABLE c (id int);"
                    "CREATE MATERIALIZED VIEW v AS SELECT * FROM a WHERE id IN (SELECT id FROM b);"
                    "CREATE MATERIALIZED VIEW w AS SELECT (SELECT max(id) FROM c) AS m FROM a")
    for table, view in (("b", "v"), ("c", "w")):
        assert error_of(session, f"DROP TABLE {table}").message == \
            f"cannot drop table '{table}': materialized view '{view}' depends on it"
    assert session.execute("DROP TABLE c CASCADE")[0].notices == ["also dropped: materialized view 'w'"]


def test_a_series_in_a_select_list_keys_nothing(session):
    """A row per value of the series: the rows' own key no longer keys them, through a subquery either."""
    session.execute("CREATE TABLE t (id int NOT NULL, PRIMARY KEY (id)); CREATE MATERIALIZED VIEW v AS SELECT s.id, "
                    "s.n FROM (SELECT id, generate_series(1, 2) AS n FROM t) s")
    assert session.catalog.get("v").descriptor.unique_keys == ()


def test_drop_cascade_drops_dependents_and_restrict_keeps_everything(planned):
    planned.execute(sink("KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="per_customer"))
    result = planned.execute("DROP TABLE orders CASCADE")[0]
    assert result.notices == ["also dropped: sink 's', materialized view 'per_customer'"]
    names = {n for (n,) in rows(planned, "SELECT name FROM mz_objects")}
    assert not names & {"orders", "per_customer", "s"}
    history = rows(planned, "SELECT status FROM mz_internal.mz_sink_status_history")
    assert history == [("dropped",)]
    planned.execute("DROP SOURCE auction")  # subsources go with their source
    assert rows(planned, "SHOW SUBSOURCES") == [("customers", "subsource")]
    planned.execute("DROP SECRET pw CASCADE")
    assert rows(planned, "SHOW CONNECTIONS") == [("lake", "iceberg-catalog")]
    assert rows(planned, "SHOW SOURCES") == []  # the Postgres source went with its connection


def test_rename_keeps_dependents_working(planned):
    planned.execute(sink("KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="per_customer"))
    planned.execute("ALTER TABLE orders RENAME TO purchases; ALTER MATERIALIZED VIEW per_customer RENAME TO \"Per Customer\";"
                    "ALTER CONNECTION lake RENAME TO warehouse; ALTER SECRET pw RENAME TO password")
    view_sql = rows(planned, "SHOW CREATE MATERIALIZED VIEW \"Per Customer\"")[0][1]
    assert view_sql == ("CREATE MATERIALIZED VIEW \"Per Customer\" AS SELECT customer, COUNT(*) AS n, SUM(price) AS total "
                        "FROM purchases GROUP BY customer")
    sink_sql = rows(planned, "SHOW CREATE SINK s")[0][1]
    assert sink_sql.startswith("CREATE SINK s FROM \"Per Customer\" INTO ICEBERG CATALOG CONNECTION \"warehouse\" (")  # a keyword: quoted
    assert 'PASSWORD = SECRET "password"' in rows(planned, "SHOW CREATE CONNECTION pg")[0][1]
    # the renamed objects still plan: their stored SQL parses and binds
    planned.execute("CREATE MATERIALIZED VIEW again AS SELECT * FROM \"Per Customer\"")
    planned.execute("DROP SECRET password CASCADE")


def test_a_view_answers_the_same_after_what_it_reads_or_itself_is_renamed(session):
    """A view's stored query is written with its operands' types (a truth value's text, a date compared as a
    timestamp); a rename of what it reads, or of the view, keeps them."""
    session.execute("CREATE TABLE t (id int, ok boolean, d date, ts timestamp); "
                    "INSERT INTO t VALUES (1, true, '2024-01-01', '2024-01-01 00:00:00'); "
                    "CREATE MATERIALIZED VIEW v AS SELECT DISTINCT ON (id) *, ok::text AS o, ts = d AS same FROM t "
                    "ORDER BY id")
    before = rows(session, "SELECT * FROM v")
    assert before == [(1, True, "2024-01-01", "2024-01-01 00:00:00", "true", True)]
    session.execute("ALTER TABLE t RENAME TO t2")
    assert rows(session, "SELECT * FROM v") == before
    session.execute("ALTER MATERIALIZED VIEW v RENAME TO w")
    assert rows(session, "SELECT * FROM w") == before
    # EXTRACT, which the stored query holds as date_part, keeps its type
    session.execute("CREATE MATERIALIZED VIEW parts AS SELECT id, extract(day FROM ts) AS d, "
                    "extract(second FROM ts) % 60 AS s FROM t2")
    columns = rows(session, "SHOW COLUMNS FROM parts")
    session.execute("ALTER TABLE t2 RENAME TO t3")
    assert rows(session, "SHOW COLUMNS FROM parts") == columns and columns[1][2] == "numeric"


def test_alter_sink_commit_interval(planned):
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL = '10s')"))
    planned.execute("ALTER SINK s SET (COMMIT INTERVAL = '1min')")
    assert planned.catalog.get("s").descriptor.commit_interval_ms == 60_000
    assert rows(planned, "SHOW CREATE SINK s")[0][1].endswith("WITH (COMMIT INTERVAL = '1min')")
    assert error_of(planned, "ALTER SINK s RESET (COMMIT INTERVAL)").message == (
        "an Iceberg sink must have a COMMIT INTERVAL; change it with ALTER SINK … SET (COMMIT INTERVAL = '…')")
    assert error_of(planned, "ALTER SINK s SET (COMMIT INTERVAL = '100ms')").message == "COMMIT INTERVAL must be at least 1 second, not '100ms'"


def test_settings(planned):
    planned.execute("SET enable_default_connection_validation = off")
    result = planned.execute("CREATE CONNECTION r TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://127.0.0.1:1')")[0]
    assert result.notices == []
    planned.execute("SET enable_default_connection_validation TO DEFAULT")
    error = error_of(planned, "CREATE CONNECTION r2 TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://127.0.0.1:1')")
    assert error.message == "connection 'r2': cannot reach the Iceberg catalog at http://127.0.0.1:1"
    assert planned.catalog.get("r2") is None


def test_materializes_feature_flags_are_recorded_and_shown(session, data_dir):
    """Scripts written for Materialize turn its feature flags on first: icesink records them (ALTER SYSTEM for every
    session, SET for this one) and SHOW answers with the value; an unknown one is refused."""
    assert rows(session, "SHOW enable_create_table_from_source") == [("true",)]
    session.execute("ALTER SYSTEM SET enable_create_table_from_source = false; ALTER SYSTEM SET enable_iceberg_sink = on;"
                    "SET enable_load_generator_counter TO off")
    assert rows(session, "SHOW enable_create_table_from_source") == [("false",)]
    assert rows(session, "SHOW enable_load_generator_counter") == [("false",)]
    assert session.execute("SHOW enable_iceberg_sink")[0].columns == ["enable_iceberg_sink"]
    with icesink.connect(data_dir) as other:  # ALTER SYSTEM lasts; SET was this session's
        assert rows(other, "SHOW enable_create_table_from_source") == [("false",)]
        assert rows(other, "SHOW enable_load_generator_counter") == [("true",)]
    assert error_of(session, "SHOW enable_nonsense").message.startswith(
        'unknown configuration parameter "enable_nonsense"; known: enable_iceberg_sink')
    assert error_of(session, "ALTER SYSTEM SET enable_nonsense = true").message.startswith(
        'unknown configuration parameter "enable_nonsense"')


def test_a_table_from_a_source_of_one_table_needs_no_reference(planned):
    """As in Materialize: the source's one table is implied, and the catalog keeps the statement with it named."""
    planned.execute("CREATE SOURCE shop2 FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink');"
                    "CREATE TABLE customers_here FROM SOURCE shop2")
    assert rows(planned, "SHOW CREATE TABLE customers_here") == [
        ("customers_here", "CREATE TABLE customers_here FROM SOURCE shop2 (REFERENCE = public.customers)")]
    assert rows(planned, "SHOW COLUMNS FROM customers_here") == [("id", 0, "integer"), ("name", 1, "text")]
    planned.execute("CREATE SOURCE ticker FROM LOAD GENERATOR COUNTER; CREATE TABLE ticks FROM SOURCE ticker")
    assert rows(planned, "SHOW COLUMNS FROM ticks") == [("counter", 0, "bigint")]
    assert rows(planned, "SHOW CREATE TABLE ticks") == [("ticks", "CREATE TABLE ticks FROM SOURCE ticker")]
    error = error_of(planned, "CREATE TABLE which FROM SOURCE auction")
    assert error.message == ("source 'auction' has 5 tables (accounts, auctions, bids, organizations, users): name "
                             "one with (REFERENCE …)")


def test_show_create_is_read_as_a_relation(planned):
    """Materialize's scripts read a statement's text with `SELECT … FROM (SHOW CREATE …)`."""
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')"))
    assert rows(planned, "SELECT name, create_sql LIKE 'CREATE SINK s FROM orders%' FROM (SHOW CREATE SINK s)") == [
        ("s", 1)]
    assert rows(planned, "SELECT c.name FROM (SHOW REDACTED CREATE CONNECTION pg) c JOIN mz_connections m "
                         "ON c.name = m.name") == [("pg",)]
    assert error_of(planned, "SELECT * FROM (SHOW CREATE SINK nope)").message == "unknown sink 'nope'"
    assert error_of(planned, "CREATE MATERIALIZED VIEW v AS SELECT * FROM (SHOW CREATE SINK s)").message == (
        "a materialized view cannot read SHOW CREATE: it shows the catalog as it is, not a relation that changes")


def test_alter_connection_is_checked_and_validated_as_a_new_one(planned, upstream):
    """A change that does not validate leaves the connection as it was; WITH (VALIDATE = false) takes it as it is;
    the secrets it names become what it depends on."""
    error = error_of(planned, "ALTER CONNECTION pg SET (PORT = 1)")
    assert error.message.startswith("Postgres connection 'pg': cannot reach 127.0.0.1:1"), error.message
    assert f"PORT = {upstream.port}" in rows(planned, "SHOW CREATE CONNECTION pg")[0][1]
    planned.execute("CREATE SECRET other AS 'hunter2';"
                    "ALTER CONNECTION pg SET (PORT = 1, PASSWORD = SECRET other) WITH (VALIDATE = false)")
    assert "PORT = 1," in rows(planned, "SHOW CREATE CONNECTION pg")[0][1]
    assert error_of(planned, "DROP SECRET other").message == "cannot drop secret 'other': connection 'pg' depends on it"
    planned.execute(f"ALTER CONNECTION pg SET (PORT = {upstream.port})")  # validated: reachable again
    assert rows(planned, "VALIDATE CONNECTION pg") == []


def test_validation(planned, tmp_path):
    assert planned.execute("VALIDATE CONNECTION lake")[0].rows == []
    assert planned.execute("VALIDATE CONNECTION pg")[0].rows == []
    planned.execute("CREATE CONNECTION pg2 TO POSTGRES (HOST 'db', USER 'repl') WITH (VALIDATE = false)")
    error = error_of(planned, "VALIDATE CONNECTION pg2")
    assert error.message == "Postgres connection 'pg2': cannot reach db:5432: unknown host 'db'"
    error = error_of(planned, "CREATE CONNECTION r TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://x') WITH (VALIDATE = true)")
    assert error.message == "connection 'r': cannot reach the Iceberg catalog at http://x"
    blocked = tmp_path / "file"
    blocked.write_text("")
    error = error_of(planned, f"CREATE CONNECTION bad TO ICEBERG CATALOG (CATALOG TYPE 'local', WAREHOUSE '{blocked}/wh')")
    assert error.message == f"connection 'bad': cannot write to the warehouse {blocked}/wh: Not a directory"
    assert rows(planned, "SELECT count(*) FROM mz_connections WHERE name IN ('r', 'bad')") == [(0,)]
    planned.execute(f"CREATE CONNECTION unchecked TO ICEBERG CATALOG (CATALOG TYPE 'local', WAREHOUSE '{blocked}/wh') WITH (VALIDATE = false)")


# ---------------------------------------------------------------- nonsense that used to be accepted silently
TARGET = "CREATE SINK n FROM orders INTO ICEBERG CATALOG CONNECTION lake ({target}) KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')"


@pytest.mark.parametrize("target, message", [
    ("NAMESPACE '', TABLE 't'", "NAMESPACE is empty: name the Iceberg namespace"),
    ("NAMESPACE 'shop', TABLE '  '", "TABLE is empty: name the Iceberg table"),
    ("NAMESPACE 'a..b', TABLE 't'", "NAMESPACE 'a..b' has an empty level"),
    ("NAMESPACE 'shop', TABLE 'a/b'", "TABLE 'a/b' contains '/', which an Iceberg catalog cannot hold in a name"),
    ("NAMESPACE 'shop', TABLE E'a\\tb'", "TABLE 'a\tb' contains U+0009"),
])
def test_iceberg_names_must_be_names(planned, target, message):
    error = error_of(planned, TARGET.format(target=target))
    assert error.message == message or error.message.startswith(message)


def test_a_nul_in_a_name_is_refused_where_it_is_written(planned):
    error = error_of(planned, TARGET.format(target="NAMESPACE 'shop', TABLE E'a\\0b'"))
    assert isinstance(error, icesink.ParseError) and "NUL character" in error.message


def test_two_sinks_cannot_write_one_table(planned):
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')"))
    error = error_of(planned, sink("KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="per_customer")
                     .replace("CREATE SINK s ", "CREATE SINK other "))
    assert error.message.startswith("sink 's' already writes Iceberg table shop.t in this catalog; two sinks on one "
                                    "table would fence each other out")
    # every 'local' connection shares the data directory's catalog
    planned.execute("CREATE CONNECTION lake2 TO ICEBERG CATALOG (CATALOG TYPE 'local', WAREHOUSE '/tmp/elsewhere')")
    assert "already writes" in error_of(planned, sink("KEY (id) MODE APPEND", conn="lake2", name="x")
                                        .replace("TABLE 'tx'", "TABLE 't'")).message
    planned.execute("DROP SINK s")
    planned.execute(sink("KEY (customer) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="per_customer"))


@pytest.mark.parametrize("interval, message", [
    ("'2 days'", "COMMIT INTERVAL must be at most 1 day, not '2 days'"),
    ("'1000h'", "COMMIT INTERVAL must be at most 1 day, not '1000h'"),
])
def test_commit_interval_has_a_ceiling(planned, interval, message):
    assert error_of(planned, sink(f"KEY (id) MODE UPSERT WITH (COMMIT INTERVAL {interval})")).message == message
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1 day')"))


@pytest.mark.parametrize("tick", ["'0s'", "'0ms'", "'0.1ms'"])
def test_tick_interval_must_be_positive(planned, tick):
    error = error_of(planned, f"CREATE SOURCE c FROM LOAD GENERATOR COUNTER (TICK INTERVAL {tick})")
    assert error.message.startswith("TICK INTERVAL must be at least 1 millisecond")


def test_iceberg_sinks_can_be_turned_off(planned):
    planned.execute("ALTER SYSTEM SET enable_iceberg_sink = off")
    error = error_of(planned, sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')"))
    assert error.message.startswith("Iceberg sinks are turned off: enable_iceberg_sink is false")
    planned.execute("ALTER SYSTEM SET enable_iceberg_sink = on")
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')"))


@pytest.mark.parametrize("warehouse", ["s3://bucket/wh", "gs://b", "https://example.com/wh", "file://s3://x", ""])
def test_a_local_warehouse_is_a_directory(planned, warehouse):
    error = error_of(planned, f"CREATE CONNECTION w TO ICEBERG CATALOG (CATALOG TYPE 'local', WAREHOUSE '{warehouse}')")
    assert error.message.startswith("a 'local' catalog keeps its warehouse in a directory of this machine")


def test_a_relative_local_warehouse_is_taken_in_the_data_directory(planned, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = planned.execute("CREATE CONNECTION w TO ICEBERG CATALOG (CATALOG TYPE 'local', WAREHOUSE 'wh')")[0]
    expected = str(planned.data_dir.absolute() / "wh")
    assert result.notices == [f"WAREHOUSE 'wh' is a relative path: it is taken in the data directory, as {expected}"]
    assert planned.catalog.get("w").descriptor.options.warehouse == expected
    assert (planned.data_dir / "wh").is_dir() and not (tmp_path / "wh").exists()


def test_rename_a_source_with_subsources(planned):
    """Each subsource's stored text names its source: it follows the rename and still reads back."""
    planned.execute("ALTER SOURCE auction RENAME TO bids_feed")
    assert rows(planned, "SHOW CREATE SOURCE bids")[0][1] == "CREATE SUBSOURCE bids FROM SOURCE bids_feed (REFERENCE = bids)"
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="bids"))
    planned.execute("DROP SOURCE bids_feed CASCADE")
    assert [name for name, _ in rows(planned, "SHOW SUBSOURCES")] == ["customers"]
    assert rows(planned, "SHOW SINKS") == []


def test_maps_ranges_and_unsigned_types_have_materializes_key_rules(planned):
    planned.execute("CREATE TABLE shapes (id uint8 NOT NULL, m map[text=>int], r int4range, l int list, "
                    "PRIMARY KEY (id))")
    assert rows(planned, "SHOW COLUMNS FROM shapes") == [
        ("id", 0, "uint8"), ("m", 1, "map[text=>integer]"), ("r", 1, "int4range"), ("l", 1, "integer[]")]
    for column, reason in (("m", "a map cannot be compared as a key"), ("l", "a list cannot be compared as a key"),
                           ("r", "a range is written as an Iceberg struct, which cannot be compared as a key")):
        error = error_of(planned, sink(f"KEY ({column}) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s')",
                                       input="shapes"))
        assert error.message == f"KEY column \"{column}\" cannot be part of a key: {reason}"
    planned.execute(sink("KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="shapes"))
    assert error_of(planned, "CREATE TABLE bad (m map[int=>text])").message == "a map's keys must be text, not int"
    planned.execute("CREATE TYPE point AS (x int, y int); CREATE TYPE ints AS LIST (ELEMENT TYPE = int4);"
                    "CREATE TABLE points (id int NOT NULL, p point, l ints, PRIMARY KEY (id))")
    assert rows(planned, "SHOW TYPES") == [("ints", "list"), ("point", "record")]
    assert rows(planned, "SHOW COLUMNS FROM points")[1:] == [("p", 1, 'record("x" integer,"y" integer)'),
                                                           ("l", 1, "integer[]")]
    error = error_of(planned, sink("KEY (p) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s')", input="points",
                                   name="s2"))
    assert error.message == "KEY column \"p\" cannot be part of a key: a record cannot be compared as a key"
    assert error_of(planned, "DROP TYPE point").message == "cannot drop type 'point': table 'points' depends on it"
    assert error_of(planned, "CREATE TYPE m AS MAP (KEY TYPE = int4, VALUE TYPE = int4)").message == (
        "a map's keys must be text, not integer")
    assert error_of(planned, "INSERT INTO points VALUES (1, ROW(1, 2, 3), NULL)").message == (
        "INSERT into table 'points', column \"p\": a record of 3 fields where its type has 2")


def test_added_columns_and_named_types_keep_the_sinks_rules(planned):
    planned.execute("CREATE TABLE log_src (ts timestamp, v int);"
                    + sink("MODE APPEND WITH (COMMIT INTERVAL '1s')", input="log_src", name="s3")
                    + "; " + sink("PARTITION BY (day(ts)) MODE APPEND WITH (COMMIT INTERVAL '1s')", input="log_src",
                                  name="s4"))
    assert error_of(planned, "ALTER TABLE log_src ADD COLUMN _mz_diff int").message == (
        "sink 's3': MODE APPEND adds the column _mz_diff, which 'log_src' already has")
    assert error_of(planned, "ALTER TABLE log_src ADD COLUMN ts_day date").message == (
        "sink 's4': PARTITION BY day(ts) makes the partition field ts_day, which is also a column of 'log_src': "
        "Iceberg needs partition fields and columns to have different names")
    planned.execute("CREATE TABLE spans (r int4range)")
    assert error_of(planned, sink("PARTITION BY (r) MODE APPEND WITH (COMMIT INTERVAL '1s')", input="spans",
                                  name="s5")).message == (
        'partition transform identity() does not apply to column "r" of type int4range')
    assert error_of(planned, "CREATE TYPE l AS LIST (ELEMENT TYPE = int4, ELEMENT TYPE = int8)").message == (
        "list type option ELEMENT TYPE given more than once")
    assert error_of(planned, "CREATE TYPE l AS LIST (ELEMENT TYPE = SECRET pw)").message.startswith(
        "list type option ELEMENT TYPE takes")
    assert error_of(planned, "CREATE TABLE bare (m map)").message == (
        "a map type names its keys' and values' types: map[text=>T]")


def test_a_view_whose_columns_are_not_known_yet_is_made(planned):
    """A view over a relation whose columns are not known when it is planned (a load generator source of several
    tables): made as before; the check that its columns are named apart had failed with a traceback."""
    planned.execute("CREATE MATERIALIZED VIEW over_source AS SELECT * FROM auction")
    assert rows(planned, "SELECT name FROM mz_materialized_views WHERE name = 'over_source'") == [("over_source",)]
