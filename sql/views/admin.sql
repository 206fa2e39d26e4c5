-- The admin schema: answers to the questions an admin asks, for psql. Views run with the
-- invoker's rights (security_invoker), so row-level security applies to whoever reads them,
-- and only habit_admin (and superusers) may use the schema at all (sql/grants.sql).
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). CREATE OR REPLACE VIEW may add columns at
-- the end but not drop, rename or retype one: that needs a DROP VIEW in a versioned
-- migration first. The admin functions live here too, not in sql/functions:
-- admin.inactive_users returns admin.user_activity's rows, so the view must exist first.

CREATE OR REPLACE VIEW admin.habits_overview WITH (security_invoker = true) AS
SELECT t.user_id, t.id AS habit_id, t.name, t.is_active, t.activated_at, t.deactivated_at,
       count(c.id) AS completions, max(c.completed_date) AS last_completed_date
FROM public.habit_templates t
LEFT JOIN public.habit_completions c ON c.user_id = t.user_id AND c.template_id = t.id
GROUP BY t.user_id, t.id;
COMMENT ON VIEW admin.habits_overview IS 'Every habit of every user with its completion count and last completion date.';

CREATE OR REPLACE VIEW admin.user_activity WITH (security_invoker = true) AS
WITH users AS (
    SELECT user_id FROM public.habit_templates UNION SELECT user_id FROM public.profiles
)
SELECT u.user_id,
       coalesce(p.timezone, 'UTC') AS timezone,
       coalesce(h.habits, 0) AS habits,
       coalesce(h.active_habits, 0) AS active_habits,
       last.last_completed_date,
       habit.local_day(now(), coalesce(p.timezone, 'UTC'), coalesce(p.day_starts_at, '00:00')) - last.last_completed_date AS days_since_last_completion
FROM users u
LEFT JOIN public.profiles p ON p.user_id = u.user_id
-- Grouped per user and joined by user_id, not correlated or LATERAL: the shape a Citus
-- coordinator sends to the shards whatever the filter on top (admin.inactive_users).
LEFT JOIN (SELECT t.user_id, count(*) AS habits, count(*) FILTER (WHERE t.is_active) AS active_habits
           FROM public.habit_templates t GROUP BY t.user_id) h ON h.user_id = u.user_id
LEFT JOIN (SELECT c.user_id, max(c.completed_date) AS last_completed_date
           FROM public.habit_completions c GROUP BY c.user_id) last ON last.user_id = u.user_id;
COMMENT ON VIEW admin.user_activity IS
    'Per user: time zone, habits, last completion and days since it (in the user''s zone; NULL if never).';

CREATE OR REPLACE VIEW admin.daily_totals WITH (security_invoker = true) AS
SELECT c.completed_date, count(*) AS completions, count(DISTINCT c.user_id) AS users
FROM public.habit_completions c
GROUP BY c.completed_date;
COMMENT ON VIEW admin.daily_totals IS 'Completions and distinct users per calendar date.';

-- Users without a completion in the last `days` days of their own zone, or ever.
CREATE OR REPLACE FUNCTION admin.inactive_users(days integer) RETURNS SETOF admin.user_activity
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
        SELECT * FROM admin.user_activity a
        WHERE a.days_since_last_completion IS NULL OR a.days_since_last_completion >= days
        ORDER BY a.days_since_last_completion DESC NULLS FIRST, a.user_id
    $fn$;
COMMENT ON FUNCTION admin.inactive_users(integer) IS 'Users without a completion in the last `days` days of their own time zone (or ever).';

-- A user's week at a glance. active_habits: the habits on that day (habit.habit_days, the one
-- definition of "on"); the zone: habit.user_time_zone.
CREATE OR REPLACE FUNCTION admin.user_week(target_user uuid, of_day date DEFAULT NULL, week_start_day text DEFAULT 'monday')
    RETURNS TABLE (day date, weekday text, active_habits bigint, completed bigint, completed_habits text)
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
        WITH zone AS (SELECT habit.user_time_zone(target_user, NULL) AS tz),
        first AS (
            SELECT habit.week_start(coalesce(of_day, habit.user_today(target_user, NULL)),
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
COMMENT ON FUNCTION admin.user_week(uuid, date, text) IS
    'A user''s week at a glance: per day the active habits, completions and the names completed (default: this week in the user''s zone).';
