-- 0035 (issue 33, item 2): archive. An archived habit is gone from the day's views (day.get,
-- habits.stats' list, stats.calendar of all habits) and from habits.list's default view; its
-- periods, completions, check-ins, streaks, sync and export stay as they are, and unarchiving
-- brings it back unchanged. Unlike deactivating (is_active false), archiving does not close the
-- habit's period: the days while archived are not inactive days, only hidden.
--
-- Order (habits.move) needs no column: habit_templates.sort_order already orders the daily
-- list; habit.move_habit (functions/habits.sql) writes it.
ALTER TABLE public.habit_templates ADD COLUMN archived_at timestamptz;
COMMENT ON COLUMN public.habit_templates.archived_at IS
    'When the habit was archived (habits.archive); NULL while not. An archived habit is hidden from day.get, habits.list''s default view and the list forms of habits.stats and stats.calendar; its history, streaks, sync and export are kept (sql/0035).';

ALTER TABLE habit.import_habits ADD COLUMN archived_at timestamptz;
COMMENT ON COLUMN habit.import_habits.archived_at IS 'The document habit''s archived_at (sql/0035).';
