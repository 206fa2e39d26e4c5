-- The triggers of public.profiles.
--
-- Current-state file: every trigger of the table as it is now, applied again by `habit migrate`
-- whenever this file changes (docs/schema.md, "Migrations"). Removing a trigger needs a DROP
-- TRIGGER in a versioned migration. Among a table's triggers of one timing and event,
-- PostgreSQL fires them in name order.

-- updated_at (functions/rows.sql).
CREATE OR REPLACE TRIGGER profiles_touch_updated_at BEFORE UPDATE ON public.profiles
    FOR EACH ROW EXECUTE FUNCTION habit.touch_updated_at();

-- Streaks (functions/streaks.sql): the user's zone and week decide every local date and week,
-- so a changed (inserted, deleted) profile rebuilds all the user's habits.
CREATE OR REPLACE TRIGGER profiles_streaks_insert AFTER INSERT ON public.profiles
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_profiles();
CREATE OR REPLACE TRIGGER profiles_streaks_update AFTER UPDATE ON public.profiles
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_profiles();
CREATE OR REPLACE TRIGGER profiles_streaks_delete AFTER DELETE ON public.profiles
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_profiles();

-- Sync (functions/sync.sql), kind 'profile': the change number on every write, a tombstone
-- for a deleted row or a moved key.
CREATE OR REPLACE TRIGGER profiles_sync_change_seq BEFORE INSERT OR UPDATE ON public.profiles
    FOR EACH ROW EXECUTE FUNCTION habit.sync_stamp_row('profile');
CREATE OR REPLACE TRIGGER profiles_sync_tombstone AFTER DELETE ON public.profiles
    FOR EACH ROW EXECUTE FUNCTION habit.sync_record_deletion('profile');
CREATE OR REPLACE TRIGGER profiles_sync_moved_key AFTER UPDATE OF user_id ON public.profiles
    FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id)
    EXECUTE FUNCTION habit.sync_record_deletion('profile');

-- Incremental weekly counts (functions/weekly_counts.sql): a profile inserted or deleted
-- marks its whole user; an update only when the zone or the week changed.
CREATE OR REPLACE TRIGGER profiles_weekly_counts_insert AFTER INSERT ON public.profiles
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('''(,)''::daterange');
CREATE OR REPLACE TRIGGER profiles_weekly_counts_delete AFTER DELETE ON public.profiles
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('''(,)''::daterange');
CREATE OR REPLACE TRIGGER profiles_weekly_counts_update AFTER UPDATE ON public.profiles
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_profiles_update();
