#!/usr/bin/env python3
"""A bounded load on a running server: N executions of `return 1` over `C` keep-alive
connections (threads), then p50/p99 latency. Loopback only. Used for the issue #17 re-run of the
20,000-execution load; RSS and open fds are read from /proc by bench/load.sh.

usage: load.py PORT TOKEN [N=20000] [C=8]
"""
import http.client, json, sys, threading, time

port, token = int(sys.argv[1]), sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
c = int(sys.argv[4]) if len(sys.argv) > 4 else 8
body = json.dumps({"code": "return 1"})
headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
lat, errors, lock = [], [0], threading.Lock()
counter = iter(range(n))

def worker():
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    mine = []
    while True:
        with lock:
            if next(counter, None) is None:
                break
        t = time.perf_counter()
        try:
            conn.request("POST", "/api/executions", body, headers)
            r = conn.getresponse(); r.read()
            ok = r.status == 200
        except Exception:
            ok = False
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine.append(time.perf_counter() - t)
        if not ok:
            with lock:
                errors[0] += 1
    with lock:
        lat.extend(mine)

start = time.perf_counter()
threads = [threading.Thread(target=worker) for _ in range(c)]
for t in threads: t.start()
for t in threads: t.join()
took = time.perf_counter() - start
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
print(f"{len(lat)} executions, {c} in flight, {errors[0]} errors, {len(lat)/took:.0f}/s, "
      f"p50 {q(0.5):.2f} ms, p99 {q(0.99):.2f} ms")
