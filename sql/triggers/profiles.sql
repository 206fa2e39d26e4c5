-- The triggers of public.profiles: one BEFORE and one AFTER row trigger at most (issue 29),
-- each doing all of the table's bookkeeping for its timing and writing only rows of the user_id
-- of the row that fired it; nothing fires for a statement that touches no row, and an UPDATE
-- that changes nothing does nothing.
--
-- Current-state file: the table's trigger functions and triggers as they are now, applied
-- again by `habit migrate` whenever this file changes (docs/schema.md, "Migrations").
-- Removing a trigger needs a DROP TRIGGER in a versioned migration.

CREATE OR REPLACE FUNCTION habit.profiles_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        -- A user's request writing another user's row: row-level security refuses it after this
        -- trigger; nothing here may run first (sql/0023: the change number would lock the other
        -- user's clock, waiting for that user's writes and blocking them). A user's request is
        -- any role that does not act for users (habit.acts_for_users; the rule and the reason in
        -- triggers/habit_completions.sql); the user's own row asks no catalog.
        IF NEW.user_id IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN NEW;
            END IF;
        END IF;
        IF TG_OP = 'UPDATE' THEN
            IF NEW IS NOT DISTINCT FROM OLD THEN
                RETURN NEW;
            END IF;
            NEW.updated_at := now();
        END IF;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'profile',
            CASE WHEN TG_OP = 'INSERT' OR NEW.user_id IS DISTINCT FROM OLD.user_id THEN '' END);
        RETURN NEW;
    END
    $fn$;

-- AFTER: the zone, the day's start and the week decide every day and week of the user's habits
-- (and the reminders' copies of the zone and day start, sql/0036):
-- when they change (a profile inserted or deleted counts as a change from or to UTC, 00:00 and Monday),
-- the user's streaks are rebuilt at commit and every week marked for the weekly counts; a new
-- week start re-decides the weeks of weekly targets.
CREATE OR REPLACE FUNCTION habit.profiles_after() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        weekly uuid[];
        habit_id uuid;
        target numeric;
        target_type text;
    BEGIN
        IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
            RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN
            IF TG_OP = 'DELETE' OR NEW.user_id IS DISTINCT FROM OLD.user_id THEN
                PERFORM habit.sync_tombstone(OLD.user_id, 'profile', '');
            END IF;
            -- The reminders' copies of the zone and the day's start (sql/0036): their trigger
            -- reads them from the profile, as it now is.
            IF TG_OP = 'DELETE' OR NEW.user_id IS DISTINCT FROM OLD.user_id THEN
                UPDATE public.habit_reminders r SET time_zone = 'UTC', day_starts_at = '00:00'
                WHERE r.user_id = OLD.user_id AND (r.time_zone, r.day_starts_at) IS DISTINCT FROM ('UTC', '00:00'::time);
            END IF;
            IF TG_OP = 'DELETE' OR (NEW.user_id, NEW.timezone, NEW.week_start, NEW.day_starts_at) IS DISTINCT FROM (OLD.user_id, OLD.timezone, OLD.week_start, OLD.day_starts_at) THEN
                IF (OLD.timezone, OLD.week_start, OLD.day_starts_at) IS DISTINCT FROM ('UTC', 'monday', '00:00'::time) OR TG_OP = 'UPDATE' THEN
                    PERFORM habit.streak_invalidate(OLD.user_id, NULL);
                END IF;
                PERFORM habit.weekly_counts_mark(OLD.user_id, '(,)');
            END IF;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            -- The weeks of weekly targets (sql/0033) are the user's: each such habit's weeks
            -- are decided again in the new ones (their events, not their days).
            IF (TG_OP = 'INSERT' AND NEW.week_start <> 'monday') OR (TG_OP = 'UPDATE' AND NEW.week_start IS DISTINCT FROM OLD.week_start) THEN
                -- One call per habit after the read (a function that writes, called inside a
                -- query, is a query inside a query on a shard: Citus refuses it).
                SELECT array_agg(t.id) INTO weekly FROM public.habit_templates t
                WHERE t.user_id = NEW.user_id AND t.target_period = 'week';
                FOREACH habit_id IN ARRAY coalesce(weekly, '{}') LOOP
                    SELECT x.target, x.target_type INTO target, target_type FROM public.habit_templates x
                    WHERE x.id = habit_id AND x.user_id = NEW.user_id;
                    PERFORM habit.checkins_retarget(NEW.user_id, habit_id, target, target_type);
                END LOOP;
            END IF;
            IF TG_OP = 'INSERT' OR (NEW.user_id, NEW.timezone, NEW.day_starts_at) IS DISTINCT FROM (OLD.user_id, OLD.timezone, OLD.day_starts_at) THEN
                UPDATE public.habit_reminders r SET time_zone = NEW.timezone, day_starts_at = NEW.day_starts_at
                WHERE r.user_id = NEW.user_id AND (r.time_zone, r.day_starts_at) IS DISTINCT FROM (NEW.timezone, NEW.day_starts_at);
            END IF;
            IF TG_OP = 'INSERT' OR (NEW.user_id, NEW.timezone, NEW.week_start, NEW.day_starts_at) IS DISTINCT FROM (OLD.user_id, OLD.timezone, OLD.week_start, OLD.day_starts_at) THEN
                IF (NEW.timezone, NEW.week_start, NEW.day_starts_at) IS DISTINCT FROM ('UTC', 'monday', '00:00'::time) OR TG_OP = 'UPDATE' THEN
                    PERFORM habit.streak_invalidate(NEW.user_id, NULL);
                END IF;
                PERFORM habit.weekly_counts_mark(NEW.user_id, '(,)');
            END IF;
        END IF;
        RETURN NULL;
    END
    $fn$;

CREATE OR REPLACE TRIGGER profiles_before BEFORE INSERT OR UPDATE ON public.profiles
    FOR EACH ROW EXECUTE FUNCTION habit.profiles_before();
CREATE OR REPLACE TRIGGER profiles_after AFTER INSERT OR UPDATE OR DELETE ON public.profiles
    FOR EACH ROW EXECUTE FUNCTION habit.profiles_after();
