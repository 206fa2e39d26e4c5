#!/usr/bin/env bash
# Worker benchmark: `habit serve` driven through its pipes by habit-bench, against pgbench
# running the same transactions (-M prepared, 1 client, same socket) in the same run.
# For completions.set and day.get at 1 and at 64 requests in flight it alternates short
# pgbench and worker runs (ROUNDS times; this machine's speed drifts by tens of percent
# within a minute, so each ratio compares neighbours) and prints requests/s, p50/p99 latency
# and the ratio per round, then the median ratio. Not a test: figures go to docs/performance.md.
#   ROUNDS=5 SECONDS_PER_RUN=4 POOL_SIZE=4 [METHODS=day.get] scripts/bench-worker.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
RUN=${SECONDS_PER_RUN:-4}
ROUNDS=${ROUNDS:-5}
POOL=${POOL_SIZE:-4}

scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2
swift build -c release --product habit-bench >&2
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT
.build/release/habit migrate --database-url "$DATABASE_URL" --migrations-dir sql >&2
psql -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL" -f scripts/bench/setup-worker.sql
WORKER_URL="host=$HABIT_PG_DIR/socket user=habit_worker dbname=postgres"

pgbench_run() { # script → "tps p50_ms p99_ms"
    local log=$HABIT_PG_DIR/pgbench-log
    rm -rf "$log"; mkdir -p "$log"; chmod 777 "$log"
    (cd "$log" && pgbench -n -M prepared -c 1 -j 1 -T "$RUN" -l -f "$OLDPWD/$1" "$DATABASE_URL" >"$log/summary" 2>&1)
    local tps
    tps=$(awk '/^tps/ {print $3; exit}' "$log/summary")
    cat "$log"/pgbench_log.* | awk '{print $3}' | sort -n | awk -v tps="$tps" '
        { v[NR] = $1 } END { printf "%.1f %.3f %.3f\n", tps, v[int(NR*0.50)+1]/1000, v[int(NR*0.99)+1]/1000 }'
}

field() { sed -E "s/.*\"$1\":([0-9.]+).*/\\1/" <<<"$2"; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); PostgreSQL $(psql -d "$DATABASE_URL" -Atc 'show server_version'); fsync=$(psql -d "$DATABASE_URL" -Atc 'show fsync'), synchronous_commit=$(psql -d "$DATABASE_URL" -Atc 'show synchronous_commit'); worker --pool-size $POOL; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %5s %5s %10s %8s %8s %11s %8s %8s %7s\n' method inflt round worker_rps p50_ms p99_ms pgbench_tps pg_p50 pg_p99 ratio
for method in ${METHODS:-completions.set day.get}; do
    script=scripts/bench/${method//./_}.pgbench
    for inflight in 1 64; do
        ratios=()
        for round in $(seq "$ROUNDS"); do
            read -r pg_tps pg_p50 pg_p99 < <(pgbench_run "$script")
            line=$(.build/release/habit-bench --binary .build/release/habit --database-url "$WORKER_URL" \
                   --method "$method" --in-flight "$inflight" --seconds "$RUN" --pool-size "$POOL")
            rps=$(field rps "$line") p50=$(field p50_ms "$line") p99=$(field p99_ms "$line") errors=$(field errors "$line")
            ratio=$(awk -v a="$rps" -v b="$pg_tps" 'BEGIN { printf "%.2f", a / b }')
            ratios+=("$ratio")
            printf '%-16s %5s %5s %10s %8s %8s %11s %8s %8s %6sx' "$method" "$inflight" "$round" "$rps" "$p50" "$p99" "$pg_tps" "$pg_p50" "$pg_p99" "$ratio"
            [ "$errors" = 0 ] && echo || echo "  ($errors errors)"
        done
        median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        printf '%-16s %5s  median ratio %sx\n' "$method" "$inflight" "$median"
    done
done
