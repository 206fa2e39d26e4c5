-- 0010: history (issue 16). Activity periods with schedules, skips, and the rules of
-- completing and skipping kept by the database for every writer.
--
--   public.habit_periods     when each habit was active, and on which schedule
--   public.habit_skips       excused days (a row = skipped), beside habit_completions (a row = done)
--   habit_templates.schedule the schedule in force now (or at the next activation)
--   habit.valid_schedule     the four schedule shapes (CHECK of both schedule columns)
--   habit.period_on_days     THE definition of "on": the local dates a period makes its habit on
--   habit.due_days           THE definition of "due": the due days of a range of on-days
--   habit.week_target_met_on the day a times_per_week target is met (the times-th completion)
--   habit.habit_days_at      per habit and day of one user: on (by period_on_days), due (by
--                            due_days), schedule, done, skipped
--   profiles.week_start      the user's week (times_per_week targets; week.counts' default)
--   habit.habit_days         the same with today from the user's zone
--   habit.set_schedule       change a habit's schedule (closes the open period, opens one)
--   HB003 future_date, HB004 habit_not_active, HB005 done_and_skipped, HB006 backfill_not_allowed
--
-- Periods are written only by triggers on habit_templates (SECURITY DEFINER), never by the
-- users' roles: writers that only know the seed's columns (is_active, through Supabase) keep
-- history, and the seed's columns and the periods cannot disagree. Like 0006, this relies on
-- the migrator (the functions' owner) bypassing row-level security: a superuser, or
-- Supabase's postgres, which has BYPASSRLS.

-- GiST on (uuid =, tstzrange &&) for the no-overlap constraint. Debian's postgresql-15 and
-- Supabase ship btree_gist; creating it needs CREATE on the database (the migrator has it).
-- In its own schema `extensions` (Supabase's convention), which no role of ours may use: its
-- ~200 functions stay out of public, where PUBLIC (anon) could execute them. The constraint
-- finds the operator class by type, not by search_path. Where btree_gist already exists (in
-- another schema), it is used as it is.
CREATE SCHEMA IF NOT EXISTS extensions;
REVOKE ALL ON SCHEMA extensions FROM PUBLIC;
CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA extensions;

-- 1. Schedules ------------------------------------------------------------------------------
-- {"type":"daily"}, {"type":"weekdays","days":[ISO 1..7, non-empty, no duplicates]},
-- {"type":"every_n_days","n":1..365}, {"type":"times_per_week","times":1..7}; no other keys.
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

-- The schedule the habit has now (while active: the open period's), or gets when next
-- activated (while inactive). Seed apps never write it; it defaults to daily.
ALTER TABLE public.habit_templates
    ADD COLUMN schedule jsonb NOT NULL DEFAULT '{"type":"daily"}'
        CONSTRAINT habit_templates_schedule_check CHECK (habit.valid_schedule(schedule));
COMMENT ON COLUMN public.habit_templates.schedule IS
    'Current schedule (the open period''s while active; the next period''s while inactive). Changing it closes the open period and opens one (habit_templates_history trigger).';
COMMENT ON COLUMN public.habit_templates.is_active IS
    'True while the habit has an open period (habit_periods). Setting it false closes the open period at now(); true opens one.';
COMMENT ON COLUMN public.habit_templates.activated_at IS
    'Start of the habit''s first period (habit_periods).';
COMMENT ON COLUMN public.habit_templates.deactivated_at IS
    'End of the last closed period while inactive; NULL while active.';

-- The user's week: times_per_week counts completions per week, and the week starts on the
-- user's day. Default Monday (ISO), what week.counts and the batch defaulted to before.
ALTER TABLE public.profiles
    ADD COLUMN week_start text NOT NULL DEFAULT 'monday'
        CONSTRAINT profiles_week_start_check CHECK (week_start IN ('monday', 'sunday'));
COMMENT ON COLUMN public.profiles.week_start IS
    'First day of the user''s week: ''monday'' (default) or ''sunday''. A times_per_week schedule counts completions in these weeks; week.counts groups by it unless the request says otherwise.';

-- The ISO weekday the user's week starts on: the profile's, else Monday (1).
CREATE FUNCTION habit.user_week_start_isodow(p_user uuid) RETURNS integer
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT coalesce((SELECT habit.week_start_isodow(p.week_start) FROM public.profiles p WHERE p.user_id = p_user), 1)
    $fn$;
COMMENT ON FUNCTION habit.user_week_start_isodow(uuid) IS
    'ISO weekday (1 = Monday, 7 = Sunday) on which the user''s week starts: profiles.week_start, else Monday.';

-- 2. Periods -------------------------------------------------------------------------------
-- The composite key the periods and skips reference (habit_templates has UNIQUE (id, user_id)).
CREATE TABLE public.habit_periods (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id     uuid NOT NULL,
    template_id uuid NOT NULL,
    started_at  timestamptz NOT NULL,
    ended_at    timestamptz,
    schedule    jsonb NOT NULL DEFAULT '{"type":"daily"}'
                CONSTRAINT habit_periods_schedule_check CHECK (habit.valid_schedule(schedule)),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT habit_periods_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE,
    CONSTRAINT habit_periods_order_check CHECK (ended_at IS NULL OR ended_at > started_at),
    CONSTRAINT habit_periods_no_overlap
        EXCLUDE USING gist (template_id WITH =, tstzrange(started_at, ended_at, '[)') WITH &&)
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

-- At most one open period per habit.
CREATE UNIQUE INDEX habit_periods_one_open ON public.habit_periods (template_id) WHERE ended_at IS NULL;
-- The hot path: a user's periods (habit.habit_days_at).
CREATE INDEX habit_periods_user_template_start_idx ON public.habit_periods (user_id, template_id, started_at);

ALTER TABLE public.habit_periods ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_periods FORCE ROW LEVEL SECURITY;
CREATE POLICY habit_periods_select_own ON public.habit_periods FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY habit_periods_read_all ON public.habit_periods FOR SELECT TO habit_batch, habit_admin USING (true);
REVOKE ALL ON public.habit_periods FROM PUBLIC, anon, authenticated, service_role;
GRANT SELECT ON public.habit_periods TO authenticated, service_role, habit_batch, habit_admin;

-- 3. Skips ---------------------------------------------------------------------------------
CREATE TABLE public.habit_skips (
    user_id      uuid NOT NULL,
    template_id  uuid NOT NULL,
    skipped_date date NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
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
-- "Skips of a user on a date / in a range" (day.get, week.counts, batch).
CREATE INDEX habit_skips_user_date_idx ON public.habit_skips (user_id, skipped_date) INCLUDE (template_id);

ALTER TABLE public.habit_skips ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_skips FORCE ROW LEVEL SECURITY;
CREATE POLICY habit_skips_select_own ON public.habit_skips FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY habit_skips_insert_own ON public.habit_skips FOR INSERT TO authenticated WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY habit_skips_update_own ON public.habit_skips FOR UPDATE TO authenticated USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY habit_skips_delete_own ON public.habit_skips FOR DELETE TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY habit_skips_read_all ON public.habit_skips FOR SELECT TO habit_batch, habit_admin USING (true);
REVOKE ALL ON public.habit_skips FROM PUBLIC, anon, authenticated, service_role;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.habit_skips TO authenticated, service_role;
GRANT SELECT ON public.habit_skips TO habit_batch, habit_admin;

-- 4. Backfill: every existing habit becomes one period [activated_at, deactivated_at), open
-- when active. An inactive habit deactivated at or before its activation (scheduled, then
-- cancelled) never was active: no period. (is_active = false without deactivated_at cannot
-- exist: habit_templates_deactivated_check.)
INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at)
SELECT t.user_id, t.id, t.activated_at, t.deactivated_at
FROM public.habit_templates t
WHERE t.is_active OR t.deactivated_at > t.activated_at;

-- 5. The seed's columns write the periods -----------------------------------------------------
-- AFTER INSERT: an active habit opens its first period at activated_at; an inactive one
-- (inserted deactivated) gets its closed period [activated_at, deactivated_at) when that is
-- not empty.
CREATE FUNCTION habit.open_first_period() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF NEW.is_active OR NEW.deactivated_at > NEW.activated_at THEN
            INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at, schedule)
            VALUES (NEW.user_id, NEW.id, NEW.activated_at, CASE WHEN NOT NEW.is_active THEN NEW.deactivated_at END, NEW.schedule);
        END IF;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.open_first_period() IS
    'AFTER INSERT on habit_templates: the habit''s first period [activated_at, deactivated_at), open when active.';

-- BEFORE UPDATE OF is_active, schedule: keeps periods and seed columns in step, at now()
-- (constant in a transaction).
--   is_active true → false  closes the open period at now(); deactivated_at := now(). A
--                           period that has not started yet (started_at ≥ now()) is removed
--                           instead: it never was active.
--   is_active false → true  opens a period at now() with the habit's schedule; deactivated_at
--                           := NULL. A period that ended at this very instant (closed earlier
--                           in the same transaction) with the same schedule is reopened
--                           instead, so no zero-length gap or period is made. activated_at
--                           keeps the start of the first period; when the habit has none
--                           (see above), it becomes now().
--   schedule changes, active: the open period ends at now() and one starts at now() with the
--                           new schedule; when the open period starts at now() or later, its
--                           schedule is replaced instead.
--   schedule changes, inactive: only the column (the next activation uses it).
-- Only these columns are watched: no period trigger writes habit_templates, so there is no
-- recursion.
CREATE FUNCTION habit.follow_activity() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        open_period public.habit_periods;
    BEGIN
        SELECT p.* INTO open_period FROM public.habit_periods p
        WHERE p.template_id = OLD.id AND p.ended_at IS NULL FOR UPDATE;

        IF OLD.is_active AND NOT NEW.is_active THEN
            IF FOUND THEN
                IF open_period.started_at >= now() THEN
                    DELETE FROM public.habit_periods p WHERE p.id = open_period.id;
                ELSE
                    UPDATE public.habit_periods p SET ended_at = now() WHERE p.id = open_period.id;
                END IF;
            END IF;
            NEW.deactivated_at := now();
        ELSIF NOT OLD.is_active AND NEW.is_active THEN
            IF NOT FOUND THEN
                UPDATE public.habit_periods p SET ended_at = NULL
                WHERE p.template_id = OLD.id AND p.ended_at = now() AND p.schedule = NEW.schedule;
                IF NOT FOUND THEN
                    INSERT INTO public.habit_periods (user_id, template_id, started_at, schedule)
                    VALUES (NEW.user_id, NEW.id, now(), NEW.schedule);
                END IF;
            END IF;
            IF NOT EXISTS (SELECT 1 FROM public.habit_periods p WHERE p.template_id = OLD.id AND p.started_at < now()) THEN
                NEW.activated_at := now();
            END IF;
            NEW.deactivated_at := NULL;
        ELSIF NEW.is_active AND NEW.schedule IS DISTINCT FROM OLD.schedule AND FOUND THEN
            IF open_period.started_at >= now() THEN
                UPDATE public.habit_periods p SET schedule = NEW.schedule WHERE p.id = open_period.id;
            ELSE
                UPDATE public.habit_periods p SET ended_at = now() WHERE p.id = open_period.id;
                INSERT INTO public.habit_periods (user_id, template_id, started_at, schedule)
                VALUES (NEW.user_id, NEW.id, now(), NEW.schedule);
            END IF;
        END IF;
        RETURN NEW;
    END
    $fn$;
COMMENT ON FUNCTION habit.follow_activity() IS
    'BEFORE UPDATE OF is_active, schedule on habit_templates: closes/opens periods at now() and keeps activated_at/deactivated_at true (sql/0010).';

REVOKE ALL ON FUNCTION habit.open_first_period(), habit.follow_activity() FROM PUBLIC;

CREATE TRIGGER habit_templates_first_period AFTER INSERT ON public.habit_templates
    FOR EACH ROW EXECUTE FUNCTION habit.open_first_period();
CREATE TRIGGER habit_templates_history BEFORE UPDATE OF is_active, schedule ON public.habit_templates
    FOR EACH ROW WHEN (OLD.is_active IS DISTINCT FROM NEW.is_active OR OLD.schedule IS DISTINCT FROM NEW.schedule)
    EXECUTE FUNCTION habit.follow_activity();

-- A schedule change, for the worker and psql: the caller's habit (row-level security
-- applies), its new schedule, and the habit as it is after. No row: not the caller's habit.
CREATE FUNCTION habit.set_schedule(target uuid, new_schedule jsonb) RETURNS SETOF public.habit_templates
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    UPDATE public.habit_templates t SET schedule = new_schedule WHERE t.id = target RETURNING t.*
    $fn$;
COMMENT ON FUNCTION habit.set_schedule(uuid, jsonb) IS
    'Sets a habit''s schedule: closes the open period at now() and opens one with the new schedule (or replaces the schedule of a period starting at now()). Returns the habit; no row when it is not the caller''s.';

-- 6. Which habits a day shows, and which are due ---------------------------------------------
-- For user p_user in zone Z (p_zone, else the profile's, else UTC), today p_today and each
-- local date D in [p_from, p_to]: one row per habit ON D, i.e. with a period p whose first
-- local day (local date of started_at in Z) is ≤ D and
--   D < p_today: p overlaps local day D (ended_at NULL or after D 00:00 in Z);
--   D ≥ p_today: p is open.
-- schedule: that of the latest-starting such period. due, per that schedule: daily → true;
-- weekdays → ISO weekday of D in days; every_n_days → (D − p's first local day) mod n = 0;
-- times_per_week → true (the week's target is counted by the callers).
--
-- "On" is defined once, per period, by habit.period_on_days: the local dates on which one
-- period makes its habit on, as a date range. A habit is on D when D is in the range of one
-- of its periods. habit.habit_days_at expands the ranges into days (a day or a week of one
-- user); the batch (habit.weekly_counts, section 8) takes the union of each habit's ranges and
-- counts its days per week without making a row per day. Both read the same ranges.
--
-- Why one range: "D 00:00 in Z" (D::timestamp AT TIME ZONE Z) increases strictly with D, so
-- {D : ended_at > D 00:00} is every D below some bound U, and {D : D ≥ first day} every D
-- from the first day on; with "D < today unless open", the days are [first, least(U, today))
-- for a closed period and [first, ∞) for an open one. U is found from L, the local date of
-- ended_at: D 00:00 of L is at or before ended_at, that of L − 1 is a day earlier, and that of
-- L + 1 can be before ended_at only when the zone turns its clocks back across midnight; so U
-- is L + 2, L + 1 or L. Inlinable (no SET clause, schema-qualified, IMMUTABLE like
-- habit.local_date): it runs inside its callers' plans.
CREATE FUNCTION habit.period_on_days(started_at timestamptz, ended_at timestamptz, zone text, today date) RETURNS daterange
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN ended_at IS NULL
                THEN pg_catalog.daterange(habit.local_date(started_at, zone), NULL, '[)')
                ELSE pg_catalog.daterange(habit.local_date(started_at, zone),
                         GREATEST(habit.local_date(started_at, zone), LEAST(today,
                             CASE WHEN pg_catalog.timezone(zone, (habit.local_date(ended_at, zone) OPERATOR(pg_catalog.+) 1)::timestamp) OPERATOR(pg_catalog.<) ended_at
                                  THEN habit.local_date(ended_at, zone) OPERATOR(pg_catalog.+) 2
                                  WHEN pg_catalog.timezone(zone, habit.local_date(ended_at, zone)::timestamp) OPERATOR(pg_catalog.<) ended_at
                                  THEN habit.local_date(ended_at, zone) OPERATOR(pg_catalog.+) 1
                                  ELSE habit.local_date(ended_at, zone) END)),
                         '[)') END
    $fn$;
COMMENT ON FUNCTION habit.period_on_days(timestamptz, timestamptz, text, date) IS
    'THE rule of "on", per period: the local dates (in zone, given today) on which a period [started_at, ended_at) makes its habit on; empty when none (sql/0010).';

-- THE definition of "due": on how many days of `days` (dates on which one period makes its
-- habit on, from that period's first local day first_day on; bounded) the schedule asks for
-- the habit. A day is due by `days` = [D, D + 1).
--   daily           every day
--   weekdays        the days whose ISO weekday is listed (whole weeks, then the remainder's
--                   weekdays: offset from lower(days)'s weekday below the remainder)
--   every_n_days    the days D with (D − first_day) a multiple of n
--   times_per_week  every day until the week's target is met: target_met_on is the date of the
--                   week's times-th completion (habit.week_target_met_on), NULL while it is
--                   not met; days after it are not due (days then lie in one week). The day of
--                   the completion that meets the target is still due, so completing never
--                   makes a day stop being due.
-- Inlinable (one expression, no SET clause, schema-qualified): the batch evaluates it per
-- week and habit, habit.habit_days_at per day. STABLE, not IMMUTABLE, only because
-- jsonb_build_object is (an IMMUTABLE function calling it would not be inlined).
CREATE FUNCTION habit.due_days(schedule jsonb, first_day date, days daterange, target_met_on date) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN pg_catalog.isempty(days) THEN 0
           ELSE CASE schedule OPERATOR(pg_catalog.->>) 'type'
               WHEN 'weekdays' THEN
                   ((pg_catalog.upper(days) OPERATOR(pg_catalog.-) pg_catalog.lower(days)) OPERATOR(pg_catalog./) 7)
                       OPERATOR(pg_catalog.*) pg_catalog.jsonb_array_length(schedule OPERATOR(pg_catalog.->) 'days')
                   OPERATOR(pg_catalog.+) pg_catalog.jsonb_array_length(pg_catalog.jsonb_path_query_array(
                       schedule OPERATOR(pg_catalog.->) 'days', '$[*] ? ((@ - $s + 7) % 7 < $r)'::pg_catalog.jsonpath,
                       pg_catalog.jsonb_build_object('s', EXTRACT(isodow FROM pg_catalog.lower(days)),
                                                     'r', (pg_catalog.upper(days) OPERATOR(pg_catalog.-) pg_catalog.lower(days)) OPERATOR(pg_catalog.%) 7)))
               WHEN 'every_n_days' THEN
                   ((pg_catalog.upper(days) OPERATOR(pg_catalog.-) 1 OPERATOR(pg_catalog.-) first_day)
                        OPERATOR(pg_catalog./) (schedule OPERATOR(pg_catalog.->>) 'n')::integer)
                   OPERATOR(pg_catalog.-) ((pg_catalog.lower(days) OPERATOR(pg_catalog.-) first_day OPERATOR(pg_catalog.+) (schedule OPERATOR(pg_catalog.->>) 'n')::integer OPERATOR(pg_catalog.-) 1)
                        OPERATOR(pg_catalog./) (schedule OPERATOR(pg_catalog.->>) 'n')::integer)
                   OPERATOR(pg_catalog.+) 1
               WHEN 'times_per_week' THEN
                   CASE WHEN target_met_on IS NULL THEN pg_catalog.upper(days) OPERATOR(pg_catalog.-) pg_catalog.lower(days)
                        ELSE GREATEST(0, LEAST(pg_catalog.upper(days), target_met_on OPERATOR(pg_catalog.+) 1) OPERATOR(pg_catalog.-) pg_catalog.lower(days)) END
               ELSE pg_catalog.upper(days) OPERATOR(pg_catalog.-) pg_catalog.lower(days) END END
    $fn$;
COMMENT ON FUNCTION habit.due_days(jsonb, date, daterange, date) IS
    'THE rule of "due": how many days of a bounded range of on-days of one period (first local day first_day) the schedule asks for; target_met_on for times_per_week (sql/0010).';

-- The date of the times-th completion of a habit in the week starting week_start: the day a
-- times_per_week target is met (NULL: not met). Completions are unique per day, so the k-th
-- row by date is the k-th completion.
CREATE FUNCTION habit.week_target_met_on(p_user uuid, p_template uuid, week_start date, times integer) RETURNS date
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT c.completed_date FROM public.habit_completions c
    WHERE c.user_id = p_user AND c.template_id = p_template
      AND c.completed_date >= week_start AND c.completed_date < week_start + 7
    ORDER BY c.completed_date OFFSET times - 1 LIMIT 1
    $fn$;
COMMENT ON FUNCTION habit.week_target_met_on(uuid, uuid, date, integer) IS
    'The date of the times-th completion of the habit in the week from week_start, or NULL (a times_per_week target not met).';

-- PL/pgSQL (plan kept per session) rather than an inlined SQL function: its callers (a day,
-- a week of one user, the triggers) ask for few rows, and the set-returning function is
-- planned once instead of inside every caller's plan.
CREATE FUNCTION habit.habit_days_at(p_user uuid, p_from date, p_to date, p_today date, p_zone text DEFAULT NULL)
    RETURNS TABLE (template_id uuid, day date, due boolean, schedule jsonb, done boolean, skipped boolean)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        tz text := habit.user_time_zone(p_user, p_zone);
    BEGIN
        RETURN QUERY
        SELECT o.template_id, o.day,
               habit.due_days(o.schedule, o.first_day, daterange(o.day, o.day + 1, '[)'), target.met_on) > 0,
               o.schedule,
               -- Scalar subqueries, one key lookup per row: as EXISTS the planner may hash
               -- every completion of the user instead.
               coalesce((SELECT true FROM public.habit_completions c
                         WHERE c.user_id = p_user AND c.template_id = o.template_id AND c.completed_date = o.day), false),
               coalesce((SELECT true FROM public.habit_skips k
                         WHERE k.user_id = p_user AND k.template_id = o.template_id AND k.skipped_date = o.day), false)
        FROM (
            -- The schedule in force on a day: the latest-starting period that makes it on.
            SELECT DISTINCT ON (s.template_id, s.day) s.template_id, s.day, s.schedule, lower(s.days) AS first_day
            FROM (
                SELECT p.template_id, d.day::date AS day, p.schedule, p.started_at, r.days
                FROM public.habit_periods p
                CROSS JOIN LATERAL habit.period_on_days(p.started_at, p.ended_at, tz, p_today) AS r(days)
                CROSS JOIN LATERAL generate_series(greatest(lower(r.days), p_from)::timestamp,
                                                   least(upper(r.days) - 1, p_to)::timestamp, interval '1 day') AS d(day)
                WHERE p.user_id = p_user
                  -- Implied by the range (D 00:00 ≥ p_from 00:00); lets the index skip old periods.
                  AND (p.ended_at IS NULL OR p.ended_at > (p_from::timestamp AT TIME ZONE tz))
                  AND NOT isempty(r.days)
            ) s
            ORDER BY s.template_id, s.day, s.started_at DESC
        ) o
        -- A times_per_week target, looked up only for such habits; a plain column for
        -- habit.due_days, which is then inlined (an argument calling a function is not).
        -- OFFSET 0 keeps the subquery whole, so the lookup runs after its WHERE (pulled up
        -- into the join, it ran for every habit).
        LEFT JOIN LATERAL (
            SELECT habit.week_target_met_on(p_user, o.template_id, habit.week_start(o.day, habit.user_week_start_isodow(p_user)),
                                            (o.schedule ->> 'times')::integer) AS met_on
            WHERE o.schedule ->> 'type' = 'times_per_week'
            OFFSET 0
        ) target ON true
        ORDER BY o.template_id, o.day;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_days_at(uuid, date, date, date, text) IS
    'Per habit of p_user and local date in [p_from, p_to] on which the habit is on (habit.period_on_days, given today p_today): whether it is due (habit.due_days), its schedule, whether it is done and skipped (sql/0010).';

CREATE FUNCTION habit.habit_days(p_user uuid, p_from date, p_to date, p_zone text DEFAULT NULL)
    RETURNS TABLE (template_id uuid, day date, due boolean, schedule jsonb, done boolean, skipped boolean)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT * FROM habit.habit_days_at(p_user, p_from, p_to,
                                      habit.local_date(now(), habit.user_time_zone(p_user, p_zone)), p_zone)
    $fn$;
COMMENT ON FUNCTION habit.habit_days(uuid, date, date, text) IS
    'habit.habit_days_at with today from the user''s zone at now().';

-- The users' roles now need the week helpers of 0003 (a times_per_week target is met in the
-- user's week); they compute nothing about other users.
GRANT EXECUTE ON FUNCTION habit.week_start(date, integer), habit.week_start_isodow(text) TO authenticated;

REVOKE ALL ON FUNCTION habit.valid_schedule(jsonb), habit.set_schedule(uuid, jsonb),
    habit.period_on_days(timestamptz, timestamptz, text, date), habit.user_week_start_isodow(uuid),
    habit.due_days(jsonb, date, daterange, date), habit.week_target_met_on(uuid, uuid, date, integer),
    habit.habit_days_at(uuid, date, date, date, text), habit.habit_days(uuid, date, date, text) FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.valid_schedule(jsonb), habit.period_on_days(timestamptz, timestamptz, text, date),
    habit.user_week_start_isodow(uuid), habit.due_days(jsonb, date, daterange, date),
    habit.week_target_met_on(uuid, uuid, date, integer),
    habit.habit_days_at(uuid, date, date, date, text),
    habit.habit_days(uuid, date, date, text) TO authenticated, service_role, habit_batch, habit_admin;
GRANT EXECUTE ON FUNCTION habit.set_schedule(uuid, jsonb) TO authenticated, service_role;

-- 7. The rules of completing and skipping, for every writer ----------------------------------
--   HB003 future_date       done after the user's today, or skipped more than 366 days after it
--                           (DETAIL: the user's today, YYYY-MM-DD)
--   HB004 habit_not_active  the habit is not on that day (habit.habit_days_at)
--   HB005 done_and_skipped  completing a skipped day, or skipping a completed one
--   HB006 backfill_not_allowed  habit.backfill = 'on' set by a role that is not habit_admin
-- The habit is the writer's: the composite foreign keys and row-level security. The zone is
-- the user's profile zone. Deleting a completion or a skip is not checked here.
--
-- Backfill: SET LOCAL habit.backfill = 'on' lifts the date and activity checks (HB003, HB004)
-- and nothing else, for the transaction, when the current role is habit_admin or a member of
-- it (a superuser is). Anyone else setting it is refused (HB006) rather than ignored, so a
-- backfill never half-happens.
CREATE FUNCTION habit.backfilling() RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF coalesce(current_setting('habit.backfill', true), '') NOT IN ('on', 'true') THEN
            RETURN false;
        END IF;
        IF NOT pg_has_role(current_user, 'habit_admin', 'MEMBER') THEN
            RAISE EXCEPTION 'habit.backfill is only for habit_admin; % may not set it', current_user
                USING ERRCODE = 'HB006';
        END IF;
        RETURN true;
    END
    $fn$;
COMMENT ON FUNCTION habit.backfilling() IS
    'True when habit.backfill is on and the current role is habit_admin (or a member); raises HB006 when it is on for another role.';

-- Checks that acting_user's habit is on day (and, for done, that day is not after today).
CREATE FUNCTION habit.check_day(acting_user uuid, habit uuid, day date, skipping boolean) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        tz text;
        today date;
    BEGIN
        IF habit.backfilling() THEN
            RETURN;
        END IF;
        -- Not the user's habit (or not visible to the writer): the composite foreign key and
        -- row-level security refuse it, as before this migration.
        IF NOT EXISTS (SELECT 1 FROM public.habit_templates t WHERE t.id = habit AND t.user_id = acting_user) THEN
            RETURN;
        END IF;
        tz := habit.user_time_zone(acting_user, NULL);
        today := habit.local_date(now(), tz);
        IF (NOT skipping AND day > today) OR (skipping AND day > today + 366) THEN
            RAISE EXCEPTION '% on % is after %', CASE WHEN skipping THEN 'skipping more than 366 days ahead' ELSE 'completing' END,
                day, CASE WHEN skipping THEN 'today + 366 days' ELSE 'today (' || today || ') in the user''s time zone' END
                USING ERRCODE = 'HB003', DETAIL = today::text;
        END IF;
        -- On that day: habit.period_on_days of one of its periods (the rule habit_days_at
        -- expands), for this one habit.
        IF NOT EXISTS (SELECT 1 FROM public.habit_periods p
                       WHERE p.user_id = acting_user AND p.template_id = habit
                         AND habit.period_on_days(p.started_at, p.ended_at, tz, today) @> day) THEN
            RAISE EXCEPTION 'habit % is not on %', habit, day USING ERRCODE = 'HB004';
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.check_day(uuid, uuid, date, boolean) IS
    'Raises HB003 (future) or HB004 (habit not on day) for a completion (skipping false) or a skip, unless backfilling.';

-- BEFORE INSERT OR UPDATE on habit_completions and habit_skips.
CREATE FUNCTION habit.check_completion() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        PERFORM habit.check_day(NEW.user_id, NEW.template_id, NEW.completed_date, false);
        -- The habit's row lock makes "not both" exact when a completion and a skip race (a
        -- row lock lives in the row: bulk inserts take no shared lock-table entries).
        PERFORM 1 FROM public.habit_templates t WHERE t.id = NEW.template_id AND t.user_id = NEW.user_id FOR NO KEY UPDATE;
        IF EXISTS (SELECT 1 FROM public.habit_skips s WHERE s.user_id = NEW.user_id AND s.template_id = NEW.template_id
                   AND s.skipped_date = NEW.completed_date) THEN
            RAISE EXCEPTION 'habit % is skipped on %; it cannot also be done', NEW.template_id, NEW.completed_date
                USING ERRCODE = 'HB005';
        END IF;
        RETURN NEW;
    END
    $fn$;
COMMENT ON FUNCTION habit.check_completion() IS 'BEFORE INSERT/UPDATE on habit_completions: HB003, HB004, HB005 (sql/0010).';

CREATE FUNCTION habit.check_skip() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        PERFORM habit.check_day(NEW.user_id, NEW.template_id, NEW.skipped_date, true);
        -- The habit's row lock makes "not both" exact when a completion and a skip race (a
        -- row lock lives in the row: bulk inserts take no shared lock-table entries).
        PERFORM 1 FROM public.habit_templates t WHERE t.id = NEW.template_id AND t.user_id = NEW.user_id FOR NO KEY UPDATE;
        IF EXISTS (SELECT 1 FROM public.habit_completions c WHERE c.user_id = NEW.user_id AND c.template_id = NEW.template_id
                   AND c.completed_date = NEW.skipped_date) THEN
            RAISE EXCEPTION 'habit % is done on %; it cannot also be skipped', NEW.template_id, NEW.skipped_date
                USING ERRCODE = 'HB005';
        END IF;
        RETURN NEW;
    END
    $fn$;
COMMENT ON FUNCTION habit.check_skip() IS 'BEFORE INSERT/UPDATE on habit_skips: HB003, HB004, HB005 (sql/0010).';

REVOKE ALL ON FUNCTION habit.backfilling(), habit.check_day(uuid, uuid, date, boolean),
    habit.check_completion(), habit.check_skip() FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.backfilling(), habit.check_day(uuid, uuid, date, boolean)
    TO authenticated, service_role, habit_admin;

CREATE TRIGGER habit_completions_rules BEFORE INSERT OR UPDATE OF user_id, template_id, completed_date
    ON public.habit_completions FOR EACH ROW EXECUTE FUNCTION habit.check_completion();
CREATE TRIGGER habit_skips_rules BEFORE INSERT OR UPDATE OF user_id, template_id, skipped_date
    ON public.habit_skips FOR EACH ROW EXECUTE FUNCTION habit.check_skip();

-- 8. Callers in SQL use the one definition ---------------------------------------------------
-- habit.weekly_counts (the batch), with the definitions of habit.habit_days_at, for every
-- user at once (today from each user's zone at now(), as habit.habit_days has it):
--   active_habit_days   habit-days on (habit.period_on_days)
--   due_habit_days      of those, the due ones (habit.due_days, the schedule in force that day)
--   skipped_habit_days  skipped habit-days on
--   completion_rate     done ÷ (due − skipped), over due days only: completions on due days
--                       divided by the due days not skipped (4 decimals; NULL when that is 0).
--                       A completion on a day the schedule does not ask for counts in
--                       `completions` but not in the rate, so the rate stays within [0, 1].
-- Set-based, no call per user and no row per habit-day: each period's on-days minus the days
-- a later-starting period of its habit is on (its schedule is in force there, as in
-- habit_days_at). Daily segments are summed per (user, week) from one array of ranges per
-- user, as before due; the others are cut into weeks and habit.due_days counts a piece's due
-- days at once. Only times_per_week pieces are counted per day, since their target is met in
-- the user's week (profiles.week_start), which need not be the run's. WeeklyCountsHistoryTests checks, for
-- random histories, that it equals the sum of the per-user habit.habit_days_at answers.
-- New columns, so the function is dropped and created again (the grants of 0003/0005 with
-- it); still without a SET clause and schema-qualified (sql/0005), so that it stays inlinable.
DROP FUNCTION habit.weekly_counts(date, date, text, uuid);
CREATE FUNCTION habit.weekly_counts(from_day date, to_day date, week_start_day text, only_user uuid DEFAULT NULL)
    RETURNS TABLE (user_id uuid, week_start date, completions bigint, days_with_completion bigint,
                   active_habit_days bigint, due_habit_days bigint, skipped_habit_days bigint,
                   completion_rate numeric)
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
        SELECT u.user_id, coalesce(p.timezone, 'UTC') AS tz,
               coalesce(habit.week_start_isodow(p.week_start), 1) AS week_isodow
        FROM users u LEFT JOIN public.profiles p ON p.user_id OPERATOR(pg_catalog.=) u.user_id
    ),
    -- Per period, its on-days without those of later-starting periods of its habit, within the
    -- run's weeks: disjoint ranges per habit, each with the schedule in force on it.
    segments AS (
        SELECT q.user_id, q.template_id, q.schedule, q.schedule OPERATOR(pg_catalog.->>) 'type' AS kind,
               q.first_day, q.week_isodow, g.days
        FROM (SELECT p.user_id, p.template_id, p.schedule, z.week_isodow, pg_catalog.lower(r.days) AS first_day,
                     (pg_catalog.datemultirange(r.days)
                      OPERATOR(pg_catalog.-) coalesce(pg_catalog.range_agg(r.days) OVER later, '{}'::pg_catalog.datemultirange))
                     OPERATOR(pg_catalog.*) pg_catalog.datemultirange(pg_catalog.daterange(b.first_week, (b.last_week OPERATOR(pg_catalog.+) 7), '[)')) AS days
              FROM public.habit_periods p
              JOIN zones z ON z.user_id OPERATOR(pg_catalog.=) p.user_id
              CROSS JOIN bounds b
              CROSS JOIN LATERAL (SELECT habit.period_on_days(p.started_at, p.ended_at, z.tz, habit.local_date(pg_catalog.now(), z.tz))) AS r(days)
              WHERE (only_user IS NULL OR p.user_id OPERATOR(pg_catalog.=) only_user)
                AND NOT pg_catalog.isempty(r.days)
              WINDOW later AS (PARTITION BY p.template_id ORDER BY p.started_at ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)) q
        CROSS JOIN LATERAL pg_catalog.unnest(q.days) AS g(days)
    ),
    -- Daily segments (most habits), gathered per user as an array of ranges: a week's
    -- on-days and due days are the same, each range's days inside the week, summed per
    -- (user, week) below without a row per segment and week.
    daily_spans AS (
        SELECT s.user_id, pg_catalog.array_agg(s.days) AS spans
        FROM segments s WHERE s.kind OPERATOR(pg_catalog.=) 'daily' GROUP BY s.user_id
    ),
    -- Other schedules: a row per segment and week, due days by habit.due_days (per day for
    -- times_per_week, whose target is met in the user's week).
    scheduled_days AS (
        SELECT x.user_id, x.week_start,
               pg_catalog.sum(pg_catalog.upper(x.days) OPERATOR(pg_catalog.-) pg_catalog.lower(x.days)) AS active,
               pg_catalog.sum(CASE WHEN x.kind OPERATOR(pg_catalog.<>) 'times_per_week'
                                   THEN habit.due_days(x.schedule, x.first_day, x.days, NULL)
                                   ELSE (SELECT pg_catalog.count(*) FROM pg_catalog.generate_series(pg_catalog.lower(x.days)::timestamp,
                                             (pg_catalog.upper(x.days) OPERATOR(pg_catalog.-) 1)::timestamp, '1 day'::interval) AS d(day)
                                         WHERE habit.due_days(x.schedule, x.first_day, pg_catalog.daterange(d.day::date, (d.day::date OPERATOR(pg_catalog.+) 1), '[)'),
                                                   habit.week_target_met_on(x.user_id, x.template_id, habit.week_start(d.day::date, x.week_isodow),
                                                                            (x.schedule OPERATOR(pg_catalog.->>) 'times')::integer)) OPERATOR(pg_catalog.>) 0) END) AS due
        FROM (SELECT s.user_id, s.template_id, s.schedule, s.kind, s.first_day, s.week_isodow, w.week_start,
                     (s.days OPERATOR(pg_catalog.*) pg_catalog.daterange(w.week_start, (w.week_start OPERATOR(pg_catalog.+) 7), '[)')) AS days
              FROM segments s JOIN weeks w
                ON s.days OPERATOR(pg_catalog.&&) pg_catalog.daterange(w.week_start, (w.week_start OPERATOR(pg_catalog.+) 7), '[)')
              WHERE s.kind OPERATOR(pg_catalog.<>) 'daily') x
        GROUP BY 1, 2
    ),
    -- Completion and skip rows, each with whether its day is due (the segment it lies in).
    day_states AS (
        SELECT e.user_id, e.day, e.done,
               s.template_id IS NOT NULL AS on_day,
               -- Off its habit's on-days (no segment) a row is never due.
               CASE WHEN s.kind IS NULL THEN false
                    WHEN s.kind OPERATOR(pg_catalog.=) 'daily' THEN true
                    ELSE habit.due_days(s.schedule, s.first_day, pg_catalog.daterange(e.day, (e.day OPERATOR(pg_catalog.+) 1), '[)'),
                             CASE WHEN s.kind OPERATOR(pg_catalog.=) 'times_per_week'
                                  THEN habit.week_target_met_on(e.user_id, e.template_id, habit.week_start(e.day, s.week_isodow),
                                                                (s.schedule OPERATOR(pg_catalog.->>) 'times')::integer) END)
                         OPERATOR(pg_catalog.>) 0 END AS due
        FROM (SELECT c.user_id, c.template_id, c.completed_date AS day, true AS done FROM public.habit_completions c
              UNION ALL
              SELECT k.user_id, k.template_id, k.skipped_date, false FROM public.habit_skips k) e
        CROSS JOIN bounds b
        LEFT JOIN segments s ON s.template_id OPERATOR(pg_catalog.=) e.template_id AND s.user_id OPERATOR(pg_catalog.=) e.user_id
                            AND s.days OPERATOR(pg_catalog.@>) e.day
        WHERE e.day OPERATOR(pg_catalog.>=) b.first_week
          AND e.day OPERATOR(pg_catalog.<) (b.last_week OPERATOR(pg_catalog.+) 7)
          AND (only_user IS NULL OR e.user_id OPERATOR(pg_catalog.=) only_user)
    ),
    states AS (
        SELECT d.user_id, habit.week_start(d.day, b.start_isodow) AS week_start,
               pg_catalog.count(*) FILTER (WHERE d.done) AS completions,
               pg_catalog.count(DISTINCT d.day) FILTER (WHERE d.done) AS days_with_completion,
               pg_catalog.count(*) FILTER (WHERE d.done AND d.due) AS done_due,
               pg_catalog.count(*) FILTER (WHERE NOT d.done AND d.on_day) AS skipped,
               pg_catalog.count(*) FILTER (WHERE NOT d.done AND d.due) AS skipped_due
        FROM day_states d, bounds b
        GROUP BY 1, 2
    )
    SELECT z.user_id, w.week_start,
           coalesce(c.completions, 0), coalesce(c.days_with_completion, 0),
           (daily.days OPERATOR(pg_catalog.+) coalesce(o.active, 0))::bigint, (daily.days OPERATOR(pg_catalog.+) coalesce(o.due, 0))::bigint,
           coalesce(c.skipped, 0),
           CASE WHEN (daily.days OPERATOR(pg_catalog.+) coalesce(o.due, 0) OPERATOR(pg_catalog.-) coalesce(c.skipped_due, 0)) OPERATOR(pg_catalog.<=) 0 THEN NULL
                ELSE pg_catalog.round((coalesce(c.done_due, 0)::numeric
                                       OPERATOR(pg_catalog./) (daily.days OPERATOR(pg_catalog.+) coalesce(o.due, 0) OPERATOR(pg_catalog.-) coalesce(c.skipped_due, 0))::numeric), 4) END
    FROM zones z CROSS JOIN weeks w
    LEFT JOIN states c ON c.user_id OPERATOR(pg_catalog.=) z.user_id AND c.week_start OPERATOR(pg_catalog.=) w.week_start
    LEFT JOIN daily_spans d ON d.user_id OPERATOR(pg_catalog.=) z.user_id
    LEFT JOIN scheduled_days o ON o.user_id OPERATOR(pg_catalog.=) z.user_id AND o.week_start OPERATOR(pg_catalog.=) w.week_start
    -- The daily habit-days of the week: the days of each daily range inside it.
    CROSS JOIN LATERAL (
        SELECT coalesce(pg_catalog.sum((pg_catalog.upper(x.days) OPERATOR(pg_catalog.-) pg_catalog.lower(x.days))), 0) AS days
        FROM pg_catalog.unnest(d.spans) AS r(days)
        CROSS JOIN LATERAL (SELECT (r.days OPERATOR(pg_catalog.*)
                                    pg_catalog.daterange(w.week_start, (w.week_start OPERATOR(pg_catalog.+) 7), '[)')) AS days) x
    ) daily
    ORDER BY z.user_id, w.week_start
    $fn$;
COMMENT ON FUNCTION habit.weekly_counts(date, date, text, uuid) IS
    'Per user and week in [from_day, to_day] (weeks from week_start_day): completions, days with a completion, habit-days on, due and skipped, and the completion rate done ÷ (due − skipped) over due days (sql/0010).';
REVOKE EXECUTE ON FUNCTION habit.weekly_counts(date, date, text, uuid) FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.weekly_counts(date, date, text, uuid) TO habit_batch, habit_admin, service_role;

-- The stored counts get the new columns (rows stored before keep 0 until the batch runs
-- again; their completion_rate is the old completions ÷ active_habit_days until then).
ALTER TABLE public.weekly_completion_counts
    ADD COLUMN due_habit_days bigint NOT NULL DEFAULT 0 CONSTRAINT weekly_completion_counts_due_check CHECK (due_habit_days >= 0),
    ADD COLUMN skipped_habit_days bigint NOT NULL DEFAULT 0 CONSTRAINT weekly_completion_counts_skipped_check CHECK (skipped_habit_days >= 0);
COMMENT ON COLUMN public.weekly_completion_counts.active_habit_days IS 'Sum over the week''s days of the habits on that day (habit.period_on_days, user''s time zone).';
COMMENT ON COLUMN public.weekly_completion_counts.due_habit_days IS 'Of active_habit_days, those the schedule in force asked for (habit.due_days).';
COMMENT ON COLUMN public.weekly_completion_counts.skipped_habit_days IS 'Skipped habit-days on (habit_skips).';
COMMENT ON COLUMN public.weekly_completion_counts.completion_rate IS 'Completions on due days ÷ (due days − skipped due days); NULL when that is 0.';

-- admin.user_week: active_habits = habits on that day by habit.habit_days. Same signature
-- and results' shape; the SET clause is given again (a replacement takes the new settings).
CREATE OR REPLACE FUNCTION admin.user_week(target_user uuid, of_day date DEFAULT NULL, week_start_day text DEFAULT 'monday')
    RETURNS TABLE (day date, weekday text, active_habits bigint, completed bigint, completed_habits text)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
        WITH zone AS (SELECT habit.user_time_zone(target_user, NULL) AS tz),
        first AS (
            SELECT habit.week_start(coalesce(of_day, habit.local_date(now(), zone.tz)),
                                    habit.week_start_isodow(week_start_day)) AS first_day
            FROM zone
        ),
        days AS (SELECT first.first_day + n AS day FROM first, generate_series(0, 6) AS n),
        on_days AS (SELECT h.template_id, h.day FROM first, habit.habit_days(target_user, first.first_day, first.first_day + 6) h)
        SELECT d.day, to_char(d.day, 'Dy'),
               (SELECT count(*) FROM on_days o WHERE o.day = d.day),
               (SELECT count(*) FROM public.habit_completions c WHERE c.user_id = target_user AND c.completed_date = d.day),
               (SELECT string_agg(t.name, ', ' ORDER BY t.sort_order NULLS LAST, t.name)
                FROM public.habit_completions c JOIN public.habit_templates t ON t.id = c.template_id AND t.user_id = c.user_id
                WHERE c.user_id = target_user AND c.completed_date = d.day)
        FROM days d ORDER BY d.day
    $fn$;

-- habit.is_on_day (0007) described the old rule (active now, activated on or before the day);
-- nothing of ours calls it any more. Kept, since dropping it could break an admin's saved
-- query, but its comment says so.
COMMENT ON FUNCTION habit.is_on_day(boolean, timestamptz, date, text) IS
    'Superseded by habit.habit_days_at (sql/0010): the pre-history rule, kept for old queries; the service no longer uses it.';

-- 9. Creating with a schedule; reading history -----------------------------------------------
-- habit.create_habit with a schedule: the 0009 function (which 0009 fixes) plus a trailing
-- new_schedule (NULL: daily). The same retry rule, with the schedule among the fields that
-- must be equal: a retry with the same id and the same fields — schedule included, compared
-- as jsonb (key order does not matter; the order of weekdays does, and the worker sends them
-- sorted) — returns the row as it is now; anything else is HB002 (id_conflict). The INSERT's
-- AFTER INSERT trigger (habit.open_first_period) opens the first period with NEW.schedule. A
-- bad schedule is refused by habit_templates_schedule_check (23514), as for any writer.
-- The 0009 overload becomes a call of this one with a daily schedule (below), so the retry
-- rule has one body.
CREATE FUNCTION habit.create_habit(acting_user uuid, new_id uuid, new_name text, new_icon text, new_color text,
                                   new_activated_at timestamptz, new_sort_order integer, new_schedule jsonb)
    RETURNS public.habit_templates
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        result public.habit_templates;
        wanted jsonb := coalesce(new_schedule, '{"type":"daily"}');
    BEGIN
        INSERT INTO public.habit_templates AS h (id, user_id, name, icon, color, activated_at, sort_order, schedule)
        VALUES (coalesce(new_id, gen_random_uuid()), acting_user, new_name, new_icon, new_color,
                coalesce(new_activated_at, now()),
                coalesce(new_sort_order, habit.next_habit_sort_order(acting_user)), wanted)
        ON CONFLICT DO NOTHING
        RETURNING h.* INTO result;
        IF FOUND THEN
            RETURN result;
        END IF;
        SELECT h.* INTO result FROM public.habit_templates h WHERE h.id = new_id AND h.user_id = acting_user;
        IF FOUND AND result.name = new_name
               AND result.icon IS NOT DISTINCT FROM new_icon
               AND result.color IS NOT DISTINCT FROM new_color
               AND result.schedule = wanted
               AND (new_activated_at IS NULL OR result.activated_at = new_activated_at)
               AND (new_sort_order IS NULL OR result.sort_order IS NOT DISTINCT FROM new_sort_order) THEN
            RETURN result;
        END IF;
        RAISE EXCEPTION 'id_conflict: the id is taken'
            USING ERRCODE = 'HB002', TABLE = 'habit_templates', SCHEMA = 'public';
    END
    $fn$;
COMMENT ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb) IS
    'Creates a habit of acting_user with a schedule (NULL: daily; new_id NULL: a generated id), or returns the caller''s habit with new_id when its fields, schedule included, equal the given ones; else SQLSTATE HB002 (sql/0010).';
REVOKE EXECUTE ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb) FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb)
    TO authenticated, service_role;

-- 0009's overload, for callers that know no schedules: a daily habit, by the one body above
-- (a retry of a habit whose schedule was changed since is HB002, like one whose name was).
-- CREATE OR REPLACE keeps its grants.
CREATE OR REPLACE FUNCTION habit.create_habit(acting_user uuid, new_id uuid, new_name text, new_icon text, new_color text,
                                              new_activated_at timestamptz, new_sort_order integer)
    RETURNS public.habit_templates
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT habit.create_habit(acting_user, new_id, new_name, new_icon, new_color, new_activated_at, new_sort_order, NULL)
    $fn$;
COMMENT ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer) IS
    'habit.create_habit with a daily schedule (sql/0009; since sql/0010 a call of the schedule overload).';

-- Reading a habit's history needs nothing new: public.habit_periods is readable by its owner
-- under row-level security (habit_periods_select_own), ordered by (user_id, template_id,
-- started_at) through habit_periods_user_template_start_idx. habits.history reads it joined
-- to the habit, so an unknown id (or another user's) is told apart from a habit without
-- periods.

-- 10. Day states: completions.set with state, skips.set_range --------------------------------
-- The worker's writers of a day's state, one statement each. Both are plpgsql SECURITY
-- INVOKER: row-level security and the tables' triggers (section 7) apply as to any writer,
-- and the triggers stay the one implementation of HB003/HB004/HB005 for other writers. These
-- functions check the same rules first with the zone of the request (p_zone, else the
-- profile's), so the worker's refusals name the today it used; a trigger can still refuse
-- with the profile's today (HB003's DETAIL says which).
--
-- Both lock the habit rows they write (FOR NO KEY UPDATE, as the triggers do), then read:
-- plpgsql takes a new snapshot per statement, so a write that waited for the lock sees the
-- write it waited for. Two writers of one day therefore serialize, and the later replaces
-- the earlier (set_day_state) or leaves its completion alone (set_skips): never both a
-- completion and a skip, and no HB005 between these functions.

-- Sets one habit's state on p_day: 'done' (a completion), 'skipped' (a skip) or 'none'
-- (neither), removing the other state in the same transaction. Idempotent. Returns one row
-- (today in the zone used, whether anything changed), or no row when p_template is not
-- p_user's habit (or not visible under row-level security). Refuses, unless backfilling:
--   HB003 (DETAIL today) done after today; skipped after today + 366; none after today + 366,
--         or after today when p_clear_ahead is false (completions.set's `completed: false`,
--         whose rule has always been "not after today");
--   HB004 done or skipped on a day the habit is not on (habit.period_on_days with p_zone).
--         'none' is allowed on any day (removing history of an inactive habit stays allowed).
CREATE FUNCTION habit.set_day_state(p_user uuid, p_template uuid, p_day date, p_state text,
                                    p_zone text DEFAULT NULL, p_clear_ahead boolean DEFAULT true)
    RETURNS TABLE (today date, changed boolean)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_today date;
        v_horizon date;
        v_changed bigint := 0;
        v_count bigint;
    BEGIN
        IF p_state IS NULL OR p_state NOT IN ('done', 'skipped', 'none') THEN
            RAISE EXCEPTION 'state must be done, skipped or none, not %', coalesce(p_state, 'NULL')
                USING ERRCODE = 'data_exception';
        END IF;
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_today := habit.local_date(now(), habit.user_time_zone(p_user, p_zone));
        IF NOT habit.backfilling() THEN
            v_horizon := v_today + CASE WHEN p_state = 'skipped' OR (p_state = 'none' AND p_clear_ahead) THEN 366 ELSE 0 END;
            IF p_day > v_horizon THEN
                RAISE EXCEPTION '% on % is after %', p_state, p_day,
                    CASE WHEN p_state = 'done' OR NOT p_clear_ahead THEN 'today (' || v_today || ')'
                         ELSE 'today (' || v_today || ') + 366 days' END
                    USING ERRCODE = 'HB003', DETAIL = v_today::text;
            END IF;
            -- On that day: habit.period_on_days of one of this habit's periods (the rule
            -- habit_days_at expands), in the request's zone.
            IF p_state <> 'none' AND NOT EXISTS (
                    SELECT 1 FROM public.habit_periods p
                    WHERE p.user_id = p_user AND p.template_id = p_template
                      AND habit.period_on_days(p.started_at, p.ended_at, habit.user_time_zone(p_user, p_zone), v_today) @> p_day) THEN
                RAISE EXCEPTION 'habit % is not on %', p_template, p_day USING ERRCODE = 'HB004';
            END IF;
        END IF;

        IF p_state <> 'done' THEN
            DELETE FROM public.habit_completions c
            WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            v_changed := v_changed + v_count;
        END IF;
        IF p_state <> 'skipped' THEN
            DELETE FROM public.habit_skips s
            WHERE s.user_id = p_user AND s.template_id = p_template AND s.skipped_date = p_day;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            v_changed := v_changed + v_count;
        END IF;
        IF p_state = 'done' THEN
            INSERT INTO public.habit_completions (user_id, template_id, completed_date)
            SELECT p_user, p_template, p_day
            WHERE NOT EXISTS (SELECT 1 FROM public.habit_completions c
                              WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day)
            ON CONFLICT (user_id, template_id, completed_date) DO NOTHING;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            v_changed := v_changed + v_count;
        ELSIF p_state = 'skipped' THEN
            INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
            SELECT p_user, p_template, p_day
            WHERE NOT EXISTS (SELECT 1 FROM public.habit_skips s
                              WHERE s.user_id = p_user AND s.template_id = p_template AND s.skipped_date = p_day)
            ON CONFLICT (user_id, template_id, skipped_date) DO NOTHING;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            v_changed := v_changed + v_count;
        END IF;
        RETURN QUERY SELECT v_today, v_changed > 0;
    END
    $fn$;
COMMENT ON FUNCTION habit.set_day_state(uuid, uuid, date, text, text, boolean) IS
    'Sets a habit''s state on a day (done, skipped, none), replacing the other; no row when the habit is not the user''s; HB003/HB004 (sql/0010 section 10).';

-- Skips (p_skipped) or unskips every habit of p_user (or only p_template) on each day of
-- [p_from, p_to] (at most 366 days). Skipping writes a skip on each day the habit is on
-- (habit.habit_days_at with p_zone) that is neither done nor already skipped: done days
-- stay done, days the habit is not on are passed over. Unskipping removes the skips of the
-- range (any day). Returns one row: found (false when p_template is given and is not the
-- user's habit; nothing is written), today in the zone used, the number of habit-days
-- changed, and the dates (sorted) on which something changed. Refuses: HB003 (DETAIL today)
-- when skipping reaches past today + 366; data_exception for an empty or too long range.
CREATE FUNCTION habit.set_skips(p_user uuid, p_template uuid, p_from date, p_to date, p_skipped boolean,
                                p_zone text DEFAULT NULL)
    RETURNS TABLE (found boolean, today date, changed bigint, days date[])
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_today date;
        v_changed bigint;
        v_days date[];
    BEGIN
        IF p_from IS NULL OR p_to IS NULL OR p_skipped IS NULL OR p_to < p_from OR p_to - p_from >= 366 THEN
            RAISE EXCEPTION 'a range of 1 to 366 days is needed, not % … %', p_from, p_to USING ERRCODE = 'data_exception';
        END IF;
        v_today := habit.local_date(now(), habit.user_time_zone(p_user, p_zone));
        -- In id order, so two ranges over the same habits cannot deadlock.
        PERFORM 1 FROM (SELECT t.id FROM public.habit_templates t
                        WHERE t.user_id = p_user AND (p_template IS NULL OR t.id = p_template)
                        ORDER BY t.id FOR NO KEY UPDATE) locked;
        IF p_template IS NOT NULL AND NOT FOUND THEN
            RETURN QUERY SELECT false, v_today, 0::bigint, '{}'::date[];
            RETURN;
        END IF;
        IF p_skipped THEN
            IF p_to > v_today + 366 AND NOT habit.backfilling() THEN
                RAISE EXCEPTION 'skipping until % is after today (%) + 366 days', p_to, v_today
                    USING ERRCODE = 'HB003', DETAIL = v_today::text;
            END IF;
            WITH inserted AS (
                INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
                SELECT p_user, h.template_id, h.day
                FROM habit.habit_days_at(p_user, p_from, p_to, v_today, p_zone) h
                WHERE (p_template IS NULL OR h.template_id = p_template)
                  AND NOT EXISTS (SELECT 1 FROM public.habit_completions c
                                  WHERE c.user_id = p_user AND c.template_id = h.template_id AND c.completed_date = h.day)
                  AND NOT EXISTS (SELECT 1 FROM public.habit_skips s
                                  WHERE s.user_id = p_user AND s.template_id = h.template_id AND s.skipped_date = h.day)
                ON CONFLICT (user_id, template_id, skipped_date) DO NOTHING
                RETURNING skipped_date
            )
            SELECT count(*), coalesce(array_agg(DISTINCT i.skipped_date ORDER BY i.skipped_date), '{}')
            INTO v_changed, v_days FROM inserted i;
        ELSE
            WITH deleted AS (
                DELETE FROM public.habit_skips s
                WHERE s.user_id = p_user AND (p_template IS NULL OR s.template_id = p_template)
                  AND s.skipped_date BETWEEN p_from AND p_to
                RETURNING s.skipped_date
            )
            SELECT count(*), coalesce(array_agg(DISTINCT d.skipped_date ORDER BY d.skipped_date), '{}')
            INTO v_changed, v_days FROM deleted d;
        END IF;
        RETURN QUERY SELECT true, v_today, v_changed, v_days;
    END
    $fn$;
COMMENT ON FUNCTION habit.set_skips(uuid, uuid, date, date, boolean, text) IS
    'Skips (or unskips) every habit of a user, or one, on each on-day of a range of at most 366 days; done days stay done (sql/0010 section 10).';

REVOKE ALL ON FUNCTION habit.set_day_state(uuid, uuid, date, text, text, boolean),
    habit.set_skips(uuid, uuid, date, date, boolean, text) FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.set_day_state(uuid, uuid, date, text, text, boolean),
    habit.set_skips(uuid, uuid, date, date, boolean, text) TO authenticated, service_role;
