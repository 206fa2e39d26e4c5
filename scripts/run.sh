#!/usr/bin/env bash
# README's run command: serve JSON-RPC on stdin/stdout with the embedded PostgreSQL (installed
# with apt-get when missing). Extra arguments go to `habit serve`, e.g.
# scripts/run.sh --log-level debug
#
# The data directory is ./.habit in the checkout; as root, when the postgres user cannot enter
# the checkout (a 0700 home, a clone inside `mktemp -d`), /var/lib/habit/<folder>-<hash>
# instead. The log says which ("embedded database ready", "directory"). The server keeps
# running after the worker exits; `.build/release/habit db stop`, from the checkout, stops it.
#
# The binary: .build/release/habit, built with `swift build -c release` only when it is missing
# or something it is built from (Sources/, sql/, Package.swift, Package.resolved) is newer;
# otherwise nothing is built and swift is not needed. HABIT_BINARY=/path/to/habit runs that
# binary instead and never builds (the tests run this script with the binary they built).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/pg-tmp ensure-packages
binary=${HABIT_BINARY:-}
if [ -z "$binary" ]; then
    binary=.build/release/habit
    if [ ! -x "$binary" ] || [ -n "$(find Sources sql Package.swift Package.resolved -newer "$binary" -print -quit 2>/dev/null)" ]; then
        command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
        swift build -c release --product habit >&2 </dev/null
        # swift build may find nothing to relink (a change to sql/ alone, or only mtimes): the
        # binary is up to date now, and should not send the next run here again.
        touch "$binary"
    fi
fi
export HABIT_MIGRATIONS_DIR="$PWD/sql"
exec "$binary" serve "$@"
