#!/usr/bin/env bash
# The whole test suite against a real, throwaway PostgreSQL (README's test command).
# Installs what it needs with apt-get, starts its own server, runs `swift test`, cleans up.
#   scripts/test.sh [swift test arguments…]     e.g. scripts/test.sh --filter HabitStoreTests
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

scripts/pg-tmp ensure-packages --tests
eval "$(scripts/pg-tmp start)"
trap 'scripts/pg-tmp stop "$HABIT_PG_DIR"' EXIT

swift build --build-tests </dev/null
swift test --skip-build "$@" </dev/null

# With no arguments (the whole suite): the black-box method suites once more, every worker
# behind a pgbouncer 1.18 of its own in transaction mode with every setting at its default
# (docs/operations.md, pgbouncer): nothing may answer or log an internal error there.
if [ $# -eq 0 ]; then
    HABIT_TEST_WORKER_ROUTE=pgbouncer swift test --skip-build \
        --filter 'HabitWorkerTests\.(MethodTests|ErrorCodeTests|IsolationTests|TimeZoneTests|ConcurrencyTests|PaginationAndLimitsTests|CheckinMethodTests|OrderAndArchiveTests|ReminderTests|AreaTests)' </dev/null
fi
