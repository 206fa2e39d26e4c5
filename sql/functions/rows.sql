-- Per-user row limits, for every writer (the worker, apps through Supabase, psql).
--
-- Row limits: a user may hold at most habit.row_limits.max_rows rows in each limited table.
-- Counting rows on every insert would cost up to the limit's index entries per insert
-- (100,000 for tasks), so each (user, table) has a counter (habit.user_row_counts), kept by
-- the tables' row-level AFTER triggers through habit.count_row; a bulk insert's rows past the
-- 8th in one transaction are counted once, at commit (habit.user_row_counts_recount). The
-- counter row is also what makes the limit exact under concurrency: two transactions
-- inserting for one user take turns on it. An insert that takes a user past the limit fails
-- with SQLSTATE HB001 (the worker answers limit_exceeded); rows a user already has are never
-- removed, even when an admin lowers a limit. The triggers: sql/triggers/habit_templates.sql,
-- tasks.sql, task_lists.sql.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- Raises HB001 when a counter is past its table's limit.
CREATE OR REPLACE FUNCTION habit.check_row_limit(limited_table text, counted_user uuid, counted integer) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        allowed integer;
    BEGIN
        SELECT l.max_rows INTO allowed FROM habit.row_limits l WHERE l.table_name = limited_table;
        IF counted > allowed THEN
            RAISE EXCEPTION 'user % would hold % rows in %; the limit is %', counted_user, counted, limited_table, allowed
                USING ERRCODE = 'HB001', TABLE = limited_table, SCHEMA = 'public',
                      HINT = 'An admin can raise the limit: UPDATE habit.row_limits SET max_rows = … WHERE table_name = …';
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.check_row_limit(text, uuid, integer) IS 'Raises SQLSTATE HB001 when counted is past the limit of limited_table.';

-- 3. Row limits -------------------------------------------------------------------------------------
-- Counts one inserted (p_delta 1) or deleted (-1) row of p_table for p_user and enforces the
-- limit on inserts (HB001). After 8 counts of one counter in one transaction (a bulk insert)
-- the counter is marked pending and counted once at commit (user_row_counts_recount), which
-- then enforces the limit: each update of a row in one transaction leaves a version the next
-- one has to pass.
CREATE OR REPLACE FUNCTION habit.count_row(p_user uuid, p_table text, p_delta integer) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        counter habit.user_row_counts;
        -- A value, not a call in the UPDATE: Citus refuses non-IMMUTABLE functions in its CASE.
        me xid8 := pg_current_xact_id();
    BEGIN
        SELECT * INTO counter FROM habit.user_row_counts c WHERE c.user_id = p_user AND c.table_name = p_table FOR UPDATE;
        IF NOT FOUND THEN
            IF p_delta > 0 THEN
                INSERT INTO habit.user_row_counts AS c (user_id, table_name, row_count, xact, xact_writes)
                VALUES (p_user, p_table, p_delta, me, 1)
                ON CONFLICT (user_id, table_name) DO UPDATE SET row_count = c.row_count + excluded.row_count
                RETURNING * INTO counter;
                PERFORM habit.check_row_limit(p_table, p_user, counter.row_count);
            END IF;
        ELSIF counter.pending THEN
            RETURN;
        ELSIF counter.xact = me AND counter.xact_writes >= 8 THEN
            UPDATE habit.user_row_counts c SET pending = true WHERE c.user_id = p_user AND c.table_name = p_table;
        ELSE
            UPDATE habit.user_row_counts c
            SET row_count = greatest(c.row_count + p_delta, 0), xact = me,
                xact_writes = CASE WHEN c.xact = me THEN c.xact_writes + 1 ELSE 1 END
            WHERE c.user_id = p_user AND c.table_name = p_table
            RETURNING * INTO counter;
            IF p_delta > 0 THEN
                PERFORM habit.check_row_limit(p_table, p_user, counter.row_count);
            END IF;
        END IF;
    END
    $fn$;

-- The deferred count of a pending counter (DEFERRABLE INITIALLY DEFERRED: at commit).
CREATE OR REPLACE FUNCTION habit.user_row_counts_recount() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        counted integer;
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM habit.user_row_counts c
                       WHERE c.user_id = NEW.user_id AND c.table_name = NEW.table_name AND c.pending) THEN
            RETURN NULL;
        END IF;
        -- table_name is one of three (row_limits_table_name_check), quoted as an identifier.
        EXECUTE format('SELECT count(*) FROM public.%I r WHERE r.user_id = $1', NEW.table_name) INTO counted USING NEW.user_id;
        UPDATE habit.user_row_counts c SET row_count = counted, pending = false, xact_writes = 0
        WHERE c.user_id = NEW.user_id AND c.table_name = NEW.table_name;
        PERFORM habit.check_row_limit(NEW.table_name, NEW.user_id, counted);
        RETURN NULL;
    END
    $fn$;

-- TRUNCATE fires no row trigger: forget the table's counters (the one statement trigger).
CREATE OR REPLACE FUNCTION habit.count_truncated_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        DELETE FROM habit.user_row_counts c WHERE c.table_name = TG_TABLE_NAME;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.count_truncated_rows() IS 'TRUNCATE trigger (statement-level): clears habit.user_row_counts of a truncated table.';
