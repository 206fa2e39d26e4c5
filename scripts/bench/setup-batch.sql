-- Data for scripts/bench-batch-10m.sh (issue 34 item 4): the shape of `habit dev seed` (the
-- same ids, md5('seed-user-u') and md5('seed-habit-u-h'), users in five time zones, :habits
-- daily habits each activated the day before :start) loaded the lean core's bulk way. One
-- phase per call (:phase), for the users u with u % :jobs = :part, so that the caller can run
-- :jobs sessions side by side:
--   users        profiles and habits as the owner, every trigger on (they are few: the
--                triggers open each habit's period, streak state, counters and sync clock);
--   completions  each habit's days [:start, :start + :days) done when a hash of (u, h, day)
--                falls under :rate (deterministic: the same rows whatever :jobs), inserted
--                with session_replication_role = replica (no triggers);
--   rebuild      the repair of a trigger-less load (docs/admin.md, "Streaks follow by
--                themselves"): habit.rebuild_all_streaks() when :jobs = 1; with several
--                sessions each rebuilds its share of the habits with habit.streak_rebuild,
--                which is what rebuild_all_streaks calls for every habit.
-- Not repaired: sync numbers (the loaded completions keep change_seq 0 and no device has a
-- cursor on a fresh database; on a live one habit.sync_reset of the loaded users) and the
-- weekly-count marks (no incremental run has started tracking yet).
\set ON_ERROR_STOP on
SELECT :'phase' = 'users' AS is_users, :'phase' = 'completions' AS is_completions,
       :'phase' = 'rebuild' AS is_rebuild, :jobs = 1 AS one_job \gset

\if :is_users
BEGIN;
INSERT INTO public.profiles (user_id, timezone)
SELECT md5('seed-user-' || u)::uuid,
       (ARRAY['UTC', 'America/Los_Angeles', 'Europe/Berlin', 'Asia/Tokyo', 'Pacific/Auckland'])[1 + u % 5]
FROM generate_series(1, :users) AS u WHERE u % :jobs = :part;
INSERT INTO public.habit_templates (id, user_id, name, icon, color, activated_at, sort_order)
SELECT md5('seed-habit-' || u || '-' || h)::uuid, md5('seed-user-' || u)::uuid, 'Habit ' || h, 'star.fill', '#3366FF',
       (:'start'::date - 1)::timestamp AT TIME ZONE 'UTC', h
FROM generate_series(1, :users) AS u, generate_series(1, :habits) AS h WHERE u % :jobs = :part;
COMMIT;
\elif :is_completions
BEGIN;
SET LOCAL session_replication_role = replica;
INSERT INTO public.habit_completions (user_id, template_id, completed_date)
SELECT md5('seed-user-' || u)::uuid, md5('seed-habit-' || u || '-' || h)::uuid, :'start'::date + d
FROM generate_series(1, :users) AS u, generate_series(1, :habits) AS h, generate_series(0, :days - 1) AS d
WHERE u % :jobs = :part
  AND hashint8((u::bigint * 64 + h) * 65536 + d)::bigint + 2147483648 < (:rate * 4294967296)::bigint;
COMMIT;
\elif :is_rebuild
\if :one_job
SELECT habit.rebuild_all_streaks() AS habits_rebuilt;
\else
SELECT count(*) AS habits_rebuilt
FROM (SELECT habit.streak_rebuild(t.user_id, t.id) FROM public.habit_templates t
      WHERE (hashtext(t.id::text) & 2147483647) % :jobs = :part ORDER BY t.id) x;
\endif
\else
\echo unknown phase :phase
SELECT 1/0;
\endif
