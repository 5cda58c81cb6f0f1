-- Concrete instances of every statement form in shared/reference/dialect.md, each alternative spelled out.

-- Secrets
CREATE SECRET pg_pass AS 's3cr3t';
CREATE SECRET IF NOT EXISTS pg_pass AS 's3cr3t';
ALTER SECRET pg_pass AS 'new value';
ALTER SECRET IF EXISTS pg_pass AS 'newer value';
ALTER SECRET pg_pass RENAME TO pg_password;
DROP SECRET pg_password;
DROP SECRET IF EXISTS pg_password CASCADE;
DROP SECRET pg_password RESTRICT;
SHOW SECRETS;
SHOW SECRETS LIKE 'pg%';

-- Connections
CREATE CONNECTION aws_keys TO AWS (
    REGION = 'us-east-1',
    ENDPOINT = 'http://127.0.0.1:9000',
    ACCESS KEY ID = 'AKIAEXAMPLE',
    SECRET ACCESS KEY = SECRET aws_secret,
    SESSION TOKEN = 'token'
) WITH (VALIDATE = false);
CREATE CONNECTION IF NOT EXISTS aws_keys2 TO AWS (ACCESS KEY ID = SECRET key_id, SECRET ACCESS KEY = SECRET aws_secret,
    SESSION TOKEN = SECRET token, REGION 'eu-west-1') WITH (VALIDATE = true);
CREATE CONNECTION aws_role TO AWS (
    ASSUME ROLE ARN = 'arn:aws:iam::123456789012:role/x',
    ASSUME ROLE SESSION NAME = 'icesink',
    EXTERNAL ID = 'id'
);
CREATE CONNECTION rest_cat TO ICEBERG CATALOG (
    CATALOG TYPE = 'rest',
    URL = 'https://catalog/api/catalog',
    WAREHOUSE = 'wh',
    CREDENTIAL = 'client_id:client_secret',
    SCOPE = 'PRINCIPAL_ROLE:ALL',
    OAUTH2 SERVER URL = 'https://idp/token',
    ACCESS DELEGATION = 'vended-credentials',
    AWS CONNECTION = aws_keys
) WITH (VALIDATE = true);
CREATE CONNECTION rest_secret TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://127.0.0.1:8181',
    CREDENTIAL = 'client_id:' || SECRET oauth, WAREHOUSE 'wh');
CREATE CONNECTION rest_whole TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://x', CREDENTIAL = SECRET oauth);
CREATE CONNECTION rest_token TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = 'http://x', TOKEN = SECRET bearer);
CREATE CONNECTION s3t TO ICEBERG CATALOG (
    CATALOG TYPE = 's3tablesrest',
    URL = 'https://s3tables.us-east-1.amazonaws.com/iceberg',
    WAREHOUSE = 'arn:aws:s3tables:us-east-1:123456789012:bucket/b',
    AWS CONNECTION = aws_role
);
CREATE CONNECTION glue_cat TO ICEBERG CATALOG (CATALOG TYPE = 'glue', WAREHOUSE = 's3://bucket/path', AWS CONNECTION = aws_role);
CREATE CONNECTION local_cat TO ICEBERG CATALOG (CATALOG TYPE = 'local', WAREHOUSE = '/local/dir') WITH (VALIDATE = false);
CREATE CONNECTION local_default TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE CONNECTION pg TO POSTGRES (
    HOST = 'db', PORT = 5432, DATABASE = 'shop', USER = 'repl', PASSWORD = SECRET pg_pass,
    SSL MODE = 'verify-full',
    SSL CERTIFICATE AUTHORITY = '-----BEGIN CERTIFICATE-----'
) WITH (VALIDATE = true);
CREATE CONNECTION pg_bare TO POSTGRES (HOST postgres, PORT 5432, DATABASE shop, USER repl, PASSWORD SECRET pg_pass,
    SSL MODE 'disable', SSL CERTIFICATE AUTHORITY SECRET ca);
CREATE CONNECTION pg_require TO POSTGRES (HOST 'db', USER 'repl', SSL MODE = 'require') WITH (VALIDATE = false);
CREATE CONNECTION pg_verify_ca TO POSTGRES (HOST 'db', USER 'repl', SSL MODE = 'verify_ca');
VALIDATE CONNECTION pg;
DROP CONNECTION pg;
DROP CONNECTION IF EXISTS pg CASCADE;
DROP CONNECTION pg RESTRICT;
SHOW CONNECTIONS;
SHOW CONNECTIONS LIKE 'pg%';
SHOW CREATE CONNECTION pg;
SHOW REDACTED CREATE CONNECTION pg;

-- Sources and tables
CREATE SOURCE shop FROM POSTGRES CONNECTION pg (PUBLICATION 'icesink') FOR TABLES (public.orders);
CREATE SOURCE IF NOT EXISTS shop2 IN CLUSTER ingest
  FROM POSTGRES CONNECTION pg (PUBLICATION 'pub', TEXT COLUMNS (orders.note, items.sku), EXCLUDE COLUMNS (orders.blob))
  FOR TABLES (public.orders AS shop_orders, items);
CREATE SOURCE shop3 FROM POSTGRES CONNECTION pg (PUBLICATION = 'pub') FOR ALL TABLES;
CREATE SOURCE shop4 FROM POSTGRES CONNECTION pg (PUBLICATION 'pub') FOR SCHEMAS (public, sales);
CREATE SOURCE shop5 FROM POSTGRES CONNECTION pg (PUBLICATION 'pub');
CREATE TABLE orders FROM SOURCE shop5 (REFERENCE public.orders);
CREATE TABLE IF NOT EXISTS items FROM SOURCE shop5 (REFERENCE items);
CREATE SOURCE counter FROM LOAD GENERATOR COUNTER;
CREATE SOURCE counter2 FROM LOAD GENERATOR COUNTER (TICK INTERVAL = '1s', UP TO = 1000000, SEED = 1);
CREATE SOURCE IF NOT EXISTS auction IN CLUSTER gen FROM LOAD GENERATOR AUCTION (TICK INTERVAL '500ms') FOR ALL TABLES;
CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR = 0.01, TICK INTERVAL = '1s') FOR ALL TABLES;
CREATE TABLE t (id bigint NOT NULL, name text, PRIMARY KEY (id));
CREATE TABLE IF NOT EXISTS t2 (id bigint PRIMARY KEY, price numeric(10, 2), at timestamp with time zone,
    d date, ok boolean, tags text[], doc jsonb, f double precision, n int NULL);
INSERT INTO t VALUES (1, 'a'), (2, 'b');
INSERT INTO t (id, name) VALUES (3, NULL);
UPDATE t SET name = 'x';
UPDATE t SET name = upper(name) || '!', id = id + 10 WHERE id = 1 AND name IS NOT NULL;
DELETE FROM t;
DELETE FROM t WHERE id IN (1, 2) OR name LIKE 'a%';
CREATE MATERIALIZED VIEW v AS SELECT id, name FROM t;
CREATE MATERIALIZED VIEW IF NOT EXISTS v2 AS
  SELECT name, count(*) AS n, sum(id) AS total, max(id)::text AS top FROM t WHERE id > 0 GROUP BY name;
DROP SOURCE shop;
DROP SOURCE IF EXISTS shop CASCADE;
DROP TABLE t RESTRICT;
DROP MATERIALIZED VIEW IF EXISTS v;
SHOW SOURCES;
SHOW TABLES;
SHOW MATERIALIZED VIEWS;
SHOW SUBSOURCES;

-- Sinks
CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE = 'shop', TABLE = 'orders')
  KEY (id) MODE UPSERT WITH (COMMIT INTERVAL = '10s');
CREATE SINK IF NOT EXISTS s2 IN CLUSTER sinks
  FROM v2
  INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'v2')
  USING AWS CONNECTION aws_keys
  KEY (name) ENFORCED
  PARTITION BY (name, bucket(16, name), truncate(4, name))
  ENVELOPE UPSERT
  WITH (COMMIT INTERVAL '1min');
CREATE SINK s3 FROM t INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 't')
  KEY (id) NOT ENFORCED MODE UPSERT PARTITION BY (bucket(8, id)) WITH (COMMIT INTERVAL = '5 minutes');
CREATE SINK s4 FROM t2 INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 't2')
  PARTITION BY (year(at), month(at), day(at), hour(at)) MODE APPEND WITH (COMMIT INTERVAL = '1h');
CREATE SINK s5 FROM t INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'a', TABLE 'b') MODE APPEND WITH (COMMIT INTERVAL '1m');
ALTER SINK orders_lake SET (COMMIT INTERVAL = '1min');
ALTER SINK orders_lake RESET (COMMIT INTERVAL);
ALTER SINK orders_lake RENAME TO orders_iceberg;
DROP SINK orders_lake;
DROP SINK IF EXISTS orders_lake;
SHOW SINKS;
SHOW CREATE SINK orders_lake;

-- Session statements
ALTER SYSTEM SET enable_iceberg_sink = true;
ALTER SYSTEM SET enable_default_connection_validation TO false;
SET enable_iceberg_sink = true;
SET enable_default_connection_validation TO off;

-- Queries
SELECT * FROM mz_catalog.mz_sinks;
SELECT name, type FROM mz_sinks WHERE name LIKE 'orders%' ORDER BY name LIMIT 10;
SELECT s.name, st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id;
SELECT id::text, count(*) FROM t GROUP BY id;
SELECT * FROM ICEBERG lake.shop.orders;
SELECT o.id FROM orders AS o LEFT JOIN items i USING (id) WHERE o.id BETWEEN 1 AND 10;
/* block comment */ SELECT "Quoted Name", 'it''s' FROM "My Table" -- trailing comment
;
