-- 0016: the baseline. The tables, columns, constraints, indexes, schemas, extensions, roles
-- and seed data that sql/0001 … sql/0016 built, written as one file (issue 29). Their history
-- is in git; Tests/Fixtures/legacy-sql-v16/ keeps them for the upgrade test.
--
-- Version 16, so that a database those files migrated is at the baseline already: its
-- habit.schema_migrations has rows 1 … 16 (16 named 0016_sharding_keys.sql), and `habit migrate`
-- takes it as it is (rows below the baseline are covered by it; row 16 written by the files it
-- replaces is accepted whatever its checksum). A fresh database gets this file as version 16.
-- A database with some of the rows 1 … 15 but not 16 predates the baseline and is refused:
-- migrate it with a release before issue 29 first.
--
-- Only what a versioned migration owns lives here: functions, views, triggers, policies and
-- grants are current-state files (sql/functions, sql/views, sql/triggers, sql/policies.sql,
-- sql/grants.sql), applied after the versioned migrations. Two exceptions, both because a
-- table needs them to exist: habit.valid_schedule (the CHECK of both schedule columns; a
-- change of it changes which rows are valid, which deserves a versioned migration anyway) and
-- auth.uid() (created only where missing: Supabase has its own).
--
-- Nothing here reads or moves data: a fresh database has none. The data changes of the old
-- files (0005's week convention, 0006's row counts, 0010's periods, 0011's streak ledger) ran
-- on every database that reached version 16 through them.

-- Roles ------------------------------------------------------------------------------------
-- On Supabase anon, authenticated and service_role already exist: they are used as they are
-- and never replaced. Roles are cluster-wide, so creation tolerates a concurrent migrator of
-- another database (duplicate_object).
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

-- Schemas and extensions -----------------------------------------------------------------
-- habit: the service's own schema, helper functions and bookkeeping, no user rows.
CREATE SCHEMA habit;
COMMENT ON SCHEMA habit IS 'Helpers and bookkeeping of the habit service (migrations table, functions).';

-- admin: answers to the questions an admin asks, for psql (sql/views/admin.sql).
CREATE SCHEMA admin;
COMMENT ON SCHEMA admin IS 'Views and functions for admins in psql (grant habit_admin to your login role).';

-- GiST on (uuid =, tstzrange &&) for habit_periods_no_overlap. Debian's postgresql-15 and
-- Supabase ship btree_gist; creating it needs CREATE on the database (the migrator has it).
-- In its own schema `extensions` (Supabase's convention), which no role of ours may use: its
-- ~200 functions stay out of public, where PUBLIC (anon) could execute them. The constraint
-- finds the operator class by type, not by search_path. Where btree_gist already exists (in
-- another schema), it is used as it is.
CREATE SCHEMA IF NOT EXISTS extensions;
CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA extensions;

-- auth.uid(), Supabase-compatible ------------------------------------------------------------
-- On Supabase auth.uid() exists and belongs to supabase_auth_admin: it is used as it is. On a
-- plain PostgreSQL it is created here with the same meaning, with a fixed search_path, and
-- only then are the auth schema and the function granted (Supabase's are not ours to change).
CREATE SCHEMA IF NOT EXISTS auth;

DO $auth$
BEGIN
    IF to_regprocedure('auth.uid()') IS NULL THEN
        -- Same definition as Supabase's: the "sub" claim of the request's JWT claims,
        -- set per transaction with set_config('request.jwt.claims', …, true).
        CREATE FUNCTION auth.uid() RETURNS uuid
            LANGUAGE sql STABLE
            SET search_path = pg_catalog, pg_temp
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

-- Bookkeeping ------------------------------------------------------------------------------
-- Written by `habit migrate`: one row per applied versioned migration, with the file's
-- SHA-256 so an edited migration is refused instead of silently diverging.
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

-- Schedules ----------------------------------------------------------------------------------
-- {"type":"daily"}, {"type":"weekdays","days":[ISO 1..7, non-empty, no duplicates]},
-- {"type":"every_n_days","n":1..365}, {"type":"times_per_week","times":1..7}; no other keys.
-- Here rather than in sql/functions: the CHECK constraints of habit_templates.schedule and
-- habit_periods.schedule call it, so it must exist before those tables, and changing it
-- changes which rows are valid (a versioned migration, with a look at the stored rows).
CREATE FUNCTION habit.valid_schedule(schedule jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT coalesce(jsonb_typeof(schedule) = 'object' AND CASE schedule ->> 'type'
        WHEN 'daily' THEN (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['type']
        WHEN 'weekdays' THEN
            (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['days', 'type']
            AND jsonb_typeof(schedule -> 'days') = 'array'
            AND jsonb_array_length(schedule -> 'days') BETWEEN 1 AND 7
            AND (SELECT bool_and(jsonb_typeof(d) = 'number' AND d::text ~ '^[1-7]$')
                        AND count(DISTINCT d) = count(*)
                 FROM jsonb_array_elements(schedule -> 'days') d)
        WHEN 'every_n_days' THEN
            (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['n', 'type']
            AND jsonb_typeof(schedule -> 'n') = 'number' AND (schedule ->> 'n') ~ '^[0-9]{1,3}$'
            AND (schedule ->> 'n')::integer BETWEEN 1 AND 365
        WHEN 'times_per_week' THEN
            (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['times', 'type']
            AND jsonb_typeof(schedule -> 'times') = 'number' AND (schedule ->> 'times') ~ '^[1-7]$'
        ELSE false END, false)
    $fn$;
COMMENT ON FUNCTION habit.valid_schedule(jsonb) IS
    'Whether schedule is {"type":"daily"}, {"type":"weekdays","days":[1..7,…]}, {"type":"every_n_days","n":1..365} or {"type":"times_per_week","times":1..7}, with no other keys.';

-- Time zones -------------------------------------------------------------------------------
-- PostgreSQL's IANA time-zone names, copied from pg_timezone_names so that a profile's zone
-- is checked by a foreign key (an index probe) rather than by reading the view, which scans
-- the zoneinfo directory on every call. After a tzdata upgrade that adds zones, refresh with:
--   INSERT INTO habit.time_zones SELECT name FROM pg_timezone_names ON CONFLICT DO NOTHING;
CREATE TABLE habit.time_zones (name text PRIMARY KEY);
COMMENT ON TABLE habit.time_zones IS 'IANA time-zone names PostgreSQL knows (from pg_timezone_names); profiles.timezone references it.';
COMMENT ON COLUMN habit.time_zones.name IS 'Zone name as AT TIME ZONE accepts it, e.g. America/Los_Angeles.';
INSERT INTO habit.time_zones (name) SELECT name FROM pg_catalog.pg_timezone_names ON CONFLICT DO NOTHING;

-- The Habbit app's tables -------------------------------------------------------------------
-- Every table of public has row-level security forced (sql/policies.sql); every synced table
-- has change_seq (the sync clock, sql/functions/sync.sql) and the index a pull reads.
CREATE TABLE public.profiles (
    user_id    uuid PRIMARY KEY,
    timezone   text NOT NULL DEFAULT 'UTC'
               CONSTRAINT profiles_timezone_fkey REFERENCES habit.time_zones (name),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- The user's week: times_per_week counts completions per week, and the week starts on
    -- the user's day. Default Monday (ISO).
    week_start text NOT NULL DEFAULT 'monday'
               CONSTRAINT profiles_week_start_check CHECK (week_start IN ('monday', 'sunday')),
    change_seq bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE public.profiles IS 'Per-user settings. A user without a row is in UTC.';
COMMENT ON COLUMN public.profiles.user_id IS 'The user (auth.uid(), the JWT "sub").';
COMMENT ON COLUMN public.profiles.timezone IS 'IANA time zone (habit.time_zones, from pg_timezone_names) in which "today" and "future" are computed for this user.';
COMMENT ON COLUMN public.profiles.created_at IS 'When the row was created.';
COMMENT ON COLUMN public.profiles.updated_at IS 'Last change, maintained by trigger profiles_touch_updated_at.';
COMMENT ON COLUMN public.profiles.week_start IS
    'First day of the user''s week: ''monday'' (default) or ''sunday''. A times_per_week schedule counts completions in these weeks; week.counts groups by it unless the request says otherwise.';
COMMENT ON COLUMN public.profiles.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.';
-- A pull's "the user's rows after position p" (and the page's order within one number).
CREATE INDEX profiles_user_change_seq_idx ON public.profiles (user_id, change_seq);

CREATE TABLE public.habit_templates (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id        uuid NOT NULL,
    name           text NOT NULL
                   CONSTRAINT habit_templates_name_check
                   CHECK (char_length(name) BETWEEN 1 AND 100 AND name !~ '^[[:space:]]' AND name !~ '[[:space:]]$'),
    icon           text
                   CONSTRAINT habit_templates_icon_check
                   CHECK (char_length(icon) <= 100 AND icon ~ '^[a-z0-9]+(\.[a-z0-9]+)*$'),
    color          text
                   CONSTRAINT habit_templates_color_check CHECK (color ~ '^#[0-9A-F]{6}$'),
    is_active      boolean NOT NULL DEFAULT true,
    activated_at   timestamptz NOT NULL DEFAULT now(),
    deactivated_at timestamptz,
    sort_order     integer,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    -- The schedule the habit has now (while active: the open period's), or gets when next
    -- activated (while inactive). Seed apps never write it; it defaults to daily.
    schedule       jsonb NOT NULL DEFAULT '{"type":"daily"}'
                   CONSTRAINT habit_templates_schedule_check CHECK (habit.valid_schedule(schedule)),
    change_seq     bigint NOT NULL DEFAULT 0,
    -- Completions, periods, skips and the streak ledger reference (id, user_id) so that none
    -- can ever point at another user's habit, whoever writes it.
    CONSTRAINT habit_templates_id_user_id_key UNIQUE (id, user_id),
    CONSTRAINT habit_templates_deactivated_check CHECK (is_active = (deactivated_at IS NULL))
);
COMMENT ON TABLE public.habit_templates IS 'A user''s habits. Deleting one deletes its completions (ON DELETE CASCADE).';
COMMENT ON COLUMN public.habit_templates.id IS 'Habit id.';
COMMENT ON COLUMN public.habit_templates.user_id IS 'Owner (auth.uid()). Every query filters on it; RLS enforces it.';
COMMENT ON COLUMN public.habit_templates.name IS 'Display name: trimmed, 1-100 characters.';
COMMENT ON COLUMN public.habit_templates.icon IS 'SF Symbol name such as figure.run (lowercase words joined by dots), or NULL.';
COMMENT ON COLUMN public.habit_templates.color IS 'Tint as #RRGGBB (uppercase hex), or NULL.';
COMMENT ON COLUMN public.habit_templates.is_active IS
    'True while the habit has an open period (habit_periods). Setting it false closes the open period at now(); true opens one.';
COMMENT ON COLUMN public.habit_templates.activated_at IS
    'Start of the habit''s first period (habit_periods).';
COMMENT ON COLUMN public.habit_templates.deactivated_at IS
    'End of the last closed period while inactive; NULL while active.';
COMMENT ON COLUMN public.habit_templates.sort_order IS 'Position in the daily list (ascending, NULLs last, then created_at).';
COMMENT ON COLUMN public.habit_templates.created_at IS 'When the row was created.';
COMMENT ON COLUMN public.habit_templates.updated_at IS 'Last change, maintained by trigger habit_templates_touch_updated_at.';
COMMENT ON COLUMN public.habit_templates.schedule IS
    'Current schedule (the open period''s while active; the next period''s while inactive). Changing it closes the open period and opens one (habit_templates_history trigger).';
COMMENT ON COLUMN public.habit_templates.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.';
-- Leads with user_id: serves every per-user read of habits as well as a pull.
CREATE INDEX habit_templates_user_change_seq_idx ON public.habit_templates (user_id, change_seq, id);

CREATE TABLE public.habit_completions (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id        uuid NOT NULL,
    template_id    uuid NOT NULL,
    completed_date date NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    change_seq     bigint NOT NULL DEFAULT 0,
    CONSTRAINT habit_completions_user_template_date_key UNIQUE (user_id, template_id, completed_date),
    CONSTRAINT habit_completions_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_completions IS 'One row per habit completed on a calendar date (at most one per user, habit and date).';
COMMENT ON COLUMN public.habit_completions.id IS 'Completion id.';
COMMENT ON COLUMN public.habit_completions.user_id IS 'Owner; must be the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_completions.template_id IS 'The completed habit (habit_templates.id).';
COMMENT ON COLUMN public.habit_completions.completed_date IS 'The calendar date completed, in the user''s time zone (a date, never shifted).';
COMMENT ON COLUMN public.habit_completions.created_at IS 'When the completion was recorded.';
COMMENT ON COLUMN public.habit_completions.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.';
-- Serves "completions of a user on a date" and date ranges (week counts, batch).
CREATE INDEX habit_completions_user_date_idx ON public.habit_completions (user_id, completed_date) INCLUDE (template_id);
-- A pull; the key columns order a page within one change number ('<uuid>/<YYYY-MM-DD>' like (uuid, date)).
CREATE INDEX habit_completions_user_change_seq_idx ON public.habit_completions (user_id, change_seq, template_id, completed_date);

-- When each habit was active, and on which schedule. Written only by the triggers of
-- habit_templates (SECURITY DEFINER), never by the users' roles. Its keys include user_id, the
-- distribution column of a sharded PostgreSQL (Citus): template_id already determines the user,
-- and period ids are generated, never a client's (docs/scaling.md, "Keys and constraints").
CREATE TABLE public.habit_periods (
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id     uuid NOT NULL,
    template_id uuid NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    schedule    jsonb NOT NULL DEFAULT '{"type":"daily"}'
                CONSTRAINT habit_periods_schedule_check CHECK (habit.valid_schedule(schedule)),
    created_at  timestamptz NOT NULL DEFAULT now(),
    change_seq  bigint NOT NULL DEFAULT 0,
    CONSTRAINT habit_periods_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE,
    CONSTRAINT habit_periods_order_check CHECK (ended_at IS NULL OR ended_at > started_at),
    CONSTRAINT habit_periods_pkey PRIMARY KEY (id, user_id),
    CONSTRAINT habit_periods_no_overlap
        EXCLUDE USING gist (user_id WITH =, template_id WITH =, tstzrange(started_at, ended_at, '[)') WITH &&)
);
COMMENT ON TABLE public.habit_periods IS
    'When each habit was active, [started_at, ended_at), with the schedule of that time. Written only by the triggers of habit_templates.';
COMMENT ON COLUMN public.habit_periods.id IS 'Period id.';
COMMENT ON COLUMN public.habit_periods.user_id IS 'Owner; the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_periods.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_periods.started_at IS 'Start (inclusive).';
COMMENT ON COLUMN public.habit_periods.ended_at IS 'End (exclusive); NULL for the open period.';
COMMENT ON COLUMN public.habit_periods.schedule IS 'The schedule during the period (habit.valid_schedule).';
COMMENT ON COLUMN public.habit_periods.created_at IS 'When the row was created.';
COMMENT ON COLUMN public.habit_periods.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.';
-- The hot path: a user's periods (habit.habit_days_at).
CREATE INDEX habit_periods_user_template_start_idx ON public.habit_periods (user_id, template_id, started_at);
-- At most one open period per habit.
CREATE UNIQUE INDEX habit_periods_one_open ON public.habit_periods (user_id, template_id) WHERE ended_at IS NULL;
CREATE INDEX habit_periods_user_change_seq_idx ON public.habit_periods (user_id, change_seq, id);

-- Excused days: a row = skipped, beside habit_completions (a row = done).
CREATE TABLE public.habit_skips (
    user_id      uuid NOT NULL,
    template_id  uuid NOT NULL,
    skipped_date date NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    change_seq   bigint NOT NULL DEFAULT 0,
    CONSTRAINT habit_skips_pkey PRIMARY KEY (user_id, template_id, skipped_date),
    CONSTRAINT habit_skips_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_skips IS
    'Excused days: one row per habit skipped on a calendar date (neither done nor missed). Never both skipped and completed.';
COMMENT ON COLUMN public.habit_skips.user_id IS 'Owner; must be the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_skips.template_id IS 'The skipped habit.';
COMMENT ON COLUMN public.habit_skips.skipped_date IS 'The calendar date skipped, in the user''s time zone.';
COMMENT ON COLUMN public.habit_skips.created_at IS 'When the skip was recorded.';
COMMENT ON COLUMN public.habit_skips.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.';
-- "Skips of a user on a date / in a range" (day.get, week.counts, batch).
CREATE INDEX habit_skips_user_date_idx ON public.habit_skips (user_id, skipped_date) INCLUDE (template_id);
CREATE INDEX habit_skips_user_change_seq_idx ON public.habit_skips (user_id, change_seq, template_id, skipped_date);

-- The streak ledger: per habit, one row per OPEN slot (kept or missed, in the habit's unit,
-- with final states) carrying prefix counts, so reads are index probes rather than a scan of
-- years of days. Written only by habit.rebuild_streak_slots (sql/functions/streaks.sql, which
-- says why a row per slot and not per run).
CREATE TABLE public.habit_streak_slots (
    user_id     uuid NOT NULL,
    template_id uuid NOT NULL,
    slot        date NOT NULL,
    kept_cum    integer NOT NULL,
    open_cum    integer NOT NULL,
    run_pos     integer NOT NULL,
    run_first   date,
    best_len    integer NOT NULL,
    best_first  date,
    best_last   date,
    CONSTRAINT habit_streak_slots_pkey PRIMARY KEY (user_id, template_id, slot),
    CONSTRAINT habit_streak_slots_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_streak_slots IS
    'Per habit, one row per kept or missed slot (day or user week; final states) with prefix counts: the ledger habit.habit_stats reads. Written only by habit.rebuild_streak_slots (sql/0011).';
COMMENT ON COLUMN public.habit_streak_slots.user_id IS 'Owner; the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_streak_slots.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_streak_slots.slot IS 'The day, or the first day of the user''s week (the habit''s unit).';
COMMENT ON COLUMN public.habit_streak_slots.kept_cum IS 'Kept slots of the habit up to and including this one.';
COMMENT ON COLUMN public.habit_streak_slots.open_cum IS 'Kept or missed slots of the habit up to and including this one.';
COMMENT ON COLUMN public.habit_streak_slots.run_pos IS 'Position of this slot in its run of kept slots (1 = first); 0 when missed.';
COMMENT ON COLUMN public.habit_streak_slots.run_first IS 'First slot of the run this kept slot is in; NULL when missed.';
COMMENT ON COLUMN public.habit_streak_slots.best_len IS 'Length of the longest run up to this slot (runs cut here).';
COMMENT ON COLUMN public.habit_streak_slots.best_first IS 'First day of that run (the earliest on ties).';
COMMENT ON COLUMN public.habit_streak_slots.best_last IS 'Last day of that run (for weeks: its last week''s last day).';

-- One row per habit: the per-habit lock of maintenance, the unit the ledger is in, its
-- horizon, and the completion counter (total_done at R = done_days − completions after R).
-- Its key stays template_id alone: it is the target of rebuild_streak_slots' ON CONFLICT.
CREATE TABLE public.habit_streak_state (
    template_id  uuid PRIMARY KEY,
    user_id      uuid NOT NULL,
    unit         text NOT NULL CHECK (unit IN ('days', 'weeks')),
    horizon      date NOT NULL,
    horizon_slot date NOT NULL,
    done_days    integer NOT NULL,
    last_done    date,
    last_ended   timestamptz,
    last_slot       date,
    last_run_pos    integer,
    last_run_first  date,
    prior_run_pos   integer,
    prior_run_first date,
    CONSTRAINT habit_streak_state_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_streak_state IS
    'Per habit: the lock of streak maintenance, the ledger''s unit and horizon (rows up to it), and the number of completions (sql/0011).';
COMMENT ON COLUMN public.habit_streak_state.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_streak_state.user_id IS 'Owner; the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_streak_state.unit IS 'The unit the ledger is in: days or weeks (habit.streak_unit of the schedule).';
COMMENT ON COLUMN public.habit_streak_state.horizon IS 'The ledger has rows up to this date: today or the latest completion or skip at the last maintenance.';
COMMENT ON COLUMN public.habit_streak_state.horizon_slot IS 'The slot of the horizon: the horizon itself, or the first day of its week (weeks).';
COMMENT ON COLUMN public.habit_streak_state.done_days IS 'Number of completions of the habit.';
COMMENT ON COLUMN public.habit_streak_state.last_done IS 'Its latest completion (NULL: none): total_done and last_done at R ≥ it without a probe.';
COMMENT ON COLUMN public.habit_streak_state.last_ended IS 'The latest end of its closed periods (NULL: none): a habit closed lately is answered by the scan.';
COMMENT ON COLUMN public.habit_streak_state.last_slot IS 'The slot of the ledger''s last row (NULL: no row).';
COMMENT ON COLUMN public.habit_streak_state.last_run_pos IS 'That row''s run_pos.';
COMMENT ON COLUMN public.habit_streak_state.last_run_first IS 'That row''s run_first.';
COMMENT ON COLUMN public.habit_streak_state.prior_run_pos IS 'The run_pos of the row before it (NULL: none).';
COMMENT ON COLUMN public.habit_streak_state.prior_run_first IS 'The run_first of the row before it.';
CREATE INDEX habit_streak_state_user_idx ON public.habit_streak_state (user_id);

-- Stored results of `habit weekly-counts --store`: one row per user, week convention and week.
CREATE TABLE public.weekly_completion_counts (
    user_id              uuid NOT NULL,
    week_start           date NOT NULL,
    completions          integer NOT NULL CHECK (completions >= 0),
    days_with_completion integer NOT NULL CHECK (days_with_completion BETWEEN 0 AND 7),
    active_habit_days    integer NOT NULL CHECK (active_habit_days >= 0),
    completion_rate      numeric(10, 4) CHECK (completion_rate >= 0),
    computed_at          timestamptz NOT NULL DEFAULT now(),
    week_starts_on       text NOT NULL
                         CONSTRAINT weekly_completion_counts_week_starts_on_check CHECK (week_starts_on IN ('monday', 'sunday')),
    due_habit_days       bigint NOT NULL DEFAULT 0
                         CONSTRAINT weekly_completion_counts_due_check CHECK (due_habit_days >= 0),
    skipped_habit_days   bigint NOT NULL DEFAULT 0
                         CONSTRAINT weekly_completion_counts_skipped_check CHECK (skipped_habit_days >= 0),
    CONSTRAINT weekly_completion_counts_week_start_check
        CHECK (extract(isodow FROM week_start) = CASE week_starts_on WHEN 'monday' THEN 1 ELSE 7 END),
    CONSTRAINT weekly_completion_counts_pkey PRIMARY KEY (user_id, week_starts_on, week_start)
);
COMMENT ON TABLE public.weekly_completion_counts IS
    'Stored results of habit weekly-counts --store: one row per user, week convention and week. A run replaces the rows of its range, convention and users.';
COMMENT ON COLUMN public.weekly_completion_counts.user_id IS 'The user.';
COMMENT ON COLUMN public.weekly_completion_counts.week_start IS
    'First day of the week: a Monday when week_starts_on is monday, a Sunday when sunday.';
COMMENT ON COLUMN public.weekly_completion_counts.completions IS 'Completion rows dated in the week.';
COMMENT ON COLUMN public.weekly_completion_counts.days_with_completion IS 'Days of the week with at least one completion.';
COMMENT ON COLUMN public.weekly_completion_counts.active_habit_days IS 'Sum over the week''s days of the habits on that day (habit.period_on_days, user''s time zone).';
COMMENT ON COLUMN public.weekly_completion_counts.completion_rate IS 'Completions on due days ÷ (due days − skipped due days); NULL when that is 0.';
COMMENT ON COLUMN public.weekly_completion_counts.computed_at IS 'When the row last changed.';
COMMENT ON COLUMN public.weekly_completion_counts.week_starts_on IS
    'The week convention of the row: monday or sunday (the run''s --week-start); week_start is that weekday.';
COMMENT ON COLUMN public.weekly_completion_counts.due_habit_days IS 'Of active_habit_days, those the schedule in force asked for (habit.due_days).';
COMMENT ON COLUMN public.weekly_completion_counts.skipped_habit_days IS 'Skipped habit-days on (habit_skips).';

-- The task-list apps' tables -------------------------------------------------------------------
-- Needs PostgreSQL 15 or later (ON DELETE SET NULL with a column list).
CREATE TABLE public.task_lists (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL,
    name       text NOT NULL
               CONSTRAINT task_lists_name_check
               CHECK (char_length(name) BETWEEN 1 AND 100 AND name !~ '^[[:space:]]' AND name !~ '[[:space:]]$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    change_seq bigint NOT NULL DEFAULT 0,
    -- Tasks reference (id, user_id) so that a task can never sit in another user's list,
    -- whoever writes it.
    CONSTRAINT task_lists_id_user_id_key UNIQUE (id, user_id)
);
COMMENT ON TABLE public.task_lists IS 'A user''s task lists. Deleting one keeps its tasks: their list_id becomes NULL (ON DELETE SET NULL).';
COMMENT ON COLUMN public.task_lists.id IS 'List id.';
COMMENT ON COLUMN public.task_lists.user_id IS 'Owner (auth.uid()). Every query filters on it; RLS enforces it.';
COMMENT ON COLUMN public.task_lists.name IS 'Display name: trimmed, 1-100 characters (not unique).';
COMMENT ON COLUMN public.task_lists.created_at IS 'When the row was created; lists are shown in creation order.';
COMMENT ON COLUMN public.task_lists.updated_at IS 'Last change, maintained by trigger task_lists_touch_updated_at.';
COMMENT ON COLUMN public.task_lists.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.';
CREATE INDEX task_lists_user_id_idx ON public.task_lists (user_id, created_at);
CREATE INDEX task_lists_user_change_seq_idx ON public.task_lists (user_id, change_seq, id);

CREATE TABLE public.tasks (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id        uuid NOT NULL,
    title          text NOT NULL
                   CONSTRAINT tasks_title_check
                   CHECK (char_length(title) BETWEEN 1 AND 500 AND title !~ '^[[:space:]]' AND title !~ '[[:space:]]$'),
    notes          text
                   CONSTRAINT tasks_notes_check CHECK (char_length(notes) <= 10000),
    list_id        uuid,
    state          text NOT NULL DEFAULT 'not_started'
                   CONSTRAINT tasks_state_check CHECK (state IN ('not_started', 'active', 'completed')),
    scheduled_date date,
    position       integer NOT NULL,
    completed_at   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    change_seq     bigint NOT NULL DEFAULT 0,
    -- completed_at is set exactly while the task is completed, whoever writes the row.
    CONSTRAINT tasks_completed_at_check CHECK ((state = 'completed') = (completed_at IS NOT NULL)),
    -- Composite key: the list must belong to the task's owner. Deleting the list clears only
    -- list_id (the column list keeps user_id), so the tasks stay, unlisted.
    CONSTRAINT tasks_list_fkey FOREIGN KEY (list_id, user_id)
        REFERENCES public.task_lists (id, user_id) ON DELETE SET NULL (list_id)
);
COMMENT ON TABLE public.tasks IS 'A user''s tasks: a state machine not_started -> active -> completed, optionally scheduled on a date and filed in a list.';
COMMENT ON COLUMN public.tasks.id IS 'Task id.';
COMMENT ON COLUMN public.tasks.user_id IS 'Owner (auth.uid()). Every query filters on it; RLS enforces it.';
COMMENT ON COLUMN public.tasks.title IS 'Title: trimmed, 1-500 characters.';
COMMENT ON COLUMN public.tasks.notes IS 'Free text, at most 10000 characters, or NULL.';
COMMENT ON COLUMN public.tasks.list_id IS 'The list (task_lists.id of the same user), or NULL for none. Set to NULL when the list is deleted.';
COMMENT ON COLUMN public.tasks.state IS 'not_started, active or completed.';
COMMENT ON COLUMN public.tasks.scheduled_date IS 'The calendar date the task is planned for, in the user''s time zone (a date, never shifted); NULL = inbox. Never changed by state changes, never rolled over.';
COMMENT ON COLUMN public.tasks.position IS 'Order among the tasks with the same scheduled_date (ascending; ties by created_at, id). Default: after the last one.';
COMMENT ON COLUMN public.tasks.completed_at IS 'When the task became completed; non-NULL exactly when state = completed (tasks_completed_at_check).';
COMMENT ON COLUMN public.tasks.created_at IS 'When the row was created.';
COMMENT ON COLUMN public.tasks.updated_at IS 'Last change, maintained by trigger tasks_touch_updated_at.';
COMMENT ON COLUMN public.tasks.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.';
-- Serves Today (scheduled_date = d), Upcoming (scheduled_date > d), the inbox
-- (scheduled_date IS NULL) and the default position (max(position) of a date).
CREATE INDEX tasks_user_date_position_idx ON public.tasks (user_id, scheduled_date, position);
-- Serves a list's tasks and the ON DELETE SET NULL of a deleted list.
CREATE INDEX tasks_list_id_idx ON public.tasks (list_id, scheduled_date, position) WHERE list_id IS NOT NULL;
CREATE INDEX tasks_user_change_seq_idx ON public.tasks (user_id, change_seq, id);

-- Row limits -----------------------------------------------------------------------------------
-- A user may hold at most max_rows rows in each limited table; each (user, table) has a
-- counter kept by the tables' statement triggers (sql/functions/rows.sql says why a counter).
CREATE TABLE habit.row_limits (
    table_name text PRIMARY KEY
               CONSTRAINT row_limits_table_name_check CHECK (table_name IN ('habit_templates', 'tasks', 'task_lists')),
    max_rows   integer NOT NULL CONSTRAINT row_limits_max_rows_check CHECK (max_rows >= 0)
);
COMMENT ON TABLE habit.row_limits IS 'Most rows one user may hold in each limited table of public; admins change max_rows with UPDATE.';
COMMENT ON COLUMN habit.row_limits.table_name IS 'A table of public (habit_templates, tasks or task_lists).';
COMMENT ON COLUMN habit.row_limits.max_rows IS 'Most rows per user; an insert past it fails with SQLSTATE HB001.';
INSERT INTO habit.row_limits (table_name, max_rows) VALUES
    ('habit_templates', 1000),
    ('tasks', 100000),
    ('task_lists', 1000);

CREATE TABLE habit.user_row_counts (
    user_id    uuid NOT NULL,
    table_name text NOT NULL REFERENCES habit.row_limits (table_name),
    row_count  integer NOT NULL CONSTRAINT user_row_counts_row_count_check CHECK (row_count >= 0),
    PRIMARY KEY (user_id, table_name)
);
COMMENT ON TABLE habit.user_row_counts IS 'Rows each user holds in each limited table, kept by the row-limit triggers (never written by hand).';
COMMENT ON COLUMN habit.user_row_counts.user_id IS 'The user.';
COMMENT ON COLUMN habit.user_row_counts.table_name IS 'The table (habit.row_limits.table_name).';
COMMENT ON COLUMN habit.user_row_counts.row_count IS 'The user''s rows in the table.';

-- Sync ---------------------------------------------------------------------------------------
-- Every change of a user's synced rows gets a number from that user's change clock; deletions
-- leave tombstones; pushes leave replay records (sql/functions/sync.sql has the rules).
CREATE TABLE habit.sync_clocks (
    user_id        uuid PRIMARY KEY,
    seq            bigint NOT NULL CONSTRAINT sync_clocks_seq_check CHECK (seq >= 0),
    xact           xid8,
    pruned_through bigint NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE habit.sync_clocks IS
    'Per-user change clock (sql/0012): written only by habit.next_change_seq, habit.prune_sync and habit.sync_reset.';
COMMENT ON COLUMN habit.sync_clocks.user_id IS 'The user.';
COMMENT ON COLUMN habit.sync_clocks.seq IS 'The last change number handed out; committed rows never carry a larger change_seq.';
COMMENT ON COLUMN habit.sync_clocks.xact IS 'The transaction that took seq: it reuses the number for all its writes of this user.';
COMMENT ON COLUMN habit.sync_clocks.pruned_through IS 'Cursors below this are expired: the largest pruned tombstone number, or seq at the last sync_reset.';
COMMENT ON COLUMN habit.sync_clocks.updated_at IS 'When seq or pruned_through last changed.';

CREATE TABLE habit.sync_tombstones (
    user_id    uuid NOT NULL,
    kind       text NOT NULL
               CONSTRAINT sync_tombstones_kind_check
               CHECK (kind IN ('profile', 'habits', 'periods', 'completions', 'skips', 'lists', 'tasks')),
    key        text NOT NULL,
    change_seq bigint NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sync_tombstones_pkey PRIMARY KEY (user_id, kind, key)
);
COMMENT ON TABLE habit.sync_tombstones IS
    'Deleted synced rows (sql/0012): one per key, written by the tables'' triggers, removed when the key is inserted again or by habit.prune_sync.';
COMMENT ON COLUMN habit.sync_tombstones.user_id IS 'The owner of the deleted row.';
COMMENT ON COLUMN habit.sync_tombstones.kind IS 'What was deleted: profile, habits, periods, completions, skips, lists or tasks.';
COMMENT ON COLUMN habit.sync_tombstones.key IS 'The row''s key: its id (lowercase), ''<template_id>/<YYYY-MM-DD>'' for completions and skips, '''' for the profile.';
COMMENT ON COLUMN habit.sync_tombstones.change_seq IS 'The change number of the deletion.';
COMMENT ON COLUMN habit.sync_tombstones.deleted_at IS 'When it was deleted (the transaction''s time); prune_sync drops it after the retention.';
-- A pull's "deletions after position p"; prune's "older than".
CREATE INDEX sync_tombstones_user_seq_idx ON habit.sync_tombstones (user_id, change_seq);
CREATE INDEX sync_tombstones_deleted_at_idx ON habit.sync_tombstones (deleted_at);

CREATE TABLE habit.sync_mutations (
    user_id     uuid NOT NULL,
    client_id   text NOT NULL CONSTRAINT sync_mutations_client_id_check CHECK (char_length(client_id) BETWEEN 1 AND 200),
    mutation_id text NOT NULL CONSTRAINT sync_mutations_mutation_id_check CHECK (char_length(mutation_id) BETWEEN 1 AND 200),
    outcome     jsonb,
    change_seq  bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sync_mutations_pkey PRIMARY KEY (user_id, client_id, mutation_id)
);
COMMENT ON TABLE habit.sync_mutations IS
    'sync.push''s replay records (sql/0012): each (client_id, mutation_id) of a user with its outcome, written in the transaction of its effect.';
COMMENT ON COLUMN habit.sync_mutations.user_id IS 'The user.';
COMMENT ON COLUMN habit.sync_mutations.client_id IS 'The pushing device''s id (1-200 characters).';
COMMENT ON COLUMN habit.sync_mutations.mutation_id IS 'The mutation''s id, unique per client (1-200 characters).';
COMMENT ON COLUMN habit.sync_mutations.outcome IS 'NULL while claimed; then {"result": …} or {"error": {"code", "message", "data"}}.';
COMMENT ON COLUMN habit.sync_mutations.change_seq IS 'The user''s change number after the mutation, when it changed something.';
COMMENT ON COLUMN habit.sync_mutations.created_at IS 'When it was claimed; prune_sync drops it after the retention.';
CREATE INDEX sync_mutations_created_at_idx ON habit.sync_mutations (created_at);

-- Incremental weekly counts -------------------------------------------------------------------
-- `habit weekly-counts --store --incremental` recomputes only the (user, week) pairs a write
-- may have changed, from a dirty set the tables' triggers keep (sql/functions/weekly_counts.sql).
CREATE TABLE habit.weekly_counts_state (
    week_starts_on text PRIMARY KEY CONSTRAINT weekly_counts_state_week_starts_on_check CHECK (week_starts_on IN ('monday', 'sunday')),
    covered        daterange NOT NULL DEFAULT 'empty',
    last_run_at    timestamptz
);
COMMENT ON TABLE habit.weekly_counts_state IS
    'Week conventions whose stored weekly counts are kept by habit weekly-counts --store --incremental, and when it last ran (sql/0015).';
COMMENT ON COLUMN habit.weekly_counts_state.week_starts_on IS 'The week convention (monday or sunday) of the stored rows.';
COMMENT ON COLUMN habit.weekly_counts_state.covered IS 'Days of the weeks whose stored rows the last incremental run kept; empty before the first.';
COMMENT ON COLUMN habit.weekly_counts_state.last_run_at IS 'now() of the last incremental run; NULL before the first one.';

-- days is a daterange; (,) for the whole user. Duplicates are fine (a run claims them all); no
-- primary key so that writers never conflict on it, and no foreign key to the state so that a
-- run holding its state row does not block writers.
CREATE TABLE habit.weekly_counts_dirty (
    week_starts_on text NOT NULL CONSTRAINT weekly_counts_dirty_week_starts_on_check CHECK (week_starts_on IN ('monday', 'sunday')),
    user_id        uuid NOT NULL,
    days           daterange NOT NULL CONSTRAINT weekly_counts_dirty_days_check CHECK (NOT isempty(days))
);
CREATE INDEX weekly_counts_dirty_convention_idx ON habit.weekly_counts_dirty (week_starts_on, user_id);
COMMENT ON TABLE habit.weekly_counts_dirty IS
    'Days of a user whose weekly counts may have changed since the last incremental run of the convention; written by triggers, claimed (deleted) by the run that recomputes them (sql/0015).';
COMMENT ON COLUMN habit.weekly_counts_dirty.week_starts_on IS 'The convention whose stored rows are stale.';
COMMENT ON COLUMN habit.weekly_counts_dirty.user_id IS 'The user.';
COMMENT ON COLUMN habit.weekly_counts_dirty.days IS 'Local dates whose weeks must be recomputed; (,) for all of them.';
