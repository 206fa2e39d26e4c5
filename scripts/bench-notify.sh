#!/usr/bin/env bash
# Change notifications off the write path (issue 34, item 2): completions.set through the worker
# under synchronous replication, with the writers that sent a NOTIFY at every commit ("before")
# and with the writers that send none ("after", sql/0026), in the same run. Not a test: figures
# go to docs/performance.md.
#
#   ROUNDS=3 SECONDS_PER_RUN=4 scripts/bench-notify.sh
#
# One primary and its synchronous standby (scripts/failover-tmp, fsync on, synchronous_commit
# on: a commit returns once the standby flushed it), two databases on them migrated from sql/
# and loaded with scripts/bench/setup-core.sql (USERS users × 5 daily habits × DAYS days).
# "before" then gets BEFORE_REV's sql/functions/sync.sql applied again (`git show`; default
# 056cc34, the last main whose writers notified): the same schema, with the three functions
# that number a user's changes sending `pg_notify('habit_changes', token)` as they did. The
# worker binary is the same for both (the change listener is not used: nobody subscribes).
# Per round, in alternating order: the bare write (pgbench -M prepared -c USERS, as the owner,
# triggers off, INSERT … ON CONFLICT DO NOTHING / DELETE of one row today), completions.set
# today at IN_FLIGHT (64) over the USERS users through `habit serve --pool-size POOL_SIZE` (4)
# on "before", and the same on "after". Ratios: after / before, and each against the bare write.
#
# Settings (environment): ROUNDS (3), SECONDS_PER_RUN (4), POOL_SIZE (4), IN_FLIGHT (64),
# USERS (8), DAYS (365), BEFORE_REV (056cc34), SKIP_BUILD (0: build the release binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh

ROUNDS=${ROUNDS:-3} RUN=${SECONDS_PER_RUN:-4} POOL=${POOL_SIZE:-4} IN_FLIGHT=${IN_FLIGHT:-64}
USERS=${USERS:-8} DAYS=${DAYS:-365} BEFORE_REV=${BEFORE_REV:-056cc34}
REBUILD_FUNCTIONS='habit.rebuild_all_streaks() habit.rebuild_all_derived() habit.rebuild_derived() habit.rebuild_all()'

git cat-file -e "$BEFORE_REV:sql/functions/sync.sql" 2>/dev/null \
    || { echo "bench-notify: $BEFORE_REV:sql/functions/sync.sql not found (a shallow clone? set BEFORE_REV)" >&2; exit 2; }
[ "${SKIP_BUILD:-0}" = 1 ] || bench_build

FAILOVER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/habit-fo.XXXXXX")
trap 'scripts/failover-tmp stop "$FAILOVER_DIR" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
eval "$(scripts/failover-tmp start "$FAILOVER_DIR")"
SOCKET="$FAILOVER_DIR/$(cat "$FAILOVER_DIR/primary")/socket"
# pgbench_run and the psql calls below use the owner on the primary.
export PGHOST=$SOCKET PGUSER=postgres
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)

for db in before after; do
    "${PSQL[@]}" -d postgres -c "CREATE DATABASE $db"
    .build/release/habit migrate --database-url "host=$SOCKET user=postgres dbname=$db" --migrations-dir sql >&2
    "${PSQL[@]}" -d "$db" -v users="$USERS" -v habits=5 -v days="$DAYS" -v deep_days=10 -v done_rate=0.8 -v skip_rate=0.02 \
        -v load=auto -v rebuild="$REBUILD_FUNCTIONS" -f scripts/bench/setup-core.sql >/dev/null
done
git show "$BEFORE_REV:sql/functions/sync.sql" | "${PSQL[@]}" -1 -d before -f - >/dev/null
notifying() { "${PSQL[@]}" -d "$1" -c "SELECT count(*) FROM pg_proc WHERE pronamespace = 'habit'::regnamespace AND prosrc LIKE '%pg_notify%'"; }
echo "bench-notify: $(nproc) cores, $(uname -r); PostgreSQL $("${PSQL[@]}" -d after -c 'show server_version'), fsync=$("${PSQL[@]}" -d after -c 'show fsync')," \
     "synchronous_standby_names=$("${PSQL[@]}" -d after -c 'show synchronous_standby_names'), synchronous_commit=$("${PSQL[@]}" -d after -c 'show synchronous_commit');" \
     "functions sending pg_notify: before $(notifying before), after $(notifying after); $USERS users × 5 habits × $DAYS days;" \
     "worker --pool-size $POOL at $IN_FLIGHT in flight; $ROUNDS rounds of $RUN s"
echo "uptime: $(uptime)"
TODAY=$("${PSQL[@]}" -d after -c "SELECT (now() AT TIME ZONE 'Europe/Berlin')::date")

run() { # NAME → "rate p50_ms errors"
    case $1 in
        bare) DATABASE_URL="host=$SOCKET user=postgres dbname=after" PGOPTIONS='-c session_replication_role=replica' \
                  pgbench_run scripts/bench/core_write_bare.pgbench "$USERS" -D users="$USERS" -D clients="$USERS" -D k=0 -D day="$TODAY" \
                  | sed 's/$/ 0/' ;;
        *) WORKER_URL="host=$SOCKET user=habit_worker dbname=$1" \
               habit_bench --users "$USERS" --habit-suffix=-1 --alternate --in-flight "$IN_FLIGHT" --method completions.set --date "$TODAY" ;;
    esac
}
PG_DIR=$FAILOVER_DIR # pgbench_run keeps its log there
declare -A RATE
after_before=() before_bare=() after_bare=()
printf '%-6s %22s %22s %22s %14s\n' round "bare write -c$USERS" "before (NOTIFY)" "after (poll)" "after/before"
for round in $(seq "$ROUNDS"); do
    order="bare before after"
    [ $((round % 2)) = 0 ] && order="after before bare"
    for name in $order; do
        read -r rate p50 errors <<<"$(run "$name")"
        [ "${errors:-0}" = 0 ] || echo "bench-notify: $name had $errors errors" >&2
        RATE[$name]="$rate ($p50 ms)"
        eval "r_$name=$rate"
    done
    after_before+=("$(ratio "$r_after" "$r_before")")
    before_bare+=("$(ratio "$r_before" "$r_bare")")
    after_bare+=("$(ratio "$r_after" "$r_bare")")
    printf '%-6s %22s %22s %22s %13s×\n' "$round" "${RATE[bare]}" "${RATE[before]}" "${RATE[after]}" "${after_before[-1]}"
done
echo
echo "medians: after / before $(median "${after_before[@]}")×; before / bare write $(median "${before_bare[@]}")×;" \
     "after / bare write $(median "${after_bare[@]}")× (load $(cut -d' ' -f1-3 /proc/loadavg))"
