-- Check-ins, a day's value and notes (sql/migrations/0029; docs/schema.md, "Check-ins").
--
-- Current-state file: applied again by `habit migrate` whenever this file changes (docs/schema.md,
-- "Migrations"). A changed signature or return type needs a DROP in a versioned migration first.
--
-- A day's value is the sum of its check-ins. A day with check-ins is done exactly when the value
-- meets the habit's target (habit.value_meets: at least, or at most, the target): its
-- habit_completions row follows them (habit.checkin_day_follow, called by habit_checkins' AFTER
-- trigger), and a completion written while they do not meet an at-least target (a toggle) adds a
-- check-in of the rest (habit_completions' trigger; over an at-most target it is refused, HB007).
-- A day without check-ins is done when it has a completion (a plain toggle: its value is then
-- habit.done_value, the target, or 0 for an at-most habit, sql/0031).
-- The worker's writers below are SECURITY INVOKER: row-level security and the triggers apply as
-- to any writer, and the triggers are the one place of the rules.

SET LOCAL check_function_bodies = off;

-- The rules of a day's value, one function each (sql/0031), inlined into their callers (no SET
-- clause, schema-qualified).
-- Whether a habit's days are counted from check-ins: a measurable habit, a target other than 1,
-- or an at-most target (whose kept day says how little).
CREATE OR REPLACE FUNCTION habit.is_counted(kind text, target numeric, target_type text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT kind OPERATOR(pg_catalog.=) 'measurable' OR target OPERATOR(pg_catalog.<>) 1::pg_catalog.numeric
           OR target_type OPERATOR(pg_catalog.=) 'at_most'
    $fn$;
COMMENT ON FUNCTION habit.is_counted(text, numeric, text) IS
    'Whether a habit''s days are counted from check-ins: measurable, a target other than 1, or an at-most target (sql/0029, sql/0031).';

-- Whether a day's check-ins (their sum) meet the target.
CREATE OR REPLACE FUNCTION habit.value_meets(value numeric, target numeric, target_type text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN target_type OPERATOR(pg_catalog.=) 'at_most' THEN value OPERATOR(pg_catalog.<=) target
                ELSE value OPERATOR(pg_catalog.>=) target END
    $fn$;
COMMENT ON FUNCTION habit.value_meets(numeric, numeric, text) IS
    'Whether a day''s value meets the target: >= target (at_least), <= target (at_most) (sql/0031).';

-- The value of a day done without check-ins (a plain toggle): the target (at least), 0 (at most:
-- kept, nothing taken).
CREATE OR REPLACE FUNCTION habit.done_value(target numeric, target_type text) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN target_type OPERATOR(pg_catalog.=) 'at_most' THEN 0::pg_catalog.numeric ELSE target END
    $fn$;
COMMENT ON FUNCTION habit.done_value(numeric, text) IS
    'The value of a day done without check-ins: the target (at_least), 0 (at_most) (sql/0031).';

-- The day's completion row after a check-in of (p_user, p_template, p_day) was added or grew
-- (p_added: for an at-least target the row may only appear) or was removed or shrank (it may
-- only go). For an at-most target the row follows whichever way: present exactly when the day
-- has check-ins within the target (the last one removed, the day is no longer entered). A
-- weekly target: the week's (habit.week_follow).
CREATE OR REPLACE FUNCTION habit.checkin_day_follow(p_user uuid, p_template uuid, p_day date, p_added boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_target numeric;
        v_type text;
        v_total numeric;
        v_count bigint;
        v_done boolean;
        v_want boolean;
        v_period text;
    BEGIN
        SELECT t.target, t.target_type, t.target_period INTO v_target, v_type, v_period FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user;
        IF NOT FOUND THEN
            RETURN;
        ELSIF v_period = 'week' THEN
            PERFORM habit.week_follow(p_user, p_template, p_day, p_day, NULL);
            RETURN;
        END IF;
        SELECT coalesce(sum(i.value), 0), count(*),
               EXISTS (SELECT 1 FROM public.habit_completions c
                       WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day)
        INTO v_total, v_count, v_done
        FROM public.habit_checkins i
        WHERE i.user_id = p_user AND i.template_id = p_template AND i.checkin_date = p_day;
        IF v_type = 'at_most' THEN
            v_want := v_count > 0 AND habit.value_meets(v_total, v_target, v_type);
            IF v_want AND NOT v_done THEN
                INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (p_user, p_template, p_day)
                ON CONFLICT (user_id, template_id, completed_date) DO NOTHING;
            ELSIF v_done AND NOT v_want THEN
                DELETE FROM public.habit_completions c WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day;
            END IF;
        ELSIF p_added AND v_total >= v_target AND NOT v_done THEN
            INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (p_user, p_template, p_day)
            ON CONFLICT (user_id, template_id, completed_date) DO NOTHING;
        ELSIF NOT p_added AND v_total < v_target AND v_done THEN
            DELETE FROM public.habit_completions c WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day;
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.checkin_day_follow(uuid, uuid, date, boolean) IS
    'Keeps a day''s habit_completions row to its check-ins: at least, added when their sum meets the target (p_added), removed when it falls below (not p_added); at most, present exactly when there are check-ins and their sum is within the target. Called by trigger habit_checkins_after.';

-- Weekly targets (sql/0033): a week's one completion lies on the day the week was met.
-- The day the check-ins of the user's week [p_week, p_week + 7) meet a weekly target: at least,
-- the first day on which their running sum reaches it; at most, the first day with a check-in
-- while their sum stays within it. NULL: not met (or nothing entered).
CREATE OR REPLACE FUNCTION habit.week_value_met_on(p_user uuid, p_template uuid, p_week date, p_target numeric, p_type text) RETURNS date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        RETURN (SELECT CASE WHEN p_type = 'at_most' THEN CASE WHEN sum(d.value) <= p_target THEN min(d.day) END
                            ELSE min(d.day) FILTER (WHERE d.running >= p_target) END
                FROM (SELECT i.checkin_date AS day, sum(i.value) AS value,
                             sum(sum(i.value)) OVER (ORDER BY i.checkin_date) AS running
                      FROM public.habit_checkins i
                      WHERE i.user_id = p_user AND i.template_id = p_template
                        AND i.checkin_date >= p_week AND i.checkin_date < p_week + 7
                      GROUP BY i.checkin_date) d);
    END
    $fn$;
COMMENT ON FUNCTION habit.week_value_met_on(uuid, uuid, date, numeric, text) IS
    'The day a week''s check-ins meet a weekly target: at least, the first day their running sum reaches it; at most, the first day entered while their sum is within it; NULL when not met (sql/0033).';

-- The week of p_day of a weekly-target habit once its check-ins changed (on p_changed), or its
-- target, its type or the user's weeks (p_changed NULL). At least: one completion, on the day the
-- week was met (habit.week_value_met_on), or none. At most: none while the week is over the
-- target; within it, one on the first day with check-ins, and the days kept without any (a
-- toggle, a value of 0) keep theirs, unless it is p_changed's (its check-ins just went: it is no
-- longer entered). A completion on p_deleting is left to the caller deleting it (the completion
-- trigger's un-toggle). Nothing for a habit with a daily target. The completions written here
-- run their own trigger one level down, which applies no toggle rule.
CREATE OR REPLACE FUNCTION habit.week_follow(p_user uuid, p_template uuid, p_day date, p_changed date, p_deleting date) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_target numeric;
        v_type text;
        v_week date;
        v_want date;
        v_over boolean;
        v_have date[];
        v_keep date[];
    BEGIN
        SELECT t.target, t.target_type INTO v_target, v_type FROM public.habit_templates t
        WHERE t.id = p_template AND t.user_id = p_user AND t.target_period = 'week';
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_week := habit.week_start(p_day, habit.user_week_start_isodow(p_user));
        v_want := habit.week_value_met_on(p_user, p_template, v_week, v_target, v_type);
        v_over := v_type = 'at_most' AND (SELECT coalesce(sum(i.value), 0) FROM public.habit_checkins i
                                          WHERE i.user_id = p_user AND i.template_id = p_template
                                            AND i.checkin_date >= v_week AND i.checkin_date < v_week + 7) > v_target;
        -- The week's completions now, and those that stay: the day it was met, and at most
        -- (within the target) each day kept without check-ins but p_changed's.
        SELECT coalesce(array_agg(c.completed_date ORDER BY c.completed_date), '{}'),
               coalesce(array_agg(c.completed_date ORDER BY c.completed_date)
                            FILTER (WHERE c.completed_date = v_want
                                       OR (v_type = 'at_most' AND NOT v_over AND c.completed_date IS DISTINCT FROM p_changed
                                           AND NOT EXISTS (SELECT 1 FROM public.habit_checkins i
                                                           WHERE i.user_id = p_user AND i.template_id = p_template
                                                             AND i.checkin_date = c.completed_date))), '{}')
        INTO v_have, v_keep
        FROM public.habit_completions c
        WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date >= v_week AND c.completed_date < v_week + 7;
        -- Most check-ins change nothing here (the week was met earlier, or is still short): no write.
        IF v_have = v_keep AND (v_want IS NULL OR v_want = ANY (v_have)) THEN
            RETURN;
        END IF;
        IF v_have <> v_keep THEN
            DELETE FROM public.habit_completions c
            WHERE c.user_id = p_user AND c.template_id = p_template
              AND c.completed_date = ANY (v_have) AND NOT c.completed_date = ANY (v_keep)
              AND c.completed_date IS DISTINCT FROM p_deleting;
        END IF;
        IF v_want IS NOT NULL AND NOT v_want = ANY (v_have) THEN
            INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (p_user, p_template, v_want)
            ON CONFLICT (user_id, template_id, completed_date) DO NOTHING;
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.week_follow(uuid, uuid, date, date, date) IS
    'Keeps the week of p_day of a weekly-target habit to its check-ins: at least, one completion on the day it was met; at most, none when over, else the first day with check-ins and the days kept without any (but p_changed''s) (sql/0033).';

-- A completion written by a writer (a toggle, completions.set "done", a direct insert) on p_day
-- of a weekly-target habit. At least, it says the week was met by that day: refused when it was
-- met earlier (HB008: a week is met once), else a check-in of the rest (the target less the
-- week's sum up to p_day) makes p_day the day, and the week's later completion goes. At most, it
-- enters the day kept at 0: refused when the week's check-ins are over the target (HB007).
-- Returns whether a completion went (the caller's streak state changed under it).
CREATE OR REPLACE FUNCTION habit.week_toggle(p_user uuid, p_template uuid, p_day date, p_target numeric, p_type text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_week date := habit.week_start(p_day, habit.user_week_start_isodow(p_user));
        v_first date;
        v_sum numeric;
    BEGIN
        IF p_type = 'at_most' THEN
            SELECT coalesce(sum(i.value), 0) INTO v_sum FROM public.habit_checkins i
            WHERE i.user_id = p_user AND i.template_id = p_template AND i.checkin_date >= v_week AND i.checkin_date < v_week + 7;
            IF v_sum > p_target THEN
                RAISE EXCEPTION 'habit % is over its weekly target in the week of %: % taken, at most % allowed', p_template, v_week, v_sum, p_target
                    USING ERRCODE = 'HB007', TABLE = 'habit_completions', SCHEMA = 'public';
            END IF;
            RETURN false;
        END IF;
        -- (Two statements: a function that reads a table, called inside a query of another,
        -- is a query inside a query on a shard, which Citus refuses.)
        v_first := habit.week_value_met_on(p_user, p_template, v_week, p_target, p_type);
        SELECT least(v_first, min(c.completed_date)) INTO v_first
        FROM public.habit_completions c
        WHERE c.user_id = p_user AND c.template_id = p_template
          AND c.completed_date >= v_week AND c.completed_date < v_week + 7 AND c.completed_date <> p_day;
        IF v_first < p_day THEN
            RAISE EXCEPTION 'habit % met its weekly target on % already', p_template, v_first
                USING ERRCODE = 'HB008', DETAIL = to_char(v_first, 'YYYY-MM-DD'), TABLE = 'habit_completions', SCHEMA = 'public';
        END IF;
        SELECT coalesce(sum(i.value), 0) INTO v_sum FROM public.habit_checkins i
        WHERE i.user_id = p_user AND i.template_id = p_template AND i.checkin_date >= v_week AND i.checkin_date <= p_day;
        IF v_sum < p_target THEN
            INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value)
            VALUES (p_user, p_template, p_day, p_target - v_sum);
        END IF;
        DELETE FROM public.habit_completions c
        WHERE c.user_id = p_user AND c.template_id = p_template
          AND c.completed_date >= v_week AND c.completed_date < v_week + 7 AND c.completed_date <> p_day;
        RETURN FOUND;
    END
    $fn$;
COMMENT ON FUNCTION habit.week_toggle(uuid, uuid, date, numeric, text) IS
    'A completion written on p_day of a weekly-target habit: at least, HB008 when the week was met earlier, else a check-in of the rest and the week''s later completion goes; at most, HB007 when over; whether one went (sql/0033). Called by trigger habit_completions_before.';

-- The value of the user's week holding p_day of a weekly-target habit: its check-ins' sum;
-- NULL for a daily target. VOLATILE, so that a statement asking it after one of the writers
-- below (the worker's: SELECT …, habit.week_value(…) FROM habit.add_checkin(…)) reads their rows.
CREATE OR REPLACE FUNCTION habit.week_value(p_user uuid, p_template uuid, p_day date) RETURNS numeric
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_week date;
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user AND t.target_period = 'week') THEN
            RETURN NULL;
        END IF;
        v_week := habit.week_start(p_day, habit.user_week_start_isodow(p_user));
        RETURN (SELECT coalesce(sum(i.value), 0) FROM public.habit_checkins i
                WHERE i.user_id = p_user AND i.template_id = p_template AND i.checkin_date >= v_week AND i.checkin_date < v_week + 7);
    END
    $fn$;
COMMENT ON FUNCTION habit.week_value(uuid, uuid, date) IS
    'The check-ins'' sum of the user''s week holding p_day of a weekly-target habit; NULL for a daily target (sql/0033).';

-- A day of one habit as the worker answers it: its value (check-ins' sum; a completion without
-- check-ins counts habit.done_value), how many check-ins, and its state. PL/pgSQL for its cached
-- plans: as a SQL function with a SET clause (not inlined) it was planned on every call, 0.9 ms.
-- All NULL when the habit is not p_user's.
CREATE OR REPLACE FUNCTION habit.day_value(p_user uuid, p_template uuid, p_day date,
                                           OUT value numeric, OUT checkins integer, OUT state text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_target numeric;
        v_type text;
        v_total numeric;
        v_done boolean;
    BEGIN
        SELECT t.target, t.target_type INTO v_target, v_type FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        SELECT coalesce(sum(x.value), 0), count(*) INTO v_total, checkins FROM public.habit_checkins x
        WHERE x.user_id = p_user AND x.template_id = p_template AND x.checkin_date = p_day;
        v_done := EXISTS (SELECT 1 FROM public.habit_completions y
                          WHERE y.user_id = p_user AND y.template_id = p_template AND y.completed_date = p_day);
        value := CASE WHEN checkins = 0 AND v_done THEN habit.done_value(v_target, v_type) ELSE v_total END;
        state := CASE WHEN v_done THEN 'done'
                      WHEN EXISTS (SELECT 1 FROM public.habit_skips y
                                   WHERE y.user_id = p_user AND y.template_id = p_template AND y.skipped_date = p_day) THEN 'skipped'
                      ELSE 'none' END;
    END
    $fn$;
COMMENT ON FUNCTION habit.day_value(uuid, uuid, date) IS
    'A habit''s day: value (the check-ins'' sum; habit.done_value for a completion without check-ins), the number of check-ins, and state (done, skipped or none); all NULL when the habit is not the user''s.';

-- checkins.add: a check-in of p_value on p_day, replacing a skip of that day (checking in means
-- it was done, as completions.set "done" replaces a skip). With p_client_id, a retried add finds
-- its row and changes nothing (created false); the same client id on another habit, day or value
-- is HB002. No row when the habit is not p_user's. The rules are the triggers' (HB003-HB005,
-- HB001 past 100 a day); p_zone, a request's override, can only make them stricter.
CREATE OR REPLACE FUNCTION habit.add_checkin(p_user uuid, p_template uuid, p_day date, p_value numeric, p_at time,
                                             p_client_id text, p_zone text DEFAULT NULL)
    RETURNS TABLE (id uuid, created boolean, value numeric, checkins integer, state text)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_row public.habit_checkins;
        v_created boolean := false;
    BEGIN
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF p_zone IS NOT NULL OR coalesce(current_setting('habit.request_time_zone', true), '') <> '' THEN
            PERFORM set_config('habit.request_time_zone', coalesce(p_zone, ''), true);
        END IF;
        IF p_client_id IS NOT NULL THEN
            SELECT i.* INTO v_row FROM public.habit_checkins i WHERE i.user_id = p_user AND i.client_id = p_client_id;
        END IF;
        IF v_row.id IS NULL THEN
            DELETE FROM public.habit_skips s WHERE s.user_id = p_user AND s.template_id = p_template AND s.skipped_date = p_day;
            INSERT INTO public.habit_checkins AS i (user_id, template_id, checkin_date, value, at_time, client_id)
            VALUES (p_user, p_template, p_day, p_value, p_at, p_client_id)
            ON CONFLICT (user_id, client_id) DO NOTHING
            RETURNING i.* INTO v_row;
            v_created := v_row.id IS NOT NULL;
            IF NOT v_created THEN
                -- A concurrent add with the same client id committed first.
                SELECT i.* INTO v_row FROM public.habit_checkins i WHERE i.user_id = p_user AND i.client_id = p_client_id;
            END IF;
        END IF;
        IF NOT v_created AND (v_row.template_id, v_row.checkin_date, v_row.value, v_row.at_time)
                             IS DISTINCT FROM (p_template, p_day, p_value, p_at) THEN
            RAISE EXCEPTION 'client id % is another check-in''s', p_client_id USING ERRCODE = 'HB002';
        END IF;
        RETURN QUERY SELECT v_row.id, v_created, d.value, d.checkins, d.state FROM habit.day_value(p_user, p_template, v_row.checkin_date) d;
    END
    $fn$;
COMMENT ON FUNCTION habit.add_checkin(uuid, uuid, date, numeric, time, text, text) IS
    'checkins.add: a check-in (replacing the day''s skip); a retried client id changes nothing; returns the id and the day''s value, check-ins and state. No row when the habit is not the user''s.';

-- checkins.remove: the check-in's day afterwards; no row when it is not p_user's.
CREATE OR REPLACE FUNCTION habit.remove_checkin(p_user uuid, p_checkin uuid)
    RETURNS TABLE (template_id uuid, checkin_date date, value numeric, checkins integer, state text)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_template uuid;
        v_day date;
    BEGIN
        SELECT i.template_id, i.checkin_date INTO v_template, v_day FROM public.habit_checkins i
        WHERE i.user_id = p_user AND i.id = p_checkin;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        -- The habit first, as every writer of its days locks it (then the row, found again).
        PERFORM 1 FROM public.habit_templates t WHERE t.id = v_template AND t.user_id = p_user FOR NO KEY UPDATE;
        DELETE FROM public.habit_checkins i WHERE i.user_id = p_user AND i.id = p_checkin;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        RETURN QUERY SELECT v_template, v_day, d.value, d.checkins, d.state FROM habit.day_value(p_user, v_template, v_day) d;
    END
    $fn$;
COMMENT ON FUNCTION habit.remove_checkin(uuid, uuid) IS
    'checkins.remove: deletes the user''s check-in; returns its habit, day and the day''s value, check-ins and state; no row when it is not the user''s.';

-- completions.set with a value: the day's total becomes p_value (its check-ins replaced by one,
-- none for 0; a skip goes). 0 for an at-most habit enters the day as kept with nothing taken (a
-- completion without check-ins, sql/0031); for an at-least one it clears the day. No row when
-- the habit is not p_user's.
CREATE OR REPLACE FUNCTION habit.set_day_value(p_user uuid, p_template uuid, p_day date, p_value numeric, p_zone text DEFAULT NULL)
    RETURNS TABLE (value numeric, checkins integer, state text, changed boolean)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_before record;
        v_at_most boolean;
        v_weekly boolean;
    BEGIN
        SELECT t.target_type = 'at_most', t.target_period = 'week' INTO v_at_most, v_weekly FROM public.habit_templates t
        WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF p_zone IS NOT NULL OR coalesce(current_setting('habit.request_time_zone', true), '') <> '' THEN
            PERFORM set_config('habit.request_time_zone', coalesce(p_zone, ''), true);
        END IF;
        SELECT d.* INTO v_before FROM habit.day_value(p_user, p_template, p_day) d;
        IF v_before.value = p_value AND v_before.checkins = 1 AND v_before.state <> 'skipped' THEN
            RETURN QUERY SELECT v_before.value, v_before.checkins, v_before.state, false;
            RETURN;
        END IF;
        -- (The CASE in parentheses: PL/pgSQL ends an IF's condition at its first THEN.)
        IF p_value = 0 AND v_before.checkins = 0 AND v_before.state = (CASE WHEN v_at_most THEN 'done' ELSE 'none' END) THEN
            RETURN QUERY SELECT v_before.value, v_before.checkins, v_before.state, false;
            RETURN;
        END IF;
        DELETE FROM public.habit_skips s WHERE s.user_id = p_user AND s.template_id = p_template AND s.skipped_date = p_day;
        DELETE FROM public.habit_checkins i WHERE i.user_id = p_user AND i.template_id = p_template AND i.checkin_date = p_day;
        IF v_weekly THEN
            -- A weekly target (sql/0033): the week follows its check-ins (their trigger), and a
            -- completion of the day is the week's, not this day's to remove. 0 at most enters the
            -- day kept (a toggle).
            IF p_value > 0 THEN
                INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value) VALUES (p_user, p_template, p_day, p_value);
            ELSIF v_at_most AND NOT EXISTS (SELECT 1 FROM public.habit_completions c
                                            WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day) THEN
                -- (A plain VALUES insert: an INSERT … SELECT from the same table is not a
                -- single-shard statement to Citus, whose trigger could not then read.)
                INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (p_user, p_template, p_day);
            END IF;
            RETURN QUERY SELECT d.value, d.checkins, d.state, (d.value, d.checkins, d.state) IS DISTINCT FROM (v_before.value, v_before.checkins, v_before.state)
                         FROM habit.day_value(p_user, p_template, p_day) d;
            RETURN;
        END IF;
        -- A plain toggle's row (no check-ins) is not theirs to remove.
        DELETE FROM public.habit_completions c WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = p_day;
        IF p_value > 0 THEN
            INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value) VALUES (p_user, p_template, p_day, p_value);
        ELSIF v_at_most THEN
            INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (p_user, p_template, p_day);
        END IF;
        RETURN QUERY SELECT d.value, d.checkins, d.state, true FROM habit.day_value(p_user, p_template, p_day) d;
    END
    $fn$;
COMMENT ON FUNCTION habit.set_day_value(uuid, uuid, date, numeric, text) IS
    'completions.set with a value: the day''s check-ins become one of p_value (none for 0; an at-most habit''s day then kept at 0), a skip goes; returns the day''s value, check-ins, state and whether anything changed. No row when the habit is not the user''s.';

-- notes.set: p_note on the habit's day, or none (NULL or empty). No row when the habit is not
-- p_user's; else whether anything changed.
CREATE OR REPLACE FUNCTION habit.set_day_note(p_user uuid, p_template uuid, p_day date, p_note text)
    RETURNS TABLE (changed boolean)
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_count bigint;
    BEGIN
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF coalesce(p_note, '') = '' THEN
            DELETE FROM public.habit_day_notes n WHERE n.user_id = p_user AND n.template_id = p_template AND n.note_date = p_day;
        ELSE
            INSERT INTO public.habit_day_notes AS n (user_id, template_id, note_date, note) VALUES (p_user, p_template, p_day, p_note)
            ON CONFLICT (user_id, template_id, note_date) DO UPDATE SET note = excluded.note
            WHERE n.note IS DISTINCT FROM excluded.note;
        END IF;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        RETURN QUERY SELECT v_count > 0;
    END
    $fn$;
COMMENT ON FUNCTION habit.set_day_note(uuid, uuid, date, text) IS
    'notes.set: writes (or, for NULL or '''', deletes) the note of a habit''s day; whether anything changed. No row when the habit is not the user''s.';

-- A habit's target or its type changed: each day with check-ins is done exactly when they meet
-- the new one (two set-based statements over the habit's check-ins: events, not days). A day
-- without check-ins keeps its state: a plain toggle stays done (its value now habit.done_value).
-- A weekly target re-decides each week with events (habit.week_follow), as after a change of the
-- user's week start (profiles' trigger). Called by trigger habit_templates_after.
CREATE OR REPLACE FUNCTION habit.checkins_retarget(p_user uuid, p_template uuid, p_target numeric, p_type text) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_week date;
        v_weeks date[];
        v_wk integer;
    BEGIN
        IF EXISTS (SELECT 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user AND t.target_period = 'week') THEN
            -- A weekly target: each week with check-ins or a completion, once.
            v_wk := habit.user_week_start_isodow(p_user);
            -- The weeks first, then one call each (not a loop over an open query that writes).
            SELECT coalesce(array_agg(w.week ORDER BY w.week), '{}') INTO v_weeks
            FROM (SELECT habit.week_start(i.checkin_date, v_wk) AS week FROM public.habit_checkins i
                  WHERE i.user_id = p_user AND i.template_id = p_template
                  UNION
                  SELECT habit.week_start(c.completed_date, v_wk) FROM public.habit_completions c
                  WHERE c.user_id = p_user AND c.template_id = p_template) w;
            FOREACH v_week IN ARRAY v_weeks LOOP
                PERFORM habit.week_follow(p_user, p_template, v_week, NULL, NULL);
            END LOOP;
            RETURN;
        END IF;
        DELETE FROM public.habit_completions c
        USING (SELECT i.checkin_date FROM public.habit_checkins i
               WHERE i.user_id = p_user AND i.template_id = p_template
               GROUP BY i.checkin_date HAVING NOT habit.value_meets(sum(i.value), p_target, p_type)) d
        WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = d.checkin_date;
        INSERT INTO public.habit_completions (user_id, template_id, completed_date)
        SELECT p_user, p_template, d.checkin_date
        FROM (SELECT i.checkin_date FROM public.habit_checkins i
              WHERE i.user_id = p_user AND i.template_id = p_template
              GROUP BY i.checkin_date HAVING habit.value_meets(sum(i.value), p_target, p_type)) d
        WHERE NOT EXISTS (SELECT 1 FROM public.habit_completions c
                          WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = d.checkin_date)
        ORDER BY d.checkin_date
        ON CONFLICT (user_id, template_id, completed_date) DO NOTHING;
    END
    $fn$;
COMMENT ON FUNCTION habit.checkins_retarget(uuid, uuid, numeric, text) IS
    'After a habit''s target or its type changed: its days with check-ins get a completion exactly when their sum meets p_target (habit.value_meets). Called by trigger habit_templates_after.';
