-- 0016: keys that a sharded PostgreSQL (Citus, distribution column user_id) can enforce
-- (issue 20, "Ready for sharding, proven by the catalog"). Citus enforces a primary key,
-- unique constraint/index or exclusion constraint of a distributed table only when it
-- includes the distribution column, because each is checked inside one shard.
--
-- Only public.habit_periods changes here: its three keys become the same keys per user. The
-- change is safe because it changes no answer: a period's template_id already determines
-- its user (habit_periods_template_fkey references habit_templates (id, user_id) and
-- habit_templates.id is unique), and period ids are generated (gen_random_uuid) by the
-- triggers of habit_templates, never taken from a client. The names stay, so docs and logs
-- that name them stay right; no INSERT … ON CONFLICT names these keys as its target.
--
-- What is NOT changed, and why (docs/scaling.md, "Keys and constraints", lists each):
--   habit_templates_pkey, habit_completions_pkey, task_lists_pkey, tasks_pkey (id):
--     the protocol promises that a client-chosen id already used by ANOTHER user answers
--     id_conflict (0009_client_ids.sql, RetrySafeCreatesTests); only a key on id alone keeps
--     that promise, and no per-shard key can. Changing it is a protocol decision.
--   habit_streak_state_pkey (template_id): the target of ON CONFLICT (template_id) in the
--     streak ledger (0011); switching it means rewriting that function with the key.
--
-- Cost: each statement rebuilds one index of habit_periods under an ACCESS EXCLUSIVE lock
-- (writes of habits wait); the table has a few rows per habit.

ALTER TABLE public.habit_periods DROP CONSTRAINT habit_periods_pkey;
ALTER TABLE public.habit_periods ADD CONSTRAINT habit_periods_pkey PRIMARY KEY (id, user_id);

ALTER TABLE public.habit_periods DROP CONSTRAINT habit_periods_no_overlap;
ALTER TABLE public.habit_periods ADD CONSTRAINT habit_periods_no_overlap
    EXCLUDE USING gist (user_id WITH =, template_id WITH =, tstzrange(started_at, ended_at, '[)') WITH &&);

DROP INDEX public.habit_periods_one_open;
CREATE UNIQUE INDEX habit_periods_one_open ON public.habit_periods (user_id, template_id) WHERE ended_at IS NULL;
