#!/usr/bin/env bash
# The worker through a Citus coordinator beside plain PostgreSQL, in the same run (issue 34,
# item 1): completions.set (today, alternating) and day.get at 1 and IN_FLIGHT requests in
# flight over USERS users. Recorded, no target: one machine (a coordinator and two workers on
# loopback sockets, sharing its cores) cannot show scale-out; it shows what a request costs
# through the coordinator. Not a test: figures go to docs/performance.md.
#
#   ROUNDS=3 SECONDS_PER_RUN=4 scripts/bench-citus.sh
#
# Plain: scripts/pg-tmp. Citus: scripts/citus-tmp (a Citus installed by hand; exit 3 without).
# Both get a database "bench" migrated from sql/ (on Citus: created on every node with the
# extension, the nodes registered, then `habit db distribute`) and loaded through the triggers
# with scripts/bench/setup-core.sql (USERS users × 5 daily habits × DAYS days, ~80 % done).
# Per round, in alternating order, each method at each concurrency on both; ratios Citus/plain.
#
# Settings (environment): ROUNDS (3), SECONDS_PER_RUN (4), POOL_SIZE (4), IN_FLIGHT (64),
# USERS (8), DAYS (365), SHARDS (32), SKIP_BUILD (0: build the release binaries).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh

ROUNDS=${ROUNDS:-3} RUN=${SECONDS_PER_RUN:-4} POOL=${POOL_SIZE:-4} IN_FLIGHT=${IN_FLIGHT:-64}
USERS=${USERS:-8} DAYS=${DAYS:-365} SHARDS=${SHARDS:-32}

set +e; scripts/citus-tmp check; status=$?; set -e
[ "$status" = 0 ] || { echo "bench-citus: needs an installed Citus (scripts/citus-tmp check: $status)" >&2; exit "$status"; }
[ "${SKIP_BUILD:-0}" = 1 ] || bench_build

CITUS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/habit-citus.XXXXXX") PLAIN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/habit-plain.XXXXXX")
cleanup() {
    scripts/citus-tmp stop "$CITUS_DIR" >/dev/null 2>&1 || true
    scripts/pg-tmp stop "$PLAIN_DIR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
eval "$(scripts/citus-tmp start "$CITUS_DIR")"
eval "$(scripts/pg-tmp start "$PLAIN_DIR")"
PLAIN_SOCKET=$PLAIN_DIR/socket COORD_SOCKET=$CITUS_DIR/coord/socket
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1 -U postgres)

"${PSQL[@]}" -h "$PLAIN_SOCKET" -d postgres -c "CREATE DATABASE bench"
for node in coord w1 w2; do
    "${PSQL[@]}" -h "$CITUS_DIR/$node/socket" -d postgres -c "CREATE DATABASE bench" 2>/dev/null
    "${PSQL[@]}" -h "$CITUS_DIR/$node/socket" -d bench -c "CREATE EXTENSION citus"
done
"${PSQL[@]}" -h "$COORD_SOCKET" -d bench -c "SELECT citus_set_coordinator_host('$COORD_SOCKET', 5432)" >/dev/null
for node in w1 w2; do "${PSQL[@]}" -h "$COORD_SOCKET" -d bench -c "SELECT citus_add_node('$CITUS_DIR/$node/socket', 5432)" >/dev/null; done

for socket in "$PLAIN_SOCKET" "$COORD_SOCKET"; do
    .build/release/habit migrate --database-url "host=$socket user=postgres dbname=bench" --migrations-dir sql >&2
done
.build/release/habit db distribute --database-url "host=$COORD_SOCKET user=postgres dbname=bench" --migrations-dir sql --shard-count "$SHARDS" >&2
for socket in "$PLAIN_SOCKET" "$COORD_SOCKET"; do
    "${PSQL[@]}" -h "$socket" -d bench -v users="$USERS" -v habits=5 -v days="$DAYS" -v deep_days=10 -v done_rate=0.8 -v skip_rate=0.02 \
        -v load=triggers -v rebuild=none -f scripts/bench/setup-core.sql >/dev/null
done
echo "bench-citus: $(nproc) cores, $(uname -r); PostgreSQL $("${PSQL[@]}" -h "$PLAIN_SOCKET" -d bench -c 'show server_version')," \
     "Citus $("${PSQL[@]}" -h "$COORD_SOCKET" -d bench -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'") (coordinator + 2 workers, $SHARDS shards per table);" \
     "fsync=$("${PSQL[@]}" -h "$PLAIN_SOCKET" -d bench -c 'show fsync'); $USERS users × 5 habits × $DAYS days; worker --pool-size $POOL; $ROUNDS rounds of $RUN s"
echo "completions on plain / Citus: $("${PSQL[@]}" -h "$PLAIN_SOCKET" -d bench -c 'SELECT count(*) FROM habit_completions') /" \
     "$("${PSQL[@]}" -h "$COORD_SOCKET" -d bench -c 'SELECT count(*) FROM habit_completions')"
TODAY=$("${PSQL[@]}" -h "$PLAIN_SOCKET" -d bench -c "SELECT (now() AT TIME ZONE 'Europe/Berlin')::date")

run() { # ENGINE METHOD IN_FLIGHT → "rate p50_ms errors"
    local socket=$PLAIN_SOCKET
    [ "$1" = citus ] && socket=$COORD_SOCKET
    local extra=()
    [ "$2" = completions.set ] && extra=(--alternate)
    WORKER_URL="host=$socket user=habit_worker dbname=bench" \
        habit_bench --users "$USERS" --habit-suffix=-1 "${extra[@]}" --in-flight "$3" --method "$2" --date "$TODAY"
}
declare -A RATIOS
printf '%-6s %-16s %9s %22s %22s %10s\n' round method in-flight "plain (p50 ms)" "citus (p50 ms)" citus/plain
for round in $(seq "$ROUNDS"); do
    for method in completions.set day.get; do
        for flight in 1 "$IN_FLIGHT"; do
            order="plain citus"
            [ $((round % 2)) = 0 ] && order="citus plain"
            for engine in $order; do
                read -r rate p50 errors <<<"$(run "$engine" "$method" "$flight")"
                [ "${errors:-0}" = 0 ] || echo "bench-citus: $engine $method at $flight had $errors errors" >&2
                eval "r_$engine=$rate p_$engine=$p50"
            done
            r=$(ratio "$r_citus" "$r_plain")
            RATIOS[$method@$flight]+="$r "
            printf '%-6s %-16s %9s %22s %22s %9s×\n' "$round" "$method" "$flight" "$r_plain ($p_plain)" "$r_citus ($p_citus)" "$r"
        done
    done
done
echo
for key in "${!RATIOS[@]}"; do
    # shellcheck disable=SC2086
    echo "median citus/plain, $key: $(median ${RATIOS[$key]})×"
done | sort
