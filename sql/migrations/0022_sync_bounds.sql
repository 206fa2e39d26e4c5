-- 0022 (issue 31, items 2 and 3): sync.push keeps bounded replay records.
--
-- A push could carry reads (tasks.list, account.export…), and each answer was kept as a replay
-- record for the retention: 20 tasks.list of a large account left 137 MB in
-- habit.sync_mutations. The worker now refuses reads in a push (-32019 method_not_allowed), and:
--
-- - a record's outcome is at most 65,536 bytes of jsonb text (sync_mutations_outcome_size;
--   every write's result fits, the worker records a larger one as -32014 response_too_large
--   and rolls its effect back);
-- - per user, habit.prune_replay_records (sql/functions/sync.sql) keeps the newest 10,000
--   records and 16 MiB of outcomes after each push, deleting the oldest first.
--
-- Records kept from before, larger than the new bound, are the answers of reads (no write
-- answers that much): they are deleted here, as the retention would have deleted them later.
-- A device that pushes such a mutation id again is refused as a read.
DELETE FROM habit.sync_mutations WHERE octet_length(outcome::text) > 65536;

ALTER TABLE habit.sync_mutations
    ADD CONSTRAINT sync_mutations_outcome_size CHECK (octet_length(outcome::text) <= 65536);

-- The per-user cap walks a user's records newest first.
CREATE INDEX sync_mutations_user_created_idx ON habit.sync_mutations (user_id, created_at);

COMMENT ON COLUMN habit.sync_mutations.outcome IS
    'NULL while claimed; then {"result": …} or {"error": {"code", "message", "data"}}, at most 65,536 bytes as text (0022).';
COMMENT ON COLUMN habit.sync_mutations.created_at IS
    'When it was claimed; prune_sync drops it after the retention, prune_replay_records past the per-user caps.';
