-- The trigger of public.habit_reminders (sql/migrations/0036): one BEFORE row trigger, writing
-- only rows of the user_id of the row that fired it; an UPDATE that changes nothing does
-- nothing.
--
-- Current-state file: applied again by `habit migrate` whenever this file changes (docs/schema.md,
-- "Migrations"). Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- BEFORE: the user's zone and day start copied from the profile (whatever the writer sent: the
-- sender's window is keyed on them), at most 24 reminders a habit (HB001, counted under the
-- habit's lock, so two writers take turns), updated_at, the change number (key: the id) and
-- the tombstone of a deleted or moved reminder.
CREATE OR REPLACE FUNCTION habit.habit_reminders_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        held integer;
    BEGIN
        -- Another user's row: row-level security refuses it; nothing here runs first (the rule
        -- and the reason in triggers/habit_completions.sql).
        IF coalesce(NEW.user_id, OLD.user_id) IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
        END IF;
        IF TG_OP = 'DELETE' THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'reminders', OLD.id::text);
            RETURN OLD;
        END IF;
        SELECT coalesce(max(p.timezone), 'UTC'), coalesce(max(p.day_starts_at), '00:00')
        INTO NEW.time_zone, NEW.day_starts_at
        FROM public.profiles p WHERE p.user_id = NEW.user_id;
        IF TG_OP = 'UPDATE' THEN
            IF NEW IS NOT DISTINCT FROM OLD THEN
                RETURN NEW;
            END IF;
            NEW.updated_at := now();
        END IF;
        IF TG_OP = 'INSERT' OR (NEW.user_id, NEW.template_id) IS DISTINCT FROM (OLD.user_id, OLD.template_id) THEN
            PERFORM 1 FROM public.habit_templates t WHERE t.id = NEW.template_id AND t.user_id = NEW.user_id FOR NO KEY UPDATE;
            SELECT count(*) INTO held FROM public.habit_reminders r WHERE r.user_id = NEW.user_id AND r.template_id = NEW.template_id;
            IF held >= 24 THEN
                RAISE EXCEPTION 'habit % would have % reminders; the limit is 24', NEW.template_id, held + 1
                    USING ERRCODE = 'HB001', TABLE = 'habit_reminders', SCHEMA = 'public';
            END IF;
        END IF;
        IF TG_OP = 'UPDATE' AND (NEW.id, NEW.user_id) IS DISTINCT FROM (OLD.id, OLD.user_id) THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'reminders', OLD.id::text);
        END IF;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'reminders',
            CASE WHEN TG_OP = 'INSERT' OR (NEW.id, NEW.user_id) IS DISTINCT FROM (OLD.id, OLD.user_id) THEN NEW.id::text END);
        RETURN NEW;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_reminders_before BEFORE INSERT OR UPDATE OR DELETE ON public.habit_reminders
    FOR EACH ROW EXECUTE FUNCTION habit.habit_reminders_before();
