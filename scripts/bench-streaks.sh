#!/usr/bin/env bash
# Streaks benchmark (issue 17): on USERS users × 10 habits × 3 years (scripts/bench/setup-streaks.sql),
# the worker's habits.stats (every habit of a user, today), day.get with include ["streaks"] and
# widget.get (issue 33: the due habits with streak and score)
# against day.get without, in the same run: each round runs the three back to back (the order
# rotates: this machine's speed drifts within a minute) and prints requests/s, p50 and the two
# ratios; then their medians. Targets: stats/day.get ≥ 0.5 at 1 in flight, streaks/day.get ≥ 0.8.
# Also pgbench of the bare statements a client would send (habit.habit_stats, habit.current_streaks)
# for scale, and the bare day read (day.get's baseline, issue 29) each round, against which
# widget.get is held to day.get's target. Not a test: figures go to docs/performance.md.
#   USERS=1000 ROUNDS=5 SECONDS_PER_RUN=4 POOL_SIZE=4 scripts/bench-streaks.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
USERS=${USERS:-1000} RUN=${SECONDS_PER_RUN:-4} ROUNDS=${ROUNDS:-5} POOL=${POOL_SIZE:-4} INFLIGHT=${IN_FLIGHT:-1}

scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2
swift build -c release --product habit-bench >&2
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT
.build/release/habit migrate --database-url "$DATABASE_URL" --migrations-dir sql >&2
load_start=$(date +%s)
psql -q -v users="$USERS" -d "$DATABASE_URL" -f scripts/bench/setup-streaks.sql
echo "data: $USERS users, $(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_templates') habits," \
     "$(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_completions') completions," \
     "$(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_skips') skips," \
     "$(psql -Atd "$DATABASE_URL" -c 'SELECT count(*) FROM habit_streak_runs') streak runs; loaded in $(( $(date +%s) - load_start )) s"
# Loop's score checkpoints (sql/0038), as the nightly batch leaves them; SCORE_CHECKPOINTS=0
# measures the reads without (the horizon's fold), for the before/after.
if [ "${SCORE_CHECKPOINTS:-1}" = 1 ] && psql -Atd "$DATABASE_URL" -c "SELECT to_regclass('habit.score_checkpoints') IS NOT NULL" | grep -qx t; then
    checkpoint_start=$(date +%s)
    .build/release/habit score-checkpoints --database-url "$DATABASE_URL"
    echo "score checkpoints written in $(( $(date +%s) - checkpoint_start )) s"
fi
WORKER_URL="host=$HABIT_PG_DIR/socket user=habit_worker dbname=postgres"
TODAY=$(psql -Atd "$DATABASE_URL" -c "SELECT (now() AT TIME ZONE 'Europe/Berlin')::date")

bench() { # method include → "rps p50 errors"
    local line
    line=$(.build/release/habit-bench --binary .build/release/habit --database-url "$WORKER_URL" --users "$USERS" \
           --method "$1" --include "$2" --in-flight "$INFLIGHT" --seconds "$RUN" --pool-size "$POOL" --date "$TODAY")
    echo "$(field rps "$line") $(field p50_ms "$line") $(field errors "$line")"
}
field() { sed -E "s/.*\"$1\":([0-9.]+).*/\\1/" <<<"$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "machine: $(nproc) cores, $(uname -r); worker --pool-size $POOL, $INFLIGHT in flight; $ROUNDS rounds of $RUN s; date $TODAY; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%5s %12s %7s %12s %7s %12s %7s %12s %7s %10s %10s %10s %10s %10s %10s\n' round day.get p50 stats p50 streaks p50 widget p50 bare stats/day streaks/day widget/day day/bare widget/bare
stats_ratios=() streak_ratios=() widget_ratios=() day_bare_ratios=() widget_bare_ratios=()
for round in $(seq "$ROUNDS"); do
    case $((round % 3)) in
        1) order="day stats bare streaks widget" ;; 2) order="widget bare stats streaks day" ;; 0) order="streaks day widget stats bare" ;;
    esac
    for side in $order; do
        case $side in
            day) read -r day_rps day_p50 day_err <<<"$(bench day.get "")" ;;
            stats) read -r stats_rps stats_p50 stats_err <<<"$(bench habits.stats "")" ;;
            streaks) read -r streaks_rps streaks_p50 streaks_err <<<"$(bench day.get streaks)" ;;
            widget) read -r widget_rps widget_p50 widget_err <<<"$(bench widget.get "")" ;;
            # The bare day read (issue 29's baseline of day.get: the seed spec's two SELECTs, -c1).
            bare) bare_tps=$(pgbench -n -M prepared -c 1 -T "$RUN" -D users="$USERS" -D day="$TODAY" \
                             -f scripts/bench/core_day_bare.pgbench "$DATABASE_URL" 2>&1 | awk '/^tps/ {printf "%.0f", $3}') ;;
        esac
    done
    stats_ratios+=("$(ratio "$stats_rps" "$day_rps")") streak_ratios+=("$(ratio "$streaks_rps" "$day_rps")")
    widget_ratios+=("$(ratio "$widget_rps" "$day_rps")")
    day_bare_ratios+=("$(ratio "$day_rps" "$bare_tps")") widget_bare_ratios+=("$(ratio "$widget_rps" "$bare_tps")")
    printf '%5s %12s %7s %12s %7s %12s %7s %12s %7s %10s %9sx %9sx %9sx %9sx %9sx' "$round" "$day_rps" "$day_p50" "$stats_rps" "$stats_p50" \
        "$streaks_rps" "$streaks_p50" "$widget_rps" "$widget_p50" "$bare_tps" "${stats_ratios[-1]}" "${streak_ratios[-1]}" "${widget_ratios[-1]}" \
        "${day_bare_ratios[-1]}" "${widget_bare_ratios[-1]}"
    errors=$((day_err + stats_err + streaks_err + widget_err))
    [ "$errors" = 0 ] && echo || echo "  ($errors errors)"
done
echo "median habits.stats/day.get $(median "${stats_ratios[@]}")x (target >= 0.5), day.get+streaks/day.get $(median "${streak_ratios[@]}")x (target >= 0.8), widget.get/day.get $(median "${widget_ratios[@]}")x"
echo "median against the bare day read: day.get $(median "${day_bare_ratios[@]}")x, widget.get $(median "${widget_bare_ratios[@]}")x (day.get's target, issue 29: >= 0.6)"

# The bare statements, for scale: pgbench as the owner, one random user per transaction. Loop's
# score (issue 33: habits.stats joins habit.habit_scores, folded over each habit's events) against
# the bare read of the same events a client would send straight to the tables (every completion
# and skip of the user), in the same run.
user_sql="md5('bench-user-' || :n)::uuid"
declare -A TPS
for fn in "habit.habit_stats($user_sql)" "habit.current_streaks($user_sql)" "habit.habit_scores($user_sql)" \
          "(SELECT template_id, completed_date FROM habit_completions WHERE user_id = $user_sql UNION ALL SELECT template_id, skipped_date FROM habit_skips WHERE user_id = $user_sql) bare"; do
    script=$HABIT_PG_DIR/bench.sql
    printf '\\set n random(1, %s)\nSELECT * FROM %s;\n' "$USERS" "$fn" >"$script"
    TPS[$fn]=$(pgbench -n -M prepared -c 1 -T "$RUN" -f "$script" "$DATABASE_URL" 2>&1 | awk '/^tps/ {print $3}')
    echo "pgbench SELECT * FROM $fn: ${TPS[$fn]} tps"
    last=$fn
done
echo "habit_scores / bare read of the events: $(ratio "${TPS["habit.habit_scores($user_sql)"]}" "${TPS[$last]}")x;" \
     "habit_scores / habit_stats: $(ratio "${TPS["habit.habit_scores($user_sql)"]}" "${TPS["habit.habit_stats($user_sql)"]}")x"

# The cost of a write on a long streak: a daily habit done on each of the 1,000 days before
# today; pgbench (as the owner, each statement its own transaction, triggers on) completes
# today and takes it back (the ledger from today's week on), then takes back and restores the
# completion 500 days ago (a backfill: the ledger from that week on, ~500 slots).
psql -q -v ON_ERROR_STOP=1 -d "$DATABASE_URL" <<'SQL'
SET habit.backfill = 'on';
INSERT INTO profiles (user_id, timezone) VALUES (md5('streak-writer')::uuid, 'Europe/Berlin');
INSERT INTO habit_templates (id, user_id, name, activated_at, schedule)
VALUES (md5('streak-habit')::uuid, md5('streak-writer')::uuid, 'Long streak',
        ((now() AT TIME ZONE 'Europe/Berlin')::date - 1000)::timestamp AT TIME ZONE 'Europe/Berlin', '{"type":"daily"}');
INSERT INTO habit_completions (user_id, template_id, completed_date)
SELECT md5('streak-writer')::uuid, md5('streak-habit')::uuid, d::date
FROM generate_series((now() AT TIME ZONE 'Europe/Berlin')::date - 1000, (now() AT TIME ZONE 'Europe/Berlin')::date - 1, '1 day') d;
SQL
script=$HABIT_PG_DIR/write.sql
cat >"$script" <<'SQL'
SET habit.backfill = 'on';
INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (md5('streak-writer')::uuid, md5('streak-habit')::uuid, (now() AT TIME ZONE 'Europe/Berlin')::date);
DELETE FROM habit_completions WHERE user_id = md5('streak-writer')::uuid AND template_id = md5('streak-habit')::uuid AND completed_date = (now() AT TIME ZONE 'Europe/Berlin')::date;
DELETE FROM habit_completions WHERE user_id = md5('streak-writer')::uuid AND template_id = md5('streak-habit')::uuid AND completed_date = (now() AT TIME ZONE 'Europe/Berlin')::date - 500;
INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (md5('streak-writer')::uuid, md5('streak-habit')::uuid, (now() AT TIME ZONE 'Europe/Berlin')::date - 500);
SQL
echo "writes on a 1,000-day streak (ms per statement, pgbench -r, $RUN s):"
pgbench -n -M prepared -r -c 1 -T "$RUN" -f "$script" "$DATABASE_URL" 2>&1 \
    | awk '/statement latencies/ { on = 1; next } on && /INSERT|DELETE/ { n++; printf "  %-28s %s\n", (n == 1 ? "complete today" : n == 2 ? "take today back" : n == 3 ? "take back day -500" : "complete day -500"), $1 }'
