-- Data for scripts/bench-streaks.sh (issue 17): :users users × 10 habits × 3 years of history
-- ending yesterday in the users' zone (Europe/Berlin), about 70 % of due days done, a few
-- percent skipped. Ids are md5-derived as in setup-worker.sql (habit-bench computes the
-- users' ids). Habits 1–6 daily, 7–8 weekdays Mon–Fri, 9 every 2 days, 10 three times a week.
-- Loaded as the migrator with session_replication_role = replica (no per-row triggers: the
-- rule checks would only slow the load; every row here obeys them), then the streak runs are
-- built once for every habit, as an admin does after a bulk load (docs/admin.md).
\set ON_ERROR_STOP on
SELECT (now() AT TIME ZONE 'Europe/Berlin')::date AS today \gset
SELECT (:'today'::date - 1095) AS first_day \gset

BEGIN;
INSERT INTO profiles (user_id, timezone)
SELECT md5('bench-user-' || n)::uuid, 'Europe/Berlin' FROM generate_series(1, :users) n;
INSERT INTO habit_templates (id, user_id, name, icon, color, activated_at, sort_order, schedule)
SELECT md5('bench-habit-' || n || '-' || h)::uuid, md5('bench-user-' || n)::uuid, 'Habit ' || h, 'star.fill', '#3366FF',
       (:'first_day'::date)::timestamp AT TIME ZONE 'Europe/Berlin', h,
       CASE WHEN h <= 6 THEN '{"type":"daily"}'
            WHEN h <= 8 THEN '{"type":"weekdays","days":[1,2,3,4,5]}'
            WHEN h = 9 THEN '{"type":"every_n_days","n":2}'
            ELSE '{"type":"times_per_week","times":3}' END::jsonb
FROM generate_series(1, :users) n, generate_series(1, 10) h;
COMMIT;

SET session_replication_role = replica;
-- One draw per habit and day: < 0.70 done on due days (times_per_week: < 0.45, about three
-- a week), 0.70–0.73 skipped.
CREATE TEMP TABLE draws AS
SELECT t.user_id, t.id AS template_id, d::date AS day, random() AS r, t.sort_order AS h
FROM habit_templates t, generate_series(:'first_day'::date, :'today'::date - 1, '1 day') d
WHERE CASE WHEN t.sort_order <= 6 THEN true
           WHEN t.sort_order <= 8 THEN extract(isodow FROM d) <= 5
           WHEN t.sort_order = 9 THEN (d::date - :'first_day'::date) % 2 = 0
           ELSE true END;
INSERT INTO habit_completions (user_id, template_id, completed_date)
SELECT user_id, template_id, day FROM draws WHERE r < CASE WHEN h = 10 THEN 0.45 ELSE 0.70 END;
INSERT INTO habit_skips (user_id, template_id, skipped_date)
SELECT user_id, template_id, day FROM draws WHERE r >= 0.70 AND r < 0.73;
DROP TABLE draws;
RESET session_replication_role;
SELECT habit.rebuild_all_streaks();
VACUUM ANALYZE;
