-- The triggers of public.habit_periods: one BEFORE and one AFTER row trigger at most (issue
-- 29), each doing all of the table's bookkeeping for its timing and writing only rows of the
-- user_id of the row that fired it; nothing fires for a statement that touches no row, and an
-- UPDATE that changes nothing does nothing.
--
-- Current-state file: the table's trigger functions and triggers as they are now, applied
-- again by `habit migrate` whenever this file changes (docs/schema.md, "Migrations").
-- Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- Periods are written only by the trigger of habit_templates and by habit.import_account.
CREATE OR REPLACE FUNCTION habit.habit_periods_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
            RETURN NEW;
        END IF;
        -- The range (sql/migrations/0021), as for habit_templates.activated_at: checked when
        -- written or changed only, so older periods stay editable (closing one at now()).
        IF (TG_OP = 'INSERT' OR NEW.started_at IS DISTINCT FROM OLD.started_at)
           AND NEW.started_at < habit.earliest_day()::timestamp AT TIME ZONE 'UTC' THEN
            RAISE EXCEPTION 'started_at % is before % 00:00 UTC: violates check constraint "habit_periods_started_at_range"', NEW.started_at, habit.earliest_day()
                USING ERRCODE = 'check_violation', CONSTRAINT = 'habit_periods_started_at_range',
                      TABLE = 'habit_periods', COLUMN = 'started_at', SCHEMA = 'public';
        END IF;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'periods',
            CASE WHEN TG_OP = 'INSERT' OR (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN NEW.id::text END);
        RETURN NEW;
    END
    $fn$;

-- AFTER: a period changes every slot of its habit from its first day on: the habit's streaks
-- are rebuilt at commit (habit.streak_invalidate); its days are marked for the weekly counts
-- (from the UTC date of started_at − 2 to that of ended_at + 3: a local date is within a day
-- of the UTC one, and habit.period_on_days ends at most two days after ended_at's).
CREATE OR REPLACE FUNCTION habit.habit_periods_after() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
            RETURN NULL;
        END IF;
        IF TG_OP <> 'INSERT' THEN
            IF TG_OP = 'DELETE' OR (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN
                PERFORM habit.sync_tombstone(OLD.user_id, 'periods', OLD.id::text);
            END IF;
            PERFORM habit.streak_invalidate(OLD.user_id, OLD.template_id);
            PERFORM habit.weekly_counts_mark(OLD.user_id, daterange((OLD.started_at AT TIME ZONE 'UTC')::date - 2,
                                                                    (OLD.ended_at AT TIME ZONE 'UTC')::date + 3, '[)'));
        END IF;
        IF TG_OP <> 'DELETE' THEN
            PERFORM habit.streak_invalidate(NEW.user_id, NEW.template_id);
            PERFORM habit.weekly_counts_mark(NEW.user_id, daterange((NEW.started_at AT TIME ZONE 'UTC')::date - 2,
                                                                    (NEW.ended_at AT TIME ZONE 'UTC')::date + 3, '[)'));
        END IF;
        RETURN NULL;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_periods_before BEFORE INSERT OR UPDATE ON public.habit_periods
    FOR EACH ROW EXECUTE FUNCTION habit.habit_periods_before();
CREATE OR REPLACE TRIGGER habit_periods_after AFTER INSERT OR UPDATE OR DELETE ON public.habit_periods
    FOR EACH ROW EXECUTE FUNCTION habit.habit_periods_after();
