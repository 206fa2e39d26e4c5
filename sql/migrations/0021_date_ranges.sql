-- 0021 (issue 31, finding 1 "Spans"): written dates and instants start at 1970-01-01.
--
-- A habit activated in 1880 made its writers and readers walk 146 years of days; a completion
-- in 1881 likewise. Every writer (the worker, Supabase, psql, an account import, an admin's
-- backfill) now meets the same floor in the tables' BEFORE triggers (current-state files):
--   habit_completions.completed_date, habit_skips.skipped_date   >= habit.earliest_day()
--       (habit.check_day, sql/functions/history.sql)
--   habit_templates.activated_at, habit_periods.started_at       >= habit.earliest_day() 00:00 UTC
--       (sql/triggers/habit_templates.sql, sql/triggers/habit_periods.sql)
-- raising 23514 (check_violation) with CONSTRAINT habit_completions_date_range,
-- habit_skips_date_range, habit_templates_activated_at_range or habit_periods_started_at_range
-- and COLUMN the column, which the worker answers -32602 `out_of_range` naming the field
-- (Sources/HabitStore/StoreError.swift). The upper bounds stay the user's today rules the
-- triggers already keep (HB003 future_date: a completion after today, a skip after today +
-- 366 days); "today" is not immutable, so no CHECK constraint could hold them.
--
-- Why triggers and not CHECK constraints: rows written before this migration may lie before
-- 1970 (an import, a backfill). A CHECK constraint, even added NOT VALID, is checked on every
-- later UPDATE of such a row — a rename, or the deactivation that closes its period — and
-- would make those rows read-only; validating it would make this migration fail. The
-- triggers check a date only when it is written or changed, so older rows are kept as they
-- are and stay editable, and this migration touches no row. Admins find them with
--   SELECT user_id, id, activated_at FROM public.habit_templates WHERE activated_at < '1970-01-01 00:00+00';
--   SELECT user_id, template_id, completed_date FROM public.habit_completions WHERE completed_date < '1970-01-01';
--
-- The bound is one function, habit.earliest_day() (sql/functions/history.sql), which the
-- triggers and habit.import_account call: a current-state file like them, so a database
-- migrated to any earlier version can run today's functions (the migrations' tests do).
-- Changing it changes which rows may be written: a change to review like a migration.

COMMENT ON COLUMN public.habit_completions.completed_date IS
    'The calendar date completed, in the user''s time zone (a date, never shifted): from 1970-01-01 to the user''s today (the triggers, sql/0021).';
COMMENT ON COLUMN public.habit_skips.skipped_date IS
    'The calendar date skipped, in the user''s time zone: from 1970-01-01 to the user''s today + 366 days (the triggers, sql/0021).';
COMMENT ON COLUMN public.habit_templates.activated_at IS
    'Start of the habit''s first period (habit_periods): from 1970-01-01 00:00 UTC when written (the triggers, sql/0021).';
COMMENT ON COLUMN public.habit_periods.started_at IS 'Start (inclusive): from 1970-01-01 00:00 UTC when written (the triggers, sql/0021).';
