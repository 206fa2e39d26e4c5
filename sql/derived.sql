-- Derived state brought up to date after migrating: habits whose streaks are pending (a
-- migration that counts them by new rules marks them, sql/migrations/0018_lean_core.sql; a
-- bulk load with the triggers off leaves habits without a state row, which their first
-- write marks) are rebuilt from their events (habit.rebuild_pending_streaks,
-- functions/streaks.sql). Nothing to do: nothing done.
--
-- Current-state file, applied after grants.sql whenever it changes or a versioned migration
-- ran (docs/schema.md, "Migrations"): a versioned migration cannot call the functions, which
-- are applied after it.
SELECT habit.rebuild_pending_streaks();
