-- Areas (issue 33, item 1; sql/0037): creating one with a client-supplied id that is safe to
-- retry (the rule is written once, above habit.create_habit in functions/habits.sql), its
-- default place (after the user's last) and areas.move.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- Creates an area of acting_user after the user's last (under the user's writes lock, so two
-- creates take turns and get distinct places), or returns the caller's area with new_id when
-- its name equals new_name (a retry); else HB002. Not SECURITY DEFINER: row-level security and
-- the row limit (100 a user) apply to the caller.
CREATE OR REPLACE FUNCTION habit.create_area(acting_user uuid, new_id uuid, new_name text)
    RETURNS public.habit_areas
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        result public.habit_areas;
        last_order integer;
    BEGIN
        IF new_id IS NOT NULL THEN
            SELECT a.* INTO result FROM public.habit_areas a WHERE a.id = new_id AND a.user_id = acting_user;
            IF FOUND THEN
                IF result.name = new_name THEN
                    RETURN result;
                END IF;
                RAISE EXCEPTION 'id_conflict: the id is taken'
                    USING ERRCODE = 'HB002', TABLE = 'habit_areas', SCHEMA = 'public';
            END IF;
        END IF;
        PERFORM habit.lock_user_writes(acting_user);
        SELECT max(a.sort_order) INTO last_order FROM public.habit_areas a WHERE a.user_id = acting_user;
        INSERT INTO public.habit_areas AS a (id, user_id, name, sort_order)
        VALUES (coalesce(new_id, gen_random_uuid()), acting_user, new_name,
                least(coalesce(last_order, 0)::bigint + 1024, 2147483647)::integer)
        ON CONFLICT DO NOTHING
        RETURNING a.* INTO result;
        IF FOUND THEN
            RETURN result;
        END IF;
        -- A create of the same id that committed while this one waited for the lock.
        SELECT a.* INTO result FROM public.habit_areas a WHERE a.id = new_id AND a.user_id = acting_user;
        IF FOUND AND result.name = new_name THEN
            RETURN result;
        END IF;
        RAISE EXCEPTION 'id_conflict: the id is taken'
            USING ERRCODE = 'HB002', TABLE = 'habit_areas', SCHEMA = 'public';
    END
    $fn$;
COMMENT ON FUNCTION habit.create_area(uuid, uuid, text) IS
    'areas.create: an area of acting_user after the last (new_id NULL: a generated id), or the caller''s area with new_id when its name equals new_name; else SQLSTATE HB002 (sql/0037).';

-- areas.move: p_area just before p_before or just after p_after (exactly one given, another
-- area of the user) in the areas' order (sort_order NULLS LAST, created_at, id); the moved
-- row, none when either area is not the user's. As habit.move_habit: one row written, or every
-- area numbered again 1024 apart when there is no room, under the user's writes lock.
CREATE OR REPLACE FUNCTION habit.move_area(p_user uuid, p_area uuid, p_before uuid, p_after uuid)
    RETURNS SETOF public.habit_areas
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
        v_row public.habit_areas;
    BEGIN
        IF (p_before IS NULL) = (p_after IS NULL) OR v_anchor = p_area THEN
            RAISE EXCEPTION 'habit.move_area: give one of p_before and p_after, another area''s id' USING ERRCODE = 'data_exception';
        END IF;
        PERFORM habit.lock_user_writes(p_user);
        PERFORM 1 FROM public.habit_areas a WHERE a.user_id = p_user AND a.id = p_area;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        SELECT array_agg(a.id ORDER BY a.sort_order NULLS LAST, a.created_at, a.id),
               array_agg(a.sort_order ORDER BY a.sort_order NULLS LAST, a.created_at, a.id)
        INTO v_ids, v_orders
        FROM public.habit_areas a WHERE a.user_id = p_user AND a.id <> p_area;
        v_place := array_position(v_ids, v_anchor);
        IF v_place IS NULL THEN
            RETURN;
        END IF;
        IF p_after IS NOT NULL THEN
            v_place := v_place + 1;
        END IF;
        v_new := habit.order_between(v_orders, v_place, c_gap);
        IF v_new IS NULL THEN
            UPDATE public.habit_areas a
            SET sort_order = c_gap * (o.n + (CASE WHEN o.n >= v_place THEN 1 ELSE 0 END))
            FROM unnest(v_ids) WITH ORDINALITY AS o(id, n)
            WHERE a.user_id = p_user AND a.id = o.id
              AND a.sort_order IS DISTINCT FROM c_gap * (o.n + (CASE WHEN o.n >= v_place THEN 1 ELSE 0 END));
            v_new := c_gap * v_place;
        END IF;
        UPDATE public.habit_areas a SET sort_order = v_new
        WHERE a.user_id = p_user AND a.id = p_area
        RETURNING a.* INTO v_row;
        RETURN NEXT v_row;
    END
    $fn$;
COMMENT ON FUNCTION habit.move_area(uuid, uuid, uuid, uuid) IS
    'areas.move: p_area just before p_before or just after p_after in the user''s areas (sort_order; renumbers 1024 apart when there is no room); the moved row, none when either area is not p_user''s (sql/0037).';
