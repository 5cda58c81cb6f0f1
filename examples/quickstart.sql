-- icesink quickstart: an engine table synced to a local Iceberg table.
-- Run it with `make demo` (a fresh data directory in .demo/), or: icesink --data-dir DIR -f examples/quickstart.sql

-- The embedded default catalog: a SQLite-backed Iceberg catalog and a warehouse under the data directory.
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE = 'local');

CREATE TABLE orders (
    id bigint NOT NULL,
    customer text,
    amount numeric(12, 2),
    placed_at timestamp with time zone,
    PRIMARY KEY (id)
);

CREATE SINK orders_lake FROM orders
  INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE = 'shop', TABLE = 'orders')
  KEY (id)
  PARTITION BY (day(placed_at))
  MODE UPSERT
  WITH (COMMIT INTERVAL = '5s');

SHOW SINKS;

SELECT s.name, st.status, st.error
FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id;

SELECT id, namespace, "table" FROM mz_catalog.mz_iceberg_sinks
WHERE id = (SELECT id FROM mz_sinks WHERE name = 'orders_lake');

SHOW CREATE SINK orders_lake;
