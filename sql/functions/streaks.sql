-- Streaks, rates and the calendar (issue 17), kept as runs (issue 29). The definitions are
-- those of docs/protocol.md ("Streaks, rates and the calendar"); "on", "due", "done" and
-- "skipped" are those of habit.habit_days_at (functions/history.sql).
--
--   habit.habit_slots, habit.habit_stats_scan   the reference: a habit's slots by scanning its
--                            days, and its stats from them (O(days); the property tests' judge,
--                            and the reads' fallback in the rare cases the runs cannot answer)
--   habit.stats_calendar     per day of a range: due, done, skipped and a level 0-4
--   the engine               habit.streak_*: a habit's slots counted by arithmetic over its
--                            segments, looking up its events only where they can matter
--   habit.streak_rebuild     a habit's runs from its events (O(events))
--   habit.streak_apply       the runs after one completion or skip changed (constant work)
--   habit.streak_stats       one habit's streaks, rates and totals from its runs
--   habit.habit_stats        streaks, rates and totals of one habit or of every habit on R
--   habit.current_streak(s)  the current streak (day.get's include)
--
-- What is stored (tables in sql/migrations/0018_lean_core.sql): per habit a state row
-- (unit, week, segments, totals) and its runs, the maximal sequences of kept slots with no
-- missed slot between, each with the misses of the gap after it and its first missed slot.
-- Both grow with completions and skips (a kept slot holds one; a week whose target is 0 is
-- neutral, docs/protocol.md), never with days: a habit created years back with nothing done
-- has a state row and no run. A run's kept slots, or a gap's missed ones, over any part of
-- it are counted without reading its days: due days by arithmetic per segment, less skipped
-- ones (habit.streak_open). Maintenance is row-level (sql/triggers/habit_completions.sql),
-- in the BEFORE trigger, where earlier rows of the statement are already in the table.
--
-- The reads are SECURITY INVOKER: the caller's role and claims apply, and with them
-- row-level security; every statement filters by the user. The maintenance is SECURITY
-- DEFINER: the derived tables are not writable by the users' roles.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

SET LOCAL check_function_bodies = off;

-- One habit's slots in [p_from, p_to] with today p_today, in unit p_unit:
--   'days'   one row per day the habit is on (habit.habit_days_at): 'neutral' when not due,
--            else 'kept' when done, 'excused' when skipped, 'missed' otherwise. Days the
--            habit is not on have no row (they are neutral).
--   'weeks'  one row per user week (profiles.week_start; slot = its first day) overlapping
--            [p_from, p_to] in which the habit is on on some day; the whole week is read, even
--            where it reaches outside [p_from, p_to]. With on_days the week's days on which the
--            habit is on, done and skipped the completions and skips dated on those days, and
--            target the `times` of the schedule in force on the last on-day when that is
--            times_per_week, else the number of due days of the week: 'neutral' when
--            target is 0 (nothing asked, as a day not due), 'kept' when
--            done ≥ target − skipped, else 'missed' (never excused).
-- The state is the day's or week's own: "the slot of R is not over" is the callers' business.
-- Built on habit.habit_days_at for the one habit (the one definition of on and due).
-- p_today = 'infinity' gives the final states: a day is on when a period overlaps it.
CREATE OR REPLACE FUNCTION habit.habit_slots(p_user uuid, p_template uuid, p_unit text, p_from date, p_to date, p_today date)
    RETURNS TABLE (slot date, state text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        wk integer := habit.user_week_start_isodow(p_user);
    BEGIN
        IF p_unit = 'days' THEN
            RETURN QUERY
            SELECT d.day,
                   CASE WHEN NOT d.due THEN 'neutral' WHEN d.done THEN 'kept' WHEN d.skipped THEN 'excused' ELSE 'missed' END
            FROM habit.habit_days_at(p_user, p_from, p_to, p_today, NULL, p_template) d
            ORDER BY d.day;
        ELSIF p_unit = 'weeks' THEN
            RETURN QUERY
            SELECT w.week,
                   CASE WHEN w.target = 0 THEN 'neutral' WHEN w.done >= w.target - w.skipped THEN 'kept' ELSE 'missed' END
            FROM (
                SELECT habit.week_start(d.day, wk) AS week,
                       count(*) FILTER (WHERE d.done) AS done,
                       count(*) FILTER (WHERE d.skipped) AS skipped,
                       CASE WHEN (array_agg(d.schedule ORDER BY d.day DESC))[1] ->> 'type' = 'times_per_week'
                            THEN ((array_agg(d.schedule ORDER BY d.day DESC))[1] ->> 'times')::bigint
                            ELSE count(*) FILTER (WHERE d.due) END AS target
                FROM habit.habit_days_at(p_user, habit.week_start(p_from, wk), habit.week_start(p_to, wk) + 6, p_today, NULL, p_template) d
                GROUP BY 1
            ) w
            ORDER BY w.week;
        ELSE
            RAISE EXCEPTION 'unit must be days or weeks, not %', coalesce(p_unit, 'NULL') USING ERRCODE = 'data_exception';
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_slots(uuid, uuid, text, date, date, date) IS
    'One habit''s slots (days, or the user''s weeks) in a range with their own state: kept, excused, missed, neutral; days not on have no row .';

-- The unit of a habit: weeks when its current schedule is times_per_week, else days.
-- Inlinable (no SET clause; the operators schema-qualified): the quick reads call it per habit.
CREATE OR REPLACE FUNCTION habit.streak_unit(schedule jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN schedule OPERATOR(pg_catalog.->>) 'type' OPERATOR(pg_catalog.=) 'times_per_week' THEN 'weeks' ELSE 'days' END
    $fn$;
COMMENT ON FUNCTION habit.streak_unit(jsonb) IS
    'The unit a habit''s streaks and rates count in, from its current schedule: weeks for times_per_week, else days .';

-- The reference: one habit's stats at R by scanning its slots ------------------------------
-- p_template of p_user at R = p_date with today p_today. No row when the habit is not the
-- user's (or not visible). Slots from the habit's first on-day to slot(R); slot(R) counts as
-- neutral unless kept ("not over"); slots after it are ignored. Runs are the kept slots
-- grouped by the number of missed slots before them (gaps and islands).
CREATE OR REPLACE FUNCTION habit.habit_stats_scan(p_user uuid, p_template uuid, p_date date, p_today date)
    RETURNS TABLE (template_id uuid, unit text, current_length integer, current_start date,
                   longest_length integer, longest_start date, longest_end date,
                   rate_7 double precision, rate_30 double precision, rate_365 double precision,
                   rate_all double precision, total_done integer, last_done date)
    LANGUAGE plpgsql STABLE ROWS 1
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_unit text;
        v_tz text;
        v_first date;
        v_slot_r date;
        v_width integer;
    BEGIN
        SELECT habit.streak_unit(t.schedule) INTO v_unit FROM public.habit_templates t
        WHERE t.id = p_template AND t.user_id = p_user;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_tz := habit.user_time_zone(p_user, NULL);
        SELECT min(lower(r.days)) INTO v_first
        FROM public.habit_periods p
        CROSS JOIN LATERAL habit.period_on_days(p.started_at, p.ended_at, v_tz, p_today, habit.user_day_start(p_user)) AS r(days)
        WHERE p.user_id = p_user AND p.template_id = p_template AND NOT isempty(r.days);
        v_slot_r := CASE WHEN v_unit = 'weeks' THEN habit.week_start(p_date, habit.user_week_start_isodow(p_user)) ELSE p_date END;
        v_width := CASE WHEN v_unit = 'weeks' THEN 7 ELSE 1 END;

        RETURN QUERY
        WITH slots AS (
            SELECT s.slot,
                   CASE WHEN s.slot = v_slot_r AND s.state <> 'kept' THEN 'neutral' ELSE s.state END AS state
            FROM habit.habit_slots(p_user, p_template, v_unit, v_first, p_date, p_today) s
            -- The week of R is judged whole: on-days after R count (its first on-day may be after R).
            WHERE v_first IS NOT NULL AND s.slot <= v_slot_r
        ),
        counted AS (
            SELECT s.slot, s.state,
                   count(*) FILTER (WHERE s.state = 'missed') OVER (ORDER BY s.slot) AS island
            FROM slots s WHERE s.state IN ('kept', 'missed')
        ),
        runs AS (
            SELECT count(*)::integer AS length, min(c.slot) AS first_slot, max(c.slot) AS last_slot
            FROM counted c WHERE c.state = 'kept' GROUP BY c.island
        ),
        latest AS (
            SELECT max(c.slot) FILTER (WHERE c.state = 'kept') AS last_kept,
                   max(c.slot) FILTER (WHERE c.state = 'missed') AS last_missed
            FROM counted c
        ),
        cur AS (
            SELECT r.length, r.first_slot FROM runs r, latest l
            WHERE r.last_slot = l.last_kept AND (l.last_missed IS NULL OR l.last_missed < l.last_kept)
        ),
        best AS (
            SELECT r.length, r.first_slot, r.last_slot FROM runs r ORDER BY r.length DESC, r.first_slot LIMIT 1
        ),
        rates AS (
            SELECT
                (count(*) FILTER (WHERE s.state = 'kept' AND s.slot + v_width - 1 >= p_date - 6))::double precision
                    / nullif(count(*) FILTER (WHERE s.state IN ('kept', 'missed') AND s.slot + v_width - 1 >= p_date - 6), 0) AS r7,
                (count(*) FILTER (WHERE s.state = 'kept' AND s.slot + v_width - 1 >= p_date - 29))::double precision
                    / nullif(count(*) FILTER (WHERE s.state IN ('kept', 'missed') AND s.slot + v_width - 1 >= p_date - 29), 0) AS r30,
                (count(*) FILTER (WHERE s.state = 'kept' AND s.slot + v_width - 1 >= p_date - 364))::double precision
                    / nullif(count(*) FILTER (WHERE s.state IN ('kept', 'missed') AND s.slot + v_width - 1 >= p_date - 364), 0) AS r365,
                (count(*) FILTER (WHERE s.state = 'kept'))::double precision
                    / nullif(count(*) FILTER (WHERE s.state IN ('kept', 'missed')), 0) AS rall
            FROM slots s
        ),
        totals AS (
            SELECT count(*)::integer AS n, max(c.completed_date) AS last
            FROM public.habit_completions c
            WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date <= p_date
        )
        SELECT p_template, v_unit,
               coalesce((SELECT cur.length FROM cur), 0), (SELECT cur.first_slot FROM cur),
               coalesce((SELECT best.length FROM best), 0), (SELECT best.first_slot FROM best),
               (SELECT best.last_slot + v_width - 1 FROM best),
               rates.r7, rates.r30, rates.r365, rates.rall, totals.n, totals.last
        FROM rates, totals;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_stats_scan(uuid, uuid, date, date) IS
    'One habit''s streaks, rates and totals at p_date (today p_today), computed by scanning its slots: the reference implementation .';

-- The calendar ---------------------------------------------------------------------------------
-- The calendar (stats.calendar, the heatmap picture): per day of [p_from, p_to] (at most 366),
-- the due habit-days of the user's habits (or of p_template), how many done and skipped, and a
-- level 0-4: ceil(4 x done / (due - skipped)). For one habit counted from check-ins
-- (habit.is_counted, sql/0032) also the day's value (its check-ins' sum; done without any,
-- habit.done_value), and the level is that value against the target: ceil(4 x value / target)
-- within 0-4 at least (a partial day shows), 4 for a done at-most day; 0 on a day not due or
-- skipped. Reads the habit's check-ins and completions of the range: events, not days.
CREATE OR REPLACE FUNCTION habit.stats_calendar(p_user uuid, p_template uuid, p_from date, p_to date)
    RETURNS TABLE (day date, due integer, done integer, skipped integer, level integer, value numeric)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_today date := habit.user_today(p_user, NULL);
        v_counted boolean := false;
        v_target numeric;
        v_type text;
        v_archived uuid[] := '{}';
    BEGIN
        IF p_from IS NULL OR p_to IS NULL OR p_to < p_from OR p_to - p_from >= 366 THEN
            RAISE EXCEPTION 'a range of 1 to 366 days is needed, not % … %', p_from, p_to USING ERRCODE = 'data_exception';
        END IF;
        IF p_template IS NOT NULL THEN
            SELECT habit.is_counted(t.kind, t.target, t.target_type), t.target, t.target_type INTO v_counted, v_target, v_type
            FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user;
            v_counted := coalesce(v_counted, false);
        ELSE
            -- All habits: not the archived ones (sql/0035). Read first, as its own statement
            -- (Citus: no correlated read of a table inside the query over habit_days_at).
            SELECT coalesce(array_agg(t.id), '{}') INTO v_archived
            FROM public.habit_templates t WHERE t.user_id = p_user AND t.archived_at IS NOT NULL;
        END IF;
        RETURN QUERY
        SELECT g.day::date, coalesce(a.due, 0), coalesce(a.done, 0), coalesce(a.skipped, 0),
               CASE WHEN v_counted THEN
                        CASE WHEN coalesce(a.due, 0) = 0 OR a.skipped > 0 THEN 0
                             WHEN v_type = 'at_most' THEN CASE WHEN a.done > 0 THEN 4 ELSE 0 END
                             ELSE least(4, ceil(4 * v.value / v_target))::integer END
                    WHEN coalesce(a.done, 0) = 0 OR a.due - a.skipped = 0 THEN 0
                    ELSE least(4, greatest(1, (4 * a.done + (a.due - a.skipped) - 1) / (a.due - a.skipped))) END,
               v.value
        FROM generate_series(p_from::timestamp, p_to::timestamp, interval '1 day') AS g(day)
        LEFT JOIN (
            SELECT d.day, count(*)::integer AS due, (count(*) FILTER (WHERE d.done))::integer AS done,
                   (count(*) FILTER (WHERE d.skipped))::integer AS skipped
            FROM habit.habit_days_at(p_user, p_from, p_to, v_today) d
            WHERE d.due AND (p_template IS NULL OR d.template_id = p_template) AND d.template_id <> ALL (v_archived)
            GROUP BY d.day
        ) a ON a.day = g.day::date
        -- The counted habit's day values: its check-ins' sums, and its completions without any.
        LEFT JOIN LATERAL (
            SELECT coalesce((SELECT sum(x.value) FROM public.habit_checkins x
                             WHERE x.user_id = p_user AND x.template_id = p_template AND x.checkin_date = g.day::date),
                            CASE WHEN EXISTS (SELECT 1 FROM public.habit_completions c
                                              WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date = g.day::date)
                                 THEN habit.done_value(v_target, v_type) ELSE 0 END) AS value
            WHERE v_counted
        ) v ON true
        ORDER BY 1;
    END
    $fn$;
COMMENT ON FUNCTION habit.stats_calendar(uuid, uuid, date, date) IS
    'Per day of [p_from, p_to] (at most 366 days): the due habit-days of the user''s habits (or one), how many done and skipped, a level 0-4, and for one habit counted from check-ins its value (the level then the value against the target, sql/0032).';

-- The habits of p_user on at R (habit.period_on_days, in zone p_zone, days beginning at p_ds,
-- with today p_today): the rule habit.habit_days_at expands, for one day and without due, done
-- or skipped. A closed period is on at R only when it ended after R began: the index skips old
-- periods.
CREATE OR REPLACE FUNCTION habit.habits_on(p_user uuid, p_date date, p_today date, p_zone text, p_ds time)
    RETURNS SETOF uuid
    LANGUAGE sql STABLE
    AS $fn$
    SELECT p.template_id FROM public.habit_periods p
    WHERE p.user_id OPERATOR(pg_catalog.=) p_user
      AND (p.ended_at IS NULL OR p.ended_at OPERATOR(pg_catalog.>) habit.day_begins(p_date, p_zone, p_ds))
      AND habit.period_on_days(p.started_at, p.ended_at, p_zone, p_today, p_ds) OPERATOR(pg_catalog.@>) p_date
    GROUP BY p.template_id
    $fn$;
COMMENT ON FUNCTION habit.habits_on(uuid, date, date, text, time) IS
    'The habits of a user on at a date (habit.period_on_days): habit.habit_days_at''s habits of one day.';


-- The engine: counting slots by arithmetic over a habit's segments, looking up
-- events (completions, skips) only where they can matter. Definitions: docs/protocol.md
-- "Streaks, rates and the calendar". A slot is open when it is kept or missed (neither
-- neutral nor excused); inside a run every open slot is kept, inside a gap every one missed.
-- These run as their caller: the writers (habit.streak_rebuild, habit.streak_apply) are
-- SECURITY DEFINER, the reads run with the caller's rights and row-level security.

-- The habit's segments with today p_today ('infinity' for the final on-days: a closed period
-- overlapping a day makes it on, as it will once that day is past).
CREATE OR REPLACE FUNCTION habit.streak_segments(p_user uuid, p_template uuid, p_tz text, p_today date, p_ds time)
    RETURNS habit.streak_segment[]
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        RETURN (
            SELECT coalesce(array_agg(ROW(lower(g.d), coalesce(upper(g.d), 'infinity'::date), q.schedule, q.first_day)::habit.streak_segment
                                      ORDER BY lower(g.d)), '{}')
            FROM (SELECT p.schedule, lower(r.days) AS first_day,
                         datemultirange(r.days) - coalesce(range_agg(r.days) OVER later, '{}'::datemultirange) AS days
                  FROM public.habit_periods p
                  CROSS JOIN LATERAL (SELECT habit.period_on_days(p.started_at, p.ended_at, p_tz, p_today, p_ds)) r(days)
                  WHERE p.user_id = p_user AND p.template_id = p_template AND NOT isempty(r.days)
                  WINDOW later AS (ORDER BY p.started_at ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)) q
            CROSS JOIN LATERAL unnest(q.days) g(d));
    END
    $fn$;

-- The habit as the engine reads it, from its periods, schedule and profile (a rebuild, a new
-- habit); NULL when it is not the user's.
CREATE OR REPLACE FUNCTION habit.streak_habit(p_user uuid, p_template uuid) RETURNS habit.streak_habit
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        h habit.streak_habit;
    BEGIN
        SELECT p_user, p_template, habit.streak_unit(t.schedule), coalesce(habit.week_start_isodow(pr.week_start), 1),
               habit.streak_segments(p_user, p_template, coalesce(pr.timezone, 'UTC'), 'infinity', coalesce(pr.day_starts_at, '00:00')), false, NULL::date,
               (SELECT count(*)::integer FROM public.habit_skips k WHERE k.user_id = p_user AND k.template_id = p_template)
        INTO h
        FROM public.habit_templates t LEFT JOIN public.profiles pr ON pr.user_id = p_user
        WHERE t.id = p_template AND t.user_id = p_user;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        -- Due days that depend on completions: times_per_week, times_in_days (sql/0034).
        h.has_tpw := EXISTS (SELECT 1 FROM unnest(h.segs) s WHERE (s.schedule ->> 'type') IN ('times_per_week', 'times_in_days'));
        IF cardinality(h.segs) > 0 THEN
            h.first_slot := CASE WHEN h.unit = 'weeks' THEN habit.week_start((h.segs[1]).lo, h.wk) ELSE (h.segs[1]).lo END;
        END IF;
        RETURN h;
    END
    $fn$;

-- The habit as its state row keeps it (no lookup).
CREATE OR REPLACE FUNCTION habit.streak_habit_of(st public.habit_streak_state) RETURNS habit.streak_habit
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT ROW(st.user_id, st.template_id, st.unit, st.wk, st.segs, st.has_tpw, st.first_slot, st.skips_total)::habit.streak_habit
    $fn$;

-- Days of segment s in [x, y] its schedule asks for when no completion interferes (a
-- times_per_week day counts: it is due until the week's target is met); 0 for no segment
-- (GREATEST and LEAST pass over NULLs). Inlined.
CREATE OR REPLACE FUNCTION habit.streak_segment_due(s habit.streak_segment, x date, y date) RETURNS integer
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN s.lo IS NOT NULL AND GREATEST(x, s.lo) OPERATOR(pg_catalog.<) LEAST((y OPERATOR(pg_catalog.+) 1), s.hi)
                THEN habit.due_days(s.schedule, s.first_day,
                                    pg_catalog.daterange(GREATEST(x, s.lo), LEAST((y OPERATOR(pg_catalog.+) 1), s.hi), '[)'), NULL)
                ELSE 0 END
    $fn$;

-- The same over all segments: the days of [x, y] due when no completion interferes.
CREATE OR REPLACE FUNCTION habit.streak_quiet_due(h habit.streak_habit, x date, y date) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        n integer := 0;
        s habit.streak_segment;
    BEGIN
        IF x > y THEN
            RETURN 0;
        END IF;
        FOREACH s IN ARRAY h.segs LOOP
            CONTINUE WHEN s.hi <= x OR s.lo > y;
            n := n + habit.streak_segment_due(s, x, y);
        END LOOP;
        RETURN n;
    END
    $fn$;

-- The segment holding day d (NULL: the habit is not on d).
CREATE OR REPLACE FUNCTION habit.streak_segment_at(h habit.streak_habit, d date) RETURNS habit.streak_segment
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        s habit.streak_segment;
    BEGIN
        FOREACH s IN ARRAY h.segs LOOP
            IF d >= s.lo AND d < s.hi THEN
                RETURN s;
            END IF;
        END LOOP;
        RETURN NULL;
    END
    $fn$;

-- The first day ≥ x due when no completion interferes (NULL: none).
CREATE OR REPLACE FUNCTION habit.streak_next_quiet_due(h habit.streak_habit, x date) RETURNS date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        s habit.streak_segment;
        a date;
        c date;
        best date;
        k integer;
        n integer;
    BEGIN
        FOREACH s IN ARRAY h.segs LOOP
            CONTINUE WHEN s.hi <= x OR (best IS NOT NULL AND s.lo >= best);
            a := greatest(x, s.lo);
            c := NULL;
            IF (s.schedule ->> 'type') = 'every_n_days' THEN
                n := (s.schedule ->> 'n')::integer;
                c := a + (n - (a - s.first_day) % n) % n;
            ELSIF (s.schedule ->> 'type') = 'weekdays' THEN
                FOR k IN 0 .. 6 LOOP
                    IF (s.schedule -> 'days') @> to_jsonb(extract(isodow FROM a + k)::integer) THEN
                        c := a + k;
                        EXIT;
                    END IF;
                END LOOP;
            ELSE
                c := a;
            END IF;
            IF c < s.hi AND (best IS NULL OR c < best) THEN
                best := c;
            END IF;
        END LOOP;
        RETURN best;
    END
    $fn$;

-- Whether day d, inside segment s, is due: times_per_week (times_in_days) while fewer than
-- `times` of the habit's completions lie in d's week (block) before d (habit.due_days' rule).
CREATE OR REPLACE FUNCTION habit.streak_is_due(h habit.streak_habit, s habit.streak_segment, d date) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF s.lo IS NULL THEN
            RETURN false;
        ELSIF (s.schedule ->> 'type') IN ('times_per_week', 'times_in_days') THEN
            RETURN (SELECT count(*) FROM public.habit_completions c
                    WHERE c.user_id = h.user_id AND c.template_id = h.template_id
                      AND c.completed_date >= habit.quota_block_start(s.schedule, s.first_day, h.wk, d) AND c.completed_date < d)
                   < (s.schedule ->> 'times')::integer;
        END IF;
        RETURN habit.streak_segment_due(s, d, d) > 0;
    END
    $fn$;

-- The habit's on-days in [x, y] with the schedule in force, due, done and skipped, as they
-- are once one pending change is made: the completion (p_kind 'completion') or skip ('skip')
-- of p_day present or not (p_present; p_kind NULL: no change). A row-level BEFORE trigger
-- keeps the runs before its row is written, so the change it is about is not in the table.
CREATE OR REPLACE FUNCTION habit.streak_days(h habit.streak_habit, x date, y date, p_day date, p_kind text, p_present boolean)
    RETURNS TABLE (day date, schedule jsonb, due boolean, done boolean, skipped boolean)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    #variable_conflict use_column
    BEGIN
        RETURN QUERY
        SELECT o.d, (o.s).schedule,
               CASE WHEN o.block_start IS NOT NULL
                    THEN (SELECT count(*) FROM public.habit_completions c
                          WHERE c.user_id = h.user_id AND c.template_id = h.template_id
                            AND c.completed_date >= o.block_start AND c.completed_date < o.d
                            AND c.completed_date IS DISTINCT FROM CASE WHEN p_kind = 'completion' THEN p_day END)
                         + CASE WHEN p_kind = 'completion' AND p_present AND p_day >= o.block_start AND p_day < o.d
                                THEN 1 ELSE 0 END
                         < ((o.s).schedule ->> 'times')::integer
                    ELSE habit.streak_segment_due(o.s, o.d, o.d) > 0 END,
               CASE WHEN p_kind = 'completion' AND o.d = p_day THEN p_present
                    ELSE EXISTS (SELECT 1 FROM public.habit_completions c
                                 WHERE c.user_id = h.user_id AND c.template_id = h.template_id AND c.completed_date = o.d) END,
               CASE WHEN p_kind = 'skip' AND o.d = p_day THEN p_present
                    ELSE h.skips > 0 AND EXISTS (SELECT 1 FROM public.habit_skips k
                                                 WHERE k.user_id = h.user_id AND k.template_id = h.template_id AND k.skipped_date = o.d) END
        -- A quota's block start computed here, and OFFSET 0 keeping it a plain value: as an
        -- expression inside the count, under row-level security, it stayed out of the index
        -- condition and the count read every completion of the habit for each day.
        FROM (SELECT x + g AS d, s,
                     CASE WHEN (s.schedule ->> 'type') IN ('times_per_week', 'times_in_days')
                          THEN habit.quota_block_start(s.schedule, s.first_day, h.wk, x + g) END AS block_start
              FROM generate_series(0, y - x) g JOIN unnest(h.segs) s ON x + g >= s.lo AND x + g < s.hi
              OFFSET 0) o
        ORDER BY o.d;
    END
    $fn$;

-- The states of the slots of [w1, w2] (days, or the one week w1) once the pending change is
-- made (p_kind NULL: as they are). A week: neutral when on no day or its target is 0; kept
-- when done ≥ target − skipped; missed otherwise.
CREATE OR REPLACE FUNCTION habit.streak_slot_states(h habit.streak_habit, w1 date, w2 date, p_day date, p_kind text, p_present boolean)
    RETURNS TABLE (slot date, state text)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    #variable_conflict use_column
    BEGIN
        IF h.unit = 'weeks' THEN
            RETURN QUERY
            SELECT w1, CASE WHEN t.target = 0 THEN 'neutral' WHEN t.done >= t.target - t.skipped THEN 'kept' ELSE 'missed' END
            FROM (SELECT CASE WHEN ((array_agg(f.schedule ORDER BY f.day DESC))[1] ->> 'type') = 'times_per_week'
                              THEN ((array_agg(f.schedule ORDER BY f.day DESC))[1] ->> 'times')::integer
                              ELSE (count(*) FILTER (WHERE f.due))::integer END AS target,
                         count(*) FILTER (WHERE f.done) AS done, count(*) FILTER (WHERE f.skipped) AS skipped
                  FROM habit.streak_days(h, w1, w1 + 6, p_day, p_kind, p_present) f) t;
        ELSE
            RETURN QUERY
            SELECT w1 + g, coalesce(d.state, 'neutral')
            FROM generate_series(0, w2 - w1) g
            LEFT JOIN (SELECT f.day, CASE WHEN NOT f.due THEN 'neutral' WHEN f.done THEN 'kept' WHEN f.skipped THEN 'excused' ELSE 'missed' END AS state
                       FROM habit.streak_days(h, w1, w2, p_day, p_kind, p_present) f) d ON d.day = w1 + g
            ORDER BY 1;
        END IF;
    END
    $fn$;

-- One slot's state as the tables are.
CREATE OR REPLACE FUNCTION habit.streak_slot_state(h habit.streak_habit, slot date) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        s habit.streak_segment;
    BEGIN
        IF h.unit = 'days' THEN
            s := habit.streak_segment_at(h, slot);
            IF s IS NULL THEN
                RETURN 'neutral';
            ELSIF NOT habit.streak_is_due(h, s, slot) THEN
                RETURN 'neutral';
            ELSIF EXISTS (SELECT 1 FROM public.habit_completions c
                          WHERE c.user_id = h.user_id AND c.template_id = h.template_id AND c.completed_date = slot) THEN
                RETURN 'kept';
            ELSIF h.skips > 0 AND EXISTS (SELECT 1 FROM public.habit_skips k
                                          WHERE k.user_id = h.user_id AND k.template_id = h.template_id AND k.skipped_date = slot) THEN
                RETURN 'excused';
            END IF;
            RETURN 'missed';
        END IF;
        RETURN (SELECT x.state FROM habit.streak_slot_states(h, slot, slot, NULL, NULL, NULL) x);
    END
    $fn$;

-- Weeks in [x, y] (first days) holding a day some segment's schedule asks for when no
-- completion interferes: per segment its whole weeks by arithmetic, and the weeks a segment
-- covers only in part (at most two per segment, shared by neighbours) one by one.
CREATE OR REPLACE FUNCTION habit.streak_quiet_weeks(h habit.streak_habit, x date, y date) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        total integer := 0;
        s habit.streak_segment;
        lo date; hi date; wlo date; whi date; first_whole date; last_whole date;
        edges date[] := '{}';
        e date;
    BEGIN
        IF x > y THEN
            RETURN 0;
        END IF;
        FOREACH s IN ARRAY h.segs LOOP
            lo := greatest(s.lo, x);
            hi := least(s.hi, y + 7);
            CONTINUE WHEN lo >= hi;
            wlo := habit.week_start(lo, h.wk);
            whi := habit.week_start(hi - 1, h.wk);
            first_whole := CASE WHEN lo = wlo THEN wlo ELSE wlo + 7 END;
            last_whole := CASE WHEN hi - 1 = whi + 6 THEN whi ELSE whi - 7 END;
            IF lo > wlo AND NOT wlo = ANY (edges) THEN edges := edges || wlo; END IF;
            IF hi - 1 < whi + 6 AND NOT whi = ANY (edges) THEN edges := edges || whi; END IF;
            IF first_whole <= last_whole THEN
                -- Every 7 days hold a due day except for every_n_days with n > 7, whose due days
                -- then lie in distinct weeks (n = 7: either way).
                total := total + CASE WHEN (s.schedule ->> 'type') = 'every_n_days' AND (s.schedule ->> 'n')::integer >= 7
                                      THEN habit.streak_segment_due(s, first_whole, last_whole + 6)
                                      ELSE (last_whole - first_whole) / 7 + 1 END;
            END IF;
        END LOOP;
        FOREACH e IN ARRAY edges LOOP
            IF habit.streak_quiet_due(h, e, e + 6) > 0 THEN
                total := total + 1;
            END IF;
        END LOOP;
        RETURN total;
    END
    $fn$;

-- Open slots (kept or missed: neither neutral nor excused) in [x, y]: a run's length, or a
-- gap's misses, over any part of it. Days: the due days (arithmetic per segment, less the
-- times_per_week days after the week's target) less the skipped due days. Weeks: the weeks
-- holding a day due when no completion interferes (a week whose target is above 0 holds one)
-- less the weeks with events whose state is neutral. Looks up only events in [x, y].
CREATE OR REPLACE FUNCTION habit.streak_open(h habit.streak_habit, x date, y date) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        n integer;
    BEGIN
        IF x > y OR h.first_slot IS NULL THEN
            RETURN 0;
        END IF;
        IF h.unit = 'weeks' THEN
            n := habit.streak_quiet_weeks(h, x, y);
            -- Less the neutral weeks among those with events. A week is neutral only when its
            -- target is 0, and a week whose on-days all keep times_per_week has the target
            -- `times` (1 to 7, the schedule's CHECK): when every segment is times_per_week (a
            -- habit never given another schedule), no week is, and the weeks need no look
            -- (each look is a few statements: 2 ms of a year's rates).
            IF n > 0 AND EXISTS (SELECT 1 FROM unnest(h.segs) s WHERE (s.schedule ->> 'type') <> 'times_per_week') THEN
                n := n - (SELECT count(*)::integer
                          FROM (SELECT DISTINCT habit.week_start(e.d, h.wk) AS w
                                FROM (SELECT c.completed_date AS d FROM public.habit_completions c
                                      WHERE c.user_id = h.user_id AND c.template_id = h.template_id AND c.completed_date BETWEEN x AND y + 6
                                      UNION ALL
                                      SELECT k.skipped_date FROM public.habit_skips k
                                      WHERE h.skips > 0 AND k.user_id = h.user_id AND k.template_id = h.template_id
                                        AND k.skipped_date BETWEEN x AND y + 6) e
                                -- OFFSET 0: the weeks' test below runs once per week, not once per
                                -- event (PostgreSQL pushes a condition on the DISTINCT key down
                                -- into the scan; each test is a few statements).
                                OFFSET 0) ew
                          WHERE habit.streak_quiet_due(h, ew.w, ew.w + 6) > 0 AND habit.streak_slot_state(h, ew.w) = 'neutral');
            END IF;
            RETURN n;
        END IF;
        n := habit.streak_quiet_due(h, x, y);
        IF n = 0 THEN
            RETURN 0;
        END IF;
        IF h.has_tpw THEN
            -- Times_per_week days after the week's target is met are not due.
            n := n - (SELECT count(*)::integer
                      FROM (SELECT DISTINCT habit.week_start(c.completed_date, h.wk) AS w FROM public.habit_completions c
                            WHERE c.user_id = h.user_id AND c.template_id = h.template_id
                              AND c.completed_date >= habit.week_start(x, h.wk) AND c.completed_date <= y) wk
                      CROSS JOIN generate_series(0, 6) k
                      JOIN unnest(h.segs) s ON wk.w + k >= s.lo AND wk.w + k < s.hi AND (s.schedule ->> 'type') = 'times_per_week'
                      WHERE wk.w + k BETWEEN x AND y AND NOT habit.streak_is_due(h, s, wk.w + k));
            -- Times_in_days days after their block's target is met (sql/0034), by arithmetic per
            -- segment and block: the days of the block after the day of its times-th completion,
            -- inside the segment and [x, y]. Reads the completions of the blocks reaching [x, y].
            n := n - (SELECT coalesce(sum(GREATEST(0, LEAST(y + 1, s.hi, m.bs + (s.schedule ->> 'days')::integer)
                                                      - GREATEST(x, s.lo, m.met_on + 1))), 0)::integer
                      FROM unnest(h.segs) s
                      CROSS JOIN LATERAL (
                          SELECT k.bs, k.d AS met_on
                          FROM (SELECT c.completed_date AS d,
                                       habit.quota_block_start(s.schedule, s.first_day, h.wk, c.completed_date) AS bs,
                                       row_number() OVER (PARTITION BY habit.quota_block_start(s.schedule, s.first_day, h.wk, c.completed_date)
                                                          ORDER BY c.completed_date) AS nth
                                FROM public.habit_completions c
                                WHERE c.user_id = h.user_id AND c.template_id = h.template_id
                                  AND c.completed_date >= GREATEST(s.first_day, x - (s.schedule ->> 'days')::integer)
                                  AND c.completed_date <= y) k
                          WHERE k.nth = (s.schedule ->> 'times')::integer) m
                      WHERE (s.schedule ->> 'type') = 'times_in_days' AND s.lo <= y AND s.hi > x);
        END IF;
        IF h.skips > 0 THEN
            n := n - (SELECT count(*)::integer FROM public.habit_skips k
                      WHERE k.user_id = h.user_id AND k.template_id = h.template_id AND k.skipped_date BETWEEN x AND y
                        AND habit.streak_is_due(h, habit.streak_segment_at(h, k.skipped_date), k.skipped_date) IS TRUE);
        END IF;
        RETURN n;
    END
    $fn$;

-- The first missed slot in [x, limit_slot), provided no kept slot lies in [x, it); NULL when
-- a kept slot or limit_slot comes first, or nothing is ever missed. The candidates are the
-- days due when no completion interferes (their weeks); each one passed over is an event (a
-- skip, a met target), so the loop is bounded by the events after x.
CREATE OR REPLACE FUNCTION habit.streak_first_missed(h habit.streak_habit, x date, limit_slot date) RETURNS date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        candidate date;
        state text;
    BEGIN
        IF h.first_slot IS NULL THEN
            RETURN NULL;
        END IF;
        LOOP
            candidate := habit.streak_next_quiet_due(h, x);
            IF candidate IS NULL THEN
                RETURN NULL;
            END IF;
            IF h.unit = 'weeks' THEN
                candidate := habit.week_start(candidate, h.wk);
            END IF;
            IF candidate >= limit_slot THEN
                RETURN NULL;
            END IF;
            IF h.unit = 'days' AND NOT h.has_tpw AND h.skips = 0 THEN
                -- Due, and (in a gap) not done: missed.
                RETURN candidate;
            END IF;
            state := habit.streak_slot_state(h, candidate);
            IF state = 'missed' THEN
                RETURN candidate;
            ELSIF state = 'kept' THEN
                RETURN NULL;
            END IF;
            x := candidate + CASE WHEN h.unit = 'weeks' THEN 7 ELSE 1 END;
        END LOOP;
    END
    $fn$;

-- The last kept slot before x / the first after x (NULL: none), walking the habit's events.
CREATE OR REPLACE FUNCTION habit.streak_kept_before(h habit.streak_habit, x date) RETURNS date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        d date;
        s habit.streak_segment;
    BEGIN
        LOOP
            IF h.unit = 'weeks' THEN
                SELECT max(e.d) INTO d FROM (
                    (SELECT c.completed_date AS d FROM public.habit_completions c
                     WHERE c.user_id = h.user_id AND c.template_id = h.template_id AND c.completed_date < x
                     ORDER BY c.completed_date DESC LIMIT 1)
                    UNION ALL
                    (SELECT k.skipped_date FROM public.habit_skips k
                     WHERE h.skips > 0 AND k.user_id = h.user_id AND k.template_id = h.template_id AND k.skipped_date < x
                     ORDER BY k.skipped_date DESC LIMIT 1)) e;
                EXIT WHEN d IS NULL;
                d := habit.week_start(d, h.wk);
            ELSE
                SELECT c.completed_date INTO d FROM public.habit_completions c
                WHERE c.user_id = h.user_id AND c.template_id = h.template_id AND c.completed_date < x
                ORDER BY c.completed_date DESC LIMIT 1;
                EXIT WHEN NOT FOUND;
            END IF;
            IF h.unit = 'days' AND NOT h.has_tpw THEN
                -- A completion on a day due is kept.
                s := habit.streak_segment_at(h, d);
                IF habit.streak_segment_due(s, d, d) > 0 THEN
                    RETURN d;
                END IF;
            ELSIF habit.streak_slot_state(h, d) = 'kept' THEN
                RETURN d;
            END IF;
            x := d;
        END LOOP;
        RETURN NULL;
    END
    $fn$;

CREATE OR REPLACE FUNCTION habit.streak_kept_after(h habit.streak_habit, x date) RETURNS date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        d date;
        s habit.streak_segment;
        step integer := CASE WHEN h.unit = 'weeks' THEN 7 ELSE 1 END;
    BEGIN
        LOOP
            IF h.unit = 'weeks' THEN
                SELECT min(e.d) INTO d FROM (
                    (SELECT c.completed_date AS d FROM public.habit_completions c
                     WHERE c.user_id = h.user_id AND c.template_id = h.template_id AND c.completed_date >= x + step
                     ORDER BY c.completed_date LIMIT 1)
                    UNION ALL
                    (SELECT k.skipped_date FROM public.habit_skips k
                     WHERE h.skips > 0 AND k.user_id = h.user_id AND k.template_id = h.template_id AND k.skipped_date >= x + step
                     ORDER BY k.skipped_date LIMIT 1)) e;
                EXIT WHEN d IS NULL;
                d := habit.week_start(d, h.wk);
            ELSE
                SELECT c.completed_date INTO d FROM public.habit_completions c
                WHERE c.user_id = h.user_id AND c.template_id = h.template_id AND c.completed_date > x
                ORDER BY c.completed_date LIMIT 1;
                EXIT WHEN NOT FOUND;
            END IF;
            IF h.unit = 'days' AND NOT h.has_tpw THEN
                -- A completion on a day due is kept.
                s := habit.streak_segment_at(h, d);
                IF habit.streak_segment_due(s, d, d) > 0 THEN
                    RETURN d;
                END IF;
            ELSIF habit.streak_slot_state(h, d) = 'kept' THEN
                RETURN d;
            END IF;
            x := d;
        END LOOP;
        RETURN NULL;
    END
    $fn$;

-- The kept slots of a habit, oldest first: completions on due days, or kept weeks.
CREATE OR REPLACE FUNCTION habit.streak_kept_slots(h habit.streak_habit) RETURNS SETOF date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF h.unit = 'days' THEN
            RETURN QUERY
            SELECT c.d FROM (
                SELECT c.completed_date AS d,
                       row_number() OVER (PARTITION BY habit.week_start(c.completed_date, h.wk) ORDER BY c.completed_date) AS nth
                FROM public.habit_completions c
                WHERE c.user_id = h.user_id AND c.template_id = h.template_id) c
            JOIN unnest(h.segs) s ON c.d >= s.lo AND c.d < s.hi
            WHERE CASE WHEN (s.schedule ->> 'type') = 'times_per_week' THEN c.nth <= (s.schedule ->> 'times')::integer
                       -- (sql/0034: the block's count, per completion: events, not days.)
                       WHEN (s.schedule ->> 'type') = 'times_in_days' THEN habit.streak_is_due(h, s, c.d)
                       ELSE habit.streak_segment_due(s, c.d, c.d) > 0 END
            ORDER BY 1;
        ELSE
            RETURN QUERY
            SELECT ew.w FROM (
                SELECT DISTINCT habit.week_start(e.d, h.wk) AS w
                FROM (SELECT c.completed_date AS d FROM public.habit_completions c
                      WHERE c.user_id = h.user_id AND c.template_id = h.template_id
                      UNION ALL
                      SELECT k.skipped_date FROM public.habit_skips k
                      WHERE k.user_id = h.user_id AND k.template_id = h.template_id) e
                -- Once per week, not per event (as in habit.streak_open).
                OFFSET 0) ew
            WHERE habit.streak_slot_state(h, ew.w) = 'kept'
            ORDER BY 1;
        END IF;
    END
    $fn$;

-- Keeping the runs. A rebuild recomputes one habit from its events
-- (O(events)); an apply changes the runs around one written day in constant work.

-- One habit's runs and state from scratch: its kept slots in order, the open slots of the gap
-- between each two (no kept slot lies there, so they are all missed), runs split where a gap
-- holds a missed slot. The state row is created when missing. A habit that no longer exists
-- is passed over.
CREATE OR REPLACE FUNCTION habit.streak_rebuild(p_user uuid, p_template uuid) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        h habit.streak_habit;
        step integer;
        k date;
        prev date;
        gap integer;
        run_first date;
        run_kept integer;
        lead integer;
        v_kept integer := 0;
        v_missed integer := 0;
        firsts date[] := '{}'; lasts date[] := '{}'; kepts integer[] := '{}'; misses integer[] := '{}'; nexts date[] := '{}';
    BEGIN
        -- Writers of the habit's completions and skips hold this lock (their BEFORE triggers):
        -- the events read below are the committed ones, and none changes until commit.
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        h := habit.streak_habit(p_user, p_template);
        step := CASE WHEN h.unit = 'weeks' THEN 7 ELSE 1 END;
        FOR k IN SELECT s FROM habit.streak_kept_slots(h) s LOOP
            IF prev IS NULL THEN
                lead := habit.streak_open(h, h.first_slot, k - step);
                v_missed := lead;
                run_first := k;
                run_kept := 0;
            ELSE
                gap := CASE WHEN k - prev = step THEN 0 ELSE habit.streak_open(h, prev + step, k - step) END;
                IF gap > 0 THEN
                    firsts := firsts || run_first; lasts := lasts || prev; kepts := kepts || run_kept;
                    misses := misses || gap; nexts := nexts || habit.streak_first_missed(h, prev + step, k);
                    v_missed := v_missed + gap;
                    run_first := k;
                    run_kept := 0;
                END IF;
            END IF;
            run_kept := run_kept + 1;
            v_kept := v_kept + 1;
            prev := k;
        END LOOP;
        IF prev IS NOT NULL THEN
            firsts := firsts || run_first; lasts := lasts || prev; kepts := kepts || run_kept;
            misses := misses || NULL::integer; nexts := nexts || habit.streak_first_missed(h, prev + step, 'infinity');
        END IF;

        DELETE FROM public.habit_streak_runs r WHERE r.user_id = p_user AND r.template_id = p_template;
        INSERT INTO public.habit_streak_runs (user_id, template_id, first_slot, last_slot, kept, missed_after, next_missed)
        SELECT p_user, p_template, u.* FROM unnest(firsts, lasts, kepts, misses, nexts) AS u;
        INSERT INTO public.habit_streak_state AS st (user_id, template_id, unit, wk, segs, has_tpw, first_slot, closed_until,
                                                     done_total, last_done, skips_total, kept_total, missed_total, lead_missed, pending)
        SELECT p_user, p_template, h.unit, h.wk, h.segs, h.has_tpw, h.first_slot,
               (SELECT max(s.hi) FROM unnest(h.segs) s WHERE s.hi < 'infinity'),
               d.n, d.last, h.skips, v_kept, v_missed, lead, false
        FROM (SELECT count(*)::integer AS n, max(c.completed_date) AS last FROM public.habit_completions c
              WHERE c.user_id = p_user AND c.template_id = p_template) d
        ON CONFLICT (user_id, template_id) DO UPDATE
        SET unit = excluded.unit, wk = excluded.wk, segs = excluded.segs, has_tpw = excluded.has_tpw,
            first_slot = excluded.first_slot, closed_until = excluded.closed_until, done_total = excluded.done_total,
            last_done = excluded.last_done, skips_total = excluded.skips_total, kept_total = excluded.kept_total,
            missed_total = excluded.missed_total, lead_missed = excluded.lead_missed, pending = false;
    END
    $fn$;

-- The runs once one completion or skip changes, called by the row-level BEFORE trigger of
-- its table before the row is written (so earlier rows of the same statement are applied
-- already, and the change itself is passed: the p_kind 'completion' or 'skip' of p_day
-- becomes present or not, p_present), with the habit locked and its state st read by
-- habit.check_day. The slots whose state may change are recomputed: the day, or its week when
-- a times_per_week segment makes later days of the week depend on it, or the week in the
-- weeks unit. The runs touching them (the one before, the one after, those inside) are
-- replaced by runs composed from the parts outside, which keep their counts, and the new
-- states: constant work, plus the events of a run part cut off or of a gap beside the change.
-- After 8 changes of one habit in one transaction (a bulk
-- load) the habit is marked pending instead and rebuilt once at commit: each update of a row
-- in one transaction leaves a version the next one has to pass.
CREATE OR REPLACE FUNCTION habit.streak_apply(st public.habit_streak_state, p_day date, p_kind text, p_present boolean) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        p_user uuid := st.user_id;
        p_template uuid := st.template_id;
        h habit.streak_habit;
        step integer;
        s habit.streak_segment;
        w1 date; w2 date;
        reach date;
        weekly_segment boolean;
        a public.habit_streak_runs;
        b public.habit_streak_runs;
        near public.habit_streak_runs[];
        r public.habit_streak_runs;
        rec record;
        old_runs public.habit_streak_runs[] := '{}';
        old_firsts date[] := '{}';
        old_kept integer := 0; old_missed integer := 0;
        gone date[]; made integer[]; changed integer[];
        new_last_done date;
        w_slots date[] := '{}';
        w_states text[] := '{}';
        firsts date[] := '{}'; lasts date[] := '{}'; kepts integer[] := '{}';
        cur_first date; cur_last date; cur_kept integer;
        r_first date; r_kept integer; r_open boolean;
        misses integer[] := '{}'; nexts date[] := '{}';
        n integer; i integer;
        new_kept integer := 0; new_missed integer := 0;
        new_lead integer;
        done_change integer := CASE WHEN p_kind = 'completion' THEN CASE WHEN p_present THEN 1 ELSE -1 END ELSE 0 END;
        skip_change integer := CASE WHEN p_kind = 'skip' THEN CASE WHEN p_present THEN 1 ELSE -1 END ELSE 0 END;
        -- A value, not a call in the UPDATE: Citus refuses non-IMMUTABLE functions in its CASE.
        me xid8 := pg_current_xact_id();
    BEGIN
        IF st.pending THEN
            RETURN;
        ELSIF st.xact = me AND st.xact_writes >= 8 THEN
            UPDATE public.habit_streak_state x SET pending = true WHERE x.user_id = p_user AND x.template_id = p_template;
            RETURN;
        END IF;
        h := habit.streak_habit_of(st);
        step := CASE WHEN h.unit = 'weeks' THEN 7 ELSE 1 END;

        -- A completion in a times_in_days block decides whether the block's later days are due
        -- (sql/0034): the window reaches the block's end (at most 365 days: constant work). In
        -- weeks (the habit is times_per_week now, an older segment times_in_days) a reach past
        -- the week has the habit rebuilt at commit instead.
        reach := p_day;
        weekly_segment := h.unit = 'weeks' OR EXISTS (SELECT 1 FROM unnest(h.segs) x WHERE (x.schedule ->> 'type') = 'times_per_week');
        IF h.has_tpw AND p_kind = 'completion' THEN
            FOREACH s IN ARRAY h.segs LOOP
                IF (s.schedule ->> 'type') = 'times_in_days' AND s.first_day <= p_day AND s.hi > p_day THEN
                    reach := greatest(reach, least(habit.quota_block_start(s.schedule, s.first_day, h.wk, p_day)
                                                   + (s.schedule ->> 'days')::integer - 1, s.hi - 1));
                END IF;
            END LOOP;
            IF h.unit = 'weeks' AND reach > habit.week_start(p_day, h.wk) + 6 THEN
                PERFORM habit.streak_invalidate(p_user, p_template);
                RETURN;
            END IF;
        END IF;

        -- The window and its slots' new states: the week of a times_per_week segment; from the
        -- day to its block's end for times_in_days alone (a completion changes only later days).
        IF h.unit = 'weeks' OR h.has_tpw THEN
            w1 := CASE WHEN weekly_segment THEN habit.week_start(p_day, h.wk) ELSE p_day END;
            w2 := CASE WHEN h.unit = 'weeks' THEN w1 WHEN weekly_segment THEN greatest(w1 + 6, reach) ELSE reach END;
            FOR rec IN SELECT * FROM habit.streak_slot_states(h, w1, w2, p_day, p_kind, p_present) LOOP
                w_slots := w_slots || rec.slot;
                w_states := w_states || rec.state;
            END LOOP;
        ELSE
            -- One day: no other row of the day can differ (a day is never both done and
            -- skipped), so its state is the change's.
            w1 := p_day;
            w2 := p_day;
            s := habit.streak_segment_at(h, p_day);
            w_slots := ARRAY[p_day];
            w_states := ARRAY[CASE WHEN s IS NULL OR habit.streak_segment_due(s, p_day, p_day) = 0 THEN 'neutral'
                                   WHEN NOT p_present THEN 'missed'
                                   WHEN p_kind = 'completion' THEN 'kept' ELSE 'excused' END];
        END IF;

        -- The runs around, in one read: a, the last starting before the window; b, the one
        -- reaching past it (the last starting in it, or else the first after it); and those
        -- between, which the composed runs replace.
        SELECT array_agg(y ORDER BY y.first_slot) INTO near
        FROM public.habit_streak_runs y
        WHERE y.user_id = p_user AND y.template_id = p_template
          AND y.first_slot >= coalesce((SELECT max(x.first_slot) FROM public.habit_streak_runs x
                                        WHERE x.user_id = p_user AND x.template_id = p_template AND x.first_slot < w1), w1)
          AND y.first_slot <= coalesce((SELECT min(x.first_slot) FROM public.habit_streak_runs x
                                        WHERE x.user_id = p_user AND x.template_id = p_template AND x.first_slot > w2), w2);
        IF near IS NOT NULL THEN
            IF (near[1]).first_slot < w1 THEN
                a := near[1];
            END IF;
            FOREACH r IN ARRAY near LOOP
                IF r.first_slot <= w2 AND r.last_slot > w2 THEN
                    b := r;
                ELSIF r.first_slot > w2 AND b.first_slot IS NULL THEN
                    b := r;
                END IF;
            END LOOP;
            -- The runs replaced: from a (or the window) through b (or the window).
            FOREACH r IN ARRAY near LOOP
                IF r.first_slot >= coalesce(a.first_slot, w1) AND r.first_slot <= coalesce(b.first_slot, w2) THEN
                    old_runs := old_runs || r;
                    old_firsts := old_firsts || r.first_slot;
                    old_kept := old_kept + r.kept;
                    old_missed := old_missed + coalesce(r.missed_after, 0);
                END IF;
            END LOOP;
        END IF;

        -- The left part: the run before the window, or its part before w1.
        IF a.first_slot IS NOT NULL THEN
            cur_first := a.first_slot;
            IF a.last_slot >= w1 THEN
                cur_kept := habit.streak_open(h, a.first_slot, w1 - step);
                cur_last := habit.streak_kept_before(h, w1);
            ELSE
                cur_kept := a.kept;
                cur_last := a.last_slot;
                IF a.next_missed IS NOT NULL AND a.next_missed < w1 THEN
                    -- A missed slot between it and the window: it stays a run of its own.
                    firsts := firsts || cur_first; lasts := lasts || cur_last; kepts := kepts || cur_kept;
                    cur_first := NULL;
                END IF;
            END IF;
        END IF;
        -- The window's slots, in order.
        FOR i IN 1 .. cardinality(w_slots) LOOP
            IF w_states[i] = 'kept' THEN
                IF cur_first IS NULL THEN
                    cur_first := w_slots[i];
                    cur_kept := 0;
                END IF;
                cur_kept := cur_kept + 1;
                cur_last := w_slots[i];
            ELSIF w_states[i] = 'missed' AND cur_first IS NOT NULL THEN
                firsts := firsts || cur_first; lasts := lasts || cur_last; kepts := kepts || cur_kept;
                cur_first := NULL;
            END IF;
        END LOOP;
        -- The right part: the run after the window, or its part after w2.
        IF b.first_slot IS NOT NULL THEN
            IF b.first_slot <= w2 THEN
                r_first := habit.streak_kept_after(h, w2);
                r_kept := habit.streak_open(h, w2 + step, b.last_slot);
                r_open := true;
            ELSE
                r_first := b.first_slot;
                r_kept := b.kept;
                r_open := habit.streak_open(h, w2 + step, b.first_slot - step) = 0;
            END IF;
            IF cur_first IS NOT NULL AND r_open THEN
                cur_kept := cur_kept + r_kept;
                cur_last := b.last_slot;
            ELSE
                IF cur_first IS NOT NULL THEN
                    firsts := firsts || cur_first; lasts := lasts || cur_last; kepts := kepts || cur_kept;
                END IF;
                cur_first := r_first; cur_last := b.last_slot; cur_kept := r_kept;
            END IF;
        END IF;
        IF cur_first IS NOT NULL THEN
            firsts := firsts || cur_first; lasts := lasts || cur_last; kepts := kepts || cur_kept;
        END IF;

        -- The gaps after the composed runs (and before the first, when it is the habit's first):
        -- their missed slots and first missed slot, the window's part from its new states.
        n := cardinality(firsts);
        FOR i IN 1 .. n LOOP
            IF i < n THEN
                misses := misses || habit.streak_gap_missed(h, lasts[i] + step, firsts[i + 1] - step, w_slots, w_states);
                nexts := nexts || habit.streak_gap_first_missed(h, lasts[i] + step, firsts[i + 1], w_slots, w_states);
            ELSIF b.first_slot IS NOT NULL THEN
                misses := misses || b.missed_after;
                nexts := nexts || b.next_missed;
            ELSE
                misses := misses || NULL::integer;
                nexts := nexts || habit.streak_gap_first_missed(h, lasts[i] + step, 'infinity', w_slots, w_states);
            END IF;
            new_kept := new_kept + kepts[i];
            new_missed := new_missed + coalesce(misses[i], 0);
        END LOOP;
        IF a.first_slot IS NULL AND n > 0 THEN
            new_lead := habit.streak_gap_missed(h, h.first_slot, firsts[1] - step, w_slots, w_states);
            new_missed := new_missed + new_lead;
        END IF;

        -- Write only what changes (a write deep in history writes what one today writes): the
        -- replaced runs the composition no longer has, the composed runs that are new or differ,
        -- then the totals. Usually one run and the state row.
        SELECT array_agg(o.f) INTO gone FROM unnest(old_firsts) o(f) WHERE o.f <> ALL (firsts);
        IF gone IS NOT NULL THEN
            DELETE FROM public.habit_streak_runs x
            WHERE x.user_id = p_user AND x.template_id = p_template AND x.first_slot = ANY (gone);
        END IF;
        FOR i IN 1 .. n LOOP
            IF firsts[i] = ANY (old_firsts) THEN
                r := old_runs[array_position(old_firsts, firsts[i])];
                IF (r.last_slot, r.kept, r.missed_after, r.next_missed) IS DISTINCT FROM (lasts[i], kepts[i], misses[i], nexts[i]) THEN
                    changed := changed || i;
                END IF;
            ELSE
                made := made || i;
            END IF;
        END LOOP;
        -- One statement per changed run (one, mostly): a plan of its own for any count would be
        -- made afresh each time. The run's values go in as plain variables, not array elements:
        -- Citus 13.2.2 crashes a worker node on an UPDATE of a distributed table whose SET uses
        -- an element of a PL/pgSQL array (docs/scaling.md, "Running on Citus").
        FOREACH i IN ARRAY coalesce(changed, '{}') LOOP
            r.first_slot := firsts[i]; r.last_slot := lasts[i]; r.kept := kepts[i];
            r.missed_after := misses[i]; r.next_missed := nexts[i];
            UPDATE public.habit_streak_runs x
            SET last_slot = r.last_slot, kept = r.kept, missed_after = r.missed_after, next_missed = r.next_missed
            WHERE x.user_id = p_user AND x.template_id = p_template AND x.first_slot = r.first_slot;
        END LOOP;
        IF made IS NOT NULL THEN
            INSERT INTO public.habit_streak_runs (user_id, template_id, first_slot, last_slot, kept, missed_after, next_missed)
            SELECT p_user, p_template, u.f, u.l, u.k, u.m, u.n
            FROM unnest(firsts, lasts, kepts, misses, nexts) WITH ORDINALITY AS u(f, l, k, m, n, ord)
            WHERE u.ord = ANY (made);
        END IF;
        new_last_done := st.last_done;
        IF done_change > 0 THEN
            new_last_done := greatest(st.last_done, p_day);
        ELSIF done_change < 0 AND st.last_done = p_day THEN
            SELECT max(c.completed_date) INTO new_last_done FROM public.habit_completions c
            WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date < p_day;
        END IF;
        UPDATE public.habit_streak_state x
        SET kept_total = x.kept_total + new_kept - old_kept,
            missed_total = x.missed_total + new_missed - old_missed
                           - CASE WHEN a.first_slot IS NULL THEN coalesce(x.lead_missed, 0) ELSE 0 END,
            lead_missed = CASE WHEN a.first_slot IS NULL THEN new_lead ELSE x.lead_missed END,
            done_total = x.done_total + done_change,
            last_done = new_last_done,
            skips_total = x.skips_total + skip_change,
            xact = me,
            xact_writes = CASE WHEN x.xact = me THEN x.xact_writes + 1 ELSE 1 END
        WHERE x.user_id = p_user AND x.template_id = p_template;
    END
    $fn$;

-- Missed slots of a gap [x, y] (no kept slot in it), the window's slots (p_slots) taking the
-- new states p_states: counted outside the window, taken from the states inside.
CREATE OR REPLACE FUNCTION habit.streak_gap_missed(h habit.streak_habit, x date, y date, p_slots date[], p_states text[]) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        step integer := CASE WHEN h.unit = 'weeks' THEN 7 ELSE 1 END;
        n integer := 0;
        i integer;
    BEGIN
        IF x > y THEN
            RETURN 0;
        END IF;
        FOR i IN 1 .. cardinality(p_slots) LOOP
            IF p_slots[i] BETWEEN x AND y AND p_states[i] = 'missed' THEN
                n := n + 1;
            END IF;
        END LOOP;
        RETURN n + habit.streak_open(h, x, least(y, p_slots[1] - step))
                 + habit.streak_open(h, greatest(x, p_slots[cardinality(p_slots)] + step), y);
    END
    $fn$;

-- The first missed slot of a gap from x, before limit_slot, the window's slots taking their new states.
CREATE OR REPLACE FUNCTION habit.streak_gap_first_missed(h habit.streak_habit, x date, limit_slot date, p_slots date[], p_states text[]) RETURNS date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        step integer := CASE WHEN h.unit = 'weeks' THEN 7 ELSE 1 END;
        found date;
        i integer;
    BEGIN
        IF x < p_slots[1] THEN
            found := habit.streak_first_missed(h, x, least(limit_slot, p_slots[1]));
            IF found IS NOT NULL THEN
                RETURN found;
            END IF;
        END IF;
        FOR i IN 1 .. cardinality(p_slots) LOOP
            IF p_slots[i] >= x AND p_slots[i] < limit_slot AND p_states[i] = 'missed' THEN
                RETURN p_slots[i];
            END IF;
        END LOOP;
        IF limit_slot > p_slots[cardinality(p_slots)] + step THEN
            RETURN habit.streak_first_missed(h, greatest(x, p_slots[cardinality(p_slots)] + step), limit_slot);
        END IF;
        RETURN NULL;
    END
    $fn$;

-- Reads: streaks, rates and totals from the runs; the reference scan where the runs cannot
-- answer (a habit pending its rebuild in the writer's own transaction, or one whose periods
-- closed so lately that days from today on are on for the runs but not yet for the day).

-- Whether the stored runs answer at p_date (p_today: the user's today): not pending, and no
-- day from today on that only a closed period makes on (the runs count a closed period's last
-- day as on; the day does once it is past) lies in a slot up to R's.
CREATE OR REPLACE FUNCTION habit.streak_state_answers(st public.habit_streak_state, p_date date, p_today date) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $fn$
    SELECT NOT st.pending
       AND (st.closed_until IS NULL OR st.closed_until OPERATOR(pg_catalog.<=) p_today
            OR CASE WHEN st.unit OPERATOR(pg_catalog.=) 'weeks'
                    THEN habit.week_start(p_date, st.wk) OPERATOR(pg_catalog.<) habit.week_start(p_today, st.wk)
                    ELSE p_date OPERATOR(pg_catalog.<) p_today END)
    $fn$;

-- Kept slots of a habit in [x, y] when no missed slot lies there (part of a run).
CREATE OR REPLACE FUNCTION habit.streak_kept_between(p_user uuid, p_template uuid, x date, y date) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    #variable_conflict use_column
    BEGIN
        -- The row's columns, not the row: on Citus the query runs on a shard, where a whole-row
        -- value has the shard's type (habit_streak_state_102115) and no function takes it.
        RETURN (
    SELECT habit.streak_open(ROW(st.user_id, st.template_id, st.unit, st.wk, st.segs, st.has_tpw, st.first_slot, st.skips_total)::habit.streak_habit, x, y)
    FROM public.habit_streak_state st WHERE st.user_id = p_user AND st.template_id = p_template);
    END
    $fn$;

-- One habit's current streak at p_date from its runs (day.get's include: inlined into its
-- statement): the run with the last start up to R's slot, whole when a missed slot comes only
-- at or after R's slot (its stored next_missed), cut at R when R lies inside it; else 0.
-- The reference scan when the runs cannot answer.
-- One read of the state row (issue 29): whether the runs answer is habit.streak_state_answers'
-- rule written out on the row's columns (passing the row whole made the executor build a copy
-- of it, segments included, for every use), computed once (OFFSET 0 keeps it one subquery);
-- the probe of the runs runs only when they answer, the scan only when they do not (each
-- gated by a one-time filter of its own subquery: OFFSET 0 keeps the planner from pulling the
-- scan's condition up into a join filter, which would run the scan for every habit). No row
-- when neither answers, as before (the scan has none for a habit that is not the user's).
CREATE OR REPLACE FUNCTION habit.current_streak(p_user uuid, p_template uuid, p_date date, p_today date)
    RETURNS TABLE (current_length integer, current_start date)
    LANGUAGE sql STABLE ROWS 1
    AS $fn$
    SELECT CASE WHEN NOT f.answers THEN x.current_length
                WHEN q.first_slot IS NULL THEN 0
                WHEN q.last_slot OPERATOR(pg_catalog.=) f.b THEN q.kept
                WHEN q.last_slot OPERATOR(pg_catalog.>) f.b THEN habit.streak_kept_between(p_user, p_template, q.first_slot, f.b)
                WHEN q.next_missed IS NULL OR q.next_missed OPERATOR(pg_catalog.>=) f.b THEN q.kept
                ELSE 0 END,
           CASE WHEN NOT f.answers THEN x.current_start
                WHEN q.last_slot OPERATOR(pg_catalog.>=) f.b OR q.next_missed IS NULL OR q.next_missed OPERATOR(pg_catalog.>=) f.b
                THEN q.first_slot END
    FROM (SELECT coalesce(NOT st.pending
                          AND (st.closed_until IS NULL OR st.closed_until OPERATOR(pg_catalog.<=) p_today
                               OR CASE WHEN st.unit OPERATOR(pg_catalog.=) 'weeks'
                                       THEN habit.week_start(p_date, st.wk) OPERATOR(pg_catalog.<) habit.week_start(p_today, st.wk)
                                       ELSE p_date OPERATOR(pg_catalog.<) p_today END), false) AS answers,
                 CASE WHEN st.unit OPERATOR(pg_catalog.=) 'weeks' THEN habit.week_start(p_date, st.wk) ELSE p_date END AS b
          FROM (SELECT 1) AS one
          LEFT JOIN public.habit_streak_state st
                 ON st.user_id OPERATOR(pg_catalog.=) p_user AND st.template_id OPERATOR(pg_catalog.=) p_template
          OFFSET 0) f
    LEFT JOIN LATERAL (
        SELECT r.first_slot, r.last_slot, r.kept, r.next_missed FROM public.habit_streak_runs r
        WHERE f.answers AND r.user_id OPERATOR(pg_catalog.=) p_user AND r.template_id OPERATOR(pg_catalog.=) p_template
          AND r.first_slot OPERATOR(pg_catalog.<=) f.b
        ORDER BY r.first_slot DESC LIMIT 1) q ON true
    LEFT JOIN LATERAL (
        SELECT s.template_id, s.current_length, s.current_start
        FROM habit.habit_stats_scan(p_user, p_template, p_date, p_today) s WHERE NOT f.answers OFFSET 0) x ON true
    WHERE f.answers OR x.template_id IS NOT NULL
    $fn$;

-- Kept and missed slots of windows [starts[i], b] of slots, b's slot "not over" (counted only
-- when kept): the runs overlapping a window whole, and the parts of a run or gap cut by its
-- start or b counted (habit.streak_open). h: the habit; st: its state. All windows in one
-- statement: per window the run before it and the runs starting in it, summed (a year of runs
-- is ~70 index entries), and the last run starting up to b.
CREATE OR REPLACE FUNCTION habit.streak_windows(h habit.streak_habit, st public.habit_streak_state, starts date[], b date,
                                     OUT kept integer[], OUT missed integer[])
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        step integer := CASE WHEN h.unit = 'weeks' THEN 7 ELSE 1 END;
        w record;
        k integer;
        m integer;
        gap_start date;       -- the first slot of the gap before the next run
        gap_missed integer;   -- that gap's misses when known whole (NULL: count them)
    BEGIN
        kept := '{}';
        missed := '{}';
        FOR w IN
            SELECT greatest(s.a, h.first_slot) AS a, bf.first_slot AS bf_first, bf.last_slot AS bf_last, bf.missed_after AS bf_missed,
                   agg.n, agg.first_in, agg.kept_in, agg.missed_in,
                   lr.first_slot AS lr_first, lr.last_slot AS lr_last, lr.kept AS lr_kept, lr.missed_after AS lr_missed
            FROM unnest(starts) WITH ORDINALITY s(a, ord)
            LEFT JOIN LATERAL (
                SELECT x.first_slot, x.last_slot, x.missed_after FROM public.habit_streak_runs x
                WHERE x.user_id = h.user_id AND x.template_id = h.template_id AND x.first_slot < greatest(s.a, h.first_slot)
                ORDER BY x.first_slot DESC LIMIT 1) bf ON true
            CROSS JOIN LATERAL (
                SELECT count(*)::integer AS n, min(x.first_slot) AS first_in, coalesce(sum(x.kept), 0)::integer AS kept_in,
                       coalesce(sum(x.missed_after), 0)::integer AS missed_in
                FROM public.habit_streak_runs x
                WHERE x.user_id = h.user_id AND x.template_id = h.template_id
                  AND x.first_slot >= greatest(s.a, h.first_slot) AND x.first_slot <= b) agg
            LEFT JOIN LATERAL (
                SELECT x.first_slot, x.last_slot, x.kept, x.missed_after FROM public.habit_streak_runs x
                WHERE x.user_id = h.user_id AND x.template_id = h.template_id AND x.first_slot <= b
                ORDER BY x.first_slot DESC LIMIT 1) lr ON agg.n > 0
            ORDER BY s.ord
        LOOP
            k := 0;
            m := 0;
            IF h.first_slot IS NOT NULL AND w.a <= b THEN
                -- The run before the window, or the lead gap.
                IF w.bf_first IS NULL THEN
                    gap_start := h.first_slot;
                    gap_missed := st.lead_missed;
                ELSE
                    IF w.bf_last >= w.a THEN
                        k := k + habit.streak_open(h, w.a, least(w.bf_last, b));
                    END IF;
                    gap_start := w.bf_last + step;
                    gap_missed := w.bf_missed;
                END IF;
                -- The runs starting in it: all but the last lie whole inside, and so do the gaps
                -- after them (another run follows); the last one (lr) may reach past b.
                IF w.n > 0 THEN
                    IF gap_start >= w.a AND gap_missed IS NOT NULL THEN
                        m := m + gap_missed;
                    ELSE
                        m := m + habit.streak_open(h, greatest(gap_start, w.a), w.first_in - step);
                    END IF;
                    k := k + w.kept_in - w.lr_kept + CASE WHEN w.lr_last <= b THEN w.lr_kept ELSE habit.streak_open(h, w.lr_first, b) END;
                    m := m + w.missed_in - coalesce(w.lr_missed, 0);
                    gap_start := w.lr_last + step;
                END IF;
                -- The gap reaching b (b's own slot excluded: not over, and never kept in a gap).
                IF gap_start <= b - step THEN
                    m := m + habit.streak_open(h, greatest(gap_start, w.a), b - step);
                END IF;
            END IF;
            kept := kept || k;
            missed := missed || m;
        END LOOP;
    END
    $fn$;

-- One habit's streaks, rates and totals at p_date from its runs (today p_today), or the
-- reference scan when the runs cannot answer. No row when the habit is not the user's.
CREATE OR REPLACE FUNCTION habit.streak_stats(p_user uuid, p_template uuid, p_date date, p_today date)
    RETURNS TABLE (template_id uuid, unit text, current_length integer, current_start date,
                   longest_length integer, longest_start date, longest_end date,
                   rate_7 double precision, rate_30 double precision, rate_365 double precision,
                   rate_all double precision, total_done integer, last_done date)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    -- Its probes are one index entry each, whatever R: a custom plan per call (which the
    -- longest-run probe got, its last_slot bound looking selective) costs ten times the probe.
    SET plan_cache_mode = force_generic_plan
    AS $fn$
    DECLARE
        w record;
        st public.habit_streak_state;
        h habit.streak_habit;
        step integer;
        b date;
        q public.habit_streak_runs;
        best public.habit_streak_runs;
        cur_len integer := 0;
        cur_start date;
        long_len integer := 0;
        long_start date;
        long_end date;
        k7 integer; m7 integer; k30 integer; m30 integer; k365 integer; m365 integer; kall integer; mall integer;
        v_total integer;
        v_last date;
    BEGIN
        SELECT * INTO st FROM public.habit_streak_state s WHERE s.user_id = p_user AND s.template_id = p_template;
        IF NOT FOUND OR NOT habit.streak_state_answers(st, p_date, p_today) THEN
            RETURN QUERY SELECT * FROM habit.habit_stats_scan(p_user, p_template, p_date, p_today);
            RETURN;
        END IF;
        h := habit.streak_habit_of(st);
        step := CASE WHEN st.unit = 'weeks' THEN 7 ELSE 1 END;
        b := CASE WHEN st.unit = 'weeks' THEN habit.week_start(p_date, st.wk) ELSE p_date END;

        -- Current: the run starting last up to b.
        SELECT * INTO q FROM public.habit_streak_runs r
        WHERE r.user_id = p_user AND r.template_id = p_template AND r.first_slot <= b ORDER BY r.first_slot DESC LIMIT 1;
        IF q.first_slot IS NOT NULL THEN
            IF q.last_slot >= b THEN
                cur_len := CASE WHEN q.last_slot = b THEN q.kept ELSE habit.streak_open(h, q.first_slot, b) END;
                cur_start := q.first_slot;
            ELSIF q.next_missed IS NULL OR q.next_missed >= b THEN
                cur_len := q.kept;
                cur_start := q.first_slot;
            END IF;
        END IF;
        -- Longest: the longest run ending by b (the earliest on ties), or the run cut at b.
        SELECT * INTO best FROM public.habit_streak_runs r
        WHERE r.user_id = p_user AND r.template_id = p_template AND r.last_slot <= b
        ORDER BY r.kept DESC, r.first_slot LIMIT 1;
        IF best.first_slot IS NOT NULL THEN
            long_len := best.kept; long_start := best.first_slot; long_end := best.last_slot + step - 1;
        END IF;
        IF q.last_slot > b THEN
            -- Cut at b: its kept slots up to b (cur_len), ending at the last of them.
            IF cur_len > long_len THEN
                long_len := cur_len;
                long_start := q.first_slot;
                long_end := CASE WHEN habit.streak_slot_state(h, b) = 'kept' THEN b ELSE habit.streak_kept_before(h, b) END + step - 1;
            END IF;
        END IF;

        -- Rates: the slots overlapping [R − N + 1, R].
        w := habit.streak_windows(h, st,
                 CASE WHEN st.unit = 'weeks' THEN ARRAY[habit.week_start(p_date - 6, st.wk), habit.week_start(p_date - 29, st.wk),
                                                        habit.week_start(p_date - 364, st.wk)]
                      ELSE ARRAY[p_date - 6, p_date - 29, p_date - 364] END, b);
        k7 := w.kept[1]; m7 := w.missed[1]; k30 := w.kept[2]; m30 := w.missed[2]; k365 := w.kept[3]; m365 := w.missed[3];
        -- All: from the totals when R is at or past the last run's end.
        SELECT * INTO q FROM public.habit_streak_runs r
        WHERE r.user_id = p_user AND r.template_id = p_template ORDER BY r.first_slot DESC LIMIT 1;
        IF h.first_slot IS NULL OR b < h.first_slot THEN
            kall := 0; mall := 0;
        ELSIF q.first_slot IS NULL THEN
            kall := 0; mall := habit.streak_open(h, h.first_slot, b - step);
        ELSIF q.last_slot <= b THEN
            kall := st.kept_total; mall := st.missed_total + habit.streak_open(h, q.last_slot + step, b - step);
        ELSE
            -- R before the last run's end (a past date): counted from the start.
            w := habit.streak_windows(h, st, ARRAY[h.first_slot], b);
            kall := w.kept[1]; mall := w.missed[1];
        END IF;

        IF st.last_done IS NULL OR st.last_done <= p_date THEN
            v_total := st.done_total;
            v_last := st.last_done;
        ELSE
            SELECT st.done_total - count(*)::integer INTO v_total FROM public.habit_completions c
            WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date > p_date;
            SELECT max(c.completed_date) INTO v_last FROM public.habit_completions c
            WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date <= p_date;
        END IF;

        RETURN QUERY SELECT p_template, st.unit, cur_len, cur_start, long_len, long_start, long_end,
            k7::double precision / nullif(k7 + m7, 0),
            k30::double precision / nullif(k30 + m30, 0),
            k365::double precision / nullif(k365 + m365, 0),
            kall::double precision / nullif(kall + mall, 0),
            v_total, v_last;
    END
    $fn$;

-- habit_stats: p_template NULL: every habit on at R (habit.habits_on, like day.get), in
-- day.get's order; given: that habit whatever its state (no row: not the user's).
--
-- One statement for all the habits (issue 29), with habit.streak_stats (PL/pgSQL, a dozen
-- statements and the window helpers per habit) only where the quick path below does not
-- apply. The quick path: the runs answer at R (habit.streak_state_answers' rule, for days),
-- the unit is days, no times_per_week segment, one segment (seg: its schedule, first day and
-- bounds), R at or after the end of the last run and of the last completion (no run or
-- completion after R: the usual R, today). There, with b = R:
--   current  the last run (the one streak_stats probes, as none starts after b): whole when it
--            ends at b or its next_missed is none or ≥ b, else 0;
--   longest  the longest run ending by b, the earliest on ties (habit_streak_runs_longest_idx);
--   rates    over [a, b], a = greatest(R − N + 1, first_slot): kept = the kept of the runs
--            starting in [a, b] plus the kept days of [a, first of those) (the tail of the run
--            before a: a run is a maximal sequence of kept days, so no other kept day lies
--            there), counted as completions on due days; missed = open days of [a, b − 1]
--            less kept days there (every open day is kept, in a run, or missed, in a gap;
--            b's day counts only when kept), open = due days (habit.streak_segment_due) less
--            skipped due days, as habit.streak_open counts them;
--   all      kept_total, and missed_total plus the open days after the last run up to b − 1
--            (none and the open days from first_slot when there is no run), as streak_stats;
--   totals   done_total and last_done from the state row.
-- A day of the segment is due as in habit.day_habits (functions/history.sql): daily always,
-- weekdays by its ISO weekday, every_n_days by (day − first day) % n. The property tests
-- compare habit_stats with the scan (StreakPropertyTests). plan_cache_mode: one generic plan
-- per session; custom plans cost 10–15 ms of planning each (the statement is large) and were
-- made for the first five calls of every connection.
CREATE OR REPLACE FUNCTION habit.habit_stats(p_user uuid, p_template uuid DEFAULT NULL, p_date date DEFAULT NULL)
    RETURNS TABLE (template_id uuid, unit text, current_length integer, current_start date,
                   longest_length integer, longest_start date, longest_end date,
                   rate_7 double precision, rate_30 double precision, rate_365 double precision,
                   rate_all double precision, total_done integer, last_done date)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    SET plan_cache_mode = force_generic_plan
    AS $fn$
    DECLARE
        v_tz text := habit.user_time_zone(p_user, NULL);
        v_ds time := habit.user_day_start(p_user);
        v_today date := habit.local_day(now(), v_tz, v_ds);
        v_date date := coalesce(p_date, v_today);
    BEGIN
        RETURN QUERY
        SELECT CASE WHEN g.ok THEN t.id ELSE s.template_id END,
               CASE WHEN g.ok THEN g.unit ELSE s.unit END,
               CASE WHEN NOT g.ok THEN s.current_length
                    WHEN g.lr_first IS NULL THEN 0
                    WHEN g.lr_last = v_date OR g.lr_next_missed IS NULL OR g.lr_next_missed >= v_date THEN g.lr_kept
                    ELSE 0 END,
               CASE WHEN NOT g.ok THEN s.current_start
                    WHEN g.lr_last = v_date OR g.lr_next_missed IS NULL OR g.lr_next_missed >= v_date THEN g.lr_first END,
               CASE WHEN g.ok THEN coalesce(best.kept, 0) ELSE s.longest_length END,
               CASE WHEN g.ok THEN best.first_slot ELSE s.longest_start END,
               CASE WHEN g.ok THEN best.last_slot ELSE s.longest_end END,
               CASE WHEN g.ok THEN ev.k7::double precision
                                   / nullif(ev.k7 + habit.streak_segment_due(g.seg, g.a7, v_date - 1) - sk.s7 - (ev.k7 - ev.kb), 0)
                    ELSE s.rate_7 END,
               CASE WHEN g.ok THEN ev.k30::double precision
                                   / nullif(ev.k30 + habit.streak_segment_due(g.seg, g.a30, v_date - 1) - sk.s30 - (ev.k30 - ev.kb), 0)
                    ELSE s.rate_30 END,
               CASE WHEN g.ok THEN ev.k365::double precision
                                   / nullif(ev.k365 + habit.streak_segment_due(g.seg, g.a365, v_date - 1) - sk.s365 - (ev.k365 - ev.kb), 0)
                    ELSE s.rate_365 END,
               CASE WHEN NOT g.ok THEN s.rate_all
                    WHEN g.lr_first IS NULL
                    THEN 0::double precision / nullif(habit.streak_segment_due(g.seg, g.aall, v_date - 1) - sk.sall, 0)
                    ELSE g.kept_total::double precision
                         / nullif(g.kept_total + g.missed_total + habit.streak_segment_due(g.seg, g.aall, v_date - 1) - sk.sall, 0) END,
               CASE WHEN g.ok THEN g.done_total ELSE s.total_done END,
               CASE WHEN g.ok THEN g.last_done ELSE s.last_done END
        FROM public.habit_templates t
        CROSS JOIN LATERAL (
            SELECT coalesce(st.unit = 'days' AND NOT st.has_tpw AND cardinality(st.segs) = 1 AND NOT st.pending
                            AND (st.closed_until IS NULL OR st.closed_until <= v_today OR v_date < v_today)
                            AND (lr.last_slot IS NULL OR lr.last_slot <= v_date)
                            AND (st.last_done IS NULL OR st.last_done <= v_date), false) AS ok,
                   st.unit, st.segs[1] AS seg, st.skips_total, st.kept_total, st.missed_total, st.done_total, st.last_done,
                   lr.first_slot AS lr_first, lr.last_slot AS lr_last, lr.kept AS lr_kept, lr.next_missed AS lr_next_missed,
                   greatest(v_date - 6, st.first_slot) AS a7, greatest(v_date - 29, st.first_slot) AS a30,
                   greatest(v_date - 364, st.first_slot) AS a365,
                   CASE WHEN lr.first_slot IS NULL THEN st.first_slot ELSE lr.last_slot + 1 END AS aall
            FROM (SELECT 1) AS one
            LEFT JOIN public.habit_streak_state st ON st.user_id = p_user AND st.template_id = t.id
            LEFT JOIN LATERAL (
                SELECT r.first_slot, r.last_slot, r.kept, r.next_missed FROM public.habit_streak_runs r
                WHERE r.user_id = p_user AND r.template_id = t.id ORDER BY r.first_slot DESC LIMIT 1) lr ON st.user_id IS NOT NULL
            OFFSET 0) g
        LEFT JOIN LATERAL (
            SELECT r.kept, r.first_slot, r.last_slot FROM public.habit_streak_runs r
            WHERE g.ok AND r.user_id = p_user AND r.template_id = t.id AND r.last_slot <= v_date
            ORDER BY r.kept DESC, r.first_slot LIMIT 1) best ON true
        LEFT JOIN LATERAL (
            -- fN: the first run starting in window N, else b + 1 (a plain bound: inside a COALESCE
            -- the generic plan filtered it instead of bounding the index scan).
            SELECT coalesce(sum(r.kept) FILTER (WHERE r.first_slot >= g.a7), 0)::integer AS rk7,
                   coalesce(min(r.first_slot) FILTER (WHERE r.first_slot >= g.a7), v_date + 1) AS f7,
                   coalesce(sum(r.kept) FILTER (WHERE r.first_slot >= g.a30), 0)::integer AS rk30,
                   coalesce(min(r.first_slot) FILTER (WHERE r.first_slot >= g.a30), v_date + 1) AS f30,
                   coalesce(sum(r.kept), 0)::integer AS rk365, coalesce(min(r.first_slot), v_date + 1) AS f365
            FROM public.habit_streak_runs r
            WHERE g.ok AND r.user_id = p_user AND r.template_id = t.id AND r.first_slot >= g.a365 AND r.first_slot <= v_date) ra ON true
        LEFT JOIN LATERAL (
            SELECT ra.rk7 + (SELECT count(*)::integer FROM public.habit_completions c
                    WHERE c.user_id = p_user AND c.template_id = t.id
                      AND c.completed_date >= g.a7 AND c.completed_date < ra.f7
                      AND c.completed_date >= (g.seg).lo AND c.completed_date < (g.seg).hi
                      AND habit.due_on((g.seg).schedule, (g.seg).first_day, c.completed_date)) AS k7,
                   ra.rk30 + (SELECT count(*)::integer FROM public.habit_completions c
                    WHERE c.user_id = p_user AND c.template_id = t.id
                      AND c.completed_date >= g.a30 AND c.completed_date < ra.f30
                      AND c.completed_date >= (g.seg).lo AND c.completed_date < (g.seg).hi
                      AND habit.due_on((g.seg).schedule, (g.seg).first_day, c.completed_date)) AS k30,
                   ra.rk365 + (SELECT count(*)::integer FROM public.habit_completions c
                    WHERE c.user_id = p_user AND c.template_id = t.id
                      AND c.completed_date >= g.a365 AND c.completed_date < ra.f365
                      AND c.completed_date >= (g.seg).lo AND c.completed_date < (g.seg).hi
                      AND habit.due_on((g.seg).schedule, (g.seg).first_day, c.completed_date)) AS k365,
                   CASE WHEN g.lr_last = v_date THEN 1 ELSE 0 END AS kb
            WHERE g.ok OFFSET 0) ev ON true
        LEFT JOIN LATERAL (
            SELECT (count(*) FILTER (WHERE k.skipped_date >= g.a7))::integer AS s7,
                   (count(*) FILTER (WHERE k.skipped_date >= g.a30))::integer AS s30,
                   (count(*) FILTER (WHERE k.skipped_date >= g.a365))::integer AS s365,
                   (count(*) FILTER (WHERE k.skipped_date >= g.aall))::integer AS sall
            FROM public.habit_skips k
            WHERE g.ok AND g.skips_total > 0 AND k.user_id = p_user AND k.template_id = t.id
              AND k.skipped_date >= least(g.a365, g.aall) AND k.skipped_date < v_date
              AND k.skipped_date >= (g.seg).lo AND k.skipped_date < (g.seg).hi
              AND habit.due_on((g.seg).schedule, (g.seg).first_day, k.skipped_date)) sk ON true
        LEFT JOIN LATERAL (
            SELECT * FROM habit.streak_stats(p_user, t.id, v_date, v_today) WHERE NOT g.ok OFFSET 0) s ON true
        WHERE t.user_id = p_user
          AND CASE WHEN p_template IS NULL THEN t.id IN (SELECT o.id FROM habit.habits_on(p_user, v_date, v_today, v_tz, v_ds) AS o(id))
                                                AND t.archived_at IS NULL
                   ELSE t.id = p_template END
          AND (g.ok OR s.template_id IS NOT NULL)
        ORDER BY t.sort_order NULLS LAST, t.created_at, t.id;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_stats(uuid, uuid, date) IS
    'Streaks, rates and totals at p_date (NULL: today in the user''s zone) of the habit p_template, or of every habit on that day in day.get''s order.';

-- The current streak at R (NULL: today in the user's zone) of every habit on at R.
CREATE OR REPLACE FUNCTION habit.current_streaks(p_user uuid, p_date date DEFAULT NULL)
    RETURNS TABLE (template_id uuid, current_length integer, current_start date)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $fn$
    DECLARE
        v_tz text := habit.user_time_zone(p_user, NULL);
        v_ds time := habit.user_day_start(p_user);
        v_today date := habit.local_day(now(), v_tz, v_ds);
        v_date date := coalesce(p_date, v_today);
    BEGIN
        RETURN QUERY
        SELECT t.id, c.current_length, c.current_start FROM public.habit_templates t
        CROSS JOIN LATERAL habit.current_streak(p_user, t.id, v_date, v_today) c
        WHERE t.user_id = p_user AND t.archived_at IS NULL
          AND t.id IN (SELECT o.id FROM habit.habits_on(p_user, v_date, v_today, v_tz, v_ds) AS o(id));
    END
    $fn$;
COMMENT ON FUNCTION habit.current_streaks(uuid, date) IS
    'The current streak at p_date (NULL: today in the user''s zone) of every habit on that day and not archived.';


-- For admins (and after a bulk load with triggers disabled): every habit's streaks from scratch.
CREATE OR REPLACE FUNCTION habit.rebuild_all_streaks() RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        n bigint;
    BEGIN
        IF NOT pg_has_role(session_user, 'habit_admin', 'MEMBER') AND NOT pg_has_role(current_user, 'habit_admin', 'MEMBER') THEN
            RAISE EXCEPTION 'habit.rebuild_all_streaks is only for habit_admin' USING ERRCODE = 'insufficient_privilege';
        END IF;
        SELECT count(*) INTO n FROM (SELECT habit.streak_rebuild(t.user_id, t.id) FROM public.habit_templates t ORDER BY t.id) x;
        RETURN n;
    END
    $fn$;
COMMENT ON FUNCTION habit.rebuild_all_streaks() IS
    'Rebuilds every habit''s streak runs and state from its events; returns the number of habits. habit_admin only.';

-- The habits whose streaks are pending (after a migration that counts them anew, or a
-- failed commit-time rebuild never left one), rebuilt: sql/derived.sql calls it after
-- every migration.
CREATE OR REPLACE FUNCTION habit.rebuild_pending_streaks() RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        n bigint;
    BEGIN
        SELECT count(*) INTO n FROM (SELECT habit.streak_rebuild(s.user_id, s.template_id) FROM public.habit_streak_state s
                                     WHERE s.pending ORDER BY s.template_id) x;
        RETURN n;
    END
    $fn$;
COMMENT ON FUNCTION habit.rebuild_pending_streaks() IS
    'Rebuilds the streaks of every habit marked pending; returns how many (sql/derived.sql, after migrations).';

-- Marks a habit's derived state for a rebuild at commit (a change of its periods, schedule
-- unit, zone or week start changes every slot).
CREATE OR REPLACE FUNCTION habit.streak_invalidate(p_user uuid, p_template uuid) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
    UPDATE public.habit_streak_state s SET pending = true
    WHERE s.user_id = p_user AND (p_template IS NULL OR s.template_id = p_template) AND NOT s.pending;
    END
    $fn$;

-- 4. Streaks kept pending are rebuilt at commit ------------------------------------------------------
CREATE OR REPLACE FUNCTION habit.habit_streak_state_rebuild() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF EXISTS (SELECT 1 FROM public.habit_streak_state s
                   WHERE s.user_id = NEW.user_id AND s.template_id = NEW.template_id AND s.pending) THEN
            PERFORM habit.streak_rebuild(NEW.user_id, NEW.template_id);
        END IF;
        RETURN NULL;
    END
    $fn$;
