-- The triggers of public.habit_periods. Periods are written only by the triggers of
-- habit_templates and by habit.import_account (functions/history.sql, accounts.sql).
--
-- Current-state file: every trigger of the table as it is now, applied again by `habit migrate`
-- whenever this file changes (docs/schema.md, "Migrations"). Removing a trigger needs a DROP
-- TRIGGER in a versioned migration. Among a table's triggers of one timing and event,
-- PostgreSQL fires them in name order.

-- Streaks (functions/streaks.sql): from the earliest local day a changed period (old or new)
-- may change (habit.streak_period_day).
CREATE OR REPLACE TRIGGER habit_periods_streaks_insert AFTER INSERT ON public.habit_periods
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.streaks_after_rows('habit.streak_period_day(r.user_id, r.started_at, r.ended_at)');
CREATE OR REPLACE TRIGGER habit_periods_streaks_update AFTER UPDATE ON public.habit_periods
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.streaks_after_rows('habit.streak_period_day(r.user_id, r.started_at, r.ended_at)');
CREATE OR REPLACE TRIGGER habit_periods_streaks_delete AFTER DELETE ON public.habit_periods
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.streaks_after_rows('habit.streak_period_day(r.user_id, r.started_at, r.ended_at)');

-- Sync (functions/sync.sql), kind 'periods': the change number on every write, a tombstone for
-- a deleted row or a moved key.
CREATE OR REPLACE TRIGGER habit_periods_sync_change_seq BEFORE INSERT OR UPDATE ON public.habit_periods
    FOR EACH ROW EXECUTE FUNCTION habit.sync_stamp_row('periods');
CREATE OR REPLACE TRIGGER habit_periods_sync_tombstone AFTER DELETE ON public.habit_periods
    FOR EACH ROW EXECUTE FUNCTION habit.sync_record_deletion('periods');
CREATE OR REPLACE TRIGGER habit_periods_sync_moved_key AFTER UPDATE OF user_id, id ON public.habit_periods
    FOR EACH ROW WHEN ((OLD.user_id, OLD.id) IS DISTINCT FROM (NEW.user_id, NEW.id))
    EXECUTE FUNCTION habit.sync_record_deletion('periods');

-- Incremental weekly counts (functions/weekly_counts.sql): from the UTC date of started_at − 2
-- (a local date is within a day of the UTC date) to that of ended_at + 3 (period_on_days ends
-- at L + 2 at most), unbounded when open: its on-days and due days, and those of the earlier
-- periods it cuts.
CREATE OR REPLACE TRIGGER habit_periods_weekly_counts_insert AFTER INSERT ON public.habit_periods
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange((r.started_at AT TIME ZONE ''UTC'')::date - 2, (r.ended_at AT TIME ZONE ''UTC'')::date + 3, ''[)'')');
CREATE OR REPLACE TRIGGER habit_periods_weekly_counts_update AFTER UPDATE ON public.habit_periods
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange((r.started_at AT TIME ZONE ''UTC'')::date - 2, (r.ended_at AT TIME ZONE ''UTC'')::date + 3, ''[)'')');
CREATE OR REPLACE TRIGGER habit_periods_weekly_counts_delete AFTER DELETE ON public.habit_periods
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('daterange((r.started_at AT TIME ZONE ''UTC'')::date - 2, (r.ended_at AT TIME ZONE ''UTC'')::date + 3, ''[)'')');
