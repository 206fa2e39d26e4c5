#!/usr/bin/env bash
# Worker benchmark: `habit serve` driven through its pipes by habit-bench, against two pgbench
# baselines run in the same rounds (-M prepared, 1 client, same socket, as the owner postgres):
#   twin  scripts/bench/<method>.pgbench: the worker's transaction sent statement by statement —
#         BEGIN; one set_config statement for role, claims and timeout; the statement; COMMIT.
#   bare  scripts/bench/<method>_bare.pgbench: only the statements that do the work, autocommit,
#         no role or claims — what a client talking straight to the tables gets
#         (completions.set: INSERT … ON CONFLICT DO NOTHING to complete, DELETE to un-complete;
#         day.get: the two plain SELECTs of the Habbit daily-view spec).
# For completions.set and day.get at 1 and at 64 requests in flight, each round runs the three
# back to back (twin, worker, bare; every other round bare first) — this machine's speed drifts
# by tens of percent within a minute, so each ratio compares neighbours — and prints worker
# requests/s, twin and bare tps with p50 latencies, and worker/twin and worker/bare; then the
# median of each ratio. Not a test: figures go to docs/performance.md.
#
#   FSYNC=both ROUNDS=5 SECONDS_PER_RUN=4 POOL_SIZE=4 [METHODS=day.get] scripts/bench-worker.sh
#
# FSYNC=on | off | both (default both: the issue asks for both). Each setting gets a fresh
# throwaway server (scripts/pg-tmp, PG_TMP_OPTIONS='-c fsync=off' for off), migrated and filled
# the same way, and its tables are headed by the server's fsync and synchronous_commit. Only
# fsync changes: synchronous_commit stays on, so commits still wait for their WAL write, just
# not for the disk — the database's own work shows without the disk's flush time.
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=${SECONDS_PER_RUN:-4}
ROUNDS=${ROUNDS:-5}
POOL=${POOL_SIZE:-4}
case ${FSYNC:-both} in
    on) FSYNC_SETTINGS="on" ;;
    off) FSYNC_SETTINGS="off" ;;
    both) FSYNC_SETTINGS="on off" ;;
    *) echo "FSYNC must be on, off or both" >&2; exit 64 ;;
esac
# The dates of scripts/bench/*.pgbench: completions.set writes 2026-11-02, day.get reads
# 2026-10-20 (a day with completions from setup-worker.sql).
declare -A DATE=([completions.set]=2026-11-02 [day.get]=2026-10-20)

. scripts/bench/common.sh
bench_traps
bench_build

start_server() { # fsync setting
    bench_start_server "$1"
    psql -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL" -f scripts/bench/setup-worker.sql
}

worker_run() { # method in-flight → "rps p50_ms errors"
    habit_bench --method "$1" --in-flight "$2" --date "${DATE[$1]}"
}

# One run of one side; sets twin_tps twin_p50, bare_tps bare_p50, or rps p50 errors.
measure() { # twin|worker|bare (uses $twin, $bare, $method, $inflight)
    local out
    case $1 in
        twin) out=$(pgbench_run "$twin"); read -r twin_tps twin_p50 <<<"$out" ;;
        bare) out=$(pgbench_run "$bare"); read -r bare_tps bare_p50 <<<"$out" ;;
        worker) out=$(worker_run "$method" "$inflight"); read -r rps p50 errors <<<"$out" ;;
    esac
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); worker --pool-size $POOL; $ROUNDS rounds of $RUN s per run"
for fsync in $FSYNC_SETTINGS; do
    start_server "$fsync"
    echo
    echo "PostgreSQL $(psql -d "$DATABASE_URL" -Atc 'show server_version'): fsync=$(psql -d "$DATABASE_URL" -Atc 'show fsync'), synchronous_commit=$(psql -d "$DATABASE_URL" -Atc 'show synchronous_commit'); load $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-16s %5s %5s %10s %7s %9s %7s %9s %7s %8s %8s\n' \
        method inflt round worker_rps w_p50 twin_tps t_p50 bare_tps b_p50 w/twin w/bare
    for method in ${METHODS:-completions.set day.get}; do
        twin=scripts/bench/${method//./_}.pgbench
        bare=scripts/bench/${method//./_}_bare.pgbench
        for inflight in 1 64; do
            twin_ratios=() bare_ratios=()
            for round in $(seq "$ROUNDS"); do
                if [ $((round % 2)) = 1 ]; then order="twin worker bare"; else order="bare worker twin"; fi
                for side in $order; do measure "$side"; done
                twin_ratios+=("$(ratio "$rps" "$twin_tps")") bare_ratios+=("$(ratio "$rps" "$bare_tps")")
                printf '%-16s %5s %5s %10s %7s %9s %7s %9s %7s %7sx %7sx' "$method" "$inflight" "$round" \
                    "$rps" "$p50" "$twin_tps" "$twin_p50" "$bare_tps" "$bare_p50" "${twin_ratios[-1]}" "${bare_ratios[-1]}"
                [ "$errors" = 0 ] && echo || echo "  ($errors errors)"
            done
            printf '%-16s %5s  fsync=%s  median worker/twin %sx, worker/bare %sx\n' \
                "$method" "$inflight" "$fsync" "$(median "${twin_ratios[@]}")" "$(median "${bare_ratios[@]}")"
        done
    done
    bench_cleanup
done
