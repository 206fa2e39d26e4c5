-- Streaks, rates and the calendar (issue 17). The definitions are those of docs/protocol.md
-- ("Streaks, rates and the calendar"); "on", "due", "done" and "skipped" are those of
-- habit.habit_days_at (functions/history.sql), with the real today of the user's zone.
--
--   habit.habit_slots        one habit's slots (days, or the user's weeks) with their state:
--                            kept, excused, missed or neutral (the reference, by scanning)
--   habit.habit_stats_scan   one habit's streaks, rates and totals at R from its slots (the
--                            reference implementation)
--   habit.habit_stats        streaks, rates and totals of one habit or of every habit on R
--   habit.current_streaks    only the current streak of every habit on R (day.get's include)
--   habit.stats_calendar     per day of a range: due, done, skipped and a level 0–4
--
-- The reads are SECURITY INVOKER: the caller's role and claims apply, and with them
-- row-level security; every statement filters by the user. The ledger's maintenance
-- (habit.rebuild_streak_slots and the trigger functions) is SECURITY DEFINER: the ledger is
-- not writable by the users' roles.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
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
--            times_per_week, else the number of due days of the week: 'kept' when
--            done ≥ max(0, target − skipped), else 'missed' (never excused nor neutral).
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
                   CASE WHEN w.done >= greatest(0, w.target - w.skipped) THEN 'kept' ELSE 'missed' END
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
    'One habit''s slots (days, or the user''s weeks) in a range with their own state: kept, excused, missed, neutral; days not on have no row (sql/0011).';

-- The unit of a habit: weeks when its current schedule is times_per_week, else days.
-- Inlinable (no SET clause; the operators schema-qualified): the quick reads call it per habit.
CREATE OR REPLACE FUNCTION habit.streak_unit(schedule jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN schedule OPERATOR(pg_catalog.->>) 'type' OPERATOR(pg_catalog.=) 'times_per_week' THEN 'weeks' ELSE 'days' END
    $fn$;
COMMENT ON FUNCTION habit.streak_unit(jsonb) IS
    'The unit a habit''s streaks and rates count in, from its current schedule: weeks for times_per_week, else days (sql/0011).';

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
        CROSS JOIN LATERAL habit.period_on_days(p.started_at, p.ended_at, v_tz, p_today) AS r(days)
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
    'One habit''s streaks, rates and totals at p_date (today p_today), computed by scanning its slots: the reference implementation (sql/0011).';

-- The calendar ---------------------------------------------------------------------------------
-- Per day of [p_from, p_to] (at most 366 days; else data_exception), over the user's habits
-- (or p_template), counting the (habit, day) pairs on and due (habit.habit_days_at with the
-- real today): due, done and skipped among them, and level = 0 when done = 0 or
-- due − skipped = 0, else ceil(4 × done ÷ (due − skipped)) (1…4). Every day, ordered.
CREATE OR REPLACE FUNCTION habit.stats_calendar(p_user uuid, p_template uuid, p_from date, p_to date)
    RETURNS TABLE (day date, due integer, done integer, skipped integer, level integer)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_today date := habit.local_date(now(), habit.user_time_zone(p_user, NULL));
    BEGIN
        IF p_from IS NULL OR p_to IS NULL OR p_to < p_from OR p_to - p_from >= 366 THEN
            RAISE EXCEPTION 'a range of 1 to 366 days is needed, not % … %', p_from, p_to USING ERRCODE = 'data_exception';
        END IF;
        RETURN QUERY
        SELECT g.day::date, coalesce(a.due, 0), coalesce(a.done, 0), coalesce(a.skipped, 0),
               CASE WHEN coalesce(a.done, 0) = 0 OR a.due - a.skipped = 0 THEN 0
                    ELSE least(4, greatest(1, (4 * a.done + (a.due - a.skipped) - 1) / (a.due - a.skipped))) END
        FROM generate_series(p_from::timestamp, p_to::timestamp, interval '1 day') AS g(day)
        LEFT JOIN (
            SELECT d.day, count(*)::integer AS due, (count(*) FILTER (WHERE d.done))::integer AS done,
                   (count(*) FILTER (WHERE d.skipped))::integer AS skipped
            FROM habit.habit_days_at(p_user, p_from, p_to, v_today) d
            WHERE d.due AND (p_template IS NULL OR d.template_id = p_template)
            GROUP BY d.day
        ) a ON a.day = g.day::date
        ORDER BY 1;
    END
    $fn$;
COMMENT ON FUNCTION habit.stats_calendar(uuid, uuid, date, date) IS
    'Per day of [p_from, p_to] (at most 366 days): the due habit-days of the user''s habits (or one), how many done and skipped, and a level 0–4 (sql/0011).';

-- The ledger: slots materialized on write, with prefix counts ---------------------------------
-- Reads must be index probes, not a scan of three years of days. Per habit, one row per OPEN
-- slot (kept or missed; neutral and excused slots get no row: they change no count), in the
-- habit's unit, with FINAL states (habit.habit_slots with p_today = 'infinity': a day is on
-- when a period overlaps it, and a due day not done nor skipped is missed whatever the time),
-- so rows never go stale as days pass. Each row (public.habit_streak_slots) carries the prefix
-- counts up to and including it:
--   kept_cum, open_cum     kept slots and open slots so far (rates over any window: two probes)
--   run_pos, run_first     position of the slot in its run (0 when missed) and the run's first
--                          slot (the current streak: one probe)
--   best_len, best_first, best_last   the longest run so far, cut at this slot, the earliest
--                          on ties (the longest streak: the same probe)
-- Rows exist up to the habit's horizon (public.habit_streak_state): the latest of today and
-- the habit's latest completion or skip when it was last maintained. Past the horizon there
-- are no completions and no skips (they would have moved it), so the few slots there are
-- scanned on read (habit.habit_slots with the real today).
--
-- Why a row per open slot rather than a row per run: with runs, the kept and missed counts of
-- a window that starts inside a run need due − excused days by arithmetic over the periods and
-- a per-skip due test; with prefix counts per slot they are two index probes. At 70 % done the
-- runs are short anyway (a run per ~3 open slots), so runs would save only about 3× the rows.

-- Recomputes the ledger of one habit from the slot of p_from on (NULL: all of it) up to its
-- horizon. Locks the habit's state row first (INSERT … ON CONFLICT, then UPDATE): under READ
-- COMMITTED a concurrent maintenance of the same habit waits and the statements below see its
-- committed rows; under REPEATABLE READ the UPDATE raises 40001 instead of storing a ledger
-- computed from a stale snapshot. A habit that no longer exists (deleted in the same
-- statement) is passed over. The days unit restarts at the week start before p_from (a
-- times_per_week period's due days depend on the week's completions).
CREATE OR REPLACE FUNCTION habit.rebuild_streak_slots(p_user uuid, p_template uuid, p_from date)
    RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_unit text;
        v_old_unit text;
        v_old_horizon date;
        v_tz text;
        v_today date;
        v_wk integer;
        v_first date;
        v_start date;
        v_horizon date;
        v_width integer;
        v_last_done date;
        v_done_days integer;
        v_last_ended timestamptz;
        prev public.habit_streak_slots;
        rec record;
        kept_cum integer := 0;
        open_cum integer := 0;
        run_pos integer := 0;
        run_first date;
        best_len integer := 0;
        best_first date;
        best_last date;
        a_slot date[] := '{}';
        a_kept integer[] := '{}';
        a_open integer[] := '{}';
        a_pos integer[] := '{}';
        a_first date[] := '{}';
        a_blen integer[] := '{}';
        a_bfirst date[] := '{}';
        a_blast date[] := '{}';
    BEGIN
        SELECT habit.streak_unit(t.schedule) INTO v_unit FROM public.habit_templates t
        WHERE t.id = p_template AND t.user_id = p_user;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_tz := habit.user_time_zone(p_user, NULL);
        v_today := habit.local_date(now(), v_tz);
        v_wk := habit.user_week_start_isodow(p_user);
        INSERT INTO public.habit_streak_state AS s (template_id, user_id, unit, horizon, horizon_slot, done_days)
        VALUES (p_template, p_user, v_unit, v_today, v_today, 0) ON CONFLICT (template_id) DO NOTHING;
        IF FOUND THEN
            -- No ledger yet: all of it.
            p_from := NULL;
        END IF;
        SELECT s.unit, s.horizon INTO v_old_unit, v_old_horizon FROM public.habit_streak_state s WHERE s.template_id = p_template FOR UPDATE;
        -- Locked: read what committed writers left (plpgsql takes a snapshot per statement).
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF v_old_unit <> v_unit THEN
            p_from := NULL;
        END IF;
        SELECT min(lower(r.days)) FILTER (WHERE NOT isempty(r.days)), max(p.ended_at) INTO v_first, v_last_ended
        FROM public.habit_periods p
        CROSS JOIN LATERAL habit.period_on_days(p.started_at, p.ended_at, v_tz, 'infinity') AS r(days)
        WHERE p.user_id = p_user AND p.template_id = p_template;
        SELECT max(c.completed_date), count(*) INTO v_last_done, v_done_days
        FROM public.habit_completions c WHERE c.user_id = p_user AND c.template_id = p_template;
        v_horizon := greatest(v_today, v_last_done,
            (SELECT max(k.skipped_date) FROM public.habit_skips k WHERE k.user_id = p_user AND k.template_id = p_template));
        -- The rows between the old and the new horizon change too: a write past the old horizon
        -- (a skip ahead, a write days after the last one) adds the slots before it, a horizon
        -- drawn back (a future skip undone) drops them.
        IF p_from IS NOT NULL THEN
            p_from := least(p_from, least(v_old_horizon, v_horizon) + 1);
        END IF;
        UPDATE public.habit_streak_state s
        SET unit = v_unit, horizon = v_horizon,
            horizon_slot = CASE WHEN v_unit = 'weeks' THEN habit.week_start(v_horizon, v_wk) ELSE v_horizon END,
            done_days = v_done_days, last_done = v_last_done, last_ended = v_last_ended
        WHERE s.template_id = p_template;

        IF v_first IS NULL THEN
            -- Never on: no slot at all.
            DELETE FROM public.habit_streak_slots s WHERE s.user_id = p_user AND s.template_id = p_template;
        ELSE
            v_start := habit.week_start(greatest(coalesce(p_from, v_first), v_first), v_wk);
            DELETE FROM public.habit_streak_slots s
            WHERE s.user_id = p_user AND s.template_id = p_template AND (p_from IS NULL OR s.slot >= v_start);
            v_width := CASE WHEN v_unit = 'weeks' THEN 7 ELSE 1 END;

            SELECT s.* INTO prev FROM public.habit_streak_slots s
            WHERE s.user_id = p_user AND s.template_id = p_template AND s.slot < v_start
            ORDER BY s.slot DESC LIMIT 1;
            IF FOUND THEN
                kept_cum := prev.kept_cum; open_cum := prev.open_cum;
                run_pos := prev.run_pos; run_first := prev.run_first;
                best_len := prev.best_len; best_first := prev.best_first; best_last := prev.best_last;
            END IF;

            FOR rec IN SELECT s.slot, s.state FROM habit.habit_slots(p_user, p_template, v_unit, v_start, v_horizon, 'infinity') s
                     WHERE s.slot >= v_start AND s.state IN ('kept', 'missed') ORDER BY s.slot LOOP
                open_cum := open_cum + 1;
                IF rec.state = 'kept' THEN
                    kept_cum := kept_cum + 1;
                    IF run_pos = 0 THEN
                        run_first := rec.slot;
                    END IF;
                    run_pos := run_pos + 1;
                    IF run_pos > best_len THEN
                        best_len := run_pos; best_first := run_first; best_last := rec.slot + v_width - 1;
                    END IF;
                ELSE
                    run_pos := 0; run_first := NULL;
                END IF;
                a_slot := a_slot || rec.slot; a_kept := a_kept || kept_cum; a_open := a_open || open_cum;
                a_pos := a_pos || run_pos; a_first := a_first || run_first;
                a_blen := a_blen || best_len; a_bfirst := a_bfirst || best_first; a_blast := a_blast || best_last;
            END LOOP;
            INSERT INTO public.habit_streak_slots (user_id, template_id, slot, kept_cum, open_cum, run_pos, run_first, best_len, best_first, best_last)
            SELECT p_user, p_template, u.* FROM unnest(a_slot, a_kept, a_open, a_pos, a_first, a_blen, a_bfirst, a_blast) AS u;
        END IF;
        -- The ledger's last two rows' runs, kept on the state row: the current streak at R from
        -- the horizon's slot on is read there, without a probe (habit.current_streak).
        UPDATE public.habit_streak_state s
        SET last_slot = t.slot, last_run_pos = t.run_pos, last_run_first = t.run_first,
            prior_run_pos = t.prior_run_pos, prior_run_first = t.prior_run_first
        FROM (SELECT max(x.slot) AS slot, (array_agg(x.run_pos ORDER BY x.slot DESC))[1] AS run_pos,
                     (array_agg(x.run_first ORDER BY x.slot DESC))[1] AS run_first,
                     (array_agg(x.run_pos ORDER BY x.slot DESC))[2] AS prior_run_pos,
                     (array_agg(x.run_first ORDER BY x.slot DESC))[2] AS prior_run_first
              FROM (SELECT l.slot, l.run_pos, l.run_first FROM public.habit_streak_slots l
                    WHERE l.user_id = p_user AND l.template_id = p_template ORDER BY l.slot DESC LIMIT 2) x) t
        WHERE s.template_id = p_template;
    END
    $fn$;
COMMENT ON FUNCTION habit.rebuild_streak_slots(uuid, uuid, date) IS
    'Recomputes one habit''s streak ledger (habit_streak_slots, habit_streak_state) from the slot of p_from (NULL: all) to its horizon; passes over a habit that no longer exists (sql/0011).';

-- Maintenance: statement-level AFTER triggers with transition tables, one rebuild per habit
-- and statement (a bulk load of millions of completions rebuilds each habit once), from the
-- earliest date the statement touched.
CREATE OR REPLACE FUNCTION habit.rebuild_streaks_from(p_changes jsonb) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        -- In template order, so two statements over the same habits cannot deadlock.
        PERFORM habit.rebuild_streak_slots(c.user_id, c.template_id, c.day)
        FROM jsonb_to_recordset(p_changes) AS c(user_id uuid, template_id uuid, day date)
        ORDER BY c.template_id;
    END
    $fn$;

-- Periods: from the earliest local day a changed period (old or new) may change: its first
-- day, or the day before its end's local date (habit.period_on_days ends at L, L + 1 or L + 2).
CREATE OR REPLACE FUNCTION habit.streak_period_day(p_user uuid, p_started timestamptz, p_ended timestamptz) RETURNS date
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT least(habit.local_date(p_started, z.tz), habit.local_date(p_ended, z.tz) - 1)
    FROM (SELECT habit.user_time_zone(p_user, NULL) AS tz) z
    $fn$;

-- One trigger function for completions, skips and periods. TG_ARGV[0]: the SQL expression,
-- over a changed row r, of the earliest day it may change (r.completed_date, r.skipped_date,
-- or habit.streak_period_day for a period); written by the CREATE TRIGGER statements of
-- sql/triggers, never from input. The changed rows are those the event has: new, old, or both.
CREATE OR REPLACE FUNCTION habit.streaks_after_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        changes jsonb;
    BEGIN
        EXECUTE format('SELECT jsonb_agg(x) FROM (SELECT r.user_id, r.template_id, min(%s) AS day FROM (%s) r GROUP BY 1, 2) x',
                       TG_ARGV[0],
                       CASE TG_OP WHEN 'INSERT' THEN 'SELECT * FROM new_rows'
                                  WHEN 'DELETE' THEN 'SELECT * FROM old_rows'
                                  ELSE 'SELECT * FROM old_rows UNION ALL SELECT * FROM new_rows' END) INTO changes;
        IF changes IS NOT NULL THEN
            PERFORM habit.rebuild_streaks_from(changes);
        END IF;
        RETURN NULL;
    END
    $fn$;

-- A habit's schedule decides its unit: a changed schedule rebuilds the habit (the periods'
-- trigger ran before the row changed, with the old unit).
CREATE OR REPLACE FUNCTION habit.streaks_after_templates() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        changes jsonb;
    BEGIN
        SELECT jsonb_agg(x) INTO changes FROM (
            SELECT n.user_id, n.id AS template_id, NULL::date AS day
            FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE o.schedule IS DISTINCT FROM n.schedule OR o.user_id IS DISTINCT FROM n.user_id) x;
        IF changes IS NOT NULL THEN
            PERFORM habit.rebuild_streaks_from(changes);
        END IF;
        RETURN NULL;
    END
    $fn$;

-- The user's zone and week decide every local date and week: a changed (inserted, deleted)
-- profile rebuilds all the user's habits.
CREATE OR REPLACE FUNCTION habit.streaks_after_profiles() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        changes jsonb;
    BEGIN
        IF TG_OP = 'INSERT' THEN
            SELECT jsonb_agg(x) INTO changes FROM (
                SELECT t.user_id, t.id AS template_id, NULL::date AS day
                FROM new_rows n JOIN public.habit_templates t ON t.user_id = n.user_id
                WHERE n.timezone <> 'UTC' OR n.week_start <> 'monday') x;
        ELSIF TG_OP = 'DELETE' THEN
            SELECT jsonb_agg(x) INTO changes FROM (
                SELECT t.user_id, t.id AS template_id, NULL::date AS day
                FROM old_rows o JOIN public.habit_templates t ON t.user_id = o.user_id
                WHERE o.timezone <> 'UTC' OR o.week_start <> 'monday') x;
        ELSE
            SELECT jsonb_agg(x) INTO changes FROM (
                SELECT t.user_id, t.id AS template_id, NULL::date AS day
                FROM new_rows n JOIN old_rows o ON o.user_id = n.user_id
                JOIN public.habit_templates t ON t.user_id IN (n.user_id, o.user_id)
                WHERE n.timezone IS DISTINCT FROM o.timezone OR n.week_start IS DISTINCT FROM o.week_start
                   OR n.user_id IS DISTINCT FROM o.user_id) x;
        END IF;
        IF changes IS NOT NULL THEN
            PERFORM habit.rebuild_streaks_from(changes);
        END IF;
        RETURN NULL;
    END
    $fn$;

-- For admins (and after a bulk load with triggers disabled): every habit's ledger from scratch.
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
        SELECT count(*) INTO n FROM (SELECT habit.rebuild_streak_slots(t.user_id, t.id, NULL)
                                     FROM public.habit_templates t ORDER BY t.id) x;
        RETURN n;
    END
    $fn$;
COMMENT ON FUNCTION habit.rebuild_all_streaks() IS
    'Rebuilds every habit''s streak ledger from scratch; returns the number of habits. habit_admin only (sql/0011).';

-- Reads: the ledger's probes, the scan as the fallback -------------------------------------
-- Per habit, at R with slot(R) = R (days) or R's week: rR = the ledger row of slot(R) when it
-- is kept; b = the last row before slot(R); base = rR, else b (a missed slot(R) is not over:
-- neutral). Current streak = base's run, longest = base's best (runs are cut at slot(R) by
-- construction), kept and open slots of a window from a = the counts of base minus those of
-- the last row before slot(a). Past the horizon (no row; R later than the last write) the
-- slots up to slot(R) are scanned (habit.habit_slots with the real today): there are no
-- completions nor skips there, so each open one is missed; one that is kept (a week whose
-- target is 0) sends the habit to the scan. The scan (habit.habit_stats_scan) also answers
--   - a habit without a ledger, or whose ledger is in another unit (not maintained yet);
--   - a habit with a period closed so recently that its final on-days reach today or later
--     (the ledger's final states count today as on; the real today does not).
CREATE OR REPLACE FUNCTION habit.habit_stats_fast(p_user uuid, p_templates uuid[], p_date date, p_today date,
                                       p_zone text, p_week_isodow integer)
    RETURNS TABLE (template_id uuid, unit text, current_length integer, current_start date,
                   longest_length integer, longest_start date, longest_end date,
                   rate_7 double precision, rate_30 double precision, rate_365 double precision,
                   rate_all double precision, total_done integer, last_done date, needs_scan boolean)
    LANGUAGE plpgsql STABLE
    -- PL/pgSQL: the plan is kept per session (an SQL function would be planned at every call).
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $fn$
    BEGIN
    RETURN QUERY
    SELECT k.template_id, k.unit,
           CASE WHEN g.missed_before_r > 0 OR base.run_pos IS NULL THEN 0 ELSE base.run_pos END,
           CASE WHEN g.missed_before_r > 0 OR base.run_pos = 0 THEN NULL ELSE base.run_first END,
           coalesce(base.best_len, 0), base.best_first, base.best_last,
           (coalesce(base.kept_cum, 0) - coalesce(w7.kept_cum, 0))::double precision
               / nullif(coalesce(base.open_cum, 0) - coalesce(w7.open_cum, 0) + g.missed_from_7, 0),
           (coalesce(base.kept_cum, 0) - coalesce(w30.kept_cum, 0))::double precision
               / nullif(coalesce(base.open_cum, 0) - coalesce(w30.open_cum, 0) + g.missed_from_30, 0),
           (coalesce(base.kept_cum, 0) - coalesce(w365.kept_cum, 0))::double precision
               / nullif(coalesce(base.open_cum, 0) - coalesce(w365.open_cum, 0) + g.missed_from_365, 0),
           coalesce(base.kept_cum, 0)::double precision / nullif(coalesce(base.open_cum, 0) + g.missed_before_r, 0),
           (k.done_days - (SELECT count(*) FROM public.habit_completions c
                           WHERE c.user_id = p_user AND c.template_id = k.template_id AND c.completed_date > p_date))::integer,
           (SELECT max(c.completed_date) FROM public.habit_completions c
            WHERE c.user_id = p_user AND c.template_id = k.template_id AND c.completed_date <= p_date),
           g.kept > 0
    FROM (
        SELECT st.template_id, st.unit, st.done_days, st.horizon,
               CASE WHEN st.unit = 'weeks' THEN habit.week_start(p_date, p_week_isodow) ELSE p_date END AS slot_r,
               CASE WHEN st.unit = 'weeks' THEN habit.week_start(st.horizon, p_week_isodow) ELSE st.horizon END AS slot_h,
               CASE WHEN st.unit = 'weeks' THEN 7 ELSE 1 END AS width
        FROM public.habit_streak_state st
        WHERE st.user_id = p_user AND st.template_id = ANY (p_templates)
    ) k
    LEFT JOIN LATERAL (
        -- base: the row of slot(R) when kept, else the last row before slot(R).
        SELECT s.* FROM public.habit_streak_slots s
        WHERE s.user_id = p_user AND s.template_id = k.template_id AND s.slot <= k.slot_r
          AND (s.slot < k.slot_r OR s.run_pos > 0)
        ORDER BY s.slot DESC LIMIT 1
    ) base ON true
    LEFT JOIN LATERAL (
        SELECT s.kept_cum, s.open_cum FROM public.habit_streak_slots s
        WHERE s.user_id = p_user AND s.template_id = k.template_id
          AND s.slot < CASE WHEN k.unit = 'weeks' THEN habit.week_start(p_date - 6, p_week_isodow) ELSE p_date - 6 END
        ORDER BY s.slot DESC LIMIT 1
    ) w7 ON true
    LEFT JOIN LATERAL (
        SELECT s.kept_cum, s.open_cum FROM public.habit_streak_slots s
        WHERE s.user_id = p_user AND s.template_id = k.template_id
          AND s.slot < CASE WHEN k.unit = 'weeks' THEN habit.week_start(p_date - 29, p_week_isodow) ELSE p_date - 29 END
        ORDER BY s.slot DESC LIMIT 1
    ) w30 ON true
    LEFT JOIN LATERAL (
        SELECT s.kept_cum, s.open_cum FROM public.habit_streak_slots s
        WHERE s.user_id = p_user AND s.template_id = k.template_id
          AND s.slot < CASE WHEN k.unit = 'weeks' THEN habit.week_start(p_date - 364, p_week_isodow) ELSE p_date - 364 END
        ORDER BY s.slot DESC LIMIT 1
    ) w365 ON true
    -- Past the horizon: scanned, only when R is past it.
    CROSS JOIN LATERAL (
        SELECT count(*) FILTER (WHERE x.state = 'missed' AND x.slot < k.slot_r) AS missed_before_r,
               count(*) FILTER (WHERE x.state = 'missed' AND x.slot < k.slot_r
                                  AND x.slot + k.width - 1 >= p_date - 6) AS missed_from_7,
               count(*) FILTER (WHERE x.state = 'missed' AND x.slot < k.slot_r
                                  AND x.slot + k.width - 1 >= p_date - 29) AS missed_from_30,
               count(*) FILTER (WHERE x.state = 'missed' AND x.slot < k.slot_r
                                  AND x.slot + k.width - 1 >= p_date - 364) AS missed_from_365,
               count(*) FILTER (WHERE x.state = 'kept') AS kept
        FROM (SELECT h.slot, h.state
              FROM (SELECT 1 WHERE k.slot_r > k.slot_h OFFSET 0) past_horizon
              CROSS JOIN LATERAL habit.habit_slots(p_user, k.template_id, k.unit, k.slot_h + k.width, k.slot_r, p_today) h
              WHERE h.slot > k.slot_h AND h.slot <= k.slot_r) x
    ) g
    WHERE habit.streak_unit((SELECT t.schedule FROM public.habit_templates t WHERE t.id = k.template_id AND t.user_id = p_user)) = k.unit
      AND NOT EXISTS (
        SELECT 1 FROM public.habit_periods p
        WHERE p.user_id = p_user AND p.template_id = k.template_id AND p.ended_at IS NOT NULL
          AND p.ended_at > ((p_today - 3)::timestamp AT TIME ZONE p_zone)
          AND upper(habit.period_on_days(p.started_at, p.ended_at, p_zone, 'infinity')) > p_today);
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_stats_fast(uuid, uuid[], date, date, text, integer) IS
    'The habits'' stats at p_date from its streak ledger (index probes); no row when the ledger cannot answer (then habit.habit_stats_scan does); needs_scan when a slot past the horizon is kept (sql/0011).';

-- One habit's stats at R by the ledger with the slots past its horizon scanned, else by the
-- scan (habit.habit_stats_fast, then habit.habit_stats_scan): the slow path of
-- habit.habit_stats_quick and habit.current_streak. No row when the habit is not the user's.
CREATE OR REPLACE FUNCTION habit.habit_stats_slow(p_user uuid, p_template uuid, p_date date)
    RETURNS TABLE (template_id uuid, unit text, current_length integer, current_start date,
                   longest_length integer, longest_start date, longest_end date,
                   rate_7 double precision, rate_30 double precision, rate_365 double precision,
                   rate_all double precision, total_done integer, last_done date)
    LANGUAGE plpgsql STABLE ROWS 1
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $fn$
    DECLARE
        v_tz text := habit.user_time_zone(p_user, NULL);
        v_today date := habit.local_date(now(), v_tz);
    BEGIN
        RETURN QUERY
        SELECT f.template_id, f.unit, f.current_length, f.current_start, f.longest_length, f.longest_start, f.longest_end,
               f.rate_7, f.rate_30, f.rate_365, f.rate_all, f.total_done, f.last_done
        FROM habit.habit_stats_fast(p_user, ARRAY[p_template], p_date, v_today, v_tz, habit.user_week_start_isodow(p_user)) f
        WHERE NOT f.needs_scan;
        IF NOT FOUND THEN
            RETURN QUERY SELECT * FROM habit.habit_stats_scan(p_user, p_template, p_date, v_today);
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_stats_slow(uuid, uuid, date) IS
    'One habit''s stats at p_date from its ledger with the slots past the horizon scanned, else by the scan: the slow path of the quick reads (sql/0011).';

-- Whether the ledger alone answers for a habit at R, with no slot to scan: it is in the unit
-- of the habit's current schedule; R is at most one slot past the horizon's slot for days (R's
-- own slot is then neutral: no completion past the horizon) and in the horizon's week for
-- weeks (a week past it may be kept, when its target is 0); and no period of the habit ended
-- in the last 5 days (the ledger's final states count a day on when a period overlaps it;
-- the real today does not for a period closed today or yesterday: the scan decides).
-- Inlinable (one expression, no SET clause, operators schema-qualified), like habit.due_days.
CREATE OR REPLACE FUNCTION habit.streak_ledger_answers(st public.habit_streak_state, p_schedule jsonb, p_date date) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $fn$
    SELECT st.unit OPERATOR(pg_catalog.=) habit.streak_unit(p_schedule)
       AND p_date OPERATOR(pg_catalog.<=) (st.horizon_slot OPERATOR(pg_catalog.+) CASE WHEN st.unit OPERATOR(pg_catalog.=) 'weeks' THEN 6 ELSE 1 END)
       AND (st.last_ended IS NULL OR st.last_ended OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) interval '5 days'))
    $fn$;
COMMENT ON FUNCTION habit.streak_ledger_answers(public.habit_streak_state, jsonb, date) IS
    'Whether a habit''s ledger answers its stats at p_date by probes alone (unit current, R by the horizon, no period ended in the last 5 days) (sql/0011).';

-- The base of R's stats: the habit's ledger row of slot(R) when kept, else the last one before
-- slot(R) (slot(R) not over: neutral); p_width = 1 (days) or 7 (weeks). Slots are days or
-- first days of the user's weeks, so slot ≤ slot(R) ⟺ slot ≤ R and slot < slot(R) ⟺
-- slot ≤ R − width: no week arithmetic. One backward index probe; inlinable.
CREATE OR REPLACE FUNCTION habit.streak_base(p_user uuid, p_template uuid, p_date date, p_width integer)
    RETURNS SETOF public.habit_streak_slots
    LANGUAGE sql STABLE ROWS 1
    AS $fn$
    SELECT s.* FROM public.habit_streak_slots s
    WHERE s.user_id OPERATOR(pg_catalog.=) p_user AND s.template_id OPERATOR(pg_catalog.=) p_template
      AND s.slot OPERATOR(pg_catalog.<=) p_date
      AND (s.slot OPERATOR(pg_catalog.<=) (p_date OPERATOR(pg_catalog.-) p_width) OR s.run_pos OPERATOR(pg_catalog.>) 0)
    ORDER BY s.slot DESC LIMIT 1
    $fn$;
COMMENT ON FUNCTION habit.streak_base(uuid, uuid, date, integer) IS
    'The ledger row R''s stats start from: slot(R)''s when kept, else the last before slot(R) (sql/0011).';

-- The counts before a window starting at p_first: the last ledger row whose slot ends before
-- p_first (slot < slot(p_first) ⟺ slot ≤ p_first − width, as above). Inlinable.
CREATE OR REPLACE FUNCTION habit.streak_counts_before(p_user uuid, p_template uuid, p_first date, p_width integer)
    RETURNS TABLE (kept_cum integer, open_cum integer)
    LANGUAGE sql STABLE ROWS 1
    AS $fn$
    SELECT s.kept_cum, s.open_cum FROM public.habit_streak_slots s
    WHERE s.user_id OPERATOR(pg_catalog.=) p_user AND s.template_id OPERATOR(pg_catalog.=) p_template
      AND s.slot OPERATOR(pg_catalog.<=) (p_first OPERATOR(pg_catalog.-) p_width)
    ORDER BY s.slot DESC LIMIT 1
    $fn$;

-- A rate: kept ÷ open slots, NULL when none is open. Inlinable (NULLIF would look "=" up by
-- the caller's search_path).
CREATE OR REPLACE FUNCTION habit.streak_rate(kept integer, open integer) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN open OPERATOR(pg_catalog.=) 0 THEN NULL
                ELSE pg_catalog.float8(kept) OPERATOR(pg_catalog./) pg_catalog.float8(open) END
    $fn$;

-- One habit's stats at R with p_schedule its current schedule: by probes of its ledger when
-- habit.streak_ledger_answers (the state row, the base and three window probes; total_done
-- and last_done from the state unless R is before the latest completion), else
-- habit.habit_stats_slow. Exactly one row for a habit of the user. Inlinable into the caller.
CREATE OR REPLACE FUNCTION habit.habit_stats_quick(p_user uuid, p_template uuid, p_date date, p_schedule jsonb)
    RETURNS TABLE (template_id uuid, unit text, current_length integer, current_start date,
                   longest_length integer, longest_start date, longest_end date,
                   rate_7 double precision, rate_30 double precision, rate_365 double precision,
                   rate_all double precision, total_done integer, last_done date)
    LANGUAGE sql STABLE ROWS 1
    AS $fn$
    SELECT p_template, st.unit,
           pg_catalog.int4(coalesce(b.run_pos, 0)), b.run_first, pg_catalog.int4(coalesce(b.best_len, 0)), b.best_first, b.best_last,
           habit.streak_rate(coalesce(b.kept_cum, 0) OPERATOR(pg_catalog.-) coalesce(w7.kept_cum, 0),
                             coalesce(b.open_cum, 0) OPERATOR(pg_catalog.-) coalesce(w7.open_cum, 0)),
           habit.streak_rate(coalesce(b.kept_cum, 0) OPERATOR(pg_catalog.-) coalesce(w30.kept_cum, 0),
                             coalesce(b.open_cum, 0) OPERATOR(pg_catalog.-) coalesce(w30.open_cum, 0)),
           habit.streak_rate(coalesce(b.kept_cum, 0) OPERATOR(pg_catalog.-) coalesce(w365.kept_cum, 0),
                             coalesce(b.open_cum, 0) OPERATOR(pg_catalog.-) coalesce(w365.open_cum, 0)),
           habit.streak_rate(coalesce(b.kept_cum, 0), coalesce(b.open_cum, 0)),
           CASE WHEN st.last_done IS NULL OR st.last_done OPERATOR(pg_catalog.<=) p_date THEN st.done_days
                ELSE st.done_days OPERATOR(pg_catalog.-) pg_catalog.int4((SELECT pg_catalog.count(*) FROM public.habit_completions c
                     WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) p_template
                       AND c.completed_date OPERATOR(pg_catalog.>) p_date)) END,
           CASE WHEN st.last_done IS NULL OR st.last_done OPERATOR(pg_catalog.<=) p_date THEN st.last_done
                ELSE (SELECT pg_catalog.max(c.completed_date) FROM public.habit_completions c
                      WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) p_template
                        AND c.completed_date OPERATOR(pg_catalog.<=) p_date) END
    FROM public.habit_streak_state st
    CROSS JOIN LATERAL (SELECT CASE WHEN st.unit OPERATOR(pg_catalog.=) 'weeks' THEN 7 ELSE 1 END AS width) u
    LEFT JOIN LATERAL habit.streak_base(p_user, p_template, p_date, u.width) b ON true
    LEFT JOIN LATERAL habit.streak_counts_before(p_user, p_template, p_date OPERATOR(pg_catalog.-) 6, u.width) w7 ON true
    LEFT JOIN LATERAL habit.streak_counts_before(p_user, p_template, p_date OPERATOR(pg_catalog.-) 29, u.width) w30 ON true
    LEFT JOIN LATERAL habit.streak_counts_before(p_user, p_template, p_date OPERATOR(pg_catalog.-) 364, u.width) w365 ON true
    WHERE st.template_id OPERATOR(pg_catalog.=) p_template AND st.user_id OPERATOR(pg_catalog.=) p_user
      AND habit.streak_ledger_answers(st, p_schedule, p_date)
    UNION ALL
    SELECT x.* FROM (SELECT 1 WHERE NOT EXISTS (
            SELECT 1 FROM public.habit_streak_state st
            WHERE st.template_id OPERATOR(pg_catalog.=) p_template AND st.user_id OPERATOR(pg_catalog.=) p_user
              AND habit.streak_ledger_answers(st, p_schedule, p_date)) OFFSET 0) slow
    CROSS JOIN LATERAL habit.habit_stats_slow(p_user, p_template, p_date) x
    $fn$;
COMMENT ON FUNCTION habit.habit_stats_quick(uuid, uuid, date, jsonb) IS
    'One habit''s stats at p_date (p_schedule: its current schedule) by probes of its ledger, else habit.habit_stats_slow (sql/0011).';

-- The habits of p_user on at R (habit.period_on_days, in zone p_zone with today p_today): the
-- rule habit.habit_days_at expands, for one day and without due, done or skipped. A closed
-- period is on at R only when it ended after R's midnight: the index skips old periods.
CREATE OR REPLACE FUNCTION habit.habits_on(p_user uuid, p_date date, p_today date, p_zone text)
    RETURNS SETOF uuid
    LANGUAGE sql STABLE
    AS $fn$
    SELECT p.template_id FROM public.habit_periods p
    WHERE p.user_id OPERATOR(pg_catalog.=) p_user
      AND (p.ended_at IS NULL OR p.ended_at OPERATOR(pg_catalog.>) pg_catalog.timezone(p_zone, p_date::timestamp))
      AND habit.period_on_days(p.started_at, p.ended_at, p_zone, p_today) OPERATOR(pg_catalog.@>) p_date
    GROUP BY p.template_id
    $fn$;
COMMENT ON FUNCTION habit.habits_on(uuid, date, date, text) IS
    'The habits of a user on at a date (habit.period_on_days): habit.habit_days_at''s habits of one day (sql/0011).';

-- p_template NULL: every habit on at R (habit.habits_on, like day.get), ordered as day.get
-- orders them (sort_order NULLS LAST, created_at, id); given: that habit whatever its state
-- (no row: not the user's, or unknown). p_date NULL: today in the user's zone.
CREATE OR REPLACE FUNCTION habit.habit_stats(p_user uuid, p_template uuid DEFAULT NULL, p_date date DEFAULT NULL)
    RETURNS TABLE (template_id uuid, unit text, current_length integer, current_start date,
                   longest_length integer, longest_start date, longest_end date,
                   rate_7 double precision, rate_30 double precision, rate_365 double precision,
                   rate_all double precision, total_done integer, last_done date)
    LANGUAGE plpgsql STABLE
    -- Probes of a few rows: JIT's compile time (tens of ms) would dwarf them.
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $fn$
    DECLARE
        v_tz text := habit.user_time_zone(p_user, NULL);
        v_today date := habit.local_date(now(), v_tz);
        v_date date := coalesce(p_date, v_today);
    BEGIN
        RETURN QUERY
        SELECT s.* FROM public.habit_templates t
        CROSS JOIN LATERAL habit.habit_stats_quick(p_user, t.id, v_date, t.schedule) s
        WHERE t.user_id = p_user
          AND CASE WHEN p_template IS NULL THEN t.id IN (SELECT o.id FROM habit.habits_on(p_user, v_date, v_today, v_tz) AS o(id))
                   ELSE t.id = p_template END
        ORDER BY t.sort_order NULLS LAST, t.created_at, t.id;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_stats(uuid, uuid, date) IS
    'Streaks, rates and totals at p_date (NULL: today in the user''s zone) of the habit p_template, or of every habit on that day in day.get''s order (sql/0011).';

-- One habit's current streak at R with p_schedule its current schedule (day.get's include):
-- when habit.streak_ledger_answers, from the state row at R from the horizon's slot on (today,
-- for a habit written today or yesterday), else one probe of its ledger (habit.streak_base);
-- otherwise habit.habit_stats_slow. Exactly one row for a habit of the user. Inlinable, so
-- day.get's statement reads it in its own plan (a PL/pgSQL call per request cost more than
-- the probes; a probe of the ledger, 8.6 million rows for 1,000 users, more than the state row).
CREATE OR REPLACE FUNCTION habit.current_streak(p_user uuid, p_template uuid, p_date date, p_schedule jsonb)
    RETURNS TABLE (current_length integer, current_start date)
    LANGUAGE sql STABLE ROWS 1
    AS $fn$
    SELECT pg_catalog.int4(coalesce(b.run_pos, 0)), b.run_first
    FROM public.habit_streak_state st
    CROSS JOIN LATERAL (SELECT CASE WHEN st.unit OPERATOR(pg_catalog.=) 'weeks' THEN 7 ELSE 1 END AS width) u
    LEFT JOIN LATERAL (
        -- From the horizon's slot on (habit.streak_ledger_answers: R's slot is the horizon's,
        -- or the one after it for days), the base is the ledger's last row, or the row before
        -- it when the last row is R's slot and missed: both on the state row.
        SELECT CASE WHEN st.last_slot OPERATOR(pg_catalog.>) (p_date OPERATOR(pg_catalog.-) u.width) AND st.last_run_pos OPERATOR(pg_catalog.=) 0
                    THEN st.prior_run_pos ELSE st.last_run_pos END AS run_pos,
               CASE WHEN st.last_slot OPERATOR(pg_catalog.>) (p_date OPERATOR(pg_catalog.-) u.width) AND st.last_run_pos OPERATOR(pg_catalog.=) 0
                    THEN st.prior_run_first ELSE st.last_run_first END AS run_first
        WHERE p_date OPERATOR(pg_catalog.>=) st.horizon_slot
        UNION ALL
        -- Before it: one probe.
        SELECT s.run_pos, s.run_first
        FROM (SELECT 1 WHERE p_date OPERATOR(pg_catalog.<) st.horizon_slot OFFSET 0) before_horizon
        CROSS JOIN LATERAL habit.streak_base(p_user, p_template, p_date, u.width) s
    ) b ON true
    WHERE st.template_id OPERATOR(pg_catalog.=) p_template AND st.user_id OPERATOR(pg_catalog.=) p_user
      AND habit.streak_ledger_answers(st, p_schedule, p_date)
    UNION ALL
    SELECT x.current_length, x.current_start FROM (SELECT 1 WHERE NOT EXISTS (
            SELECT 1 FROM public.habit_streak_state st
            WHERE st.template_id OPERATOR(pg_catalog.=) p_template AND st.user_id OPERATOR(pg_catalog.=) p_user
              AND habit.streak_ledger_answers(st, p_schedule, p_date)) OFFSET 0) slow
    CROSS JOIN LATERAL habit.habit_stats_slow(p_user, p_template, p_date) x
    $fn$;
COMMENT ON FUNCTION habit.current_streak(uuid, uuid, date, jsonb) IS
    'One habit''s current streak at p_date (p_schedule: its current schedule) by one probe of its ledger, else habit.habit_stats_slow (sql/0011).';

-- The current streak at R (NULL: today in the user's zone) of every habit on at R.
CREATE OR REPLACE FUNCTION habit.current_streaks(p_user uuid, p_date date DEFAULT NULL)
    RETURNS TABLE (template_id uuid, current_length integer, current_start date)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $fn$
    DECLARE
        v_tz text := habit.user_time_zone(p_user, NULL);
        v_today date := habit.local_date(now(), v_tz);
        v_date date := coalesce(p_date, v_today);
    BEGIN
        RETURN QUERY
        SELECT t.id, c.current_length, c.current_start FROM public.habit_templates t
        CROSS JOIN LATERAL habit.current_streak(p_user, t.id, v_date, t.schedule) c
        WHERE t.user_id = p_user AND t.id IN (SELECT o.id FROM habit.habits_on(p_user, v_date, v_today, v_tz) AS o(id));
    END
    $fn$;
COMMENT ON FUNCTION habit.current_streaks(uuid, date) IS
    'The current streak at p_date (NULL: today in the user''s zone) of every habit on that day (sql/0011).';
