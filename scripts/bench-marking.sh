#!/usr/bin/env bash
# What the incremental batch's marking costs every write (issue 20, sql/0015): the statement
# triggers that record dirty days run only while some week convention is tracked (a row in
# habit.weekly_counts_state, written by the first `weekly-counts --store --incremental`).
# Same data, same rounds, alternating tracking off and on (this machine's speed drifts):
#   1. completions.set through the worker (habit-bench), IN_FLIGHT requests in flight;
#   2. the bare statements a client would send straight to the table (pgbench, as the
#      migrator): delete one completion and insert it again, one transaction.
# Not a test: figures go to docs/performance.md ("Incremental weekly counts").
#
#   USERS=64 ROUNDS=5 SECONDS_PER_RUN=4 IN_FLIGHT="1 64" scripts/bench-marking.sh   (SKIP_WORKER=1: part 2 only)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
USERS=${USERS:-64} RUN=${SECONDS_PER_RUN:-4} ROUNDS=${ROUNDS:-5} POOL=${POOL_SIZE:-4}
IN_FLIGHT=${IN_FLIGHT:-1 64}

scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2
swift build -c release --product habit-bench >&2
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT
.build/release/habit migrate --database-url "$DATABASE_URL" --migrations-dir sql >&2
psql -q -v users="$USERS" -d "$DATABASE_URL" -f scripts/bench/setup-streaks.sql
WORKER_URL="host=$HABIT_PG_DIR/socket user=habit_worker dbname=postgres"
TODAY=$(psql -Atd "$DATABASE_URL" -c "SELECT (now() AT TIME ZONE 'Europe/Berlin')::date")
# pgbench's transaction: a day of habit 1 (daily) among the last 30 cleared (its completion and
# skip deleted) and marked done again, as psql would (every trigger fires: rules, counters,
# streaks, sync, marking); a skipped day would refuse the completion (HB005).
psql -q -d "$DATABASE_URL" <<'SQL'
CREATE TABLE bench_habits AS
    SELECT row_number() OVER (ORDER BY id) AS n, id, user_id FROM habit_templates WHERE sort_order = 1;
SQL
cat >"$HABIT_PG_DIR/write.sql" <<SQL
\set n random(1, $USERS)
\set d random(1, 30)
BEGIN;
DELETE FROM habit_completions c USING bench_habits b
    WHERE b.n = :n AND c.user_id = b.user_id AND c.template_id = b.id AND c.completed_date = DATE '$TODAY' - :d;
DELETE FROM habit_skips s USING bench_habits b
    WHERE b.n = :n AND s.user_id = b.user_id AND s.template_id = b.id AND s.skipped_date = DATE '$TODAY' - :d;
INSERT INTO habit_completions (user_id, template_id, completed_date)
    SELECT user_id, id, DATE '$TODAY' - :d FROM bench_habits WHERE n = :n ON CONFLICT DO NOTHING;
COMMIT;
SQL
[ "$(id -u)" = 0 ] && chmod a+r "$HABIT_PG_DIR/write.sql"

tracking() { # on|off
    if [ "$1" = on ]; then
        psql -Xq -d "$DATABASE_URL" -c "INSERT INTO habit.weekly_counts_state (week_starts_on) VALUES ('monday') ON CONFLICT DO NOTHING"
    else
        psql -Xq -d "$DATABASE_URL" -c "DELETE FROM habit.weekly_counts_state; DELETE FROM habit.weekly_counts_dirty"
    fi
}
worker_rps() { # in-flight → rps
    .build/release/habit-bench --binary .build/release/habit --database-url "$WORKER_URL" --users "$USERS" \
        --method completions.set --in-flight "$1" --seconds "$RUN" --pool-size "$POOL" --date "$TODAY" --habit-suffix=-1 |
        sed -E 's/.*"rps":([0-9.]+).*/\1/'
}
pgbench_tps() { pgbench -n -c 2 -j 2 -T "$RUN" -f "$HABIT_PG_DIR/write.sql" "$DATABASE_URL" 2>"$HABIT_PG_DIR/pgbench.err" | sed -n -E 's/^tps = ([0-9.]+).*/\1/p' || { cat "$HABIT_PG_DIR/pgbench.err" >&2; exit 1; }; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "data: $USERS users × 10 habits × 3 years; $ROUNDS rounds of $RUN s; load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "${SKIP_WORKER:-}" ] || IN_FLIGHT=""
# compare LABEL COMMAND…: rounds of COMMAND with tracking off and on, alternating the order.
compare() {
    local label=$1 round off on ratios=()
    shift
    for round in $(seq "$ROUNDS"); do
        if [ $((round % 2)) = 1 ]; then
            tracking off; off=$("$@"); tracking on; on=$("$@")
        else
            tracking on; on=$("$@"); tracking off; off=$("$@")
        fi
        ratios+=("$(ratio "$on" "$off")")
        echo "$label round $round: off $off/s, on $on/s, on/off ${ratios[-1]}x (dirty marks: $(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit.weekly_counts_dirty'))"
    done
    echo "median $label marking on/off: $(median "${ratios[@]}")x"
}
for inflight in $IN_FLIGHT; do compare "completions.set at $inflight in flight" worker_rps "$inflight"; done
compare "psql delete+insert (pgbench -c 2)" pgbench_tps
