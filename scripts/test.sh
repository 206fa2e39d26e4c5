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
