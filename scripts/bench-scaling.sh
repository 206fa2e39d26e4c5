#!/usr/bin/env bash
# Scaling benchmark: N = 1, 2, 4, 8 `habit serve` workers through one pgbouncer 1.18
# (transaction mode, --prepared-statements off) in front of one PostgreSQL 15, each worker
# driven through its pipes by its own habit-bench with a fixed number of requests in flight.
# Prints aggregate requests/s per method and N, and where the CPU went: PostgreSQL (the
# postmaster and every backend, exited ones included), pgbouncer, the workers with their
# drivers, and whatever else ran on the machine meanwhile. Two baselines at N = 1 go
# straight to PostgreSQL: prepared statements on (the default) and off.
# Not a test: figures go to docs/scaling.md.
#
#   SECONDS_PER_RUN=10 WORKER_COUNTS="1 2 4 8" IN_FLIGHT=16 POOL_SIZE=4 BOUNCER_POOL=4 scripts/bench-scaling.sh
#
# The release binaries are built in SCRATCH_PATH (default .build-deploy), apart from other builds.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
RUN=${SECONDS_PER_RUN:-10}
COUNTS=${WORKER_COUNTS:-1 2 4 8}
IN_FLIGHT=${IN_FLIGHT:-16}
POOL=${POOL_SIZE:-4}
BOUNCER_POOL=${BOUNCER_POOL:-4}
METHODS=${METHODS:-day.get completions.set}
BASELINES=${BASELINES:-1}
SCRATCH=${SCRATCH_PATH:-.build-deploy}

scripts/pg-tmp ensure-packages
scripts/pgbouncer-tmp ensure-packages
swift build -c release --scratch-path "$SCRATCH" --product habit >&2
swift build -c release --scratch-path "$SCRATCH" --product habit-bench >&2
BIN=$SCRATCH/release
eval "$(scripts/pg-tmp start)"
PGBOUNCER_DIR=
cleanup() {
    if [ -n "$PGBOUNCER_DIR" ]; then scripts/pgbouncer-tmp stop "$PGBOUNCER_DIR"; fi
    scripts/pg-tmp stop "$HABIT_PG_DIR"
}
trap cleanup EXIT
"$BIN/habit" migrate --database-url "$DATABASE_URL" --migrations-dir sql 2>/dev/null
psql -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL" -f scripts/bench/setup-worker.sql
eval "$(scripts/pgbouncer-tmp start --pool-size "$BOUNCER_POOL")"
DIRECT_URL="host=$HABIT_PG_DIR/socket user=habit_worker dbname=postgres"
BOUNCER_URL="host=$PGBOUNCER_HOST port=$PGBOUNCER_PORT user=habit_worker dbname=postgres"
TICKS=$(getconf CLK_TCK)
POSTMASTER=$(head -1 "$HABIT_PG_DIR/data/postmaster.pid")
BOUNCER_PID=$(cat "$PGBOUNCER_DIR/pgbouncer.pid")

# CPU ticks (user + system) of a process, plus those of its reaped children when $2 = all.
ticks_of() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    stat=${stat##*) } # fields after the command name; utime is the 12th from here
    set -- $stat "$2"
    if [ "${!#}" = all ]; then echo $(( ${12} + ${13} + ${14} + ${15} )); else echo $(( ${12} + ${13} )); fi
}
# PostgreSQL: the postmaster with its reaped children, plus every live child.
postgres_ticks() {
    local total child
    total=$(ticks_of "$POSTMASTER" all)
    for child in $(ps -o pid= --ppid "$POSTMASTER"); do total=$(( total + $(ticks_of "$child" own) )); done
    echo "$total"
}
# Whole machine: busy and total ticks from /proc/stat.
machine_ticks() {
    awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8 + $9; total = busy + $5 + $6; print busy, total; exit }' /proc/stat
}

# One run: N drivers at once, each spawning its own worker. Prints one table line.
run() { # label url workers method extra-worker-args…
    local label=$1 url=$2 workers=$3 method=$4
    shift 4
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/habit-scaling.XXXXXX")
    local load pg0 bouncer0 busy0 total0
    load=$(cut -d' ' -f1 /proc/loadavg)
    pg0=$(postgres_ticks); bouncer0=$(ticks_of "$BOUNCER_PID" own); read -r busy0 total0 < <(machine_ticks)
    local index
    for index in $(seq 1 "$workers"); do
        # The subshell waits for habit-bench, which waits for its worker: the subshell's
        # reaped-children ticks are then the driver's and the worker's CPU.
        ( "$BIN/habit-bench" --binary "$BIN/habit" --database-url "$url" --method "$method" --in-flight "$IN_FLIGHT" \
              --seconds "$RUN" --pool-size "$POOL" "$@" >"$dir/$index.json"
          ticks_of "$BASHPID" all >"$dir/$index.ticks" ) &
    done
    # Halfway through, the resident memory of each worker (KiB).
    ( sleep "$(awk -v run="$RUN" 'BEGIN { print run / 2 }')"
      for pid in $(pgrep -f -- "^$BIN/habit serve" || true); do awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true; done
    ) >"$dir/rss" &
    wait
    local pg1 bouncer1 busy1 total1
    pg1=$(postgres_ticks); bouncer1=$(ticks_of "$BOUNCER_PID" own); read -r busy1 total1 < <(machine_ticks)
    local habit_ticks=0 file
    for file in "$dir"/*.ticks; do habit_ticks=$(( habit_ticks + $(cat "$file") )); done
    local rss
    rss=$(awk '{ sum += $1; n++ } END { if (n) printf "%.1f", sum / n / 1024; else print "-" }' "$dir/rss")
    cat "$dir"/*.json | awk -v label="$label" -v rss="$rss" -v n="$workers" -v method="$method" -v load="$load" -v ticks="$TICKS" \
        -v pg=$(( pg1 - pg0 )) -v bouncer=$(( bouncer1 - bouncer0 )) -v habit="$habit_ticks" \
        -v busy=$(( busy1 - busy0 )) -v total=$(( total1 - total0 )) -v cores="$(nproc)" '
        {
            match($0, /"rps":[0-9.]+/); rps += substr($0, RSTART + 6, RLENGTH - 6)
            match($0, /"requests":[0-9]+/); requests += substr($0, RSTART + 11, RLENGTH - 11)
            match($0, /"errors":[0-9]+/); errors += substr($0, RSTART + 9, RLENGTH - 9)
            match($0, /"p50_ms":[0-9.]+/); p50 = substr($0, RSTART + 9, RLENGTH - 9); if (p50 > maxp50) maxp50 = p50
            match($0, /"p99_ms":[0-9.]+/); p99 = substr($0, RSTART + 9, RLENGTH - 9); if (p99 > maxp99) maxp99 = p99
            match($0, /"seconds":[0-9.]+/); seconds = substr($0, RSTART + 10, RLENGTH - 10)
        }
        END {
            wall = total / cores / ticks            # seconds the run took, from /proc/stat
            other = busy - pg - bouncer - habit; if (other < 0) other = 0
            printf "%-24s %2d %-16s %9.0f %6d %8.2f %8.2f %6.2f %6.2f %6.2f %6.2f %6.2f %7.3f %7.3f %6s %5s\n",
                label, n, method, rps, errors, maxp50, maxp99,
                busy / ticks / wall, pg / ticks / wall, bouncer / ticks / wall, habit / ticks / wall, other / ticks / wall,
                requests ? pg / ticks * 1000 / requests : 0, requests ? habit / ticks * 1000 / requests : 0, rss, load
        }'
    rm -rf "$dir"
}

echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
echo "PostgreSQL $(psql -d "$DATABASE_URL" -Atc 'show server_version'), fsync=$(psql -d "$DATABASE_URL" -Atc 'show fsync'), synchronous_commit=$(psql -d "$DATABASE_URL" -Atc 'show synchronous_commit'); $("$(scripts/pgbouncer-tmp binary)" --version | head -1), pool_mode=transaction, default_pool_size=$BOUNCER_POOL"
echo "each worker: --pool-size $POOL, driven by one habit-bench with $IN_FLIGHT in flight, $RUN s per run; load = 1-min load average before the run"
echo "rssMiB = resident memory per worker halfway through the run"
echo "cores = CPU seconds per second (busy: whole machine; pg: PostgreSQL; pgb: pgbouncer; habit: workers + drivers; other: the rest); ms/req = CPU ms per request"
printf '%-24s %2s %-16s %9s %6s %8s %8s %6s %6s %6s %6s %6s %7s %7s %6s %5s\n' \
    route N method req/s errors p50max p99max busy pg pgb habit other pg_ms habit_ms rssMiB load
for method in $METHODS; do
    if [ "$BASELINES" = 1 ]; then
        run "direct, prepared on" "$DIRECT_URL" 1 "$method"
        run "direct, prepared off" "$DIRECT_URL" 1 "$method" --prepared-statements off
    fi
    for workers in $COUNTS; do
        run "pgbouncer, prepared off" "$BOUNCER_URL" "$workers" "$method" --prepared-statements off
    done
done
