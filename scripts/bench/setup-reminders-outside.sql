-- scripts/bench-reminders.sh, second half: as many reminders again, every one at minute 17 of
-- some hour in its user's zone. Every zone's offset is a whole number of quarter hours, so a
-- window [HH:00, HH:01) UTC never holds one: they are all outside it.
\set ON_ERROR_STOP on
SET session_replication_role = replica;
INSERT INTO public.habit_reminders (user_id, template_id, local_time, time_zone, day_starts_at)
SELECT r.user_id, r.template_id, make_time(abs(hashint4(n::integer)) % 24, 17, 0), r.time_zone, r.day_starts_at
FROM (SELECT r.*, row_number() OVER () AS n FROM public.habit_reminders r) r
ON CONFLICT DO NOTHING;
RESET session_replication_role;
ANALYZE;
SELECT count(*) AS reminders FROM public.habit_reminders;
