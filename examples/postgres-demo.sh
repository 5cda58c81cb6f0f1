#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 (Debian's postgresql-15) on 127.0.0.1:54329, creates its tables
# (examples/postgres-upstream.sql), changes orders in a loop while examples/postgres.sql runs on a fresh data
# directory, then stops Postgres.  Used by `make demo-postgres`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${ICESINK_PG_BIN:-/usr/lib/postgresql/15/bin}
[ -x "$bin/initdb" ] || { echo "PostgreSQL 15 is not installed: apt-get install postgresql-15" >&2; exit 1; }
demo=$(pwd)/.demo-postgres
rm -rf "$demo" && mkdir -p "$demo"
as_owner=()
if [ "$(id -u)" = 0 ]; then  # the server refuses to run as root
  chown postgres "$demo"
  as_owner=(runuser -u postgres --)
fi
"${as_owner[@]}" "$bin/initdb" -D "$demo/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 >/dev/null
"${as_owner[@]}" "$bin/pg_ctl" -D "$demo/data" -l "$demo/postgres.log" -w -o \
  "-p 54329 -k $demo -c listen_addresses=127.0.0.1 -c wal_level=logical" start >/dev/null
stop() { "${as_owner[@]}" "$bin/pg_ctl" -D "$demo/data" -m fast -w stop >/dev/null 2>&1 || true; }
trap 'kill $changes 2>/dev/null || true; stop' EXIT
psql=("$bin/psql" -h "$demo" -p 54329 -U postgres -d postgres -q -v ON_ERROR_STOP=1)
"${psql[@]}" -f examples/postgres-upstream.sql
(for n in $(seq 10001 10300); do  # new orders, changed amounts, cancelled orders
   "${psql[@]}" -c "INSERT INTO orders VALUES ($n, 'customer 7', 12.50, now());
     UPDATE orders SET amount = amount + 1 WHERE id = $((n - 10000));
     DELETE FROM orders WHERE id = $((n - 9000))" 2>/dev/null || exit 0
   sleep 0.1
 done) &
changes=$!
.venv/bin/icesink --data-dir "$demo/icesink" -f examples/postgres.sql
