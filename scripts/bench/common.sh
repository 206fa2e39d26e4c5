# Shared pieces of the worker benchmarks (scripts/bench-worker.sh, scripts/bench-core.sh).
# Sourced from the repository root by a script running with `set -euo pipefail`; defines
# functions only, plus PG_DIR (the current throwaway server, empty when none).
# The caller sets RUN (seconds per run) and POOL (the worker's --pool-size).

command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

# The release builds of the worker and the load driver (and the packages they need).
bench_build() {
    scripts/pg-tmp ensure-packages
    swift build -c release --product habit >&2
    swift build -c release --product habit-bench >&2
}

# The server of the current run; stopped and deleted on every way out (bench_traps).
PG_DIR=
bench_cleanup() {
    if [ -n "$PG_DIR" ]; then scripts/pg-tmp stop "$PG_DIR"; PG_DIR=; fi
}
bench_traps() {
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# bench_start_server FSYNC: a fresh throwaway server (scripts/pg-tmp) with that fsync setting,
# migrated; sets PG_DIR, DATABASE_URL, PGHOST/PGUSER/PGDATABASE (the owner, postgres) and
# WORKER_URL (the worker's role, habit_worker).
bench_start_server() {
    # The directory exists before the server starts, so bench_cleanup knows it even if start fails.
    PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/habit-pg.XXXXXX")
    local exports
    exports=$(PG_TMP_OPTIONS="-c fsync=$1" scripts/pg-tmp start "$PG_DIR")
    eval "$exports"
    .build/release/habit migrate --database-url "$DATABASE_URL" --migrations-dir sql >&2
    WORKER_URL="host=$PG_DIR/socket user=habit_worker dbname=postgres"
}

# pgbench_run SCRIPT [CLIENTS [pgbench options…]] → "tps p50_ms": pgbench -M prepared for RUN
# seconds as the owner (environment such as PGOPTIONS passes through), p50 from its log.
pgbench_run() {
    local script=$1 clients=${2:-1} log=$PG_DIR/pgbench-log
    shift $(($# < 2 ? $# : 2))
    local threads=$((clients < $(nproc) ? clients : $(nproc)))
    rm -rf "$log"; mkdir -p "$log"; chmod 777 "$log"
    (cd "$log" && pgbench -n -M prepared -c "$clients" -j "$threads" -T "$RUN" -l "$@" -f "$OLDPWD/$script" \
        "$DATABASE_URL" >"$log/summary" 2>&1) \
        || { cat "$log/summary" >&2; return 1; }
    local tps
    tps=$(awk '/^tps/ {print $3; exit}' "$log/summary")
    cat "$log"/pgbench_log.* | awk '{print $3}' | sort -n | awk -v tps="$tps" '
        { v[NR] = $1 } END { printf "%.1f %.3f\n", tps, v[int(NR*0.50)+1]/1000 }'
}

# habit_bench [habit-bench options…] → "rps p50_ms errors": habit-bench for RUN seconds against
# a fresh `habit serve --pool-size POOL` as habit_worker.
habit_bench() {
    local line
    line=$(.build/release/habit-bench --binary .build/release/habit --database-url "$WORKER_URL" \
           --seconds "$RUN" --pool-size "$POOL" "$@")
    echo "$(field rps "$line") $(field p50_ms "$line") $(field errors "$line")"
}

field() { sed -E "s/.*\"$1\":([0-9.]+).*/\\1/" <<<"$2"; }
# a / b to two decimals (three below 0.1, where the lean-core "before" figures are).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf (a / b < 0.1 ? "%.3f" : "%.2f"), a / b }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
