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
#   scripts/bench-reminders.sh                    # ~15 minutes (seeding 1M rows ~1 minute)
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

# The windows, tomorrow (nothing in them has fired yet; the days around today carry done and
# skipped days): the busiest minute, 08:00 UTC (the reminders on the hour of every zone whose
# offset is whole hours), and a typical one, 08:07 (only the reminders at any minute).
day=$(psql -X -Atq "$DATABASE_URL" -c "SELECT to_char(now() AT TIME ZONE 'UTC' + interval '1 day', 'YYYY-MM-DD')")
FROM="${day}T08:00:00Z"; TO="${day}T08:01:00Z"; QUIET_FROM="${day}T08:07:00Z"; QUIET_TO="${day}T08:08:00Z"
PAGE=1000
psql -X -q "$DATABASE_URL" <<SQL
DROP TABLE IF EXISTS bench.window_ids, bench.firings_copy;
CREATE TABLE bench.window_ids AS SELECT row_number() OVER (ORDER BY fire_at, reminder_id) AS n, * FROM habit.reminders_due('$FROM', '$TO', 10001);
CREATE TABLE bench.firings_copy (LIKE habit.reminder_firings INCLUDING DEFAULTS);
ANALYZE bench.window_ids;
SQL
IN_WINDOW=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM bench.window_ids")
QUIET=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM habit.reminders_due('$QUIET_FROM', '$QUIET_TO', 10001)")
REMINDERS=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM public.habit_reminders")
echo "$REMINDERS reminders; busiest minute [$FROM, $TO): $IN_WINDOW firings; typical minute [$QUIET_FROM, $QUIET_TO): $QUIET firings"

declare -A P50
measure() { # name script [pgbench -D …]
    local name=$1 script=$2 out
    shift 2
    out=$(pgbench_run "$script" 1 "$@")
    P50[$name]+=" $(cut -d' ' -f2 <<<"$out")"
    printf '  %-16s %8s tps  p50 %8s ms\n' "$name" "$(cut -d' ' -f1 <<<"$out")" "$(cut -d' ' -f2 <<<"$out")"
}
one_round() { # suffix
    measure "due_page$1" scripts/bench/reminders_due.pgbench -D from="$FROM" -D to="$TO" -D lim=$PAGE
    measure "bare_read_page$1" scripts/bench/reminders_due_bare.pgbench -D n=$PAGE
    measure "due_all$1" scripts/bench/reminders_due.pgbench -D from="$FROM" -D to="$TO" -D lim=10001
    measure "bare_read_all$1" scripts/bench/reminders_due_bare.pgbench -D n=10001
    measure "due_typical$1" scripts/bench/reminders_due.pgbench -D from="$QUIET_FROM" -D to="$QUIET_TO" -D lim=10001
    measure "claim_page$1" scripts/bench/reminders_claim.pgbench -D n=$PAGE
    measure "bare_insert_page$1" scripts/bench/reminders_claim_bare.pgbench -D n=$PAGE
    measure "claim_all$1" scripts/bench/reminders_claim.pgbench -D n=10001
    measure "bare_insert_all$1" scripts/bench/reminders_claim_bare.pgbench -D n=10001
}
rounds() { # suffix
    for round in $(seq 1 "$ROUNDS"); do
        echo "round $round $1"
        one_round "$1"
    done
}
rounds ""
echo "the busiest minute's plan, a page (auto_explain of the function's statement; the rule is inlined into it):"
psql -X -q "$DATABASE_URL" 2>&1 <<SQL | grep -E 'duration|->|^Limit|Sort Key|Index Cond' | cut -c1-160 | sed 's/^/  /' | awk 'NR <= 60'
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_timing = off;
SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET client_min_messages = notice;
SELECT count(*) FROM habit.reminders_due('$FROM', '$TO', $PAGE);
SQL

echo "adding as many reminders outside the window…" >&2
psql -X -q "$DATABASE_URL" -f scripts/bench/setup-reminders-outside.sql
AFTER=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM habit.reminders_due('$FROM', '$TO', 10001)")
REMINDERS2=$(psql -X -Atq "$DATABASE_URL" -c "SELECT count(*) FROM public.habit_reminders")
echo "$REMINDERS2 reminders; the busiest minute: $AFTER firings (before: $IN_WINDOW)"
for round in $(seq 1 "$ROUNDS"); do
    echo "round $round with the reminders outside"
    measure "due_page_2x" scripts/bench/reminders_due.pgbench -D from="$FROM" -D to="$TO" -D lim=$PAGE
    measure "due_all_2x" scripts/bench/reminders_due.pgbench -D from="$FROM" -D to="$TO" -D lim=10001
    measure "due_typical_2x" scripts/bench/reminders_due.pgbench -D from="$QUIET_FROM" -D to="$QUIET_TO" -D lim=10001
done

m() { median ${P50[$1]}; }
check() { awk -v v="$1" -v t="$2" 'BEGIN{print (v <= t) ? "met" : "MISSED"}'; }
echo
echo "summary (p50 ms, medians of $ROUNDS rounds of $RUN s, one client; $REMINDERS reminders):"
printf '  %-58s %8s ms  target <= 50   %s\n' "reminders_due, busiest minute, a page ($PAGE of $IN_WINDOW)" "$(m due_page)" "$(check "$(m due_page)" 50)"
printf '  %-58s %8s ms  target <= 50   %s\n' "reminders_due, busiest minute, all $IN_WINDOW" "$(m due_all)" "$(check "$(m due_all)" 50)"
printf '  %-58s %8s ms  target <= 50   %s\n' "reminders_due, typical minute, all $QUIET" "$(m due_typical)" "$(check "$(m due_typical)" 50)"
printf '  %-58s %8s ms  target <= 200  %s\n' "claim of a page ($PAGE)" "$(m claim_page)" "$(check "$(m claim_page)" 200)"
printf '  %-58s %8s ms  target <= 200  %s\n' "claim of the busiest minute ($IN_WINDOW)" "$(m claim_all)" "$(check "$(m claim_all)" 200)"
printf '  %-58s %8s   (bare %s ms)\n' "due page / bare read of its reminders by key" "$(ratio "$(m due_page)" "$(m bare_read_page)")" "$(m bare_read_page)"
printf '  %-58s %8s   (bare %s ms)\n' "due all / bare read of its reminders by key" "$(ratio "$(m due_all)" "$(m bare_read_all)")" "$(m bare_read_all)"
printf '  %-58s %8s   (bare %s ms)\n' "claim page / bare insert of its rows" "$(ratio "$(m claim_page)" "$(m bare_insert_page)")" "$(m bare_insert_page)"
printf '  %-58s %8s   (bare %s ms)\n' "claim all / bare insert of its rows" "$(ratio "$(m claim_all)" "$(m bare_insert_all)")" "$(m bare_insert_all)"
printf '  %-58s %8s   (%s ms)\n' "due page with $REMINDERS2 reminders / with $REMINDERS" "$(ratio "$(m due_page_2x)" "$(m due_page)")" "$(m due_page_2x)"
printf '  %-58s %8s   (%s ms)\n' "due all with $REMINDERS2 / with $REMINDERS" "$(ratio "$(m due_all_2x)" "$(m due_all)")" "$(m due_all_2x)"
printf '  %-58s %8s   (%s ms)\n' "due typical with $REMINDERS2 / with $REMINDERS" "$(ratio "$(m due_typical_2x)" "$(m due_typical)")" "$(m due_typical_2x)"
