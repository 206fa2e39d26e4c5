-- 0007: each rule of the habit service written once, in the database, for every caller (the
-- worker's statements, admin.user_week, and anyone in psql). Before this the worker's SQL
-- spelled each of them out where it was needed: "a habit shows on a day" four times, the
-- future-date check four times, "after the last" (sort order, task position) three times.
--
--   habit.is_on_day           which habits a day shows            inlined SQL (see below)
--   habit.completion_refusal  may this completion be set/cleared  inlined SQL (see below)
--   habit.next_habit_sort_order  a new habit goes after the last  plpgsql, SET search_path
--   habit.next_task_position     a task goes after its date's last plpgsql, SET search_path
--
-- The two rules on the hot paths (day.get, completions.set, completions.toggle, week.counts)
-- are SQL functions without a SET clause, so that PostgreSQL inlines them: the plans are the
-- plans of the expressions written out (docs/schema.md, "search_path", has the measurements).
-- Like habit.local_date their bodies are therefore fully schema-qualified. Each parameter is
-- used once, which lets PostgreSQL inline them whatever the arguments are (now() included).

-- A habit is on a local date when it is active and its activation day (the local date of
-- activated_at in the user's zone) is on or before that date. day.get lists these habits,
-- week.counts counts them, completing needs it, admin.user_week shows it.
CREATE FUNCTION habit.is_on_day(is_active boolean, activated_at timestamptz, day date, zone text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$ SELECT is_active AND (habit.local_date(activated_at, zone) OPERATOR(pg_catalog.<=) day) $fn$;
COMMENT ON FUNCTION habit.is_on_day(boolean, timestamptz, date, text) IS
    'Whether a habit shows on local date day: active, and its activation day in zone on or before day.';

-- Why a completion may not be set (completing) or cleared (not completing) on day, or NULL
-- when it may: 'future_date' when day is after the user's today (either way), else
-- 'habit_not_active' when completing a habit that is not on that day (habit.is_on_day).
-- Removing a completion of a deactivated habit stays allowed. The values are the protocol's
-- error reasons (docs/protocol.md); the worker maps them to its errors in one place.
CREATE FUNCTION habit.completion_refusal(completing boolean, day date, today date, on_day boolean) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN (day OPERATOR(pg_catalog.>) today) THEN 'future_date'
                WHEN completing AND NOT on_day THEN 'habit_not_active' END
    $fn$;
COMMENT ON FUNCTION habit.completion_refusal(boolean, date, date, boolean) IS
    'Why a completion on day may not be set (completing) or cleared: future_date, habit_not_active, or NULL when it may.';

-- The sort_order of a habit created without one: after the user's last (1 for the first),
-- at most the largest integer. PL/pgSQL keeps its plan per session (a SQL function reading a
-- table is never inlined and would be planned on every call).
CREATE FUNCTION habit.next_habit_sort_order(acting_user uuid) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        last_order integer;
    BEGIN
        SELECT max(h.sort_order) INTO last_order FROM public.habit_templates h WHERE h.user_id = acting_user;
        RETURN least(coalesce(last_order, 0)::bigint + 1, 2147483647)::integer;
    END
    $fn$;
COMMENT ON FUNCTION habit.next_habit_sort_order(uuid) IS
    'sort_order for a new habit of acting_user: after the last one (1 for the first), at most 2147483647.';

-- The position of a task placed on day (NULL = the inbox) without one: after the last task of
-- that date (1 for the first), at most the largest integer. Two statements rather than
-- `scheduled_date IS NOT DISTINCT FROM day`, so each reads tasks_user_date_position_idx.
CREATE FUNCTION habit.next_task_position(acting_user uuid, day date) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        last_position integer;
    BEGIN
        IF day IS NULL THEN
            SELECT max(t.position) INTO last_position FROM public.tasks t
            WHERE t.user_id = acting_user AND t.scheduled_date IS NULL;
        ELSE
            SELECT max(t.position) INTO last_position FROM public.tasks t
            WHERE t.user_id = acting_user AND t.scheduled_date = day;
        END IF;
        RETURN least(coalesce(last_position, 0)::bigint + 1, 2147483647)::integer;
    END
    $fn$;
COMMENT ON FUNCTION habit.next_task_position(uuid, date) IS
    'position for a task of acting_user placed on day (NULL = inbox): after that date''s last task (1 for the first), at most 2147483647.';

-- None is SECURITY DEFINER: row-level security applies to the caller. EXECUTE only to the
-- roles that call them (functions get it from PUBLIC by default).
REVOKE EXECUTE ON FUNCTION habit.is_on_day(boolean, timestamptz, date, text),
    habit.completion_refusal(boolean, date, date, boolean),
    habit.next_habit_sort_order(uuid), habit.next_task_position(uuid, date)
    FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.is_on_day(boolean, timestamptz, date, text),
    habit.completion_refusal(boolean, date, date, boolean)
    TO authenticated, service_role, habit_admin;
GRANT EXECUTE ON FUNCTION habit.next_habit_sort_order(uuid), habit.next_task_position(uuid, date)
    TO authenticated, service_role;

-- admin.user_week: the day's habits by habit.is_on_day ("same rule as day.get", now the same
-- function) and the zone by habit.user_time_zone. Same signature and results; CREATE OR
-- REPLACE keeps its grants and comment, and the SET clause is given again (a replacement
-- takes the new definition's settings).
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
        days AS (SELECT first.first_day + n AS day FROM first, generate_series(0, 6) AS n)
        SELECT d.day, to_char(d.day, 'Dy'),
               (SELECT count(*) FROM public.habit_templates t, zone
                WHERE t.user_id = target_user AND habit.is_on_day(t.is_active, t.activated_at, d.day, zone.tz)),
               (SELECT count(*) FROM public.habit_completions c WHERE c.user_id = target_user AND c.completed_date = d.day),
               (SELECT string_agg(t.name, ', ' ORDER BY t.sort_order NULLS LAST, t.name)
                FROM public.habit_completions c JOIN public.habit_templates t ON t.id = c.template_id AND t.user_id = c.user_id
                WHERE c.user_id = target_user AND c.completed_date = d.day)
        FROM days d ORDER BY d.day
    $fn$;
