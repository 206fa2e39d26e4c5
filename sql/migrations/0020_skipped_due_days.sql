-- 0020 (issue 30, item 7): a skipped habit-day counts only where the habit was due.
--
-- week.counts' `skipped` and the batch's skipped_habit_days counted every skip on a day its
-- habit was on, due or not, so a holiday (skips.set_range skips every habit on) could report
-- more skipped than due (one day: due 1, skipped 3). They now count the skipped due
-- habit-days, what the completion rate already subtracted and habit.stats_calendar counts:
-- a skip on a day the schedule does not ask for excuses nothing. The definitions are in the
-- current-state files (functions/weekly_counts.sql, the repository's week.counts statement).
--
-- Stored weekly counts were computed by the old definition. An incremental run
-- (`habit weekly-counts --store --incremental`) recomputes only the weeks changed since its
-- last run, so each convention it keeps forgets the weeks it covered: its next run computes
-- its whole range anew, as a first run does. Rows of weeks outside every later run keep the
-- old count until a run over them (`habit weekly-counts --store --from … --to …`) stores them
-- again (docs/admin.md).
UPDATE habit.weekly_counts_state SET covered = 'empty' WHERE NOT isempty(covered);

COMMENT ON COLUMN public.weekly_completion_counts.skipped_habit_days IS
    'Of due_habit_days, the skipped ones (habit_skips on a due day; since 0020, before: every skip on a day the habit was on).';
