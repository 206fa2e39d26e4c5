-- 0025 (issue 31, item 9): change notifications name no user.
--
-- habit.next_change_seq, habit.sync_stamp and habit.sync_reset sent
-- NOTIFY habit_changes, '<user> <seq>'. PostgreSQL has no privilege on LISTEN or NOTIFY: any
-- role that can connect could LISTEN and see every user's id each time they wrote, and could
-- pg_notify('habit_changes', '<V> 999999999') so that the worker told V's devices about a
-- change that never happened, with a forged cursor. Now the payload is the user's notification
-- token, a random uuid kept on the user's clock row (row-level security shows it to that user
-- only; no other role but the owner, admins and service_role reads it), and nothing else. The
-- writers read it in the RETURNING of the upsert they already make, so the write path costs
-- no extra statement. The worker learns the tokens of the users it subscribes
-- (habit.change_token, as each user) and, on a notification, reads the user's clock itself
-- before it writes anything (docs/protocol.md, "Change notifications").
--
-- ADD COLUMN with a volatile default gives every existing clock its own token (the table is
-- rewritten: one row per user who ever wrote).
ALTER TABLE habit.sync_clocks ADD COLUMN notify_token uuid NOT NULL DEFAULT gen_random_uuid();
COMMENT ON COLUMN habit.sync_clocks.notify_token IS
    'The payload of the user''s habit_changes notifications: random, never the user id; read by the worker through habit.change_token (sql/0025).';
COMMENT ON TABLE habit.sync_clocks IS
    'Per-user change clock (sql/0012): written only by habit.next_change_seq, habit.sync_stamp, habit.sync_tombstone, habit.trim_tombstones, habit.lock_user_writes, habit.change_token, habit.prune_sync and habit.sync_reset.';
