#!/usr/bin/env bash
# p50 of 800 sequential `return 1` executions over one keep-alive connection (Python client),
# for one binary: bench/seq-return1.sh BIN [N]. Alternate binaries to compare them.
set -euo pipefail
bin=$1; n=${2:-800}
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
port=$((30000 + RANDOM % 10000))
EXECUTOR_DATA_DIR="$work/data" "$bin" web --port "$port" > "$work/server.log" 2>&1 &
for _ in $(seq 100); do curl -sf "localhost:$port/api/health" >/dev/null 2>&1 && break; sleep 0.1; done
token=$(python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['token'])" "$work/data/server-control/auth.json")
python3 - "$port" "$token" "$n" <<'PY'
import http.client,json,sys,time,statistics
port,token,n=int(sys.argv[1]),sys.argv[2],int(sys.argv[3])
c=http.client.HTTPConnection('127.0.0.1',port)
h={'Authorization':'Bearer '+token,'Content-Type':'application/json'}
body=json.dumps({'code':'return 1','autoApprove':True})
ts=[]
for i in range(n+100):
    t=time.perf_counter(); c.request('POST','/api/executions',body,h); r=c.getresponse(); r.read(); d=time.perf_counter()-t
    if i>=100: ts.append(d)
print('%.3f ms' % (statistics.median(ts)*1000))
PY
