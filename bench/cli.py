#!/usr/bin/env python3
"""Wall time of `executor call` as a person at a terminal sees it, process start included.

  bench/cli.py OURS_BIN [ORIGINAL_BIN] [-n 50] [--cold 8]

warm: a daemon runs on a fresh data directory; each sample is one whole
`executor call executor coreTools providers list --base-url http://localhost:P` (a built-in
tool: no upstream, so the figure is the CLI and the server, not a network).
cold: a fresh data directory and nothing listening; one sample is the first `executor call`,
which starts the daemon, waits for it and answers.

With two binaries the runs alternate (ours, original, ours, ...) so the noise of this shared
machine falls on both; medians and the ratio are printed. Timing is Python's perf_counter
around subprocess.run, which adds about a millisecond to every sample of both.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

CALL = ["call", "executor", "coreTools", "providers", "list"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(binary, args, env, timeout=60):
    start = time.perf_counter()
    done = subprocess.run(
        [binary, *args], env=env, capture_output=True, timeout=timeout, cwd=env["EXECUTOR_DATA_DIR"]
    )
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(
            f"{binary} {' '.join(args)} exited {done.returncode}: {done.stderr.decode()[-400:]}"
        )
    return elapsed


def environment(data_dir):
    env = dict(os.environ)
    env["EXECUTOR_DATA_DIR"] = data_dir
    env["EXECUTOR_SCOPE_DIR"] = data_dir
    # The original checks npm and a registry at start; neither belongs in a timing.
    env["EXECUTOR_DISABLE_UPDATE_CHECK"] = "1"
    env["EXECUTOR_DISABLE_INTEGRATIONS_FETCH"] = "1"
    env["DO_NOT_TRACK"] = "1"
    return env


def stop(binary, env, origin):
    subprocess.run(
        [binary, "daemon", "stop", "--base-url", origin], env=env, capture_output=True, timeout=60
    )


def warm(binary, samples):
    data_dir = tempfile.mkdtemp(prefix="cli-bench-")
    env = environment(data_dir)
    origin = f"http://localhost:{free_port()}"
    try:
        for _ in range(3):  # the first starts the daemon; two more warm it
            run(binary, [*CALL, "--base-url", origin], env)
        return [run(binary, [*CALL, "--base-url", origin], env) for _ in range(samples)]
    finally:
        stop(binary, env, origin)
        shutil.rmtree(data_dir, ignore_errors=True)


def cold(binary):
    data_dir = tempfile.mkdtemp(prefix="cli-bench-cold-")
    env = environment(data_dir)
    origin = f"http://localhost:{free_port()}"
    try:
        return run(binary, [*CALL, "--base-url", origin], env)
    finally:
        stop(binary, env, origin)
        shutil.rmtree(data_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours")
    parser.add_argument("original", nargs="?")
    parser.add_argument("-n", type=int, default=50, help="warm samples per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", type=int, default=8, help="cold starts per binary")
    args = parser.parse_args()
    binaries = {"ours": os.path.abspath(args.ours)}
    if args.original:
        binaries["original"] = os.path.abspath(args.original)
    warm_samples = {name: [] for name in binaries}
    cold_samples = {name: [] for name in binaries}
    for _ in range(args.rounds):
        for name, binary in binaries.items():
            warm_samples[name] += warm(binary, args.n)
    for _ in range(args.cold):
        for name, binary in binaries.items():
            cold_samples[name].append(cold(binary))
    print(f"{'':10} {'warm call median':>18} {'p90':>8} {'cold auto-start median':>24} {'min':>8}")
    for name in binaries:
        w = sorted(warm_samples[name])
        c = sorted(cold_samples[name])
        p90 = w[int(len(w) * 0.9)]
        print(
            f"{name:10} {statistics.median(w):15.1f} ms {p90:5.1f} ms "
            f"{statistics.median(c):21.1f} ms {c[0]:5.1f} ms"
        )
    if len(binaries) == 2:
        wr = statistics.median(warm_samples["original"]) / statistics.median(warm_samples["ours"])
        cr = statistics.median(cold_samples["original"]) / statistics.median(cold_samples["ours"])
        print(f"original / ours: warm {wr:.1f}x, cold {cr:.1f}x")


if __name__ == "__main__":
    main()
