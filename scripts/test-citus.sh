#!/usr/bin/env bash
# The worker's black-box suites (protocol, isolation, history, sync, accounts, limits,
# deadlines, logs) and the batch suites against a Citus cluster
# (issue 34): a coordinator and two workers from scripts/citus-tmp, every test database
# migrated on the coordinator and distributed by user_id (`habit db distribute`), and the
# worker started against the coordinator as habit_worker, exactly as on PostgreSQL
# (Tests/TestSupport/CitusCluster.swift).
#
#   scripts/test-citus.sh [swift test arguments…]   default: the suites listed below
#
# Citus is not packaged in Debian and is never built by this repository: without an installed
# Citus this says so, prints "skipped", and exits 0 (scripts/citus-tmp check exits 3).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

scripts/pg-tmp ensure-packages --tests
set +e
scripts/citus-tmp check
status=$?
set -e
if [ "$status" = 3 ]; then
    echo "test-citus: skipped: Citus is not installed for this PostgreSQL (docs/scaling.md, \"Citus\", says how to build it)"
    exit 0
fi
[ "$status" = 0 ] || exit "$status"

# Named as citus-tmp names its own, so that its stop deletes it (a plain mktemp -d stayed behind: ~400 MB a run).
citus_dir=$(mktemp -d "${TMPDIR:-/tmp}/habit-citus.XXXXXX")
eval "$(scripts/citus-tmp start "$citus_dir")"
trap 'scripts/citus-tmp stop "$HABIT_CITUS_DIR"' EXIT
export DATABASE_URL="$CITUS_URL" HABIT_TEST_CITUS=1

suites='HabitWorkerTests\.(MethodTests|ErrorCodeTests|IsolationTests|TimeZoneTests|ConcurrencyTests|PaginationAndLimitsTests|ProtocolExamplesTests|ProtocolTests|ReasonTests|DayStateTests|ScheduleTests|DueAndSkippedTests|StreakCasesTests|StatsMethodsTests|SyncPullTests|SyncPushTests|SyncPushBoundsTests|SyncPruneTests|SyncDevicesPropertyTests|ChangeNotificationTests|AccountTests|AccountDeleteTests|LoopImportMethodTests|RetrySafeCreatesTests|UserOrderTests|BidiControlTests|DateRangeTests|DeadlineTests|DocumentedLimitsTests|DocumentedDefaultsTests|HealthSocketTests|FramingAndLoggingTests|TraceableLogTests|OpenRPCTests|CheckinMethodTests|OrderAndArchiveTests|AreaTests|WidgetTests)|HabitStoreTests\.(IsolationTests|HistoryPropertyTests|StreakPropertyTests|SyncPullTests|DistributionTests|WeekCountsPropertyTests)|HabitBatchTests\.(WeeklyCountsTests|WeeklyCountsHistoryTests|WeeklyCountsIncrementalTests|WeeklyCountsStoreTests|WeeklyCountsTwoServerStoreTests)|DeploymentTests\.ScoreCheckpointsCommandTests'

swift build --build-tests </dev/null
if [ $# -eq 0 ]; then
    swift test --skip-build --filter "$suites" </dev/null
else
    swift test --skip-build "$@" </dev/null
fi
