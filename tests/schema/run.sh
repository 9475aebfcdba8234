#!/usr/bin/env bash
# schemathesis (PyPI) against the API's own OpenAPI document: generated requests to every
# route that stays on this machine, with the bearer token; it fails on any 5xx and on any
# answer its schema refuses. Routes that dial out (probes, adds that fetch a spec or spawn a
# stdio server, health checks, OAuth discovery) and the endless event stream are left out:
# tests use no network but loopback.
#
#   tests/schema/run.sh [path/to/executor]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-$root/target/debug/executor}"
version=4.32.5

installed() { python3 -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null; }
# Run through the interpreter: a user install's scripts directory need not be on PATH.
schemathesis() { python3 -c 'import sys; from schemathesis.cli import schemathesis; sys.argv[0] = "schemathesis"; sys.exit(schemathesis())' "$@"; }
if [ "$(installed)" != "$version" ]; then
  # A Debian system Python refuses user installs unless told (PEP 668); a pyenv one does not.
  python3 -m pip install --quiet --disable-pip-version-check "schemathesis==$version" ||
    python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "schemathesis==$version"
fi

data="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
EXECUTOR_DATA_DIR="$data" "$bin" web --foreground --port "$port" --hostname 127.0.0.1 >"$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 100); do
  curl -fsS "$base/api/health" >/dev/null 2>&1 && break
  sleep 0.1
done
token="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$data/server-control/auth.json")"

dials_out='^/api/(mcp/probe|mcp/servers$|openapi/preview|openapi/specs|openapi/integrations/[^/]+/spec|graphql/integrations$|oauth/(probe|start|complete|clients/register-dynamic)|connections/validate|connections/[^/]+/[^/]+/[^/]+/(health|refresh)|executions/events|docs)'
status=0
schemathesis run "$base/api/openapi.json" \
  --header "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --exclude-path-regex "$dials_out" \
  --max-examples "${SCHEMATHESIS_EXAMPLES:-25}" \
  --generation-deterministic \
  --request-timeout 20 \
  --workers 2 || status=$?
if grep -q 'panicked' "$data/server.log"; then
  echo "the server logged a panic:" >&2
  grep -B2 -A8 'panicked' "$data/server.log" >&2
  status=1
fi
exit "$status"
