-- scripts/bench-reminders.sh's data: :users users spread over every zone of habit.time_zones
-- (days starting at 00:00, 03:00 or 04:30), one daily habit each since 2023 and :per_user
-- reminders per habit (half on the hour or half hour between 06:00 and 22:30, half at any
-- minute), ~30 % of the habits done and ~5 % skipped on the days around today. Loaded with
-- the triggers off (session_replication_role = replica), so the reminders' copies of the zone
-- and day start are written here as their trigger would.
\set ON_ERROR_STOP on
SET session_replication_role = replica;
CREATE SCHEMA IF NOT EXISTS bench;
CREATE TEMP TABLE zone_list AS SELECT (row_number() OVER (ORDER BY name) - 1)::integer AS i, name FROM habit.time_zones;
SELECT count(*) AS zones FROM zone_list \gset

INSERT INTO public.profiles (user_id, timezone, day_starts_at)
SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(u), 12, '0'))::uuid, z.name, (ARRAY['00:00', '00:00', '03:00', '04:30'])[1 + u % 4]::time
FROM generate_series(1, :users) u JOIN zone_list z ON z.i = u % :zones;

INSERT INTO public.habit_templates (id, user_id, name, is_active, activated_at, schedule, sort_order)
SELECT ('00000000-0000-4000-9000-' || lpad(to_hex(u), 12, '0'))::uuid, ('00000000-0000-4000-8000-' || lpad(to_hex(u), 12, '0'))::uuid,
       'Habit ' || u, true, '2023-01-01T00:00:00Z', '{"type": "daily"}', 1
FROM generate_series(1, :users) u;
INSERT INTO public.habit_periods (user_id, template_id, started_at, schedule)
SELECT t.user_id, t.id, t.activated_at, t.schedule FROM public.habit_templates t WHERE t.name LIKE 'Habit %';

INSERT INTO public.habit_reminders (user_id, template_id, local_time, time_zone, day_starts_at)
SELECT p.user_id, ('00000000-0000-4000-9000-' || lpad(to_hex(u), 12, '0'))::uuid,
       CASE WHEN k % 2 = 0 THEN make_time(6 + abs(hashint4(u * 7 + k)) % 17, 30 * (abs(hashint4(u * 13 + k)) % 2), 0)
            ELSE make_time(0, 0, 0) + (abs(hashint4(u * 31 + k)) % 1440) * interval '1 minute' END,
       p.timezone, p.day_starts_at
FROM generate_series(1, :users) u
CROSS JOIN generate_series(1, :per_user) k
JOIN public.profiles p ON p.user_id = ('00000000-0000-4000-8000-' || lpad(to_hex(u), 12, '0'))::uuid
ON CONFLICT DO NOTHING;

INSERT INTO public.habit_completions (user_id, template_id, completed_date)
SELECT t.user_id, t.id, current_date + d
FROM public.habit_templates t CROSS JOIN generate_series(-1, 0) d
WHERE t.name LIKE 'Habit %' AND abs(hashint4(t.sort_order + hashtext(t.id::text) + d)) % 10 < 3
ON CONFLICT DO NOTHING;
INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
SELECT t.user_id, t.id, current_date + 1
FROM public.habit_templates t
WHERE t.name LIKE 'Habit %' AND abs(hashtext(t.id::text)) % 20 = 0
ON CONFLICT DO NOTHING;
RESET session_replication_role;
ANALYZE;
SELECT count(*) AS reminders FROM public.habit_reminders;
