-- The trigger of habit.sync_clocks (written only by the sync functions of functions/sync.sql):
-- a bulk delete's tombstones (more than 8 of a user in one transaction) are counted once, at
-- commit, and trimmed past the cap (sql/0024).
--
-- Current-state file (docs/schema.md, "Migrations"). A constraint trigger has no CREATE OR
-- REPLACE: it is dropped and made again.

DROP TRIGGER IF EXISTS sync_clocks_recount ON habit.sync_clocks;
CREATE CONSTRAINT TRIGGER sync_clocks_recount AFTER INSERT OR UPDATE ON habit.sync_clocks
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.tombstones_pending) EXECUTE FUNCTION habit.sync_clocks_recount();
