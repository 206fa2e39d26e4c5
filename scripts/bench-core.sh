#!/usr/bin/env bash
# The lean core benchmark (issue 29): the hot methods through the worker against bare baselines
# measured in the same run, printed as ratios per round and their medians, then a summary
# table against the issue's targets. Not a test: figures go to docs/performance.md.
#
#   ROUNDS=5 SECONDS_PER_RUN=4 scripts/bench-core.sh       # ~25 minutes with BULK_ROWS=1000000
#   QUICK=1 scripts/bench-core.sh                          # a few minutes: 1 round of 2 s, 100,000 bulk rows
#
# Data (scripts/bench/setup-core.sql): USERS (8) users in Europe/Berlin × 5 daily habits × 3 years,
# ~80 % of days completed, ~2 % skipped (seeded), plus USERS bare users with one such habit
# (written only by the bare-write baseline) and one user whose habit has DEEP_DAYS (2,100) days
# of history. Loaded with triggers off and then made consistent by the after-load hook: every
# no-argument function of REBUILD_FUNCTIONS that exists (to_regprocedure; on main
# habit.rebuild_all_streaks()); when none exists (or LOAD=triggers), through the triggers.
# One throwaway PostgreSQL (scripts/pg-tmp), fsync off (FSYNC=on to change), release builds,
# `habit serve --pool-size POOL_SIZE` (4) as habit_worker, driven by habit-bench (throughput)
# or scripts/bench/worker-latency.py (one request at a time, latency).
#
# Only the worker's JSON-RPC methods and plain SQL on the public tables are used, so the same
# script measures main's schema and a rewritten one; the derived tables of the storage section
# are discovered from the catalog (tables of schemas public and habit with a user_id column
# that are not user tables), or named in DERIVED_TABLES. Sections, in this order (SECTIONS, all
# by default):
#   throughput  at each IN_FLIGHT (1 and 64; 64 spread over the users), ROUNDS rounds, each run
#               SECONDS_PER_RUN long, every other round in reverse order (this machine's speed
#               drifts: ratios compare neighbours):
#               bare write: pgbench -M prepared -c1 of core_write_bare.pgbench (INSERT … ON
#                 CONFLICT DO NOTHING / DELETE of one row, today, each row done and undone in
#                 turn) as the owner with PGOPTIONS='-c session_replication_role=replica' (the
#                 table's triggers off);
#               bare read: pgbench -c1 of core_day_bare.pgbench (the seed spec's two SELECTs of a day);
#               at 64 in flight the same two also with -c BARE_CLIENTS_64 (8: one per user; the
#                 worker runs one request per user at a time), for information;
#               completions.set today, yesterday, 3, 30, 365, 700 days back, each user's requests
#                 alternating done / not done (habit-bench --alternate), so every request writes
#                 (bench-worker.sh's random state leaves half of them with nothing to change);
#               completions.set today with habit_completions' triggers off (on habit 5, whose
#                 runs are rebuilt afterwards): the worker and its statement alone, no rules,
#                 sync or streaks — the floor any bookkeeping adds to, for information;
#               day.get today (5 habits); habits.stats; day.get include streaks; sync.pull with
#                 a caught-up cursor (habit-bench walks every user first); widget.get today
#                 (issue 33; with the score checkpoints the nightly batch writes, loaded first).
#               Ratios: set today and yesterday / bare write; set N days back / set today;
#               the floor / bare write; day.get and widget.get / bare read (widget.get is held
#               to day.get's target); stats, streaks, sync.pull, widget.get / day.get.
#   import      account.import (mode replace) of 4 daily habits × 3 years (~50 % done, ~2,200
#               completions) into a fresh user, IMPORTS times a round, against psql's multi-row
#               INSERT of the same completions into bench.completions_copy (LIKE
#               public.habit_completions INCLUDING ALL: no triggers, no foreign keys), same
#               rounds, alternating which goes first; p50s and the ratio.
#   create      habits.create activated today, 1, 3 and 10 years back: CREATES requests one at a
#               time each, a fresh user (profile Europe/Berlin) per run; p50 latencies and the
#               ratios to today's.
#   storage     per habit of the bench users (and the deep habit): derived rows (rows of each
#               derived table with its template_id; for tables without one, the user's rows
#               divided by the user's habits) against completions + skips + periods + 1.
#   wal         WAL bytes (pg_current_wal_insert_lsn() before and after) and rows written per
#               table (pg_stat_xact_user_tables inside the transaction) of one write on the deep
#               habit today, yesterday, 365, 1,000 and 2,000 days back, done and undone,
#               WAL_REPS times (medians; full_page_writes is off for the section: full-page
#               images follow the checkpoints, not the write): the worker's statement
#               (habit.set_day_state under the user's role and claims, as
#               HabitRepository.setCompletion runs it) when the
#               function exists, the plain INSERT/DELETE as the owner with triggers on, and the
#               same with triggers off on a bare user's habit (the baseline).
#   bulk        INSERT … SELECT of BULK_ROWS completions (1,000 daily habits of 10 users, every
#               day of the last BULK_ROWS/1,000 days) as the owner, triggers off
#               (session_replication_role = replica) and triggers on, each into its own freshly
#               migrated database with the same users and habits; statement_timeout BULK_TIMEOUT
#               (30min), a timeout is reported as such.
#   measurable  (last: it adds a habit to each bench user) a measurable habit per user with
#               3 years of check-ins and notes (scripts/bench/setup-measurable.sql), then at each
#               IN_FLIGHT, ROUNDS rounds of: bare write, completions.set today, checkins.add
#               (the measurable habit, a day of the last 300 at random), completions.set with a
#               value (alternating "6" and "0" today), bare read, day.get today (6 habits, one
#               note). Ratios: checkins.add and the value / bare write (issue 29's write targets)
#               and / completions.set today; day.get / bare read.
#
# Settings (environment): ROUNDS (3), SECONDS_PER_RUN (4), POOL_SIZE (4), IN_FLIGHT ("1 64"),
# BARE_CLIENTS_64 (8; empty: none), USERS (8), DEEP_DAYS (2100), CREATES (20), IMPORTS (3),
# WAL_REPS (3), BULK_ROWS (1000000), BULK_TIMEOUT (30min), LOAD (auto | replica | triggers),
# REBUILD_FUNCTIONS, DERIVED_TABLES, SECTIONS, FSYNC (off). QUICK=1 changes the defaults to
# ROUNDS=1 SECONDS_PER_RUN=2 CREATES=8 IMPORTS=2 WAL_REPS=1 BULK_ROWS=100000.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh

if [ "${QUICK:-0}" = 1 ]; then
    : "${ROUNDS:=1}" "${SECONDS_PER_RUN:=2}" "${CREATES:=8}" "${IMPORTS:=2}" "${WAL_REPS:=1}" "${BULK_ROWS:=100000}"
fi
ROUNDS=${ROUNDS:-3} RUN=${SECONDS_PER_RUN:-4} POOL=${POOL_SIZE:-4} IN_FLIGHT=${IN_FLIGHT:-1 64}
BARE_CLIENTS_64=${BARE_CLIENTS_64-8} USERS=${USERS:-8} DEEP_DAYS=${DEEP_DAYS:-2100}
CREATES=${CREATES:-20} IMPORTS=${IMPORTS:-3} WAL_REPS=${WAL_REPS:-3}
BULK_ROWS=${BULK_ROWS:-1000000} BULK_TIMEOUT=${BULK_TIMEOUT:-30min} LOAD=${LOAD:-auto}
REBUILD_FUNCTIONS=${REBUILD_FUNCTIONS:-habit.rebuild_all_streaks() habit.rebuild_all_derived() habit.rebuild_derived() habit.rebuild_all()}
DERIVED_TABLES=${DERIVED_TABLES:-} SECTIONS=${SECTIONS:-throughput create import storage wal bulk measurable} FSYNC=${FSYNC:-off}
HABITS=5 DAYS=1095 DEPTHS="3 30 365 700" WAL_DEPTHS="0 1 365 1000 2000" BULK_HABITS=1000

bench_traps
bench_build
bench_start_server "$FSYNC"
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
sql() { "${PSQL[@]}" -c "$1"; }
section() { echo; echo "== $* (load $(cut -d' ' -f1-3 /proc/loadavg))"; }
enabled() { [[ " $SECTIONS " == *" $1 "* ]]; }
days_back() { date -d "$TODAY - $1 days" +%F; }
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }

# The summary: rows of "what|figure|baseline|ratio|target|mark", printed at the end.
SUMMARY=()
# check VALUE OP LIMIT → ✔ or ✘ (OP >= or <=); "-" without a limit.
check() {
    [ -z "${3:-}" ] && { echo "-"; return; }
    awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { ok = (v == "nan" || v == "") ? 0 : (op == ">=" ? v >= l : v <= l); print (ok ? "✔" : "✘") }'
}
summary() { # what figure baseline ratio op limit [target text [mark]]
    local target=${7:-}
    case ${5:-} in ">=") target=${target:-≥ $6×} ;; "<=") target=${target:-≤ $6×} ;; esac
    SUMMARY+=("$1|$2|$3|$4|${target:--}|${8:-$(check "$4" "${5:-}" "${6:-}")}")
}

echo "bench-core: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r);" \
     "PostgreSQL $(sql 'show server_version'), fsync=$(sql 'show fsync'), synchronous_commit=$(sql 'show synchronous_commit');" \
     "worker --pool-size $POOL; $ROUNDS rounds of $RUN s per run; in flight: $IN_FLIGHT"
echo "uptime: $(uptime)"

# ---- data ------------------------------------------------------------------------------------
load_start=$(date +%s)
"${PSQL[@]}" -v users="$USERS" -v habits="$HABITS" -v days="$DAYS" -v deep_days="$DEEP_DAYS" \
    -v done_rate=0.8 -v skip_rate=0.02 -v load="$LOAD" -v rebuild="$REBUILD_FUNCTIONS" \
    -f scripts/bench/setup-core.sql >"$PG_DIR/load.out" 2>&1 || { cat "$PG_DIR/load.out" >&2; exit 1; }
TODAY=$(sql "SELECT (now() AT TIME ZONE 'Europe/Berlin')::date")
echo "data: $USERS users × $HABITS daily habits × $DAYS days (+ $USERS bare users × 1, 1 deep habit × $DEEP_DAYS days):" \
     "$(sql 'SELECT count(*) FROM public.habit_completions') completions, $(sql 'SELECT count(*) FROM public.habit_skips') skips," \
     "$(sql 'SELECT count(*) FROM public.habit_periods') periods; $(grep -h '^load:' "$PG_DIR/load.out" || true)" \
     "(in $(( $(date +%s) - load_start )) s); today $TODAY (Europe/Berlin)"

# The derived tables: DERIVED_TABLES, else every table of schemas public and habit with a
# user_id column that is not a user table (partitions are counted through their parent).
DERIVED_SQL="
    SELECT c.oid::regclass AS tab,
           EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'template_id' AND NOT a.attisdropped) AS per_habit
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE CASE WHEN '$DERIVED_TABLES' <> ''
               THEN c.oid IN (SELECT to_regclass(t) FROM unnest(string_to_array('$DERIVED_TABLES', ' ')) t)
               ELSE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname IN ('public', 'habit')
                    AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'user_id' AND NOT a.attisdropped)
                    AND c.relname NOT IN ('profiles', 'habit_templates', 'habit_completions', 'habit_skips', 'habit_periods', 'habit_checkins', 'habit_day_notes',
                                          'task_lists', 'tasks', 'weekly_completion_counts') END"
derived_sizes() { # "table rows, …" of every derived table
    local q
    q=$(sql "SELECT string_agg(format('SELECT %L || '' '' || count(*) FROM %s', tab::text, tab), ' UNION ALL ' ORDER BY tab::text) FROM ($DERIVED_SQL) d")
    [ -n "$q" ] && sql "$q" | paste -sd, - | sed 's/,/, /g' || echo "none"
}
echo "derived tables (rows): $(derived_sizes)"
# Loop's score checkpoints (sql/0038) as the nightly batch leaves them, where the schema has them:
# widget.get's scores walk from them.
if [ -n "$(sql "SELECT to_regclass('habit.score_checkpoints')")" ]; then
    .build/release/habit score-checkpoints --database-url "$DATABASE_URL" >/dev/null
    echo "score checkpoints: $(sql 'SELECT count(*) FROM habit.score_checkpoints') (habit score-checkpoints)"
fi

# ---- throughput --------------------------------------------------------------------------------
declare -A RES RATIOS RATES
# run NAME IN_FLIGHT: sets RES[NAME]="rate p50_ms errors" (pgbench: tps, worker: requests/s).
run() {
    local name=$1 inflight=$2 out
    case $name in
        # The measurable section's own runs of the same kinds: their ratios keep apart from the
        # throughput section's in the summary.
        m_*) run "${name#m_}" "$inflight"; RES[$name]=${RES[${name#m_}]}; return ;;
        bare_write*) out="$(PGOPTIONS='-c session_replication_role=replica' pgbench_run scripts/bench/core_write_bare.pgbench \
                             "$(clients_of "$name")" -D users="$USERS" -D clients="$(clients_of "$name")" -D k=0 -D day="$TODAY") 0" ;;
        bare_read*) out="$(pgbench_run scripts/bench/core_day_bare.pgbench "$(clients_of "$name")" -D users="$USERS" -D day="$TODAY") 0" ;;
        set_tid_*) out=$(habit_bench --users "$USERS" --habit-suffix=-t --alternate --in-flight "$inflight" --method completions.set \
                                     --date "$(days_back "${name#set_tid_}")") ;;
        set_floor) # the worker's statement alone: habit_completions' triggers off, on habit 5 (not
                   # written by the other runs), whose runs are rebuilt afterwards
                   sql "ALTER TABLE public.habit_completions DISABLE TRIGGER USER"
                   out=$(habit_bench --users "$USERS" --habit-suffix=-5 --alternate --in-flight "$inflight" --method completions.set \
                                     --date "$TODAY")
                   sql "ALTER TABLE public.habit_completions ENABLE TRIGGER USER"
                   rebuild_derived ;;
        set_*) out=$(habit_bench --users "$USERS" --habit-suffix=-1 --alternate --in-flight "$inflight" --method completions.set \
                                 --date "$(days_back "${name#set_}")") ;;
        day) out=$(habit_bench --users "$USERS" --in-flight "$inflight" --method day.get --date "$TODAY") ;;
        stats) out=$(habit_bench --users "$USERS" --in-flight "$inflight" --method habits.stats --date "$TODAY") ;;
        streaks) out=$(habit_bench --users "$USERS" --in-flight "$inflight" --method day.get --include streaks --date "$TODAY") ;;
        pull) out=$(habit_bench --users "$USERS" --in-flight "$inflight" --method sync.pull --date "$TODAY") ;;
        widget) out=$(habit_bench --users "$USERS" --in-flight "$inflight" --method widget.get --date "$TODAY") ;;
        checkin) out=$(habit_bench --users "$USERS" --habit-suffix=-m --in-flight "$inflight" --method checkins.add \
                                   --value 1.5 --spread-days 300 --date "$TODAY") ;;
        value) out=$(habit_bench --users "$USERS" --habit-suffix=-m --alternate --in-flight "$inflight" --method completions.set \
                                 --value 6 --date "$TODAY") ;;
        checkin_w) out=$(habit_bench --users "$USERS" --habit-suffix=-w --in-flight "$inflight" --method checkins.add \
                                     --value 1.5 --spread-days 300 --date "$TODAY") ;;
    esac
    RES[$name]=$out
}
# Calls every no-argument rebuild function of REBUILD_FUNCTIONS that exists (after writes with
# the triggers off).
rebuild_derived() {
    local f
    for f in $REBUILD_FUNCTIONS; do
        [ -n "$(sql "SELECT to_regprocedure('$f')")" ] && sql "SELECT $f" >/dev/null
    done
    return 0
}
clients_of() { case $1 in *_c*) echo "${1##*_c}" ;; *) echo 1 ;; esac; }
label() {
    case $1 in
        m_day) echo "day.get (5 boolean habits, a measurable one, a note)" ;;
        m_*) label "${1#m_}" ;;
        bare_write) echo "bare write (pgbench -c1, triggers off)" ;; bare_write_c*) echo "bare write (pgbench -c$(clients_of "$1"), triggers off)" ;;
        bare_read) echo "bare day read (pgbench -c1)" ;; bare_read_c*) echo "bare day read (pgbench -c$(clients_of "$1"))" ;;
        set_tid_0) echo "completions.set today (3 in 10 days)" ;; set_tid_*) echo "completions.set ${1#set_tid_} days back (3 in 10 days)" ;;
        set_0) echo "completions.set today" ;; set_1) echo "completions.set yesterday" ;;
        set_floor) echo "completions.set today, triggers off" ;;
        set_*) echo "completions.set ${1#set_} days back" ;;
        day) echo "day.get (5 habits)" ;; stats) echo "habits.stats (all habits)" ;;
        streaks) echo "day.get include streaks" ;; pull) echo "sync.pull nothing new" ;;
        widget) echo "widget.get (5 habits)" ;;
        checkin) echo "checkins.add (measurable, 300 days)" ;; value) echo "completions.set value (measurable)" ;;
        checkin_w) echo "checkins.add (weekly target, 300 days)" ;;
    esac
}
# The ratios at IN_FLIGHT: "numerator denominator op limit" (no limit: for information).
ratio_defs() {
    local f=$1 set_t=0.35 day_t=0.6 d
    [ "$f" = 1 ] || { set_t=1.2; day_t=2.0; }
    echo "set_0 bare_write >= $set_t"; echo "set_1 bare_write >= $set_t"; echo "set_floor bare_write"
    for d in $DEPTHS; do echo "set_$d set_0 >= 0.9"; done
    echo "day bare_read >= $day_t"
    echo "stats day >= 0.5"; echo "streaks day >= 0.8"; echo "pull day >= 0.8"
    # widget.get (issue 33) is held to day.get's own target against the bare day read.
    echo "widget bare_read >= $day_t"; echo "widget day"
    if [ "$f" != 1 ] && [ -n "$BARE_CLIENTS_64" ]; then
        echo "set_0 bare_write_c$BARE_CLIENTS_64"; echo "set_1 bare_write_c$BARE_CLIENTS_64"; echo "day bare_read_c$BARE_CLIENTS_64"
    fi
}

throughput() {
    local inflight runs c
    for inflight in $IN_FLIGHT; do
        c=$BARE_CLIENTS_64; [ "$inflight" = 1 ] && c=
        runs="bare_write${c:+ bare_write_c$c} set_0 set_1$(for d in $DEPTHS; do printf ' set_%s' "$d"; done) set_floor"
        runs+=" bare_read${c:+ bare_read_c$c} day stats streaks pull widget"
        section "throughput at $inflight in flight: requests/s (worker) or tps (pgbench), p50 ms in ()"
        rounds_of "$inflight" "$runs" ratio_defs
    done
}
# rounds_of IN_FLIGHT RUNS RATIO_FN: ROUNDS rounds of RUNS (every other one reversed), each
# round's ratios (RATIO_FN IN_FLIGHT lists them), then their medians into the summary.
rounds_of() {
    local inflight=$1 runs=$2 ratio_fn=$3 round name order num den op limit key line rate p50 e errors m
        printf '%-6s' round; for name in $runs; do printf ' %15s' "$name"; done; echo
        for round in $(seq "$ROUNDS"); do
            order=$runs
            [ $((round % 2)) = 0 ] && order=$(tr ' ' '\n' <<<"$runs" | tac | tr '\n' ' ')
            for name in $order; do run "$name" "$inflight"; done
            printf '%-6s' "$round"
            errors=0
            for name in $runs; do
                read -r rate p50 e <<<"${RES[$name]}"
                RATES[$name@$inflight]+=" $rate"
                errors=$((errors + ${e%.*}))
                printf ' %15s' "$rate ($p50)"
            done
            [ "$errors" = 0 ] && echo || echo "  ($errors errors)"
            line="       ratios:"
            while read -r num den op limit; do
                key="$num/$den@$inflight"
                RATIOS[$key]+=" $(ratio "$(cut -d' ' -f1 <<<"${RES[$num]}")" "$(cut -d' ' -f1 <<<"${RES[$den]}")")"
                line+=" $num/$den ${RATIOS[$key]##* }x"
            done < <("$ratio_fn" "$inflight")
            echo "$line"
        done
        echo "medians at $inflight in flight (ratios of each round's neighbours; rates: median of the rounds):"
        while read -r num den op limit; do
            key="$num/$den@$inflight"
            # shellcheck disable=SC2086
            m=$(median ${RATIOS[$key]})
            printf '  %-68s %7sx  (rounds:%s)%s\n' "$(label "$num") / $(label "$den")" "$m" "${RATIOS[$key]}" "${op:+  target $op $limit}"
            # shellcheck disable=SC2086
            summary "$(label "$num") @$inflight / $(label "$den")" "$(median ${RATES[$num@$inflight]})/s" \
                    "$(median ${RATES[$den@$inflight]})/s" "$m" "$op" "$limit"
        done < <("$ratio_fn" "$inflight")
}
enabled throughput && throughput

# ---- measurable habits, check-ins and notes (issue 32) -----------------------------------------
# Each bench user gets a measurable habit (md5('bench-habit-n-m'), 5 km a day) with DAYS days of
# check-ins (1–3 a day, ~80 % of days reaching the target) and a note on ~10 % of days
# (scripts/bench/setup-measurable.sql); then the same rounds for checkins.add (spread over the
# last 300 days, so no day reaches its 100), completions.set with a value (alternating "6" and
# "0": every request rewrites the day) and day.get (now 5 boolean habits and the measurable one,
# with today's note), against the same run's bare statements and completions.set today; and
# checkins.add on a weekly target (sql/0033, the week's completion on its day) and completions.set
# on an n-in-m-days habit (sql/0034, 3 in 10 days: the streak window reaches the block's end),
# today and 700 days back (a write in the past costs what one today does).
measurable_ratio_defs() {
    local f=$1 set_t=0.35 day_t=0.6
    [ "$f" = 1 ] || { set_t=1.2; day_t=2.0; }
    echo "checkin m_bare_write >= $set_t"; echo "value m_bare_write >= $set_t"; echo "m_set_0 m_bare_write"
    echo "checkin m_set_0"; echo "value m_set_0"; echo "m_day m_bare_read >= $day_t"
    echo "checkin_w m_bare_write >= $set_t"; echo "checkin_w checkin"
    echo "set_tid_0 m_bare_write >= $set_t"; echo "set_tid_0 m_set_0"; echo "set_tid_700 set_tid_0 >= 0.9"
}
measurable_section() {
    local inflight
    "${PSQL[@]}" -v users="$USERS" -v days="$DAYS" -f scripts/bench/setup-measurable.sql >"$PG_DIR/measurable.out" 2>&1 \
        || { cat "$PG_DIR/measurable.out" >&2; exit 1; }
    section "measurable habits: $(sql 'SELECT count(*) FROM public.habit_checkins') check-ins," \
            "$(sql 'SELECT count(*) FROM public.habit_day_notes') notes on $USERS habits"
    for inflight in $IN_FLIGHT; do
        section "measurable habits at $inflight in flight: requests/s (worker) or tps (pgbench), p50 ms in ()"
        rounds_of "$inflight" "m_bare_write m_set_0 checkin value checkin_w set_tid_0 set_tid_700 m_bare_read m_day" measurable_ratio_defs
    done
}

# Requests one at a time through a fresh worker: worker_latency FILE → "p50_ms errors requests".
# The first POOL requests of FILE warm the pool's connections and are not counted.
worker_latency() {
    local line
    line=$(python3 scripts/bench/worker-latency.py .build/release/habit "$WORKER_URL" "$POOL" "$POOL" <"$1")
    echo "$(field p50_ms "$line") $(field errors "$line") $(field requests "$line")"
}

# ---- habits.create -----------------------------------------------------------------------------
# create_requests TAG YEARS COUNT: COUNT habits.create lines for the fresh user md5(TAG), each a
# new habit activated at today's midnight (Europe/Berlin) YEARS years back; the user's profile
# (Europe/Berlin) is inserted first.
create_requests() {
    sql "INSERT INTO public.profiles (user_id, timezone) VALUES (md5('$1')::uuid, 'Europe/Berlin')"
    sql "SELECT json_build_object('jsonrpc', '2.0', 'id', i, 'method', 'habits.create', 'params', json_build_object(
             'user_id', md5('$1')::uuid, 'name', 'Create ' || i,
             'activated_at', to_char((date_trunc('day', now() AT TIME ZONE 'Europe/Berlin') - make_interval(years => $2))
                                     AT TIME ZONE 'Europe/Berlin' AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')))
         FROM generate_series(1, $3) i"
}
create_section() {
    local years="0 1 3 10" round order y p50 e n file=$PG_DIR/create.jsonl
    declare -A P50S=() CRATIOS=()
    section "habits.create, one request at a time ($CREATES a run after $POOL warm-up; a fresh user a run): p50 ms"
    printf '%-6s %10s %10s %10s %10s   %s\n' round today 1y 3y 10y "1y/today 3y/today 10y/today"
    for round in $(seq "$ROUNDS"); do
        order=$years; [ $((round % 2)) = 0 ] && order="10 3 1 0"
        for y in $order; do
            create_requests "bench-create-r$round-y$y" "$y" $((CREATES + POOL)) >"$file"
            read -r p50 e n <<<"$(worker_latency "$file")"
            [ "$e" = 0 ] || echo "  (habits.create $y years back: $e errors)"
            P50S[$y]=$p50
        done
        for y in 1 3 10; do CRATIOS[$y]+=" $(ratio "${P50S[$y]}" "${P50S[0]}")"; done
        for y in $years; do CREATE_P50[$y]+=" ${P50S[$y]}"; done
        printf '%-6s %10s %10s %10s %10s   %s %s %s\n' "$round" "${P50S[0]}" "${P50S[1]}" "${P50S[3]}" "${P50S[10]}" \
            "${CRATIOS[1]##* }x" "${CRATIOS[3]##* }x" "${CRATIOS[10]##* }x"
    done
    for y in 1 3 10; do
        # shellcheck disable=SC2086
        local m=$(median ${CRATIOS[$y]}) limit=
        [ "$y" = 10 ] && limit=2
        echo "median habits.create ${y}y back / today: ${m}x (rounds:${CRATIOS[$y]})${limit:+  target <= $limit}"
        # shellcheck disable=SC2086
        summary "habits.create activated $y years back / today (p50)" "$(median ${CREATE_P50[$y]}) ms" \
                "$(median ${CREATE_P50[0]}) ms" "$m" "${limit:+<=}" "$limit"
    done
}
declare -A CREATE_P50

# ---- account.import ----------------------------------------------------------------------------
# The document's completions: 4 daily habits over the DAYS days before today, ~50 % done (seeded).
import_stage() {
    "${PSQL[@]}" <<SQL
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TABLE bench.completions_copy (LIKE public.habit_completions INCLUDING ALL);
SELECT setseed(0.29) \\gset
CREATE TABLE bench.import_days AS
SELECT h, day FROM (SELECT h, d::date AS day, random() AS r
                    FROM (SELECT h, d FROM generate_series(1, 4) h,
                                 generate_series('$TODAY'::date - $DAYS, '$TODAY'::date - 1, '1 day') d ORDER BY h, d) s) s
WHERE r < 0.5;
SQL
}
# import_request TAG ID FULL: one account.import line (mode replace) for the fresh user md5(TAG):
# FULL true, 4 habits and every bench.import_days completion; false, 1 habit and its first 10.
import_docs_sql() { # TAG FULL → the habits and completions of the document, as a WITH prefix
    echo "WITH h AS (SELECT h, md5('$1-' || h)::uuid AS id FROM generate_series(1, CASE WHEN $2 THEN 4 ELSE 1 END) h),
          c AS (SELECT h.id, d.day FROM h JOIN bench.import_days d USING (h)
                WHERE $2 OR d.day < '$TODAY'::date - $DAYS + 20)"
}
import_request() {
    sql "$(import_docs_sql "$1" "$3")
         SELECT json_build_object('jsonrpc', '2.0', 'id', $2, 'method', 'account.import', 'params', json_build_object(
             'user_id', md5('$1')::uuid, 'mode', 'replace', 'document', json_build_object(
                 'format', 'habit-account', 'version', 1,
                 'profile', json_build_object('time_zone', 'Europe/Berlin', 'week_start', 'monday'),
                 'habits', (SELECT json_agg(json_build_object('id', id, 'name', 'Import ' || h, 'periods', json_build_array(
                                json_build_object('started_at', to_char(('$TODAY'::date - $DAYS)::timestamp AT TIME ZONE 'Europe/Berlin'
                                                                        AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                                                  'ended_at', NULL, 'schedule', json_build_object('type', 'daily')))) ORDER BY id) FROM h),
                 'completions', (SELECT json_agg(json_build_object('template_id', id, 'date', day) ORDER BY id, day) FROM c),
                 'skips', '[]'::json, 'lists', '[]'::json, 'tasks', '[]'::json)))"
}
# The bare side: TRUNCATE (untimed), then the same completions as one multi-row INSERT (timed).
import_bare_sql() { # TAG
    echo '\timing off'
    echo 'TRUNCATE bench.completions_copy;'
    echo '\timing on'
    sql "$(import_docs_sql "$1" true)
         SELECT 'INSERT INTO bench.completions_copy (user_id, template_id, completed_date) VALUES '
                || string_agg(format('(%L, %L, %L)', md5('$1')::uuid, id, day), ', ' ORDER BY id, day) || ';' FROM c"
}
import_section() {
    local round k side p50 e n bare_p50 reqs=$PG_DIR/import.jsonl bare=$PG_DIR/import-bare.sql ratios="" w_all="" b_all=""
    import_stage
    section "account.import of 4 habits × $DAYS days ($(sql 'SELECT count(*) FROM bench.import_days') completions) into a fresh user," \
            "$IMPORTS a round (after $POOL small warm-up imports), against a bare multi-row INSERT of the same completions: p50 ms"
    printf '%-6s %12s %12s %8s\n' round import bare ratio
    for round in $(seq "$ROUNDS"); do
        : >"$reqs"; : >"$bare"
        for k in $(seq "$POOL"); do import_request "bench-import-r$round-w$k" "$k" false >>"$reqs"; done
        import_bare_sql "bench-import-r$round-w" >>"$bare"
        for k in $(seq "$IMPORTS"); do
            import_request "bench-import-r$round-$k" $((POOL + k)) true >>"$reqs"
            import_bare_sql "bench-import-r$round-$k" >>"$bare"
        done
        for side in $([ $((round % 2)) = 1 ] && echo "worker bare" || echo "bare worker"); do
            if [ "$side" = worker ]; then
                read -r p50 e n <<<"$(worker_latency "$reqs")"
                [ "$e" = 0 ] || echo "  (account.import: $e errors)"
            else
                # shellcheck disable=SC2046
                bare_p50=$(median $("${PSQL[@]}" -f "$bare" | awk '/^Time:/ { if (++n > 1) print $2 }'))
            fi
        done
        ratios+=" $(ratio "$p50" "$bare_p50")"; w_all+=" $p50"; b_all+=" $bare_p50"
        printf '%-6s %12s %12s %7sx\n' "$round" "$p50" "$bare_p50" "${ratios##* }"
    done
    # shellcheck disable=SC2086
    local m=$(median $ratios)
    echo "median account.import / bare INSERT: ${m}x (rounds:$ratios)  target <= 6"
    # shellcheck disable=SC2086
    summary "account.import 4 habits × 3 years (p50) / bare multi-row INSERT" "$(median $w_all) ms" "$(median $b_all) ms" "$m" "<=" 6
}
enabled import && import_section
# After the imports: each 10-years-back create adds ~3,650 rows of derived state on main, which
# would otherwise be the imports' table.
enabled create && create_section

# ---- storage -----------------------------------------------------------------------------------
storage_section() {
    section "storage: derived rows per habit against its completions + skips + periods + 1 (bench users' habits and the deep habit)"
    echo "derived tables (rows): $(derived_sizes)"
    local out
    out=$("${PSQL[@]}" -F'|' <<SQL
CREATE TEMP TABLE derived AS $DERIVED_SQL;
SELECT coalesce(string_agg(CASE WHEN per_habit
           THEN format('SELECT %L::text AS tab, template_id, NULL::uuid AS user_id, count(*) AS n FROM %s GROUP BY template_id', tab::text, tab)
           ELSE format('SELECT %L::text, NULL::uuid, user_id, count(*) FROM %s GROUP BY user_id', tab::text, tab) END, ' UNION ALL '),
           'SELECT NULL::text AS tab, NULL::uuid AS template_id, NULL::uuid AS user_id, 0::bigint AS n WHERE false') AS q
FROM derived \gset
CREATE TEMP TABLE counts AS :q;
CREATE TEMP TABLE per_habit AS
SELECT t.id, t.user_id, t.name,
       (SELECT count(*) FROM public.habit_completions c WHERE c.user_id = t.user_id AND c.template_id = t.id)
       + (SELECT count(*) FROM public.habit_skips s WHERE s.user_id = t.user_id AND s.template_id = t.id)
       + (SELECT count(*) FROM public.habit_periods p WHERE p.user_id = t.user_id AND p.template_id = t.id) + 1 AS budget,
       coalesce((SELECT sum(n) FROM counts k WHERE k.template_id = t.id), 0)
       + coalesce((SELECT sum(n) FROM counts k WHERE k.user_id = t.user_id), 0)
         / (SELECT count(*) FROM public.habit_templates u WHERE u.user_id = t.user_id) AS derived
FROM public.habit_templates t
WHERE t.user_id IN (SELECT md5('bench-user-' || n)::uuid FROM generate_series(1, $USERS) n) OR t.user_id = md5('bench-deep-user')::uuid;
-- Per table, rows per habit: the habits' own rows and their users' rows (every habit of a
-- bench user is counted), over the number of habits.
SELECT 'mean per habit, by table (' || (SELECT count(*) FROM per_habit) || ' habits): '
       || coalesce(string_agg(format('%s %s', tab, round(n / (SELECT count(*) FROM per_habit), 2)), ', ' ORDER BY tab), 'no derived tables')
FROM (SELECT k.tab, sum(k.n) AS n FROM counts k
      WHERE k.template_id IN (SELECT id FROM per_habit) OR k.user_id IN (SELECT user_id FROM per_habit) GROUP BY k.tab) t;
SELECT format('deep habit (%s days): %s derived rows, budget %s', $DEEP_DAYS, round(derived, 1), budget) FROM per_habit WHERE id = md5('bench-deep-habit')::uuid;
SELECT format('worst habit %s: %s derived rows, budget %s; %s of %s habits over budget',
              name, round(derived, 1), budget, (SELECT count(*) FILTER (WHERE derived > budget) FROM per_habit), (SELECT count(*) FROM per_habit))
FROM per_habit ORDER BY derived / budget DESC LIMIT 1;
SELECT 'SUMMARY', round(derived, 1), budget, round(derived / budget, 3) FROM per_habit ORDER BY derived / budget DESC LIMIT 1;
SQL
)
    grep -v '^SUMMARY' <<<"$out" | sed 's/^/  /'
    local _ d b r
    IFS='|' read -r _ d b r <<<"$(grep '^SUMMARY' <<<"$out")"
    summary "derived rows per habit (the worst habit) / its completions + skips + periods + 1" "$d rows" "$b rows" "$r" "<=" 1 "≤ 1×"
}
enabled storage && storage_section

# ---- WAL and rows per write --------------------------------------------------------------------
# wal_probe MODE USER HABIT DAY STATE → "wal_bytes|rows|per-table detail" of one write in its own
# transaction. MODE statement: the worker's statement (habit.set_day_state under the user's role
# and claims, as HabitRepository.setCompletion sends it); triggers: the plain INSERT … ON
# CONFLICT DO NOTHING / DELETE as the owner; bare: the same with session_replication_role = replica.
SET_DAY_STATE='habit.set_day_state(uuid,uuid,date,text,text,boolean)'
wal_probe() {
    local mode=$1 user=$2 habit=$3 day=$4 state=$5 stmt
    local insert="INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES ('$user', '$habit', '$day') ON CONFLICT DO NOTHING;"
    local delete="DELETE FROM public.habit_completions WHERE user_id = '$user' AND template_id = '$habit' AND completed_date = '$day';"
    case $mode in
        statement) stmt="SELECT set_config('role', 'authenticated', true), set_config('request.jwt.claims', '{\"sub\":\"$user\",\"role\":\"authenticated\"}', true),
                            set_config('request.jwt.claim.sub', '$user', true), set_config('request.jwt.claim.role', 'authenticated', true);
                     SELECT * FROM habit.set_day_state('$user', '$habit', '$day', '$([ "$state" = done ] && echo done || echo none)', NULL, false);" ;;
        triggers) stmt=$([ "$state" = done ] && echo "$insert" || echo "$delete") ;;
        bare) stmt="SET LOCAL session_replication_role = replica; $([ "$state" = done ] && echo "$insert" || echo "$delete")" ;;
    esac
    "${PSQL[@]}" <<SQL
SELECT pg_current_wal_insert_lsn() AS l0 \gset
BEGIN;
\o /dev/null
$stmt
\o
RESET ROLE;
SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) AS nrows,
       coalesce(string_agg(format('%s.%s %s', schemaname, relname,
                                  concat_ws(' ', nullif('+' || n_tup_ins, '+0'), nullif('~' || n_tup_upd, '~0'), nullif('-' || n_tup_del, '-0'))),
                           ', ' ORDER BY schemaname, relname), '') AS detail
FROM pg_stat_xact_user_tables WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 \gset
COMMIT;
SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'l0') AS wal \gset
\echo :wal|:nrows|:detail
SQL
}
wal_section() {
    local modes="triggers bare" mode depth day rep user habit state out
    [ -n "$(sql "SELECT to_regprocedure('$SET_DAY_STATE')")" ] && modes="statement $modes"
    section "WAL bytes (full_page_writes off) and rows written (+inserted ~updated -deleted, per table) per write on the deep" \
            "habit ($DEEP_DAYS days of history; bare: a bare user's habit, triggers off), median of $WAL_REPS"
    [[ $modes == statement* ]] || echo "  ($SET_DAY_STATE does not exist: the worker's statement is not probed)"
    # Full-page images are left out: whether a write logs one depends on when the last
    # checkpoint was (and a random uuid key touches a random index page), not on the write.
    # The checkpointer applies the reloaded setting to WAL insertion; it has done so once a
    # CHECKPOINT it runs returns.
    sql "ALTER SYSTEM SET full_page_writes = off"; sql "SELECT pg_reload_conf()" >/dev/null; sleep 1; sql "CHECKPOINT"
    declare -A WAL
    for depth in $WAL_DEPTHS; do
        day=$(days_back "$depth")
        for mode in $modes; do
            user=$(sql "SELECT md5('bench-deep-user')::uuid") habit=$(sql "SELECT md5('bench-deep-habit')::uuid")
            [ "$mode" = bare ] && user=$(sql "SELECT md5('bench-bare-user-1')::uuid") habit=$(sql "SELECT md5('bench-bare-habit-1')::uuid")
            wal_probe "$mode" "$user" "$habit" "$day" none >/dev/null # a known state first
            local done_wal="" none_wal="" done_out none_out
            for rep in $(seq "$WAL_REPS"); do
                done_out=$(wal_probe "$mode" "$user" "$habit" "$day" done); done_wal+=" ${done_out%%|*}"
                none_out=$(wal_probe "$mode" "$user" "$habit" "$day" none); none_wal+=" ${none_out%%|*}"
            done
            # shellcheck disable=SC2086
            WAL[$depth.$mode]="$(median $done_wal) $(median $none_wal) $(cut -d'|' -f2 <<<"$done_out") $(cut -d'|' -f2 <<<"$none_out")"
            printf '  %5s days back %-9s done: %6s B, %4s rows (%s)\n' "$depth" "$mode" "$(median $done_wal)" \
                "$(cut -d'|' -f2 <<<"$done_out")" "$(cut -d'|' -f3 <<<"$done_out")"
            printf '  %5s days back %-9s undo: %6s B, %4s rows (%s)\n' "$depth" "$mode" "$(median $none_wal)" \
                "$(cut -d'|' -f2 <<<"$none_out")" "$(cut -d'|' -f3 <<<"$none_out")"
        done
        local main=${modes%% *} w_done w_none r_done r_none b_done b_none
        read -r w_done w_none r_done r_none <<<"${WAL[$depth.$main]}"
        read -r b_done b_none br_done br_none <<<"${WAL[$depth.bare]}"
        local worst=$((w_done > w_none ? w_done : w_none))
        summary "WAL per write $depth days back ($main: done / undo)" "$w_done / $w_none B, $r_done / $r_none rows" \
                "$b_done / $b_none B, $br_done / $br_none rows" "$(ratio "$worst" "$(( b_done > b_none ? b_done : b_none ))")" "" "" \
                "≤ 8192 B" "$( [ "$worst" -le 8192 ] && echo ✔ || echo ✘)"
    done
}
enabled wal && wal_section && { sql "ALTER SYSTEM RESET full_page_writes"; sql "SELECT pg_reload_conf()" >/dev/null; }

# ---- bulk --------------------------------------------------------------------------------------
# bulk_db NAME: a fresh database, migrated, with the bulk users and habits (through the triggers):
# 10 users × 100 daily habits activated the day before the first bulk day.
bulk_db() {
    sql "CREATE DATABASE $1"
    .build/release/habit migrate --database-url "postgresql://postgres@/$1?host=$PG_DIR/socket" --migrations-dir sql >&2
    "${PSQL[@]}" -d "$1" <<SQL
INSERT INTO public.profiles (user_id, timezone)
SELECT md5('bench-bulk-user-' || u)::uuid, 'Europe/Berlin' FROM generate_series(1, 10) u;
INSERT INTO public.habit_templates (id, user_id, name, activated_at, sort_order, schedule)
SELECT md5('bench-bulk-habit-' || u || '-' || h)::uuid, md5('bench-bulk-user-' || u)::uuid, 'Bulk ' || h,
       ('$TODAY'::date - $BULK_DAYS - 1)::timestamp AT TIME ZONE 'Europe/Berlin', h, '{"type":"daily"}'::jsonb
FROM generate_series(1, 10) u, generate_series(1, $((BULK_HABITS / 10))) h;
VACUUM ANALYZE;
SQL
}
# bulk_insert NAME [PGOPTIONS] → seconds, or "timeout": the one INSERT … SELECT, as the owner.
bulk_insert() {
    local out
    if out=$(PGOPTIONS=${2:-} "${PSQL[@]}" -d "$1" 2>&1 <<SQL
SET statement_timeout = '$BULK_TIMEOUT';
SELECT clock_timestamp() AS t0 \gset
INSERT INTO public.habit_completions (user_id, template_id, completed_date)
SELECT t.user_id, t.id, d::date
FROM public.habit_templates t, generate_series('$TODAY'::date - $BULK_DAYS, '$TODAY'::date - 1, '1 day') d;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0'::timestamptz)::numeric, 2);
SQL
    ); then echo "$out"
    elif grep -q 'statement timeout' <<<"$out"; then echo timeout
    else echo "$out" >&2; return 1
    fi
}
bulk_section() {
    BULK_DAYS=$(( (BULK_ROWS + BULK_HABITS - 1) / BULK_HABITS ))
    section "bulk: INSERT … SELECT of $((BULK_DAYS * BULK_HABITS)) completions ($BULK_HABITS daily habits of 10 users ×" \
            "the last $BULK_DAYS days, every day done) as the owner, each side in its own fresh database; statement_timeout $BULK_TIMEOUT"
    bulk_db bench_bulk_bare; bulk_db bench_bulk_triggers
    local bare on
    bare=$(bulk_insert bench_bulk_bare '-c session_replication_role=replica')
    echo "  triggers off (session_replication_role = replica): $bare s"
    on=$(bulk_insert bench_bulk_triggers)
    echo "  every trigger on: $on s (load $(load_avg))"
    echo "  derived tables after it (rows): $(PGDATABASE=bench_bulk_triggers derived_sizes)"
    local r=nan
    [ "$on" = timeout ] && on="timeout (> $BULK_TIMEOUT)" || r=$(ratio "$on" "$bare")
    echo "  triggers on / off: ${r}x  target <= 10"
    summary "bulk INSERT … SELECT of $((BULK_DAYS * BULK_HABITS)) completions, triggers on / off" "$on s" "$bare s" "$r" "<=" 10
    sql "DROP DATABASE bench_bulk_bare"; sql "DROP DATABASE bench_bulk_triggers"
}
enabled bulk && bulk_section
# Last: it gives the bench users a sixth habit, which the sections above do not expect.
enabled measurable && measurable_section

# ---- summary -----------------------------------------------------------------------------------
echo
echo "== summary ($TODAY; load $(load_avg); ratios: medians of the rounds, each round's figure against its neighbouring baseline;"
echo "   figure and baseline columns: medians of the rounds)"
{
    echo "what|figure|baseline|ratio|target|"
    printf '%s\n' "${SUMMARY[@]}"
} | column -t -s'|' -R 2,3,4
echo "end: uptime $(uptime)"
