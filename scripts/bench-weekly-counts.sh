#!/usr/bin/env bash
# Weekly-counts benchmark: `habit weekly-counts` over a generated data set against psql
# running the same aggregate (COPY (SELECT * FROM habit.weekly_counts(…)) TO STDOUT) in the
# same run, alternating, several times. Prints both times, the ratio, the job's peak memory
# for the full run and for a one-user run (flat memory: the two are about equal), and the
# plan of the query. Not a test: figures go to docs/performance.md.
#   USERS=100000 HABITS=5 WEEKS=20 RATE=0.143 RUNS=3 scripts/bench-weekly-counts.sh
# Then the incremental runs (see the end): full --store, 1 % changed, nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
USERS=${USERS:-100000} HABITS=${HABITS:-5} WEEKS=${WEEKS:-20} RATE=${RATE:-0.143} RUNS=${RUNS:-3}
END=2026-11-15

scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT
habit=.build/release/habit
$habit migrate --database-url "$DATABASE_URL" --migrations-dir sql
START=$(date -d "$END - $((WEEKS * 7 - 1)) days" +%F)

seed_start=$(date +%s.%N)
$habit dev seed --database-url "$DATABASE_URL" --users "$USERS" --habits "$HABITS" --weeks "$WEEKS" --rate "$RATE" --end-date "$END"
seed_end=$(date +%s.%N)
psql -q -d "$DATABASE_URL" -c "VACUUM ANALYZE"
rows=$(psql -Atd "$DATABASE_URL" -c "SELECT count(*) FROM habit_completions")
size=$(psql -Atd "$DATABASE_URL" -c "SELECT pg_size_pretty(pg_database_size(current_database()))")
echo "data: $USERS users, $((USERS * HABITS)) habits, $rows completions ($START … $END), database $size; seeded in $(awk -v a="$seed_start" -v b="$seed_end" 'BEGIN { printf "%.1f", b - a }') s"
echo "machine: $(nproc) cores, $(uname -r); load before runs: $(cut -d' ' -f1-3 /proc/loadavg)"

SQL="COPY (SELECT * FROM habit.weekly_counts('$START', '$END', 'monday', NULL)) TO STDOUT WITH (FORMAT csv, HEADER)"
# psql runs the same transaction as the job's: its work_mem and no JIT (WeeklyCountsJob.prelude).
# Only psql's environment: libpq would hand PGOPTIONS to the job's connection too.
bare_psql() { PGOPTIONS="-c work_mem=1GB -c jit=off" psql "$@"; }
timed() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }'; }

# Warm the cache once each.
$habit weekly-counts --database-url "$DATABASE_URL" --from "$START" --to "$END" >/dev/null
bare_psql -Xq -d "$DATABASE_URL" -c "$SQL" >/dev/null

job_times=() psql_times=()
for run in $(seq "$RUNS"); do
    job_times+=("$(timed $habit weekly-counts --database-url "$DATABASE_URL" --from "$START" --to "$END")")
    psql_times+=("$(timed bare_psql -Xq -d "$DATABASE_URL" -c "$SQL")")
    echo "run $run: job ${job_times[-1]} s, psql ${psql_times[-1]} s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
job=$(median "${job_times[@]}") pg=$(median "${psql_times[@]}")
out_rows=$($habit weekly-counts --database-url "$DATABASE_URL" --from "$START" --to "$END" | wc -l)
echo "output rows (with header): $out_rows"
echo "median: job $job s, psql $pg s, ratio $(awk -v a="$job" -v b="$pg" 'BEGIN { printf "%.2f", a / b }')x (target <= 1.2x)"

full_rss=$(HABIT_REPORT_PEAK_RSS=1 $habit weekly-counts --database-url "$DATABASE_URL" --from "$START" --to "$END" 2>&1 >/dev/null | sed -n 's/peak_rss_kib=//p')
one_user=$(psql -Atd "$DATABASE_URL" -c "SELECT user_id FROM habit_templates LIMIT 1")
one_rss=$(HABIT_REPORT_PEAK_RSS=1 $habit weekly-counts --database-url "$DATABASE_URL" --from "$START" --to "$END" --user "$one_user" 2>&1 >/dev/null | sed -n 's/peak_rss_kib=//p')
table_rss=$(HABIT_REPORT_PEAK_RSS=1 $habit weekly-counts --database-url "$DATABASE_URL" --from "$START" --to "$END" --format table 2>&1 >/dev/null | sed -n 's/peak_rss_kib=//p')
echo "job peak RSS: full run (csv) ${full_rss} KiB, full run (table, single-row mode) ${table_rss} KiB, one user ${one_rss} KiB"

echo "plan:"
bare_psql -Xq -d "$DATABASE_URL" -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM habit.weekly_counts('$START', '$END', 'monday', NULL)"

# Incremental runs (issue 20), same data: a full --store run (with the job's work_mem, then
# with the server's default, for the gain), the first --incremental run (a full one that
# starts the marking), 1 % of the users' data changed through psql, an incremental run, and
# an incremental run after no change; each timed against the full --store run.
store() { $habit weekly-counts --database-url "$DATABASE_URL" --from "$START" --to "$END" --store "$@" 2>&1 >/dev/null; }
timed_store() { local s e; s=$(date +%s.%N); store "$@" >&2; e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }'; }
# The work_mem gain: full --store runs with the server's work_mem and the job's, alternating.
defaults=() fulls=()
for run in $(seq "$RUNS"); do
    if [ $((run % 2)) = 1 ]; then
        defaults+=("$(timed_store --work-mem default)"); fulls+=("$(timed_store)")
    else
        fulls+=("$(timed_store)"); defaults+=("$(timed_store --work-mem default)")
    fi
    echo "full --store run $run: ${fulls[-1]} s with the job's work_mem (1GB), ${defaults[-1]} s with the server's ($(psql -Atd "$DATABASE_URL" -c 'SHOW work_mem'))"
done
full=$(median "${fulls[@]}") full_default=$(median "${defaults[@]}")
echo "median full --store: $full s with 1GB, $full_default s with the server's work_mem"
first=$(timed_store --incremental)
echo "first --incremental (full, starts marking): $first s"
psql -Xq -d "$DATABASE_URL" <<SQL
SET habit.backfill = 'on';
-- 1 % of the users: their completions of one day deleted, one completion per habit added.
CREATE TEMP TABLE changed AS
    SELECT user_id FROM (SELECT DISTINCT user_id FROM habit_templates) u WHERE abs(hashtext(user_id::text)) % 100 = 0;
DELETE FROM habit_completions c USING changed x WHERE c.user_id = x.user_id AND c.completed_date = DATE '$END' - 10;
INSERT INTO habit_completions (user_id, template_id, completed_date)
    SELECT t.user_id, t.id, DATE '$END' - 3 FROM habit_templates t JOIN changed x USING (user_id) ON CONFLICT DO NOTHING;
SQL
changed_users=$(psql -Atd "$DATABASE_URL" -c "SELECT count(DISTINCT user_id) FROM habit.weekly_counts_dirty")
one_percent=$(timed_store --incremental)
nothing=$(timed_store --incremental)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f %%", 100 * a / b }'; }
echo "incremental after 1 % of users changed ($changed_users users marked): $one_percent s = $(ratio "$one_percent" "$full") of the full run (target <= 10 %)"
echo "incremental with nothing changed: $nothing s = $(ratio "$nothing" "$full") of the full run (target <= 1 %)"
