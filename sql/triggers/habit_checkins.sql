-- The triggers of public.habit_checkins (sql/migrations/0029): one BEFORE and one AFTER row
-- trigger, each writing only rows of the user_id of the row that fired it; nothing fires for
-- a statement that touches no row, and an UPDATE that changes nothing does nothing.
--
-- Current-state file: the table's trigger functions and triggers as they are now, applied
-- again by `habit migrate` whenever this file changes (docs/schema.md, "Migrations").
-- Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- BEFORE: the rules of a day, as for a completion (habit.check_day with kind 'checkin': the
-- habit locked, 23514 before 1970, HB003 after the user's today, HB004 not on the day, HB005 on
-- a skipped day); a boolean habit's check-in counts whole times (23514,
-- habit_checkins_boolean_value); at most 100 check-ins per habit and day (HB001); the change
-- number, and the tombstone of a deleted check-in (key: its id).
CREATE OR REPLACE FUNCTION habit.habit_checkins_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        day record;
        taken integer;
    BEGIN
        -- Another user's row: row-level security refuses it; nothing here runs first (the rule
        -- and the reason in triggers/habit_completions.sql).
        IF coalesce(NEW.user_id, OLD.user_id) IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
        END IF;
        IF TG_OP = 'DELETE' THEN
            PERFORM 1 FROM public.habit_templates t WHERE t.id = OLD.template_id AND t.user_id = OLD.user_id FOR NO KEY UPDATE;
            PERFORM habit.sync_tombstone(OLD.user_id, 'checkins', OLD.id::text);
            -- Loop's score: a day written on or before the habit's checkpoint forgets it (sql/0038),
            -- after the habit's lock: the batch skips a habit a write holds, and a write that waited
            -- for the batch sees its checkpoint (habit.score_checkpoints_advance).
            DELETE FROM habit.score_checkpoints cp
            WHERE cp.user_id = OLD.user_id AND cp.template_id = OLD.template_id AND cp.as_of >= OLD.checkin_date;
            RETURN OLD;
        END IF;
        IF TG_OP = 'UPDATE' THEN
            IF NEW IS NOT DISTINCT FROM OLD THEN
                RETURN NEW;
            END IF;
            IF (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN
                PERFORM habit.sync_tombstone(OLD.user_id, 'checkins', OLD.id::text);
            END IF;
        END IF;
        IF TG_OP = 'INSERT' OR (NEW.user_id, NEW.template_id, NEW.checkin_date, NEW.value)
                                 IS DISTINCT FROM (OLD.user_id, OLD.template_id, OLD.checkin_date, OLD.value) THEN
            day := habit.check_day(NEW.user_id, NEW.template_id, NEW.checkin_date, 'checkin', true, NULL);
            -- The checkpoint, as above, for the row written.
            IF TG_OP = 'UPDATE' THEN
                PERFORM 1 FROM public.habit_templates t WHERE t.id = OLD.template_id AND t.user_id = OLD.user_id FOR NO KEY UPDATE;
                DELETE FROM habit.score_checkpoints cp
                WHERE cp.user_id = OLD.user_id AND cp.template_id = OLD.template_id AND cp.as_of >= OLD.checkin_date;
            END IF;
            DELETE FROM habit.score_checkpoints cp
            WHERE cp.user_id = NEW.user_id AND cp.template_id = NEW.template_id AND cp.as_of >= NEW.checkin_date;
            IF day.kind IS NOT NULL THEN
                IF day.kind = 'boolean' AND NEW.value <> trunc(NEW.value) THEN
                    RAISE EXCEPTION 'a check-in of a boolean habit counts whole times, not %: violates check constraint "habit_checkins_boolean_value"', NEW.value
                        USING ERRCODE = 'check_violation', CONSTRAINT = 'habit_checkins_boolean_value',
                              TABLE = 'habit_checkins', COLUMN = 'value', SCHEMA = 'public';
                END IF;
                IF TG_OP = 'INSERT' OR (NEW.template_id, NEW.checkin_date) IS DISTINCT FROM (OLD.template_id, OLD.checkin_date) THEN
                    SELECT count(*) INTO taken FROM public.habit_checkins i
                    WHERE i.user_id = NEW.user_id AND i.template_id = NEW.template_id AND i.checkin_date = NEW.checkin_date;
                    IF taken >= 100 THEN
                        RAISE EXCEPTION 'user % would hold % rows in habit_checkins; the limit is 100 per habit and day', NEW.user_id, taken + 1
                            USING ERRCODE = 'HB001', TABLE = 'habit_checkins', SCHEMA = 'public';
                    END IF;
                END IF;
            END IF;
        END IF;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'checkins', CASE WHEN TG_OP = 'INSERT' THEN NEW.id::text END);
        RETURN NEW;
    END
    $fn$;

-- AFTER: the day's habit_completions row follows the day's value (sql/0029). A new or larger
-- check-in can only make the day done: the row is added when the sum meets the target. A
-- removed or smaller one can only undo it: the row goes when the sum falls below the target
-- (to 0, when the last check-in goes: a plain toggle's row too). Not when this runs inside
-- another trigger (pg_trigger_depth() > 1): that trigger keeps the row itself (a completion's
-- trigger adding the rest of a target, or clearing a day it un-does; a habit's cascade).
CREATE OR REPLACE FUNCTION habit.habit_checkins_after() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF pg_trigger_depth() > 1 THEN
            RETURN NULL;
        END IF;
        IF coalesce(NEW.user_id, OLD.user_id) IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN NULL;
            END IF;
        END IF;
        IF TG_OP = 'UPDATE' THEN
            IF (NEW.user_id, NEW.template_id, NEW.checkin_date, NEW.value)
               IS NOT DISTINCT FROM (OLD.user_id, OLD.template_id, OLD.checkin_date, OLD.value) THEN
                RETURN NULL;
            END IF;
        END IF;
        IF TG_OP <> 'INSERT' THEN
            PERFORM habit.checkin_day_follow(OLD.user_id, OLD.template_id, OLD.checkin_date, false);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            PERFORM habit.checkin_day_follow(NEW.user_id, NEW.template_id, NEW.checkin_date, true);
        END IF;
        RETURN NULL;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_checkins_before BEFORE INSERT OR UPDATE OR DELETE ON public.habit_checkins
    FOR EACH ROW EXECUTE FUNCTION habit.habit_checkins_before();
CREATE OR REPLACE TRIGGER habit_checkins_after AFTER INSERT OR UPDATE OR DELETE ON public.habit_checkins
    FOR EACH ROW EXECUTE FUNCTION habit.habit_checkins_after();
