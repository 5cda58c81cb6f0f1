-- Statements drawn from Materialize's public documentation (materialize.com/docs) and its Iceberg sink tests
-- (github.com/MaterializeInc/materialize, test/iceberg/*.td), in the order a script would run them, adapted only
-- where they name hosts or credentials of Materialize's test rig. `-- source:` names where each group comes from
-- (and which class of issue 13 it covers); `-- refused:` says the message the next statement is refused with.
-- tests/test_materialize_corpus.py runs them in order in a fresh data directory.

-- source: test/iceberg/storage-provider.td (its catalogs are not reachable: validation off, as there)
ALTER SYSTEM SET enable_default_connection_validation = false;

-- source: test/iceberg/catalog.td
CREATE SECRET access_key_secret AS 'tdsecret';
CREATE CONNECTION aws_conn TO AWS (
    ACCESS KEY ID = 'tduser',
    SECRET ACCESS KEY = SECRET access_key_secret,
    ENDPOINT = 'http://minio:9000',
    REGION = 'us-east-1'
  );
CREATE CONNECTION polaris TO ICEBERG CATALOG (
    CATALOG TYPE = 'REST',
    URL = 'http://polaris:8181/api/catalog',
    CREDENTIAL = 'root:root',
    WAREHOUSE = 'default_catalog',
    SCOPE = 'PRINCIPAL_ROLE:ALL'
  );
create table foo(a int, b text);
insert into foo values (1, 'one'), (2, 'two'), (3, 'three');
CREATE SINK demo
    FROM foo
    INTO ICEBERG CATALOG CONNECTION polaris (
        NAMESPACE 'default_namespace',
        TABLE 'demo_table'
    )
    USING AWS CONNECTION aws_conn
    KEY (a) NOT ENFORCED
    ENVELOPE UPSERT
    WITH (COMMIT INTERVAL '1s');

-- source: docs sql/system-catalog/mz_internal (mz_sink_status_history), class 1: qualified column references
SELECT mz_sinks.name, mz_internal.mz_sink_status_history.status
  FROM mz_internal.mz_sink_status_history
  JOIN mz_sinks ON mz_internal.mz_sink_status_history.sink_id = mz_sinks.id
  ORDER BY mz_internal.mz_sink_status_history.occurred_at;
SELECT materialize.mz_catalog.mz_sinks.name FROM mz_catalog.mz_sinks WHERE mz_catalog.mz_sinks.name = 'demo';
SELECT public.foo.a, materialize.public.foo.b FROM foo ORDER BY public.foo.a;
-- refused: invalid reference to "mz_internal.mz_sinks.id": the query reads mz_sinks from materialize.mz_catalog, not mz_internal
SELECT mz_internal.mz_sinks.id FROM mz_sinks;

-- source: docs sql/alter-sink (ALTER SINK … SET FROM), class 2
create table foo2(a int, b text);
ALTER SINK demo SET FROM foo2;
create table bar(a int, c text);
-- refused: 'bar' (a integer, c text) does not have the columns of sink 'demo' (a integer, b text): a sink switches only to a relation with the same column names and types, in the same order
ALTER SINK demo SET FROM bar;

-- source: docs sql/alter-connection, class 3
ALTER CONNECTION polaris SET (SCOPE = 'PRINCIPAL_ROLE:reader');
ALTER CONNECTION polaris RESET (SCOPE);
ALTER CONNECTION aws_conn SET (REGION = 'us-west-2') WITH (VALIDATE = false);
ALTER CONNECTION aws_conn DROP (ENDPOINT);

-- source: test/iceberg/alter-table-add-column.td, class 4
ALTER SYSTEM SET enable_alter_table_add_column = true;
CREATE TABLE evolve_src (a int);
INSERT INTO evolve_src VALUES (1);
CREATE SINK evolve_sink_v1
    FROM evolve_src
    INTO ICEBERG CATALOG CONNECTION polaris (
        NAMESPACE 'default_namespace',
        TABLE 'evolve_table'
    )
    MODE APPEND
    WITH (COMMIT INTERVAL '1s');
DROP SINK evolve_sink_v1;
ALTER TABLE evolve_src ADD COLUMN b text;
CREATE SINK evolve_sink_v2
    FROM evolve_src
    INTO ICEBERG CATALOG CONNECTION polaris (
        NAMESPACE 'default_namespace',
        TABLE 'evolve_table'
    )
    MODE APPEND
    WITH (COMMIT INTERVAL '1s');
INSERT INTO evolve_src VALUES (2, 'two');
SELECT count(*) FROM evolve_src;

-- source: test/iceberg/nested-records.td, class 5: records
CREATE TYPE address AS (street text, city text, zip int);
CREATE TABLE users_with_address (
    id int,
    name text,
    addr address
  );
INSERT INTO users_with_address VALUES
    (1, 'Alice', ROW('123 Main St', 'Springfield', 12345)),
    (2, 'Bob', ROW('456 Oak Ave', 'Shelbyville', 67890)),
    (3, 'Charlie', ROW('789 Pine Rd', 'Capital City', 11111));
CREATE SINK nested_record_sink
    FROM users_with_address
    INTO ICEBERG CATALOG CONNECTION polaris (
        NAMESPACE 'default_namespace',
        TABLE 'nested_record_table'
    )
    KEY (id) NOT ENFORCED
    MODE UPSERT
    WITH (COMMIT INTERVAL '1s');
UPDATE users_with_address SET addr = ROW('999 New St', 'New Town', 99999) WHERE id = 1;
CREATE TYPE inner_record AS (x int, y text);
CREATE TYPE outer_record AS (inner inner_record, z bool);
CREATE TABLE deeply_nested (
    id int,
    data outer_record
  );
INSERT INTO deeply_nested VALUES
    (1, ROW(ROW(10, 'ten'), true)),
    (2, ROW(ROW(20, 'twenty'), false)),
    (3, ROW(ROW(30, 'thirty'), true));
CREATE TYPE nullable_record AS (required_field int, optional_field text);
CREATE TABLE with_nullable_record (
    id int,
    rec nullable_record
  );
INSERT INTO with_nullable_record VALUES
    (1, ROW(100, 'has value')),
    (2, ROW(200, NULL)),
    (3, NULL);

-- source: docs sql/types/list, sql/types/map, sql/create-type, class 5: lists, maps, named types, unsigned integers
CREATE TYPE int4_list AS LIST (ELEMENT TYPE = int4);
CREATE TYPE int4_map AS MAP (KEY TYPE = text, VALUE TYPE = int4);
CREATE TABLE shapes (id uint8, l int4 list, nl int4_list, m map[text=>int], nm int4_map, r int4range, d daterange);
INSERT INTO shapes VALUES (18446744073709551615, '{1,2}', '{3}', '{a=>1, b=>2}', '{c=>3}', '(1,5]', '[2024-01-01,2024-02-01)');

-- source: test/iceberg/key-validation.td, class 5: what a KEY may not be
CREATE TABLE key_float (k float, v text);
-- refused: KEY column "k" cannot be part of a key: a floating-point type (double precision) compares inexactly
CREATE SINK key_float_sink FROM key_float INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'key_float_table') KEY (k) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE TABLE key_map (k map[text=>text], v text);
-- refused: KEY column "k" cannot be part of a key: a map cannot be compared as a key
CREATE SINK key_map_sink FROM key_map INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'key_map_table') KEY (k) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE TABLE key_list (k int list, v text);
-- refused: KEY column "k" cannot be part of a key: a list cannot be compared as a key
CREATE SINK key_list_sink FROM key_list INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'key_list_table') KEY (k) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE TABLE key_range (k int4range, v text);
-- refused: KEY column "k" cannot be part of a key: a range is written as an Iceberg struct, which cannot be compared as a key
CREATE SINK key_range_sink FROM key_range INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'key_range_table') KEY (k) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE TABLE val_float (k int, v float);
CREATE SINK val_float_sink FROM val_float INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'val_float_table') KEY (k) NOT ENFORCED MODE UPSERT WITH (COMMIT INTERVAL '1s');

-- source: docs sql/functions (generate_series, repeat, md5, concat, left), class 6
CREATE TABLE big (id int, payload text);
INSERT INTO big SELECT generate_series(1, 1000), repeat('x', 10);
INSERT INTO big SELECT n, md5(n::text) FROM generate_series(1001, 1010) AS n;
INSERT INTO big SELECT n, concat('k', left(md5(n::text), 4)) FROM generate_series(1011, 1012) AS n;
SELECT count(*) FROM big;

-- source: docs sql/create-materialized-view and test/iceberg/mode-append.td, class 7: small forms
CREATE MATERIALIZED VIEW both_foos AS (SELECT a, b FROM foo) UNION ALL (SELECT a, b FROM foo2);
CREATE SECRET decoded AS decode('c2VjcmV0', 'base64');
CREATE SOURCE counter FROM LOAD GENERATOR COUNTER (AS OF 5, UP TO 10);
CREATE TABLE counter_table FROM SOURCE counter;
SELECT name, create_sql LIKE 'CREATE SINK%' FROM (SHOW CREATE SINK demo);
CREATE TABLE mz_audit_copy (id int);
ALTER SYSTEM SET enable_load_generator_counter = true;
SHOW enable_load_generator_counter;
-- refused: unknown configuration parameter "enable_nonsense"; known: enable_iceberg_sink, enable_default_connection_validation, enable_connection_validation_syntax, enable_create_table_from_source, enable_load_generator_counter, enable_load_generator_key_value, enable_collection_partition_by, enable_alter_table_add_column
ALTER SYSTEM SET enable_nonsense = true;

-- source: test/iceberg/gcp-connection-validation.td and docs serve-results/sink/iceberg-gcp, class 8
CREATE SECRET gcpsa AS '{"type":"service_account","project_id":"x","client_email":"a@b.com","private_key":"-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n","token_uri":"https://oauth2.googleapis.com/token"}';
CREATE CONNECTION gcpconn TO GCP (SERVICE ACCOUNT KEY = SECRET gcpsa);
-- refused: a GCP connection can only be used with 'https://biglake.googleapis.com/iceberg/v1/restcatalog' (BigLake's Iceberg REST catalog)
CREATE CONNECTION evil TO ICEBERG CATALOG (
    CATALOG TYPE = 'rest',
    URL = 'https://attacker.example.com/iceberg/v1/restcatalog',
    GCP CONNECTION = gcpconn,
    WAREHOUSE = 'gs://anything'
  );
CREATE CONNECTION biglake TO ICEBERG CATALOG (
    CATALOG TYPE = 'rest',
    URL = 'https://biglake.googleapis.com/iceberg/v1/restcatalog',
    GCP CONNECTION = gcpconn,
    WAREHOUSE = 'gs://anything'
  );

-- source: test/iceberg/storage-provider.td, class 8
CREATE SECRET sp_cred AS 'client-id:client-secret';
CREATE CONNECTION sp_s3 TO ICEBERG CATALOG (CATALOG TYPE = 'REST', URL = 'https://example.invalid/api/catalog', CREDENTIAL = SECRET sp_cred, STORAGE PROVIDER = 's3', WAREHOUSE = 'wh');
CREATE CONNECTION sp_gcs TO ICEBERG CATALOG (CATALOG TYPE = 'REST', URL = 'https://example.invalid/api/catalog', CREDENTIAL = SECRET sp_cred, STORAGE PROVIDER = 'gcs', WAREHOUSE = 'wh');
CREATE CONNECTION sp_adls TO ICEBERG CATALOG (CATALOG TYPE = 'REST', URL = 'https://example.invalid/api/catalog', CREDENTIAL = SECRET sp_cred, STORAGE PROVIDER = 'adls', WAREHOUSE = 'wh');
CREATE CONNECTION sp_upper TO ICEBERG CATALOG (CATALOG TYPE = 'REST', URL = 'https://example.invalid/api/catalog', CREDENTIAL = SECRET sp_cred, STORAGE PROVIDER = 'GCS', WAREHOUSE = 'wh');
-- refused: Iceberg catalog connection option STORAGE PROVIDER must be one of 's3', 'gcs', 'adls', not 'azure'
CREATE CONNECTION sp_bad TO ICEBERG CATALOG (CATALOG TYPE = 'REST', URL = 'https://example.invalid/api/catalog', CREDENTIAL = SECRET sp_cred, STORAGE PROVIDER = 'azure', WAREHOUSE = 'wh');
-- refused: s3tablesrest connections do not support STORAGE PROVIDER
CREATE CONNECTION sp_on_s3tables TO ICEBERG CATALOG (CATALOG TYPE = 's3tablesrest', URL = 'https://example.invalid/api/catalog', STORAGE PROVIDER = 's3', WAREHOUSE = 'wh');

-- source: docs sql/create-connection (AWS), class 9
-- refused: an AWS connection must specify either ASSUME ROLE ARN or ACCESS KEY ID and SECRET ACCESS KEY
CREATE CONNECTION aws_nothing TO AWS (REGION = 'us-east-1');

-- source: docs sql/create-connection (Iceberg catalog), class 10
-- refused: Iceberg catalog connection option ACCESS DELEGATION must be one of 'vended-credentials', not 'remote-signing'
CREATE CONNECTION delegated TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = 'http://polaris:8181/api/catalog', ACCESS DELEGATION = 'remote-signing');

-- source: test/iceberg/partition-by.td, class 11
CREATE TABLE part_temporal (ts timestamp, v int);
CREATE SINK part_temporal_sink FROM part_temporal INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'part_temporal_table') USING AWS CONNECTION aws_conn PARTITION BY (day(ts)) MODE APPEND WITH (COMMIT INTERVAL '1s');
CREATE TABLE part_bucket (user_id int, v text);
CREATE SINK part_bucket_sink FROM part_bucket INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'part_bucket_table') USING AWS CONNECTION aws_conn KEY (user_id) NOT ENFORCED PARTITION BY (bucket(16, user_id)) MODE UPSERT WITH (COMMIT INTERVAL '1s');
CREATE TABLE part_collision (foo date, foo_day text);
-- refused: PARTITION BY day(foo) makes the partition field foo_day, which is also a column of 'part_collision': Iceberg needs partition fields and columns to have different names
CREATE SINK part_collision_sink FROM part_collision INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'part_collision_table') USING AWS CONNECTION aws_conn PARTITION BY (day(foo)) MODE APPEND WITH (COMMIT INTERVAL '1s');

-- source: docs serve-results/sink/iceberg (S3 Tables), class 12
CREATE CONNECTION aws_east TO AWS (ASSUME ROLE ARN = 'arn:aws:iam::123456789012:role/mz', REGION = 'us-east-1');
-- refused: the S3 Tables bucket arn:aws:s3tables:eu-west-1:123456789012:bucket/b is in region eu-west-1, but AWS connection 'aws_east' is in region us-east-1: they must be in the same region
CREATE CONNECTION s3t TO ICEBERG CATALOG (CATALOG TYPE = 's3tablesrest', URL = 'https://s3tables.eu-west-1.amazonaws.com/iceberg', WAREHOUSE = 'arn:aws:s3tables:eu-west-1:123456789012:bucket/b', AWS CONNECTION = aws_east);

-- source: test/iceberg/{finite-source,empty-source,alter-commit-interval,mode-append,idle-gap}.td, classes 13 to 16
-- (their run-time semantics are checked by tests/test_sink_runtime.py and tests/test_sink_lifecycle.py)
CREATE SOURCE finite FROM LOAD GENERATOR COUNTER (UP TO 5);
CREATE SINK finite_sink FROM finite INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'finite_table') MODE APPEND WITH (COMMIT INTERVAL '1s');
CREATE TABLE empty_src (a int);
CREATE SINK empty_sink FROM empty_src INTO ICEBERG CATALOG CONNECTION polaris (NAMESPACE 'default_namespace', TABLE 'empty_table') MODE APPEND WITH (COMMIT INTERVAL '1s');
ALTER SINK empty_sink SET (COMMIT INTERVAL = '2s');
SHOW CREATE SINK empty_sink;
