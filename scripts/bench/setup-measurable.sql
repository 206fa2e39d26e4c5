-- Data for scripts/bench-core.sh's measurable section (issue 32): each of :users bench users
-- (md5('bench-user-n')) gets a measurable habit md5('bench-habit-n-m') ("Run", 5 km a day)
-- activated :days days before today, with 1-3 check-ins on ~85 % of its days (values 0.5-4.5 km,
-- seeded: every run loads the same rows; about 80 % of days reach the target) and a note on
-- ~10 % of days and today. Check-ins are loaded with the triggers off, the completions they make
-- are derived in one statement (the sum meets the target), and the streak runs rebuilt, as an
-- admin does after a bulk load (docs/admin.md). Then a weekly-target habit and an n-in-m-days one
-- (below).
\set ON_ERROR_STOP on
SELECT (now() AT TIME ZONE 'Europe/Berlin')::date AS today \gset
BEGIN;
INSERT INTO public.habit_templates (id, user_id, name, icon, color, activated_at, sort_order, kind, unit, target)
SELECT md5('bench-habit-' || n || '-m')::uuid, md5('bench-user-' || n)::uuid, 'Run', 'figure.run', '#FF8800',
       (:'today'::date - :days)::timestamp AT TIME ZONE 'Europe/Berlin', 6, 'measurable', 'km', 5
FROM generate_series(1, :users) n;
COMMIT;
SELECT setseed(0.32);
SET session_replication_role = replica;
INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value)
SELECT s.user_id, s.template_id, s.day, round((0.5 + random() * 4)::numeric, 1)
FROM (SELECT md5('bench-user-' || n)::uuid AS user_id, md5('bench-habit-' || n || '-m')::uuid AS template_id, d::date AS day,
             random() AS r
      FROM generate_series(1, :users) n, generate_series(:'today'::date - :days, :'today'::date - 1, '1 day') d
      ORDER BY n, d) s
CROSS JOIN LATERAL generate_series(1, 1 + (s.r * 3)::int % 3) k
WHERE s.r < 0.85;
INSERT INTO public.habit_completions (user_id, template_id, completed_date)
SELECT user_id, template_id, checkin_date FROM public.habit_checkins
GROUP BY user_id, template_id, checkin_date HAVING sum(value) >= 5;
INSERT INTO public.habit_day_notes (user_id, template_id, note_date, note)
SELECT md5('bench-user-' || n)::uuid, md5('bench-habit-' || n || '-m')::uuid, d::date, 'felt ' || (d::date - :'today'::date)
FROM generate_series(1, :users) n, generate_series(:'today'::date - :days, :'today'::date, '1 day') d
WHERE random() < 0.1 OR d::date = :'today'::date;
-- A weekly target (sql/0033): md5('bench-habit-n-w') ("Swim", 10 km a week, times_per_week 1),
-- check-ins on ~40 % of days; each user week's completion on the day its running sum reached 10.
-- And n times in m days (sql/0034): md5('bench-habit-n-t') ("Stretch", 3 times in 10 days),
-- done on ~40 % of days.
RESET session_replication_role;
BEGIN;
INSERT INTO public.habit_templates (id, user_id, name, activated_at, sort_order, kind, unit, target, target_period, schedule)
SELECT md5('bench-habit-' || n || '-w')::uuid, md5('bench-user-' || n)::uuid, 'Swim',
       (:'today'::date - :days)::timestamp AT TIME ZONE 'Europe/Berlin', 7, 'measurable', 'km', 10, 'week',
       '{"type": "times_per_week", "times": 1}'
FROM generate_series(1, :users) n;
INSERT INTO public.habit_templates (id, user_id, name, activated_at, sort_order, schedule)
SELECT md5('bench-habit-' || n || '-t')::uuid, md5('bench-user-' || n)::uuid, 'Stretch',
       (:'today'::date - :days)::timestamp AT TIME ZONE 'Europe/Berlin', 8, '{"type": "times_in_days", "times": 3, "days": 10}'
FROM generate_series(1, :users) n;
COMMIT;
SET session_replication_role = replica;
INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value)
SELECT md5('bench-user-' || n)::uuid, md5('bench-habit-' || n || '-w')::uuid, d::date, round((0.5 + random() * 4)::numeric, 1)
FROM generate_series(1, :users) n, generate_series(:'today'::date - :days, :'today'::date - 1, '1 day') d
WHERE random() < 0.4;
INSERT INTO public.habit_completions (user_id, template_id, completed_date)
SELECT m.user_id, m.template_id, min(m.checkin_date)
FROM (SELECT i.user_id, i.template_id, i.checkin_date, habit.week_start(i.checkin_date, habit.user_week_start_isodow(i.user_id)) AS week,
             sum(i.value) OVER (PARTITION BY i.user_id, i.template_id, habit.week_start(i.checkin_date, habit.user_week_start_isodow(i.user_id))
                                ORDER BY i.checkin_date) AS running
      FROM public.habit_checkins i WHERE i.template_id IN (SELECT md5('bench-habit-' || n || '-w')::uuid FROM generate_series(1, :users) n)) m
WHERE m.running >= 10
GROUP BY m.user_id, m.template_id, m.week;
INSERT INTO public.habit_completions (user_id, template_id, completed_date)
SELECT md5('bench-user-' || n)::uuid, md5('bench-habit-' || n || '-t')::uuid, d::date
FROM generate_series(1, :users) n, generate_series(:'today'::date - :days, :'today'::date - 1, '1 day') d
WHERE random() < 0.4;
RESET session_replication_role;
SELECT habit.rebuild_all_streaks();
VACUUM ANALYZE;
