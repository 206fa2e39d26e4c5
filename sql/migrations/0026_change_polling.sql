-- 0026 (issue 34, item 2): change notifications off the write path.
--
-- Until now each write's first change number sent NOTIFY habit_changes (habit.next_change_seq,
-- habit.sync_stamp, habit.sync_reset). PostgreSQL serialises NOTIFY: at commit the transaction
-- takes a cluster-wide lock on the notification queue and holds it until it ends, which under
-- synchronous replication includes the wait for the standby, so every writer of every user
-- queued behind one standby round trip. A trigger on a Citus worker node cannot reach a
-- listener on the coordinator either. The writers now send nothing (sql/functions/sync.sql);
-- the worker polls the clocks of the users it subscribed by their notification tokens
-- (habit.changed_clocks), one statement per poll for all of them, which this index serves. A
-- token never changes, so the index does not stop the clock's updates from being HOT. Not
-- unique: a unique key must carry user_id on a table sharded by it (docs/scaling.md), and
-- random tokens need no constraint (two equal ones would only make the worker read one clock
-- more).
CREATE INDEX habit_sync_clocks_notify_token_idx ON habit.sync_clocks (notify_token);
COMMENT ON COLUMN habit.sync_clocks.notify_token IS
    'The user''s notification token: random, never the user id; handed to the user''s own role by habit.change_token, the key of the worker''s poll (habit.changed_clocks) (sql/0025, sql/0026).';
