-- The triggers of public.habit_completions.
--
-- Current-state file: every trigger of the table as it is now, applied again by `habit migrate`
-- whenever this file changes (docs/schema.md, "Migrations"). Removing a trigger needs a DROP
-- TRIGGER in a versioned migration. Among a table's triggers of one timing and event,
-- PostgreSQL fires them in name order.

-- The rules of completing and skipping, for every writer (functions/history.sql): HB003
-- future_date, HB004 habit_not_active, HB005 done_and_skipped.
CREATE OR REPLACE TRIGGER habit_completions_rules BEFORE INSERT OR UPDATE OF user_id, template_id, completed_date
    ON public.habit_completions FOR EACH ROW EXECUTE FUNCTION habit.check_completion();

-- Streaks (functions/streaks.sql): one rebuild per habit and statement, from the earliest day
-- the statement touched (the argument: that day's expression over a changed row r).
CREATE OR REPLACE TRIGGER habit_completions_streaks_insert AFTER INSERT ON public.habit_completions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_rows('r.completed_date');
CREATE OR REPLACE TRIGGER habit_completions_streaks_update AFTER UPDATE ON public.habit_completions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_rows('r.completed_date');
CREATE OR REPLACE TRIGGER habit_completions_streaks_delete AFTER DELETE ON public.habit_completions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_rows('r.completed_date');

-- Sync (functions/sync.sql), kind 'completions', key '<template_id>/<YYYY-MM-DD>': the change
-- number on every write, a tombstone for a deleted row or a moved key. habit_completions_sync_change_seq
-- sorts after habit_completions_rules: it stamps the row the rules let through.
CREATE OR REPLACE TRIGGER habit_completions_sync_change_seq BEFORE INSERT OR UPDATE ON public.habit_completions
    FOR EACH ROW EXECUTE FUNCTION habit.sync_stamp_row('completions');
CREATE OR REPLACE TRIGGER habit_completions_sync_tombstone AFTER DELETE ON public.habit_completions
    FOR EACH ROW EXECUTE FUNCTION habit.sync_record_deletion('completions');
CREATE OR REPLACE TRIGGER habit_completions_sync_moved_key AFTER UPDATE OF user_id, template_id, completed_date ON public.habit_completions
    FOR EACH ROW WHEN ((OLD.user_id, OLD.template_id, OLD.completed_date) IS DISTINCT FROM (NEW.user_id, NEW.template_id, NEW.completed_date))
    EXECUTE FUNCTION habit.sync_record_deletion('completions');

-- Incremental weekly counts (functions/weekly_counts.sql): a row on D marks D − 6 … D + 6,
-- its week in either convention and every run week overlapping the user's week of D, whose
-- times_per_week target the row may meet or unmeet.
CREATE OR REPLACE TRIGGER habit_completions_weekly_counts_insert AFTER INSERT ON public.habit_completions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange(r.completed_date - 6, r.completed_date + 7, ''[)'')');
CREATE OR REPLACE TRIGGER habit_completions_weekly_counts_update AFTER UPDATE ON public.habit_completions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange(r.completed_date - 6, r.completed_date + 7, ''[)'')');
CREATE OR REPLACE TRIGGER habit_completions_weekly_counts_delete AFTER DELETE ON public.habit_completions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange(r.completed_date - 6, r.completed_date + 7, ''[)'')');
