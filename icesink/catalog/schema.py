"""Versioned schema of the catalog database. Append a migration; never edit a shipped one."""

MIGRATIONS = (
    # 1: objects, dependencies, status history and statistics
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE objects (
        id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL UNIQUE,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,          -- secret | connection | source | subsource | table | materialized-view | sink | type
        type TEXT NOT NULL,          -- e.g. iceberg-catalog, postgres, load-generator, iceberg
        cluster TEXT,
        connection_id TEXT,
        envelope TEXT,
        create_sql TEXT NOT NULL,
        redacted_create_sql TEXT NOT NULL,
        definition TEXT NOT NULL,    -- JSON written by the planner
        created_at TEXT NOT NULL
    );
    CREATE TABLE dependencies (
        object_id TEXT NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
        depends_on TEXT NOT NULL REFERENCES objects(id),
        PRIMARY KEY (object_id, depends_on)
    );
    CREATE INDEX dependencies_by_target ON dependencies(depends_on);
    CREATE TABLE status_history (
        occurred_at TEXT NOT NULL,
        object_id TEXT NOT NULL,
        object_kind TEXT NOT NULL,   -- sink | source
        status TEXT NOT NULL,
        error TEXT,
        details TEXT,
        replica_id TEXT
    );
    CREATE INDEX status_history_by_object ON status_history(object_id);
    CREATE TABLE statistics (
        object_id TEXT PRIMARY KEY,
        replica_id TEXT,
        messages_staged INTEGER NOT NULL DEFAULT 0,
        messages_committed INTEGER NOT NULL DEFAULT 0,
        bytes_staged INTEGER NOT NULL DEFAULT 0,
        bytes_committed INTEGER NOT NULL DEFAULT 0,
        snapshots_committed INTEGER NOT NULL DEFAULT 0,
        last_commit_at TEXT,
        lag_ms INTEGER,
        snapshot_records_known INTEGER NOT NULL DEFAULT 0,
        snapshot_records_staged INTEGER NOT NULL DEFAULT 0,
        offset_known INTEGER NOT NULL DEFAULT 0,
        offset_committed INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # 2: each start of a sink is a new incarnation with a higher version, which fences the older ones
    """
    CREATE TABLE sink_incarnations (sink_id TEXT PRIMARY KEY, version INTEGER NOT NULL);
    """,
)

SCHEMA_ID = "u3"  # Materialize's id for materialize.public
OWNER_ID = "u1"

# Recreated after every migration, so a view can change without a migration of its own.
VIEWS = {
    "mz_schemas": f"SELECT '{SCHEMA_ID}' AS id, 20003 AS oid, 'u1' AS database_id, 'public' AS name, "
                  f"'{OWNER_ID}' AS owner_id",
    "mz_databases": f"SELECT 'u1' AS id, 20001 AS oid, 'materialize' AS name, '{OWNER_ID}' AS owner_id",
    "mz_objects": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name,
               CASE kind WHEN 'subsource' THEN 'source' ELSE kind END AS type,
               '{OWNER_ID}' AS owner_id, cluster AS cluster_id, created_at
        FROM objects""",
    "mz_sinks": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name, type, connection_id,
               envelope AS envelope_type, cluster AS cluster_id, '{OWNER_ID}' AS owner_id,
               create_sql, redacted_create_sql
        FROM objects WHERE kind = 'sink'""",
    "mz_iceberg_sinks": """
        SELECT id, json_extract(definition, '$.namespace') AS namespace,
               json_extract(definition, '$.table') AS "table"
        FROM objects WHERE kind = 'sink'""",
    "mz_sources": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name, type, connection_id,
               envelope AS envelope_type, cluster AS cluster_id, '{OWNER_ID}' AS owner_id,
               create_sql, redacted_create_sql
        FROM objects WHERE kind IN ('source', 'subsource')""",
    "mz_connections": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name, type, '{OWNER_ID}' AS owner_id,
               create_sql, redacted_create_sql
        FROM objects WHERE kind = 'connection'""",
    "mz_secrets": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name, '{OWNER_ID}' AS owner_id
        FROM objects WHERE kind = 'secret'""",
    "mz_tables": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name, '{OWNER_ID}' AS owner_id,
               json_extract(definition, '$.source_id') AS source_id, create_sql, redacted_create_sql
        FROM objects WHERE kind = 'table'""",
    "mz_materialized_views": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name, cluster AS cluster_id,
               json_extract(definition, '$.query_sql') AS definition, '{OWNER_ID}' AS owner_id,
               create_sql, redacted_create_sql
        FROM objects WHERE kind = 'materialized-view'""",
    "mz_types": f"""
        SELECT id, 20000 + seq AS oid, '{SCHEMA_ID}' AS schema_id, name, type AS category, '{OWNER_ID}' AS owner_id,
               json_extract(definition, '$.type_name') AS definition
        FROM objects WHERE kind = 'type'""",
    "mz_columns": """
        SELECT o.id, json_extract(c.value, '$.name') AS name, c.key + 1 AS position,
               json_extract(c.value, '$.nullable') = 1 AS nullable, json_extract(c.value, '$.type') AS type
        FROM objects o, json_each(o.definition, '$.columns') c""",
    "mz_aws_connections": """
        SELECT id, json_extract(definition, '$.options.endpoint') AS endpoint,
               json_extract(definition, '$.options.region') AS region,
               CASE json_type(definition, '$.options.access_key_id') WHEN 'text'
                    THEN json_extract(definition, '$.options.access_key_id') END AS access_key_id,
               json_extract(definition, '$.options.assume_role_arn') AS assume_role_arn,
               json_extract(definition, '$.options.assume_role_session_name') AS assume_role_session_name,
               json_extract(definition, '$.principal') AS principal,
               json_extract(definition, '$.external_id') AS external_id,
               json_extract(definition, '$.example_trust_policy') AS example_trust_policy
        FROM objects WHERE kind = 'connection' AND type = 'aws'""",
    "mz_sink_status_history": """
        SELECT occurred_at, object_id AS sink_id, status, error, details, replica_id
        FROM status_history WHERE object_kind = 'sink'""",
    "mz_source_status_history": """
        SELECT occurred_at, object_id AS source_id, status, error, details, replica_id
        FROM status_history WHERE object_kind = 'source'""",
    "mz_sink_statuses": """
        SELECT o.id, o.name, o.type, COALESCE(h.occurred_at, o.created_at) AS last_status_change_at,
               COALESCE(h.status, 'created') AS status, h.error, h.details
        FROM objects o LEFT JOIN status_history h ON h.rowid =
            (SELECT max(rowid) FROM status_history WHERE object_id = o.id)
        WHERE o.kind = 'sink'""",
    "mz_source_statuses": """
        SELECT o.id, o.name, o.type, COALESCE(h.occurred_at, o.created_at) AS last_status_change_at,
               COALESCE(h.status, 'created') AS status, h.error, h.details
        FROM objects o LEFT JOIN status_history h ON h.rowid =
            (SELECT max(rowid) FROM status_history WHERE object_id = o.id)
        WHERE o.kind IN ('source', 'subsource')""",
    "mz_sink_statistics": """
        SELECT o.id, s.replica_id, COALESCE(s.messages_staged, 0) AS messages_staged,
               COALESCE(s.messages_committed, 0) AS messages_committed,
               COALESCE(s.bytes_staged, 0) AS bytes_staged, COALESCE(s.bytes_committed, 0) AS bytes_committed,
               COALESCE(s.snapshots_committed, 0) AS snapshots_committed, s.last_commit_at, s.lag_ms
        FROM objects o LEFT JOIN statistics s ON s.object_id = o.id WHERE o.kind = 'sink'""",
    "mz_source_statistics": """
        SELECT o.id, s.replica_id, COALESCE(s.messages_staged, 0) AS messages_received,
               COALESCE(s.bytes_staged, 0) AS bytes_received,
               COALESCE(s.snapshot_records_known, 0) AS snapshot_records_known,
               COALESCE(s.snapshot_records_staged, 0) AS snapshot_records_staged,
               COALESCE(s.offset_known, 0) AS offset_known, COALESCE(s.offset_committed, 0) AS offset_committed
        FROM objects o LEFT JOIN statistics s ON s.object_id = o.id WHERE o.kind IN ('source', 'subsource')""",
}

# Which schema each system view belongs to, for qualified names (mz_catalog.mz_sinks).
SCHEMA_OF_VIEW = {name: ("mz_internal" if name.endswith(("_statuses", "_status_history", "_statistics"))
                         or name == "mz_aws_connections" else "mz_catalog") for name in VIEWS}
