#!/usr/bin/env bash
# The batch at 10 M completions (issue 34 item 4): `habit weekly-counts --store` on 100,000
# users × 5 daily habits × 20 weeks, computed on a hot standby and stored on the primary, full
# and incremental, against psql on the same standby in the same run. Not a test: it asserts
# no time; figures go to docs/performance.md ("The batch at 10 M completions").
#
#   scripts/bench-batch-10m.sh                # full size: ~10.0 M completions
#   SCALE=0.1 scripts/bench-batch-10m.sh      # 10,000 users, ~1 M completions (a few minutes)
#
# 1. Seed (scripts/bench/setup-batch.sql, the shape of `habit dev seed`) into a primary
#    started alone (scripts/replica-tmp start-primary), JOBS psql sessions side by side per
#    phase, each phase timed: profiles and habits through the triggers; completions with
#    session_replication_role = replica (each habit-day done with probability RATE, by a hash:
#    the same rows every run); the streaks rebuilt (the repair docs/admin.md asks after a
#    trigger-less load); VACUUM ANALYZE.
# 2. A streaming hot standby of the loaded primary (scripts/replica-tmp add-standby: a
#    pg_basebackup), timed until it has replayed the primary's WAL.
# 3. RUNS rounds, alternating: `habit weekly-counts --store --database-url STANDBY --store-url
#    PRIMARY` (full), and on the standby in psql with the job's transaction settings (work_mem
#    1GB, jit off) the same function, COPY (SELECT * FROM habit.weekly_counts(…)) TO STDOUT, and
#    the bare aggregate, COPY (SELECT user_id, date_trunc('week', completed_date), count(*) FROM
#    habit_completions … GROUP BY 1, 2) TO STDOUT: reproducible baselines. Medians and ratios.
# 4. Incremental runs. `--incremental` refuses --store-url (its marks and claims live on the
#    server it reads: docs/admin.md), so the script shows that refusal and runs them on the
#    primary, reading and storing there: a full --store on the primary (the one-server
#    reference), the first --incremental (a full run that starts the marking), 1 % of the users'
#    completions changed through the triggers (one day's deleted, one added per habit), an
#    incremental run, and one with nothing changed.
#
# Settings (environment): SCALE (1: USERS = 100,000 × SCALE), USERS, HABITS (5), WEEKS (20),
# RATE (0.143: 5 × 140 × 0.143 ≈ 100 completions per user), RUNS (3), JOBS (nproc), FSYNC (off),
# SHARED_BUFFERS (2GB, both servers).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
SCALE=${SCALE:-1}
USERS=${USERS:-$(awk -v s="$SCALE" 'BEGIN { printf "%d", 100000 * s }')}
HABITS=${HABITS:-5} WEEKS=${WEEKS:-20} RATE=${RATE:-0.143} RUNS=${RUNS:-3} JOBS=${JOBS:-$(nproc)}
FSYNC=${FSYNC:-off} SHARED_BUFFERS=${SHARED_BUFFERS:-2GB}
END=2026-11-15
DAYS=$((WEEKS * 7))
START=$(date -d "$END - $((DAYS - 1)) days" +%F)

scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2
habit=.build/release/habit

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
percent() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f %%", 100 * a / b }'; }

echo "machine: $(nproc) cores, $(free -g | awk '/^Mem/ {print $2}') GiB, $(uname -r); load at start: $(loadavg)"
echo "servers: PostgreSQL $(psql --version | awk '{print $3}'), fsync=$FSYNC, shared_buffers=$SHARED_BUFFERS, max_wal_size=20GB"
export PG_TMP_OPTIONS="-c fsync=$FSYNC -c shared_buffers=$SHARED_BUFFERS -c max_wal_size=20GB -c checkpoint_timeout=30min"
eval "$(scripts/replica-tmp start-primary)"
trap 'scripts/replica-tmp stop "$HABIT_REPLICA_DIR"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
$habit migrate --database-url "$PRIMARY_URL" --migrations-dir sql >&2

# --- 1. The seed ------------------------------------------------------------------------------
# phase NAME: JOBS sessions side by side, each for its share of the users; prints the seconds.
phase() {
    local s pids=() part
    s=$(now)
    for part in $(seq 0 $((JOBS - 1))); do
        psql -X -q -d "$PRIMARY_URL" -v phase="$1" -v part="$part" -v jobs="$JOBS" -v users="$USERS" -v habits="$HABITS" \
            -v days="$DAYS" -v rate="$RATE" -v start="$START" -f scripts/bench/setup-batch.sql >/dev/null &
        pids+=($!)
    done
    for part in "${pids[@]}"; do wait "$part"; done
    secs "$s" "$(now)"
}
echo "seed: $USERS users × $HABITS daily habits, $START … $END, rate $RATE, $JOBS sessions per phase"
seed_start=$(now)
t_users=$(phase users);             echo "  profiles and habits, triggers on: $t_users s (load $(loadavg))"
t_completions=$(phase completions); echo "  completions, session_replication_role = replica: $t_completions s (load $(loadavg))"
t_rebuild=$(phase rebuild);         echo "  streaks rebuilt: $t_rebuild s (load $(loadavg))"
s=$(now); psql -X -q -d "$PRIMARY_URL" -c "VACUUM ANALYZE"; t_vacuum=$(secs "$s" "$(now)")
echo "  VACUUM ANALYZE: $t_vacuum s"
seed=$(secs "$seed_start" "$(now)")
counts=$(psql -X -At -F ' ' -d "$PRIMARY_URL" -c "SELECT (SELECT count(*) FROM profiles), (SELECT count(*) FROM habit_templates),
    (SELECT count(*) FROM habit_completions), (SELECT count(*) FROM habit_streak_runs),
    (SELECT count(*) FROM habit_streak_state WHERE pending), pg_size_pretty(pg_database_size(current_database()))")
read -r n_users n_habits n_completions n_runs n_pending db_size <<<"$counts"
echo "seeded in $seed s: $n_users users, $n_habits habits, $n_completions completions, $n_runs streak runs ($n_pending habits pending), database $db_size"

# --- 2. The standby ---------------------------------------------------------------------------
s=$(now)
eval "$(scripts/replica-tmp add-standby "$HABIT_REPLICA_DIR")"
scripts/replica-tmp catch-up "$HABIT_REPLICA_DIR" 600
echo "standby: base backup and catch-up $(secs "$s" "$(now)") s; reading $STANDBY_URL, storing on $PRIMARY_URL"

# --- 3. Full runs against psql on the standby ---------------------------------------------------
FN_SQL="COPY (SELECT * FROM habit.weekly_counts('$START', '$END', 'monday', NULL)) TO STDOUT WITH (FORMAT csv, HEADER)"
BARE_SQL="COPY (SELECT c.user_id, date_trunc('week', c.completed_date)::date AS week_start, count(*) AS completions
    FROM habit_completions c WHERE c.completed_date BETWEEN '$START' AND '$END' GROUP BY 1, 2) TO STDOUT WITH (FORMAT csv, HEADER)"
# psql with the job's transaction settings (WeeklyCountsJob.prelude); only psql's environment.
bare_psql() { PGOPTIONS="-c work_mem=1GB -c jit=off" psql -X -q "$@"; }
LOG=$HABIT_REPLICA_DIR/job.log
# timed COMMAND…: the seconds on stdout; the command's output counted into $HABIT_REPLICA_DIR/rows
# and its stderr appended to LOG (the job's report line).
timed() {
    local s
    s=$(now)
    "$@" 2>>"$LOG" | wc -l >"$HABIT_REPLICA_DIR/rows"
    secs "$s" "$(now)"
}
weekly() { $habit weekly-counts --from "$START" --to "$END" --store "$@"; }
report() { tail -n 1 "$LOG" | sed 's/^habit: weekly-counts //'; }

stores=() fns=() bares=()
for run in $(seq "$RUNS"); do
    stores+=("$(timed weekly --database-url "$STANDBY_URL" --store-url "$PRIMARY_URL")"); store_report=$(report)
    fns+=("$(timed bare_psql -d "$STANDBY_URL" -c "$FN_SQL")"); fn_rows=$(cat "$HABIT_REPLICA_DIR/rows")
    bares+=("$(timed bare_psql -d "$STANDBY_URL" -c "$BARE_SQL")"); bare_rows=$(cat "$HABIT_REPLICA_DIR/rows")
    echo "round $run: full --store (standby → primary) ${stores[-1]} s [$store_report], psql function ${fns[-1]} s, psql GROUP BY ${bares[-1]} s (load $(loadavg))"
done
full=$(median "${stores[@]}") fn=$(median "${fns[@]}") bare=$(median "${bares[@]}")
stored=$(psql -X -At -d "$PRIMARY_URL" -c "SELECT count(*) FROM weekly_completion_counts")
echo "rows: $stored stored; psql function $((fn_rows - 1)) rows, GROUP BY $((bare_rows - 1)) rows"
echo "median: full --store $full s, psql function $fn s (ratio $(ratio "$full" "$fn")×), psql GROUP BY $bare s (ratio $(ratio "$full" "$bare")×)"

# --- 4. Incremental runs ------------------------------------------------------------------------
if refusal=$(weekly --incremental --database-url "$STANDBY_URL" --store-url "$PRIMARY_URL" 2>&1); then
    echo "--incremental with --store-url ran: $refusal"
else
    echo "--incremental with --store-url refused (exit $?): $refusal"
fi
echo "incremental runs on the primary (reading and storing there):"
primary_full=$(timed weekly --database-url "$PRIMARY_URL")
echo "  full --store on the primary: $primary_full s [$(report)]"
first=$(timed weekly --incremental --database-url "$PRIMARY_URL")
echo "  first --incremental (full, starts the marking): $first s [$(report)] (load $(loadavg))"
s=$(now)
psql -X -q -d "$PRIMARY_URL" <<SQL
SET habit.backfill = 'on';
-- 1 % of the users, through the triggers: their completions of one day deleted, one
-- completion per habit added on another.
CREATE TEMP TABLE changed AS
    SELECT user_id FROM profiles WHERE abs(hashtext(user_id::text)::bigint) % 100 = 0;
DELETE FROM habit_completions c USING changed x WHERE c.user_id = x.user_id AND c.completed_date = DATE '$END' - 10;
INSERT INTO habit_completions (user_id, template_id, completed_date)
    SELECT t.user_id, t.id, DATE '$END' - 3 FROM habit_templates t JOIN changed x USING (user_id) ON CONFLICT DO NOTHING;
SQL
changed_users=$(psql -X -At -d "$PRIMARY_URL" -c "SELECT count(DISTINCT user_id) FROM habit.weekly_counts_dirty")
echo "  1 % changed through the triggers: $changed_users users marked, in $(secs "$s" "$(now)") s"
one=$(timed weekly --incremental --database-url "$PRIMARY_URL")
echo "  --incremental after 1 % changed: $one s [$(report)] (load $(loadavg))"
none=$(timed weekly --incremental --database-url "$PRIMARY_URL")
echo "  --incremental with nothing changed: $none s [$(report)] (load $(loadavg))"

echo
echo "summary ($n_completions completions, $USERS users, load at end $(loadavg)):"
echo "  seed $seed s (habits with triggers $t_users, completions $t_completions, streaks $t_rebuild, vacuum $t_vacuum)"
echo "  full --store standby → primary $full s = $(ratio "$full" "$fn")× psql's function, $(ratio "$full" "$bare")× the bare GROUP BY (both on the standby)"
echo "  full --store on the primary $primary_full s; first --incremental $first s"
echo "  --incremental 1 % changed $one s = $(percent "$one" "$primary_full") of the one-server full run ($(percent "$one" "$full") of the standby one)"
echo "  --incremental nothing changed $none s = $(percent "$none" "$primary_full") ($(percent "$none" "$full"))"
