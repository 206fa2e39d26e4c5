-- 0027 (issue 34, item 1): every key of a user's table carries user_id, so the tables can be
-- distributed by user_id (Citus enforces a key inside one shard and refuses one without the
-- distribution column; docs/scaling.md).
--
-- Primary keys: habit_templates, habit_completions, task_lists and tasks were keyed by id
-- alone, which made an id unique across all users: a create with a client id that another user
-- already had answered id_conflict. The key is now (id, user_id), the column set the composite
-- foreign keys already referenced, so the (id, user_id) unique keys that duplicated it go.
-- What changes for clients (docs/protocol.md, "Ids"): an id is unique per user. id_conflict now
-- means "one of your own rows has this id, with other fields"; another user's row with the same
-- id is a different row that nobody can see or name, so the create succeeds, and no answer says
-- whether some other user has an id. Ids are random UUIDs (gen_random_uuid() or a client's v4),
-- so two users meeting on one id happens only by copying one (an account export imported
-- into another account), which now works with the export's own ids.
--
-- tasks_list_fkey: Citus refuses ON DELETE SET NULL on a foreign key that includes the
-- distribution column, so the key becomes NO ACTION and task_lists' own BEFORE DELETE trigger
-- (triggers/task_lists.sql) clears the list of the user's tasks first, for every writer.

-- admin.habits_overview groups by the habit's primary key (a functional dependency on it);
-- views are current-state files, created again after this migration.
DROP VIEW IF EXISTS admin.habits_overview;

ALTER TABLE public.habit_completions DROP CONSTRAINT habit_completions_template_fkey;
ALTER TABLE public.habit_periods DROP CONSTRAINT habit_periods_template_fkey;
ALTER TABLE public.habit_skips DROP CONSTRAINT habit_skips_template_fkey;
ALTER TABLE public.habit_streak_state DROP CONSTRAINT habit_streak_state_template_fkey;
ALTER TABLE public.habit_streak_runs DROP CONSTRAINT habit_streak_runs_template_fkey;
ALTER TABLE public.tasks DROP CONSTRAINT tasks_list_fkey;

ALTER TABLE public.habit_templates DROP CONSTRAINT habit_templates_id_user_id_key,
    DROP CONSTRAINT habit_templates_pkey,
    ADD CONSTRAINT habit_templates_pkey PRIMARY KEY (id, user_id);
ALTER TABLE public.habit_completions DROP CONSTRAINT habit_completions_pkey,
    ADD CONSTRAINT habit_completions_pkey PRIMARY KEY (id, user_id);
ALTER TABLE public.task_lists DROP CONSTRAINT task_lists_id_user_id_key,
    DROP CONSTRAINT task_lists_pkey,
    ADD CONSTRAINT task_lists_pkey PRIMARY KEY (id, user_id);
ALTER TABLE public.tasks DROP CONSTRAINT tasks_pkey,
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (id, user_id);

ALTER TABLE public.habit_completions ADD CONSTRAINT habit_completions_template_fkey
    FOREIGN KEY (template_id, user_id) REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE;
ALTER TABLE public.habit_periods ADD CONSTRAINT habit_periods_template_fkey
    FOREIGN KEY (template_id, user_id) REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE;
ALTER TABLE public.habit_skips ADD CONSTRAINT habit_skips_template_fkey
    FOREIGN KEY (template_id, user_id) REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE;
ALTER TABLE public.habit_streak_state ADD CONSTRAINT habit_streak_state_template_fkey
    FOREIGN KEY (template_id, user_id) REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE;
ALTER TABLE public.habit_streak_runs ADD CONSTRAINT habit_streak_runs_template_fkey
    FOREIGN KEY (template_id, user_id) REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE;
ALTER TABLE public.tasks ADD CONSTRAINT tasks_list_fkey
    FOREIGN KEY (list_id, user_id) REFERENCES public.task_lists (id, user_id);
