#!/usr/bin/env bash
# README's run command: build `habit` and serve JSON-RPC on stdin/stdout with the embedded
# PostgreSQL in ./.habit (installed with apt-get when missing). Extra arguments go to
# `habit serve`, e.g. scripts/run.sh --log-level debug
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
scripts/pg-tmp ensure-packages
swift build -c release --product habit >&2 </dev/null
export HABIT_MIGRATIONS_DIR="$PWD/sql"
exec .build/release/habit serve "$@"
