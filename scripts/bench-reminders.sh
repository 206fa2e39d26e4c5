#!/usr/bin/env bash
# The reminder sender's benchmark (issue 33, item 3): the window query for one minute and the
# claim of its firings over USERS × PER_USER reminders (1,000,000 by default) in every zone of
# habit.time_zones, then again with as many reminders added outside the window (the window's
# cost must not grow with them). Targets: the window ≤ 50 ms, the claim ≤ 200 ms (p50, one
# client). Ratios against bare statements in the same run:
#   due / bare read     habit.reminders_due against reading the window's reminders by key
#   claim / bare insert habit.claim_reminder_firings against inserting the same rows into a
#                       copy of habit.reminder_firings (no keys checked), both rolled back
#   due 2× / due 1×     the window after the reminders outside it doubled, against before
# and the window's plan (auto_explain of the function's statements). Not a test: figures go to
# docs/performance.md ("Reminders").
#
#   scripts/bench-reminders.sh                    # ~5 minutes (seeding 1M rows ~1 minute)
#   USERS=20000 RUN=3 scripts/bench-reminders.sh  # a quick look
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${USERS:-200000}
PER_USER=${PER_USER:-5}
RUN=${RUN:-10}
ROUNDS=${ROUNDS:-3}
source scripts/bench/common.sh
bench_traps
scripts/pg-tmp ensure-packages
# Only `habit migrate` is run: everything measured is SQL under pgbench, so a debug build serves.
swift build --product habit >&2
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/habit-pg.XXXXXX")
eval "$(PG_TMP_OPTIONS="-c fsync=off -c shared_buffers=1GB" scripts/pg-tmp start "$PG_DIR")"
.build/debug/habit migrate --database-url "$DATABASE_URL" --migrations-dir sql >&2
echo "seeding $USERS users × $PER_USER reminders…" >&2
psql -X -q "$DATABASE_URL" -v users="$USERS" -v per_user="$PER_USER" -f scripts/bench/setup-reminders.sql

# The window: one minute at a whole UTC hour tomorrow (so nothing in it has fired yet and the
# days around today carry done and skipped days).
FROM=$(psql -X -Atq "$DATABASE_URL" -c "SELECT to_char(date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day 8 hours', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
TO=$(psql -X -Atq "$DATABASE_URL" -c "SELECT to_char(date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day 8 hours 1 minute', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
psql -X -q "$DATABASE_URL" <<SQL
DROP TABLE IF EXISTS bench.window_ids, bench.firings_copy;
CREATE TABLE bench.window_ids AS SELECT * FROM habit.reminders_due('$FROM', '$TO', 10001);
CREATE TABLE bench.firings_copy (LIKE habit.reminder_firings INCLUDING DEFAULTS);
ANALYZE bench.window_ids;
SQL
IN_WINDOW=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM bench.window_ids")
CANDIDATES=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM public.habit_reminders r WHERE habit.fire_instant(habit.wall_floor('$FROM', r.time_zone)::date + r.local_time, r.time_zone) >= '$FROM' AND habit.fire_instant(habit.wall_floor('$FROM', r.time_zone)::date + r.local_time, r.time_zone) < '$TO'" 2>/dev/null || echo "?")
echo "window [$FROM, $TO): $IN_WINDOW firings (reminders whose local time falls in it: $CANDIDATES)"

declare -A P50
measure() { # name script [pgbench -D …]
    local name=$1 script=$2 out
    shift 2
    out=$(pgbench_run "$script" 1 "$@")
    P50[$name]+=" $(cut -d' ' -f2 <<<"$out")"
    printf '  %-14s %8s tps  p50 %8s ms\n' "$name" "$(cut -d' ' -f1 <<<"$out")" "$(cut -d' ' -f2 <<<"$out")"
}
rounds() { # suffix
    for round in $(seq 1 "$ROUNDS"); do
        echo "round $round ($1)"
        if ((round % 2)); then
            measure "due$1" scripts/bench/reminders_due.pgbench -D from="$FROM" -D to="$TO"
            measure "bare_read$1" scripts/bench/reminders_due_bare.pgbench
            measure "claim$1" scripts/bench/reminders_claim.pgbench
            measure "bare_insert$1" scripts/bench/reminders_claim_bare.pgbench
        else
            measure "bare_insert$1" scripts/bench/reminders_claim_bare.pgbench
            measure "claim$1" scripts/bench/reminders_claim.pgbench
            measure "bare_read$1" scripts/bench/reminders_due_bare.pgbench
            measure "due$1" scripts/bench/reminders_due.pgbench -D from="$FROM" -D to="$TO"
        fi
    done
}
rounds ""
echo "the window's plan (auto_explain of the function's statements):"
psql -X -q "$DATABASE_URL" 2>&1 <<SQL | grep -v '^$' | sed 's/^/  /' | head -80
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on;
SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice;
SELECT count(*) FROM habit.reminders_due('$FROM', '$TO', 10001);
SQL

echo "adding as many reminders outside the window…" >&2
psql -X -q "$DATABASE_URL" -f scripts/bench/setup-reminders-outside.sql
AFTER=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM habit.reminders_due('$FROM', '$TO', 10001)")
echo "window after: $AFTER firings (before: $IN_WINDOW)"
rounds "_2x"

echo
echo "summary (p50 ms, medians of $ROUNDS rounds of $RUN s, one client):"
due=$(median ${P50[due]}); bare=$(median ${P50[bare_read]}); claim=$(median ${P50[claim]}); ins=$(median ${P50[bare_insert]})
due2=$(median ${P50[due_2x]}); claim2=$(median ${P50[claim_2x]})
printf '  %-46s %8s ms  target <= 50   %s\n' "reminders_due, one minute ($IN_WINDOW firings)" "$due" "$(awk -v v="$due" 'BEGIN{print (v <= 50) ? "met" : "MISSED"}')"
printf '  %-46s %8s ms  target <= 200  %s\n' "claim of its firings" "$claim" "$(awk -v v="$claim" 'BEGIN{print (v <= 200) ? "met" : "MISSED"}')"
printf '  %-46s %8s\n' "due / bare read of its reminders ($bare ms)" "$(ratio "$due" "$bare")"
printf '  %-46s %8s\n' "claim / bare insert of its rows ($ins ms)" "$(ratio "$claim" "$ins")"
printf '  %-46s %8s   (%s ms; claim %s ms)\n' "due with 2x reminders / due" "$(ratio "$due2" "$due")" "$due2" "$claim2"
