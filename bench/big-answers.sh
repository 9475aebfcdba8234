#!/usr/bin/env bash
# RSS of a release server across big tool answers and big tool arguments (issue #17, defect 3).
# An OpenAPI integration in front of a small local HTTP API: GET /big answers ANSWER_MB of JSON,
# POST /sink takes any body. Prints VmRSS (MiB) idle, after RUNS big answers, and after RUNS
# calls with ARGS_MB of arguments; set MALLOC_ARENA_MAX etc. in the environment to compare.
# Usage: bench/big-answers.sh [RUNS] [ANSWER_MB] [ARGS_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"; answer_mb="${2:-10}"; args_mb="${3:-5}"
bin="${EXECUTOR_BIN:-target/release/executor}"
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
port_api=$((20000 + RANDOM % 10000)); port=$((port_api + 1))

python3 - "$port_api" "$answer_mb" > "$work/api.log" 2>&1 <<'PY' &
import http.server, json, sys
port, mb = int(sys.argv[1]), int(sys.argv[2])
big = json.dumps({"blob": "x" * (mb * 1024 * 1024)}).encode()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, body):
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def do_GET(self): self.reply(big)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0))); self.reply(b'{"ok":true}')
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY

EXECUTOR_DATA_DIR="$work/data" "$bin" web --port "$port" > "$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -f "$work/data/server-control/auth.json" ] && curl -sf "localhost:$port/api/health" >/dev/null 2>&1 && break; sleep 0.1; done
auth="authorization: Bearer $(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['token'])" "$work/data/server-control/auth.json")"
rss() { awk '/VmRSS/{printf "%.1f", $2/1024}' "/proc/$pid/status"; }
api() { curl -sf "localhost:$port$1" -H "$auth" -H 'content-type: application/json' -d "$2" >/dev/null; }
spec=$(python3 -c "import json,sys;print(json.dumps({'openapi':'3.0.0','info':{'title':'big','version':'1'},'servers':[{'url':'http://127.0.0.1:'+sys.argv[1]}],'paths':{'/big':{'get':{'operationId':'big','responses':{'200':{'description':'ok'}}}},'/sink':{'post':{'operationId':'sink','requestBody':{'content':{'application/json':{'schema':{'type':'object'}}}},'responses':{'200':{'description':'ok'}}}}}}))" "$port_api")
api /api/openapi/specs "$(python3 -c "import json,sys;print(json.dumps({'spec':{'kind':'blob','value':sys.argv[1]},'slug':'big','name':'Big'}))" "$spec")"
api /api/connections '{"owner":"org","name":"main","integration":"big","template":"none","value":""}'
sleep 1
echo "idle: $(rss) MiB"
echo "one answer: $(curl -sf "localhost:$port/api/executions" -H "$auth" -H 'content-type: application/json' -d '{"code":"const r = await tools.big.org.main.big.big({}); return r.ok ? r.data.blob.length : r.error.code","autoApprove":true}' | head -c 200)"
for _ in $(seq "$runs"); do
  api /api/executions '{"code":"const r = await tools.big.org.main.big.big({}); return r.ok ? r.data.blob.length : r.error.code","autoApprove":true}'
done
sleep 1
echo "after $runs answers of $answer_mb MiB: $(rss) MiB"
for _ in $(seq "$runs"); do
  api /api/executions "{\"code\":\"const r = await tools.big.org.main.sink.sink({body: {data: 'x'.repeat($args_mb * 1024 * 1024)}}); return r.ok\",\"autoApprove\":true}"
done
sleep 1
echo "after $runs calls with $args_mb MiB of arguments: $(rss) MiB"
du -sh "$work/data" | sed 's/^/data dir: /'
