-- 0006: per-user row limits, kept by the database for every writer (the worker, apps writing
-- through Supabase, admins in psql).
--
-- A user may hold at most habit.row_limits.max_rows rows in each limited table. Counting rows
-- on every insert would cost up to the limit's index entries per insert (100,000 for tasks),
-- so each (user, table) has a counter, kept by statement-level triggers over the statement's
-- transition table: one counter update per user and statement, however many rows a statement
-- inserts (bulk imports, `habit dev seed`). The counter row is also what makes the limit exact
-- under concurrency: two transactions inserting for one user take turns on it.
--
-- An insert that takes a user past the limit fails with SQLSTATE HB001 (the worker answers
-- reason limit_exceeded); rows a user already has are never removed, even when an admin lowers
-- a limit.

CREATE TABLE habit.row_limits (
    table_name text PRIMARY KEY
               CONSTRAINT row_limits_table_name_check CHECK (table_name IN ('habit_templates', 'tasks', 'task_lists')),
    max_rows   integer NOT NULL CONSTRAINT row_limits_max_rows_check CHECK (max_rows >= 0)
);
COMMENT ON TABLE habit.row_limits IS 'Most rows one user may hold in each limited table of public; admins change max_rows with UPDATE.';
COMMENT ON COLUMN habit.row_limits.table_name IS 'A table of public (habit_templates, tasks or task_lists).';
COMMENT ON COLUMN habit.row_limits.max_rows IS 'Most rows per user; an insert past it fails with SQLSTATE HB001.';
INSERT INTO habit.row_limits (table_name, max_rows) VALUES
    ('habit_templates', 1000),
    ('tasks', 100000),
    ('task_lists', 1000);

CREATE TABLE habit.user_row_counts (
    user_id    uuid NOT NULL,
    table_name text NOT NULL REFERENCES habit.row_limits (table_name),
    row_count  integer NOT NULL CONSTRAINT user_row_counts_row_count_check CHECK (row_count >= 0),
    PRIMARY KEY (user_id, table_name)
);
COMMENT ON TABLE habit.user_row_counts IS 'Rows each user holds in each limited table, kept by the row-limit triggers (never written by hand).';
COMMENT ON COLUMN habit.user_row_counts.user_id IS 'The user.';
COMMENT ON COLUMN habit.user_row_counts.table_name IS 'The table (habit.row_limits.table_name).';
COMMENT ON COLUMN habit.user_row_counts.row_count IS 'The user''s rows in the table.';

-- Raises HB001 when a counter is past its table's limit.
CREATE FUNCTION habit.check_row_limit(limited_table text, counted_user uuid, counted integer) RETURNS void
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
CREATE FUNCTION habit.count_inserted_rows() RETURNS trigger
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
CREATE FUNCTION habit.count_deleted_rows() RETURNS trigger
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
CREATE FUNCTION habit.count_moved_row() RETURNS trigger
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
CREATE FUNCTION habit.count_truncated_rows() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        DELETE FROM habit.user_row_counts c WHERE c.table_name = TG_TABLE_NAME;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.count_truncated_rows() IS 'Statement trigger: clears habit.user_row_counts of a truncated table.';

REVOKE ALL ON FUNCTION habit.check_row_limit(text, uuid, integer), habit.count_inserted_rows(), habit.count_deleted_rows(),
    habit.count_moved_row(), habit.count_truncated_rows() FROM PUBLIC;

DO $triggers$
DECLARE
    limited text;
BEGIN
    FOREACH limited IN ARRAY ARRAY['habit_templates', 'tasks', 'task_lists'] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON public.%I REFERENCING NEW TABLE AS inserted_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION habit.count_inserted_rows()', limited || '_count_inserted', limited);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON public.%I REFERENCING OLD TABLE AS deleted_rows
                        FOR EACH STATEMENT EXECUTE FUNCTION habit.count_deleted_rows()', limited || '_count_deleted', limited);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE OF user_id ON public.%I FOR EACH ROW
                        WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION habit.count_moved_row()',
                       limited || '_count_moved', limited);
        EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON public.%I
                        FOR EACH STATEMENT EXECUTE FUNCTION habit.count_truncated_rows()', limited || '_count_truncated', limited);
    END LOOP;
END
$triggers$;

-- The rows that exist already (the migrator bypasses row-level security: a superuser, or
-- Supabase's postgres, which has BYPASSRLS).
INSERT INTO habit.user_row_counts (user_id, table_name, row_count)
SELECT user_id, 'habit_templates', count(*) FROM public.habit_templates GROUP BY user_id
UNION ALL
SELECT user_id, 'tasks', count(*) FROM public.tasks GROUP BY user_id
UNION ALL
SELECT user_id, 'task_lists', count(*) FROM public.task_lists GROUP BY user_id;

-- Admins read the limits and counters; changing a limit is an operator's UPDATE as the
-- migration owner (docs/admin.md).
GRANT SELECT ON habit.row_limits TO habit_admin;
GRANT SELECT ON habit.user_row_counts TO habit_admin;
REVOKE ALL ON habit.row_limits, habit.user_row_counts FROM PUBLIC;
