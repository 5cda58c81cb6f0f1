#!/usr/bin/env bash
# The sink benchmark into the local catalog and into S3 Tables on SeaweedFS (S3 on this machine), alternately in one
# run, so both see the same machine:  bench/sink_s3.sh [sink.py arguments…]
set -euo pipefail
cd "$(dirname "$0")/.."
for catalog in local s3tables local s3tables; do
  echo "== bench/sink.py --catalog $catalog --keys 1000000 --batch 100000 --interval 5s $*"
  .venv/bin/python bench/sink.py --catalog "$catalog" --keys 1000000 --batch 100000 --interval 5s "$@" 2>/dev/null
done
