-- 0009: creates with a client-supplied id, safe to retry (issue 15, finding 1).
--
-- A request the worker never answered (killed, crashed, timed out by the gateway) has an
-- unknown outcome: its transaction, COMMIT included, may already be at the server and commit
-- after the worker is gone. A create that carries its own id can be sent again whatever
-- happened: the second attempt finds the row the first one made and returns it.
--
--   habit.create_habit  insert a habit, or return the caller's row with that id
--   habit.create_list   the same for a task list
--   habit.create_task   the same for a task
--
-- The rule, once, for every caller: with new_id NULL a fresh id is generated (as before).
-- With an id that is free, the row is created with it. When the caller already has a row with
-- that id whose fields equal the given ones, that row is returned as it is now (nothing is
-- written; its sort_order/position stay). "Equal": every field the create sets to a fixed
-- value — name, title, notes, list, scheduled date, icon, color; absent means NULL — compares
-- with IS NOT DISTINCT FROM; fields whose default is computed when the row is made
-- (activated_at: now(), sort_order/position: after the last) compare only when given.
-- Otherwise — other fields, or the id is another user's row, which row-level security hides
-- — SQLSTATE HB002 (id_conflict); the two cases raise the same error, so another user's id is
-- never confirmed. A primary key conflict is found whatever row-level security hides: the
-- unique index sees every row.
--
-- Each is one statement for the worker (one round trip). Why PL/pgSQL: when two sessions
-- create the same id at once, the second INSERT waits for the first and then does nothing;
-- the row it conflicted with is committed after the INSERT's snapshot was taken, so a CTE of
-- the same statement cannot see it. Each statement of a VOLATILE PL/pgSQL function takes a new
-- snapshot (READ COMMITTED), so the SELECT after the INSERT sees it.
--
-- ON CONFLICT DO NOTHING without a target: every unique index is an arbiter, so the second
-- unique index on the id ((id, user_id), for the composite foreign keys) cannot raise 23505
-- in a race. The tables have no unique index that does not contain id.
--
-- Direct INSERTs (the seed apps through Supabase, which also choose their ids) are unchanged.
-- None is SECURITY DEFINER: row-level security and the row-limit triggers apply to the caller.

CREATE FUNCTION habit.create_habit(acting_user uuid, new_id uuid, new_name text, new_icon text, new_color text,
                                   new_activated_at timestamptz, new_sort_order integer)
    RETURNS public.habit_templates
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        result public.habit_templates;
    BEGIN
        INSERT INTO public.habit_templates AS h (id, user_id, name, icon, color, activated_at, sort_order)
        VALUES (coalesce(new_id, gen_random_uuid()), acting_user, new_name, new_icon, new_color,
                coalesce(new_activated_at, now()),
                coalesce(new_sort_order, habit.next_habit_sort_order(acting_user)))
        ON CONFLICT DO NOTHING
        RETURNING h.* INTO result;
        IF FOUND THEN
            RETURN result;
        END IF;
        SELECT h.* INTO result FROM public.habit_templates h WHERE h.id = new_id AND h.user_id = acting_user;
        IF FOUND AND result.name = new_name
               AND result.icon IS NOT DISTINCT FROM new_icon
               AND result.color IS NOT DISTINCT FROM new_color
               AND (new_activated_at IS NULL OR result.activated_at = new_activated_at)
               AND (new_sort_order IS NULL OR result.sort_order IS NOT DISTINCT FROM new_sort_order) THEN
            RETURN result;
        END IF;
        RAISE EXCEPTION 'id_conflict: the id is taken'
            USING ERRCODE = 'HB002', TABLE = 'habit_templates', SCHEMA = 'public';
    END
    $fn$;
COMMENT ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer) IS
    'Creates a habit of acting_user (new_id NULL: a generated id), or returns the caller''s habit with new_id when its fields equal the given ones; else SQLSTATE HB002.';

CREATE FUNCTION habit.create_list(acting_user uuid, new_id uuid, new_name text)
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

CREATE FUNCTION habit.create_task(acting_user uuid, new_id uuid, new_title text, new_notes text, new_list_id uuid,
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

REVOKE EXECUTE ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer),
    habit.create_list(uuid, uuid, text),
    habit.create_task(uuid, uuid, text, text, uuid, date, integer)
    FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer),
    habit.create_list(uuid, uuid, text),
    habit.create_task(uuid, uuid, text, text, uuid, date, integer)
    TO authenticated, service_role;
