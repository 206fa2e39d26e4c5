-- 0004: the task-list apps' tables (task_lists, tasks) with row-level security forced on
-- each, and the grants of every role. Depends only on 0001 and 0002 (habit.touch_updated_at,
-- habit.user_time_zone, habit.local_date); 0003 is another change and may come before or after.
-- Needs PostgreSQL 15 or later (ON DELETE SET NULL with a column list).

CREATE TABLE public.task_lists (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL,
    name       text NOT NULL
               CONSTRAINT task_lists_name_check
               CHECK (char_length(name) BETWEEN 1 AND 100 AND name !~ '^[[:space:]]' AND name !~ '[[:space:]]$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- Tasks reference (id, user_id) so that a task can never sit in another user's list,
    -- whoever writes it.
    CONSTRAINT task_lists_id_user_id_key UNIQUE (id, user_id)
);
COMMENT ON TABLE public.task_lists IS 'A user''s task lists. Deleting one keeps its tasks: their list_id becomes NULL (ON DELETE SET NULL).';
COMMENT ON COLUMN public.task_lists.id IS 'List id.';
COMMENT ON COLUMN public.task_lists.user_id IS 'Owner (auth.uid()). Every query filters on it; RLS enforces it.';
COMMENT ON COLUMN public.task_lists.name IS 'Display name: trimmed, 1-100 characters (not unique).';
COMMENT ON COLUMN public.task_lists.created_at IS 'When the row was created; lists are shown in creation order.';
COMMENT ON COLUMN public.task_lists.updated_at IS 'Last change, maintained by trigger task_lists_touch_updated_at.';

CREATE INDEX task_lists_user_id_idx ON public.task_lists (user_id, created_at);
CREATE TRIGGER task_lists_touch_updated_at BEFORE UPDATE ON public.task_lists
    FOR EACH ROW EXECUTE FUNCTION habit.touch_updated_at();

CREATE TABLE public.tasks (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id        uuid NOT NULL,
    title          text NOT NULL
                   CONSTRAINT tasks_title_check
                   CHECK (char_length(title) BETWEEN 1 AND 500 AND title !~ '^[[:space:]]' AND title !~ '[[:space:]]$'),
    notes          text
                   CONSTRAINT tasks_notes_check CHECK (char_length(notes) <= 10000),
    list_id        uuid,
    state          text NOT NULL DEFAULT 'not_started'
                   CONSTRAINT tasks_state_check CHECK (state IN ('not_started', 'active', 'completed')),
    scheduled_date date,
    position       integer NOT NULL,
    completed_at   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    -- completed_at is set exactly while the task is completed, whoever writes the row.
    CONSTRAINT tasks_completed_at_check CHECK ((state = 'completed') = (completed_at IS NOT NULL)),
    -- Composite key: the list must belong to the task's owner. Deleting the list clears only
    -- list_id (the column list keeps user_id), so the tasks stay, unlisted.
    CONSTRAINT tasks_list_fkey FOREIGN KEY (list_id, user_id)
        REFERENCES public.task_lists (id, user_id) ON DELETE SET NULL (list_id)
);
COMMENT ON TABLE public.tasks IS 'A user''s tasks: a state machine not_started -> active -> completed, optionally scheduled on a date and filed in a list.';
COMMENT ON COLUMN public.tasks.id IS 'Task id.';
COMMENT ON COLUMN public.tasks.user_id IS 'Owner (auth.uid()). Every query filters on it; RLS enforces it.';
COMMENT ON COLUMN public.tasks.title IS 'Title: trimmed, 1-500 characters.';
COMMENT ON COLUMN public.tasks.notes IS 'Free text, at most 10000 characters, or NULL.';
COMMENT ON COLUMN public.tasks.list_id IS 'The list (task_lists.id of the same user), or NULL for none. Set to NULL when the list is deleted.';
COMMENT ON COLUMN public.tasks.state IS 'not_started, active or completed.';
COMMENT ON COLUMN public.tasks.scheduled_date IS 'The calendar date the task is planned for, in the user''s time zone (a date, never shifted); NULL = inbox. Never changed by state changes, never rolled over.';
COMMENT ON COLUMN public.tasks.position IS 'Order among the tasks with the same scheduled_date (ascending; ties by created_at, id). Default: after the last one.';
COMMENT ON COLUMN public.tasks.completed_at IS 'When the task became completed; non-NULL exactly when state = completed (tasks_completed_at_check).';
COMMENT ON COLUMN public.tasks.created_at IS 'When the row was created.';
COMMENT ON COLUMN public.tasks.updated_at IS 'Last change, maintained by trigger tasks_touch_updated_at.';

-- Serves Today (scheduled_date = d), Upcoming (scheduled_date > d), the inbox
-- (scheduled_date IS NULL) and the default position (max(position) of a date).
CREATE INDEX tasks_user_date_position_idx ON public.tasks (user_id, scheduled_date, position);
-- Serves a list's tasks and the ON DELETE SET NULL of a deleted list.
CREATE INDEX tasks_list_id_idx ON public.tasks (list_id, scheduled_date, position) WHERE list_id IS NOT NULL;
CREATE TRIGGER tasks_touch_updated_at BEFORE UPDATE ON public.tasks
    FOR EACH ROW EXECUTE FUNCTION habit.touch_updated_at();

-- Row-level security: the second wall behind the repository's own user_id filters.
-- FORCE makes it apply to the table owner too (superusers still bypass it).
ALTER TABLE public.task_lists ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.task_lists FORCE ROW LEVEL SECURITY;
ALTER TABLE public.tasks ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.tasks FORCE ROW LEVEL SECURITY;

CREATE POLICY task_lists_select_own ON public.task_lists FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY task_lists_insert_own ON public.task_lists FOR INSERT TO authenticated WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY task_lists_update_own ON public.task_lists FOR UPDATE TO authenticated USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY task_lists_delete_own ON public.task_lists FOR DELETE TO authenticated USING (user_id = (SELECT auth.uid()));

CREATE POLICY tasks_select_own ON public.tasks FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY tasks_insert_own ON public.tasks FOR INSERT TO authenticated WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY tasks_update_own ON public.tasks FOR UPDATE TO authenticated USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY tasks_delete_own ON public.tasks FOR DELETE TO authenticated USING (user_id = (SELECT auth.uid()));

-- Batch jobs and admins read every row (and write nothing here).
CREATE POLICY task_lists_read_all ON public.task_lists FOR SELECT TO habit_batch, habit_admin USING (true);
CREATE POLICY tasks_read_all ON public.tasks FOR SELECT TO habit_batch, habit_admin USING (true);

GRANT SELECT, INSERT, UPDATE, DELETE ON public.task_lists, public.tasks TO authenticated;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.task_lists, public.tasks TO service_role;
GRANT SELECT ON public.task_lists, public.tasks TO habit_batch, habit_admin;
REVOKE ALL ON public.task_lists, public.tasks FROM anon;
