-- Creating habits: the default position, and creates with a client-supplied id that are
-- safe to retry (issue 15). The rules of the days a habit is on, due, done or skipped:
-- functions/history.sql.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- The sort_order of a habit created without one: after the user's last (1 for the first),
-- at most the largest integer. PL/pgSQL keeps its plan per session (a SQL function reading a
-- table is never inlined and would be planned on every call).
-- Unique per user whatever the concurrency (several workers included): the user's writer lock
-- (habit.lock_user_writes, functions/sync.sql: the user's clock row, which only the user and
-- the roles acting for users can lock; an advisory lock on a guessable key until 0023), taken
-- before the read, and VOLATILE so that the read takes a fresh
-- snapshot after the wait (READ COMMITTED: the other creator has committed by then and its
-- row is seen). The lock is held until commit, so the insert that uses the number is visible
-- before the next creator reads. Writers that give their own sort_order (the seed apps
-- through Supabase) are not serialised: their numbers are their choice.
CREATE OR REPLACE FUNCTION habit.next_habit_sort_order(acting_user uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        last_order integer;
    BEGIN
        PERFORM habit.lock_user_writes(acting_user);
        SELECT max(h.sort_order) INTO last_order FROM public.habit_templates h WHERE h.user_id = acting_user;
        RETURN least(coalesce(last_order, 0)::bigint + 1, 2147483647)::integer;
    END
    $fn$;
COMMENT ON FUNCTION habit.next_habit_sort_order(uuid) IS
    'sort_order for a new habit of acting_user: after the last one (1 for the first), at most 2147483647.';

-- habits.archive / habits.unarchive (issue 33, item 2; sql/0035): archived_at set to now() if
-- it is NULL (archiving again keeps the first time), or cleared; returns the row, none when it
-- is not p_user's. A function, delegated to the user's node on Citus, which refuses now() in an
-- UPDATE beside a column reference (coalesce(archived_at, now())).
CREATE OR REPLACE FUNCTION habit.set_habit_archived(p_user uuid, p_template uuid, p_archived boolean)
    RETURNS SETOF public.habit_templates
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        v_row public.habit_templates;
    BEGIN
        IF p_archived THEN
            UPDATE public.habit_templates t SET archived_at = now()
            WHERE t.user_id = p_user AND t.id = p_template AND t.archived_at IS NULL;
        ELSE
            UPDATE public.habit_templates t SET archived_at = NULL
            WHERE t.user_id = p_user AND t.id = p_template AND t.archived_at IS NOT NULL;
        END IF;
        SELECT t.* INTO v_row FROM public.habit_templates t WHERE t.user_id = p_user AND t.id = p_template;
        IF FOUND THEN
            RETURN NEXT v_row;
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.set_habit_archived(uuid, uuid, boolean) IS
    'habits.archive (p_archived: archived_at := now() unless set) and habits.unarchive (NULL); the row, none when not p_user''s (issue 33, sql/0035).';

-- The sort_order of an item put at index p_place (from 1) of an ordered list whose other
-- items have p_orders (in the list's order): halfway between its neighbours, or p_gap past
-- the neighbour it has at an end; NULL when there is no room (neighbours one apart, a NULL
-- neighbour, an integer's end), and the caller numbers the list again, p_gap apart. For
-- habits.move and areas.move.
CREATE OR REPLACE FUNCTION habit.order_between(p_orders integer[], p_place integer, p_gap integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        n integer := coalesce(cardinality(p_orders), 0);
        v_prev bigint := CASE WHEN p_place > 1 THEN p_orders[p_place - 1] END;
        v_next bigint := CASE WHEN p_place <= n THEN p_orders[p_place] END;
    BEGIN
        IF (p_place > 1 AND v_prev IS NULL) OR (p_place <= n AND v_next IS NULL) OR v_next - v_prev < 2
           OR (p_place = 1 AND v_next - p_gap < -2147483648)
           OR (p_place > n AND v_prev + p_gap > 2147483647) THEN
            RETURN NULL;
        END IF;
        RETURN CASE WHEN v_prev IS NULL AND v_next IS NULL THEN p_gap
                    WHEN v_prev IS NULL THEN v_next - p_gap
                    WHEN v_next IS NULL THEN v_prev + p_gap
                    ELSE v_prev + (v_next - v_prev) / 2 END;
    END
    $fn$;
COMMENT ON FUNCTION habit.order_between(integer[], integer, integer) IS
    'sort_order for an item put at index p_place of a list whose other items have p_orders: between its neighbours, or p_gap past an end; NULL when there is no room (renumber).';

-- habits.move (issue 33, item 2): puts p_template just before p_before or just after p_after
-- (exactly one given, another habit of the user) in the daily list's order (sort_order NULLS
-- LAST, created_at, id), and returns the moved row; no row when either habit is not the
-- user's. The other habits keep their places. Usually one row is written: the habit gets a
-- sort_order between its new neighbours'. When there is no room (neighbours one apart, a NULL
-- sort_order, the integer's ends), every habit of the user is numbered again, 1024 apart in
-- the list's order, leaving the room. The user's writes lock (habit.lock_user_writes) makes
-- concurrent moves and creates of one user take turns, so each sees the other's result.
CREATE OR REPLACE FUNCTION habit.move_habit(p_user uuid, p_template uuid, p_before uuid, p_after uuid)
    RETURNS SETOF public.habit_templates
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        c_gap constant integer := 1024;
        v_anchor uuid := coalesce(p_before, p_after);
        v_ids uuid[];
        v_orders integer[];
        v_place integer;
        v_new integer;
        v_row public.habit_templates;
    BEGIN
        IF (p_before IS NULL) = (p_after IS NULL) OR v_anchor = p_template THEN
            RAISE EXCEPTION 'habit.move_habit: give one of p_before and p_after, another habit''s id' USING ERRCODE = 'data_exception';
        END IF;
        PERFORM habit.lock_user_writes(p_user);
        PERFORM 1 FROM public.habit_templates t WHERE t.user_id = p_user AND t.id = p_template;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        SELECT array_agg(t.id ORDER BY t.sort_order NULLS LAST, t.created_at, t.id),
               array_agg(t.sort_order ORDER BY t.sort_order NULLS LAST, t.created_at, t.id)
        INTO v_ids, v_orders
        FROM public.habit_templates t WHERE t.user_id = p_user AND t.id <> p_template;
        -- v_place: the index, in the list without the habit, of the habit it goes before.
        v_place := array_position(v_ids, v_anchor);
        IF v_place IS NULL THEN
            RETURN;
        END IF;
        IF p_after IS NOT NULL THEN
            v_place := v_place + 1;
        END IF;
        v_new := habit.order_between(v_orders, v_place, c_gap);
        IF v_new IS NULL THEN
            UPDATE public.habit_templates t
            SET sort_order = c_gap * (o.n + (CASE WHEN o.n >= v_place THEN 1 ELSE 0 END))
            FROM unnest(v_ids) WITH ORDINALITY AS o(id, n)
            WHERE t.user_id = p_user AND t.id = o.id
              AND t.sort_order IS DISTINCT FROM c_gap * (o.n + (CASE WHEN o.n >= v_place THEN 1 ELSE 0 END));
            v_new := c_gap * v_place;
        END IF;
        UPDATE public.habit_templates t SET sort_order = v_new
        WHERE t.user_id = p_user AND t.id = p_template
        RETURNING t.* INTO v_row;
        RETURN NEXT v_row;
    END
    $fn$;
COMMENT ON FUNCTION habit.move_habit(uuid, uuid, uuid, uuid) IS
    'habits.move: p_template just before p_before or just after p_after in the daily list (sort_order; renumbers 1024 apart when there is no room); the moved row, none when either habit is not p_user''s (issue 33).';

-- Creates with a client-supplied id (habit.create_habit here, habit.create_list and
-- habit.create_task in functions/tasks.sql). A request the worker never answered (killed,
-- crashed, timed out by the gateway) has an unknown outcome: its transaction, COMMIT
-- included, may already be at the server and commit after the worker is gone. A create that
-- carries its own id can be sent again whatever happened: the second attempt finds the row
-- the first one made and returns it.
--
-- The rule, once, for every caller: with new_id NULL a fresh id is generated. With an id that
-- is free, the row is created with it. When the caller already has a row with that id whose
-- fields equal the given ones, that row is returned as it is now (nothing is written; its
-- sort_order/position stay). "Equal": every field the create sets to a fixed value — name,
-- title, notes, list, scheduled date, icon, color, schedule (as jsonb: key order does not
-- matter; the order of weekdays does, and the worker sends them sorted); absent means NULL —
-- compares with IS NOT DISTINCT FROM; fields whose default is computed when the row is made
-- (activated_at: now(), sort_order/position: after the last) compare only when given.
-- Otherwise (the caller's row with that id has other fields) SQLSTATE HB002 (id_conflict).
-- Ids are unique per user (primary key (id, user_id), sql/0027): another user's row with the
-- same id is another row, so the create succeeds and says nothing of it.
--
-- Each is one statement for the worker (one round trip). Why PL/pgSQL: when two sessions
-- create the same id at once, the second INSERT waits for the first and then does nothing;
-- the row it conflicted with is committed after the INSERT's snapshot was taken, so a CTE of
-- the same statement cannot see it. Each statement of a VOLATILE PL/pgSQL function takes a new
-- snapshot (READ COMMITTED), so the SELECT after the INSERT sees it.
--
-- ON CONFLICT DO NOTHING without a target: every unique index is an arbiter, so none can
-- raise 23505 in a race. The tables have no unique index that does not contain id.
--
-- Direct INSERTs (the seed apps through Supabase, which also choose their ids) are unchanged.
-- None is SECURITY DEFINER: row-level security and the row-limit triggers apply to the caller.
--
-- The schedule (NULL: daily) is among the fields that must be equal. The INSERT's AFTER
-- INSERT trigger (habit.open_first_period) opens the first period with NEW.schedule. A bad
-- schedule is refused by habit_templates_schedule_check (23514), as for any writer.
-- new_measure (sql/0029): the habit's kind and target as one JSON object, its members optional
-- ({"kind", "unit", "target" (a decimal string), "target_type", "target_period"}); NULL or a
-- missing member: the column's default (a boolean habit, target 1, at least, per day). Bad values
-- are refused by the table's CHECK constraints (23514), as for any writer; a target that is not a
-- number is 22P02.
CREATE OR REPLACE FUNCTION habit.create_habit(acting_user uuid, new_id uuid, new_name text, new_icon text, new_color text,
                                   new_activated_at timestamptz, new_sort_order integer, new_schedule jsonb,
                                   new_measure jsonb, new_area_id uuid)
    RETURNS public.habit_templates
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        result public.habit_templates;
        wanted jsonb := coalesce(new_schedule, '{"type":"daily"}');
        m jsonb := coalesce(new_measure, '{}');
        wanted_kind text := coalesce(m ->> 'kind', 'boolean');
        wanted_target numeric := coalesce((m ->> 'target')::numeric, 1);
        wanted_type text := coalesce(m ->> 'target_type', 'at_least');
        wanted_period text := coalesce(m ->> 'target_period', 'day');
    BEGIN
        INSERT INTO public.habit_templates AS h (id, user_id, name, icon, color, activated_at, sort_order, schedule,
                                                 kind, unit, target, target_type, target_period, area_id)
        VALUES (coalesce(new_id, gen_random_uuid()), acting_user, new_name, new_icon, new_color,
                coalesce(new_activated_at, now()),
                coalesce(new_sort_order, habit.next_habit_sort_order(acting_user)), wanted,
                wanted_kind, m ->> 'unit', wanted_target, wanted_type, wanted_period, new_area_id)
        ON CONFLICT DO NOTHING
        RETURNING h.* INTO result;
        IF FOUND THEN
            RETURN result;
        END IF;
        SELECT h.* INTO result FROM public.habit_templates h WHERE h.id = new_id AND h.user_id = acting_user;
        IF FOUND AND result.name = new_name
               AND result.icon IS NOT DISTINCT FROM new_icon
               AND result.color IS NOT DISTINCT FROM new_color
               AND result.schedule = wanted
               AND result.area_id IS NOT DISTINCT FROM new_area_id
               AND (result.kind, result.unit, result.target, result.target_type, result.target_period)
                   IS NOT DISTINCT FROM (wanted_kind, m ->> 'unit', wanted_target, wanted_type, wanted_period)
               AND (new_activated_at IS NULL OR result.activated_at = new_activated_at)
               AND (new_sort_order IS NULL OR result.sort_order IS NOT DISTINCT FROM new_sort_order) THEN
            RETURN result;
        END IF;
        RAISE EXCEPTION 'id_conflict: the id is taken'
            USING ERRCODE = 'HB002', TABLE = 'habit_templates', SCHEMA = 'public';
    END
    $fn$;
COMMENT ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb, jsonb, uuid) IS
    'Creates a habit of acting_user with a schedule (NULL: daily), a kind and target (new_measure; NULL: boolean, 1 a day) and an area (new_area_id, NULL: none), or returns the caller''s habit with new_id when its fields, schedule, target and area included, equal the given ones; else SQLSTATE HB002 (sql/0010, sql/0029, sql/0037).';

-- Without an area: by the one body above.
CREATE OR REPLACE FUNCTION habit.create_habit(acting_user uuid, new_id uuid, new_name text, new_icon text, new_color text,
                                   new_activated_at timestamptz, new_sort_order integer, new_schedule jsonb,
                                   new_measure jsonb)
    RETURNS public.habit_templates
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT habit.create_habit(acting_user, new_id, new_name, new_icon, new_color, new_activated_at, new_sort_order, new_schedule, new_measure, NULL)
    $fn$;
COMMENT ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb, jsonb) IS
    'habit.create_habit without an area (sql/0029; since sql/0037 a call of the area overload).';

-- Without a kind and target: a boolean habit, by the one body above.
CREATE OR REPLACE FUNCTION habit.create_habit(acting_user uuid, new_id uuid, new_name text, new_icon text, new_color text,
                                   new_activated_at timestamptz, new_sort_order integer, new_schedule jsonb)
    RETURNS public.habit_templates
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT habit.create_habit(acting_user, new_id, new_name, new_icon, new_color, new_activated_at, new_sort_order, new_schedule, NULL)
    $fn$;
COMMENT ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb) IS
    'Creates a habit of acting_user with a schedule (NULL: daily; new_id NULL: a generated id), or returns the caller''s habit with new_id when its fields, schedule included, equal the given ones; else SQLSTATE HB002 (sql/0010). A call of the overload with new_measure NULL (sql/0029).';

-- For callers that know no schedules: a daily habit, by the one body above (a retry of a
-- habit whose schedule was changed since is HB002, like one whose name was).
CREATE OR REPLACE FUNCTION habit.create_habit(acting_user uuid, new_id uuid, new_name text, new_icon text, new_color text,
                                              new_activated_at timestamptz, new_sort_order integer)
    RETURNS public.habit_templates
    LANGUAGE sql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT habit.create_habit(acting_user, new_id, new_name, new_icon, new_color, new_activated_at, new_sort_order, NULL)
    $fn$;
COMMENT ON FUNCTION habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer) IS
    'habit.create_habit with a daily schedule (sql/0009; since sql/0010 a call of the schedule overload).';
