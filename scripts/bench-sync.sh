#!/usr/bin/env bash
# Sync benchmark (issue 18), release build, on USERS users × 10 habits × 3 years of history
# (scripts/bench/setup-streaks.sql):
#   1. `sync.pull` with nothing new (each user's caught-up cursor, taken by habit-bench first)
#      against `day.get` in the same rounds, IN_FLIGHT requests in flight, alternating which
#      goes first (this machine's speed drifts): requests/s, p50 and the ratio (target >= 0.8).
#   2. `sync.push` of one completions.set mutation against completions.set itself (same rounds).
#   3. A full first pull (no cursor, pages of LIMIT) of every user through one worker, the
#      worker's resident memory read from /proc after each page: pages, rows, first/peak/last RSS.
# Not a test: figures go to docs/performance.md ("Sync").
#
#   USERS=64 ROUNDS=5 SECONDS_PER_RUN=4 IN_FLIGHT="1 64" LIMIT=1000 scripts/bench-sync.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
USERS=${USERS:-64} RUN=${SECONDS_PER_RUN:-4} ROUNDS=${ROUNDS:-5} POOL=${POOL_SIZE:-4} LIMIT=${LIMIT:-1000}
IN_FLIGHT=${IN_FLIGHT:-1 64}

scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2
swift build -c release --product habit-bench >&2
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT
.build/release/habit migrate --database-url "$DATABASE_URL" --migrations-dir sql >&2
psql -q -v users="$USERS" -d "$DATABASE_URL" -f scripts/bench/setup-streaks.sql
echo "data: $USERS users, $(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_templates') habits," \
     "$(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_periods') periods," \
     "$(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_completions') completions," \
     "$(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_skips') skips"
WORKER_URL="host=$HABIT_PG_DIR/socket user=habit_worker dbname=postgres"
TODAY=$(psql -Atd "$DATABASE_URL" -c "SELECT (now() AT TIME ZONE 'Europe/Berlin')::date")

bench() { # method in-flight → "rps p50 errors"
    local line
    line=$(.build/release/habit-bench --binary .build/release/habit --database-url "$WORKER_URL" --users "$USERS" \
           --method "$1" --in-flight "$2" --seconds "$RUN" --pool-size "$POOL" --date "$TODAY" --habit-suffix=-1)
    echo "$(field rps "$line") $(field p50_ms "$line") $(field errors "$line")"
}
field() { sed -E "s/.*\"$1\":([0-9.]+).*/\\1/" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "machine: $(nproc) cores, $(uname -r); worker --pool-size $POOL; $ROUNDS rounds of $RUN s; load $(cut -d' ' -f1-3 /proc/loadavg)"
# compare BASE METHOD LABEL TARGET: METHOD against BASE in the same rounds at each IN_FLIGHT,
# alternating which goes first (this machine's speed drifts): rps, p50 and the median ratio.
compare() {
    local base=$1 method=$2 label=$3 target=$4 inflight round ratios b m
    for inflight in $IN_FLIGHT; do
        printf '%9s %5s %16s %7s %12s %7s %10s\n' in_flight round "$base" p50 "$method" p50 ratio
        ratios=()
        for round in $(seq "$ROUNDS"); do
            if [ $((round % 2)) = 1 ]; then
                b=$(bench "$base" "$inflight"); m=$(bench "$method" "$inflight")
            else
                m=$(bench "$method" "$inflight"); b=$(bench "$base" "$inflight")
            fi
            read -r base_rps base_p50 base_err <<<"$b"
            read -r method_rps method_p50 method_err <<<"$m"
            ratios+=("$(ratio "$method_rps" "$base_rps")")
            printf '%9s %5s %16s %7s %12s %7s %9sx' "$inflight" "$round" "$base_rps" "$base_p50" "$method_rps" "$method_p50" "${ratios[-1]}"
            [ $((base_err + method_err)) = 0 ] && echo || echo "  ($((base_err + method_err)) errors)"
        done
        echo "median $label at $inflight in flight: $(median "${ratios[@]}")x$target"
    done
}

compare day.get sync.pull "sync.pull (nothing new)/day.get" " (target >= 0.8)"
# sync.push against completions.set: the same write (one completions.set), applied once through
# the replay record, against the method called directly. No target in the issue: the figure says
# what exactly-once costs per mutation.
compare completions.set sync.push "sync.push (one completions.set)/completions.set" ""

# Full first pulls: every user's whole state in pages of LIMIT, the worker's RSS after each page.
python3 - "$WORKER_URL" "$USERS" "$LIMIT" <<'PY'
import hashlib, json, subprocess, sys, time, uuid
url, users, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
worker = subprocess.Popen([".build/release/habit", "serve", "--database-url", url, "--pool-size", "1", "--log-level", "warning"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def rss_kib():
    with open(f"/proc/{worker.pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
pages = rows = biggest = 0
samples = []
start = time.time()
for n in range(1, users + 1):
    user = str(uuid.UUID(hashlib.md5(f"bench-user-{n}".encode()).hexdigest()))
    cursor = None
    while True:
        params = {"user_id": user, "limit": limit}
        if cursor: params["cursor"] = cursor
        worker.stdin.write((json.dumps({"jsonrpc": "2.0", "id": pages, "method": "sync.pull", "params": params}) + "\n").encode())
        worker.stdin.flush()
        line = worker.stdout.readline()
        biggest = max(biggest, len(line))
        page = json.loads(line)["result"]
        pages += 1
        rows += sum(len(v) if isinstance(v, list) else (v is not None) for v in page["changes"].values())
        samples.append(rss_kib())
        cursor = page["cursor"]
        if not page["has_more"]: break
seconds = time.time() - start
worker.stdin.close(); worker.wait()
print(f"full pulls: {users} users, {pages} pages of <= {limit}, {rows} rows, {rows / seconds:.0f} rows/s, largest answer {biggest / 1024:.0f} KiB; "
      f"worker RSS first page {samples[0] / 1024:.1f} MiB, peak {max(samples) / 1024:.1f} MiB, last {samples[-1] / 1024:.1f} MiB, "
      f"median {sorted(samples)[len(samples) // 2] / 1024:.1f} MiB")
PY
