#!/usr/bin/env bash
# Server CPU per execution and throughput of `return 1` under bench/load.py, for one binary:
# bench/cpu-ab.sh BIN [N] [IN_FLIGHT]. Alternate two binaries (A B, then B A) to compare them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1; n=${2:-6000}; c=${3:-8}
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
port=$((30000 + RANDOM % 10000))
EXECUTOR_DATA_DIR="$work/data" "$bin" web --port "$port" > "$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf "localhost:$port/api/health" >/dev/null 2>&1 && break; sleep 0.1; done
token=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['token'])" "$work/data/server-control/auth.json")
python3 bench/load.py "$port" "$token" 500 "$c" >/dev/null
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
out=$(python3 bench/load.py "$port" "$token" "$n" "$c")
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
tck=$(getconf CLK_TCK)
echo "$out" | grep -o '[0-9]*/s' | tr '\n' ' '
python3 -c "print('cpu/exec %.3f ms' % (($t1-$t0)/$tck*1000/$n))"
