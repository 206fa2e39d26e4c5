-- The trigger of habit.user_row_counts (written only by the row-limit bookkeeping of
-- functions/rows.sql): a counter marked pending (more than 8 counts in one transaction) is
-- counted once, at commit, which then enforces the limit.
--
-- Current-state file (docs/schema.md, "Migrations"). A constraint trigger has no CREATE OR
-- REPLACE: it is dropped and made again.

DROP TRIGGER IF EXISTS user_row_counts_recount ON habit.user_row_counts;
CREATE CONSTRAINT TRIGGER user_row_counts_recount AFTER INSERT OR UPDATE ON habit.user_row_counts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.pending) EXECUTE FUNCTION habit.user_row_counts_recount();
