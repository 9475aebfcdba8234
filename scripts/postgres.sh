#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests: initdb in a temp directory, run as the `postgres`
# user (PostgreSQL refuses to run as root), listening on loopback only, trust auth for local
# tests. Prints `export EXECUTOR_TEST_POSTGRES_URL=…` for the caller to eval; `stop DIR` ends it.
#
#   eval "$(scripts/postgres.sh start)"   # … tests …   scripts/postgres.sh stop "$PGTEST_DIR"
#   scripts/postgres.sh start --bench     # durable (fsync on) and with pg_stat_statements, for
#                                         # bench/replicas.mjs; tests run without fsync
set -euo pipefail

bin_dir() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return; }
  done
  command -v initdb >/dev/null && { dirname "$(command -v initdb)"; return; }
  return 1
}

as_postgres() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

case "${1:-}" in
  start)
    bin="$(bin_dir)" || { echo "PostgreSQL is not installed (Debian: apt-get install postgresql)" >&2; exit 1; }
    dir="$(mktemp -d /tmp/executor-pg.XXXXXX)"
    chmod 755 "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    port="$(free_port)"
    settings="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ "${2:-}" = "--bench" ] && settings="-c shared_preload_libraries=pg_stat_statements"
    as_postgres "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 \
      --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=400 $settings" \
      start >/dev/null ||
      { cat "$dir/server.log" >&2; exit 1; }
    echo "export PGTEST_DIR=$dir"
    echo "export EXECUTOR_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    dir="${2:?usage: postgres.sh stop DIR}"
    bin="$(bin_dir)"
    as_postgres "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: postgres.sh start | stop DIR" >&2
    exit 2
    ;;
esac
