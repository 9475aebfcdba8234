#!/usr/bin/env bash
# The 20,000-execution load of issue #17 against a fresh release server: p50/p99 (bench/load.py),
# RSS and open file descriptors before and after. Usage: bench/load.sh [N] [IN_FLIGHT]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-20000}"; c="${2:-8}"
bin="${EXECUTOR_BIN:-target/release/executor}"
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
port=$((30000 + RANDOM % 10000))
EXECUTOR_DATA_DIR="$work/data" "$bin" web --port "$port" > "$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "localhost:$port/api/health" >/dev/null 2>&1 && break; sleep 0.1; done
token=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['token'])" "$work/data/server-control/auth.json")
state() { echo "RSS $(awk '/VmRSS/{printf "%.1f", $2/1024}' /proc/$pid/status) MiB, $(ls /proc/$pid/fd | wc -l) fds"; }
echo "before: $(state)"
python3 bench/load.py "$port" "$token" "$n" "$c"
sleep 1
echo "after: $(state)"
