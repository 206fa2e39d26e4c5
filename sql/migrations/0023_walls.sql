-- 0023 (issue 31, items 5, 6, 9, 11): walls around what a user's role may touch.
--
-- Item 5: habit.sync_mutations (sync.push's replay records) is written only through
-- habit.sync_mutation_claim and habit.sync_mutation_record (functions/sync.sql); authenticated
-- loses INSERT and UPDATE (grants.sql) and the two policies that let it write its own rows go.
DROP POLICY IF EXISTS sync_mutations_insert_own ON habit.sync_mutations;
DROP POLICY IF EXISTS sync_mutations_update_own ON habit.sync_mutations;
