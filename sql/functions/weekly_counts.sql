-- Weekly completion counts: the batch's one definition (habit.weekly_counts_of), and the
-- dirty set that lets `habit weekly-counts --store --incremental` recompute only what
-- changed (issue 20).
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- The one definition -------------------------------------------------------------------------
-- habit.weekly_counts_of (the batch), with the definitions of habit.habit_days_at, for every
-- user or a set of them at once (today from each user's zone at now(), as habit.habit_days has it):
--   active_habit_days   habit-days on (habit.period_on_days)
--   due_habit_days      of those, the due ones (habit.due_days, the schedule in force that day)
--   skipped_habit_days  of the due habit-days, the skipped ones (a skip on a day the schedule
--                       does not ask for excuses nothing and counts nowhere: never above due)
--   completion_rate     done ÷ (due − skipped), over due days only: completions on due days
--                       divided by the due days not skipped (4 decimals; NULL when that is 0).
--                       A completion on a day the schedule does not ask for counts in
--                       `completions` but not in the rate, so the rate stays within [0, 1].
-- Set-based, no call per user and no row per habit-day: each period's on-days minus the days
-- a later-starting period of its habit is on (its schedule is in force there, as in
-- habit_days_at). Daily segments are summed per (user, week) from one array of ranges per
-- user, as before due; the others are cut into weeks and habit.due_days counts a piece's due
-- days at once. Only times_per_week and times_in_days pieces are counted per day, since their
-- target is met in the user's week (profiles.week_start), which need not be the run's, or in
-- their block (sql/0034). WeeklyCountsHistoryTests
-- checks, for random histories, that it equals the sum of the per-user habit.habit_days_at
-- answers. only_users NULL: every user (a user is one with a habit or a profile), else those
-- (an incremental run recomputes its dirty users in one call).
-- Inlined, like habit.weekly_counts below: no SET clause, and every name schema-qualified
-- (functions/calendar.sql says how); inlined, the planner uses the user index for one user
-- (docs/schema.md, "search_path": 1 ms against 800 ms).
CREATE OR REPLACE FUNCTION habit.weekly_counts_of(from_day date, to_day date, week_start_day text, only_users uuid[])
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
        SELECT s.week_start, pg_catalog.daterange(s.week_start, (s.week_start OPERATOR(pg_catalog.+) 7), '[)') AS days
        FROM (SELECT (first_week OPERATOR(pg_catalog.+) (7 OPERATOR(pg_catalog.*) n)) AS week_start
              FROM bounds, pg_catalog.generate_series(0, ((last_week OPERATOR(pg_catalog.-) first_week) OPERATOR(pg_catalog./) 7)) AS n) s
    ),
    users AS (
        SELECT t.user_id FROM public.habit_templates t WHERE only_users IS NULL OR t.user_id OPERATOR(pg_catalog.=) ANY (only_users)
        UNION
        SELECT p.user_id FROM public.profiles p WHERE only_users IS NULL OR p.user_id OPERATOR(pg_catalog.=) ANY (only_users)
    ),
    zones AS (
        SELECT u.user_id, coalesce(p.timezone, 'UTC') AS tz, coalesce(p.day_starts_at, '00:00'::pg_catalog.time) AS ds,
               coalesce(habit.week_start_isodow(p.week_start), 1) AS week_isodow
        FROM users u LEFT JOIN public.profiles p ON p.user_id OPERATOR(pg_catalog.=) u.user_id
    ),
    -- Per period, its on-days without those of later-starting periods of its habit, within the
    -- run's weeks: disjoint ranges per habit, each with the schedule in force on it.
    segments AS (
        SELECT q.user_id, q.template_id, q.schedule, q.schedule OPERATOR(pg_catalog.->>) 'type' AS kind,
               q.first_day, q.week_isodow, g.days
        FROM (SELECT r.user_id, r.template_id, r.schedule, r.week_isodow, pg_catalog.lower(r.days) AS first_day,
                     (pg_catalog.datemultirange(r.days)
                      OPERATOR(pg_catalog.-) coalesce(pg_catalog.range_agg(r.days) OVER later, '{}'::pg_catalog.datemultirange))
                     OPERATOR(pg_catalog.*) pg_catalog.datemultirange(pg_catalog.daterange(b.first_week, (b.last_week OPERATOR(pg_catalog.+) 7), '[)')) AS days
              FROM (SELECT p.user_id, p.template_id, p.schedule, p.started_at, z.week_isodow,
                           habit.period_on_days(p.started_at, p.ended_at, z.tz, habit.local_day(pg_catalog.now(), z.tz, z.ds), z.ds) AS days
                    FROM public.habit_periods p
                    JOIN zones z ON z.user_id OPERATOR(pg_catalog.=) p.user_id
                    WHERE only_users IS NULL OR p.user_id OPERATOR(pg_catalog.=) ANY (only_users)) r
              CROSS JOIN bounds b
              WHERE NOT pg_catalog.isempty(r.days)
              WINDOW later AS (PARTITION BY r.user_id, r.template_id ORDER BY r.started_at ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)) q
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
               pg_catalog.sum(CASE WHEN x.kind OPERATOR(pg_catalog.<>) ALL (ARRAY['times_per_week', 'times_in_days'])
                                   THEN habit.due_days(x.schedule, x.first_day, x.days, NULL)
                                   ELSE (SELECT pg_catalog.count(*) FROM pg_catalog.generate_series(pg_catalog.lower(x.days)::timestamp,
                                             (pg_catalog.upper(x.days) OPERATOR(pg_catalog.-) 1)::timestamp, '1 day'::interval) AS d(day)
                                         WHERE habit.due_days(x.schedule, x.first_day, pg_catalog.daterange(d.day::date, (d.day::date OPERATOR(pg_catalog.+) 1), '[)'),
                                                   habit.block_target_met_on(x.user_id, x.template_id,
                                                                             habit.quota_block_start(x.schedule, x.first_day, x.week_isodow, d.day::date),
                                                                             habit.quota_block_days(x.schedule),
                                                                             (x.schedule OPERATOR(pg_catalog.->>) 'times')::integer)) OPERATOR(pg_catalog.>) 0) END) AS due
        FROM (SELECT s.user_id, s.template_id, s.schedule, s.kind, s.first_day, s.week_isodow, w.week_start,
                     (s.days OPERATOR(pg_catalog.*) w.days) AS days
              FROM segments s JOIN weeks w ON s.days OPERATOR(pg_catalog.&&) w.days
              WHERE s.kind OPERATOR(pg_catalog.<>) 'daily') x
        GROUP BY 1, 2
    ),
    -- Completion and skip rows, each with whether its day is due (the segment it lies in).
    day_states AS (
        SELECT e.user_id, e.day, e.done,
               -- Off its habit's on-days (no segment) a row is never due.
               CASE WHEN s.kind IS NULL THEN false
                    WHEN s.kind OPERATOR(pg_catalog.=) 'daily' THEN true
                    ELSE habit.due_days(s.schedule, s.first_day, pg_catalog.daterange(e.day, (e.day OPERATOR(pg_catalog.+) 1), '[)'),
                             CASE WHEN s.kind OPERATOR(pg_catalog.=) ANY (ARRAY['times_per_week', 'times_in_days'])
                                  THEN habit.block_target_met_on(e.user_id, e.template_id,
                                                                 habit.quota_block_start(s.schedule, s.first_day, s.week_isodow, e.day),
                                                                 habit.quota_block_days(s.schedule),
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
          AND (only_users IS NULL OR e.user_id OPERATOR(pg_catalog.=) ANY (only_users))
    ),
    states AS (
        SELECT d.user_id, habit.week_start(d.day, b.start_isodow) AS week_start,
               pg_catalog.count(*) FILTER (WHERE d.done) AS completions,
               pg_catalog.count(DISTINCT d.day) FILTER (WHERE d.done) AS days_with_completion,
               pg_catalog.count(*) FILTER (WHERE d.done AND d.due) AS done_due,
               pg_catalog.count(*) FILTER (WHERE NOT d.done AND d.due) AS skipped_due
        FROM day_states d, bounds b
        GROUP BY 1, 2
    )
    -- A week's daily habit-days (each daily range's days inside it) by a scalar subquery: as a
    -- LATERAL over the array (as fast here) it fails in Citus's planner ("bogus varno").
    SELECT t.user_id, t.week_start, t.completions, t.days_with_completion,
           (t.daily OPERATOR(pg_catalog.+) t.active)::bigint, (t.daily OPERATOR(pg_catalog.+) t.due)::bigint, t.skipped_due,
           CASE WHEN (t.daily OPERATOR(pg_catalog.+) t.due OPERATOR(pg_catalog.-) t.skipped_due) OPERATOR(pg_catalog.<=) 0 THEN NULL
                ELSE pg_catalog.round((t.done_due::numeric
                                       OPERATOR(pg_catalog./) (t.daily OPERATOR(pg_catalog.+) t.due OPERATOR(pg_catalog.-) t.skipped_due)::numeric), 4) END
    FROM (SELECT z.user_id, w.week_start,
                 coalesce(c.completions, 0) AS completions, coalesce(c.days_with_completion, 0) AS days_with_completion,
                 coalesce(c.done_due, 0) AS done_due, coalesce(c.skipped_due, 0) AS skipped_due,
                 coalesce(o.active, 0) AS active, coalesce(o.due, 0) AS due,
                 (SELECT coalesce(pg_catalog.sum(pg_catalog.upper(r.days OPERATOR(pg_catalog.*) w.days)
                                                 OPERATOR(pg_catalog.-) pg_catalog.lower(r.days OPERATOR(pg_catalog.*) w.days)), 0)
                  FROM pg_catalog.unnest(d.spans) AS r(days)) AS daily
          FROM zones z
          CROSS JOIN weeks w
          LEFT JOIN states c ON c.user_id OPERATOR(pg_catalog.=) z.user_id AND c.week_start OPERATOR(pg_catalog.=) w.week_start
          LEFT JOIN daily_spans d ON d.user_id OPERATOR(pg_catalog.=) z.user_id
          LEFT JOIN scheduled_days o ON o.user_id OPERATOR(pg_catalog.=) z.user_id AND o.week_start OPERATOR(pg_catalog.=) w.week_start
          -- Sorted here, which also keeps PostgreSQL from pulling the subquery up: pulled up,
          -- `daily` was computed once for each of its four uses (12.4 s against 7.7 s).
          ORDER BY z.user_id, w.week_start) t
    ORDER BY t.user_id, t.week_start
    $fn$;
COMMENT ON FUNCTION habit.weekly_counts_of(date, date, text, uuid[]) IS
    'habit.weekly_counts for the users of only_users (NULL: every user); the one definition of the weekly counts (sql/0010, sql/0015).';

-- The same for one user or all (`habit weekly-counts`, admins): habit.weekly_counts_of, inlined.
CREATE OR REPLACE FUNCTION habit.weekly_counts(from_day date, to_day date, week_start_day text, only_user uuid DEFAULT NULL)
    RETURNS TABLE (user_id uuid, week_start date, completions bigint, days_with_completion bigint,
                   active_habit_days bigint, due_habit_days bigint, skipped_habit_days bigint,
                   completion_rate numeric)
    LANGUAGE sql STABLE
    AS $fn$
    SELECT * FROM habit.weekly_counts_of(from_day, to_day, week_start_day,
                                         CASE WHEN only_user IS NULL THEN NULL ELSE ARRAY[only_user] END)
    $fn$;
COMMENT ON FUNCTION habit.weekly_counts(date, date, text, uuid) IS
    'Per user and week in [from_day, to_day] (weeks from week_start_day): completions, days with a completion, habit-days on, due, and skipped of the due, and the completion rate done ÷ (due − skipped) over due days (sql/0010, skipped sql/0020).';

-- The week values of habits counted from check-ins (issue 32: "the week's value totals per
-- habit"), for `habit weekly-counts --values`: per user, counted habit (habit.is_counted:
-- measurable, a target other than 1, at most; a weekly target is one) and week of [from_day,
-- to_day] (weeks from week_start_day) with an entry, the week's value — its check-ins' sum, a
-- day done without check-ins counting habit.done_value — as week.counts answers one user's
-- week. Events, not days: the check-ins and the completions without check-ins of the range.
-- Inlined like habit.weekly_counts_of (no SET clause, schema-qualified).
CREATE OR REPLACE FUNCTION habit.weekly_values(from_day date, to_day date, week_start_day text, only_user uuid DEFAULT NULL)
    RETURNS TABLE (user_id uuid, template_id uuid, week_start date, value numeric)
    LANGUAGE sql STABLE
    AS $fn$
    -- The range's bounds written out in each branch rather than joined from a CTE: a lateral
    -- join of a local row to distributed tables is a join Citus cannot push down.
    SELECT e.user_id, e.template_id, habit.week_start(e.day, habit.week_start_isodow(week_start_day)),
           pg_catalog.trim_scale(pg_catalog.sum(e.value))
    FROM (
        SELECT x.user_id, x.template_id, x.checkin_date AS day, x.value
        FROM public.habit_checkins x
        JOIN public.habit_templates t ON t.id OPERATOR(pg_catalog.=) x.template_id AND t.user_id OPERATOR(pg_catalog.=) x.user_id
        WHERE habit.is_counted(t.kind, t.target, t.target_type)
          AND x.checkin_date OPERATOR(pg_catalog.>=) habit.week_start(from_day, habit.week_start_isodow(week_start_day))
          AND x.checkin_date OPERATOR(pg_catalog.<) (habit.week_start(to_day, habit.week_start_isodow(week_start_day)) OPERATOR(pg_catalog.+) 7)
          AND (only_user IS NULL OR x.user_id OPERATOR(pg_catalog.=) only_user)
        UNION ALL
        SELECT c.user_id, c.template_id, c.completed_date, habit.done_value(t.target, t.target_type)
        FROM public.habit_completions c
        JOIN public.habit_templates t ON t.id OPERATOR(pg_catalog.=) c.template_id AND t.user_id OPERATOR(pg_catalog.=) c.user_id
        WHERE habit.is_counted(t.kind, t.target, t.target_type)
          AND c.completed_date OPERATOR(pg_catalog.>=) habit.week_start(from_day, habit.week_start_isodow(week_start_day))
          AND c.completed_date OPERATOR(pg_catalog.<) (habit.week_start(to_day, habit.week_start_isodow(week_start_day)) OPERATOR(pg_catalog.+) 7)
          AND (only_user IS NULL OR c.user_id OPERATOR(pg_catalog.=) only_user)
          AND NOT EXISTS (SELECT 1 FROM public.habit_checkins y
                          WHERE y.user_id OPERATOR(pg_catalog.=) c.user_id AND y.template_id OPERATOR(pg_catalog.=) c.template_id
                            AND y.checkin_date OPERATOR(pg_catalog.=) c.completed_date)
    ) e
    WHERE from_day OPERATOR(pg_catalog.<=) to_day
    GROUP BY 1, 2, 3
    $fn$;
COMMENT ON FUNCTION habit.weekly_values(date, date, text, uuid) IS
    'Per user, habit counted from check-ins and week of [from_day, to_day] with an entry: the week''s value (check-ins'' sum; habit.done_value for a day done without any) (sql/functions/weekly_counts.sql, issue 32).';

-- Weekly counts that grow with changes (issue 20) ---------------------------------------------
-- `habit weekly-counts --store --incremental` recomputes only the (user, week) pairs whose counts may have changed since
-- its last run, from a dirty set the database keeps itself, so that writes by the worker,
-- psql, Supabase or an account deletion all count.
--
-- Why a trigger-maintained dirty set and not the sync change records (functions/sync.sql): the change
-- records stamp a row with a sequence number but do not say which days an update moved a row
-- away from (a completion moved to another date, a period whose end moved), cascaded deletions
-- of periods have no tombstones of their own, and "claim" would need a per-convention
-- watermark over sequences that commit out of order. A row of days per change, deleted by
-- the run that recomputes them, is exact and needs no watermark.
--
-- Marks are day ranges (not weeks) so that one mark serves both week conventions' runs
-- and any --from/--to: a run maps the days to its weeks. They are recorded only for the
-- conventions that have an incremental state (habit.weekly_counts_state), one mark per
-- convention, so a database where nobody runs --incremental keeps no marks at all. The
-- state and the dirty set: habit.weekly_counts_state, habit.weekly_counts_dirty.

-- How many days past a completion's week it can change what is due: the longest block of the
-- habit's times_in_days periods (sql/0034), else 0. Asked only where weekly counts are tracked.
CREATE OR REPLACE FUNCTION habit.quota_reach(p_user uuid, p_template uuid) RETURNS integer
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT coalesce(max((p.schedule ->> 'days')::integer), 0) FROM public.habit_periods p
    WHERE p.user_id = p_user AND p.template_id = p_template AND p.schedule ->> 'type' = 'times_in_days'
    $fn$;
COMMENT ON FUNCTION habit.quota_reach(uuid, uuid) IS
    'The longest block of the habit''s times_in_days periods, else 0: how far past its week a completion can change the due days (sql/0034).';

-- Marks days of a user dirty, for each convention being tracked (none: nothing is written).
-- Which days a changed row may change, generously (a mark only costs a recomputation):
--   completion, skip on D   D − 6 … D + 6: its week in either convention, and every run week
--                           overlapping the user's week of D, whose times_per_week target
--                           (habit.week_target_met_on) the row may meet or unmeet; for a
--                           habit with a times_in_days period, up to D + 6 + its longest block
--                           (habit.quota_reach, sql/0034), whose later days it may make due or not.
--   period                  from the UTC date of started_at − 2 (a local date is within a
--                           day of the UTC date) to that of ended_at + 3 (period_on_days ends
--                           at L + 2 at most), unbounded when open: its on-days and due days,
--                           and those of the earlier periods it cuts (segments, above).
--   habit inserted/deleted  the whole user: a user exists for the batch while they have a
--                           habit or a profile, with a row for every week of the range.
--   profile changed         the whole user: zone and week decide every local date and week.
-- A habit's schedule and activity changes write its periods (sql/triggers/habit_templates.sql),
-- which mark. TRUNCATE marks nothing (documented: run a full --store after one). Called by the
-- row-level triggers of sql/triggers/: habit_completions, habit_skips, habit_periods,
-- habit_templates, profiles; those of completions and skips only when tracking is on.
CREATE OR REPLACE FUNCTION habit.weekly_counts_mark(p_user uuid, p_days daterange) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        INSERT INTO habit.weekly_counts_dirty (week_starts_on, user_id, days)
        SELECT s.week_starts_on, p_user, p_days FROM habit.weekly_counts_state s
        WHERE p_user IS NOT NULL AND NOT isempty(p_days);
    END
    $fn$;
COMMENT ON FUNCTION habit.weekly_counts_mark(uuid, daterange) IS
    'Marks days of a user dirty for every week convention an incremental weekly-counts run tracks (none: nothing).';

-- The run's side ------------------------------------------------------------------------------
-- Starts marking for a convention: waits for every writer in flight on the tables that mark
-- (SHARE conflicts with their ROW EXCLUSIVE) so that none of them committed a change that
-- its trigger did not mark because the state row did not exist yet; after this commits,
-- every change is marked, and the first run (a full one) sees everything before. A function
-- because LOCK in SHARE mode needs privileges the batch role does not have.
CREATE OR REPLACE FUNCTION habit.weekly_counts_start_tracking(p_week_starts_on text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF p_week_starts_on IS NULL OR p_week_starts_on NOT IN ('monday', 'sunday') THEN
            RAISE EXCEPTION 'week_start must be monday or sunday' USING ERRCODE = '22023';
        END IF;
        IF EXISTS (SELECT 1 FROM habit.weekly_counts_state WHERE week_starts_on = p_week_starts_on) THEN
            RETURN false;
        END IF;
        -- On a Citus coordinator Citus sends the LOCK to every node as this function's owner,
        -- so it also waits for the writers that run on a worker node (the delegated creates).
        -- A caller that became its role by SET LOCAL ROLE there would send that role instead,
        -- which may not take the lock: `habit weekly-counts` uses set_config('role', …).
        LOCK TABLE public.habit_completions, public.habit_skips, public.habit_periods, public.habit_templates, public.profiles IN SHARE MODE;
        INSERT INTO habit.weekly_counts_state (week_starts_on) VALUES (p_week_starts_on) ON CONFLICT DO NOTHING;
        RETURN true;
    END
    $fn$;
COMMENT ON FUNCTION habit.weekly_counts_start_tracking(text) IS
    'Starts recording dirty days for a week convention (waits for the writers in flight); false when it already was (sql/0015).';

-- "Today" moved: a closed period's on-days end at least(U, today) (habit.period_on_days), so
-- the users with a period ending near or after the last run get the days between the last
-- run's local date and this one's marked, in their zone; users whose local date did not
-- change get nothing. Open periods do not depend on today ([first, ∞)).
-- SECURITY INVOKER: the batch role reads every user's periods and profiles and writes the
-- dirty set, which its run then claims. On Citus a transaction may not touch shards written by
-- another role (the owner's, had this been SECURITY DEFINER).
CREATE OR REPLACE FUNCTION habit.weekly_counts_mark_days_passed(p_week_starts_on text, p_last_run timestamptz) RETURNS bigint
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    WITH marked AS (
        INSERT INTO habit.weekly_counts_dirty (week_starts_on, user_id, days)
        SELECT p_week_starts_on, u.user_id,
               daterange(habit.local_day(p_last_run, u.tz, u.ds) - 1, habit.local_day(now(), u.tz, u.ds) + 2, '[)')
        FROM (SELECT DISTINCT p.user_id, coalesce(z.timezone, 'UTC') AS tz, coalesce(z.day_starts_at, '00:00') AS ds
              FROM public.habit_periods p LEFT JOIN public.profiles z ON z.user_id = p.user_id
              WHERE p.ended_at IS NOT NULL AND p.ended_at > p_last_run - interval '3 days') u
        WHERE habit.local_day(p_last_run, u.tz, u.ds) <> habit.local_day(now(), u.tz, u.ds)
        RETURNING 1
    )
    SELECT count(*) FROM marked
    $fn$;
