-- The triggers of public.habit_skips.
--
-- Current-state file: every trigger of the table as it is now, applied again by `habit migrate`
-- whenever this file changes (docs/schema.md, "Migrations"). Removing a trigger needs a DROP
-- TRIGGER in a versioned migration. Among a table's triggers of one timing and event,
-- PostgreSQL fires them in name order.

-- The rules of completing and skipping, for every writer (functions/history.sql): HB003
-- future_date, HB004 habit_not_active, HB005 done_and_skipped.
CREATE OR REPLACE TRIGGER habit_skips_rules BEFORE INSERT OR UPDATE OF user_id, template_id, skipped_date
    ON public.habit_skips FOR EACH ROW EXECUTE FUNCTION habit.check_skip();

-- Streaks (functions/streaks.sql): one rebuild per habit and statement, from the earliest day
-- the statement touched (the argument: that day's expression over a changed row r).
CREATE OR REPLACE TRIGGER habit_skips_streaks_insert AFTER INSERT ON public.habit_skips
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_rows('r.skipped_date');
CREATE OR REPLACE TRIGGER habit_skips_streaks_update AFTER UPDATE ON public.habit_skips
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_rows('r.skipped_date');
CREATE OR REPLACE TRIGGER habit_skips_streaks_delete AFTER DELETE ON public.habit_skips
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_rows('r.skipped_date');

-- Sync (functions/sync.sql), kind 'skips', key '<template_id>/<YYYY-MM-DD>': the change
-- number on every write, a tombstone for a deleted row or a moved key. habit_skips_sync_change_seq
-- sorts after habit_skips_rules: it stamps the row the rules let through.
CREATE OR REPLACE TRIGGER habit_skips_sync_change_seq BEFORE INSERT OR UPDATE ON public.habit_skips
    FOR EACH ROW EXECUTE FUNCTION habit.sync_stamp_row('skips');
CREATE OR REPLACE TRIGGER habit_skips_sync_tombstone AFTER DELETE ON public.habit_skips
    FOR EACH ROW EXECUTE FUNCTION habit.sync_record_deletion('skips');
CREATE OR REPLACE TRIGGER habit_skips_sync_moved_key AFTER UPDATE OF user_id, template_id, skipped_date ON public.habit_skips
    FOR EACH ROW WHEN ((OLD.user_id, OLD.template_id, OLD.skipped_date) IS DISTINCT FROM (NEW.user_id, NEW.template_id, NEW.skipped_date))
    EXECUTE FUNCTION habit.sync_record_deletion('skips');

-- Incremental weekly counts (functions/weekly_counts.sql): a row on D marks D − 6 … D + 6,
-- its week in either convention and every run week overlapping the user's week of D, whose
-- times_per_week target the row may meet or unmeet.
CREATE OR REPLACE TRIGGER habit_skips_weekly_counts_insert AFTER INSERT ON public.habit_skips
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange(r.skipped_date - 6, r.skipped_date + 7, ''[)'')');
CREATE OR REPLACE TRIGGER habit_skips_weekly_counts_update AFTER UPDATE ON public.habit_skips
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange(r.skipped_date - 6, r.skipped_date + 7, ''[)'')');
CREATE OR REPLACE TRIGGER habit_skips_weekly_counts_delete AFTER DELETE ON public.habit_skips
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange(r.skipped_date - 6, r.skipped_date + 7, ''[)'')');
