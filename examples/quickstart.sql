-- icesink quickstart: a load generator and an engine table, each synced to a local Iceberg table.
-- `make demo` runs it on a fresh data directory (.demo/); by hand: icesink --data-dir DIR -f examples/quickstart.sql

-- The embedded default catalog: a SQLite-backed Iceberg catalog and a warehouse under the data directory.
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE = 'local');

-- Materialize's auction generator: a new auction and three bids every 200 ms, account balances updated.
CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL = '200ms') FOR ALL TABLES;

CREATE SINK bids_lake FROM bids
  INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE = 'auction', TABLE = 'bids')
  KEY (id) PARTITION BY (day(bid_time)) MODE UPSERT
  WITH (COMMIT INTERVAL = '2s');

-- An engine table: INSERT, UPDATE and DELETE flow into Iceberg as upserts.
CREATE TABLE orders (id bigint NOT NULL, customer text, amount numeric(12, 2), PRIMARY KEY (id));
INSERT INTO orders VALUES (1, 'ada', 12.50), (2, 'grace', 7.25), (3, 'edsger', 99.00);
UPDATE orders SET amount = amount * 2 WHERE customer = 'ada';
DELETE FROM orders WHERE id = 3;

CREATE SINK orders_lake FROM orders
  INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE = 'shop', TABLE = 'orders')
  KEY (id) MODE UPSERT
  WITH (COMMIT INTERVAL = '2s');

-- A materialized view of the orders per customer, kept in Iceberg: each commit recomputes the customers whose
-- orders changed (a deleted order lowers its customer's count; a customer left without orders is deleted).
CREATE MATERIALIZED VIEW customer_totals AS
SELECT customer, count(*) AS orders, sum(amount) AS total FROM orders GROUP BY customer;

CREATE SINK customer_totals_lake FROM customer_totals
  INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE = 'shop', TABLE = 'customer_totals')
  KEY (customer) MODE UPSERT
  WITH (COMMIT INTERVAL = '2s', WRITE MODE = 'merge-on-read');

SHOW SINKS;

-- The sinks start on Spark (a few seconds), create their tables, and commit every two seconds.
SELECT s.name, st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id
ORDER BY s.name;
\watch 3 8

-- The Iceberg table filling, read back through Spark:
SELECT count(*) AS bids_in_iceberg, max(id) AS newest_bid FROM ICEBERG lake.auction.bids;
\watch 3 4

SELECT * FROM ICEBERG lake.shop.orders ORDER BY id;

-- Grace orders again and Ada's order goes: the view's sink writes both customers' new rows, and deletes Ada's.
INSERT INTO orders VALUES (4, 'grace', 30.00);
DELETE FROM orders WHERE id = 1;
SELECT * FROM customer_totals ORDER BY customer;
\watch 3 2

SELECT * FROM ICEBERG lake.shop.customer_totals ORDER BY customer;

SELECT s.name, st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id
ORDER BY s.name;

SELECT s.name, st.messages_committed, st.snapshots_committed, st.lag_ms
FROM mz_sinks s JOIN mz_internal.mz_sink_statistics st ON s.id = st.id ORDER BY s.name;
