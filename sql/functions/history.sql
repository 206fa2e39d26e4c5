-- History (issue 16): when each habit is on, due, done or skipped, and the rules of
-- completing and skipping, kept by the database for every writer.
--
--   habit.period_on_days     THE definition of "on": the local dates a period makes its habit on
--   habit.due_days           THE definition of "due": the due days of a range of on-days
--   habit.week_target_met_on the day a times_per_week target is met (the times-th completion)
--   habit.habit_days_at      per habit and day of one user: on, due, schedule, done, skipped
--   habit.habit_days         the same with today from the user's zone
--   habit.set_schedule       change a habit's schedule (closes the open period, opens one)
--   habit.day_habits         one day's habits with due, done, skipped (day.get's one-day path)
--   habit.check_day          the rules of a completion or skip, for every writer (the triggers)
--   habit.set_day_state, habit.set_skips, habit.toggle_day   the worker's writers of a day's state
--   HB003 future_date, HB004 habit_not_active, HB005 done_and_skipped, HB006 backfill_not_allowed
--
-- Periods (public.habit_periods) are written only by the trigger of habit_templates
-- (SECURITY DEFINER; sql/triggers/habit_templates.sql), never by the users' roles: writers
-- that only know the seed's columns (is_active, through Supabase) keep history, and the
-- seed's columns and the periods cannot disagree. This relies on the migrator (the functions'
-- owner) bypassing row-level security: a superuser, or Supabase's postgres (BYPASSRLS).
-- The schedule shapes are habit.valid_schedule's (the baseline: the tables' CHECK needs it).
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;


-- A schedule change, for the worker and psql: the caller's habit (auth.uid()'s: ids are unique
-- per user since sql/0027, so an id alone may name several users' habits to a role that sees
-- them all; row-level security applies too), its new schedule, and the habit as it is after.
-- No row: not the caller's habit.
-- The first day a completion or skip may be written on, and (at 00:00 UTC) the first instant a
-- habit or period may start at (issue 31, finding 1; sql/migrations/0021). A SQL function
-- without a SET clause, so PostgreSQL inlines it (docs/schema.md, "search_path").
CREATE OR REPLACE FUNCTION habit.earliest_day() RETURNS date
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT date '1970-01-01'
    $fn$;
COMMENT ON FUNCTION habit.earliest_day() IS
    'The first day a completion or skip may be written on, and (at 00:00 UTC) the first instant a habit or period may start at (sql/0021).';

CREATE OR REPLACE FUNCTION habit.set_schedule(target uuid, new_schedule jsonb) RETURNS SETOF public.habit_templates
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        changed public.habit_templates;
        -- A value, not auth.uid() in the UPDATE: Citus refuses the non-IMMUTABLE call (its
        -- COALESCE, once inlined) in an UPDATE of a distributed table.
        caller uuid := auth.uid();
    BEGIN
        -- At most one row: the key is (id, user_id).
        UPDATE public.habit_templates t SET schedule = new_schedule WHERE t.id = set_schedule.target AND t.user_id = caller
        RETURNING t.* INTO changed;
        IF FOUND THEN
            RETURN NEXT changed;
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.set_schedule(uuid, jsonb) IS
    'Sets a habit''s schedule: closes the open period at now() and opens one with the new schedule (or replaces the schedule of a period starting at now()). Returns the habit; no row when it is not the caller''s.';

-- Which habits a day shows, and which are due -------------------------------------------------
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
-- user); the batch (habit.weekly_counts_of, functions/weekly_counts.sql) takes the union of each habit's ranges and
-- counts its days per week without making a row per day. Both read the same ranges.
--
-- Why one range: the instant D begins (habit.day_begins: D + the day's start, read in Z; D
-- 00:00 for a day starting at midnight) increases strictly with D, so {D : ended_at > D's
-- start} is every D below some bound U, and {D : D ≥ first day} every D from the first day on;
-- with "D < today unless open", the days are [first, least(U, today)) for a closed period and
-- [first, ∞) for an open one. U is found from L, the user's day of ended_at (habit.local_day):
-- L begins at or before ended_at, L − 1 a day earlier, and L + 1 can begin before ended_at only
-- when the zone turns its clocks back across the day's start; so U is L + 2, L + 1 or L.
-- Inlinable (no SET clause, schema-qualified, IMMUTABLE like habit.local_day): it runs inside
-- its callers' plans.
CREATE OR REPLACE FUNCTION habit.period_on_days(started_at timestamptz, ended_at timestamptz, zone text, today date, day_start time)
    RETURNS daterange
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN ended_at IS NULL
                THEN pg_catalog.daterange(habit.local_day(started_at, zone, day_start), NULL, '[)')
                ELSE pg_catalog.daterange(habit.local_day(started_at, zone, day_start),
                         GREATEST(habit.local_day(started_at, zone, day_start), LEAST(today,
                             CASE WHEN habit.day_begins(habit.local_day(ended_at, zone, day_start) OPERATOR(pg_catalog.+) 1, zone, day_start) OPERATOR(pg_catalog.<) ended_at
                                  THEN habit.local_day(ended_at, zone, day_start) OPERATOR(pg_catalog.+) 2
                                  WHEN habit.day_begins(habit.local_day(ended_at, zone, day_start), zone, day_start) OPERATOR(pg_catalog.<) ended_at
                                  THEN habit.local_day(ended_at, zone, day_start) OPERATOR(pg_catalog.+) 1
                                  ELSE habit.local_day(ended_at, zone, day_start) END)),
                         '[)') END
    $fn$;
COMMENT ON FUNCTION habit.period_on_days(timestamptz, timestamptz, text, date, time) IS
    'THE rule of "on", per period: the user''s days (in zone, days beginning at day_start, given today) on which a period [started_at, ended_at) makes its habit on; empty when none (sql/0010, sql/0030).';

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
--   times_in_days   the same per block of `days` days from first_day (sql/0034): target_met_on
--                   is the block's times-th completion (habit.block_target_met_on); days then
--                   lie in one block.
-- Inlinable (one expression, no SET clause, schema-qualified): the batch evaluates it per
-- week and habit, habit.habit_days_at per day. STABLE, not IMMUTABLE, only because
-- jsonb_build_object is (an IMMUTABLE function calling it would not be inlined).
CREATE OR REPLACE FUNCTION habit.due_days(schedule jsonb, first_day date, days daterange, target_met_on date) RETURNS integer
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
               WHEN 'times_in_days' THEN
                   CASE WHEN target_met_on IS NULL THEN pg_catalog.upper(days) OPERATOR(pg_catalog.-) pg_catalog.lower(days)
                        ELSE GREATEST(0, LEAST(pg_catalog.upper(days), target_met_on OPERATOR(pg_catalog.+) 1) OPERATOR(pg_catalog.-) pg_catalog.lower(days)) END
               ELSE pg_catalog.upper(days) OPERATOR(pg_catalog.-) pg_catalog.lower(days) END END
    $fn$;
COMMENT ON FUNCTION habit.due_days(jsonb, date, daterange, date) IS
    'THE rule of "due": how many days of a bounded range of on-days of one period (first local day first_day) the schedule asks for; target_met_on for times_per_week (sql/0010) and times_in_days (sql/0034).';

-- The same rule for one day D of a weekdays, every_n_days or daily schedule: the one-day paths
-- (day.get's habit.day_habits, habit_stats' window counts) test D directly instead of building
-- the daterange and jsonpath habit.due_days needs (their set-up cost more than the reads, issue
-- 29); due_days(schedule, first_day, [D, D + 1), NULL) = 1 ⇔ due_on(schedule, first_day, D).
-- times_per_week and times_in_days need the week's or block's completions, so their callers
-- decide them (true here).
-- Inlinable like due_days (STABLE for the same reason: to_jsonb is).
CREATE OR REPLACE FUNCTION habit.due_on(schedule jsonb, first_day date, day date) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE schedule OPERATOR(pg_catalog.->>) 'type'
           WHEN 'weekdays'
           THEN (schedule OPERATOR(pg_catalog.->) 'days') OPERATOR(pg_catalog.@>) pg_catalog.to_jsonb(EXTRACT(isodow FROM day)::integer)
           WHEN 'every_n_days'
           THEN ((day OPERATOR(pg_catalog.-) first_day) OPERATOR(pg_catalog.%) (schedule OPERATOR(pg_catalog.->>) 'n')::integer) OPERATOR(pg_catalog.=) 0
           ELSE true END
    $fn$;
COMMENT ON FUNCTION habit.due_on(jsonb, date, date) IS
    'habit.due_days for the one day D (weekdays, every_n_days, daily; true for times_per_week, which its callers decide): whether D is due in a period whose first local day is first_day.';

-- The date of the times-th completion of a habit in the week starting week_start: the day a
-- times_per_week target is met (NULL: not met). Completions are unique per day, so the k-th
-- row by date is the k-th completion.
CREATE OR REPLACE FUNCTION habit.week_target_met_on(p_user uuid, p_template uuid, week_start date, times integer) RETURNS date
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

-- The block of day d under a schedule whose due days depend on completions (sql/0034): the
-- user's week for times_per_week (weeks from ISO weekday wk), the block of `days` days from the
-- period's first local day for times_in_days; NULL for the others. Inlined (IMMUTABLE, no SET
-- clause, schema-qualified).
CREATE OR REPLACE FUNCTION habit.quota_block_start(schedule jsonb, first_day date, wk integer, d date) RETURNS date
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE schedule OPERATOR(pg_catalog.->>) 'type'
           WHEN 'times_per_week' THEN habit.week_start(d, wk)
           WHEN 'times_in_days'
           THEN d OPERATOR(pg_catalog.-) ((d OPERATOR(pg_catalog.-) first_day) OPERATOR(pg_catalog.%) (schedule OPERATOR(pg_catalog.->>) 'days')::integer)
           END
    $fn$;
COMMENT ON FUNCTION habit.quota_block_start(jsonb, date, integer, date) IS
    'The first day of d''s block: its week (times_per_week, weeks from ISO weekday wk) or its block of `days` days from first_day (times_in_days, sql/0034); NULL for other schedules.';

CREATE OR REPLACE FUNCTION habit.quota_block_days(schedule jsonb) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE schedule OPERATOR(pg_catalog.->>) 'type'
           WHEN 'times_per_week' THEN 7
           WHEN 'times_in_days' THEN (schedule OPERATOR(pg_catalog.->>) 'days')::integer END
    $fn$;
COMMENT ON FUNCTION habit.quota_block_days(jsonb) IS
    'The length of a block: 7 (times_per_week), `days` (times_in_days, sql/0034); NULL for other schedules.';

-- The date of the times-th completion of a habit in the block [block_start, block_start +
-- block_days): the day a times_per_week or times_in_days target is met (NULL: not met).
CREATE OR REPLACE FUNCTION habit.block_target_met_on(p_user uuid, p_template uuid, block_start date, block_days integer, times integer) RETURNS date
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT c.completed_date FROM public.habit_completions c
    WHERE c.user_id = p_user AND c.template_id = p_template
      AND c.completed_date >= block_start AND c.completed_date < block_start + block_days
    ORDER BY c.completed_date OFFSET times - 1 LIMIT 1
    $fn$;
COMMENT ON FUNCTION habit.block_target_met_on(uuid, uuid, date, integer, integer) IS
    'The date of the times-th completion of the habit in the block of block_days days from block_start, or NULL (sql/0034).';

-- PL/pgSQL (plan kept per session) rather than an inlined SQL function: its callers (a day,
-- a week of one user, the triggers) ask for few rows, and the set-returning function is
-- planned once instead of inside every caller's plan. p_template: only that habit's periods,
-- filtered before their days are generated (a habit's streak slots; expanding every habit of
-- the user and filtering afterwards made ten times the rows for ten habits: 1.7 s against
-- 0.17 s for ten 3-year habits).
CREATE OR REPLACE FUNCTION habit.habit_days_at(p_user uuid, p_from date, p_to date, p_today date, p_zone text DEFAULT NULL,
                                    p_template uuid DEFAULT NULL)
    RETURNS TABLE (template_id uuid, day date, due boolean, schedule jsonb, done boolean, skipped boolean)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        tz text := habit.user_time_zone(p_user, p_zone);
        ds time := habit.user_day_start(p_user);
        wk integer := habit.user_week_start_isodow(p_user);
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
                CROSS JOIN LATERAL habit.period_on_days(p.started_at, p.ended_at, tz, p_today, ds) AS r(days)
                CROSS JOIN LATERAL generate_series(greatest(lower(r.days), p_from)::timestamp,
                                                   least(upper(r.days) - 1, p_to)::timestamp, interval '1 day') AS d(day)
                WHERE p.user_id = p_user
                  -- One habit's periods only, before their days are generated.
                  AND (p_template IS NULL OR p.template_id = p_template)
                  -- Implied by the range (D begins at or after p_from); lets the index skip old periods.
                  AND (p.ended_at IS NULL OR p.ended_at > habit.day_begins(p_from, tz, ds))
                  AND NOT isempty(r.days)
            ) s
            ORDER BY s.template_id, s.day, s.started_at DESC
        ) o
        -- A times_per_week or times_in_days target, looked up only for such habits; a plain column for
        -- habit.due_days, which is then inlined (an argument calling a function is not).
        -- OFFSET 0 keeps the subquery whole, so the lookup runs after its WHERE (pulled up
        -- into the join, it ran for every habit).
        LEFT JOIN LATERAL (
            SELECT habit.block_target_met_on(p_user, o.template_id, habit.quota_block_start(o.schedule, o.first_day, wk, o.day),
                                             habit.quota_block_days(o.schedule), (o.schedule ->> 'times')::integer) AS met_on
            WHERE o.schedule ->> 'type' IN ('times_per_week', 'times_in_days')
            OFFSET 0
        ) target ON true
        ORDER BY o.template_id, o.day;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_days_at(uuid, date, date, date, text, uuid) IS
    'Per habit of p_user (or only p_template) and local date in [p_from, p_to] on which the habit is on (habit.period_on_days, given today p_today): whether it is due (habit.due_days), its schedule, whether it is done and skipped (sql/0010; p_template sql/0011).';

CREATE OR REPLACE FUNCTION habit.habit_days(p_user uuid, p_from date, p_to date, p_zone text DEFAULT NULL)
    RETURNS TABLE (template_id uuid, day date, due boolean, schedule jsonb, done boolean, skipped boolean)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT * FROM habit.habit_days_at(p_user, p_from, p_to, habit.user_today(p_user, p_zone), p_zone)
    $fn$;
COMMENT ON FUNCTION habit.habit_days(uuid, date, date, text) IS
    'habit.habit_days_at with today from the user''s zone at now().';

-- The habits on one day, for day.get: the periods that contain the date (no series), the one
-- starting last in force; due by its schedule (times_per_week: fewer than `times` completions
-- earlier in the user's week, p_wk; times_in_days: in its block); done and skipped by one probe each. The same answer as
-- habit.habit_days_at for one day. Inlined into the caller's statement.
--
-- Written out for one day rather than through habit.period_on_days and habit.due_days (issue
-- 29): the executor builds every expression of a statement anew on each execution, and those
-- two inline into large expressions (a range built and tested per period, a jsonpath per
-- habit) whose set-up cost more than the reads themselves (perf: ExecutorStart ~40 % of the
-- backend's time for day.get). For one day D they reduce to:
--   on      period_on_days(p) @> D  ⇔  first day ≤ D and, for a closed period, D < today
--           and D's start < ended_at (the range's upper bound U is the first day whose start is
--           at or after ended_at, so D < U ⇔ D's start < ended_at);
--   due     due_days(schedule, first, [D, D + 1), NULL) > 0  ⇔  daily: true; weekdays: D's ISO
--           weekday is listed (the whole-weeks term is 0, and of the listed days only D's own
--           has (day − isodow(D) + 7) % 7 < 1; days are distinct integers 1–7, valid_schedule);
--           every_n_days: (D − first) % n = 0 (D ≥ first; the two quotients differ by one
--           exactly then).
-- StreakFunctionsTests compares this function with habit.habit_days_at day by day.
CREATE OR REPLACE FUNCTION habit.day_habits(p_user uuid, p_date date, p_today date, p_tz text, p_wk integer, p_ds time)
    RETURNS TABLE (template_id uuid, due boolean, done boolean, skipped boolean, schedule jsonb)
    LANGUAGE sql STABLE
    AS $fn$
    SELECT o.template_id,
           CASE o.schedule OPERATOR(pg_catalog.->>) 'type'
                WHEN 'times_per_week'
                THEN (SELECT pg_catalog.count(*) FROM public.habit_completions c
                      WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) o.template_id
                        AND c.completed_date OPERATOR(pg_catalog.>=) o.block_start
                        AND c.completed_date OPERATOR(pg_catalog.<) p_date)
                     OPERATOR(pg_catalog.<) (o.schedule OPERATOR(pg_catalog.->>) 'times')::integer
                WHEN 'times_in_days'
                THEN (SELECT pg_catalog.count(*) FROM public.habit_completions c
                      WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) o.template_id
                        AND c.completed_date OPERATOR(pg_catalog.>=) o.block_start
                        AND c.completed_date OPERATOR(pg_catalog.<) p_date)
                     OPERATOR(pg_catalog.<) (o.schedule OPERATOR(pg_catalog.->>) 'times')::integer
                ELSE habit.due_on(o.schedule, o.first_day, p_date) END,
           EXISTS (SELECT 1 FROM public.habit_completions c
                   WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) o.template_id
                     AND c.completed_date OPERATOR(pg_catalog.=) p_date),
           EXISTS (SELECT 1 FROM public.habit_skips k
                   WHERE k.user_id OPERATOR(pg_catalog.=) p_user AND k.template_id OPERATOR(pg_catalog.=) o.template_id
                     AND k.skipped_date OPERATOR(pg_catalog.=) p_date),
           o.schedule
    -- block_start: a quota's week or block, computed here as a column so that the counts above
    -- bound their index scans with it. Written inside a count, a generic plan under row-level
    -- security kept it as a filter and read every completion of the habit before the day
    -- (a cost growing with the habit's history).
    FROM (SELECT DISTINCT ON (p.template_id) p.template_id, p.schedule, habit.local_day(p.started_at, p_tz, p_ds) AS first_day,
                 CASE p.schedule OPERATOR(pg_catalog.->>) 'type'
                      WHEN 'times_per_week' THEN habit.week_start(p_date, p_wk)
                      WHEN 'times_in_days' THEN habit.quota_block_start(p.schedule, habit.local_day(p.started_at, p_tz, p_ds), p_wk, p_date) END
                     AS block_start
          FROM public.habit_periods p
          WHERE p.user_id OPERATOR(pg_catalog.=) p_user
            AND habit.local_day(p.started_at, p_tz, p_ds) OPERATOR(pg_catalog.<=) p_date
            AND (p.ended_at IS NULL
                 OR (p_date OPERATOR(pg_catalog.<) p_today
                     AND p.ended_at OPERATOR(pg_catalog.>) habit.day_begins(p_date, p_tz, p_ds)))
          ORDER BY p.template_id, p.started_at DESC) o
    $fn$;
COMMENT ON FUNCTION habit.day_habits(uuid, date, date, text, integer, time) IS
    'The habits of p_user on p_date (zone p_tz, days beginning at p_ds, today p_today, weeks from ISO weekday p_wk) with due, done, skipped and the schedule in force: habit.habit_days_at for one day, without a series.';

-- The rules of completing and skipping, for every writer -------------------------------------
--   23514 (CONSTRAINT habit_completions_date_range / habit_skips_date_range)  a day before
--                           habit.earliest_day(), 1970-01-01 (sql/migrations/0021); backfill too
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
CREATE OR REPLACE FUNCTION habit.backfilling() RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF coalesce(current_setting('habit.backfill', true), '') NOT IN ('on', 'true') THEN
            RETURN false;
        END IF;
        -- The caller's role as SET ROLE names it (or the login role): the triggers that ask are
        -- SECURITY DEFINER, where current_user is their owner. habit.import_account, which acts
        -- as the user but checks the session's login role itself, says so in
        -- habit.backfill_checked; that setting alone admits no one whose login role is not an
        -- admin.
        IF NOT pg_has_role(CASE WHEN current_setting('role') = 'none' THEN session_user::text ELSE current_setting('role') END,
                           'habit_admin', 'MEMBER')
           AND NOT (coalesce(current_setting('habit.backfill_checked', true), '') = 'session'
                    AND pg_has_role(session_user, 'habit_admin', 'MEMBER')) THEN
            RAISE EXCEPTION 'habit.backfill is only for habit_admin; % may not set it',
                CASE WHEN current_setting('role') = 'none' THEN session_user::text ELSE current_setting('role') END
                USING ERRCODE = 'HB006';
        END IF;
        RETURN true;
    END
    $fn$;
COMMENT ON FUNCTION habit.backfilling() IS
    'True when habit.backfill is on and the current role is habit_admin (or a member); raises HB006 when it is on for another role.';

-- For a completion, check-in or skip (p_kind) of p_day becoming present (an insert: the rules apply)
-- or absent (a delete): locks the habit (FOR NO KEY UPDATE: every writer of its days takes it,
-- so its runs are kept in turn and "never both done and skipped" is exact), then reads the
-- zone, the habit's streak state and whether weekly counts are tracked, and checks the day, in
-- one statement. Returns the state when the runs are to be changed (not when the insert's key, or
-- its id p_id, is taken: the row will not be written), and tracking. Nothing for a habit that
-- is not the user's: the composite foreign key refuses the row. Whether the habit is on the
-- day is read from its segments (habit_streak_state.segs) unless they are being rebuilt or a
-- request's time-zone override (habit.request_time_zone, set by habit.set_day_state) asks
-- for another zone too; an override can only make the checks stricter. Called by the
-- BEFORE triggers of habit_completions and habit_skips (sql/triggers/), the one place of
-- these rules.
CREATE OR REPLACE FUNCTION habit.check_day(p_user uuid, p_template uuid, p_day date, p_kind text, p_present boolean, p_id uuid,
                                OUT st public.habit_streak_state, OUT tracking boolean, OUT target numeric, OUT kind text,
                                OUT target_type text)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        rule record;
        skipping boolean := p_kind = 'skip';
        checkin boolean := p_kind = 'checkin';
        request_zone text;
        backfill boolean;
        on_day boolean := false;
        s habit.streak_segment;
    BEGIN
        -- The range (sql/migrations/0021), before anything else and for every writer, backfill
        -- or not: a day before habit.earliest_day() is never written.
        IF p_present AND p_day < habit.earliest_day() THEN
            RAISE EXCEPTION '% on % is before %: violates check constraint "%"', CASE WHEN skipping THEN 'skipping' WHEN checkin THEN 'checking in' ELSE 'completing' END, p_day, habit.earliest_day(),
                  CASE WHEN skipping THEN 'habit_skips_date_range' WHEN checkin THEN 'habit_checkins_date_range' ELSE 'habit_completions_date_range' END
                USING ERRCODE = 'check_violation',
                      CONSTRAINT = CASE WHEN skipping THEN 'habit_skips_date_range' WHEN checkin THEN 'habit_checkins_date_range' ELSE 'habit_completions_date_range' END,
                      TABLE = CASE WHEN skipping THEN 'habit_skips' WHEN checkin THEN 'habit_checkins' ELSE 'habit_completions' END,
                      COLUMN = CASE WHEN skipping THEN 'skipped_date' WHEN checkin THEN 'checkin_date' ELSE 'completed_date' END, SCHEMA = 'public';
        END IF;
        -- The lock first, in a statement of its own: a writer that waited for it reads, in the
        -- next statement (a new snapshot), what the writer it waited for committed.
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        SELECT habit.local_day(now(), z.tz, z.ds) AS today, z.tz, z.ds, x AS state, x.user_id IS NOT NULL AS has_state,
               EXISTS (SELECT 1 FROM habit.weekly_counts_state) AS tracking, t.target, t.kind, t.target_type,
               -- A skip excuses the day: it has no value, so no check-in either (sql/0029).
               p_present AND CASE WHEN skipping
                    THEN EXISTS (SELECT 1 FROM public.habit_completions c
                                 WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day)
                         OR EXISTS (SELECT 1 FROM public.habit_checkins i
                                    WHERE i.user_id = p_user AND i.template_id = p_template AND i.checkin_date = p_day)
                    ELSE EXISTS (SELECT 1 FROM public.habit_skips k
                                 WHERE k.user_id = p_user AND k.template_id = p_template AND k.skipped_date = p_day) END AS other_state,
               -- Whether the row is already there (the write will change nothing): only asked
               -- while the runs are kept row by row. Once the habit is pending (a bulk load),
               -- the table being written is not probed for every row: a plan cached while it was
               -- small (a fresh database) would scan it.
               CASE WHEN NOT p_present OR x.pending OR checkin THEN false
                    WHEN skipping
                    THEN EXISTS (SELECT 1 FROM public.habit_skips k
                                 WHERE k.user_id = p_user AND k.template_id = p_template AND k.skipped_date = p_day)
                    ELSE EXISTS (SELECT 1 FROM public.habit_completions c
                                 WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day)
                         OR EXISTS (SELECT 1 FROM public.habit_completions c WHERE c.id = p_id AND c.user_id = p_user) END AS taken
        INTO rule
        FROM public.habit_templates t
        CROSS JOIN LATERAL (SELECT coalesce(max(p.timezone), 'UTC') AS tz, coalesce(max(p.day_starts_at), '00:00') AS ds
                            FROM public.profiles p WHERE p.user_id = p_user) z
        LEFT JOIN public.habit_streak_state x ON x.user_id = p_user AND x.template_id = p_template
        WHERE t.id = p_template AND t.user_id = p_user;
        tracking := rule.tracking;
        target := rule.target;
        kind := rule.kind;
        target_type := rule.target_type;
        IF p_present THEN
            backfill := coalesce(current_setting('habit.backfill', true), '') IN ('on', 'true') AND habit.backfilling();
            request_zone := nullif(current_setting('habit.request_time_zone', true), '');
            IF NOT backfill THEN
                IF request_zone IS NOT NULL AND request_zone <> rule.tz THEN
                    -- The request's today first: its refusal names the today the request used.
                    PERFORM habit.check_future(p_day, habit.local_day(now(), request_zone, rule.ds), skipping);
                END IF;
                -- (habit.check_future's test, written out: this runs for every row of a bulk load.)
                IF (NOT skipping AND p_day > rule.today) OR (skipping AND p_day > rule.today + 366) THEN
                    PERFORM habit.check_future(p_day, rule.today, skipping);
                END IF;
                IF rule.has_state AND NOT (rule.state).pending THEN
                    -- On: in a segment, and before today unless the segment's period is open.
                    FOREACH s IN ARRAY (rule.state).segs LOOP
                        IF p_day >= s.lo AND p_day < s.hi AND (p_day < rule.today OR s.hi = 'infinity') THEN
                            on_day := true;
                            EXIT;
                        END IF;
                    END LOOP;
                ELSE
                    on_day := EXISTS (SELECT 1 FROM public.habit_periods p
                                      WHERE p.user_id = p_user AND p.template_id = p_template
                                        AND (p.ended_at IS NULL OR p.ended_at > habit.day_begins(p_day, rule.tz, rule.ds))
                                        AND habit.period_on_days(p.started_at, p.ended_at, rule.tz, rule.today, rule.ds) @> p_day);
                END IF;
                IF on_day AND request_zone IS NOT NULL AND request_zone <> rule.tz THEN
                    on_day := EXISTS (SELECT 1 FROM public.habit_periods p
                                      WHERE p.user_id = p_user AND p.template_id = p_template
                                        AND habit.period_on_days(p.started_at, p.ended_at, request_zone,
                                                                 habit.local_day(now(), request_zone, rule.ds), rule.ds) @> p_day);
                END IF;
                IF NOT on_day THEN
                    RAISE EXCEPTION 'habit % is not on %', p_template, p_day USING ERRCODE = 'HB004';
                END IF;
            END IF;
            IF rule.other_state THEN
                RAISE EXCEPTION 'habit % is % on %; it cannot also be %', p_template, CASE WHEN skipping THEN 'done or checked in' ELSE 'skipped' END,
                    p_day, CASE WHEN skipping THEN 'skipped' WHEN checkin THEN 'checked in' ELSE 'done' END USING ERRCODE = 'HB005';
            END IF;
            IF rule.taken OR checkin THEN
                RETURN;
            END IF;
        END IF;
        IF NOT rule.has_state THEN
            -- Made without its state (a bulk load with triggers off): counted from scratch at commit.
            INSERT INTO public.habit_streak_state (user_id, template_id, unit, wk, pending) VALUES (p_user, p_template, 'days', 1, true)
            ON CONFLICT DO NOTHING;
            RETURN;
        END IF;
        st := rule.state;
    END
    $fn$;
COMMENT ON FUNCTION habit.check_day(uuid, uuid, date, text, boolean, uuid) IS
    'Locks the habit and, for a completion, check-in or skip becoming present, raises 23514 (before habit.earliest_day()), HB003 (future), HB004 (not on that day) or HB005 (done or checked in and skipped; HB003/HB004 not while backfilling); returns its streak state when its runs are to change (never for a check-in), whether weekly counts are tracked, and the habit''s target, kind and target type.';

-- HB003: completing after today, or skipping more than 366 days after it (DETAIL: that today).
CREATE OR REPLACE FUNCTION habit.check_future(p_day date, p_today date, p_skipping boolean) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF (NOT p_skipping AND p_day > p_today) OR (p_skipping AND p_day > p_today + 366) THEN
            RAISE EXCEPTION '% on % is after %', CASE WHEN p_skipping THEN 'skipping' ELSE 'completing' END, p_day,
                CASE WHEN p_skipping THEN 'today (' || p_today || ') + 366 days' ELSE 'today (' || p_today || ') in the user''s time zone' END
                USING ERRCODE = 'HB003', DETAIL = p_today::text;
        END IF;
    END
    $fn$;


-- Day states: completions.set with state, skips.set_range ------------------------------------
-- The worker's writers of a day's state, one statement each. Both are plpgsql SECURITY
-- INVOKER: row-level security and the tables' triggers apply as to any writer, and the
-- triggers are the one implementation of HB003/HB004/HB005 (habit.check_day). A request's
-- zone (p_zone) reaches them through habit.request_time_zone and can only make them
-- stricter; the refusal names the today that refused (HB003's DETAIL).
--
-- Both lock the habit rows they write (FOR NO KEY UPDATE, as the triggers do), then read:
-- plpgsql takes a new snapshot per statement, so a write that waited for the lock sees the
-- write it waited for. Two writers of one day therefore serialize, and the later replaces
-- the earlier (set_day_state) or leaves its completion alone (set_skips): never both a
-- completion and a skip, and no HB005 between these functions.

-- Sets one habit's state on p_day: 'done', 'skipped' or 'none', removing the other state.
-- The rules are the tables' triggers' (habit.check_day: HB003-HB005, for every writer); this
-- locks the habit first, so a later writer of the same day replaces an earlier one, and adds
-- only the horizon of clearing: 'none' not after today + 366, or not after today when
-- p_clear_ahead is false. p_zone, a request's override, makes the triggers' date check
-- stricter (habit.request_time_zone). One row: the today of that horizon (NULL when not
-- needed) and whether anything changed; no row when p_template is not p_user's habit.
CREATE OR REPLACE FUNCTION habit.set_day_state(p_user uuid, p_template uuid, p_day date, p_state text,
                                    p_zone text DEFAULT NULL, p_clear_ahead boolean DEFAULT true)
    RETURNS TABLE (today date, changed boolean)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_today date;
        v_count bigint;
        v_changed bigint := 0;
    BEGIN
        IF p_state IS NULL OR p_state NOT IN ('done', 'skipped', 'none') THEN
            RAISE EXCEPTION 'state must be done, skipped or none, not %', coalesce(p_state, 'NULL') USING ERRCODE = 'data_exception';
        END IF;
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF p_zone IS NOT NULL OR coalesce(current_setting('habit.request_time_zone', true), '') <> '' THEN
            PERFORM set_config('habit.request_time_zone', coalesce(p_zone, ''), true);
        END IF;
        IF p_state = 'none' AND NOT (coalesce(current_setting('habit.backfill', true), '') IN ('on', 'true') AND habit.backfilling()) THEN
            v_today := habit.user_today(p_user, p_zone);
            IF p_day > v_today + (CASE WHEN p_clear_ahead THEN 366 ELSE 0 END) THEN
                RAISE EXCEPTION 'none on % is after %', p_day,
                    CASE WHEN p_clear_ahead THEN 'today (' || v_today || ') + 366 days' ELSE 'today (' || v_today || ')' END
                    USING ERRCODE = 'HB003', DETAIL = v_today::text;
            END IF;
        END IF;
        IF p_state <> 'done' THEN
            -- The day's value goes with its state (sql/0029): a day that is not done has no
            -- check-ins left, whether they met the target or not.
            DELETE FROM public.habit_checkins i WHERE i.user_id = p_user AND i.template_id = p_template AND i.checkin_date = p_day;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            v_changed := v_changed + v_count;
            DELETE FROM public.habit_completions c WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day;
            GET DIAGNOSTICS v_count = ROW_COUNT;
            v_changed := v_changed + v_count;
        END IF;
        IF p_state <> 'skipped' THEN
            DELETE FROM public.habit_skips s WHERE s.user_id = p_user AND s.template_id = p_template AND s.skipped_date = p_day;
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
    'Sets a habit''s state on a day (done, skipped or none), replacing the other; no row when the habit is not the user''s. The rules are the triggers''.';

-- Flips whether p_template is done on p_day and returns the new state (true: done); no row
-- when it is not p_user's habit. A skipped day becomes done. The habit is locked first, so
-- concurrent flips of one habit each flip once. Removing keeps completions.set's horizon (not
-- after today); completing meets the triggers' rules. One statement, one round trip.
CREATE OR REPLACE FUNCTION habit.toggle_day(p_user uuid, p_template uuid, p_day date, p_zone text DEFAULT NULL)
    RETURNS TABLE (done boolean)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF EXISTS (SELECT 1 FROM public.habit_completions c
                   WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day) THEN
            PERFORM habit.set_day_state(p_user, p_template, p_day, 'none', p_zone, false);
            RETURN QUERY SELECT false;
        ELSE
            PERFORM habit.set_day_state(p_user, p_template, p_day, 'done', p_zone, false);
            RETURN QUERY SELECT true;
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.toggle_day(uuid, uuid, date, text) IS
    'Flips whether a habit is done on a day (a skipped day becomes done); returns the new state, no row when the habit is not the user''s.';


-- Skips (p_skipped) or unskips every habit of p_user (or only p_template) on each day of
-- [p_from, p_to] (at most 366 days). Skipping writes a skip on each day the habit is on
-- (habit.habit_days_at with p_zone) that is neither done, checked in (sql/0029) nor already skipped: done days
-- stay done, days the habit is not on are passed over. Unskipping removes the skips of the
-- range (any day). Returns one row: found (false when p_template is given and is not the
-- user's habit; nothing is written), today in the zone used, the number of habit-days
-- changed, and the dates (sorted) on which something changed. Refuses: HB003 (DETAIL today)
-- when skipping reaches past today + 366; data_exception for an empty or too long range.
CREATE OR REPLACE FUNCTION habit.set_skips(p_user uuid, p_template uuid, p_from date, p_to date, p_skipped boolean,
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
        v_today := habit.user_today(p_user, p_zone);
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
                  -- A day with check-ins has a value (sql/0029): not skipped, like a done day.
                  AND NOT EXISTS (SELECT 1 FROM public.habit_checkins i
                                  WHERE i.user_id = p_user AND i.template_id = h.template_id AND i.checkin_date = h.day)
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

-- Why a completion may not be set (completing) or cleared (not completing) on day, or NULL
-- when it may: 'future_date' when day is after the user's today (either way), else
-- 'habit_not_active' when completing a habit that is not on that day (on_day: the caller's
-- answer, habit.habit_days_at's).
-- Removing a completion of a deactivated habit stays allowed. The values are the protocol's
-- error reasons (docs/protocol.md); the worker maps them to its errors in one place.
-- Inlined (no SET clause, schema-qualified, each parameter used once): completions.set and
-- completions.toggle plan it as the expression written out.
CREATE OR REPLACE FUNCTION habit.completion_refusal(completing boolean, day date, today date, on_day boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN (day OPERATOR(pg_catalog.>) today) THEN 'future_date'
                WHEN completing AND NOT on_day THEN 'habit_not_active' END
    $fn$;
COMMENT ON FUNCTION habit.completion_refusal(boolean, date, date, boolean) IS
    'Why a completion on day may not be set (completing) or cleared: future_date, habit_not_active, or NULL when it may.';

-- Rules from before history (issue 16), kept for admins' saved queries ------------------------
-- habit.is_on_day is the pre-history rule (active now, activated on or before the day);
-- nothing of ours calls it any more, and its comment says so. Inlined (no SET clause,
-- schema-qualified), like habit.completion_refusal.
CREATE OR REPLACE FUNCTION habit.is_on_day(is_active boolean, activated_at timestamptz, day date, zone text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$ SELECT is_active AND (habit.local_date(activated_at, zone) OPERATOR(pg_catalog.<=) day) $fn$;
COMMENT ON FUNCTION habit.is_on_day(boolean, timestamptz, date, text) IS
    'Superseded by habit.habit_days_at (sql/0010): the pre-history rule, kept for old queries; the service no longer uses it.';
