#!/usr/bin/env bash
# Idle memory of fresh starts: RSS, anonymous and file-backed (the binary's mapped code), 3 s after
# the first `GET /api/health` 200, each on a new data dir. The driver's "idle RSS" row measures the
# same; this splits it and needs no build of the driver.
#
#   bench/idle-rss.sh [starts]      (EXECUTOR_BIN overrides target/release/executor)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${EXECUTOR_BIN:-target/release/executor}"
for _ in $(seq 1 "${1:-3}"); do
  dir=$(mktemp -d)
  port=$((20000 + RANDOM % 20000))
  HOME="$dir" EXECUTOR_DATA_DIR="$dir/data" "$bin" web --port "$port" --hostname 127.0.0.1 \
    >"$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 500); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$port/api/health")" = 200 ] && break
    sleep 0.01
  done
  sleep 3
  awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s %.1f MiB  ", $1, $2 / 1024 } END { print "" }' \
    "/proc/$pid/status"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$dir"
done
