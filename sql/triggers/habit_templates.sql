-- The triggers of public.habit_templates.
--
-- Current-state file: every trigger of the table as it is now, applied again by `habit migrate`
-- whenever this file changes (docs/schema.md, "Migrations"). Removing a trigger needs a DROP
-- TRIGGER in a versioned migration. Among a table's triggers of one timing and event,
-- PostgreSQL fires them in name order.

-- updated_at (functions/rows.sql).
CREATE OR REPLACE TRIGGER habit_templates_touch_updated_at BEFORE UPDATE ON public.habit_templates
    FOR EACH ROW EXECUTE FUNCTION habit.touch_updated_at();

-- Row limits (functions/rows.sql): one counter update per user and statement, from the
-- statement's transition table; a moved row (an admin changing user_id) moves its count.
CREATE OR REPLACE TRIGGER habit_templates_count_inserted AFTER INSERT ON public.habit_templates
    REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.count_inserted_rows();
CREATE OR REPLACE TRIGGER habit_templates_count_deleted AFTER DELETE ON public.habit_templates
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.count_deleted_rows();
CREATE OR REPLACE TRIGGER habit_templates_count_moved AFTER UPDATE OF user_id ON public.habit_templates
    FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION habit.count_moved_row();
CREATE OR REPLACE TRIGGER habit_templates_count_truncated AFTER TRUNCATE ON public.habit_templates
    FOR EACH STATEMENT EXECUTE FUNCTION habit.count_truncated_rows();

-- History (functions/history.sql): the seed's columns write the periods. An inserted habit
-- gets its first period; a change of is_active or schedule closes and opens periods at now().
CREATE OR REPLACE TRIGGER habit_templates_first_period AFTER INSERT ON public.habit_templates
    FOR EACH ROW EXECUTE FUNCTION habit.open_first_period();
CREATE OR REPLACE TRIGGER habit_templates_history BEFORE UPDATE OF is_active, schedule ON public.habit_templates
    FOR EACH ROW WHEN (OLD.is_active IS DISTINCT FROM NEW.is_active OR OLD.schedule IS DISTINCT FROM NEW.schedule)
    EXECUTE FUNCTION habit.follow_activity();

-- Streaks (functions/streaks.sql): a habit's schedule decides its unit, so a changed schedule
-- (or owner) rebuilds the habit (the periods' trigger ran before the row changed, with the
-- old unit).
CREATE OR REPLACE TRIGGER habit_templates_streaks_update AFTER UPDATE ON public.habit_templates
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.streaks_after_templates();

-- Sync (functions/sync.sql), kind 'habits': the change number on every write, a tombstone for
-- a deleted row or a moved key. habit_templates_sync_change_seq sorts after
-- habit_templates_history: it stamps the row the history trigger leaves.
CREATE OR REPLACE TRIGGER habit_templates_sync_change_seq BEFORE INSERT OR UPDATE ON public.habit_templates
    FOR EACH ROW EXECUTE FUNCTION habit.sync_stamp_row('habits');
CREATE OR REPLACE TRIGGER habit_templates_sync_tombstone AFTER DELETE ON public.habit_templates
    FOR EACH ROW EXECUTE FUNCTION habit.sync_record_deletion('habits');
CREATE OR REPLACE TRIGGER habit_templates_sync_moved_key AFTER UPDATE OF user_id, id ON public.habit_templates
    FOR EACH ROW WHEN ((OLD.user_id, OLD.id) IS DISTINCT FROM (NEW.user_id, NEW.id))
    EXECUTE FUNCTION habit.sync_record_deletion('habits');

-- Incremental weekly counts (functions/weekly_counts.sql): a habit inserted or deleted marks
-- its whole user. Updates change its periods (which mark), or nothing the counts read.
CREATE OR REPLACE TRIGGER habit_templates_weekly_counts_insert AFTER INSERT ON public.habit_templates
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('''(,)''::daterange');
CREATE OR REPLACE TRIGGER habit_templates_weekly_counts_delete AFTER DELETE ON public.habit_templates
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION habit.weekly_counts_after_rows('''(,)''::daterange');
