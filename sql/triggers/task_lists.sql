-- The triggers of public.task_lists: one BEFORE and one AFTER row trigger at most (issue 29),
-- each doing all of the table's bookkeeping for its timing and writing only rows of the user_id
-- of the row that fired it; nothing fires for a statement that touches no row, and an UPDATE
-- that changes nothing does nothing. A TRUNCATE trigger (statement-level: the one kind there
-- is) forgets the row counters.
--
-- Current-state file: the table's trigger functions and triggers as they are now, applied
-- again by `habit migrate` whenever this file changes (docs/schema.md, "Migrations").
-- Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- BEFORE: updated_at touched on a real change, and the change number (removing the new
-- key's tombstone); on DELETE, the list cleared from the user's tasks (tasks_list_fkey is NO
-- ACTION since sql/0027: Citus refuses ON DELETE SET NULL on a key that includes user_id, so
-- this trigger does what the key did, for every writer; the tasks' own triggers stamp them).
-- AFTER: the row limit counted, a deleted or moved key's tombstone.
CREATE OR REPLACE FUNCTION habit.task_lists_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        -- A user's request writing another user's row: row-level security refuses it after this
        -- trigger; nothing here may run first (sql/0023: the change number would lock the other
        -- user's clock, waiting for that user's writes and blocking them). A user's request is
        -- any role that does not act for users (habit.acts_for_users; the rule and the reason in
        -- triggers/habit_completions.sql); the user's own row asks no catalog.
        IF TG_OP = 'DELETE' THEN
            -- Only rows row-level security let the caller delete get here: nothing to step
            -- aside for. The key's check runs after the statement and finds no task left.
            UPDATE public.tasks t SET list_id = NULL WHERE t.user_id = OLD.user_id AND t.list_id = OLD.id;
            RETURN OLD;
        END IF;
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
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'lists',
            CASE WHEN TG_OP = 'INSERT' OR (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN NEW.id::text END);
        RETURN NEW;
    END
    $fn$;

CREATE OR REPLACE FUNCTION habit.task_lists_after() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM habit.count_row(NEW.user_id, 'task_lists', 1);
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'lists', OLD.id::text);
            PERFORM habit.count_row(OLD.user_id, 'task_lists', -1);
        ELSIF (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'lists', OLD.id::text);
            IF NEW.user_id IS DISTINCT FROM OLD.user_id THEN
                PERFORM habit.count_row(OLD.user_id, 'task_lists', -1);
                PERFORM habit.count_row(NEW.user_id, 'task_lists', 1);
            END IF;
        END IF;
        RETURN NULL;
    END
    $fn$;

CREATE OR REPLACE TRIGGER task_lists_before BEFORE INSERT OR UPDATE OR DELETE ON public.task_lists
    FOR EACH ROW EXECUTE FUNCTION habit.task_lists_before();
CREATE OR REPLACE TRIGGER task_lists_after AFTER INSERT OR UPDATE OR DELETE ON public.task_lists
    FOR EACH ROW EXECUTE FUNCTION habit.task_lists_after();
CREATE OR REPLACE TRIGGER task_lists_truncate AFTER TRUNCATE ON public.task_lists
    FOR EACH STATEMENT EXECUTE FUNCTION habit.count_truncated_rows();
