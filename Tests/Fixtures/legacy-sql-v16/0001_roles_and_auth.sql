-- 0001: roles and auth.uid(), compatible with Supabase.
--
-- On Supabase the roles anon, authenticated, service_role and the function auth.uid()
-- already exist: they are used as they are and never replaced. On a plain PostgreSQL
-- they are created here with the same meaning. Roles are cluster-wide, so creation
-- tolerates a concurrent migrator of another database (duplicate_object).
--
-- Apply by hand with: psql -v ON_ERROR_STOP=1 --single-transaction -f sql/0001_roles_and_auth.sql
-- (`habit migrate` does the same and records it in habit.schema_migrations).

DO $roles$
DECLARE
    wanted text[][] := ARRAY[
        -- role,            attributes
        ARRAY['anon',          'NOLOGIN NOINHERIT'],
        ARRAY['authenticated', 'NOLOGIN NOINHERIT'],
        ARRAY['service_role',  'NOLOGIN NOINHERIT BYPASSRLS'],
        -- Batch jobs: read every user's rows, write only summary tables.
        ARRAY['habit_batch',   'LOGIN NOINHERIT'],
        -- People in psql: read-only access to the admin views and tables.
        ARRAY['habit_admin',   'NOLOGIN NOINHERIT'],
        -- The worker's login role (PostgREST's "authenticator" pattern): it owns no
        -- privileges of its own and acts only through SET LOCAL ROLE authenticated.
        ARRAY['habit_worker',  'LOGIN NOINHERIT']
    ];
    item text[];
BEGIN
    FOREACH item SLICE 1 IN ARRAY wanted LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = item[1]) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I %s', item[1], item[2]);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created meanwhile by a migrator of another database
            END;
        END IF;
    END LOOP;
END
$roles$;

GRANT authenticated TO habit_worker;

CREATE SCHEMA IF NOT EXISTS auth;

DO $auth$
BEGIN
    IF to_regprocedure('auth.uid()') IS NULL THEN
        -- Same definition as Supabase's: the "sub" claim of the request's JWT claims,
        -- set per transaction with set_config('request.jwt.claims', …, true).
        CREATE FUNCTION auth.uid() RETURNS uuid
            LANGUAGE sql STABLE
            AS $fn$
                SELECT coalesce(
                    nullif(current_setting('request.jwt.claim.sub', true), ''),
                    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
                )::uuid
            $fn$;
        COMMENT ON FUNCTION auth.uid() IS
            'The acting user: the "sub" of the request.jwt.claims setting (set per transaction). Supabase-compatible.';
        GRANT USAGE ON SCHEMA auth TO anon, authenticated, service_role, habit_batch, habit_admin;
        GRANT EXECUTE ON FUNCTION auth.uid() TO anon, authenticated, service_role;
    END IF;
END
$auth$;

-- The service's own schema: helper functions and bookkeeping, no user rows.
CREATE SCHEMA IF NOT EXISTS habit;
COMMENT ON SCHEMA habit IS 'Helpers and bookkeeping of the habit service (migrations table, functions).';
GRANT USAGE ON SCHEMA habit TO authenticated, service_role, habit_batch, habit_admin, habit_worker;

-- Written by `habit migrate`: one row per applied file, with the file's SHA-256 so an
-- edited migration is refused instead of silently diverging.
CREATE TABLE habit.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE habit.schema_migrations IS 'Applied migrations (sql/NNNN_name.sql), written by habit migrate.';
COMMENT ON COLUMN habit.schema_migrations.version IS 'The NNNN prefix of the file name.';
COMMENT ON COLUMN habit.schema_migrations.name IS 'The file name.';
COMMENT ON COLUMN habit.schema_migrations.checksum IS 'SHA-256 (hex) of the file as applied.';
COMMENT ON COLUMN habit.schema_migrations.applied_at IS 'When it was applied.';
GRANT SELECT ON habit.schema_migrations TO habit_worker, habit_batch, habit_admin, service_role;

-- Keeps updated_at true whoever writes (worker, psql, batch). An UPDATE that changes
-- nothing (a retried request) leaves updated_at alone.
CREATE FUNCTION habit.touch_updated_at() RETURNS trigger
    LANGUAGE plpgsql
    AS $fn$
    BEGIN
        IF NEW IS DISTINCT FROM OLD THEN
            NEW.updated_at := now();
        END IF;
        RETURN NEW;
    END
    $fn$;
COMMENT ON FUNCTION habit.touch_updated_at() IS 'BEFORE UPDATE trigger: sets updated_at to the transaction time when the row changes.';

