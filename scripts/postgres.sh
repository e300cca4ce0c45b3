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
if ! "$PGBIN/pg_isready" -q -h "$SOCK" -p "$PORT"; then
  mkdir -p "$SOCK"
  [ "$(id -u)" -ne 0 ] || chown postgres: "$SOCK"
  if [ ! -f "$SOCK/data/PG_VERSION" ]; then
    as_owner "$PGBIN/initdb" -D "$SOCK/data" --auth=trust -U postgres >/dev/null
  fi
  as_owner "$PGBIN/pg_ctl" -D "$SOCK/data" -l "$SOCK/server.log" -w -t 60 \
    -o "-k $SOCK -p $PORT -c listen_addresses='' -c max_connections=200 -c fsync=off" start >/dev/null
fi
echo "postgresql+psycopg://postgres@/postgres?host=$SOCK&port=$PORT"
