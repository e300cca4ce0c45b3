#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, on a unix socket only (no TCP); idempotent.
# Prints the SQLAlchemy URL the tests use (tests/conftest.py: PATCHER_TEST_PG_URL, else this default).
set -euo pipefail
SOCK=${PATCHER_TEST_PG_DIR:-/tmp/patcher-pg}
PORT=${PATCHER_TEST_PG_PORT:-54329}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$PGBIN" ]; then
  echo "postgres: no PostgreSQL server installed (apt-get install -y postgresql, or run scripts/setup.sh)" >&2
  exit 3
fi
as_owner() {  # PostgreSQL refuses to run as root
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
start() {
  as_owner "$PGBIN/pg_ctl" -D "$SOCK/data" -l "$SOCK/server.log" -w -t 60 \
    -o "-k $SOCK -p $PORT -c listen_addresses='' -c max_connections=200 -c fsync=off" start >/dev/null
}
if ! "$PGBIN/pg_isready" -q -h "$SOCK" -p "$PORT"; then
  mkdir -p "$SOCK"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$SOCK"
  if [ ! -f "$SOCK/data/PG_VERSION" ]; then
    as_owner "$PGBIN/initdb" -D "$SOCK/data" --auth=trust -U postgres >/dev/null
  fi
  if ! start; then  # e.g. a lock file a killed server left behind: the cluster is throwaway, so start anew
    echo "postgres: the test cluster did not start; making a new one (last log lines:)" >&2
    tail -n 5 "$SOCK/server.log" >&2 || true
    rm -rf "$SOCK/data"
    as_owner "$PGBIN/initdb" -D "$SOCK/data" --auth=trust -U postgres >/dev/null
    start
  fi
fi
echo "postgresql+psycopg://postgres@/postgres?host=$SOCK&port=$PORT"
