-- icesink on a Postgres source, the flow of Materialize's Postgres and Iceberg guides: a secret, a Postgres
-- connection, a source whose table becomes a subsource, and an upserting sink into Iceberg. `make demo-postgres`
-- runs it against a throwaway PostgreSQL 15 on 127.0.0.1:54329 (examples/postgres-upstream.sql made its tables)
-- while a loop there inserts, updates and deletes orders.

CREATE SECRET pg_pass AS 'repl-demo';

CREATE CONNECTION pg_conn TO POSTGRES (
    HOST = '127.0.0.1', PORT = 54329, DATABASE = 'postgres', USER = 'repl', PASSWORD = SECRET pg_pass
);

-- the source asks Postgres which tables the publication covers, and their columns and keys
CREATE SOURCE pg_shop FROM POSTGRES CONNECTION pg_conn (PUBLICATION 'mz_source') FOR TABLES (public.orders);
SHOW COLUMNS FROM orders;

CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE = 'local');

CREATE SINK orders_iceberg
    FROM orders
    INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders')
    KEY (id) ENFORCED
    ENVELOPE UPSERT
    WITH (COMMIT INTERVAL = '2s');

SELECT o.name, st.status, st.error FROM mz_objects o
  JOIN (SELECT id, status, error FROM mz_internal.mz_source_statuses
        UNION ALL SELECT id, status, error FROM mz_internal.mz_sink_statuses) st ON o.id = st.id;
\watch 3 7

-- The Iceberg table, read back through the catalog, follows Postgres:
SELECT count(*) AS orders_in_iceberg, sum(amount) AS total FROM ICEBERG lake.shop.orders;
\watch 3 5

SELECT st.snapshot_records_staged, st.messages_received, st.offset_known - st.offset_committed AS lag_bytes
FROM mz_sources s JOIN mz_internal.mz_source_statistics st ON s.id = st.id WHERE s.name = 'pg_shop';
