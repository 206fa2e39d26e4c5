-- Default positions stay unique per user whatever the concurrency (several workers included).
-- 0007's functions read max(…) + 1 in the caller's snapshot, so two transactions creating a
-- habit (or a task on the same day) for one user at once got the same number. Now each takes a
-- transaction-level advisory lock per user and per kind before it reads, and is VOLATILE so its
-- read takes a fresh snapshot after the wait (READ COMMITTED: the other creator has committed
-- by then and its row is seen). The lock is held until commit, so the insert that uses the
-- number is visible before the next creator reads. Writers that give their own sort_order or
-- position (the seed apps through Supabase) are not serialised: their numbers are their choice.
-- CREATE OR REPLACE keeps the grants of 0007 (EXECUTE to authenticated and service_role only).

CREATE OR REPLACE FUNCTION habit.next_habit_sort_order(acting_user uuid) RETURNS integer
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        last_order integer;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('habit.next_habit_sort_order ' || acting_user::text, 0));
        SELECT max(h.sort_order) INTO last_order FROM public.habit_templates h WHERE h.user_id = acting_user;
        RETURN least(coalesce(last_order, 0)::bigint + 1, 2147483647)::integer;
    END
    $fn$;

CREATE OR REPLACE FUNCTION habit.next_task_position(acting_user uuid, day date) RETURNS integer
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        last_position integer;
    BEGIN
        -- One lock per user for every day: creating tasks is rare enough, and one key cannot
        -- miss a task moved between days by a concurrent update.
        PERFORM pg_advisory_xact_lock(hashtextextended('habit.next_task_position ' || acting_user::text, 0));
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
