#!/bin/sh
# Entrypoint of the pgbouncer image (scripts/docker/Dockerfile, target pgbouncer): writes
# pgbouncer's configuration from the environment and runs pgbouncer in the foreground,
# logging to stderr.
#
#   HABIT_WORKER_PASSWORD     password of habit_worker (required; also set on the server
#                             by scripts/docker/initdb/10-habit-login-roles.sh)
#   HABIT_BATCH_PASSWORD      password of habit_batch (optional)
#   PGBOUNCER_SERVER_HOST     PostgreSQL host (default postgres)
#   PGBOUNCER_SERVER_PORT     PostgreSQL port (default 5432)
#   PGBOUNCER_DATABASE        database name, same on both sides (default habit)
#   PGBOUNCER_POOL_SIZE       server connections per (database, user) (default 20)
#   PGBOUNCER_MAX_CLIENT_CONN client connections (default 1000)
#   PGBOUNCER_LISTEN_ADDR     address to listen on (default 0.0.0.0; port 6432)
#   PGBOUNCER_CONFIG_DIR      where the generated files go (default /var/lib/habit-pgbouncer)
#
# Transaction pooling with pgbouncer 1.18: the worker must run with
# HABIT_PREPARED_STATEMENTS=off (docs/operations.md#pgbouncer).
set -eu
: "${HABIT_WORKER_PASSWORD:?set HABIT_WORKER_PASSWORD}"
conf=${PGBOUNCER_CONFIG_DIR:-/var/lib/habit-pgbouncer}
database=${PGBOUNCER_DATABASE:-habit}
umask 077

# Plain-text passwords: pgbouncer uses them for SCRAM with clients and with the server.
# (Passwords must not contain double quotes; docs/operations.md suggests hex.)
{
    printf '"habit_worker" "%s"\n' "$HABIT_WORKER_PASSWORD"
    if [ -n "${HABIT_BATCH_PASSWORD:-}" ]; then printf '"habit_batch" "%s"\n' "$HABIT_BATCH_PASSWORD"; fi
} >"$conf/userlist.txt"

cat >"$conf/pgbouncer.ini" <<EOF
[databases]
$database = host=${PGBOUNCER_SERVER_HOST:-postgres} port=${PGBOUNCER_SERVER_PORT:-5432} dbname=$database

[pgbouncer]
listen_addr = ${PGBOUNCER_LISTEN_ADDR:-0.0.0.0}
listen_port = 6432
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $conf/userlist.txt
; A server connection belongs to a client for one transaction only. The worker keeps no
; session state (SET LOCAL, set_config(..., true)) and, with prepared statements off, no
; named statements, so this is safe; pgbouncer resets nothing between clients.
pool_mode = transaction
default_pool_size = ${PGBOUNCER_POOL_SIZE:-20}
max_client_conn = ${PGBOUNCER_MAX_CLIENT_CONN:-1000}
server_reset_query_always = 0
ignore_startup_parameters = extra_float_digits
log_connections = 0
log_disconnections = 0
EOF

exec pgbouncer "$conf/pgbouncer.ini"
