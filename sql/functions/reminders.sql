-- Reminders (issue 33, item 3; sql/migrations/0036): the wall clock of a zone, a habit's
-- reminders, and the push sender's window, claim and acknowledgement.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- The wall clock ----------------------------------------------------------------------------
-- A zone's local time is not a function PostgreSQL inverts the way a reminder needs: for a
-- local time a spring-forward day skips, `timestamp AT TIME ZONE` answers the instant an hour
-- after the gap's start (03:30 for 02:30 in New York); for one a fall-back day repeats, the
-- second occurrence. A reminder fires at the FIRST instant whose wall-clock time is at or past
-- its local time: F(L) = min { X : local(X) >= L }, which is the time itself on a plain day,
-- the end of the gap (03:00) for a skipped time and the first occurrence for a repeated one.
-- F is monotonic, so the local times that fire in [from, to) are exactly [S(from), S(to)),
-- S(X) being the latest wall-clock time shown before X (habit.wall_floor). Both assume one
-- transition at most in 6 hours, of at most 6 hours, at a whole second (true of every zone
-- of the tz database since 1970).

-- S(X): sup of local(Y) over Y < X. local(X) itself unless a transition happened within the
-- 6 hours before X: then the transition T is found (whole seconds, by halving) and S(X) is the
-- larger of local(X) and the wall-clock time just before T (after a fall-back, the repeated
-- times already shown); at X = T exactly, the time just before it.
CREATE OR REPLACE FUNCTION habit.wall_floor(p_at timestamptz, p_zone text) RETURNS timestamp
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        offset_now interval := (p_at AT TIME ZONE p_zone) - (p_at AT TIME ZONE 'UTC');
        earlier timestamptz := p_at - interval '6 hours';
        offset_before interval := (earlier AT TIME ZONE p_zone) - (earlier AT TIME ZONE 'UTC');
        lo bigint;
        hi bigint;
        mid bigint;
        transition timestamptz;
    BEGIN
        IF offset_before = offset_now THEN
            RETURN p_at AT TIME ZONE p_zone;
        END IF;
        -- Invariant: the offset at lo is offset_before, at hi offset_now.
        lo := floor(extract(epoch FROM p_at))::bigint - 21600;
        hi := floor(extract(epoch FROM p_at))::bigint;
        WHILE hi - lo > 1 LOOP
            mid := (lo + hi) / 2;
            IF (to_timestamp(mid) AT TIME ZONE p_zone) - (to_timestamp(mid) AT TIME ZONE 'UTC') = offset_now THEN
                hi := mid;
            ELSE
                lo := mid;
            END IF;
        END LOOP;
        transition := to_timestamp(hi);
        IF p_at = transition THEN
            RETURN (transition AT TIME ZONE 'UTC') + offset_before;
        END IF;
        RETURN greatest(p_at AT TIME ZONE p_zone, (transition AT TIME ZONE 'UTC') + offset_before);
    END
    $fn$;
COMMENT ON FUNCTION habit.wall_floor(timestamptz, text) IS
    'The latest wall-clock time of p_zone shown before instant p_at (its local time, unless a fall-back within 6 hours already showed later ones): local times at or past it fire at or after p_at (sql/0036).';

-- F(L): the first instant whose wall-clock time in p_zone is at or past p_local.
CREATE OR REPLACE FUNCTION habit.fire_instant(p_local timestamp, p_zone text) RETURNS timestamptz
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        guess timestamptz := p_local AT TIME ZONE p_zone;
        offsets interval[];
        candidate timestamptz;
        best timestamptz;
        one interval;
        lo bigint;
        hi bigint;
        mid bigint;
    BEGIN
        offsets := ARRAY[((guess - interval '6 hours') AT TIME ZONE p_zone) - ((guess - interval '6 hours') AT TIME ZONE 'UTC'),
                         (guess AT TIME ZONE p_zone) - (guess AT TIME ZONE 'UTC'),
                         ((guess + interval '6 hours') AT TIME ZONE p_zone) - ((guess + interval '6 hours') AT TIME ZONE 'UTC')];
        IF offsets[1] = offsets[2] AND offsets[2] = offsets[3] THEN
            RETURN guess;
        END IF;
        -- The instants showing p_local, under each offset in force nearby: the earliest.
        FOREACH one IN ARRAY offsets LOOP
            candidate := (p_local - one) AT TIME ZONE 'UTC';
            IF candidate AT TIME ZONE p_zone = p_local AND (best IS NULL OR candidate < best) THEN
                best := candidate;
            END IF;
        END LOOP;
        IF best IS NOT NULL THEN
            RETURN best;
        END IF;
        -- None: p_local is in a gap. The first whole second showing a later time is the gap's end.
        lo := floor(extract(epoch FROM (p_local - (SELECT max(o) FROM unnest(offsets) o)) AT TIME ZONE 'UTC'))::bigint;
        hi := ceil(extract(epoch FROM (p_local - (SELECT min(o) FROM unnest(offsets) o)) AT TIME ZONE 'UTC'))::bigint;
        WHILE hi - lo > 1 LOOP
            mid := (lo + hi) / 2;
            IF to_timestamp(mid) AT TIME ZONE p_zone >= p_local THEN
                hi := mid;
            ELSE
                lo := mid;
            END IF;
        END LOOP;
        RETURN to_timestamp(hi);
    END
    $fn$;
COMMENT ON FUNCTION habit.fire_instant(timestamp, text) IS
    'The instant a reminder at local date and time p_local fires in p_zone: the first instant whose wall-clock time is at or past it (a skipped time: the end of the gap; a repeated one: its first occurrence) (sql/0036).';

-- The rule of a firing -----------------------------------------------------------------------
-- THE rule of what fires, shared by the window (habit.reminders_due) and the claim: the habit's
-- name when a reminder of p_user's habit p_template (weekdays p_weekdays, NULL: any) fires on
-- the habit's day p_habit_day (the local date and time of the firing less the day's start;
-- p_zone, p_day_start the user's, p_today the user's today), nothing otherwise. It fires when,
-- as of now, the habit is not archived, is on that day (a period makes it on, as
-- habit.day_habits says), is due (the schedule; times_per_week and times_in_days while the
-- block's target is not met before that day), the day is one of the reminder's weekdays, and
-- the day is neither done nor skipped: "already done" means done when the sender asks.
-- Inlined (one SELECT, no SET clause, schema-qualified) into its callers' plans: a window
-- checks its firings earliest first and stops at its limit, each firing a few index probes.
CREATE OR REPLACE FUNCTION habit.reminder_firing_rule(p_user uuid, p_template uuid, p_weekdays smallint, p_zone text,
                                                      p_day_start time, p_habit_day date, p_today date)
    RETURNS TABLE (name text)
    LANGUAGE sql STABLE
    AS $fn$
    SELECT t.name
    FROM public.habit_templates t
    CROSS JOIN LATERAL (
        SELECT p.schedule, habit.local_day(p.started_at, p_zone, p_day_start) AS first_day
        FROM public.habit_periods p
        WHERE p.user_id OPERATOR(pg_catalog.=) p_user AND p.template_id OPERATOR(pg_catalog.=) p_template
          AND habit.local_day(p.started_at, p_zone, p_day_start) OPERATOR(pg_catalog.<=) p_habit_day
          AND (p.ended_at IS NULL
               OR (p_habit_day OPERATOR(pg_catalog.<) p_today
                   AND p.ended_at OPERATOR(pg_catalog.>) habit.day_begins(p_habit_day, p_zone, p_day_start)))
        ORDER BY p.started_at DESC
        LIMIT 1) o
    WHERE t.id OPERATOR(pg_catalog.=) p_template AND t.user_id OPERATOR(pg_catalog.=) p_user AND t.archived_at IS NULL
      AND (p_weekdays IS NULL
           OR (p_weekdays::integer OPERATOR(pg_catalog.&)
               (1 OPERATOR(pg_catalog.<<) (EXTRACT(isodow FROM p_habit_day)::integer OPERATOR(pg_catalog.-) 1))) OPERATOR(pg_catalog.<>) 0)
      AND (CASE o.schedule OPERATOR(pg_catalog.->>) 'type'
           WHEN 'times_per_week'
           THEN (SELECT pg_catalog.count(*) FROM public.habit_completions c
                 WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) p_template
                   AND c.completed_date OPERATOR(pg_catalog.>=) habit.week_start(p_habit_day, habit.user_week_start_isodow(p_user))
                   AND c.completed_date OPERATOR(pg_catalog.<) p_habit_day)
                OPERATOR(pg_catalog.<) (o.schedule OPERATOR(pg_catalog.->>) 'times')::integer
           WHEN 'times_in_days'
           THEN (SELECT pg_catalog.count(*) FROM public.habit_completions c
                 WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) p_template
                   AND c.completed_date OPERATOR(pg_catalog.>=) habit.quota_block_start(o.schedule, o.first_day, 1, p_habit_day)
                   AND c.completed_date OPERATOR(pg_catalog.<) p_habit_day)
                OPERATOR(pg_catalog.<) (o.schedule OPERATOR(pg_catalog.->>) 'times')::integer
           ELSE habit.due_on(o.schedule, o.first_day, p_habit_day) END)
      -- OFFSET 0: a probe of the day's key per firing. Without it PostgreSQL may hash the
      -- whole table once per window instead (a sequential scan of every user's completions).
      AND NOT EXISTS (SELECT 1 FROM public.habit_completions c
                      WHERE c.user_id OPERATOR(pg_catalog.=) p_user AND c.template_id OPERATOR(pg_catalog.=) p_template
                        AND c.completed_date OPERATOR(pg_catalog.=) p_habit_day OFFSET 0)
      AND NOT EXISTS (SELECT 1 FROM public.habit_skips k
                      WHERE k.user_id OPERATOR(pg_catalog.=) p_user AND k.template_id OPERATOR(pg_catalog.=) p_template
                        AND k.skipped_date OPERATOR(pg_catalog.=) p_habit_day OFFSET 0)
    $fn$;
COMMENT ON FUNCTION habit.reminder_firing_rule(uuid, uuid, smallint, text, time, date, date) IS
    'The habit''s name when a reminder (weekdays p_weekdays) of p_user''s habit p_template fires on habit day p_habit_day as of now: not archived, on, due, on the reminder''s weekdays, not done, not skipped (sql/0036).';

-- A user's reminders --------------------------------------------------------------------------
-- Replaces the reminders of p_user's habit p_template by (p_times[i], p_weekdays[i]) (weekdays a
-- bit set, NULL: due days). A reminder kept (same time and days) keeps its id, so its firings
-- already claimed or sent are not sent again; the others are deleted or added. Nothing for a
-- habit that is not the user's. The habit is locked first, so two replacements take turns.
CREATE OR REPLACE FUNCTION habit.set_reminders(p_user uuid, p_template uuid, p_times time[], p_weekdays smallint[])
    RETURNS SETOF public.habit_reminders
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        PERFORM 1 FROM public.habit_templates t WHERE t.id = p_template AND t.user_id = p_user FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        DELETE FROM public.habit_reminders r
        WHERE r.user_id = p_user AND r.template_id = p_template
          AND NOT EXISTS (SELECT 1 FROM unnest(p_times, p_weekdays) AS w(local_time, weekdays)
                          WHERE w.local_time = r.local_time AND w.weekdays IS NOT DISTINCT FROM r.weekdays);
        INSERT INTO public.habit_reminders (user_id, template_id, local_time, weekdays)
        SELECT DISTINCT p_user, p_template, w.local_time, w.weekdays FROM unnest(p_times, p_weekdays) AS w(local_time, weekdays)
        ON CONFLICT ON CONSTRAINT habit_reminders_habit_time_key DO NOTHING;
        RETURN QUERY SELECT * FROM public.habit_reminders r
            WHERE r.user_id = p_user AND r.template_id = p_template ORDER BY r.local_time, r.weekdays NULLS FIRST;
    END
    $fn$;
COMMENT ON FUNCTION habit.set_reminders(uuid, uuid, time[], smallint[]) IS
    'reminders.set: the reminders of p_user''s habit p_template become (p_times[i], p_weekdays[i]); unchanged ones keep their ids. Empty: not the user''s habit (sql/0036).';

-- The sender's side -----------------------------------------------------------------------------
-- Run as the worker's login role (no user's claims: a window holds many users), hence SECURITY
-- DEFINER and granted to habit_worker and service_role alone (sql/grants.sql).
--   HB011 invalid window  (COLUMN: the parameter; DETAIL: what is wrong with it)

-- The firing id: '<reminder id>/<YYYY-MM-DD>' (the local date it fires on). Refuses any other
-- shape (HB011, COLUMN firing_ids).
CREATE OR REPLACE FUNCTION habit.reminder_firing_keys(p_ids text[])
    RETURNS TABLE (reminder_id uuid, local_date date)
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        bad text;
    BEGIN
        IF p_ids IS NULL OR cardinality(p_ids) > 10000 THEN
            RAISE EXCEPTION 'firing_ids: at most 10000 ids' USING ERRCODE = 'HB011', COLUMN = 'firing_ids', DETAIL = 'too_many';
        END IF;
        -- One pass of casts (a regular expression per id costs several times more); only when
        -- it fails, the search for the id that made it fail.
        SELECT i INTO bad FROM unnest(p_ids) i
        WHERE i IS NULL OR length(i) <> 47 OR substr(i, 37, 1) <> '/' OR substr(i, 42, 1) <> '-' OR substr(i, 45, 1) <> '-'
           OR lower(i) <> i
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'firing_ids: % is not a firing id (<reminder id>/<YYYY-MM-DD>)', coalesce(bad, 'null')
                USING ERRCODE = 'HB011', COLUMN = 'firing_ids', DETAIL = 'invalid_firing_id';
        END IF;
        BEGIN
            RETURN QUERY
            SELECT DISTINCT split_part(i, '/', 1)::uuid, split_part(i, '/', 2)::date FROM unnest(p_ids) i;
            RETURN;
        EXCEPTION WHEN invalid_text_representation OR datetime_field_overflow OR invalid_datetime_format THEN
            SELECT i INTO bad FROM unnest(p_ids) i
            WHERE i IS NULL
               OR i !~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'
               OR make_date(split_part(split_part(i, '/', 2), '-', 1)::integer, split_part(split_part(i, '/', 2), '-', 2)::integer, 1)
                  + (split_part(split_part(i, '/', 2), '-', 3)::integer - 1)
                  >= (make_date(split_part(split_part(i, '/', 2), '-', 1)::integer, split_part(split_part(i, '/', 2), '-', 2)::integer, 1) + interval '1 month')::date
            LIMIT 1;
            RAISE EXCEPTION 'firing_ids: % is not a firing id (<reminder id>/<YYYY-MM-DD>)', coalesce(bad, 'null')
                USING ERRCODE = 'HB011', COLUMN = 'firing_ids', DETAIL = 'invalid_firing_id';
        END;
    END
    $fn$;
COMMENT ON FUNCTION habit.reminder_firing_keys(text[]) IS
    'The (reminder, local date) of each firing id ''<reminder id>/<YYYY-MM-DD>''; HB011 for any other shape (sql/0036).';

-- The firings in [p_from, p_to) (at most 24 hours), earliest first, at most p_limit, leaving out
-- those acknowledged and those under a lease not run out. Per zone, the window's local times
-- [S(from), S(to)), one to three local dates, each a range scan of (time_zone, local_time): the
-- reminders read are those whose time falls in the window, whatever the number of the others.
CREATE OR REPLACE FUNCTION habit.reminders_due(p_from timestamptz, p_to timestamptz, p_limit integer)
    RETURNS TABLE (firing_id text, user_id uuid, template_id uuid, reminder_id uuid, fire_at timestamptz,
                   local_date date, local_time time, habit_day date, name text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    -- The plan is fixed by design: the candidates from the index, then per candidate a few
    -- index probes (its habit, period, completion, skip, claim). The planner, seeing every
    -- zone, would rather hash whole tables (a sequential scan of every completion) and start
    -- JIT (300 ms against 10 ms).
    SET jit = off
    SET enable_hashjoin = off
    SET enable_mergejoin = off
    AS $fn$
    BEGIN
        IF p_from IS NULL THEN
            RAISE EXCEPTION 'from: required' USING ERRCODE = 'HB011', COLUMN = 'from', DETAIL = 'required';
        END IF;
        IF p_to IS NULL OR p_to <= p_from THEN
            RAISE EXCEPTION 'to: must be after from' USING ERRCODE = 'HB011', COLUMN = 'to', DETAIL = 'invalid_order';
        END IF;
        IF p_to - p_from > interval '24 hours' THEN
            RAISE EXCEPTION 'to: a window is at most 24 hours' USING ERRCODE = 'HB011', COLUMN = 'to', DETAIL = 'out_of_range';
        END IF;
        IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10001 THEN
            RAISE EXCEPTION 'limit: 1 to 10000' USING ERRCODE = 'HB011', COLUMN = 'limit', DETAIL = 'out_of_range';
        END IF;
        RETURN QUERY
        -- Zones are habit.time_zones' (a reminder's zone is a profile's, which references it,
        -- or UTC); each costs one index descent when none of its reminders is in the window.
        WITH offsets AS MATERIALIZED (
            SELECT z.name AS tz,
                   -- No transition near the window: a local time's instant is AT TIME ZONE's and
                   -- the window's local times are its ends' readings.
                   ((p_from - interval '6 hours') AT TIME ZONE z.name) - ((p_from - interval '6 hours') AT TIME ZONE 'UTC')
                       = ((p_to + interval '6 hours') AT TIME ZONE z.name) - ((p_to + interval '6 hours') AT TIME ZONE 'UTC')
                   AND (p_from AT TIME ZONE z.name) - (p_from AT TIME ZONE 'UTC') = (p_to AT TIME ZONE z.name) - (p_to AT TIME ZONE 'UTC')
                   AND (p_from AT TIME ZONE z.name) - (p_from AT TIME ZONE 'UTC')
                       = ((p_to + interval '6 hours') AT TIME ZONE z.name) - ((p_to + interval '6 hours') AT TIME ZONE 'UTC') AS plain
            FROM (SELECT t.name FROM habit.time_zones t UNION SELECT 'UTC') z
        ), bounds AS MATERIALIZED (
            -- Materialized: each zone's bounds computed once, not per reminder read.
            SELECT o.tz, o.plain,
                   CASE WHEN o.plain THEN p_from AT TIME ZONE o.tz ELSE habit.wall_floor(p_from, o.tz) END AS lo,
                   CASE WHEN o.plain THEN p_to AT TIME ZONE o.tz ELSE habit.wall_floor(p_to, o.tz) END AS hi
            FROM offsets o
        ), segments AS MATERIALIZED (
            -- Both ends are index conditions: the end of a local date is 24:00, which a time
            -- of day holds and every local_time is below.
            -- (A window of at most 24 hours spans at most three local dates, even across a
            -- transition of up to six hours.)
            SELECT b.tz, b.plain, day::date AS d,
                   (greatest(b.lo, day) - day)::time AS t_lo,
                   CASE WHEN b.hi >= day + interval '1 day' THEN time '24:00' ELSE (b.hi - day)::time END AS t_hi
            FROM bounds b
            CROSS JOIN LATERAL (VALUES (0), (1), (2)) AS k(i)
            CROSS JOIN LATERAL (SELECT date_trunc('day', b.lo) + k.i * interval '1 day' AS day) AS x
            WHERE b.lo < b.hi AND day < b.hi
        ), candidates AS (
            -- Every reminder whose local time falls in the window (the index alone), earliest first.
            SELECT r.id, r.user_id, r.template_id, r.weekdays, r.local_time, r.day_starts_at, s.tz, s.d,
                   CASE WHEN s.plain THEN (s.d + r.local_time) AT TIME ZONE s.tz ELSE habit.fire_instant(s.d + r.local_time, s.tz) END AS fire_at
            FROM segments s
            JOIN public.habit_reminders r ON r.time_zone = s.tz AND r.local_time >= s.t_lo AND r.local_time < s.t_hi
        )
        -- Then the rule, in that order, until p_limit firings: a page of a busy minute checks
        -- about a page of candidates, not the minute.
        SELECT c.id::text || '/' || to_char(c.d, 'YYYY-MM-DD'), c.user_id, c.template_id, c.id, c.fire_at, c.d, c.local_time,
               c.habit_day, f.name
        FROM (SELECT c.*, ((c.d + c.local_time) - c.day_starts_at)::date AS habit_day,
                     habit.local_day(now(), c.tz, c.day_starts_at) AS today
              FROM candidates c
              WHERE c.fire_at >= p_from AND c.fire_at < p_to
              ORDER BY c.fire_at, c.id, c.d) c
        CROSS JOIN LATERAL habit.reminder_firing_rule(c.user_id, c.template_id, c.weekdays, c.tz, c.day_starts_at, c.habit_day, c.today) f
        WHERE NOT EXISTS (SELECT 1 FROM habit.reminder_firings x
                          WHERE x.reminder_id = c.id AND x.local_date = c.d AND (x.acked_at IS NOT NULL OR x.lease_until > now())
                          OFFSET 0)
        -- Already in this order (the nested loops keep the candidates'), so the limit stops
        -- the checks early; said again because only ORDER BY promises it.
        ORDER BY c.fire_at, c.id, c.d
        LIMIT p_limit;
    END
    $fn$;
COMMENT ON FUNCTION habit.reminders_due(timestamptz, timestamptz, integer) IS
    'The push sender''s window: the firings in [p_from, p_to) (at most 24 hours), earliest first, at most p_limit, not acknowledged nor under a lease; HB011 for a bad window (sql/0036).';

-- Claims firings for p_lease: those that still fire (habit.reminder_firing_rule, as of now),
-- are not acknowledged, and are not under another's lease (p_holder's own lease is renewed, so a
-- sender's retried claim gets the same firings back). Returns the firings now held. Concurrent
-- claims of one firing take turns on its row: one wins.
CREATE OR REPLACE FUNCTION habit.claim_reminder_firings(p_ids text[], p_lease interval, p_holder text)
    RETURNS TABLE (firing_id text, user_id uuid, template_id uuid, reminder_id uuid, fire_at timestamptz,
                   local_date date, local_time time, habit_day date, name text, lease_until timestamptz)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    SET jit = off
    AS $fn$
    BEGIN
        IF p_lease IS NULL OR p_lease < interval '1 second' OR p_lease > interval '1 hour' THEN
            RAISE EXCEPTION 'lease_ms: 1000 to 3600000' USING ERRCODE = 'HB011', COLUMN = 'lease_ms', DETAIL = 'out_of_range';
        END IF;
        IF p_holder IS NOT NULL AND (char_length(p_holder) NOT BETWEEN 1 AND 100) THEN
            RAISE EXCEPTION 'sender: 1 to 100 characters' USING ERRCODE = 'HB011', COLUMN = 'sender', DETAIL = 'too_long';
        END IF;
        RETURN QUERY
        WITH live AS MATERIALIZED (
            SELECT r.id, k.local_date, r.user_id, r.template_id, r.local_time, c.fire_at, c.habit_day, f.name
            FROM habit.reminder_firing_keys(p_ids) k
            JOIN public.habit_reminders r ON r.id = k.reminder_id
            CROSS JOIN LATERAL (SELECT (k.local_date + r.local_time) AT TIME ZONE r.time_zone AS guess) g
            CROSS JOIN LATERAL (
                -- AT TIME ZONE's instant unless a transition is near (habit.fire_instant).
                SELECT CASE WHEN ((g.guess - interval '6 hours') AT TIME ZONE r.time_zone) - ((g.guess - interval '6 hours') AT TIME ZONE 'UTC')
                                 = (g.guess AT TIME ZONE r.time_zone) - (g.guess AT TIME ZONE 'UTC')
                                 AND (g.guess AT TIME ZONE r.time_zone) - (g.guess AT TIME ZONE 'UTC')
                                 = ((g.guess + interval '6 hours') AT TIME ZONE r.time_zone) - ((g.guess + interval '6 hours') AT TIME ZONE 'UTC')
                            THEN g.guess ELSE habit.fire_instant(k.local_date + r.local_time, r.time_zone) END AS fire_at,
                       ((k.local_date + r.local_time) - r.day_starts_at)::date AS habit_day,
                       habit.local_day(now(), r.time_zone, r.day_starts_at) AS today) c
            CROSS JOIN LATERAL habit.reminder_firing_rule(r.user_id, r.template_id, r.weekdays, r.time_zone, r.day_starts_at, c.habit_day, c.today) f
        ), held AS (
            -- In key order, so two claims of overlapping firings lock them in the same order.
            INSERT INTO habit.reminder_firings AS x (reminder_id, local_date, user_id, fire_at, holder, lease_until)
            SELECT l.id, l.local_date, l.user_id, l.fire_at, p_holder, now() + p_lease
            FROM live l ORDER BY l.id, l.local_date
            ON CONFLICT ON CONSTRAINT reminder_firings_pkey DO UPDATE
                SET holder = excluded.holder, lease_until = excluded.lease_until, fire_at = excluded.fire_at, claims = x.claims + 1
                WHERE x.acked_at IS NULL AND (x.lease_until <= now() OR (excluded.holder IS NOT NULL AND x.holder = excluded.holder))
            RETURNING x.reminder_id, x.local_date, x.lease_until
        )
        SELECT l.id::text || '/' || to_char(l.local_date, 'YYYY-MM-DD'), l.user_id, l.template_id, l.id,
               l.fire_at, l.local_date, l.local_time, l.habit_day, l.name, h.lease_until
        FROM held h JOIN live l ON l.id = h.reminder_id AND l.local_date = h.local_date
        ORDER BY l.fire_at, l.id, l.local_date;
    END
    $fn$;
COMMENT ON FUNCTION habit.claim_reminder_firings(text[], interval, text) IS
    'reminders.claim: of the firing ids, those that still fire and are neither acknowledged nor under another''s lease, now held by p_holder for p_lease (sql/0036).';

-- Acknowledges firings as sent: never listed or claimed again. Returns the ids acknowledged now
-- (a second acknowledgement returns nothing and changes nothing); an id never claimed is not a
-- sent firing and is left alone.
CREATE OR REPLACE FUNCTION habit.ack_reminder_firings(p_ids text[])
    RETURNS TABLE (firing_id text)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        RETURN QUERY
        WITH acked AS (
            UPDATE habit.reminder_firings f SET acked_at = now()
            FROM habit.reminder_firing_keys(p_ids) k
            WHERE f.reminder_id = k.reminder_id AND f.local_date = k.local_date AND f.acked_at IS NULL
            RETURNING f.reminder_id, f.local_date
        )
        -- In the order the ids were given.
        SELECT o.i FROM acked a
        JOIN (SELECT u.i, min(u.n) AS n FROM unnest(p_ids) WITH ORDINALITY AS u(i, n) GROUP BY u.i) o
          ON o.i = a.reminder_id::text || '/' || to_char(a.local_date, 'YYYY-MM-DD')
        ORDER BY o.n;
    END
    $fn$;
COMMENT ON FUNCTION habit.ack_reminder_firings(text[]) IS
    'reminders.ack: marks claimed firings sent; returns those acknowledged by this call (sql/0036).';

-- Claims acknowledged, or left, before now - p_keep: the worker's prune job removes them (a
-- window older than that may list its firings again; docs/admin.md).
CREATE OR REPLACE FUNCTION habit.prune_reminder_firings(p_keep interval) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        removed bigint;
    BEGIN
        DELETE FROM habit.reminder_firings f WHERE f.fire_at < now() - p_keep AND f.lease_until < now() - p_keep;
        GET DIAGNOSTICS removed = ROW_COUNT;
        RETURN removed;
    END
    $fn$;
COMMENT ON FUNCTION habit.prune_reminder_firings(interval) IS
    'Removes firing claims whose firing and lease are older than p_keep; returns how many (sql/0036).';
