-- Data for scripts/bench-core.sh (issue 29, the lean core): :users users (md5('bench-user-n'))
-- in Europe/Berlin, each with :habits daily habits (md5('bench-habit-n-h'), h = 1…:habits)
-- activated :days days before today; :users "bare" users (md5('bench-bare-user-n')) with one
-- such habit each (md5('bench-bare-habit-n')), which only the bare-write baseline writes (it
-- writes with the triggers off, so their derived state goes stale: nothing else uses them);
-- and one "deep" user (md5('bench-deep-user')) whose one
-- daily habit (md5('bench-deep-habit')) was activated :deep_days days before today (the WAL and
-- row-count probes write up to 2,000 days back). On every habit's day from its activation to
-- yesterday: a completion with probability :done_rate, else a skip with probability
-- :skip_rate; random() is seeded, so every run loads the same rows.
--
-- Only public tables and their columns are named here, so this keeps working when the derived
-- state behind them changes. Profiles and habits go in through the triggers (they are few).
-- Completions and skips are drawn into bench.draws first, then loaded one of two ways:
--   replica   with session_replication_role = replica (no triggers: fast), then every no-argument
--             function of :'rebuild' (a space-separated list of regprocedure texts) that exists
--             is called to make the derived state consistent (on main: habit.rebuild_all_streaks(),
--             as an admin does after a bulk load, docs/admin.md);
--   triggers  one INSERT … SELECT per table as the owner, every trigger on.
-- :'load' = auto takes replica when one of those functions exists, else triggers.
\set ON_ERROR_STOP on
SELECT (now() AT TIME ZONE 'Europe/Berlin')::date AS today \gset

BEGIN;
INSERT INTO public.profiles (user_id, timezone)
SELECT md5('bench-user-' || n)::uuid, 'Europe/Berlin' FROM generate_series(1, :users) n
UNION ALL SELECT md5('bench-bare-user-' || n)::uuid, 'Europe/Berlin' FROM generate_series(1, :users) n
UNION ALL SELECT md5('bench-deep-user')::uuid, 'Europe/Berlin';
INSERT INTO public.habit_templates (id, user_id, name, icon, color, activated_at, sort_order, schedule)
SELECT md5('bench-habit-' || n || '-' || h)::uuid, md5('bench-user-' || n)::uuid, 'Habit ' || h, 'star.fill', '#3366FF',
       (:'today'::date - :days)::timestamp AT TIME ZONE 'Europe/Berlin', h, '{"type":"daily"}'::jsonb
FROM generate_series(1, :users) n, generate_series(1, :habits) h
UNION ALL
SELECT md5('bench-bare-habit-' || n)::uuid, md5('bench-bare-user-' || n)::uuid, 'Habit 1', 'star.fill', '#3366FF',
       (:'today'::date - :days)::timestamp AT TIME ZONE 'Europe/Berlin', 1, '{"type":"daily"}'::jsonb
FROM generate_series(1, :users) n
UNION ALL
SELECT md5('bench-deep-habit')::uuid, md5('bench-deep-user')::uuid, 'Deep history', 'star.fill', '#3366FF',
       (:'today'::date - :deep_days)::timestamp AT TIME ZONE 'Europe/Berlin', 1, '{"type":"daily"}'::jsonb;
COMMIT;

-- Areas (issue 33, sql/0037), where the schema has them: three per bench user, the habits but the
-- last spread over the first two, so day.get answers areas as a user with groups sees them.
SELECT format($q$INSERT INTO public.habit_areas (id, user_id, name, sort_order)
                 SELECT md5('bench-area-' || n || '-' || a)::uuid, md5('bench-user-' || n)::uuid, 'Area ' || a, a * 1024
                 FROM generate_series(1, %s) n, generate_series(1, 3) a$q$, :users)
WHERE to_regclass('public.habit_areas') IS NOT NULL \gexec
SELECT format($q$UPDATE public.habit_templates t SET area_id = md5('bench-area-' || n || '-' || (1 + h %% 2))::uuid
                 FROM generate_series(1, %s) n, generate_series(1, %s) h
                 WHERE t.user_id = md5('bench-user-' || n)::uuid AND t.id = md5('bench-habit-' || n || '-' || h)::uuid AND h < %s$q$,
              :users, :habits, :habits)
WHERE to_regclass('public.habit_areas') IS NOT NULL \gexec

-- One draw per habit and day, in a fixed order so that the seeded random() gives the same rows.
CREATE SCHEMA IF NOT EXISTS bench;
SELECT setseed(0.29);
CREATE TABLE bench.draws AS
SELECT user_id, template_id, day, random() AS r
FROM (SELECT t.user_id, t.id AS template_id, d::date AS day
      FROM public.habit_templates t,
           generate_series((t.activated_at AT TIME ZONE 'Europe/Berlin')::date, :'today'::date - 1, '1 day') d
      WHERE t.user_id IN (SELECT md5(prefix || n)::uuid FROM generate_series(1, :users) n,
                                 unnest(ARRAY['bench-user-', 'bench-bare-user-']) prefix)
         OR t.user_id = md5('bench-deep-user')::uuid
      ORDER BY t.user_id, t.id, d) s;

SELECT CASE WHEN :'load' IN ('replica', 'triggers') THEN :'load'
            WHEN EXISTS (SELECT 1 FROM unnest(string_to_array(:'rebuild', ' ')) f WHERE to_regprocedure(f) IS NOT NULL)
            THEN 'replica' ELSE 'triggers' END AS load_path \gset
SELECT :'load_path' = 'replica' AS replica \gset
\if :replica
SET session_replication_role = replica;
\endif
INSERT INTO public.habit_completions (user_id, template_id, completed_date)
SELECT user_id, template_id, day FROM bench.draws WHERE r < :done_rate;
INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
SELECT user_id, template_id, day FROM bench.draws WHERE r >= :done_rate AND r < :done_rate + :skip_rate;
\if :replica
RESET session_replication_role;
-- The after-load hook: every rebuild function of the list that this schema has.
SELECT 'rebuilt with ' || coalesce(string_agg(f, ', '), 'nothing (none of the functions exists)') AS rebuild_note
FROM unnest(string_to_array(:'rebuild', ' ')) f WHERE to_regprocedure(f) IS NOT NULL \gset
SELECT format('SELECT %s', f) FROM unnest(string_to_array(:'rebuild', ' ')) f WHERE to_regprocedure(f) IS NOT NULL \gexec
\else
SELECT 'loaded through the triggers' AS rebuild_note \gset
\endif
DROP TABLE bench.draws;
\echo load: :load_path, :rebuild_note
VACUUM ANALYZE;
