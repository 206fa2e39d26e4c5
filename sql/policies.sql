-- Row-level security: the second wall behind the repository's own user_id filters, for
-- every writer (the worker, PostgREST, psql, batch jobs). Every table of public, and the sync
-- tables of habit, has it enabled and FORCEd (FORCE makes it apply to the table owner too;
-- superusers and BYPASSRLS roles still bypass it). A user's role (authenticated) sees and
-- writes only rows whose user_id is auth.uid(). The policies are plain predicates,
-- user_id = auth.uid(), not Supabase's (SELECT auth.uid()): Citus refuses subqueries in the
-- policies of distributed tables. Nothing is lost on plain PostgreSQL or Supabase: auth.uid() is
-- an inlinable SQL function in both generations, so the planner uses the predicate as an index
-- condition, or, next to the repository's own user_id = $1, turns it into a one-time filter
-- (docs/performance.md, "Policies as plain predicates"). Batch jobs and admins read every row
-- they need, and write nothing
-- but what their jobs write. The privileges that let a role try at all: sql/grants.sql.
--
-- Current-state file: every policy as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). Each policy is dropped and created again
-- in the same transaction, so no reader ever sees a table without it. Removing a policy needs
-- a DROP POLICY in a versioned migration (or here, as DROP POLICY IF EXISTS, kept).

-- public.profiles
ALTER TABLE public.profiles ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.profiles FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS profiles_select_own ON public.profiles;
CREATE POLICY profiles_select_own ON public.profiles FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS profiles_insert_own ON public.profiles;
CREATE POLICY profiles_insert_own ON public.profiles FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS profiles_update_own ON public.profiles;
CREATE POLICY profiles_update_own ON public.profiles FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS profiles_delete_own ON public.profiles;
CREATE POLICY profiles_delete_own ON public.profiles FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS profiles_read_all ON public.profiles;
CREATE POLICY profiles_read_all ON public.profiles FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_templates
ALTER TABLE public.habit_templates ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_templates FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_templates_select_own ON public.habit_templates;
CREATE POLICY habit_templates_select_own ON public.habit_templates FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_templates_insert_own ON public.habit_templates;
CREATE POLICY habit_templates_insert_own ON public.habit_templates FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_templates_update_own ON public.habit_templates;
CREATE POLICY habit_templates_update_own ON public.habit_templates FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_templates_delete_own ON public.habit_templates;
CREATE POLICY habit_templates_delete_own ON public.habit_templates FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_templates_read_all ON public.habit_templates;
CREATE POLICY habit_templates_read_all ON public.habit_templates FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_completions
ALTER TABLE public.habit_completions ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_completions FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_completions_select_own ON public.habit_completions;
CREATE POLICY habit_completions_select_own ON public.habit_completions FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_completions_insert_own ON public.habit_completions;
CREATE POLICY habit_completions_insert_own ON public.habit_completions FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_completions_update_own ON public.habit_completions;
CREATE POLICY habit_completions_update_own ON public.habit_completions FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_completions_delete_own ON public.habit_completions;
CREATE POLICY habit_completions_delete_own ON public.habit_completions FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_completions_read_all ON public.habit_completions;
CREATE POLICY habit_completions_read_all ON public.habit_completions FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_periods: written only by the triggers of habit_templates (SECURITY DEFINER),
-- so the users' roles only read.
ALTER TABLE public.habit_periods ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_periods FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_periods_select_own ON public.habit_periods;
CREATE POLICY habit_periods_select_own ON public.habit_periods FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_periods_read_all ON public.habit_periods;
CREATE POLICY habit_periods_read_all ON public.habit_periods FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_skips
ALTER TABLE public.habit_skips ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_skips FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_skips_select_own ON public.habit_skips;
CREATE POLICY habit_skips_select_own ON public.habit_skips FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_skips_insert_own ON public.habit_skips;
CREATE POLICY habit_skips_insert_own ON public.habit_skips FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_skips_update_own ON public.habit_skips;
CREATE POLICY habit_skips_update_own ON public.habit_skips FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_skips_delete_own ON public.habit_skips;
CREATE POLICY habit_skips_delete_own ON public.habit_skips FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_skips_read_all ON public.habit_skips;
CREATE POLICY habit_skips_read_all ON public.habit_skips FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_checkins
ALTER TABLE public.habit_checkins ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_checkins FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_checkins_select_own ON public.habit_checkins;
CREATE POLICY habit_checkins_select_own ON public.habit_checkins FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_checkins_insert_own ON public.habit_checkins;
CREATE POLICY habit_checkins_insert_own ON public.habit_checkins FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_checkins_update_own ON public.habit_checkins;
CREATE POLICY habit_checkins_update_own ON public.habit_checkins FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_checkins_delete_own ON public.habit_checkins;
CREATE POLICY habit_checkins_delete_own ON public.habit_checkins FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_checkins_read_all ON public.habit_checkins;
CREATE POLICY habit_checkins_read_all ON public.habit_checkins FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_day_notes
ALTER TABLE public.habit_day_notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_day_notes FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_day_notes_select_own ON public.habit_day_notes;
CREATE POLICY habit_day_notes_select_own ON public.habit_day_notes FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_day_notes_insert_own ON public.habit_day_notes;
CREATE POLICY habit_day_notes_insert_own ON public.habit_day_notes FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_day_notes_update_own ON public.habit_day_notes;
CREATE POLICY habit_day_notes_update_own ON public.habit_day_notes FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_day_notes_delete_own ON public.habit_day_notes;
CREATE POLICY habit_day_notes_delete_own ON public.habit_day_notes FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_day_notes_read_all ON public.habit_day_notes;
CREATE POLICY habit_day_notes_read_all ON public.habit_day_notes FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_areas (sql/0037): the user's own; admins read (weekly counts never read areas).
ALTER TABLE public.habit_areas ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_areas FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_areas_select_own ON public.habit_areas;
CREATE POLICY habit_areas_select_own ON public.habit_areas FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_areas_insert_own ON public.habit_areas;
CREATE POLICY habit_areas_insert_own ON public.habit_areas FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_areas_update_own ON public.habit_areas;
CREATE POLICY habit_areas_update_own ON public.habit_areas FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_areas_delete_own ON public.habit_areas;
CREATE POLICY habit_areas_delete_own ON public.habit_areas FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_areas_read_all ON public.habit_areas;
CREATE POLICY habit_areas_read_all ON public.habit_areas FOR SELECT TO habit_admin USING (true);

-- public.habit_reminders (sql/0036)
ALTER TABLE public.habit_reminders ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_reminders FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_reminders_select_own ON public.habit_reminders;
CREATE POLICY habit_reminders_select_own ON public.habit_reminders FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_reminders_insert_own ON public.habit_reminders;
CREATE POLICY habit_reminders_insert_own ON public.habit_reminders FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_reminders_update_own ON public.habit_reminders;
CREATE POLICY habit_reminders_update_own ON public.habit_reminders FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS habit_reminders_delete_own ON public.habit_reminders;
CREATE POLICY habit_reminders_delete_own ON public.habit_reminders FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_reminders_read_all ON public.habit_reminders;
CREATE POLICY habit_reminders_read_all ON public.habit_reminders FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.habit_streak_runs, public.habit_streak_state: the streak ledger, written only by
-- its maintenance (SECURITY DEFINER); the users' roles only read.
ALTER TABLE public.habit_streak_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_streak_runs FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_streak_runs_select_own ON public.habit_streak_runs;
CREATE POLICY habit_streak_runs_select_own ON public.habit_streak_runs FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_streak_runs_read_all ON public.habit_streak_runs;
CREATE POLICY habit_streak_runs_read_all ON public.habit_streak_runs FOR SELECT TO habit_batch, habit_admin USING (true);
ALTER TABLE public.habit_streak_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_streak_state FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS habit_streak_state_select_own ON public.habit_streak_state;
CREATE POLICY habit_streak_state_select_own ON public.habit_streak_state FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS habit_streak_state_read_all ON public.habit_streak_state;
CREATE POLICY habit_streak_state_read_all ON public.habit_streak_state FOR SELECT TO habit_batch, habit_admin USING (true);

-- public.weekly_completion_counts: users read their own; the batch writes every user's.
ALTER TABLE public.weekly_completion_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.weekly_completion_counts FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS weekly_completion_counts_select_own ON public.weekly_completion_counts;
CREATE POLICY weekly_completion_counts_select_own ON public.weekly_completion_counts
    FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS weekly_completion_counts_batch_all ON public.weekly_completion_counts;
CREATE POLICY weekly_completion_counts_batch_all ON public.weekly_completion_counts
    FOR ALL TO habit_batch USING (true) WITH CHECK (true);
DROP POLICY IF EXISTS weekly_completion_counts_admin_read ON public.weekly_completion_counts;
CREATE POLICY weekly_completion_counts_admin_read ON public.weekly_completion_counts
    FOR SELECT TO habit_admin USING (true);

-- public.task_lists, public.tasks: weekly counts never read them, so habit_batch has no
-- policy (and no privilege) here; admins read.
ALTER TABLE public.task_lists ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.task_lists FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS task_lists_select_own ON public.task_lists;
CREATE POLICY task_lists_select_own ON public.task_lists FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS task_lists_insert_own ON public.task_lists;
CREATE POLICY task_lists_insert_own ON public.task_lists FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS task_lists_update_own ON public.task_lists;
CREATE POLICY task_lists_update_own ON public.task_lists FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS task_lists_delete_own ON public.task_lists;
CREATE POLICY task_lists_delete_own ON public.task_lists FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS task_lists_read_all ON public.task_lists;
CREATE POLICY task_lists_read_all ON public.task_lists FOR SELECT TO habit_admin USING (true);
ALTER TABLE public.tasks ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.tasks FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tasks_select_own ON public.tasks;
CREATE POLICY tasks_select_own ON public.tasks FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS tasks_insert_own ON public.tasks;
CREATE POLICY tasks_insert_own ON public.tasks FOR INSERT TO authenticated WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS tasks_update_own ON public.tasks;
CREATE POLICY tasks_update_own ON public.tasks FOR UPDATE TO authenticated
    USING (user_id = auth.uid()) WITH CHECK (user_id = auth.uid());
DROP POLICY IF EXISTS tasks_delete_own ON public.tasks;
CREATE POLICY tasks_delete_own ON public.tasks FOR DELETE TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS tasks_read_all ON public.tasks;
CREATE POLICY tasks_read_all ON public.tasks FOR SELECT TO habit_admin USING (true);

-- habit.score_checkpoints (sql/0038): Loop's score checkpoints, written only by the batch's
-- habit.score_checkpoints_advance and deleted by the event triggers (SECURITY DEFINER both); a
-- user's score reads its own (habit.habit_score runs as its caller).
ALTER TABLE habit.score_checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE habit.score_checkpoints FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS score_checkpoints_select_own ON habit.score_checkpoints;
CREATE POLICY score_checkpoints_select_own ON habit.score_checkpoints FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS score_checkpoints_read_all ON habit.score_checkpoints;
CREATE POLICY score_checkpoints_read_all ON habit.score_checkpoints FOR SELECT TO habit_batch, habit_admin USING (true);

-- Sync (functions/sync.sql): authenticated reads its own clock and tombstones (a pull) and
-- reads, claims and records its own replay records (a push); nobody but the sync functions
-- writes clocks or tombstones.
ALTER TABLE habit.sync_clocks ENABLE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_clocks FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS sync_clocks_select_own ON habit.sync_clocks;
CREATE POLICY sync_clocks_select_own ON habit.sync_clocks FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS sync_clocks_read_all ON habit.sync_clocks;
CREATE POLICY sync_clocks_read_all ON habit.sync_clocks FOR SELECT TO habit_admin USING (true);
ALTER TABLE habit.sync_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_tombstones FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS sync_tombstones_select_own ON habit.sync_tombstones;
CREATE POLICY sync_tombstones_select_own ON habit.sync_tombstones FOR SELECT TO authenticated USING (user_id = auth.uid());
DROP POLICY IF EXISTS sync_tombstones_read_all ON habit.sync_tombstones;
CREATE POLICY sync_tombstones_read_all ON habit.sync_tombstones FOR SELECT TO habit_admin USING (true);
ALTER TABLE habit.sync_mutations ENABLE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_mutations FORCE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS sync_mutations_select_own ON habit.sync_mutations;
CREATE POLICY sync_mutations_select_own ON habit.sync_mutations FOR SELECT TO authenticated USING (user_id = auth.uid());
-- Written only by habit.sync_mutation_claim/_record (sql/0023 dropped the insert and update policies).
DROP POLICY IF EXISTS sync_mutations_read_all ON habit.sync_mutations;
CREATE POLICY sync_mutations_read_all ON habit.sync_mutations FOR SELECT TO habit_admin USING (true);
