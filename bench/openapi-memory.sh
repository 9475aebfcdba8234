#!/usr/bin/env bash
# Issue #18 (13): the server's memory around importing a big OpenAPI spec. Starts the built
# binary on a fresh data directory, serves the spec over loopback, imports it, and prints RSS
# before, right after, once the compiled spec has been idle long enough to be dropped (~60-120 s),
# the peak, and RSS after a restart. Usage:
#   bench/openapi-memory.sh [spec.json] [executor binary]
# Default spec: GitHub's REST description from crates/executor-openapi/tests/fixtures.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
spec="${1:-$root/crates/executor-openapi/tests/fixtures/node_modules/@octokit/openapi/generated/api.github.com.json}"
bin="${2:-$root/target/release/executor}"
[ -x "$bin" ] || bin="$root/target/debug/executor"
work="$(mktemp -d)"
trap 'kill $server $files 2>/dev/null || true; rm -rf "$work"' EXIT
cp "$spec" "$work/spec.json"
port=$((40000 + RANDOM % 20000)); files_port=$((port + 1))
(cd "$work" && exec python3 -m http.server "$files_port" --bind 127.0.0.1 >/dev/null 2>&1) & files=$!
start() { EXECUTOR_LOG="info,executor_engine=debug" HOME="$work/home" "$bin" web --port "$port" --hostname 127.0.0.1 >"$work/log" 2>&1 & server=$!; for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/api/integrations" -o /dev/null -H "authorization: Bearer $(token)" && return; sleep 0.1; done; }
token() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['token'])" "$work/home/.executor/server-control/auth.json" 2>/dev/null || true; }
rss() { awk '/^VmRSS/{printf "%.1f", $2/1024}' "/proc/$server/status"; }
hwm() { awk '/^VmHWM/{printf "%.1f", $2/1024}' "/proc/$server/status"; }
start; sleep 1
before=$(rss)
t0=$(date +%s.%N)
curl -sf -X POST "http://127.0.0.1:$port/api/openapi/specs" -H "authorization: Bearer $(token)" -H 'content-type: application/json' \
  -d "{\"spec\":{\"kind\":\"url\",\"url\":\"http://127.0.0.1:$files_port/spec.json\"},\"slug\":\"big\"}" -o "$work/added.json"
t1=$(date +%s.%N)
after=$(rss); peak=$(hwm)
for _ in $(seq 30); do sleep 5; settled=$(rss); grep -q "compiled OpenAPI specs idle" "$work/log" && break; done
settled=$(rss)
kill "$server"; wait "$server" 2>/dev/null || true
start; sleep 2; restarted=$(rss)
size=$(stat -c %s "$spec")
printf 'spec %s (%.1f MB): import %.1f s; RSS before %s MB, after import %s MB, idle %s MB, peak %s MB (%.1f× the document); after restart %s MB\n' \
  "$(basename "$spec")" "$(echo "$size/1048576" | bc -l)" "$(echo "$t1-$t0" | bc -l)" "$before" "$after" "$settled" "$peak" "$(echo "$peak*1048576/$size" | bc -l)" "$restarted"
