#!/usr/bin/env python3
"""Per-request latency through `habit serve`, one request at a time (scripts/bench-core.sh).

    worker-latency.py HABIT_BINARY WORKER_URL POOL_SIZE WARMUP < requests.jsonl

Spawns `habit serve --database-url WORKER_URL --pool-size POOL_SIZE --log-level warning`, sends
the JSON-RPC request lines of stdin one at a time (the next only after the previous one's
answer), and prints one JSON line: {"requests","errors","p50_ms","min_ms","max_ms","mean_ms"}
over every request after the first WARMUP (those warm the pool's connections and their
prepared statements, and are not counted). The first error answer is copied to stderr.

habit-bench measures throughput of many similar requests; this is for requests that must each
differ (a fresh habit per `habits.create`, a fresh user per `account.import`) and whose single
latency is the figure.
"""
import json
import statistics
import subprocess
import sys
import time


def main() -> int:
    binary, url, pool, warmup = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    worker = subprocess.Popen([binary, "serve", "--database-url", url, "--pool-size", pool, "--log-level", "warning"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    latencies, errors, first_error = [], 0, None
    for index, line in enumerate(sys.stdin):
        line = line.strip()
        if not line:
            continue
        request_id = json.loads(line)["id"]
        start = time.perf_counter()
        worker.stdin.write(line.encode() + b"\n")
        worker.stdin.flush()
        while True:  # skip notifications (no id): none are expected
            answer = worker.stdout.readline()
            if not answer:
                print("worker-latency: the worker exited", file=sys.stderr)
                return 1
            message = json.loads(answer)
            if message.get("id") == request_id:
                break
        elapsed = time.perf_counter() - start
        if "error" in message:
            errors += 1
            first_error = first_error or answer.decode()[:500]
        elif index >= warmup:
            latencies.append(elapsed * 1000)
    worker.stdin.close()
    worker.wait()
    if first_error:
        print(f"worker-latency: {errors} error answers, the first: {first_error}", file=sys.stderr)
    if not latencies:
        latencies = [0.0]
    print(json.dumps({"requests": len(latencies), "errors": errors, "p50_ms": round(statistics.median(latencies), 3),
                      "min_ms": round(min(latencies), 3), "max_ms": round(max(latencies), 3),
                      "mean_ms": round(statistics.fmean(latencies), 3)}, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
