#!/usr/bin/env bash
# Builds the release binary and the benchmark driver, then prints the BENCHMARKS.md table.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p executor -p executor-bench
exec target/release/executor-bench
