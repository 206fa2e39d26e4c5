-- 0030 (issue 32, item 4): the day's start. A user's day may end later than midnight (a night
-- owl's "today" lasts until 03:00): profiles.day_starts_at is the local time of day at which
-- each of the user's days begins. Every instant becomes a day the same way, in one place
-- (habit.local_day, sql/functions/calendar.sql): its wall-clock time in the user's zone, minus
-- the day start, then the date. "Today", the day a habit was activated or deactivated on, the
-- weeks of the weekly counts and everything derived from them follow it.
--
-- What a change moves (docs/schema.md, "The day's start"): rows dated by day (completions,
-- skips, check-ins, notes) never move; instants (a habit's periods) are read again with the
-- new start, as they are after a zone change, so the streak runs are rebuilt and the weekly
-- counts marked by profiles' trigger.

ALTER TABLE public.profiles
    ADD COLUMN day_starts_at time NOT NULL DEFAULT '00:00'
        -- Whole minutes: "HH:MM" on the wire, and a start between two minutes means nothing to a person.
        CONSTRAINT profiles_day_starts_at_check CHECK (day_starts_at = date_trunc('minute', '2000-01-01'::date + day_starts_at)::time);
COMMENT ON COLUMN public.profiles.day_starts_at IS
    'Local time of day (whole minutes) at which each of the user''s days begins: at 03:00, 01:30 still belongs to the day before. Default 00:00.';

-- These take the day's start as an argument now (a changed argument list is a new function:
-- the old one goes; the current-state files create the new ones).
DROP FUNCTION IF EXISTS habit.period_on_days(timestamptz, timestamptz, text, date);
DROP FUNCTION IF EXISTS habit.day_habits(uuid, date, date, text, integer);
DROP FUNCTION IF EXISTS habit.habits_on(uuid, date, date, text);
DROP FUNCTION IF EXISTS habit.streak_segments(uuid, uuid, text, date);
