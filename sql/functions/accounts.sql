-- One user's whole account: import (habit.import_account) and deletion
-- (habit.delete_account), each the one place that knows every table a user owns.
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- Account import (issue 19) ----------------------------------------------------------------
-- The one place the writes and rules of `account.import` and `habit account import` live:
-- habit.import_account takes a "habit-account" version 1 document (docs/protocol.md
-- "Accounts", docs/account-format.schema.json) whose shape the caller has already checked
-- (types, formats, each value's rules, which the tables' CHECKs also keep), checks the rest —
-- the caps, duplicates, references inside the document, period order (issue 31, finding 7:
-- a direct caller meets them too) — and what needs the database, and writes it in the caller's
-- transaction.
--
-- Refusals: SQLSTATE HB010 with COLUMN = the JSON path of the offending member (e.g.
-- document.completions[12].date), DETAIL = the reason code and, for future_date, HINT = the
-- user's today (YYYY-MM-DD):
--   too_many          an array over its cap (10,000 habits, 500,000 completions or skips,
--                     10,000 lists, 200,000 tasks, 10,000 periods of one habit)
--   duplicate_value   a second habit, list or task id, or a second (habit, date) of a kind
--   unknown_reference a completion's, skip's, check-in's, note's or reminder's template_id, a
--                     task's list_id, or a habit's area_id, not in the document
-- Reminders (sql/0036; an optional member, up to 24,000, at most 24 a habit: too_many): a
-- second reminder id, or two of one habit with the same time and days, is duplicate_value.
-- Areas (sql/0037; an optional member, up to 100: too_many; a habit's area_id optional, absent
-- or null for none): a second area id is duplicate_value, a name with a bidirectional control
-- character invalid_characters; matched by id like lists, written before the habits that name
-- them, and in replace the user's others deleted after the habits have let go of them.
-- Check-ins and notes (sql/0029; optional members, up to 500,000 check-ins and 100,000 notes):
-- a second check-in id or a second note of one (habit, date) is duplicate_value; a check-in's
-- day meets the rules of a completion's (out_of_range, future_date, habit_not_active, and
-- done_and_skipped with a skip of the document); values, times and notes their tables' CHECKs.
--   invalid_order     periods not oldest first, overlapping, ending before they start, or open
--                     before the last
--   out_of_range      a period starting before 1970-01-01T00:00:00Z, a completion or skip before
--                     1970-01-01 (habit.earliest_day(), sql/migrations/0021; backfill or not)
--   future_date       a completion after the user's today, a skip more than 366 days after it,
--                     a period ending after now()
--   habit_not_active  a completion or skip on a day none of the document's periods of the habit
--                     make it on (habit.period_on_days, functions/history.sql); in merge, also
--                     a kept row of the user's (the document lacks it) that is on now and
--                     would not be: COLUMN the habit's periods, TABLE its table, HINT its date
--   done_and_skipped  the same habit and day both completed and skipped in the document
--   invalid_timezone  a profile zone PostgreSQL does not know
--   invalid_characters  a name, title or notes with a bidirectional control character
--                     (habit.has_no_bidi_controls, sql/0019)
-- Row limits (HB001, functions/rows.sql) and the day rules (HB003-HB006, functions/history.sql)
-- are still enforced by the tables' triggers as for every writer; an error anywhere rolls back
-- everything, so a refused document writes nothing.
--
-- Backfill: when the transaction has habit.backfill = 'on' (SET LOCAL), the date and activity
-- checks (future_date of completions and skips, habit_not_active) are lifted, as for other writers,
-- but only when the session's login role is habit_admin or a member (a superuser is); anyone
-- else gets HB006. The login role, not current_user: this function runs as its owner, and the
-- worker's login role (habit_worker) never is an admin.
--
-- SECURITY DEFINER because periods are written only by privileged code: the
-- function acts for auth.uid() only (the caller's claims, set per transaction by the worker's
-- UserScope as for every other method) and filters every statement by that user. Like the
-- row-limit and period triggers, it relies on its owner (the migrator) bypassing row-level security.
--
-- Idempotent: every write compares first (UPDATE … WHERE the row differs; INSERT of the rows
-- that do not exist: not ON CONFLICT, whose BEFORE INSERT triggers, the sync stamp among them,
-- fire even for the rows it then skips), so importing the same document twice writes nothing
-- the second time: no updated_at bump, no new sync change number.

CREATE OR REPLACE FUNCTION habit.import_refusal(path text, reason text, message text, today date DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        RAISE EXCEPTION '%: %', path, message
            USING ERRCODE = 'HB010', COLUMN = path, DETAIL = reason, HINT = coalesce(to_char(today, 'YYYY-MM-DD'), '');
    END
    $fn$;
COMMENT ON FUNCTION habit.import_refusal(text, text, text, date) IS
    'Raises SQLSTATE HB010 with COLUMN = the JSON path, DETAIL = the reason code and HINT = the user''s today for future_date (sql/0013).';

CREATE OR REPLACE FUNCTION habit.import_account(p_user uuid, p_document jsonb, p_mode text) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        backfill boolean;
        zone text;
        day_start time;
        today date;
        bad record;
        habit_row record;
        counts jsonb := '{}';
        n_inserted integer;
        n_updated integer;
        n_deleted integer;
        n_total integer;
        target_active boolean;
        target_schedule jsonb;
        target_activated timestamptz;
        target_deactivated timestamptz;
        current_row public.habit_templates;
        same_periods boolean;
        periods_changed integer := 0;
        relocking boolean;
        -- now() as a value for the UPDATE of habit_templates: Citus refuses non-IMMUTABLE
        -- functions inside its CASE and COALESCE. The transaction's instant either way.
        started timestamptz := now();
    BEGIN
        IF p_user IS NULL OR p_user IS DISTINCT FROM auth.uid() THEN
            RAISE EXCEPTION 'import_account acts only for the caller (auth.uid())' USING ERRCODE = '42501';
        END IF;
        IF p_mode IS NULL OR p_mode NOT IN ('merge', 'replace') THEN
            RAISE EXCEPTION 'mode must be merge or replace' USING ERRCODE = '22023';
        END IF;
        -- One import of a user at a time: a second waits here, then (READ COMMITTED: each
        -- statement sees what committed before it) finds the first's rows and compares, instead
        -- of colliding on their keys (a unique violation the caller could only see as an
        -- internal error). Transaction-scoped, so it holds behind a transaction pooler too; the
        -- user's clock row, which no other user can lock (sql/0023; an advisory key before).
        --
        -- The user's habits are locked first, in id order, and the clock after them: the order of
        -- a completion or skip write (habit.check_day, set_day_state, toggle_day, set_skips lock
        -- the habit, then its change number locks the clock) and of a habit's own update. With
        -- the clock first, an import waited for a habit whose completion waited for the import's
        -- clock: one of them died with 40P01, the worker's -32012 (AccountImportLockOrderTests).
        -- A habit made between the two statements has committed once the clock is ours (its
        -- maker held the clock), so the NOWAIT statement locks it; if a writer got to it first
        -- (and now waits for our clock), the subtransaction's rollback lets the clock go and the
        -- habits are locked again, waiting for that writer while holding nothing of its.
        LOOP
            PERFORM 1 FROM public.habit_templates t WHERE t.user_id = p_user ORDER BY t.id FOR NO KEY UPDATE;
            relocking := false;
            BEGIN
                PERFORM habit.lock_user_writes(p_user);
                relocking := true;
                PERFORM 1 FROM public.habit_templates t WHERE t.user_id = p_user ORDER BY t.id FOR NO KEY UPDATE NOWAIT;
                EXIT;
            EXCEPTION WHEN lock_not_available THEN
                -- Only the NOWAIT's: a lock_timeout while waiting for the clock is the caller's.
                IF NOT relocking THEN
                    RAISE;
                END IF;
            END;
        END LOOP;
        backfill := coalesce(current_setting('habit.backfill', true), '') IN ('on', 'true');
        IF backfill AND NOT pg_has_role(session_user, 'habit_admin', 'MEMBER') THEN
            RAISE EXCEPTION 'habit.backfill is only for habit_admin; % may not set it', session_user USING ERRCODE = 'HB006';
        END IF;
        IF backfill THEN
            -- The tables' triggers (habit.backfilling) accept this session's admin login role.
            PERFORM set_config('habit.backfill_checked', 'session', true);
        END IF;

        -- The caps of one import (docs/protocol.md "account.import", Limits), before anything
        -- is loaded: the worker checks them too, but a direct caller (psql, PostgREST) meets
        -- them here. Each array's length is read without expanding it.
        SELECT m.member INTO bad FROM (VALUES (0, 'habits', 10000), (1, 'completions', 500000), (2, 'skips', 500000),
                                              (3, 'lists', 10000), (4, 'tasks', 200000), (5, 'checkins', 500000),
                                              (6, 'notes', 100000), (7, 'reminders', 24000), (8, 'areas', 100)) m(o, member, cap)
        WHERE jsonb_typeof(p_document -> m.member) = 'array' AND jsonb_array_length(p_document -> m.member) > m.cap
        ORDER BY m.o LIMIT 1;
        IF FOUND THEN
            PERFORM habit.import_refusal('document.' || bad.member, 'too_many', 'more rows than one import takes');
        END IF;

        -- The document as rows (ordinality - 1 is the JSON index), in the staging tables of
        -- sql/migrations/0028: the user's rows, only ever seen by this transaction (they are
        -- deleted before it ends). Real tables co-located with the user's, not temporary ones: a
        -- Citus coordinator cannot join a temporary table with distributed tables, and every
        -- statement below names p_user so that Citus runs it on the user's shards. The writes
        -- from them take user_id from the staged row, not p_user: only then does Citus see an
        -- INSERT … SELECT between co-located shards (otherwise it copies the rows through
        -- itself, and the tables' triggers then fail on the user's node).
        INSERT INTO habit.import_habits (user_id, i, id, name, icon, color, sort_order, periods, kind, unit, target, target_type, target_period, archived_at,
                                         area_id)
        SELECT p_user, h.o - 1, (h.v ->> 'id')::uuid, h.v ->> 'name', h.v ->> 'icon', h.v ->> 'color', (h.v ->> 'sort_order')::integer,
               coalesce(h.v -> 'periods', '[]'), coalesce(h.v ->> 'kind', 'boolean'), h.v ->> 'unit',
               coalesce((h.v ->> 'target')::numeric, 1), coalesce(h.v ->> 'target_type', 'at_least'), coalesce(h.v ->> 'target_period', 'day'),
               (h.v ->> 'archived_at')::timestamptz, (h.v ->> 'area_id')::uuid
        FROM jsonb_array_elements(coalesce(p_document -> 'habits', '[]')) WITH ORDINALITY h(v, o);
        -- At most 10,000 periods per habit (before they are expanded).
        SELECT 'document.habits[' || h.i || '].periods' AS path INTO bad FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h
        WHERE jsonb_typeof(h.periods) = 'array' AND jsonb_array_length(h.periods) > 10000 ORDER BY h.i LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'too_many', 'at most 10000 periods per habit'); END IF;
        INSERT INTO habit.import_periods (user_id, i, j, template_id, started_at, ended_at, schedule)
        SELECT p_user, h.o - 1, p.o - 1, (h.v ->> 'id')::uuid, (p.v ->> 'started_at')::timestamptz, (p.v ->> 'ended_at')::timestamptz, p.v -> 'schedule'
        FROM jsonb_array_elements(coalesce(p_document -> 'habits', '[]')) WITH ORDINALITY h(v, o),
             jsonb_array_elements(coalesce(h.v -> 'periods', '[]')) WITH ORDINALITY p(v, o);
        INSERT INTO habit.import_days (user_id, kind, i, template_id, day)
        SELECT p_user, 'completions', c.o - 1, (c.v ->> 'template_id')::uuid, (c.v ->> 'date')::date
        FROM jsonb_array_elements(coalesce(p_document -> 'completions', '[]')) WITH ORDINALITY c(v, o)
        UNION ALL
        SELECT p_user, 'skips', s.o - 1, (s.v ->> 'template_id')::uuid, (s.v ->> 'date')::date
        FROM jsonb_array_elements(coalesce(p_document -> 'skips', '[]')) WITH ORDINALITY s(v, o);
        INSERT INTO habit.import_checkins (user_id, i, id, template_id, day, value, at_time)
        SELECT p_user, c.o - 1, (c.v ->> 'id')::uuid, (c.v ->> 'template_id')::uuid, (c.v ->> 'date')::date, (c.v ->> 'value')::numeric,
               (c.v ->> 'time')::time
        FROM jsonb_array_elements(coalesce(p_document -> 'checkins', '[]')) WITH ORDINALITY c(v, o);
        INSERT INTO habit.import_notes (user_id, i, template_id, day, note)
        SELECT p_user, n.o - 1, (n.v ->> 'template_id')::uuid, (n.v ->> 'date')::date, n.v ->> 'note'
        FROM jsonb_array_elements(coalesce(p_document -> 'notes', '[]')) WITH ORDINALITY n(v, o);
        INSERT INTO habit.import_lists (user_id, i, id, name)
        SELECT p_user, l.o - 1, (l.v ->> 'id')::uuid, l.v ->> 'name'
        FROM jsonb_array_elements(coalesce(p_document -> 'lists', '[]')) WITH ORDINALITY l(v, o);
        -- Areas (sql/0037): at most 100, so never analyzed below.
        INSERT INTO habit.import_areas (user_id, i, id, name, sort_order)
        SELECT p_user, a.o - 1, (a.v ->> 'id')::uuid, a.v ->> 'name', (a.v ->> 'sort_order')::integer
        FROM jsonb_array_elements(coalesce(p_document -> 'areas', '[]')) WITH ORDINALITY a(v, o);
        -- Reminders (sql/0036): days "due" (or none) is NULL, a weekday list its bit set.
        INSERT INTO habit.import_reminders (user_id, i, id, template_id, local_time, weekdays)
        SELECT p_user, r.o - 1, (r.v ->> 'id')::uuid, (r.v ->> 'template_id')::uuid, (r.v ->> 'time')::time,
               CASE WHEN jsonb_typeof(r.v -> 'days') = 'array'
                    THEN (SELECT sum(DISTINCT 1 << (d::integer - 1))::smallint FROM jsonb_array_elements_text(r.v -> 'days') d) END
        FROM jsonb_array_elements(coalesce(p_document -> 'reminders', '[]')) WITH ORDINALITY r(v, o);
        INSERT INTO habit.import_tasks (user_id, i, id, list_id, title, notes, state, scheduled_date, "position", completed_at)
        SELECT p_user, t.o - 1, (t.v ->> 'id')::uuid, (t.v ->> 'list_id')::uuid, t.v ->> 'title', t.v ->> 'notes', t.v ->> 'state',
               (t.v ->> 'scheduled_date')::date, (t.v ->> 'position')::integer, (t.v ->> 'completed_at')::timestamptz
        FROM jsonb_array_elements(coalesce(p_document -> 'tasks', '[]')) WITH ORDINALITY t(v, o);
        -- Statistics of what was just staged, for a document of any size: without them the
        -- planner takes the staged rows for one (a table's statistics describe other imports'
        -- rows, long gone), and picks nested loops that made 25,710 completions take 114 s
        -- instead of 5. ANALYZE counts this transaction's own rows. It locks the table against
        -- another ANALYZE until this transaction ends, so two large imports (of any users) take
        -- turns from here; a small one (1,000 rows or fewer of each kind) does not need it.
        -- Only the key columns: names, titles and notes would stay behind in pg_statistic (and
        -- its WAL) after the import, and after an account deletion.
        IF jsonb_array_length(coalesce(p_document -> 'completions', '[]')) + jsonb_array_length(coalesce(p_document -> 'skips', '[]')) > 1000
           OR jsonb_array_length(coalesce(p_document -> 'tasks', '[]')) > 1000
           OR jsonb_array_length(coalesce(p_document -> 'habits', '[]')) > 1000
           OR jsonb_array_length(coalesce(p_document -> 'checkins', '[]')) + jsonb_array_length(coalesce(p_document -> 'notes', '[]')) > 1000
           OR (SELECT count(*) FROM habit.import_periods p WHERE p.user_id = p_user) > 1000 THEN
            ANALYZE habit.import_habits (user_id, i, id), habit.import_periods (user_id, i, j, template_id),
                    habit.import_days (user_id, kind, i, template_id, day), habit.import_lists (user_id, i, id),
                    habit.import_tasks (user_id, i, id, list_id), habit.import_checkins (user_id, i, id, template_id, day),
                    habit.import_notes (user_id, i, template_id, day);
        END IF;

        -- 1. Checks, before any write -------------------------------------------------------
        -- What the worker's AccountDocument also checks (issue 31, finding 7): a direct caller
        -- meets the same rules with the same paths and reasons. Duplicate ids and days (the
        -- second one named), references inside the document, then the periods' order.
        -- (A window per kind: one sort, not a pairwise search, for 500,000 rows.)
        SELECT x.path INTO bad FROM (
            -- Areas (sql/0037) first: the document's first array.
            SELECT -1 AS member, a.i, 'document.areas[' || a.i || '].id' AS path,
                   row_number() OVER (PARTITION BY a.id ORDER BY a.i) AS n FROM (SELECT * FROM habit.import_areas WHERE user_id = p_user) a
            UNION ALL
            SELECT 0, h.i, 'document.habits[' || h.i || '].id',
                   row_number() OVER (PARTITION BY h.id ORDER BY h.i) FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h
            UNION ALL
            SELECT CASE d.kind WHEN 'completions' THEN 1 ELSE 2 END, d.i, 'document.' || d.kind || '[' || d.i || ']',
                   row_number() OVER (PARTITION BY d.kind, d.template_id, d.day ORDER BY d.i) FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d
            UNION ALL
            SELECT 3, l.i, 'document.lists[' || l.i || '].id', row_number() OVER (PARTITION BY l.id ORDER BY l.i) FROM (SELECT * FROM habit.import_lists WHERE user_id = p_user) l
            UNION ALL
            SELECT 4, k.i, 'document.tasks[' || k.i || '].id', row_number() OVER (PARTITION BY k.id ORDER BY k.i) FROM (SELECT * FROM habit.import_tasks WHERE user_id = p_user) k
            UNION ALL
            SELECT 5, c.i, 'document.checkins[' || c.i || '].id', row_number() OVER (PARTITION BY c.id ORDER BY c.i) FROM (SELECT * FROM habit.import_checkins WHERE user_id = p_user) c
            UNION ALL
            SELECT 6, n.i, 'document.notes[' || n.i || ']', row_number() OVER (PARTITION BY n.template_id, n.day ORDER BY n.i) FROM (SELECT * FROM habit.import_notes WHERE user_id = p_user) n
            UNION ALL
            SELECT 7, r.i, 'document.reminders[' || r.i || '].id', row_number() OVER (PARTITION BY r.id ORDER BY r.i) FROM (SELECT * FROM habit.import_reminders WHERE user_id = p_user) r
            UNION ALL
            -- A habit's reminders are one per time and days (habit_reminders_habit_time_key).
            SELECT 8, r.i, 'document.reminders[' || r.i || ']', row_number() OVER (PARTITION BY r.template_id, r.local_time, r.weekdays ORDER BY r.i)
            FROM (SELECT * FROM habit.import_reminders WHERE user_id = p_user) r
        ) x WHERE x.n > 1 ORDER BY x.member, x.i LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'duplicate_value', 'a second row with the same key'); END IF;
        SELECT x.path INTO bad FROM (
            -- A habit's area (sql/0037), as a task's list: absent or null is none.
            SELECT -1 AS member, h.i, 'document.habits[' || h.i || '].area_id' AS path FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h
            WHERE h.area_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_areas WHERE user_id = p_user) a WHERE a.id = h.area_id)
            UNION ALL
            SELECT CASE d.kind WHEN 'completions' THEN 0 ELSE 1 END, d.i,
                   'document.' || d.kind || '[' || d.i || '].template_id' FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d
            WHERE NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h WHERE h.id = d.template_id)
            UNION ALL
            SELECT 2, k.i, 'document.tasks[' || k.i || '].list_id' FROM (SELECT * FROM habit.import_tasks WHERE user_id = p_user) k
            WHERE k.list_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_lists WHERE user_id = p_user) l WHERE l.id = k.list_id)
            UNION ALL
            SELECT 3, c.i, 'document.checkins[' || c.i || '].template_id' FROM (SELECT * FROM habit.import_checkins WHERE user_id = p_user) c
            WHERE NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h WHERE h.id = c.template_id)
            UNION ALL
            SELECT 4, n.i, 'document.notes[' || n.i || '].template_id' FROM (SELECT * FROM habit.import_notes WHERE user_id = p_user) n
            WHERE NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h WHERE h.id = n.template_id)
            UNION ALL
            SELECT 5, r.i, 'document.reminders[' || r.i || '].template_id' FROM (SELECT * FROM habit.import_reminders WHERE user_id = p_user) r
            WHERE NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h WHERE h.id = r.template_id)
        ) x ORDER BY x.member, x.i LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'unknown_reference', 'no row of the document has this id'); END IF;
        -- At most 24 reminders a habit (the table's trigger, HB001): named here, the 25th.
        SELECT 'document.reminders[' || x.i || ']' AS path INTO bad FROM (
            SELECT r.i, row_number() OVER (PARTITION BY r.template_id ORDER BY r.i) AS n FROM (SELECT * FROM habit.import_reminders WHERE user_id = p_user) r
        ) x WHERE x.n > 24 ORDER BY x.i LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'too_many', 'at most 24 reminders a habit'); END IF;
        -- Periods oldest first, only the last one open, each ending after it starts and starting
        -- at or after the previous one's end: what makes is_active (the last period open),
        -- activated_at (the first start) and deactivated_at (the last end) agree with them.
        -- Given out of order, a direct call once stored is_active = false beside an open
        -- period and deactivated_at before activated_at.
        SELECT x.path, x.message INTO bad FROM (
            SELECT p.i, p.j, 0 AS o, 'document.habits[' || p.i || '].periods[' || (p.j - 1) || '].ended_at' AS path,
                   'only the last period may be open' AS message
            FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p JOIN (SELECT * FROM habit.import_periods WHERE user_id = p_user) q ON q.i = p.i AND q.j = p.j - 1 WHERE q.ended_at IS NULL
            UNION ALL
            SELECT p.i, p.j, 1, 'document.habits[' || p.i || '].periods[' || p.j || '].started_at', 'starts before the previous period ends'
            FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p JOIN (SELECT * FROM habit.import_periods WHERE user_id = p_user) q ON q.i = p.i AND q.j = p.j - 1 WHERE p.started_at < q.ended_at
            UNION ALL
            SELECT p.i, p.j, 2, 'document.habits[' || p.i || '].periods[' || p.j || '].ended_at', 'must be after started_at'
            FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p WHERE p.ended_at <= p.started_at
        ) x ORDER BY x.i, x.j, x.o LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'invalid_order', bad.message); END IF;
        IF jsonb_typeof(p_document -> 'profile') = 'object'
           AND NOT EXISTS (SELECT 1 FROM habit.time_zones z WHERE z.name = p_document -> 'profile' ->> 'time_zone') THEN
            PERFORM habit.import_refusal('document.profile.time_zone', 'invalid_timezone', 'unknown time zone');
        END IF;
        -- Names, titles and notes with bidirectional control characters: the tables' CHECK
        -- (habit.has_no_bidi_controls, sql/0019) would refuse them too, without saying which.
        SELECT x.path INTO bad FROM (
            SELECT -1 AS member, a.i, 'document.areas[' || a.i || '].name' AS path FROM (SELECT * FROM habit.import_areas WHERE user_id = p_user) a
            WHERE NOT habit.has_no_bidi_controls(a.name)
            UNION ALL
            SELECT 0, h.i, 'document.habits[' || h.i || '].name' FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h
            WHERE NOT habit.has_no_bidi_controls(h.name)
            UNION ALL
            SELECT 1, l.i, 'document.lists[' || l.i || '].name' FROM (SELECT * FROM habit.import_lists WHERE user_id = p_user) l WHERE NOT habit.has_no_bidi_controls(l.name)
            UNION ALL
            SELECT 2, t.i, 'document.tasks[' || t.i || '].title' FROM (SELECT * FROM habit.import_tasks WHERE user_id = p_user) t WHERE NOT habit.has_no_bidi_controls(t.title)
            UNION ALL
            SELECT 3, t.i, 'document.tasks[' || t.i || '].notes' FROM (SELECT * FROM habit.import_tasks WHERE user_id = p_user) t WHERE NOT habit.has_no_bidi_controls(t.notes)
        ) x ORDER BY x.member, x.i LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'invalid_characters', 'must not contain bidirectional control characters'); END IF;
        -- The zone the user will have: the document's profile's; merge without one: the current.
        zone := coalesce(p_document -> 'profile' ->> 'time_zone',
                         CASE WHEN p_mode = 'merge' THEN habit.user_time_zone(p_user, NULL) END, 'UTC');
        -- And its day start: the document profile's (a profile without one: 00:00); merge
        -- without a profile: the current.
        day_start := CASE WHEN jsonb_typeof(p_document -> 'profile') = 'object'
                          THEN coalesce((p_document -> 'profile' ->> 'day_starts_at')::time, '00:00')
                          WHEN p_mode = 'merge' THEN habit.user_day_start(p_user) ELSE '00:00' END;
        today := habit.local_day(now(), zone, day_start);

        -- Periods end by now (closing happens at now(); an open period may start later).
        SELECT 'document.habits[' || p.i || '].periods[' || p.j || '].ended_at' AS path INTO bad FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p
        WHERE p.ended_at > now() ORDER BY p.i, p.j LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'future_date', 'the period ends after now', today); END IF;

        -- The range (sql/migrations/0021), backfill or not: periods start at or after
        -- habit.earliest_day() 00:00 UTC, completions and skips lie on or after it.
        SELECT 'document.habits[' || p.i || '].periods[' || p.j || '].started_at' AS path INTO bad FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p
        WHERE p.started_at < habit.earliest_day()::timestamp AT TIME ZONE 'UTC' ORDER BY p.i, p.j LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'out_of_range', 'before ' || habit.earliest_day() || 'T00:00:00Z'); END IF;
        SELECT 'document.' || d.kind || '[' || d.i || '].date' AS path INTO bad FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d
        WHERE d.day < habit.earliest_day() ORDER BY d.kind, d.i LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'out_of_range', 'before ' || habit.earliest_day()); END IF;

        -- Completions and skips: the rules of sql/0010 against the document's own periods.
        SELECT 'document.' || d.kind || '[' || d.i || ']' AS path INTO bad FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d
        WHERE d.kind = 'skips' AND EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) c WHERE c.kind = 'completions'
                                           AND c.template_id = d.template_id AND c.day = d.day)
        ORDER BY d.i LIMIT 1;
        IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'done_and_skipped', 'the day is both completed and skipped'); END IF;
        IF p_mode = 'merge' THEN
            -- Merge keeps the user's other completions and skips: the document may not contradict them.
            SELECT 'document.' || d.kind || '[' || d.i || ']' AS path INTO bad FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d
            WHERE (d.kind = 'completions' AND EXISTS (SELECT 1 FROM public.habit_skips s WHERE s.user_id = p_user
                                                      AND s.template_id = d.template_id AND s.skipped_date = d.day))
               OR (d.kind = 'skips' AND EXISTS (SELECT 1 FROM public.habit_completions c WHERE c.user_id = p_user
                                                AND c.template_id = d.template_id AND c.completed_date = d.day))
            ORDER BY d.kind, d.i LIMIT 1;
            IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'done_and_skipped', 'the user has the other state on that day'); END IF;
        END IF;
        IF NOT backfill THEN
            SELECT 'document.' || d.kind || '[' || d.i || '].date' AS path INTO bad FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d
            WHERE (d.kind = 'completions' AND d.day > today) OR (d.kind = 'skips' AND d.day > today + 366)
            ORDER BY d.kind, d.i LIMIT 1;
            IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'future_date', 'after the user''s today (' || today || ')', today); END IF;
            SELECT 'document.' || d.kind || '[' || d.i || '].date' AS path INTO bad FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d
            WHERE NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p WHERE p.template_id = d.template_id
                              AND habit.period_on_days(p.started_at, p.ended_at, zone, today, day_start) @> d.day)
            ORDER BY d.kind, d.i LIMIT 1;
            IF FOUND THEN PERFORM habit.import_refusal(bad.path, 'habit_not_active', 'the habit is not on that day'); END IF;
            IF p_mode = 'merge' THEN
                -- Merge keeps the user's completions and skips the document lacks; it may not
                -- take their habit off their day (issue 31, finding 8: a merge that closed a
                -- period earlier left a completion on a day re-setting answers habit_not_active).
                -- A kept row that is on now (the stored periods, the current zone) and would not
                -- be after the import (the document's periods, the zone the user will have) is
                -- refused, named: COLUMN the habit's periods, TABLE the kept row's table, HINT its
                -- date. Rows already off before (an admin's backfill) are left as they are.
                SELECT h.i, x.tbl, x.day INTO bad
                FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h
                JOIN LATERAL (SELECT 'habit_completions' AS tbl, 'completions' AS kind, c.completed_date AS day
                              FROM public.habit_completions c WHERE c.user_id = p_user AND c.template_id = h.id
                              UNION ALL
                              SELECT 'habit_skips', 'skips', k.skipped_date
                              FROM public.habit_skips k WHERE k.user_id = p_user AND k.template_id = h.id) x ON true
                WHERE NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d WHERE d.kind = x.kind AND d.template_id = h.id AND d.day = x.day)
                  AND NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p WHERE p.i = h.i
                                  AND habit.period_on_days(p.started_at, p.ended_at, zone, today, day_start) @> x.day)
                  AND EXISTS (SELECT 1 FROM public.habit_periods p WHERE p.user_id = p_user AND p.template_id = h.id
                              AND habit.period_on_days(p.started_at, p.ended_at, habit.user_time_zone(p_user, NULL),
                                                       habit.user_today(p_user, NULL), habit.user_day_start(p_user)) @> x.day)
                ORDER BY h.i, x.tbl, x.day LIMIT 1;
                IF FOUND THEN
                    RAISE EXCEPTION 'document.habits[%].periods: the user''s % row of % would be on a day the habit is not on',
                            bad.i, bad.tbl, bad.day
                        USING ERRCODE = 'HB010', COLUMN = 'document.habits[' || bad.i || '].periods', DETAIL = 'habit_not_active',
                              TABLE = bad.tbl, HINT = to_char(bad.day, 'YYYY-MM-DD');
                END IF;
            END IF;
        END IF;

        -- 2. Replace: what the document does not hold goes ------------------------------------
        IF p_mode = 'replace' THEN
            DELETE FROM public.tasks t WHERE t.user_id = p_user AND NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_tasks WHERE user_id = p_user) k WHERE k.id = t.id);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('tasks_deleted', n_deleted);
            DELETE FROM public.task_lists t WHERE t.user_id = p_user AND NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_lists WHERE user_id = p_user) l WHERE l.id = t.id);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('lists_deleted', n_deleted);
            DELETE FROM public.habit_day_notes n WHERE n.user_id = p_user AND NOT EXISTS
                (SELECT 1 FROM (SELECT * FROM habit.import_notes WHERE user_id = p_user) x WHERE x.template_id = n.template_id AND x.day = n.note_date);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('notes_deleted', n_deleted);
            DELETE FROM public.habit_reminders r WHERE r.user_id = p_user AND NOT EXISTS
                (SELECT 1 FROM (SELECT * FROM habit.import_reminders WHERE user_id = p_user) x WHERE x.id = r.id);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('reminders_deleted', n_deleted);
            DELETE FROM public.habit_checkins c WHERE c.user_id = p_user AND NOT EXISTS
                (SELECT 1 FROM (SELECT * FROM habit.import_checkins WHERE user_id = p_user) x WHERE x.id = c.id);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('checkins_deleted', n_deleted);
            DELETE FROM public.habit_skips s WHERE s.user_id = p_user AND NOT EXISTS
                (SELECT 1 FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d WHERE d.kind = 'skips' AND d.template_id = s.template_id AND d.day = s.skipped_date);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('skips_deleted', n_deleted);
            DELETE FROM public.habit_completions c WHERE c.user_id = p_user AND NOT EXISTS
                (SELECT 1 FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d WHERE d.kind = 'completions' AND d.template_id = c.template_id AND d.day = c.completed_date);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('completions_deleted', n_deleted);
            DELETE FROM public.habit_templates t WHERE t.user_id = p_user AND NOT EXISTS (SELECT 1 FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h WHERE h.id = t.id);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('habits_deleted', n_deleted);
            IF jsonb_typeof(p_document -> 'profile') IS DISTINCT FROM 'object' THEN
                DELETE FROM public.profiles p WHERE p.user_id = p_user;
                GET DIAGNOSTICS n_deleted = ROW_COUNT;
                counts := counts || jsonb_build_object('profile_deleted', n_deleted);
            END IF;
        END IF;

        -- 3. Writes, each only where the row differs -------------------------------------------
        IF jsonb_typeof(p_document -> 'profile') = 'object' THEN
            -- BEFORE INSERT triggers (the sync stamp) fire even for a row ON CONFLICT then
            -- skips: so existing rows are updated, and only missing ones inserted.
            UPDATE public.profiles p SET timezone = p_document -> 'profile' ->> 'time_zone', week_start = p_document -> 'profile' ->> 'week_start',
                                         day_starts_at = day_start
            WHERE p.user_id = p_user
              AND (p.timezone, p.week_start, p.day_starts_at)
                  IS DISTINCT FROM (p_document -> 'profile' ->> 'time_zone', p_document -> 'profile' ->> 'week_start', day_start);
            GET DIAGNOSTICS n_updated = ROW_COUNT;
            n_inserted := 0;
            IF NOT EXISTS (SELECT 1 FROM public.profiles p WHERE p.user_id = p_user) THEN
                INSERT INTO public.profiles (user_id, timezone, week_start, day_starts_at)
                VALUES (p_user, p_document -> 'profile' ->> 'time_zone', p_document -> 'profile' ->> 'week_start', day_start);
                n_inserted := 1;
            END IF;
            counts := counts || jsonb_build_object('profile_inserted', n_inserted, 'profile_updated', n_updated, 'profile_total', 1);
        END IF;

        -- The INSERT … SELECTs from the staged rows run as dynamic SQL with the user as a
        -- literal: on Citus a parameter there keeps the statement from going to the user's
        -- shards alone; on PostgreSQL it only costs a plan per execution. The instant travels as
        -- ISO 8601 in UTC, whatever the session's DateStyle and TimeZone.
        -- Areas (sql/0037), by id like lists, before the habits that name them
        -- (habit_templates_area_fkey).
        UPDATE public.habit_areas a SET name = x.name, sort_order = x.sort_order
        FROM (SELECT * FROM habit.import_areas WHERE user_id = p_user) x
        WHERE a.id = x.id AND a.user_id = p_user AND (a.name, a.sort_order) IS DISTINCT FROM (x.name, x.sort_order);
        GET DIAGNOSTICS n_updated = ROW_COUNT;
        EXECUTE format($insert$INSERT INTO public.habit_areas (id, user_id, name, sort_order)
        SELECT x.id, x.user_id, x.name, x.sort_order FROM (SELECT * FROM habit.import_areas WHERE user_id = %1$L) x
        WHERE NOT EXISTS (SELECT 1 FROM public.habit_areas a WHERE a.id = x.id AND a.user_id = x.user_id) ORDER BY x.i$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM habit.import_areas x WHERE x.user_id = p_user;
        counts := counts || jsonb_build_object('areas_inserted', n_inserted, 'areas_updated', n_updated, 'areas_total', n_total);

        -- Habits: the fields the user sets; is_active, activated_at, deactivated_at and schedule
        -- follow from the periods (written below). A new habit starts as its periods say, so the
        -- AFTER INSERT trigger's first period is already right when there is one period.
        -- A habit's kind and target (sql/0029): a different kind of an existing habit is refused
        -- by its trigger (habit_templates_kind_fixed); a new target re-decides its days with
        -- check-ins.
        UPDATE public.habit_templates t SET name = h.name, icon = h.icon, color = h.color, sort_order = h.sort_order,
                                            kind = h.kind, unit = h.unit, target = h.target, target_type = h.target_type,
                                            target_period = h.target_period, archived_at = h.archived_at, area_id = h.area_id
        FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h
        WHERE t.id = h.id AND t.user_id = p_user
          AND (t.name, t.icon, t.color, t.sort_order, t.kind, t.unit, t.target, t.target_type, t.target_period, t.archived_at, t.area_id)
              IS DISTINCT FROM (h.name, h.icon, h.color, h.sort_order, h.kind, h.unit, h.target, h.target_type, h.target_period, h.archived_at, h.area_id);
        GET DIAGNOSTICS n_updated = ROW_COUNT;
        EXECUTE format($insert$INSERT INTO public.habit_templates (id, user_id, name, icon, color, sort_order, is_active, activated_at, deactivated_at, schedule,
                                                   kind, unit, target, target_type, target_period, archived_at, area_id)
        SELECT h.id, h.user_id, h.name, h.icon, h.color, h.sort_order,
               coalesce(pp.last_ended_at IS NULL AND pp.last_started_at IS NOT NULL, false),
               coalesce(pp.first_started_at, %2$L::timestamptz),
               CASE WHEN pp.last_started_at IS NULL THEN %2$L::timestamptz ELSE pp.last_ended_at END,
               coalesce(pp.last_schedule, '{"type":"daily"}'), h.kind, h.unit, h.target, h.target_type, h.target_period, h.archived_at, h.area_id
        FROM (SELECT * FROM habit.import_habits WHERE user_id = %1$L) h
        -- The first and the last period, grouped and joined by user_id (a LATERAL … LIMIT 1
        -- here is what Citus cannot send to the user's shards in an INSERT … SELECT).
        LEFT JOIN (SELECT p.user_id, p.i, (array_agg(p.started_at ORDER BY p.j))[1] AS first_started_at,
                          (array_agg(p.started_at ORDER BY p.j DESC))[1] AS last_started_at,
                          (array_agg(p.ended_at ORDER BY p.j DESC))[1] AS last_ended_at,
                          (array_agg(p.schedule ORDER BY p.j DESC))[1] AS last_schedule
                   FROM (SELECT * FROM habit.import_periods WHERE user_id = %1$L) p GROUP BY p.user_id, p.i) pp
               ON pp.user_id = h.user_id AND pp.i = h.i
        WHERE NOT EXISTS (SELECT 1 FROM public.habit_templates t WHERE t.id = h.id AND t.user_id = h.user_id)
        ORDER BY h.i$insert$, p_user, to_char(started AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM habit.import_habits h WHERE h.user_id = p_user;
        counts := counts || jsonb_build_object('habits_inserted', n_inserted, 'habits_updated', n_updated, 'habits_total', n_total);
        IF p_mode = 'replace' THEN
            -- The user's areas the document lacks (sql/0037), now that no habit names them: the
            -- habits the document lacks are gone, and its own name only its own areas. (Before
            -- the habits' update, the area's trigger would have cleared their area_id itself,
            -- and the update then found nothing to count.)
            DELETE FROM public.habit_areas a WHERE a.user_id = p_user AND NOT EXISTS
                (SELECT 1 FROM (SELECT * FROM habit.import_areas WHERE user_id = p_user) x WHERE x.id = a.id);
            GET DIAGNOSTICS n_deleted = ROW_COUNT;
            counts := counts || jsonb_build_object('areas_deleted', n_deleted);
        END IF;

        -- Periods, per habit whose stored periods differ from the document's: the template's
        -- is_active/schedule are set first (its history trigger then writes periods at now()),
        -- then the periods are replaced by the document's and activated_at/deactivated_at set
        -- (columns no trigger watches).
        FOR habit_row IN SELECT h.i, h.id FROM (SELECT * FROM habit.import_habits WHERE user_id = p_user) h ORDER BY h.i LOOP
            SELECT coalesce(array_agg(ROW(p.started_at, p.ended_at, p.schedule)::text ORDER BY p.started_at), '{}')
                   = (SELECT coalesce(array_agg(ROW(d.started_at, d.ended_at, d.schedule)::text ORDER BY d.started_at), '{}')
                      FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) d WHERE d.i = habit_row.i)
            INTO same_periods
            FROM public.habit_periods p WHERE p.user_id = p_user AND p.template_id = habit_row.id;
            CONTINUE WHEN same_periods;
            periods_changed := periods_changed + 1;
            SELECT (last.ended_at IS NULL AND last.started_at IS NOT NULL), coalesce(last.schedule, t.schedule),
                   first.started_at, CASE WHEN last.started_at IS NULL THEN NULL ELSE last.ended_at END
            INTO target_active, target_schedule, target_activated, target_deactivated
            FROM public.habit_templates t
            LEFT JOIN LATERAL (SELECT p.started_at FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p WHERE p.i = habit_row.i ORDER BY p.j LIMIT 1) first ON true
            LEFT JOIN LATERAL (SELECT p.started_at, p.ended_at, p.schedule FROM (SELECT * FROM habit.import_periods WHERE user_id = p_user) p WHERE p.i = habit_row.i
                               ORDER BY p.j DESC LIMIT 1) last ON true
            WHERE t.id = habit_row.id AND t.user_id = p_user;
            target_active := coalesce(target_active, false);
            SELECT t.* INTO current_row FROM public.habit_templates t WHERE t.id = habit_row.id AND t.user_id = p_user;
            DELETE FROM public.habit_periods p WHERE p.user_id = p_user AND p.template_id = habit_row.id;
            IF current_row.is_active IS DISTINCT FROM target_active OR current_row.schedule IS DISTINCT FROM target_schedule THEN
                UPDATE public.habit_templates t SET is_active = target_active, schedule = target_schedule
                WHERE t.id = habit_row.id AND t.user_id = p_user;
                DELETE FROM public.habit_periods p WHERE p.user_id = p_user AND p.template_id = habit_row.id;
            END IF;
            EXECUTE format($insert$INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at, schedule)
            SELECT p.user_id, p.template_id, p.started_at, p.ended_at, p.schedule FROM (SELECT * FROM habit.import_periods WHERE user_id = %1$L) p WHERE p.i = %3$s ORDER BY p.j$insert$, p_user, started, habit_row.i);
            UPDATE public.habit_templates t
            SET activated_at = coalesce(target_activated, t.activated_at),
                deactivated_at = CASE WHEN target_active THEN NULL ELSE coalesce(target_deactivated, t.deactivated_at, started) END
            WHERE t.id = habit_row.id AND t.user_id = p_user
              AND (t.activated_at, t.deactivated_at) IS DISTINCT FROM
                  (coalesce(target_activated, t.activated_at),
                   CASE WHEN target_active THEN NULL ELSE coalesce(target_deactivated, t.deactivated_at, started) END);
        END LOOP;
        counts := counts || jsonb_build_object('habits_with_new_periods', periods_changed);

        -- Check-ins before the completions (sql/0029): a counted habit's done days follow its
        -- check-ins (their trigger adds the completion), so the document's completion of such a
        -- day is there by the time the completions are written. Their day rules are their
        -- trigger's (HB003-HB005), as for every writer.
        -- (A check-in's client_id is the device's retry key, not content: documents carry none,
        -- and an existing check-in keeps its own.)
        UPDATE public.habit_checkins c SET template_id = x.template_id, checkin_date = x.day, value = x.value, at_time = x.at_time
        FROM (SELECT * FROM habit.import_checkins WHERE user_id = p_user) x
        WHERE c.user_id = p_user AND c.id = x.id
          AND (c.template_id, c.checkin_date, c.value, c.at_time) IS DISTINCT FROM (x.template_id, x.day, x.value, x.at_time);
        GET DIAGNOSTICS n_updated = ROW_COUNT;
        EXECUTE format($insert$INSERT INTO public.habit_checkins (id, user_id, template_id, checkin_date, value, at_time)
        SELECT x.id, x.user_id, x.template_id, x.day, x.value, x.at_time FROM (SELECT * FROM habit.import_checkins WHERE user_id = %1$L) x
        WHERE NOT EXISTS (SELECT 1 FROM public.habit_checkins c WHERE c.id = x.id AND c.user_id = x.user_id)
        ORDER BY x.i$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM habit.import_checkins x WHERE x.user_id = p_user;
        counts := counts || jsonb_build_object('checkins_inserted', n_inserted, 'checkins_updated', n_updated, 'checkins_total', n_total);
        UPDATE public.habit_day_notes n SET note = x.note FROM (SELECT * FROM habit.import_notes WHERE user_id = p_user) x
        WHERE n.user_id = p_user AND n.template_id = x.template_id AND n.note_date = x.day AND n.note IS DISTINCT FROM x.note;
        GET DIAGNOSTICS n_updated = ROW_COUNT;
        EXECUTE format($insert$INSERT INTO public.habit_day_notes (user_id, template_id, note_date, note)
        SELECT x.user_id, x.template_id, x.day, x.note FROM (SELECT * FROM habit.import_notes WHERE user_id = %1$L) x
        WHERE NOT EXISTS (SELECT 1 FROM public.habit_day_notes n WHERE n.user_id = x.user_id AND n.template_id = x.template_id AND n.note_date = x.day)
        ORDER BY x.i$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM habit.import_notes x WHERE x.user_id = p_user;
        counts := counts || jsonb_build_object('notes_inserted', n_inserted, 'notes_updated', n_updated, 'notes_total', n_total);

        EXECUTE format($insert$INSERT INTO public.habit_completions (user_id, template_id, completed_date)
        SELECT d.user_id, d.template_id, d.day FROM (SELECT * FROM habit.import_days WHERE user_id = %1$L) d
        WHERE d.kind = 'completions' AND NOT EXISTS (SELECT 1 FROM public.habit_completions c
                                                     WHERE c.user_id = d.user_id AND c.template_id = d.template_id AND c.completed_date = d.day)
        ORDER BY d.template_id, d.day$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d WHERE d.kind = 'completions';
        counts := counts || jsonb_build_object('completions_inserted', n_inserted, 'completions_total', n_total);
        EXECUTE format($insert$INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
        SELECT d.user_id, d.template_id, d.day FROM (SELECT * FROM habit.import_days WHERE user_id = %1$L) d
        WHERE d.kind = 'skips' AND NOT EXISTS (SELECT 1 FROM public.habit_skips s
                                               WHERE s.user_id = d.user_id AND s.template_id = d.template_id AND s.skipped_date = d.day)
        ORDER BY d.template_id, d.day$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM (SELECT * FROM habit.import_days WHERE user_id = p_user) d WHERE d.kind = 'skips';
        counts := counts || jsonb_build_object('skips_inserted', n_inserted, 'skips_total', n_total);

        UPDATE public.task_lists t SET name = l.name FROM (SELECT * FROM habit.import_lists WHERE user_id = p_user) l
        WHERE t.id = l.id AND t.user_id = p_user AND t.name IS DISTINCT FROM l.name;
        GET DIAGNOSTICS n_updated = ROW_COUNT;
        EXECUTE format($insert$INSERT INTO public.task_lists (id, user_id, name)
        SELECT l.id, l.user_id, l.name FROM (SELECT * FROM habit.import_lists WHERE user_id = %1$L) l WHERE NOT EXISTS (SELECT 1 FROM public.task_lists t WHERE t.id = l.id AND t.user_id = l.user_id) ORDER BY l.i$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM habit.import_lists l WHERE l.user_id = p_user;
        counts := counts || jsonb_build_object('lists_inserted', n_inserted, 'lists_updated', n_updated, 'lists_total', n_total);

        UPDATE public.tasks t SET list_id = k.list_id, title = k.title, notes = k.notes, state = k.state,
                                  scheduled_date = k.scheduled_date, "position" = k."position", completed_at = k.completed_at
        FROM (SELECT * FROM habit.import_tasks WHERE user_id = p_user) k
        WHERE t.id = k.id AND t.user_id = p_user
          AND (t.list_id, t.title, t.notes, t.state, t.scheduled_date, t."position", t.completed_at)
              IS DISTINCT FROM (k.list_id, k.title, k.notes, k.state, k.scheduled_date, k."position", k.completed_at);
        GET DIAGNOSTICS n_updated = ROW_COUNT;
        EXECUTE format($insert$INSERT INTO public.tasks (id, user_id, list_id, title, notes, state, scheduled_date, "position", completed_at)
        SELECT k.id, k.user_id, k.list_id, k.title, k.notes, k.state, k.scheduled_date, k."position", k.completed_at
        FROM (SELECT * FROM habit.import_tasks WHERE user_id = %1$L) k WHERE NOT EXISTS (SELECT 1 FROM public.tasks t WHERE t.id = k.id AND t.user_id = k.user_id) ORDER BY k.i$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM habit.import_tasks k WHERE k.user_id = p_user;
        counts := counts || jsonb_build_object('tasks_inserted', n_inserted, 'tasks_updated', n_updated, 'tasks_total', n_total);
        -- Reminders (sql/0036), by id, after their habits: a reminder that moved to another
        -- time of its habit keeps its id. Merge first frees the (habit, time, days) slots the
        -- document's reminders take from the user's other reminders of that habit, which the
        -- document moves or lacks: deleted, or the unique key would refuse the move.
        DELETE FROM public.habit_reminders r
        USING (SELECT * FROM habit.import_reminders WHERE user_id = p_user) x
        WHERE r.user_id = p_user AND r.template_id = x.template_id AND r.local_time = x.local_time
          AND r.weekdays IS NOT DISTINCT FROM x.weekdays AND r.id <> x.id;
        UPDATE public.habit_reminders r SET template_id = x.template_id, local_time = x.local_time, weekdays = x.weekdays
        FROM (SELECT * FROM habit.import_reminders WHERE user_id = p_user) x
        WHERE r.user_id = p_user AND r.id = x.id
          AND (r.template_id, r.local_time, r.weekdays) IS DISTINCT FROM (x.template_id, x.local_time, x.weekdays);
        GET DIAGNOSTICS n_updated = ROW_COUNT;
        EXECUTE format($insert$INSERT INTO public.habit_reminders (id, user_id, template_id, local_time, weekdays)
        SELECT x.id, x.user_id, x.template_id, x.local_time, x.weekdays FROM (SELECT * FROM habit.import_reminders WHERE user_id = %1$L) x
        WHERE NOT EXISTS (SELECT 1 FROM public.habit_reminders r WHERE r.id = x.id AND r.user_id = x.user_id)
        ORDER BY x.i$insert$, p_user);
        GET DIAGNOSTICS n_inserted = ROW_COUNT;
        SELECT count(*) INTO n_total FROM habit.import_reminders x WHERE x.user_id = p_user;
        counts := counts || jsonb_build_object('reminders_inserted', n_inserted, 'reminders_updated', n_updated, 'reminders_total', n_total);

        -- The staged rows go with the import: no other transaction ever sees them.
        DELETE FROM habit.import_habits s WHERE s.user_id = p_user;
        DELETE FROM habit.import_periods s WHERE s.user_id = p_user;
        DELETE FROM habit.import_days s WHERE s.user_id = p_user;
        DELETE FROM habit.import_lists s WHERE s.user_id = p_user;
        DELETE FROM habit.import_tasks s WHERE s.user_id = p_user;
        DELETE FROM habit.import_checkins s WHERE s.user_id = p_user;
        DELETE FROM habit.import_notes s WHERE s.user_id = p_user;
        DELETE FROM habit.import_reminders s WHERE s.user_id = p_user;
        DELETE FROM habit.import_areas s WHERE s.user_id = p_user;
        RETURN counts;
    END
    $fn$;
COMMENT ON FUNCTION habit.import_account(uuid, jsonb, text) IS
    'Imports a checked "habit-account" v1 document for auth.uid() (merge or replace), writing only what differs; HB010 with COLUMN = JSON path and DETAIL = reason when refused (sql/0013).';

-- Importing under new ids (issue 30): an export imported into another account (moving it,
-- cloning a demo account) keeps its ids by default; ids are unique per user since sql/0027, so
-- that works too, but two accounts then share ids, which confuses a person who has both on one
-- device and answered id_conflict before 0027. With new ids the document's area, habit,
-- check-in, reminder, list and task ids are replaced, and every reference inside it (the
-- template_id of completions, skips, check-ins, notes and reminders, habits' area_id, tasks'
-- list_id) follows. Each new id is derived from the target user, the kind
-- and the old id (a version-4-shaped UUID from an MD5), so importing the same document into the
-- same account again finds the same ids and changes nothing (account.import stays retry-safe),
-- and two accounts that import it get different ids. A reference to an id the document does not
-- hold is mapped the same way, so it stays dangling and is refused as before. The document
-- carries no sync cursors or client ids (docs/protocol.md, "Accounts"): nothing of the source's
-- bookkeeping can reach the target.
CREATE OR REPLACE FUNCTION habit.account_new_id(p_user uuid, p_kind text, p_id text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT pg_catalog.overlay(pg_catalog.overlay(
               pg_catalog.md5('habit-account-import/' OPERATOR(pg_catalog.||) p_user::text OPERATOR(pg_catalog.||) '/'
                              OPERATOR(pg_catalog.||) p_kind OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||) p_id),
               '4', 13, 1), '8', 17, 1)::uuid::text
    $fn$;
COMMENT ON FUNCTION habit.account_new_id(uuid, text, text) IS
    'The id an account import with new ids gives the document''s row p_id of kind p_kind (area, habit, checkin, reminder, list, task) in p_user''s account: the same every time.';

CREATE OR REPLACE FUNCTION habit.account_document_with_new_ids(p_user uuid, p_document jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT p_document
        || jsonb_build_object(
               'areas', coalesce((SELECT jsonb_agg(a || jsonb_build_object('id', habit.account_new_id(p_user, 'area', a ->> 'id')) ORDER BY n)
                                  FROM jsonb_array_elements(p_document -> 'areas') WITH ORDINALITY AS x(a, n)), '[]'),
               'habits', coalesce((SELECT jsonb_agg(h || jsonb_build_object('id', habit.account_new_id(p_user, 'habit', h ->> 'id'))
                                                  || CASE WHEN jsonb_typeof(h -> 'area_id') = 'string'
                                                          THEN jsonb_build_object('area_id', habit.account_new_id(p_user, 'area', h ->> 'area_id'))
                                                          ELSE '{}' END ORDER BY n)
                                   FROM jsonb_array_elements(p_document -> 'habits') WITH ORDINALITY AS x(h, n)), '[]'),
               'completions', coalesce((SELECT jsonb_agg(c || jsonb_build_object('template_id', habit.account_new_id(p_user, 'habit', c ->> 'template_id')) ORDER BY n)
                                        FROM jsonb_array_elements(p_document -> 'completions') WITH ORDINALITY AS x(c, n)), '[]'),
               'skips', coalesce((SELECT jsonb_agg(k || jsonb_build_object('template_id', habit.account_new_id(p_user, 'habit', k ->> 'template_id')) ORDER BY n)
                                  FROM jsonb_array_elements(p_document -> 'skips') WITH ORDINALITY AS x(k, n)), '[]'),
               'checkins', coalesce((SELECT jsonb_agg(c || jsonb_build_object('id', habit.account_new_id(p_user, 'checkin', c ->> 'id'),
                                                                              'template_id', habit.account_new_id(p_user, 'habit', c ->> 'template_id')) ORDER BY n)
                                     FROM jsonb_array_elements(p_document -> 'checkins') WITH ORDINALITY AS x(c, n)), '[]'),
               'notes', coalesce((SELECT jsonb_agg(d || jsonb_build_object('template_id', habit.account_new_id(p_user, 'habit', d ->> 'template_id')) ORDER BY n)
                                  FROM jsonb_array_elements(p_document -> 'notes') WITH ORDINALITY AS x(d, n)), '[]'),
               'reminders', coalesce((SELECT jsonb_agg(r || jsonb_build_object('id', habit.account_new_id(p_user, 'reminder', r ->> 'id'),
                                                                               'template_id', habit.account_new_id(p_user, 'habit', r ->> 'template_id')) ORDER BY n)
                                      FROM jsonb_array_elements(p_document -> 'reminders') WITH ORDINALITY AS x(r, n)), '[]'),
               'lists', coalesce((SELECT jsonb_agg(l || jsonb_build_object('id', habit.account_new_id(p_user, 'list', l ->> 'id')) ORDER BY n)
                                  FROM jsonb_array_elements(p_document -> 'lists') WITH ORDINALITY AS x(l, n)), '[]'),
               'tasks', coalesce((SELECT jsonb_agg(t || jsonb_build_object('id', habit.account_new_id(p_user, 'task', t ->> 'id'))
                                                  || CASE WHEN jsonb_typeof(t -> 'list_id') = 'string'
                                                          THEN jsonb_build_object('list_id', habit.account_new_id(p_user, 'list', t ->> 'list_id'))
                                                          ELSE '{}' END ORDER BY n)
                                  FROM jsonb_array_elements(p_document -> 'tasks') WITH ORDINALITY AS x(t, n)), '[]'))
    $fn$;
COMMENT ON FUNCTION habit.account_document_with_new_ids(uuid, jsonb) IS
    'A habit-account document with its area, habit, check-in, reminder, list and task ids (and the references to them) replaced by habit.account_new_id for p_user: account.import with ids "new".';

-- Account deletion (issue 19) --------------------------------------------------------------
-- habit.delete_account is the one place that knows every table a user owns; account.delete
-- (the worker) and `habit account delete` (admins) call it.
--
-- What it deletes, in one transaction, with the number of rows per table:
--   public.profiles, public.habit_areas (sql/0037), public.habit_templates and what cascades
--   from them (habit_periods, habit_completions, habit_skips, habit_checkins, habit_day_notes,
--   habit_reminders, habit.reminder_firings, habit_streak_runs, habit_streak_state, habit.score_checkpoints), public.task_lists,
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
-- Who may call it: the user (request.jwt claims whose sub is p_user, as the worker runs every
-- request as authenticated), or a role acting for users: habit_admin, service_role (Supabase's
-- server-side role, which bypasses row-level security anyway), the migrator, a superuser or
-- BYPASSRLS role, or a member of one of them — the rule of habit.check_acting_for
-- (functions/sync.sql), which reads the caller's role from the role setting, as SECURITY
-- DEFINER changes current_user. SECURITY DEFINER because the derived tables (periods, streak
-- runs, weekly counts, counters, replay records) are not writable by authenticated. A refusal
-- raises 42501 (insufficient_privilege).
--
-- Cost: the user's habits are locked (FOR UPDATE, in id order) and then the user's change clock
-- row, so a concurrent write of the same user (every synced write takes the clock's lock) waits
-- for the deletion, and the counts taken under those locks, before the cascading DELETE, are the
-- rows it removes. Habits before the clock is the order of a completion or skip write (the
-- habit, then the clock for its change number) and of habit.import_account: with the clock
-- first, the deletion waited for a habit whose completion waited for the deletion's clock, and
-- one of them died with 40P01 (AccountDeletionLockOrderTests). Habits are deleted before their
-- completions, skips and periods (by the cascade), so their triggers find the habits gone and
-- keep no streaks.

CREATE OR REPLACE FUNCTION habit.delete_account(p_user uuid)
    RETURNS TABLE (table_name text, deleted bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        n_profiles bigint; n_templates bigint; n_periods bigint; n_completions bigint; n_skips bigint;
        n_runs bigint; n_state bigint; n_lists bigint; n_tasks bigint; n_weekly bigint;
        n_counters bigint; n_mutations bigint; n_checkins bigint; n_notes bigint; n_reminders bigint; n_firings bigint; n_checkpoints bigint;
        n_areas bigint;
        relocking boolean;
    BEGIN
        IF p_user IS NULL THEN
            RAISE EXCEPTION 'p_user must not be null' USING ERRCODE = 'invalid_parameter_value';
        END IF;
        PERFORM habit.check_acting_for(p_user);

        -- The habits (FOR UPDATE: the DELETE's own lock, so no writer's FOR KEY SHARE gets in
        -- between), then the clock; habit.import_account's loop: a habit made while we waited
        -- for the clock has committed once the clock is ours (its maker held the clock), so the
        -- NOWAIT statement locks it; if a writer got to it first (and now waits for our clock),
        -- the subtransaction's rollback lets the clock go and the habits are locked again.
        LOOP
            PERFORM 1 FROM public.habit_templates t WHERE t.user_id = p_user ORDER BY t.id FOR UPDATE;
            relocking := false;
            BEGIN
                PERFORM 1 FROM habit.sync_clocks c WHERE c.user_id = p_user FOR UPDATE;
                relocking := true;
                PERFORM 1 FROM public.habit_templates t WHERE t.user_id = p_user ORDER BY t.id FOR UPDATE NOWAIT;
                EXIT;
            EXCEPTION WHEN lock_not_available THEN
                -- Only the NOWAIT's: a lock_timeout while waiting for the clock is the caller's.
                IF NOT relocking THEN
                    RAISE;
                END IF;
            END;
        END LOOP;

        SELECT count(*) INTO n_periods FROM public.habit_periods WHERE user_id = p_user;
        SELECT count(*) INTO n_completions FROM public.habit_completions WHERE user_id = p_user;
        SELECT count(*) INTO n_skips FROM public.habit_skips WHERE user_id = p_user;
        SELECT count(*) INTO n_runs FROM public.habit_streak_runs WHERE user_id = p_user;
        SELECT count(*) INTO n_state FROM public.habit_streak_state WHERE user_id = p_user;
        SELECT count(*) INTO n_checkins FROM public.habit_checkins WHERE user_id = p_user;
        SELECT count(*) INTO n_notes FROM public.habit_day_notes WHERE user_id = p_user;
        SELECT count(*) INTO n_reminders FROM public.habit_reminders WHERE user_id = p_user;
        SELECT count(*) INTO n_firings FROM habit.reminder_firings WHERE user_id = p_user;
        SELECT count(*) INTO n_checkpoints FROM habit.score_checkpoints WHERE user_id = p_user;
        DELETE FROM public.habit_templates WHERE user_id = p_user;
        GET DIAGNOSTICS n_templates = ROW_COUNT;
        -- After the habits, which reference them (their trigger then finds no habit to clear).
        DELETE FROM public.habit_areas WHERE user_id = p_user;
        GET DIAGNOSTICS n_areas = ROW_COUNT;
        DELETE FROM public.tasks WHERE user_id = p_user;
        GET DIAGNOSTICS n_tasks = ROW_COUNT;
        DELETE FROM public.task_lists WHERE user_id = p_user;
        GET DIAGNOSTICS n_lists = ROW_COUNT;
        -- After the habits: the profile's delete trigger marks the user's habits for a rebuild,
        -- and there are none left.
        DELETE FROM public.profiles WHERE user_id = p_user;
        GET DIAGNOSTICS n_profiles = ROW_COUNT;
        DELETE FROM public.weekly_completion_counts WHERE user_id = p_user;
        GET DIAGNOSTICS n_weekly = ROW_COUNT;
        -- After the tables' own deletes, whose row triggers counted these down (or marked them for a recount at commit).
        DELETE FROM habit.user_row_counts WHERE user_id = p_user;
        GET DIAGNOSTICS n_counters = ROW_COUNT;
        DELETE FROM habit.sync_mutations WHERE user_id = p_user;
        GET DIAGNOSTICS n_mutations = ROW_COUNT;

        RETURN QUERY VALUES
            ('public.profiles', n_profiles),
            ('public.habit_areas', n_areas),
            ('public.habit_templates', n_templates),
            ('public.habit_periods', n_periods),
            ('public.habit_completions', n_completions),
            ('public.habit_skips', n_skips),
            ('public.habit_checkins', n_checkins),
            ('public.habit_day_notes', n_notes),
            ('public.habit_reminders', n_reminders),
            ('habit.reminder_firings', n_firings),
            ('public.habit_streak_runs', n_runs),
            ('public.habit_streak_state', n_state),
            ('habit.score_checkpoints', n_checkpoints),
            ('public.task_lists', n_lists),
            ('public.tasks', n_tasks),
            ('public.weekly_completion_counts', n_weekly),
            ('habit.user_row_counts', n_counters),
            ('habit.sync_mutations', n_mutations);
    END
    $fn$;
COMMENT ON FUNCTION habit.delete_account(uuid) IS
    'Deletes every row p_user owns (one row per table with the count), leaving the sync clock and content-free tombstones; for the user (sub = p_user) or a role acting for users (habit.check_acting_for). sql/0014.';
