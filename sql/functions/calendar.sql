-- Time zones, local dates and weeks: every "today", "activation day" and "week" of the
-- service goes through these, never CURRENT_DATE or the session's TimeZone.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- The zone in which a user's "today" is computed: a per-request override, else the
-- profile's, else UTC. Runs with the caller's rights, so RLS limits it to the caller's row.
-- PL/pgSQL rather than SQL: a SQL function whose body holds a sub-SELECT is not inlined, and
-- is then planned again on every call; PL/pgSQL keeps the plan for the session (pgbench on
-- the daily-view transaction: ~2,100 → ~2,700 transactions/s). The profile is read by a
-- statement of its own, not a sub-SELECT inside the RETURN expression: Citus cannot plan a
-- distributed sub-SELECT in an expression that takes the function's arguments as parameters
-- ("could not create distributed plan"), and it plans a PL/pgSQL statement.
CREATE OR REPLACE FUNCTION habit.user_time_zone(acting_user uuid, override text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        zone text;
    BEGIN
        IF override IS NOT NULL THEN
            RETURN override;
        END IF;
        SELECT p.timezone INTO zone FROM public.profiles p WHERE p.user_id = acting_user;
        RETURN coalesce(zone, 'UTC');
    END
    $fn$;
COMMENT ON FUNCTION habit.user_time_zone(uuid, text) IS
    'Time zone for a user: the override when given, else profiles.timezone, else UTC.';

-- The calendar date of an instant in a zone.
-- Inlined into their callers' plans: no SET clause (a SET clause stops PostgreSQL from
-- inlining a SQL function; docs/schema.md, "search_path", has the measurements). Instead every
-- name in the body is schema-qualified, so the caller's search_path cannot change its meaning:
-- functions and types pg_catalog.… (or grammar for pg_catalog names: EXTRACT, COALESCE,
-- LEAST, GREATEST, integer, bigint, numeric), operators OPERATOR(pg_catalog.…), fully
-- parenthesized since OPERATOR() has a single precedence.
CREATE OR REPLACE FUNCTION habit.local_date(instant timestamptz, zone text) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$ SELECT pg_catalog.timezone(zone, instant)::pg_catalog.date $fn$;
COMMENT ON FUNCTION habit.local_date(timestamptz, text) IS
    'The calendar date of instant in time zone zone (e.g. today = habit.local_date(now(), zone)).';

-- The user's day of an instant, THE rule of the day's start (sql/migrations/0030): the
-- wall-clock time of the instant in the zone, minus the time of day at which the user's days
-- begin, then its date. With day_start 03:00, 01:30 on the 5th is the 4th. Inlined, like
-- habit.local_date (no SET clause, schema-qualified); habit.local_date is this at 00:00.
-- Around a DST change the wall clock decides, as it does for midnight: a start inside a skipped
-- hour begins the day when the clock jumps past it; a start inside a repeated hour begins it at
-- the first reading, and the rest of the repeated hour reads as the day before again until the
-- clock reaches the start a second time (docs/schema.md, "The day's start").
CREATE OR REPLACE FUNCTION habit.local_day(instant timestamptz, zone text, day_start time) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$ SELECT (pg_catalog.timezone(zone, instant) OPERATOR(pg_catalog.-) day_start::pg_catalog.interval)::pg_catalog.date $fn$;
COMMENT ON FUNCTION habit.local_day(timestamptz, text, time) IS
    'The user''s date of instant: its wall-clock time in zone minus day_start (profiles.day_starts_at), then the date (sql/0030).';

-- The instant at which the user's day `day` begins: day + day_start read in the zone the way
-- PostgreSQL reads a local time (a time in a skipped hour with the offset before the change, a
-- repeated one as its later reading). Inlined, like habit.local_day.
CREATE OR REPLACE FUNCTION habit.day_begins(day date, zone text, day_start time) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$ SELECT pg_catalog.timezone(zone, day OPERATOR(pg_catalog.+) day_start) $fn$;
COMMENT ON FUNCTION habit.day_begins(date, text, time) IS
    'The instant day + day_start in zone (PostgreSQL''s reading of a local time): where the user''s day begins (sql/0030).';

-- The time of day at which a user's days begin: the profile's, else 00:00. PL/pgSQL for the
-- reasons of habit.user_time_zone.
CREATE OR REPLACE FUNCTION habit.user_day_start(acting_user uuid) RETURNS time
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        start time;
    BEGIN
        SELECT p.day_starts_at INTO start FROM public.profiles p WHERE p.user_id = acting_user;
        RETURN coalesce(start, '00:00');
    END
    $fn$;
COMMENT ON FUNCTION habit.user_day_start(uuid) IS
    'Local time of day at which the user''s days begin: profiles.day_starts_at, else 00:00 (sql/0030).';

-- The user's today: now() as a day of the user (the override zone when given, else the
-- profile's; the profile's day start either way). One read of the profile.
CREATE OR REPLACE FUNCTION habit.user_today(acting_user uuid, override text) RETURNS date
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        zone text;
        start time;
    BEGIN
        SELECT p.timezone, p.day_starts_at INTO zone, start FROM public.profiles p WHERE p.user_id = acting_user;
        RETURN habit.local_day(now(), coalesce(override, zone, 'UTC'), coalesce(start, '00:00'));
    END
    $fn$;
COMMENT ON FUNCTION habit.user_today(uuid, text) IS
    'The user''s today at now(): habit.local_day in the override zone, else the profile''s (else UTC), with the profile''s day start (sql/0030).';

-- The first day of the week holding `day`: weeks start on Monday (ISO day 1) or Sunday (7).
-- Inlined, like habit.local_date.
CREATE OR REPLACE FUNCTION habit.week_start(day date, start_isodow integer) RETURNS date
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fn$
    SELECT day OPERATOR(pg_catalog.-)
           ((extract(isodow FROM day)::integer OPERATOR(pg_catalog.-) start_isodow OPERATOR(pg_catalog.+) 7)
            OPERATOR(pg_catalog.%) 7)
    $fn$;
COMMENT ON FUNCTION habit.week_start(date, integer) IS
    'First day of the week containing day; start_isodow is 1 for Monday weeks, 7 for Sunday weeks.';

-- 'monday' → 1, 'sunday' → 7 (ISO day numbers); anything else is an error rather than a
-- silent default, for admins calling the functions below by hand.
CREATE OR REPLACE FUNCTION habit.week_start_isodow(week_start_day text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
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

-- The ISO weekday the user's week starts on: the profile's, else Monday (1).
CREATE OR REPLACE FUNCTION habit.user_week_start_isodow(p_user uuid) RETURNS integer
    LANGUAGE sql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT coalesce((SELECT habit.week_start_isodow(p.week_start) FROM public.profiles p WHERE p.user_id = p_user), 1)
    $fn$;
COMMENT ON FUNCTION habit.user_week_start_isodow(uuid) IS
    'ISO weekday (1 = Monday, 7 = Sunday) on which the user''s week starts: profiles.week_start, else Monday.';
