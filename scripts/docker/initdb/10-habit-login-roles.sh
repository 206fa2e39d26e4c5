#!/bin/bash
# Run once by the postgres image when it initialises an empty data volume
# (/docker-entrypoint-initdb.d): creates the service's login roles with the passwords from
# the environment. `habit migrate` (the baseline, sql/migrations/0016_baseline.sql) then keeps
# them as they are (sql/grants.sql grants them what they need); it creates only the roles that
# are missing.
#
#   HABIT_WORKER_PASSWORD   habit_worker, the role `habit serve` logs in as (required)
#   HABIT_BATCH_PASSWORD    habit_batch, for `habit weekly-counts` (optional)
#
# On an existing volume this script does not run: set or change passwords with
#   ALTER ROLE habit_worker PASSWORD '…';
set -euo pipefail
: "${HABIT_WORKER_PASSWORD:?set HABIT_WORKER_PASSWORD}"
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
     --set worker_password="$HABIT_WORKER_PASSWORD" --set batch_password="${HABIT_BATCH_PASSWORD:-}" <<'SQL'
CREATE ROLE habit_worker LOGIN NOINHERIT PASSWORD :'worker_password';
SELECT :'batch_password' <> '' AS has_batch_password \gset
\if :has_batch_password
CREATE ROLE habit_batch LOGIN NOINHERIT PASSWORD :'batch_password';
\endif
SQL
