-- icesink on S3 Tables, the flow of Materialize's Iceberg sink guide: a secret, an AWS connection, an S3 Tables
-- catalog connection (Iceberg REST signed with SigV4), and an upserting sink. `make demo-s3tables` runs it against
-- SeaweedFS on this machine (S3 on 127.0.0.1:8333, its S3 Tables Iceberg endpoint on 127.0.0.1:8181, a table bucket
-- named `tables`). On AWS: URL 'https://s3tables.<region>.amazonaws.com/iceberg', WAREHOUSE = the table bucket's ARN.

CREATE SECRET aws_secret AS 'adminsecret';

CREATE CONNECTION aws_conn TO AWS (
    ACCESS KEY ID = 'admin',
    SECRET ACCESS KEY = SECRET aws_secret,
    REGION = 'us-east-1',
    ENDPOINT = 'http://127.0.0.1:8333'
);

CREATE CONNECTION s3_tables_catalog TO ICEBERG CATALOG (
    CATALOG TYPE = 's3tablesrest',
    URL = 'http://127.0.0.1:8181',
    WAREHOUSE = 's3://tables',
    AWS CONNECTION = aws_conn
);

-- Materialize's auction generator: a new auction and three bids every 200 ms.
CREATE SOURCE auction FROM LOAD GENERATOR AUCTION (TICK INTERVAL = '200ms') FOR ALL TABLES;

CREATE SINK bids_iceberg
    FROM bids
    INTO ICEBERG CATALOG CONNECTION s3_tables_catalog (NAMESPACE 'analytics', TABLE 'bids')
    USING AWS CONNECTION aws_conn
    KEY (id) ENFORCED
    ENVELOPE UPSERT
    WITH (COMMIT INTERVAL = '2s');

SELECT s.name, st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id;
\watch 3 6

-- The table in the S3 table bucket, read back through the catalog:
SELECT count(*) AS bids_in_s3_tables, max(id) AS newest_bid FROM ICEBERG s3_tables_catalog.analytics.bids;
\watch 3 4

SELECT s.name, st.messages_committed, st.snapshots_committed, st.lag_ms
FROM mz_sinks s JOIN mz_internal.mz_sink_statistics st ON s.id = st.id;
