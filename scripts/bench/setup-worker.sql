-- Data for scripts/bench-worker.sh: 64 users with 5 habits each (the first is the one the
-- benchmark completes) and four weeks of completions. Ids are md5-derived so habit-bench
-- and pgbench compute the same ones.
INSERT INTO profiles (user_id, timezone)
SELECT md5('bench-user-' || n)::uuid, 'Europe/Berlin' FROM generate_series(1, 64) n;
INSERT INTO habit_templates (id, user_id, name, icon, color, activated_at, sort_order)
SELECT CASE WHEN h = 1 THEN md5('bench-habit-' || n) ELSE md5('bench-habit-' || n || '-' || h) END::uuid,
       md5('bench-user-' || n)::uuid, 'Habit ' || h, 'star.fill', '#3366FF', '2026-01-01', h
FROM generate_series(1, 64) n, generate_series(1, 5) h;
INSERT INTO habit_completions (user_id, template_id, completed_date)
SELECT t.user_id, t.id, d::date
FROM habit_templates t, generate_series('2026-10-01'::date, '2026-10-28'::date, '1 day') d
WHERE random() < 0.7;
VACUUM ANALYZE;
