-- 0024 (issue 31, item 4): a user keeps at most 10,000 tombstones.
--
-- Tombstones were pruned by age only (--sync-retention-days): three rounds of inserting and
-- deleting 20,000 tasks left 60,000 of them (14 MB) while the user had no task. Now each
-- user's clock row counts the tombstones recorded since it last counted them exactly, and
-- habit.sync_tombstone trims the user's oldest when the count passes 10,000, keeping the
-- newest 9,000 (so a trim, which counts and deletes, runs at most once per 1,000 deletions);
-- a bulk delete (more than 8 tombstones of a user in one transaction) stops counting row by
-- row — each update of the clock row would leave a version the next has to pass — and is
-- counted, and trimmed, once at commit by a deferred trigger (triggers/sync_clocks.sql),
-- and raises pruned_through past them: a device whose cursor is older than the newest
-- dropped tombstone answers -32017 cursor_expired and pulls everything again, as after the
-- age prune, so a deletion is never lost silently. The cap is per user, all tables together,
-- so no table of a user ever holds more than 10,000. The functions are in
-- functions/sync.sql; here the column, counted exactly for the rows already there (a user
-- already past the cap is trimmed at their next deletion).
ALTER TABLE habit.sync_clocks ADD COLUMN tombstones integer NOT NULL DEFAULT 0
    CONSTRAINT sync_clocks_tombstones_check CHECK (tombstones >= 0),
    ADD COLUMN tombstones_xact xid8,
    ADD COLUMN tombstones_writes integer NOT NULL DEFAULT 0,
    ADD COLUMN tombstones_pending boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN habit.sync_clocks.tombstones_xact IS 'The transaction that last counted a tombstone here.';
COMMENT ON COLUMN habit.sync_clocks.tombstones_writes IS 'How many tombstones tombstones_xact counted here: past 8 (a bulk delete) the count waits for commit.';
COMMENT ON COLUMN habit.sync_clocks.tombstones_pending IS 'A bulk delete''s tombstones are counted, and trimmed past the cap, at commit (sync_clocks_recount).';
COMMENT ON COLUMN habit.sync_clocks.tombstones IS
    'Tombstones of the user recorded since they were last counted exactly: at least as many as there are, within what resurrected keys removed (habit.sync_tombstone trims past 10,000; sql/0024).';

UPDATE habit.sync_clocks c SET tombstones = t.n
FROM (SELECT user_id, count(*)::integer AS n FROM habit.sync_tombstones GROUP BY user_id) t
WHERE c.user_id = t.user_id;
COMMENT ON TABLE habit.sync_clocks IS
    'Per-user change clock (sql/0012): written only by habit.next_change_seq, habit.sync_stamp, habit.sync_tombstone, habit.trim_tombstones, habit.lock_user_writes, habit.prune_sync and habit.sync_reset.';
