-- Every mzsql block of Materialize's Iceberg sink guide (shared/seeds/004), verbatim, in order.

ALTER SYSTEM SET enable_iceberg_sink = true;

-- For Iceberg catalog authentication (if using REST catalog)
CREATE SECRET iceberg_oauth_secret AS '<your-oauth-client-secret>';

-- For AWS S3 access
CREATE SECRET aws_secret AS '<your-aws-secret-access-key>';

CREATE CONNECTION aws_conn TO AWS (
    ASSUME ROLE ARN = 'arn:aws:iam::123456789012:role/MaterializeIcebergRole',
    REGION = 'us-east-1'
);

CREATE CONNECTION aws_conn TO AWS (
    ACCESS KEY ID = '<your-access-key-id>',
    SECRET ACCESS KEY = SECRET aws_secret,
    REGION = 'us-east-1'
);

CREATE CONNECTION iceberg_catalog TO ICEBERG CATALOG (
    CATALOG TYPE = 'REST',
    URL = 'https://polaris.example.com/api/catalog',
    CREDENTIAL = 'your-client-id:' || SECRET iceberg_oauth_secret,
    WAREHOUSE = 'my_warehouse',
    SCOPE = 'PRINCIPAL_ROLE:ALL'
);

CREATE CONNECTION s3_tables_catalog TO ICEBERG CATALOG (
    CATALOG TYPE = 'S3TABLESREST',
    URL = 'https://s3tables.us-east-1.amazonaws.com',
    AWS CONNECTION = aws_conn,
    WAREHOUSE = 'my-s3-table-bucket'
);

-- Assume you have a source named user_events
CREATE MATERIALIZED VIEW user_activity_summary AS
SELECT
    user_id,
    DATE_TRUNC('hour', event_timestamp) as hour,
    COUNT(*) as event_count,
    COUNT(DISTINCT session_id) as session_count,
    MAX(event_timestamp) as last_event_time
FROM user_events
GROUP BY user_id, DATE_TRUNC('hour', event_timestamp);

CREATE SINK user_activity_iceberg
    IN CLUSTER sink_cluster
    FROM user_activity_summary
    INTO ICEBERG CATALOG CONNECTION iceberg_catalog (
        NAMESPACE 'analytics',
        TABLE 'user_activity'
    )
    USING AWS CONNECTION aws_conn
    KEY (user_id, hour) ENFORCED
    ENVELOPE UPSERT
    WITH (
        COMMIT INTERVAL = '1min'
    );

SELECT
    s.name,
    s.type,
    ss.status,
    ss.error
FROM mz_sinks s
JOIN mz_internal.mz_sink_statuses ss ON s.id = ss.id
WHERE s.name = 'user_activity_iceberg';

SELECT
    id,
    namespace,
    table
FROM mz_catalog.mz_iceberg_sinks
WHERE id = (SELECT id FROM mz_sinks WHERE name = 'user_activity_iceberg');

-- Create an aggregation view
CREATE MATERIALIZED VIEW daily_sales_summary AS
SELECT
    product_id,
    DATE_TRUNC('day', order_timestamp) as sale_date,
    COUNT(*) as order_count,
    SUM(quantity) as total_quantity,
    SUM(revenue) as total_revenue
FROM orders
GROUP BY product_id, DATE_TRUNC('day', order_timestamp);

-- Sink to Iceberg
CREATE SINK daily_sales_iceberg
    FROM daily_sales_summary
    INTO ICEBERG CATALOG CONNECTION iceberg_catalog (
        NAMESPACE 'sales',
        TABLE 'daily_summary'
    )
    USING AWS CONNECTION aws_conn
    KEY (product_id, sale_date) ENFORCED
    ENVELOPE UPSERT
    WITH (COMMIT INTERVAL = '5min');

-- Create PostgreSQL source
CREATE SOURCE pg_users
FROM POSTGRES CONNECTION pg_conn (
    PUBLICATION 'mz_source'
)
FOR TABLES (public.users);

-- Sink raw CDC data to Iceberg
CREATE SINK users_cdc_iceberg
    FROM pg_users
    INTO ICEBERG CATALOG CONNECTION iceberg_catalog (
        NAMESPACE 'raw',
        TABLE 'users'
    )
    USING AWS CONNECTION aws_conn
    KEY (id) ENFORCED
    ENVELOPE UPSERT
    WITH (COMMIT INTERVAL = '30s');
