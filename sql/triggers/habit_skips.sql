-- The triggers of public.habit_skips: one BEFORE and one AFTER row trigger at most (issue 29),
-- each doing all of the table's bookkeeping for its timing and writing only rows of the user_id
-- of the row that fired it; nothing fires for a statement that touches no row, and an UPDATE
-- that changes nothing does nothing.
--
-- Current-state file: the table's trigger functions and triggers as they are now, applied
-- again by `habit migrate` whenever this file changes (docs/schema.md, "Migrations").
-- Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- The same bookkeeping as habit_completions' (sql/triggers/habit_completions.sql), for skips.
CREATE OR REPLACE FUNCTION habit.habit_skips_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        day record;
    BEGIN
        -- A user's request writing another user's row: row-level security refuses it; nothing
        -- here may run first (its checks would tell that user something about the other's habit,
        -- and its locks make it wait for that user's writes). A user's request is any role that
        -- does not act for users (habit.acts_for_users: authenticated, a role inheriting it);
        -- the roles that do are the ones row-level security lets write the row, and get the
        -- rules. Nested so that the user's own row (every write of the worker) asks no catalog.
        IF coalesce(NEW.user_id, OLD.user_id) IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
        END IF;
        IF TG_OP = 'DELETE' THEN
            day := habit.check_day(OLD.user_id, OLD.template_id, OLD.skipped_date, 'skip', false, NULL);
            -- Loop's score: a day written on or before the habit's checkpoint forgets it (sql/0038),
            -- after the habit's lock: the batch skips a habit a write holds, and a write that waited
            -- for the batch sees its checkpoint (habit.score_checkpoints_advance).
            DELETE FROM habit.score_checkpoints cp
            WHERE cp.user_id = OLD.user_id AND cp.template_id = OLD.template_id AND cp.as_of >= OLD.skipped_date;
            IF (day.st).user_id IS NOT NULL AND NOT (day.st).pending THEN
                PERFORM habit.streak_apply(day.st, OLD.skipped_date, 'skip', false);
            END IF;
            PERFORM habit.sync_tombstone(OLD.user_id, 'skips', OLD.template_id::text || '/' || to_char(OLD.skipped_date, 'YYYY-MM-DD'));
            IF day.tracking THEN
                PERFORM habit.weekly_counts_mark(OLD.user_id, daterange(OLD.skipped_date - 6, OLD.skipped_date + 7, '[)'));
            END IF;
            RETURN OLD;
        ELSIF TG_OP = 'UPDATE' THEN
            IF NEW IS NOT DISTINCT FROM OLD THEN
                RETURN NEW;
            ELSIF (NEW.user_id, NEW.template_id, NEW.skipped_date) IS NOT DISTINCT FROM (OLD.user_id, OLD.template_id, OLD.skipped_date) THEN
                NEW.change_seq := habit.sync_stamp(NEW.user_id, 'skips', NULL);
                RETURN NEW;
            END IF;
            PERFORM 1 FROM public.habit_templates t WHERE t.id = OLD.template_id AND t.user_id = OLD.user_id FOR NO KEY UPDATE;
            day := habit.check_day(NEW.user_id, NEW.template_id, NEW.skipped_date, 'skip', true, NULL);
            PERFORM habit.streak_invalidate(OLD.user_id, OLD.template_id);
            PERFORM habit.streak_invalidate(NEW.user_id, NEW.template_id);
            PERFORM habit.sync_tombstone(OLD.user_id, 'skips', OLD.template_id::text || '/' || to_char(OLD.skipped_date, 'YYYY-MM-DD'));
            PERFORM habit.weekly_counts_mark(OLD.user_id, daterange(OLD.skipped_date - 6, OLD.skipped_date + 7, '[)'));
        ELSE
            day := habit.check_day(NEW.user_id, NEW.template_id, NEW.skipped_date, 'skip', true, NULL);
            IF (day.st).user_id IS NOT NULL AND NOT (day.st).pending THEN
                PERFORM habit.streak_apply(day.st, NEW.skipped_date, 'skip', true);
            END IF;
        END IF;
        -- The checkpoint, as above, for the row written.
        IF TG_OP = 'UPDATE' THEN
            DELETE FROM habit.score_checkpoints cp
            WHERE cp.user_id = OLD.user_id AND cp.template_id = OLD.template_id AND cp.as_of >= OLD.skipped_date;
        END IF;
        DELETE FROM habit.score_checkpoints cp
        WHERE cp.user_id = NEW.user_id AND cp.template_id = NEW.template_id AND cp.as_of >= NEW.skipped_date;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'skips', NEW.template_id::text || '/' || to_char(NEW.skipped_date, 'YYYY-MM-DD'));
        IF day.tracking THEN
            PERFORM habit.weekly_counts_mark(NEW.user_id, daterange(NEW.skipped_date - 6, NEW.skipped_date + 7, '[)'));
        END IF;
        RETURN NEW;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_skips_before BEFORE INSERT OR UPDATE OR DELETE ON public.habit_skips
    FOR EACH ROW EXECUTE FUNCTION habit.habit_skips_before();
