#!/usr/bin/env bash
# Builds the release binary and the benchmark driver, installs the original TypeScript Executor
# (npm `executor@1.5.9`) into a cache folder outside the repo (skipped with a note when npm
# cannot), then prints the rows of BENCHMARKS.md: ours next to the original (Rust driver), the MCP
# surface figures (official TypeScript client) and the 5,000-tool search figure (engine test in
# release mode).
#
# Environment: EXECUTOR_ORIGINAL_BIN=path uses that binary of the original instead of installing;
# BENCH_SKIP_ORIGINAL=1 measures ours only.
set -euo pipefail
cd "$(dirname "$0")/.."

ORIGINAL_VERSION=1.5.9

echo "== machine"
lscpu | grep -E '^(Model name|Architecture|CPU\(s\)|Thread\(s\) per core|CPU max MHz):' || true
grep MemTotal /proc/meminfo || true
uname -sr

cargo build --release -p executor -p executor-bench

# The original: its npm package is a node launcher plus per-platform optional dependencies that
# hold a Bun-compiled binary. We benchmark that binary directly (and the launcher for cold start
# and idle RSS only).
if [ -z "${EXECUTOR_ORIGINAL_BIN:-}" ] && [ -z "${BENCH_SKIP_ORIGINAL:-}" ]; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/executor-bench/original"
  installed() {
    [ -f "$cache/node_modules/executor/package.json" ] &&
      node -p "require('$cache/node_modules/executor/package.json').version" 2>/dev/null |
      grep -qx "$ORIGINAL_VERSION"
  }
  mkdir -p "$cache"
  [ -f "$cache/package.json" ] || echo '{"private":true}' >"$cache/package.json"
  if installed || (cd "$cache" && timeout 600 npm install --no-audit --no-fund --silent \
    "executor@$ORIGINAL_VERSION" >/dev/null 2>&1 && installed); then
    case "$(uname -s)" in Linux) os=linux ;; Darwin) os=darwin ;; *) os=unknown ;; esac
    case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) arch=unknown ;; esac
    for pkg in "executor-$os-$arch" "executor-$os-$arch-musl"; do
      if [ -x "$cache/node_modules/$pkg/bin/executor" ] &&
        "$cache/node_modules/$pkg/bin/executor" --version >/dev/null 2>&1; then
        export EXECUTOR_ORIGINAL_BIN="$cache/node_modules/$pkg/bin/executor"
        export EXECUTOR_ORIGINAL_WRAPPER="$cache/node_modules/executor/bin/executor"
        break
      fi
    done
    [ -n "${EXECUTOR_ORIGINAL_BIN:-}" ] ||
      echo "note: executor@$ORIGINAL_VERSION installed but no runnable binary for $os-$arch; measuring ours only"
  else
    echo "note: npm install executor@$ORIGINAL_VERSION failed (offline?); measuring ours only"
  fi
fi

echo "== ours vs original"
target/release/executor-bench

echo "== MCP surface (ours)"
(cd tests/e2e && npm ci --no-audit --no-fund >/dev/null)
EXECUTOR_BIN="$PWD/target/release/executor" node tests/e2e/scripts/bench-mcp.mjs
echo "== 5,000-tool search (ours, engine test)"
cargo test --release -p executor-engine --test catalog -- --nocapture 2>/dev/null | grep 'p50\|RSS'
