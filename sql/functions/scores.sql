-- Loop Habit Tracker's habit score (issue 33, item 5): the exponential "habit strength" Loop
-- shows, reproduced from uhabits-core (models/Score.kt, models/ScoreList.kt `recompute`, read at
-- iSoron/uhabits 08113a57ace0f875a8d9c839c7a48d8896f4f6b4; docs/protocol.md, "Score").
--
-- Loop walks every day from the habit's first entry: score = score × m + c × (1 − m), with
-- m = 0.5 ^ (√frequency / 13) and c the day's share of the target over a rolling window of the
-- frequency's denominator days; a skipped day leaves the score as it was. A day-by-day walk
-- costs what the history's length costs. Here the walk is folded over the stretches where c
-- stays the same: c changes only on a day with an event (a completion, check-in or skip) or
-- `denominator` days after one, and over k unskipped days of the same c the recurrence is
-- score × m^k + c × (1 − m^k). So the cost grows with the habit's events, never with its days.

-- Loop's frequency of a schedule (protocol.md, "Score"): its numerator and denominator.
-- Inlined SQL (no SET clause, a schema-qualified body) into habit.habit_score and
-- habit.habit_scores_at: a helper with its own SET search_path cost a tenth of a score's call.
CREATE OR REPLACE FUNCTION habit.loop_numerator(schedule jsonb) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE schedule OPERATOR(pg_catalog.->>) 'type'
               WHEN 'weekdays' THEN CASE WHEN pg_catalog.jsonb_array_length(schedule OPERATOR(pg_catalog.->) 'days') OPERATOR(pg_catalog.=) 7 THEN 1
                                         ELSE pg_catalog.jsonb_array_length(schedule OPERATOR(pg_catalog.->) 'days') END
               WHEN 'times_per_week' THEN (schedule OPERATOR(pg_catalog.->>) 'times')::integer
               WHEN 'times_in_days' THEN (schedule OPERATOR(pg_catalog.->>) 'times')::integer
               ELSE 1 END
    $fn$;
COMMENT ON FUNCTION habit.loop_numerator(jsonb) IS
    'The numerator of Loop''s frequency of a schedule: days a week (all seven: 1), times, or 1 (issue 33).';

CREATE OR REPLACE FUNCTION habit.loop_denominator(schedule jsonb) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE schedule OPERATOR(pg_catalog.->>) 'type'
               WHEN 'weekdays' THEN CASE WHEN pg_catalog.jsonb_array_length(schedule OPERATOR(pg_catalog.->) 'days') OPERATOR(pg_catalog.=) 7 THEN 1 ELSE 7 END
               WHEN 'every_n_days' THEN (schedule OPERATOR(pg_catalog.->>) 'n')::integer
               WHEN 'times_per_week' THEN 7
               WHEN 'times_in_days' THEN (schedule OPERATOR(pg_catalog.->>) 'days')::integer
               ELSE 1 END
    $fn$;
COMMENT ON FUNCTION habit.loop_denominator(jsonb) IS
    'The denominator of Loop''s frequency of a schedule: 7 for some weekdays or times a week, n, the block''s days, or 1 (issue 33).';

-- A day's share in Loop's recurrence from its window's sum: a yes/no habit's completions ÷
-- numerator, a numerical habit's sum ÷ target, each at most 1; an at-most habit 1 less how far
-- the sum goes over its target, within [0, 1]. Inlined (as above) into habit.habit_score's
-- folds and habit.habit_scores_at's walk, so the three compute it one way.
CREATE OR REPLACE FUNCTION habit.loop_share(window_sum double precision, numerator double precision, target double precision,
                                            counted boolean, at_most boolean) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT CASE WHEN NOT counted THEN LEAST(1.0, window_sum OPERATOR(pg_catalog./) numerator)
                -- Parenthesized: every OPERATOR(…) has the same precedence, left to right.
                WHEN at_most THEN GREATEST(0.0, LEAST(1.0, 1.0 OPERATOR(pg_catalog.-) ((window_sum OPERATOR(pg_catalog.-) target) OPERATOR(pg_catalog./) target)))
                ELSE LEAST(1.0, window_sum OPERATOR(pg_catalog./) target) END
    $fn$;
COMMENT ON FUNCTION habit.loop_share(double precision, double precision, double precision, boolean, boolean) IS
    'A day''s share in Loop''s score from its window''s sum: completions ÷ numerator, sum ÷ target, or an at-most habit''s 1 less its excess, within [0, 1] (issue 33).';

-- What a score checkpoint holds for (sql/0038): the habit's first local day and what Loop's
-- score reads of it. The batch stores it, the reads compare it; a change of any part (a new
-- schedule, target, zone or day start moving the first day) makes the checkpoint stale. STABLE
-- as jsonb_build_array is; inlined as above.
CREATE OR REPLACE FUNCTION habit.score_basis(first_day date, schedule jsonb, kind text, target numeric, target_type text) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $fn$
    SELECT pg_catalog.jsonb_build_array(first_day, schedule, kind, target, target_type)
    $fn$;
COMMENT ON FUNCTION habit.score_basis(date, jsonb, text, numeric, text) IS
    'What a score checkpoint holds for: the habit''s first local day, schedule, kind, target and target type (issue 33).';

-- The score of one habit at the end of p_date (a double in [0, 1]; 0 before the habit's first
-- local day; NULL when the user has no such habit). The habit's current schedule and target
-- count for its whole history, as in Loop.
--
-- Where it starts: from the habit's checkpoint (habit.score_checkpoints, sql/0038) when it has
-- one on or before p_date with the habit's basis, folding only the events after it; else from
-- the horizon below; with p_exact (the batch writing a checkpoint without one), from the first
-- day.
--
-- A habit counted from check-ins is Loop's numerical habit: a day's value is its check-ins' sum
-- (a day done without check-ins: habit.done_value), the window's target is numerator × target
-- (a weekly target: the week's), an at-most habit starts at 1 and loses by how far the window
-- goes over the target; a skipped day adds 0.003 to the window, as Loop's SKIP marker (3
-- thousandths) does. Other habits are Loop's yes/no habits: a day's share is the window's
-- completions ÷ numerator, at most 1, and a frequency below 1 doubles the window and the
-- numerator (Loop's smoothing of irregular repetitions).
CREATE OR REPLACE FUNCTION habit.habit_score(p_user uuid, p_template uuid, p_date date, p_zone text, p_day_start time,
                                             p_exact boolean DEFAULT false)
    RETURNS double precision
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $fn$
    DECLARE
        h record;
        v_first date;
        v_numerator integer;
        v_denominator integer;
        v_counted boolean;
        v_at_most boolean;
        v_target double precision;
        v_multiplier double precision;
        v_from date;
        v_score double precision;
        v_days double precision;
        v_scaled double precision;
        v_base double precision;
        v_start double precision := 0.5;
        v_low date;
        v_window_low date;
        v_checkpoint record;
    BEGIN
        SELECT t.schedule, t.kind, t.target, t.target_type, t.activated_at INTO h
        FROM public.habit_templates t WHERE t.user_id = p_user AND t.id = p_template;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        v_first := habit.local_day(h.activated_at, p_zone, p_day_start);
        IF p_date < v_first THEN
            RETURN 0;
        END IF;
        v_numerator := habit.loop_numerator(h.schedule);
        v_denominator := habit.loop_denominator(h.schedule);
        v_multiplier := 0.5 ^ (sqrt(v_numerator::double precision / v_denominator) / 13.0);
        v_counted := habit.is_counted(h.kind, h.target, h.target_type);
        v_at_most := v_counted AND h.target_type = 'at_most';
        v_target := v_numerator * h.target::double precision;
        IF NOT v_counted AND v_numerator < v_denominator THEN
            v_numerator := v_numerator * 2;
            v_denominator := v_denominator * 2;
        END IF;

        -- What came before v_from weighs at most m^k on the score, k the unskipped days from
        -- v_from to p_date: with k such that 0.5 m^k <= 1e-10 (376 days for a daily habit), the
        -- walk starts at v_from from 0.5 (the middle of what the score can be) and is off by at
        -- most 1e-10, so the cost is bounded by days, not by the habit's age. Only when that
        -- could change the fourth decimal (the score lies that close to a rounding midpoint,
        -- about once in 10^5) is the whole history walked.
        -- A checkpoint replaces both: the walk starts the day after it from its score, exactly.
        SELECT cp.as_of, cp.score INTO v_checkpoint FROM habit.score_checkpoints cp
        WHERE cp.user_id = p_user AND cp.template_id = p_template AND cp.as_of <= p_date AND cp.as_of >= v_first
          AND cp.basis = habit.score_basis(v_first, h.schedule, h.kind, h.target, h.target_type);
        IF FOUND THEN
            v_from := v_checkpoint.as_of + 1;
            v_start := v_checkpoint.score;
        ELSIF p_exact THEN
            v_from := NULL;
        ELSE
            v_from := p_date - ceil(ln(2e-10) / ln(v_multiplier))::integer + 1;
            SELECT v_from - count(*)::integer INTO v_from FROM public.habit_skips s
            WHERE s.user_id = p_user AND s.template_id = p_template AND s.skipped_date BETWEEN v_from AND p_date;
            IF v_from <= v_first THEN
                v_from := NULL;
            END IF;
        END IF;

        -- A day without events has this share: 0, or 1 for an at-most habit (nothing is within it).
        v_base := CASE WHEN v_at_most THEN 1 ELSE 0 END;

        LOOP
          -- The events' lower bounds as plain values: written as coalesce(v_from, …) inside the
          -- statements, the generic plan run as the user (row-level security) kept them as a
          -- filter, and each read scanned the habit's whole history from its index.
          v_low := coalesce(v_from, '-infinity'::date);
          v_window_low := CASE WHEN v_from IS NULL THEN '-infinity'::date ELSE v_from - v_denominator END;
          IF v_denominator = 1 THEN
            -- A window of one day (daily habits, the most common): a day's share is its own
            -- event's and a day without one has the base share, so the walk is a sum over the
            -- events alone, each event's share less the base weighted by m^(the unskipped days
            -- after it), plus the base over every day: one pass, no change points.
            SELECT coalesce(sum((x.share - v_base) * (1 - v_multiplier)
                                * v_multiplier ^ ((p_date - x.day) - x.skips_after)::double precision) FILTER (WHERE NOT x.skipped), 0),
                   ((p_date - coalesce(v_from, p_date) + 1) - count(*) FILTER (WHERE x.skipped AND x.day >= coalesce(v_from, p_date)))::double precision
            INTO v_score, v_days
            FROM (SELECT e.day, e.skipped,
                         habit.loop_share(greatest(e.value, 0), v_numerator, v_target, v_counted, v_at_most) AS share,
                         count(*) FILTER (WHERE e.skipped) OVER (ORDER BY e.day DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS skips_after
                  -- One row per day: a day has a completion, check-ins or a skip, not two of them.
                  FROM (SELECT c.completed_date AS day, 1.0::double precision AS value, false AS skipped
                        FROM public.habit_completions c
                        WHERE NOT v_counted AND c.user_id = p_user AND c.template_id = p_template
                          AND c.completed_date <= p_date AND c.completed_date >= v_low
                        UNION ALL
                        SELECT k.checkin_date, sum(k.value)::double precision, false FROM public.habit_checkins k
                        WHERE v_counted AND k.user_id = p_user AND k.template_id = p_template
                          AND k.checkin_date <= p_date AND k.checkin_date >= v_low
                        GROUP BY k.checkin_date
                        UNION ALL
                        SELECT c.completed_date, habit.done_value(h.target, h.target_type)::double precision, false
                        FROM public.habit_completions c
                        WHERE v_counted AND c.user_id = p_user AND c.template_id = p_template
                          AND c.completed_date <= p_date AND c.completed_date >= v_low
                          AND NOT EXISTS (SELECT 1 FROM public.habit_checkins k
                                          WHERE k.user_id = p_user AND k.template_id = p_template AND k.checkin_date = c.completed_date)
                        UNION ALL
                        SELECT s.skipped_date, 0, true FROM public.habit_skips s
                        WHERE s.user_id = p_user AND s.template_id = p_template
                          AND s.skipped_date <= p_date AND s.skipped_date >= v_low) e) x;
            IF v_from IS NULL THEN
                RETURN v_base + v_score;
            END IF;
            -- The base share from v_from on; what came before weighs m^k on it (added below).
            v_score := v_score + v_base * (1 - v_multiplier ^ v_days);
          ELSE
            WITH events AS (
                -- One row per day with an event that counts from v_from on (the window reaches
                -- denominator − 1 days back): its value in the window and whether it is skipped
                -- (a skipped day has no completion or check-in).
                SELECT e.day, greatest(sum(e.value), 0) AS value, bool_or(e.skipped) AS skipped
                FROM (SELECT c.completed_date AS day,
                             (CASE WHEN v_counted THEN habit.done_value(h.target, h.target_type) ELSE 1 END)::numeric AS value,
                             false AS skipped
                      FROM public.habit_completions c
                      WHERE c.user_id = p_user AND c.template_id = p_template AND c.completed_date <= p_date
                        AND c.completed_date > v_window_low
                        AND NOT (v_counted AND EXISTS (SELECT 1 FROM public.habit_checkins x
                                                       WHERE x.user_id = p_user AND x.template_id = p_template
                                                         AND x.checkin_date = c.completed_date))
                      UNION ALL
                      SELECT x.checkin_date, x.value, false FROM public.habit_checkins x
                      WHERE v_counted AND x.user_id = p_user AND x.template_id = p_template AND x.checkin_date <= p_date
                        AND x.checkin_date > v_window_low
                      UNION ALL
                      SELECT s.skipped_date, CASE WHEN v_counted THEN 0.003 ELSE 0 END, true FROM public.habit_skips s
                      WHERE s.user_id = p_user AND s.template_id = p_template AND s.skipped_date <= p_date
                        AND s.skipped_date > v_window_low) e
                GROUP BY e.day
            ), changes AS (
                -- Where the window's sum can change: an event's day and the day it leaves the
                -- window; and v_from, where the walk starts.
                SELECT DISTINCT p.day FROM (SELECT ev.day FROM events ev
                                            UNION ALL SELECT ev.day + v_denominator FROM events ev
                                            UNION ALL SELECT v_from WHERE v_from IS NOT NULL) p
                WHERE p.day <= p_date
            ), stretches AS (
                -- From each change to the next (the last to p_date): the window's sum over it, and
                -- its unskipped days (a skipped day is always a change, so only a stretch's first
                -- day can be one).
                SELECT c.day, (lead(c.day, 1, p_date + 1) OVER w - c.day) - (CASE WHEN coalesce(ev.skipped, false) THEN 1 ELSE 0 END) AS days,
                       (sum(coalesce(ev.value, 0)) OVER (ORDER BY c.day - DATE '2000-01-01'
                                                         RANGE BETWEEN v_denominator - 1 PRECEDING AND CURRENT ROW))::double precision AS window_sum
                FROM changes c LEFT JOIN events ev ON ev.day = c.day
                WINDOW w AS (ORDER BY c.day)
            ), shares AS (
                SELECT s.days,
                       habit.loop_share(s.window_sum, v_numerator, v_target, v_counted, v_at_most) AS share,
                       coalesce(sum(s.days) OVER (ORDER BY s.day ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), 0)::double precision AS days_after
                FROM stretches s
                WHERE s.day >= coalesce(v_from, '-infinity'::date)
            )
            SELECT coalesce(sum(x.share * (1 - v_multiplier ^ x.days::double precision) * v_multiplier ^ x.days_after), 0),
                   coalesce(sum(x.days), 0)::double precision
            INTO v_score, v_days
            FROM shares x;
            -- From the first day: Loop's start, 0 (1 for an at-most habit counted from check-ins).
            IF v_from IS NULL THEN
                RETURN v_score + v_base * v_multiplier ^ v_days;
            END IF;
          END IF;
            v_score := v_score + v_start * v_multiplier ^ v_days;
            IF v_checkpoint.as_of IS NOT NULL THEN
                RETURN v_score;
            END IF;
            v_scaled := v_score * 10000;
            IF abs(v_scaled - floor(v_scaled) - 0.5) > 0.5 * v_multiplier ^ v_days * 10000 + 1e-6 THEN
                RETURN v_score;
            END IF;
            v_from := NULL;
        END LOOP;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_score(uuid, uuid, date, text, time, boolean) IS
    'Loop Habit Tracker''s score of the habit p_template at the end of p_date (0..1, within 1e-10 of Loop''s and rounding to Loop''s four decimals; 0 before its first local day in p_zone with p_day_start; NULL when no such habit), folded over the events after its checkpoint or of its last days (p_exact: of its whole history) (issue 33).';

-- The scores of several habits of p_user at the end of p_date (p_templates NULL: every habit),
-- unrounded, for the reads that show a day's habits (widget.get, habits.stats). The common case,
-- a habit whose checkpoint holds and lies at most 62 days before p_date (the nightly batch keeps
-- it 8 to 15 days back), costs no statement of its own: one statement reads every such habit's
-- events after its checkpoint (and the window's days before it), and the walk runs day by day
-- here, Loop's recurrence as habit.habit_score folds it (score × m + share × (1 − m) on an
-- unskipped day; the window's sum kept exactly, in numeric, as days enter and leave it). Any
-- other habit (no checkpoint, an older one, a day before it) is habit.habit_score's. Calling
-- habit.habit_score per habit cost ~0.1 ms a daily habit and ~0.33 ms a weekly one from a
-- checkpoint, nearly all of it its statements' fixed cost (docs/performance.md).
-- plan_cache_mode: left to choose, PostgreSQL kept a custom plan for the events' statement on
-- every call on some data (its generic estimate over arrays it cannot see stayed the higher):
-- ~0.45 ms of planning a call, three times the statement. Its bounds are plain columns, so the
-- generic plan reads each habit's index range (reset on Citus, habit db distribute).
CREATE OR REPLACE FUNCTION habit.habit_scores_at(p_user uuid, p_templates uuid[], p_date date, p_zone text, p_day_start time)
    RETURNS TABLE (template_id uuid, score double precision)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    SET plan_cache_mode = force_generic_plan
    AS $fn$
    DECLARE
        h record;
        e record;
        v_first date;
        v_numerator integer;
        v_denominator integer;
        v_counted boolean;
        v_at_most boolean;
        v_target double precision;
        v_multiplier double precision;
        -- The habits walked from their checkpoints, one array element each.
        w_id uuid[] := '{}';
        w_low date[] := '{}';
        w_counted boolean[] := '{}';
        w_done numeric[] := '{}';
        w_start double precision[] := '{}';
        w_mult double precision[] := '{}';
        w_num integer[] := '{}';
        w_den integer[] := '{}';
        w_at_most boolean[] := '{}';
        w_target double precision[] := '{}';
        i integer;
        n integer;
        j_in integer;
        j_out integer;
        d date;
        v_sum numeric;
        v_window double precision;
        v_share double precision;
        v_score double precision;
        v_skipped boolean;
    BEGIN
        FOR h IN SELECT t.id, t.schedule, t.kind, t.target, t.target_type, t.activated_at, cp.as_of, cp.score AS cp_score, cp.basis
                 FROM public.habit_templates t
                 LEFT JOIN habit.score_checkpoints cp ON cp.user_id = p_user AND cp.template_id = t.id AND cp.as_of <= p_date
                 WHERE t.user_id = p_user AND (p_templates IS NULL OR t.id = ANY (p_templates))
                 ORDER BY t.id LOOP
            v_first := habit.local_day(h.activated_at, p_zone, p_day_start);
            IF h.as_of IS NULL OR h.as_of < v_first OR p_date - h.as_of > 62
               OR h.basis IS DISTINCT FROM habit.score_basis(v_first, h.schedule, h.kind, h.target, h.target_type) THEN
                template_id := h.id;
                score := habit.habit_score(p_user, h.id, p_date, p_zone, p_day_start);
                RETURN NEXT;
                CONTINUE;
            END IF;
            v_numerator := habit.loop_numerator(h.schedule);
            v_denominator := habit.loop_denominator(h.schedule);
            v_multiplier := 0.5 ^ (sqrt(v_numerator::double precision / v_denominator) / 13.0);
            v_counted := habit.is_counted(h.kind, h.target, h.target_type);
            w_id := w_id || h.id;
            w_counted := w_counted || v_counted;
            w_done := w_done || habit.done_value(h.target, h.target_type)::numeric;
            w_start := w_start || h.cp_score;
            w_mult := w_mult || v_multiplier;
            w_at_most := w_at_most || (v_counted AND h.target_type = 'at_most');
            w_target := w_target || (v_numerator * h.target::double precision);
            IF NOT v_counted AND v_numerator < v_denominator THEN
                v_numerator := v_numerator * 2;
                v_denominator := v_denominator * 2;
            END IF;
            w_num := w_num || v_numerator;
            w_den := w_den || v_denominator;
            -- The walk starts the day after the checkpoint; its window reaches denominator − 1
            -- days further back.
            w_low := w_low || (h.as_of + 1 - v_denominator);
        END LOOP;
        IF cardinality(w_id) = 0 THEN
            RETURN;
        END IF;

        -- Each walked habit's days with events in (low, p_date], in order: the day's value in
        -- the window (a completion 1, or its done value for a counted habit without check-ins
        -- that day; check-ins their values; a skip 0, or Loop's 0.003 for a counted habit) and
        -- whether it is skipped. One statement for every habit; the bounds are plain columns,
        -- so each read is an index range of the habit's last days, also under row-level security.
        FOR e IN SELECT w.i::integer AS i, ev.days, ev.vals, ev.skips
                 FROM unnest(w_id, w_low, w_counted, w_done) WITH ORDINALITY AS w(id, low, counted, done, i)
                 LEFT JOIN LATERAL (
                     SELECT array_agg(g.day ORDER BY g.day) AS days, array_agg(g.value ORDER BY g.day) AS vals,
                            array_agg(g.skipped ORDER BY g.day) AS skips
                     FROM (SELECT x.day, greatest(sum(x.value), 0) AS value, bool_or(x.skipped) AS skipped
                           FROM (SELECT c.completed_date AS day, CASE WHEN w.counted THEN w.done ELSE 1 END AS value, false AS skipped
                                 FROM public.habit_completions c
                                 WHERE c.user_id = p_user AND c.template_id = w.id AND c.completed_date > w.low AND c.completed_date <= p_date
                                   AND NOT (w.counted AND EXISTS (SELECT 1 FROM public.habit_checkins k
                                                                  WHERE k.user_id = p_user AND k.template_id = w.id
                                                                    AND k.checkin_date = c.completed_date))
                                 UNION ALL
                                 SELECT k.checkin_date, k.value, false FROM public.habit_checkins k
                                 WHERE w.counted AND k.user_id = p_user AND k.template_id = w.id AND k.checkin_date > w.low AND k.checkin_date <= p_date
                                 UNION ALL
                                 SELECT s.skipped_date, CASE WHEN w.counted THEN 0.003 ELSE 0 END, true FROM public.habit_skips s
                                 WHERE s.user_id = p_user AND s.template_id = w.id AND s.skipped_date > w.low AND s.skipped_date <= p_date) x
                           GROUP BY x.day) g) ev ON true
                 ORDER BY w.i LOOP
            i := e.i;
            n := coalesce(cardinality(e.days), 0);
            -- The habit's constants as plain variables: habit.loop_share is inlined only when the
            -- arguments it uses more than once are that cheap (not array elements).
            v_numerator := w_num[i];
            v_target := w_target[i];
            v_counted := w_counted[i];
            v_at_most := w_at_most[i];
            v_multiplier := w_mult[i];
            v_score := w_start[i];
            v_sum := 0;
            j_in := 1;
            j_out := 1;
            d := w_low[i] + w_den[i];
            WHILE d <= p_date LOOP
                -- The window of d is (d − denominator, d]: days enter at d, leave at d − denominator.
                v_skipped := false;
                WHILE j_in <= n AND e.days[j_in] <= d LOOP
                    v_sum := v_sum + e.vals[j_in];
                    v_skipped := e.days[j_in] = d AND e.skips[j_in];
                    j_in := j_in + 1;
                END LOOP;
                WHILE j_out <= n AND e.days[j_out] <= d - w_den[i] LOOP
                    v_sum := v_sum - e.vals[j_out];
                    j_out := j_out + 1;
                END LOOP;
                IF NOT v_skipped THEN
                    v_window := v_sum::double precision;
                    v_share := habit.loop_share(v_window, v_numerator, v_target, v_counted, v_at_most);
                    v_score := v_score * v_multiplier + v_share * (1 - v_multiplier);
                END IF;
                d := d + 1;
            END LOOP;
            template_id := w_id[i];
            score := v_score;
            RETURN NEXT;
        END LOOP;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_scores_at(uuid, uuid[], date, text, time) IS
    'Loop''s score (unrounded) at the end of p_date of the habits p_templates (NULL: every habit) of p_user, walked day by day from each habit''s checkpoint when it holds and lies at most 62 days back, else habit.habit_score''s (issue 33).';

-- The score at p_date (NULL: today in the user's zone), rounded to four decimals as Loop prints
-- it, of the habit p_template, or of every habit of the user.
CREATE OR REPLACE FUNCTION habit.habit_scores(p_user uuid, p_template uuid DEFAULT NULL, p_date date DEFAULT NULL)
    RETURNS TABLE (template_id uuid, score numeric)
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_zone text := habit.user_time_zone(p_user, NULL);
        v_day_start time := habit.user_day_start(p_user);
        v_date date := coalesce(p_date, habit.local_day(now(), v_zone, v_day_start));
    BEGIN
        RETURN QUERY
            SELECT s.template_id, round(s.score::numeric, 4)
            FROM habit.habit_scores_at(p_user, CASE WHEN p_template IS NOT NULL THEN ARRAY[p_template] END, v_date, v_zone, v_day_start) s
            ORDER BY s.template_id;
    END
    $fn$;
COMMENT ON FUNCTION habit.habit_scores(uuid, uuid, date) IS
    'Loop''s score, four decimals, at p_date (NULL: the user''s today) of the habit p_template or of every habit of p_user (issue 33).';

-- Score checkpoints (sql/0038) ------------------------------------------------------------------

-- A write of a day (a completion, check-in or skip written, changed or removed) forgets the
-- habit's checkpoint when the checkpoint is of that day or later: its score no longer holds.
-- The three tables' BEFORE triggers do it for the row's own user, with the DELETE written in
-- each (a plpgsql statement keeps its plan; a SQL function called per row would be planned per
-- statement): one index probe, and a write after the checkpoint (today's) deletes nothing.

-- The nightly batch's step for one user (`habit score-checkpoints`): puts the checkpoint of each
-- of p_user's habits at the end of the day p_lag days before the user's today, when it has none,
-- when its basis no longer matches the habit, or when it is p_every days or more older than
-- that; returns how many it wrote. p_lag keeps a late tick (yesterday's, last week's) from
-- forgetting a fresh checkpoint; reads then fold at most p_lag + p_every days. A new checkpoint
-- is folded from the old one when that still holds, else from the habit's first day (exact).
--
-- The habits it writes are locked FOR SHARE first (the event triggers lock them FOR NO KEY
-- UPDATE before they write or forget): a habit a write holds is skipped (SKIP LOCKED: the next
-- run takes it), so the batch never waits and cannot deadlock with a user's writes; a later
-- write waits for this transaction and then, with a snapshot of its own (READ COMMITTED, as
-- every writer of ours and PostgREST runs), forgets the new checkpoint if it writes a day on or
-- before it. The batch itself must take a new snapshot per statement after its locks, so it
-- refuses any other isolation level. SECURITY DEFINER: it writes a table users only read;
-- granted to the batch and admins, never to a user.
CREATE OR REPLACE FUNCTION habit.score_checkpoints_advance(p_user uuid, p_lag integer DEFAULT 8, p_every integer DEFAULT 7)
    RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_zone text := habit.user_time_zone(p_user, NULL);
        v_day_start time := habit.user_day_start(p_user);
        v_as_of date;
        v_written integer := 0;
        v_score double precision;
        v_now timestamptz := now();
        h record;
    BEGIN
        IF p_lag IS NULL OR p_lag < 1 OR p_every IS NULL OR p_every < 1 THEN
            RAISE EXCEPTION 'p_lag and p_every must be at least 1 day' USING ERRCODE = '22023';
        END IF;
        IF current_setting('transaction_isolation') <> 'read committed' THEN
            RAISE EXCEPTION 'habit.score_checkpoints_advance needs READ COMMITTED (this transaction is %)', current_setting('transaction_isolation')
                USING ERRCODE = '25000', HINT = 'Its events must be read after its locks: run it in a READ COMMITTED transaction.';
        END IF;
        v_as_of := habit.local_day(now(), v_zone, v_day_start) - p_lag;
        FOR h IN SELECT t.id, b.basis
                 FROM public.habit_templates t
                 CROSS JOIN LATERAL (SELECT habit.local_day(t.activated_at, v_zone, v_day_start) AS first_day) f
                 CROSS JOIN LATERAL (SELECT habit.score_basis(f.first_day, t.schedule, t.kind, t.target, t.target_type) AS basis) b
                 LEFT JOIN habit.score_checkpoints cp ON cp.user_id = t.user_id AND cp.template_id = t.id
                 WHERE t.user_id = p_user AND f.first_day <= v_as_of
                   AND (cp.as_of IS NULL OR cp.as_of <= v_as_of - p_every OR cp.basis IS DISTINCT FROM b.basis)
                 ORDER BY t.id
                 FOR SHARE OF t SKIP LOCKED LOOP
            -- Computed first, then written as values: Citus runs no table-reading function inside
            -- an INSERT on a distributed table, nor a non-IMMUTABLE one in its DO UPDATE.
            -- Within [0, 1] as stored: the walk's floating point can land a step past 1
            -- (1.0000000000000002 for an at-most habit kept every day), which no rounding shows.
            v_score := least(1.0, greatest(0.0, habit.habit_score(p_user, h.id, v_as_of, v_zone, v_day_start, true)));
            INSERT INTO habit.score_checkpoints AS cp (user_id, template_id, as_of, score, basis, computed_at)
            VALUES (p_user, h.id, v_as_of, v_score, h.basis, v_now)
            ON CONFLICT ON CONSTRAINT score_checkpoints_pkey DO UPDATE
                SET as_of = EXCLUDED.as_of, score = EXCLUDED.score, basis = EXCLUDED.basis, computed_at = EXCLUDED.computed_at;
            v_written := v_written + 1;
        END LOOP;
        RETURN v_written;
    END
    $fn$;
COMMENT ON FUNCTION habit.score_checkpoints_advance(uuid, integer, integer) IS
    'The nightly batch for one user: moves each habit''s score checkpoint to p_lag days before the user''s today when missing, stale or p_every days older (sql/0038); returns how many it wrote.';
