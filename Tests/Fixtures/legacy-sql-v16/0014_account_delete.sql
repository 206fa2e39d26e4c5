-- 0014: account deletion (issue 19). habit.delete_account is the one place that knows every
-- table a user owns; account.delete (the worker) and `habit account delete` (admins) call it.
--
-- What it deletes, in one transaction, with the number of rows per table:
--   public.profiles, public.habit_templates and what cascades from them (habit_periods,
--   habit_completions, habit_skips, habit_streak_slots, habit_streak_state), public.task_lists,
--   public.tasks, public.weekly_completion_counts (stored weekly counts), habit.user_row_counts
--   (row-limit counters) and habit.sync_mutations (sync.push's replay records: their outcomes
--   are content).
-- What it keeps (docs/schema.md, "What account deletion keeps"):
--   habit.sync_clocks      the user's clock row: change numbers stay monotonic, so a device's
--                          cursor stays valid and its next sync.pull returns the deletions;
--                          a re-signup of the same user id continues the same clock
--   habit.sync_tombstones  content-free keys (kind + id, or habit id + date) of the deleted
--                          rows, written by the tables' own triggers; habit.prune_sync drops
--                          them after the retention like any other tombstone
--   auth.users             the identity is the auth provider's (Supabase: auth.admin.deleteUser);
--                          this function never touches it (plain PostgreSQL has no such table)
--
-- Who may call it: the user (role authenticated with request.jwt claims whose sub is p_user,
-- as the worker runs every request), or a member of habit_admin or service_role (Supabase's
-- server-side role, which bypasses row-level security anyway). SECURITY DEFINER because the
-- derived tables (periods, streak ledger, weekly counts, counters, replay records) are not
-- writable by authenticated; the check therefore looks at the caller's role as the role
-- setting (SET ROLE / set_config('role', …)) names it, or the login role when none is set:
-- inside a SECURITY DEFINER function current_user is the owner, but the setting is the caller's.
-- A refusal raises 42501 (insufficient_privilege).
--
-- Cost: the user's change clock row is locked first (FOR UPDATE), so a concurrent write of the
-- same user (every synced write takes that lock) waits for the deletion, and the counts taken
-- before the cascading DELETE are the rows it removes. Habits are deleted before their
-- completions, skips and periods (by the cascade), so the streak triggers find the habits gone
-- and rebuild nothing.

CREATE FUNCTION habit.delete_account(p_user uuid)
    RETURNS TABLE (table_name text, deleted bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        acting_role text := CASE WHEN current_setting('role') = 'none' THEN session_user::text ELSE current_setting('role') END;
        n_profiles bigint; n_templates bigint; n_periods bigint; n_completions bigint; n_skips bigint;
        n_slots bigint; n_state bigint; n_lists bigint; n_tasks bigint; n_weekly bigint;
        n_counters bigint; n_mutations bigint;
    BEGIN
        IF p_user IS NULL THEN
            RAISE EXCEPTION 'p_user must not be null' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF NOT (pg_has_role(acting_role, 'habit_admin', 'MEMBER') OR pg_has_role(acting_role, 'service_role', 'MEMBER')
                OR (acting_role = 'authenticated' AND auth.uid() IS NOT DISTINCT FROM p_user)) THEN
            RAISE EXCEPTION 'only the user % (as authenticated with that sub) or habit_admin may delete this account; % may not', p_user, acting_role
                USING ERRCODE = 'insufficient_privilege';
        END IF;

        PERFORM 1 FROM habit.sync_clocks c WHERE c.user_id = p_user FOR UPDATE;

        SELECT count(*) INTO n_periods FROM public.habit_periods WHERE user_id = p_user;
        SELECT count(*) INTO n_completions FROM public.habit_completions WHERE user_id = p_user;
        SELECT count(*) INTO n_skips FROM public.habit_skips WHERE user_id = p_user;
        SELECT count(*) INTO n_slots FROM public.habit_streak_slots WHERE user_id = p_user;
        SELECT count(*) INTO n_state FROM public.habit_streak_state WHERE user_id = p_user;
        DELETE FROM public.habit_templates WHERE user_id = p_user;
        GET DIAGNOSTICS n_templates = ROW_COUNT;
        DELETE FROM public.tasks WHERE user_id = p_user;
        GET DIAGNOSTICS n_tasks = ROW_COUNT;
        DELETE FROM public.task_lists WHERE user_id = p_user;
        GET DIAGNOSTICS n_lists = ROW_COUNT;
        -- After the habits: the profile's delete trigger rebuilds the streaks of the user's
        -- habits when the zone was not UTC, and there are none left.
        DELETE FROM public.profiles WHERE user_id = p_user;
        GET DIAGNOSTICS n_profiles = ROW_COUNT;
        DELETE FROM public.weekly_completion_counts WHERE user_id = p_user;
        GET DIAGNOSTICS n_weekly = ROW_COUNT;
        -- After the tables' own deletes: their statement triggers have set these to 0 by now.
        DELETE FROM habit.user_row_counts WHERE user_id = p_user;
        GET DIAGNOSTICS n_counters = ROW_COUNT;
        DELETE FROM habit.sync_mutations WHERE user_id = p_user;
        GET DIAGNOSTICS n_mutations = ROW_COUNT;

        RETURN QUERY VALUES
            ('public.profiles', n_profiles),
            ('public.habit_templates', n_templates),
            ('public.habit_periods', n_periods),
            ('public.habit_completions', n_completions),
            ('public.habit_skips', n_skips),
            ('public.habit_streak_slots', n_slots),
            ('public.habit_streak_state', n_state),
            ('public.task_lists', n_lists),
            ('public.tasks', n_tasks),
            ('public.weekly_completion_counts', n_weekly),
            ('habit.user_row_counts', n_counters),
            ('habit.sync_mutations', n_mutations);
    END
    $fn$;
COMMENT ON FUNCTION habit.delete_account(uuid) IS
    'Deletes every row p_user owns (one row per table with the count), leaving the sync clock and content-free tombstones; for the user (authenticated, sub = p_user) or habit_admin/service_role. sql/0014.';

REVOKE ALL ON FUNCTION habit.delete_account(uuid) FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.delete_account(uuid) TO authenticated, habit_admin, service_role;
