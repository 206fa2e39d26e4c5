-- What every writer's rows get, whoever writes them (the worker, apps through Supabase, psql):
-- updated_at kept true, and per-user row limits.
--
-- Row limits: a user may hold at most habit.row_limits.max_rows rows in each limited table.
-- Counting rows on every insert would cost up to the limit's index entries per insert
-- (100,000 for tasks), so each (user, table) has a counter (habit.user_row_counts), kept by
-- statement-level triggers over the statement's transition table: one counter update per user
-- and statement, however many rows a statement inserts (bulk imports, `habit dev seed`). The
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

-- Keeps updated_at true whoever writes (worker, psql, batch). An UPDATE that changes
-- nothing (a retried request) leaves updated_at alone.
CREATE OR REPLACE FUNCTION habit.touch_updated_at() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF NEW IS DISTINCT FROM OLD THEN
            NEW.updated_at := now();
        END IF;
        RETURN NEW;
    END
    $fn$;
COMMENT ON FUNCTION habit.touch_updated_at() IS 'BEFORE UPDATE trigger: sets updated_at to the transaction time when the row changes.';

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

-- AFTER INSERT … FOR EACH STATEMENT, with the inserted rows as transition table inserted_rows.
-- SECURITY DEFINER: the counters are written for whoever inserts (authenticated has no
-- privilege on them).
CREATE OR REPLACE FUNCTION habit.count_inserted_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        over record;
    BEGIN
        WITH added AS (
            SELECT i.user_id, count(*)::integer AS n FROM inserted_rows i GROUP BY i.user_id
        ), counted AS (
            INSERT INTO habit.user_row_counts AS c (user_id, table_name, row_count)
            SELECT a.user_id, TG_TABLE_NAME, a.n FROM added a
            ON CONFLICT (user_id, table_name) DO UPDATE SET row_count = c.row_count + excluded.row_count
            RETURNING c.user_id, c.row_count
        )
        SELECT counted.user_id, counted.row_count INTO over
        FROM counted, habit.row_limits l
        WHERE l.table_name = TG_TABLE_NAME AND counted.row_count > l.max_rows
        LIMIT 1;
        IF FOUND THEN
            PERFORM habit.check_row_limit(TG_TABLE_NAME, over.user_id, over.row_count);
        END IF;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.count_inserted_rows() IS 'Statement trigger: adds inserted rows to habit.user_row_counts and enforces habit.row_limits.';

-- AFTER DELETE … FOR EACH STATEMENT, with the deleted rows as deleted_rows (cascades included).
CREATE OR REPLACE FUNCTION habit.count_deleted_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        UPDATE habit.user_row_counts c SET row_count = greatest(c.row_count - d.n, 0)
        FROM (SELECT r.user_id, count(*)::integer AS n FROM deleted_rows r GROUP BY r.user_id) d
        WHERE c.user_id = d.user_id AND c.table_name = TG_TABLE_NAME;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.count_deleted_rows() IS 'Statement trigger: subtracts deleted rows from habit.user_row_counts.';

-- AFTER UPDATE OF user_id … FOR EACH ROW, only when the owner changes (an admin moving a row;
-- row-level security keeps authenticated from doing it). Transition tables cannot be combined
-- with a column list, and a statement trigger on every UPDATE would cost every task change.
CREATE OR REPLACE FUNCTION habit.count_moved_row() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        counted integer;
    BEGIN
        UPDATE habit.user_row_counts c SET row_count = greatest(c.row_count - 1, 0)
        WHERE c.user_id = OLD.user_id AND c.table_name = TG_TABLE_NAME;
        INSERT INTO habit.user_row_counts AS c (user_id, table_name, row_count) VALUES (NEW.user_id, TG_TABLE_NAME, 1)
        ON CONFLICT (user_id, table_name) DO UPDATE SET row_count = c.row_count + 1
        RETURNING c.row_count INTO counted;
        PERFORM habit.check_row_limit(TG_TABLE_NAME, NEW.user_id, counted);
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.count_moved_row() IS 'Row trigger: moves a row''s count to its new owner and enforces habit.row_limits.';

-- TRUNCATE fires no row or DELETE trigger: forget the table's counters.
CREATE OR REPLACE FUNCTION habit.count_truncated_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        DELETE FROM habit.user_row_counts c WHERE c.table_name = TG_TABLE_NAME;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.count_truncated_rows() IS 'Statement trigger: clears habit.user_row_counts of a truncated table.';
