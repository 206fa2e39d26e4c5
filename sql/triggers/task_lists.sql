-- The triggers of public.task_lists.
--
-- Current-state file: every trigger of the table as it is now, applied again by `habit migrate`
-- whenever this file changes (docs/schema.md, "Migrations"). Removing a trigger needs a DROP
-- TRIGGER in a versioned migration. Among a table's triggers of one timing and event,
-- PostgreSQL fires them in name order.

-- updated_at (functions/rows.sql).
CREATE OR REPLACE TRIGGER task_lists_touch_updated_at BEFORE UPDATE ON public.task_lists
    FOR EACH ROW EXECUTE FUNCTION habit.touch_updated_at();

-- Row limits (functions/rows.sql): one counter update per user and statement, from the
-- statement's transition table; a moved row (an admin changing user_id) moves its count.
CREATE OR REPLACE TRIGGER task_lists_count_inserted AFTER INSERT ON public.task_lists
    REFERENCING NEW TABLE AS inserted_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.count_inserted_rows();
CREATE OR REPLACE TRIGGER task_lists_count_deleted AFTER DELETE ON public.task_lists
    REFERENCING OLD TABLE AS deleted_rows FOR EACH STATEMENT EXECUTE FUNCTION habit.count_deleted_rows();
CREATE OR REPLACE TRIGGER task_lists_count_moved AFTER UPDATE OF user_id ON public.task_lists
    FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION habit.count_moved_row();
CREATE OR REPLACE TRIGGER task_lists_count_truncated AFTER TRUNCATE ON public.task_lists
    FOR EACH STATEMENT EXECUTE FUNCTION habit.count_truncated_rows();

-- Sync (functions/sync.sql), kind 'lists': the change number on every write, a tombstone for
-- a deleted row or a moved key.
CREATE OR REPLACE TRIGGER task_lists_sync_change_seq BEFORE INSERT OR UPDATE ON public.task_lists
    FOR EACH ROW EXECUTE FUNCTION habit.sync_stamp_row('lists');
CREATE OR REPLACE TRIGGER task_lists_sync_tombstone AFTER DELETE ON public.task_lists
    FOR EACH ROW EXECUTE FUNCTION habit.sync_record_deletion('lists');
CREATE OR REPLACE TRIGGER task_lists_sync_moved_key AFTER UPDATE OF user_id, id ON public.task_lists
    FOR EACH ROW WHEN ((OLD.user_id, OLD.id) IS DISTINCT FROM (NEW.user_id, NEW.id))
    EXECUTE FUNCTION habit.sync_record_deletion('lists');
