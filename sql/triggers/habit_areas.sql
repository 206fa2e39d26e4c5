-- The triggers of public.habit_areas (sql/migrations/0037): one BEFORE and one AFTER row
-- trigger, each writing only rows of the user_id of the row that fired it; an UPDATE that
-- changes nothing does nothing. A TRUNCATE trigger (statement-level: the one kind there is)
-- forgets the row counters.
--
-- Current-state file: applied again by `habit migrate` whenever this file changes (docs/schema.md,
-- "Migrations"). Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- BEFORE: on DELETE, the area cleared from the user's habits (habit_templates_area_fkey is NO
-- ACTION, as tasks_list_fkey: Citus refuses ON DELETE SET NULL on a key that includes
-- user_id, so this trigger does what the key would, for every writer; the habits' own
-- triggers stamp them); updated_at touched on a real change; the change number.
-- AFTER: the row limit counted (100 a user), a deleted or moved key's tombstone.
CREATE OR REPLACE FUNCTION habit.habit_areas_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            -- Only rows row-level security let the caller delete get here. The key's check
            -- runs after the statement and finds no habit left in the area.
            UPDATE public.habit_templates t SET area_id = NULL WHERE t.user_id = OLD.user_id AND t.area_id = OLD.id;
            RETURN OLD;
        END IF;
        -- Another user's row: row-level security refuses it; nothing here runs first (the rule
        -- and the reason in triggers/habit_completions.sql).
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
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'areas',
            CASE WHEN TG_OP = 'INSERT' OR (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN NEW.id::text END);
        RETURN NEW;
    END
    $fn$;

CREATE OR REPLACE FUNCTION habit.habit_areas_after() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM habit.count_row(NEW.user_id, 'habit_areas', 1);
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'areas', OLD.id::text);
            PERFORM habit.count_row(OLD.user_id, 'habit_areas', -1);
        ELSIF (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'areas', OLD.id::text);
            IF NEW.user_id IS DISTINCT FROM OLD.user_id THEN
                PERFORM habit.count_row(OLD.user_id, 'habit_areas', -1);
                PERFORM habit.count_row(NEW.user_id, 'habit_areas', 1);
            END IF;
        END IF;
        RETURN NULL;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_areas_before BEFORE INSERT OR UPDATE OR DELETE ON public.habit_areas
    FOR EACH ROW EXECUTE FUNCTION habit.habit_areas_before();
CREATE OR REPLACE TRIGGER habit_areas_after AFTER INSERT OR UPDATE OR DELETE ON public.habit_areas
    FOR EACH ROW EXECUTE FUNCTION habit.habit_areas_after();
CREATE OR REPLACE TRIGGER habit_areas_truncate AFTER TRUNCATE ON public.habit_areas
    FOR EACH STATEMENT EXECUTE FUNCTION habit.count_truncated_rows();
