-- The trigger of public.habit_day_notes (sql/migrations/0029): one BEFORE row trigger, writing
-- only rows of the user_id of the row that fired it; an UPDATE that changes nothing does
-- nothing.
--
-- Current-state file: applied again by `habit migrate` whenever this file changes (docs/schema.md,
-- "Migrations"). Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- BEFORE: the change number (key '<template_id>/<YYYY-MM-DD>'), updated_at, and the tombstone of
-- a deleted or moved note. A note has no rule of the day beyond its constraints: it may be written
-- on any day of a habit of the user's (the composite foreign key), done or not.
CREATE OR REPLACE FUNCTION habit.habit_day_notes_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        -- Another user's row: row-level security refuses it; nothing here runs first (the rule
        -- and the reason in triggers/habit_completions.sql).
        IF coalesce(NEW.user_id, OLD.user_id) IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
        END IF;
        IF TG_OP = 'DELETE' THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'notes', OLD.template_id::text || '/' || to_char(OLD.note_date, 'YYYY-MM-DD'));
            RETURN OLD;
        END IF;
        IF TG_OP = 'UPDATE' THEN
            IF NEW IS NOT DISTINCT FROM OLD THEN
                RETURN NEW;
            END IF;
            NEW.updated_at := now();
            IF (NEW.user_id, NEW.template_id, NEW.note_date) IS NOT DISTINCT FROM (OLD.user_id, OLD.template_id, OLD.note_date) THEN
                NEW.change_seq := habit.sync_stamp(NEW.user_id, 'notes', NULL);
                RETURN NEW;
            END IF;
            PERFORM habit.sync_tombstone(OLD.user_id, 'notes', OLD.template_id::text || '/' || to_char(OLD.note_date, 'YYYY-MM-DD'));
        END IF;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'notes', NEW.template_id::text || '/' || to_char(NEW.note_date, 'YYYY-MM-DD'));
        RETURN NEW;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_day_notes_before BEFORE INSERT OR UPDATE OR DELETE ON public.habit_day_notes
    FOR EACH ROW EXECUTE FUNCTION habit.habit_day_notes_before();
