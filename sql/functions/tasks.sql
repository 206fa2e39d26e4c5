-- Creating task lists and tasks: the default position, and creates with a client-supplied
-- id that are safe to retry (the rule is written once, above habit.create_habit in
-- functions/habits.sql).
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- The position of a task placed on day (NULL = the inbox) without one: after the last task of
-- that date (1 for the first), at most the largest integer. Two statements rather than
-- `scheduled_date IS NOT DISTINCT FROM day`, so each reads tasks_user_date_position_idx.
-- Unique per user and date whatever the concurrency, as habit.next_habit_sort_order.
CREATE OR REPLACE FUNCTION habit.next_task_position(acting_user uuid, day date) RETURNS integer
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        last_position integer;
    BEGIN
        -- One lock per user for every day (habit.lock_user_writes): creating tasks is rare
        -- enough, and one lock cannot miss a task moved between days by a concurrent update.
        PERFORM habit.lock_user_writes(acting_user);
        IF day IS NULL THEN
            SELECT max(t.position) INTO last_position FROM public.tasks t
            WHERE t.user_id = acting_user AND t.scheduled_date IS NULL;
        ELSE
            SELECT max(t.position) INTO last_position FROM public.tasks t
            WHERE t.user_id = acting_user AND t.scheduled_date = day;
        END IF;
        RETURN least(coalesce(last_position, 0)::bigint + 1, 2147483647)::integer;
    END
    $fn$;
COMMENT ON FUNCTION habit.next_task_position(uuid, date) IS
    'position for a task of acting_user placed on day (NULL = inbox): after that date''s last task (1 for the first), at most 2147483647.';

CREATE OR REPLACE FUNCTION habit.create_list(acting_user uuid, new_id uuid, new_name text)
    RETURNS public.task_lists
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        result public.task_lists;
    BEGIN
        INSERT INTO public.task_lists AS l (id, user_id, name)
        VALUES (coalesce(new_id, gen_random_uuid()), acting_user, new_name)
        ON CONFLICT DO NOTHING
        RETURNING l.* INTO result;
        IF FOUND THEN
            RETURN result;
        END IF;
        SELECT l.* INTO result FROM public.task_lists l WHERE l.id = new_id AND l.user_id = acting_user;
        IF FOUND AND result.name = new_name THEN
            RETURN result;
        END IF;
        RAISE EXCEPTION 'id_conflict: the id is taken'
            USING ERRCODE = 'HB002', TABLE = 'task_lists', SCHEMA = 'public';
    END
    $fn$;
COMMENT ON FUNCTION habit.create_list(uuid, uuid, text) IS
    'Creates a task list of acting_user (new_id NULL: a generated id), or returns the caller''s list with new_id when its name equals new_name; else SQLSTATE HB002.';

CREATE OR REPLACE FUNCTION habit.create_task(acting_user uuid, new_id uuid, new_title text, new_notes text, new_list_id uuid,
                                  new_scheduled_date date, new_position integer)
    RETURNS public.tasks
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        result public.tasks;
    BEGIN
        INSERT INTO public.tasks AS t (id, user_id, title, notes, list_id, scheduled_date, position)
        VALUES (coalesce(new_id, gen_random_uuid()), acting_user, new_title, new_notes, new_list_id, new_scheduled_date,
                coalesce(new_position, habit.next_task_position(acting_user, new_scheduled_date)))
        ON CONFLICT DO NOTHING
        RETURNING t.* INTO result;
        IF FOUND THEN
            RETURN result;
        END IF;
        SELECT t.* INTO result FROM public.tasks t WHERE t.id = new_id AND t.user_id = acting_user;
        IF FOUND AND result.title = new_title
               AND result.notes IS NOT DISTINCT FROM new_notes
               AND result.list_id IS NOT DISTINCT FROM new_list_id
               AND result.scheduled_date IS NOT DISTINCT FROM new_scheduled_date
               AND (new_position IS NULL OR result.position = new_position) THEN
            RETURN result;
        END IF;
        RAISE EXCEPTION 'id_conflict: the id is taken'
            USING ERRCODE = 'HB002', TABLE = 'tasks', SCHEMA = 'public';
    END
    $fn$;
COMMENT ON FUNCTION habit.create_task(uuid, uuid, text, text, uuid, date, integer) IS
    'Creates a not-started task of acting_user (new_id NULL: a generated id), or returns the caller''s task with new_id when its fields equal the given ones; else SQLSTATE HB002.';
