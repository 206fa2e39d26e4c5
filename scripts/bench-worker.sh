#!/usr/bin/env bash
# Worker benchmark: `habit serve` driven through its pipes by habit-bench, against pgbench
# running the same transactions (-M prepared, 1 client, same socket) in the same run.
# Prints requests/s and p50/p99 for completions.set and day.get at 1 and 64 in flight,
# each as a ratio to pgbench. Not a test: figures go to docs/performance.md.
#   SECONDS_PER_RUN=10 POOL_SIZES="4 8" scripts/bench-worker.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
RUN=${SECONDS_PER_RUN:-10}
POOLS=${POOL_SIZES:-4}

scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2
swift build -c release --product habit-bench >&2
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT
.build/release/habit migrate --database-url "$DATABASE_URL" --migrations-dir sql
psql -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL" -f scripts/bench/setup-worker.sql
WORKER_URL="host=$HABIT_PG_DIR/socket user=habit_worker dbname=postgres"

pgbench_run() { # script → "tps p50_ms p99_ms"
    local log=$HABIT_PG_DIR/pgbench-log
    rm -rf "$log"; mkdir -p "$log"; chmod 777 "$log"
    (cd "$log" && pgbench -n -M prepared -c 1 -j 1 -T "$RUN" -l -f "$OLDPWD/$1" "$DATABASE_URL" >"$log/summary" 2>&1)
    local tps
    tps=$(awk '/^tps/ {print $3; exit}' "$log/summary")
    cat "$log"/pgbench_log.* | awk '{print $3}' | sort -n | awk -v tps="$tps" '
        { v[NR] = $1 } END { printf "%s %.3f %.3f\n", tps, v[int(NR*0.50)+1]/1000, v[int(NR*0.99)+1]/1000 }'
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); PostgreSQL $(psql -d "$DATABASE_URL" -Atc 'show server_version'); fsync=$(psql -d "$DATABASE_URL" -Atc 'show fsync'), synchronous_commit=$(psql -d "$DATABASE_URL" -Atc 'show synchronous_commit')"
printf '%-16s %5s %5s %10s %9s %9s %10s %9s %9s %8s\n' method pool inflt worker_rps p50_ms p99_ms pgbench_tps pg_p50 pg_p99 ratio
for method in completions.set day.get; do
    script=scripts/bench/${method//./_}.pgbench
    read -r pg_tps pg_p50 pg_p99 < <(pgbench_run "$script")
    for pool in $POOLS; do
        for inflight in 1 64; do
            line=$(.build/release/habit-bench --binary .build/release/habit --database-url "$WORKER_URL" \
                   --method "$method" --in-flight "$inflight" --seconds "$RUN" --pool-size "$pool")
            rps=$(sed -E 's/.*"rps":([0-9.]+).*/\1/' <<<"$line")
            p50=$(sed -E 's/.*"p50_ms":([0-9.]+).*/\1/' <<<"$line")
            p99=$(sed -E 's/.*"p99_ms":([0-9.]+).*/\1/' <<<"$line")
            errors=$(sed -E 's/.*"errors":([0-9]+).*/\1/' <<<"$line")
            ratio=$(awk -v a="$rps" -v b="$pg_tps" 'BEGIN { printf "%.2f", a / b }')
            printf '%-16s %5s %5s %10s %9s %9s %10.1f %9s %9s %8s' "$method" "$pool" "$inflight" "$rps" "$p50" "$p99" "$pg_tps" "$pg_p50" "$pg_p99" "${ratio}x"
            [ "$errors" = 0 ] && echo || echo "  ($errors errors)"
        done
    done
done
