-- 0003: weekly completion counts (the batch job's function and summary table) and the
-- admin schema's views for people working in psql.

-- The first day of the week holding `day`: weeks start on Monday (ISO day 1) or Sunday (7).
CREATE FUNCTION habit.week_start(day date, start_isodow integer) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$ SELECT day - ((extract(isodow FROM day)::integer - start_isodow + 7) % 7) $fn$;
COMMENT ON FUNCTION habit.week_start(date, integer) IS
    'First day of the week containing day; start_isodow is 1 for Monday weeks, 7 for Sunday weeks.';

-- 'monday' → 1, 'sunday' → 7 (ISO day numbers); anything else is an error rather than a
-- silent default, for admins calling the functions below by hand.
CREATE FUNCTION habit.week_start_isodow(week_start_day text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$
    BEGIN
        IF week_start_day = 'monday' THEN
            RETURN 1;
        ELSIF week_start_day = 'sunday' THEN
            RETURN 7;
        END IF;
        RAISE EXCEPTION 'week start must be ''monday'' or ''sunday'', not %', quote_literal(week_start_day)
            USING ERRCODE = 'invalid_parameter_value';
    END
    $fn$;
COMMENT ON FUNCTION habit.week_start_isodow(text) IS 'ISO day number of a week start: monday → 1, sunday → 7; anything else raises 22023.';

-- One set-based query for every user (or one) and every week overlapping [from_day, to_day]:
--   completions          completion rows dated in the week
--   days_with_completion distinct dates of the week with at least one completion
--   active_habit_days    sum over the week's days of the habits active that day: a habit is
--                        active from the local date of activated_at through the local date
--                        of deactivated_at (inclusive), in the user's time zone
--   completion_rate      completions / active_habit_days (4 decimals), NULL when 0
-- "Every user" is every user with a habit or a profile. Rows come sorted by user, week.
CREATE FUNCTION habit.weekly_counts(from_day date, to_day date, week_start_day text, only_user uuid DEFAULT NULL)
    RETURNS TABLE (user_id uuid, week_start date, completions bigint, days_with_completion bigint,
                   active_habit_days bigint, completion_rate numeric)
    LANGUAGE sql STABLE
    AS $fn$
    WITH bounds AS (
        SELECT habit.week_start(from_day, habit.week_start_isodow(week_start_day)) AS first_week,
               habit.week_start(to_day, habit.week_start_isodow(week_start_day)) AS last_week,
               habit.week_start_isodow(week_start_day) AS start_isodow
        WHERE from_day <= to_day
    ),
    weeks AS (
        SELECT (first_week + 7 * n) AS week_start
        FROM bounds, generate_series(0, (last_week - first_week) / 7) AS n
    ),
    users AS (
        SELECT t.user_id FROM public.habit_templates t WHERE only_user IS NULL OR t.user_id = only_user
        UNION
        SELECT p.user_id FROM public.profiles p WHERE only_user IS NULL OR p.user_id = only_user
    ),
    zones AS (
        SELECT u.user_id, coalesce(p.timezone, 'UTC') AS tz
        FROM users u LEFT JOIN public.profiles p ON p.user_id = u.user_id
    ),
    completed AS (
        SELECT c.user_id, habit.week_start(c.completed_date, b.start_isodow) AS week_start,
               count(*) AS completions, count(DISTINCT c.completed_date) AS days_with_completion
        FROM public.habit_completions c, bounds b
        WHERE c.completed_date >= b.first_week AND c.completed_date < b.last_week + 7
          AND (only_user IS NULL OR c.user_id = only_user)
        GROUP BY 1, 2
    ),
    spans AS (
        SELECT t.user_id, habit.local_date(t.activated_at, z.tz) AS first_day,
               coalesce(habit.local_date(t.deactivated_at, z.tz), 'infinity'::date) AS last_day
        FROM public.habit_templates t JOIN zones z ON z.user_id = t.user_id
    ),
    -- A habit deactivated before its activation day (scheduled, then cancelled) is never active.
    live_spans AS (SELECT * FROM spans WHERE first_day <= last_day),
    active AS (
        SELECT s.user_id, w.week_start,
               sum(least(w.week_start + 6, s.last_day) - greatest(w.week_start, s.first_day) + 1) AS active_habit_days
        FROM live_spans s JOIN weeks w ON s.first_day <= w.week_start + 6 AND s.last_day >= w.week_start
        GROUP BY 1, 2
    )
    SELECT z.user_id, w.week_start,
           coalesce(c.completions, 0), coalesce(c.days_with_completion, 0),
           coalesce(a.active_habit_days, 0)::bigint,
           CASE WHEN coalesce(a.active_habit_days, 0) = 0 THEN NULL
                ELSE round(coalesce(c.completions, 0)::numeric / a.active_habit_days, 4) END
    FROM zones z CROSS JOIN weeks w
    LEFT JOIN completed c ON c.user_id = z.user_id AND c.week_start = w.week_start
    LEFT JOIN active a ON a.user_id = z.user_id AND a.week_start = w.week_start
    ORDER BY z.user_id, w.week_start
    $fn$;
COMMENT ON FUNCTION habit.weekly_counts(date, date, text, uuid) IS
    'Weekly completion counts per user and week overlapping [from_day, to_day]; see sql/0003 for each column''s rule.';

CREATE TABLE public.weekly_completion_counts (
    user_id              uuid NOT NULL,
    week_start           date NOT NULL,
    completions          integer NOT NULL CHECK (completions >= 0),
    days_with_completion integer NOT NULL CHECK (days_with_completion BETWEEN 0 AND 7),
    active_habit_days    integer NOT NULL CHECK (active_habit_days >= 0),
    completion_rate      numeric(10, 4) CHECK (completion_rate >= 0),
    computed_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, week_start)
);
COMMENT ON TABLE public.weekly_completion_counts IS 'Stored results of habit weekly-counts --store (one row per user and week).';
COMMENT ON COLUMN public.weekly_completion_counts.user_id IS 'The user.';
COMMENT ON COLUMN public.weekly_completion_counts.week_start IS 'First day of the week (a Monday or a Sunday, per the run''s --week-start).';
COMMENT ON COLUMN public.weekly_completion_counts.completions IS 'Completion rows dated in the week.';
COMMENT ON COLUMN public.weekly_completion_counts.days_with_completion IS 'Days of the week with at least one completion.';
COMMENT ON COLUMN public.weekly_completion_counts.active_habit_days IS 'Sum over the week''s days of the habits active that day (user''s time zone).';
COMMENT ON COLUMN public.weekly_completion_counts.completion_rate IS 'completions / active_habit_days; NULL when no habit was active.';
COMMENT ON COLUMN public.weekly_completion_counts.computed_at IS 'When the row last changed.';

ALTER TABLE public.weekly_completion_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.weekly_completion_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY weekly_completion_counts_select_own ON public.weekly_completion_counts
    FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY weekly_completion_counts_batch_all ON public.weekly_completion_counts
    FOR ALL TO habit_batch USING (true) WITH CHECK (true);
CREATE POLICY weekly_completion_counts_admin_read ON public.weekly_completion_counts
    FOR SELECT TO habit_admin USING (true);
GRANT SELECT ON public.weekly_completion_counts TO authenticated, habit_admin, service_role;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.weekly_completion_counts TO habit_batch;
GRANT EXECUTE ON FUNCTION habit.week_start(date, integer), habit.week_start_isodow(text), habit.weekly_counts(date, date, text, uuid)
    TO habit_batch, habit_admin, service_role;
REVOKE EXECUTE ON FUNCTION habit.weekly_counts(date, date, text, uuid) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- admin: answers to the questions an admin asks, for psql. Views run with the invoker's
-- rights (security_invoker), so row-level security applies to whoever reads them, and only
-- habit_admin (and superusers) may use the schema at all.
CREATE SCHEMA admin;
COMMENT ON SCHEMA admin IS 'Views and functions for admins in psql (grant habit_admin to your login role).';
REVOKE ALL ON SCHEMA admin FROM PUBLIC;
GRANT USAGE ON SCHEMA admin TO habit_admin;

CREATE VIEW admin.habits_overview WITH (security_invoker = true) AS
SELECT t.user_id, t.id AS habit_id, t.name, t.is_active, t.activated_at, t.deactivated_at,
       count(c.id) AS completions, max(c.completed_date) AS last_completed_date
FROM public.habit_templates t
LEFT JOIN public.habit_completions c ON c.user_id = t.user_id AND c.template_id = t.id
GROUP BY t.user_id, t.id;
COMMENT ON VIEW admin.habits_overview IS 'Every habit of every user with its completion count and last completion date.';

CREATE VIEW admin.user_activity WITH (security_invoker = true) AS
WITH users AS (
    SELECT user_id FROM public.habit_templates UNION SELECT user_id FROM public.profiles
)
SELECT u.user_id,
       coalesce(p.timezone, 'UTC') AS timezone,
       (SELECT count(*) FROM public.habit_templates t WHERE t.user_id = u.user_id) AS habits,
       (SELECT count(*) FROM public.habit_templates t WHERE t.user_id = u.user_id AND t.is_active) AS active_habits,
       last.last_completed_date,
       habit.local_date(now(), coalesce(p.timezone, 'UTC')) - last.last_completed_date AS days_since_last_completion
FROM users u
LEFT JOIN public.profiles p ON p.user_id = u.user_id
LEFT JOIN LATERAL (SELECT max(c.completed_date) AS last_completed_date
                   FROM public.habit_completions c WHERE c.user_id = u.user_id) last ON true;
COMMENT ON VIEW admin.user_activity IS
    'Per user: time zone, habits, last completion and days since it (in the user''s zone; NULL if never).';

CREATE VIEW admin.daily_totals WITH (security_invoker = true) AS
SELECT c.completed_date, count(*) AS completions, count(DISTINCT c.user_id) AS users
FROM public.habit_completions c
GROUP BY c.completed_date;
COMMENT ON VIEW admin.daily_totals IS 'Completions and distinct users per calendar date.';

CREATE FUNCTION admin.inactive_users(days integer) RETURNS SETOF admin.user_activity
    LANGUAGE sql STABLE
    AS $fn$
        SELECT * FROM admin.user_activity a
        WHERE a.days_since_last_completion IS NULL OR a.days_since_last_completion >= days
        ORDER BY a.days_since_last_completion DESC NULLS FIRST, a.user_id
    $fn$;
COMMENT ON FUNCTION admin.inactive_users(integer) IS 'Users without a completion in the last `days` days of their own time zone (or ever).';

CREATE FUNCTION admin.user_week(target_user uuid, of_day date DEFAULT NULL, week_start_day text DEFAULT 'monday')
    RETURNS TABLE (day date, weekday text, active_habits bigint, completed bigint, completed_habits text)
    LANGUAGE sql STABLE
    AS $fn$
        WITH zone AS (SELECT coalesce((SELECT p.timezone FROM public.profiles p WHERE p.user_id = target_user), 'UTC') AS tz),
        first AS (
            SELECT habit.week_start(coalesce(of_day, habit.local_date(now(), zone.tz)),
                                    habit.week_start_isodow(week_start_day)) AS first_day
            FROM zone
        ),
        days AS (SELECT first.first_day + n AS day FROM first, generate_series(0, 6) AS n)
        SELECT d.day, to_char(d.day, 'Dy'),
               (SELECT count(*) FROM public.habit_templates t, zone
                WHERE t.user_id = target_user AND t.is_active AND habit.local_date(t.activated_at, zone.tz) <= d.day),
               (SELECT count(*) FROM public.habit_completions c WHERE c.user_id = target_user AND c.completed_date = d.day),
               (SELECT string_agg(t.name, ', ' ORDER BY t.sort_order NULLS LAST, t.name)
                FROM public.habit_completions c JOIN public.habit_templates t ON t.id = c.template_id AND t.user_id = c.user_id
                WHERE c.user_id = target_user AND c.completed_date = d.day)
        FROM days d ORDER BY d.day
    $fn$;
COMMENT ON FUNCTION admin.user_week(uuid, date, text) IS
    'A user''s week at a glance: per day the active habits, completions and the names completed (default: this week in the user''s zone).';

REVOKE EXECUTE ON FUNCTION admin.inactive_users(integer), admin.user_week(uuid, date, text) FROM PUBLIC;
GRANT SELECT ON admin.habits_overview, admin.user_activity, admin.daily_totals TO habit_admin;
GRANT EXECUTE ON FUNCTION admin.inactive_users(integer), admin.user_week(uuid, date, text) TO habit_admin;
