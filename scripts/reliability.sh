#!/usr/bin/env bash
# Long reliability runs: the ReliabilityTests at full size, against a release build of the worker
# and a throwaway PostgreSQL. Figures go to docs/reliability.md. The normal suite (scripts/test.sh)
# runs the same tests at a small size.
#
#   scripts/reliability.sh fuzz [SECONDS]        libFuzzer on Sources/JSONRPC (default 600 s; scripts/fuzz.sh)
#   scripts/reliability.sh blackbox [LINES]      hostile lines into `habit serve` (default 100000)
#   scripts/reliability.sh limits                10 MB line, 10,000-deep nesting, 100,000-element batches, 10,000 unread
#   scripts/reliability.sh kills [KILLS]         pg_terminate_backend under load (default 1000) + 2,000 connection-level rounds
#   scripts/reliability.sh crash [WRITES] [N]    kill -9 / pg_ctl -m immediate during writes (default 10000 writes, 20 crashes)
#   scripts/reliability.sh timeouts              50 statement timeouts (500 ms) + a 20,000-request soak
#   scripts/reliability.sh lifecycle [CYCLES]    spawn/EOF and spawn/SIGTERM cycles under load (default 100 each)
#   scripts/reliability.sh history [ROUNDS]     habit.habit_days_at against the Swift model, random histories (default 10000)
#   scripts/reliability.sh checkins [ROUNDS]    a day's check-ins, completion and skip under every writer against the model (default 1000 cases of 40 steps, each kind of habit)
#   scripts/reliability.sh streaks [ROUNDS]     habit_stats/current_streaks/stats_calendar against the streak model (default 5000),
#                                               and habits.stats/stats.calendar through the worker (ROUNDS / 10)
#   scripts/reliability.sh sync [ROUNDS]        two devices syncing through one worker against the exactly-once model (default 100000)
#   scripts/reliability.sh incremental [ROUNDS] weekly-counts --store --incremental against a full recompute after random
#                                               changes of every kind (default 2000)
#   scripts/reliability.sh reminders [WINDOWS]  reminders.due against the reminder model over zones with DST gaps and repeats,
#                                               day starts and schedules (default 5000 windows in each of its two phases)
#   scripts/reliability.sh amplification [N]  every method at its dearest params, by counts; a push of N mutations (default 20)
#   scripts/reliability.sh failover [N]          kill -9 the primary under write load, promote its synchronous standby,
#                                               rebuild, N times (default 20); every acknowledged write checked (scripts/failover-tmp)
#   scripts/reliability.sh patroni [N] [S]      under Patroni (scripts/patroni-tmp, 3 nodes, strict synchronous mode): kill -9
#                                               the leader's Patroni and postmaster under 3 workers' writes, N times (default 20),
#                                               then S switchovers (default 5); every acknowledged write checked
#   scripts/reliability.sh all                   everything above, in that order
#
# Environment: SCRATCH_PATH (default .build), RELIABILITY_REPORT (default $SCRATCH_PATH/reliability-report.jsonl,
# one JSON object per figure), RELIABILITY_SEED. Timing bounds are checked here, never in the tests:
# a timeout answers within timeout + 0.5 s; a worker exits within 2 s of EOF/SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

SCRATCH=${SCRATCH_PATH:-.build}
REPORT=${RELIABILITY_REPORT:-$SCRATCH/reliability-report.jsonl}
LOGDIR=$SCRATCH/reliability-logs
command=${1:-}
[ -n "$command" ] || { sed -n '2,30p' "$0" >&2; exit 2; }
shift

if [ "$command" = fuzz ]; then
    exec scripts/fuzz.sh "${1:-600}"
fi

scripts/pg-tmp ensure-packages
swift build --scratch-path "$SCRATCH" --build-tests </dev/null >&2
swift build --scratch-path "$SCRATCH" -c release --product habit </dev/null >&2
export HABIT_BINARY=$PWD/$SCRATCH/release/habit
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT
mkdir -p "$LOGDIR"
export RELIABILITY_REPORT=$PWD/$REPORT
failures=0

# run NAME FILTER VAR=VALUE…: one test run with its sizes; prints its figures.
run() {
    local name=$1 filter=$2
    shift 2
    local log=$LOGDIR/$name.log
    local start
    start=$(date +%s)
    echo "== $name: $* (load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, PostgreSQL $(psql -d "$DATABASE_URL" -Atc 'show server_version'))"
    if env "$@" swift test --scratch-path "$SCRATCH" --skip-build --filter "$filter" </dev/null >"$log" 2>&1; then
        echo "   passed in $(( $(date +%s) - start )) s (log $log)"
    else
        echo "   FAILED in $(( $(date +%s) - start )) s (log $log)"
        grep -E '✘|recorded an issue' "$log" | head -20 | cut -c1-400
        failures=$((failures + 1))
    fi
    grep -E '^reliability figure:' "$log" | sed 's/^reliability figure: /   /' || true
    grep -E 'known issue' "$log" | grep -E '^━ Test' | cut -c1-200 | sed 's/^/   /' || true
}

# bound TEST JQ-CONDITION DESCRIPTION: checks the last figure of TEST in the report.
bound() {
    local test=$1 condition=$2 description=$3
    if jq -e -s --arg t "$test" "[.[] | select(.test == \$t)] | last | $condition" "$REPORT" >/dev/null; then
        echo "   bound ok: $description"
    else
        echo "   BOUND VIOLATED: $description ($(jq -c -s --arg t "$test" '[.[] | select(.test == $t)] | last' "$REPORT"))"
        failures=$((failures + 1))
    fi
}

blackbox() { run blackbox ReliabilityTests.BlackBoxFuzzTests RELIABILITY_FUZZ_LINES="${1:-100000}"; }
limits() { run limits ReliabilityTests.LimitsTests RELIABILITY_DB_BATCH=100000; }
kills() {
    run kills ReliabilityTests.LostConnectionTests RELIABILITY_KILLS="${1:-1000}"
    run connection-kills ReliabilityTests.ConnectionKillTests RELIABILITY_CONNECTION_KILL_ROUNDS=2000
}
crash() { run crash ReliabilityTests.CrashDurabilityTests RELIABILITY_CRASH_WRITES="${1:-10000}" RELIABILITY_CRASHES="${2:-20}"; }
timeouts() {
    run timeouts ReliabilityTests.TimeoutTests RELIABILITY_TIMEOUT_MS=500 RELIABILITY_TIMEOUTS=50 RELIABILITY_SOAK_REQUESTS=20000
    bound timeout-reuse '.latency_max_ms <= .statement_timeout_ms + 500' "every timeout answered within timeout + 0.5 s"
    bound timeout-soak '.timeout_latency_max_ms <= .statement_timeout_ms + 500 and .max_idle_in_transaction_ms < 1000' \
        "soak: timeouts within timeout + 0.5 s, no session idle in transaction for 1 s"
}
lifecycle() {
    run lifecycle ReliabilityTests.LifecycleTests RELIABILITY_LIFECYCLE_CYCLES="${1:-100}"
    bound lifecycle-eof '.exit_max_ms <= 2000' "exit within 2 s of EOF"
    bound lifecycle-sigterm '.exit_max_ms <= 2000' "exit within 2 s of SIGTERM"
}

history() { run history HabitStoreTests.HistoryPropertyTests HABIT_PROPERTY_ROUNDS="${1:-10000}"; }
checkins() {
    run checkins HabitStoreTests.CheckinPropertyTests HABIT_CHECKIN_ROUNDS="${1:-1000}"
    run checkins-weekly HabitStoreTests.WeeklyTargetPropertyTests HABIT_CHECKIN_ROUNDS="${1:-1000}"
}
streaks() {
    local rounds=${1:-5000}
    run streaks HabitStoreTests.StreakPropertyTests HABIT_STREAK_ROUNDS="$rounds"
    run streaks-worker HabitWorkerTests.StreakCasesTests HABIT_STREAK_WORKER_ROUNDS="$(( rounds / 10 ))"
}
reminders() {
    run reminders HabitWorkerTests.ReminderTests/windowProperty HABIT_REMINDER_WINDOWS="${1:-5000}" HABIT_REMINDER_SEED="${RELIABILITY_SEED:-3303}"
}
amplification() { run amplification ReliabilityTests.AmplificationTests RELIABILITY_AMPLIFICATION_PUSH="${1:-20}"; }
failover() { run failover DeploymentTests.FailoverTests/acknowledgedWritesSurviveFailover HABIT_FAILOVER_ROUNDS="${1:-20}"; }
patroni() {
    run patroni DeploymentTests.PatroniFailoverTests HABIT_PATRONI_ROUNDS="${1:-20}" HABIT_PATRONI_SWITCHOVERS="${2:-5}"
    # scripts/patroni-tmp's ttl 10 and loop_wait 2: the leader key expires, a replica takes it
    # within a loop, and the workers reconnect within 2 s more.
    bound patroni-kill '.lost == 0 and .resumption_max_s <= 10 + 2 + 2' "under Patroni: 0 lost, kill → writes back within ttl + loop_wait + 2 s"
    bound patroni-switchover '.lost == 0' "switchover: 0 lost"
}
sync() { run sync HabitWorkerTests.SyncDevicesPropertyTests HABIT_SYNC_ROUNDS="${1:-100000}" HABIT_SYNC_SEED="${RELIABILITY_SEED:-182026}"; }
incremental() {
    run incremental HabitBatchTests.WeeklyCountsIncrementalTests/incrementalRunsEqualAFullRecompute \
        HABIT_INCREMENTAL_ROUNDS="${1:-2000}" HABIT_INCREMENTAL_SEED="${RELIABILITY_SEED:-202020}"
}

case "$command" in
    blackbox) blackbox "$@" ;;
    history) history "$@" ;;
    checkins) checkins "$@" ;;
    streaks) streaks "$@" ;;
    sync) sync "$@" ;;
    reminders) reminders "$@" ;;
    incremental) incremental "$@" ;;
    failover) failover "$@" ;;
    patroni) patroni "$@" ;;
    amplification) amplification "$@" ;;
    limits) limits ;;
    kills) kills "$@" ;;
    crash) crash "$@" ;;
    timeouts) timeouts ;;
    lifecycle) lifecycle "$@" ;;
    all)
        scripts/fuzz.sh 600 || failures=$((failures + 1))
        blackbox; limits; kills; crash; timeouts; lifecycle; history; checkins; streaks; sync; reminders; incremental; amplification; failover; patroni
        ;;
    *) echo "unknown command $command" >&2; exit 2 ;;
esac
echo "report: $REPORT"
[ "$failures" -eq 0 ]
