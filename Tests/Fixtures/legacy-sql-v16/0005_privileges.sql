-- 0005: the database is the wall, for every writer (PostgREST, psql, the worker, batch jobs).
--
--   1. Table privileges: authenticated and service_role get exactly the documented ones (no
--      TRUNCATE, TRIGGER or REFERENCES, nor MAINTAIN on PostgreSQL 17+, on any relation of
--      ours; nor from PUBLIC), and anon nothing at all. On Supabase every new table in public
--      gets ALL for the three roles from ALTER DEFAULT PRIVILEGES of postgres and supabase_admin;
--      the defaults are Supabase's, not ours to change, so each relation is set explicitly
--      here instead, and a migration adding a table must do the same.
--   2. habit_batch no longer reads tasks or lists (weekly counts never read them).
--   3. Functions: a fixed search_path on every function of ours, except the three that must
--      stay inlinable, whose bodies are schema-qualified instead (docs/schema.md, "search_path").
--      EXECUTE only to the roles that call them.
--   4. weekly_completion_counts: the week convention (monday or sunday) joins the key.
--
-- Every statement is safe to run again (REVOKE, GRANT, ALTER … SET, CREATE OR REPLACE, and
-- a guarded table change), and valid on a plain PostgreSQL where only 0001's roles exist.

-- 1. Table privileges ---------------------------------------------------------------------
-- Each relation of ours: everything revoked from anon, authenticated and service_role, then
-- exactly the documented privileges granted back (docs/schema.md, "Roles"), whatever default
-- privileges gave them when the relation was created.
DO $tables$
DECLARE
    ours text[] := ARRAY[
        -- relation,                     authenticated keeps,              service_role keeps
        ARRAY['public.profiles',          'SELECT, INSERT, UPDATE, DELETE', 'SELECT, INSERT, UPDATE, DELETE'],
        ARRAY['public.habit_templates',   'SELECT, INSERT, UPDATE, DELETE', 'SELECT, INSERT, UPDATE, DELETE'],
        ARRAY['public.habit_completions', 'SELECT, INSERT, UPDATE, DELETE', 'SELECT, INSERT, UPDATE, DELETE'],
        ARRAY['public.task_lists',        'SELECT, INSERT, UPDATE, DELETE', 'SELECT, INSERT, UPDATE, DELETE'],
        ARRAY['public.tasks',             'SELECT, INSERT, UPDATE, DELETE', 'SELECT, INSERT, UPDATE, DELETE'],
        ARRAY['public.weekly_completion_counts', 'SELECT',                  'SELECT'],
        ARRAY['habit.time_zones',         'SELECT',                         'SELECT'],
        ARRAY['habit.schema_migrations',  '',                               'SELECT'],
        ARRAY['admin.habits_overview',    '',                               ''],
        ARRAY['admin.user_activity',      '',                               ''],
        ARRAY['admin.daily_totals',       '',                               '']
    ];
    -- MAINTAIN (VACUUM, ANALYZE, REINDEX, LOCK TABLE … ACCESS EXCLUSIVE) exists from 17 on.
    maintain text := CASE WHEN current_setting('server_version_num')::integer >= 170000 THEN ', MAINTAIN' ELSE '' END;
    item text[];
BEGIN
    FOREACH item SLICE 1 IN ARRAY ours LOOP
        EXECUTE format('REVOKE ALL ON %s FROM anon, authenticated, service_role', item[1]::regclass);
        EXECUTE format('REVOKE TRUNCATE, TRIGGER, REFERENCES%s ON %s FROM PUBLIC', maintain, item[1]::regclass);
        IF item[2] <> '' THEN
            EXECUTE format('GRANT %s ON %s TO authenticated', item[2], item[1]::regclass);
        END IF;
        IF item[3] <> '' THEN
            EXECUTE format('GRANT %s ON %s TO service_role', item[3], item[1]::regclass);
        END IF;
    END LOOP;
END
$tables$;

-- Zone names were readable by PUBLIC (anon included); now by the roles that use them.
REVOKE ALL ON habit.time_zones FROM PUBLIC;
GRANT SELECT ON habit.time_zones TO habit_worker, habit_batch, habit_admin;

-- 2. habit_batch: weekly counts read profiles, habits and completions, never tasks. -------
REVOKE ALL ON public.task_lists, public.tasks FROM habit_batch;
ALTER POLICY task_lists_read_all ON public.task_lists TO habit_admin;
ALTER POLICY tasks_read_all ON public.tasks TO habit_admin;

-- 3. Functions ------------------------------------------------------------------------------
-- Inlined functions: no SET clause, because a SET clause stops PostgreSQL from inlining a SQL
-- function (docs/schema.md, "search_path", has the measurements: local_date and week_start run
-- once per row; weekly_counts inlined lets the planner use the user index for one user, 1 ms
-- against 800 ms). Instead every name in their bodies is schema-qualified, so the caller's
-- search_path cannot change their meaning: functions and types are written pg_catalog.… (or are
-- grammar for pg_catalog names: EXTRACT, COALESCE, LEAST, GREATEST, integer, bigint, numeric),
-- operators OPERATOR(pg_catalog.…), fully parenthesized since OPERATOR() has a single precedence.
-- UNION, DISTINCT, GROUP BY and ORDER BY use the types' default operator classes, which no
-- search_path changes. Same signatures and parameter names as before: CREATE OR REPLACE keeps
-- grants, comments and dependants; the results are unchanged.
CREATE OR REPLACE FUNCTION habit.local_date(instant timestamptz, zone text) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$ SELECT pg_catalog.timezone(zone, instant)::pg_catalog.date $fn$;

CREATE OR REPLACE FUNCTION habit.week_start(day date, start_isodow integer) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$
    SELECT day OPERATOR(pg_catalog.-)
           ((extract(isodow FROM day)::integer OPERATOR(pg_catalog.-) start_isodow OPERATOR(pg_catalog.+) 7)
            OPERATOR(pg_catalog.%) 7)
    $fn$;

CREATE OR REPLACE FUNCTION habit.weekly_counts(from_day date, to_day date, week_start_day text, only_user uuid DEFAULT NULL)
    RETURNS TABLE (user_id uuid, week_start date, completions bigint, days_with_completion bigint,
                   active_habit_days bigint, completion_rate numeric)
    LANGUAGE sql STABLE
    AS $fn$
    WITH bounds AS (
        SELECT habit.week_start(from_day, habit.week_start_isodow(week_start_day)) AS first_week,
               habit.week_start(to_day, habit.week_start_isodow(week_start_day)) AS last_week,
               habit.week_start_isodow(week_start_day) AS start_isodow
        WHERE from_day OPERATOR(pg_catalog.<=) to_day
    ),
    weeks AS (
        SELECT (first_week OPERATOR(pg_catalog.+) (7 OPERATOR(pg_catalog.*) n)) AS week_start
        FROM bounds, pg_catalog.generate_series(0, ((last_week OPERATOR(pg_catalog.-) first_week) OPERATOR(pg_catalog./) 7)) AS n
    ),
    users AS (
        SELECT t.user_id FROM public.habit_templates t WHERE only_user IS NULL OR t.user_id OPERATOR(pg_catalog.=) only_user
        UNION
        SELECT p.user_id FROM public.profiles p WHERE only_user IS NULL OR p.user_id OPERATOR(pg_catalog.=) only_user
    ),
    zones AS (
        SELECT u.user_id, coalesce(p.timezone, 'UTC') AS tz
        FROM users u LEFT JOIN public.profiles p ON p.user_id OPERATOR(pg_catalog.=) u.user_id
    ),
    completed AS (
        SELECT c.user_id, habit.week_start(c.completed_date, b.start_isodow) AS week_start,
               pg_catalog.count(*) AS completions, pg_catalog.count(DISTINCT c.completed_date) AS days_with_completion
        FROM public.habit_completions c, bounds b
        WHERE c.completed_date OPERATOR(pg_catalog.>=) b.first_week
          AND c.completed_date OPERATOR(pg_catalog.<) (b.last_week OPERATOR(pg_catalog.+) 7)
          AND (only_user IS NULL OR c.user_id OPERATOR(pg_catalog.=) only_user)
        GROUP BY 1, 2
    ),
    spans AS (
        SELECT t.user_id, habit.local_date(t.activated_at, z.tz) AS first_day,
               coalesce(habit.local_date(t.deactivated_at, z.tz), 'infinity'::pg_catalog.date) AS last_day
        FROM public.habit_templates t JOIN zones z ON z.user_id OPERATOR(pg_catalog.=) t.user_id
    ),
    -- A habit deactivated before its activation day (scheduled, then cancelled) is never active.
    live_spans AS (SELECT * FROM spans WHERE first_day OPERATOR(pg_catalog.<=) last_day),
    active AS (
        SELECT s.user_id, w.week_start,
               pg_catalog.sum(((least((w.week_start OPERATOR(pg_catalog.+) 6), s.last_day)
                                OPERATOR(pg_catalog.-) greatest(w.week_start, s.first_day)) OPERATOR(pg_catalog.+) 1)) AS active_habit_days
        FROM live_spans s JOIN weeks w
          ON s.first_day OPERATOR(pg_catalog.<=) (w.week_start OPERATOR(pg_catalog.+) 6)
         AND s.last_day OPERATOR(pg_catalog.>=) w.week_start
        GROUP BY 1, 2
    )
    SELECT z.user_id, w.week_start,
           coalesce(c.completions, 0), coalesce(c.days_with_completion, 0),
           coalesce(a.active_habit_days, 0)::bigint,
           CASE WHEN coalesce(a.active_habit_days, 0) OPERATOR(pg_catalog.=) 0 THEN NULL
                ELSE pg_catalog.round((coalesce(c.completions, 0)::numeric OPERATOR(pg_catalog./) a.active_habit_days), 4) END
    FROM zones z CROSS JOIN weeks w
    LEFT JOIN completed c ON c.user_id OPERATOR(pg_catalog.=) z.user_id AND c.week_start OPERATOR(pg_catalog.=) w.week_start
    LEFT JOIN active a ON a.user_id OPERATOR(pg_catalog.=) z.user_id AND a.week_start OPERATOR(pg_catalog.=) w.week_start
    ORDER BY z.user_id, w.week_start
    $fn$;

-- Everything else runs with a fixed search_path (bodies are schema-qualified as well).
ALTER FUNCTION habit.touch_updated_at() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION habit.user_time_zone(uuid, text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION habit.week_start_isodow(text) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION admin.inactive_users(integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION admin.user_week(uuid, date, text) SET search_path = pg_catalog, pg_temp;

-- auth.uid(): only the one 0001 created (its comment, and owned by a role we act as).
-- Supabase's own belongs to supabase_auth_admin and is left exactly as it is.
DO $auth$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_proc p
               WHERE p.oid = to_regprocedure('auth.uid()')
                 AND obj_description(p.oid, 'pg_proc') = 'The acting user: the "sub" of the request.jwt.claims setting (set per transaction). Supabase-compatible.'
                 AND pg_has_role(current_user, p.proowner, 'USAGE')) THEN
        ALTER FUNCTION auth.uid() SET search_path = pg_catalog, pg_temp;
    END IF;
END
$auth$;

-- EXECUTE: functions get it from PUBLIC by default; ours go only to the roles that call them
-- (the explicit grants of 0002 and 0003 stay). A trigger function needs no EXECUTE to fire.
REVOKE EXECUTE ON FUNCTION habit.touch_updated_at(), habit.user_time_zone(uuid, text),
    habit.local_date(timestamptz, text), habit.week_start(date, integer), habit.week_start_isodow(text),
    habit.weekly_counts(date, date, text, uuid), admin.inactive_users(integer), admin.user_week(uuid, date, text)
    FROM PUBLIC, anon;

-- 4. weekly_completion_counts: one row per user, week convention and week. ----------------
DO $weekly$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute
                   WHERE attrelid = 'public.weekly_completion_counts'::regclass
                     AND attname = 'week_starts_on' AND NOT attisdropped) THEN
        ALTER TABLE public.weekly_completion_counts ADD COLUMN week_starts_on text;
        -- Stored rows: the convention is their week_start's weekday. A row on another weekday
        -- was never written by `habit weekly-counts --store` (both conventions start on Monday
        -- or Sunday); it is dropped: stored counts are recomputed by the next run.
        DELETE FROM public.weekly_completion_counts WHERE extract(isodow FROM week_start) NOT IN (1, 7);
        UPDATE public.weekly_completion_counts
           SET week_starts_on = CASE extract(isodow FROM week_start) WHEN 1 THEN 'monday' ELSE 'sunday' END;
        ALTER TABLE public.weekly_completion_counts
            ALTER COLUMN week_starts_on SET NOT NULL,
            ADD CONSTRAINT weekly_completion_counts_week_starts_on_check
                CHECK (week_starts_on IN ('monday', 'sunday')),
            ADD CONSTRAINT weekly_completion_counts_week_start_check
                CHECK (extract(isodow FROM week_start) = CASE week_starts_on WHEN 'monday' THEN 1 ELSE 7 END),
            DROP CONSTRAINT weekly_completion_counts_pkey,
            ADD CONSTRAINT weekly_completion_counts_pkey PRIMARY KEY (user_id, week_starts_on, week_start);
    END IF;
END
$weekly$;
COMMENT ON TABLE public.weekly_completion_counts IS
    'Stored results of habit weekly-counts --store: one row per user, week convention and week. A run replaces the rows of its range, convention and users.';
COMMENT ON COLUMN public.weekly_completion_counts.week_starts_on IS
    'The week convention of the row: monday or sunday (the run''s --week-start); week_start is that weekday.';
COMMENT ON COLUMN public.weekly_completion_counts.week_start IS
    'First day of the week: a Monday when week_starts_on is monday, a Sunday when sunday.';
