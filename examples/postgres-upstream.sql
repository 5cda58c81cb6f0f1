-- The upstream side of the Postgres demo (run by psql as a superuser): a user that may replicate, a table with a
-- primary key, a publication. `examples/postgres-demo.sh` runs it on a throwaway PostgreSQL 15.
CREATE ROLE repl LOGIN REPLICATION PASSWORD 'repl-demo';
CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, amount numeric(10,2), placed timestamptz);
INSERT INTO orders SELECT n, 'customer ' || n % 100, n % 1000 + 0.99, now() - n * interval '1 minute'
  FROM generate_series(1, 10000) n;
GRANT SELECT ON orders TO repl;
CREATE PUBLICATION mz_source FOR TABLE orders;
