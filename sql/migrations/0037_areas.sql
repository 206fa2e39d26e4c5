-- 0037 (issue 33, item 1): areas. A user's named groups of habits ("Health", "Work"), in an
-- order the user sets (areas.move); a habit is in at most one (habit_templates.area_id).
-- day.get answers each habit's area and, per area, whether every habit due in it that day is
-- done. Deleting an area keeps its habits, unassigned: the area's BEFORE DELETE trigger
-- clears area_id of the user's habits (triggers/habit_areas.sql), as task_lists' does for
-- tasks, since the key includes user_id and Citus refuses ON DELETE SET NULL on it (sql/0027).
CREATE TABLE public.habit_areas (
    id         uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL,
    name       text NOT NULL
               CONSTRAINT habit_areas_name_check
               CHECK (char_length(name) BETWEEN 1 AND 100 AND name !~ '^[[:space:]]' AND name !~ '[[:space:]]$')
               CONSTRAINT habit_areas_name_bidi_check CHECK (habit.has_no_bidi_controls(name)),
    sort_order integer,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    change_seq bigint NOT NULL DEFAULT 0,
    -- Per user, as every key since sql/0027; habits reference (id, user_id), so a habit can
    -- never sit in another user's area, whoever writes it.
    CONSTRAINT habit_areas_pkey PRIMARY KEY (id, user_id)
);
COMMENT ON TABLE public.habit_areas IS
    'A user''s areas: named groups of habits, ordered by sort_order (at most 100 a user, habit.row_limits). Deleting one keeps its habits, unassigned (sql/0037).';
COMMENT ON COLUMN public.habit_areas.id IS 'The area''s id.';
COMMENT ON COLUMN public.habit_areas.user_id IS 'Owner (auth.uid()). Every query filters on it; RLS enforces it.';
COMMENT ON COLUMN public.habit_areas.name IS 'Display name: trimmed, 1-100 characters, no bidirectional control characters (not unique).';
COMMENT ON COLUMN public.habit_areas.sort_order IS
    'Order of the user''s areas (ascending, NULLS LAST; ties by created_at, id). areas.create puts a new area after the last; areas.move writes it.';
COMMENT ON COLUMN public.habit_areas.created_at IS 'When the area was created.';
COMMENT ON COLUMN public.habit_areas.updated_at IS 'When the area last changed. Set by trigger.';
COMMENT ON COLUMN public.habit_areas.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row. Set by trigger.';
CREATE INDEX habit_areas_user_order_idx ON public.habit_areas (user_id, sort_order, created_at, id);
CREATE INDEX habit_areas_user_change_seq_idx ON public.habit_areas (user_id, change_seq, id);

ALTER TABLE public.habit_templates ADD COLUMN area_id uuid,
    ADD CONSTRAINT habit_templates_area_fkey FOREIGN KEY (area_id, user_id) REFERENCES public.habit_areas (id, user_id);
COMMENT ON COLUMN public.habit_templates.area_id IS
    'The habit''s area (habit_areas.id of the same user), or NULL for none. Cleared when the area is deleted (sql/0037).';
-- Serves the deleted area's clearing and the key's check on an area's deletion.
CREATE INDEX habit_templates_area_idx ON public.habit_templates (user_id, area_id) WHERE area_id IS NOT NULL;

-- At most 100 areas a user (day.get answers all of them every time).
ALTER TABLE habit.row_limits DROP CONSTRAINT row_limits_table_name_check,
    ADD CONSTRAINT row_limits_table_name_check CHECK (table_name IN ('habit_templates', 'tasks', 'task_lists', 'habit_areas'));
COMMENT ON COLUMN habit.row_limits.table_name IS 'A table of public (habit_templates, tasks, task_lists or habit_areas).';
INSERT INTO habit.row_limits (table_name, max_rows) VALUES ('habit_areas', 100);

-- Areas are synced, exported and tombstoned like every user table.
ALTER TABLE habit.sync_tombstones DROP CONSTRAINT sync_tombstones_kind_check,
    ADD CONSTRAINT sync_tombstones_kind_check
        CHECK (kind IN ('profile', 'areas', 'habits', 'periods', 'completions', 'skips', 'lists', 'tasks', 'checkins', 'notes', 'reminders'));
COMMENT ON COLUMN habit.sync_tombstones.kind IS
    'What was deleted: profile, areas, habits, periods, completions, skips, lists, tasks, checkins, notes or reminders.';

-- account.import takes the document's areas (an optional member) and each habit's area_id:
-- staged like the rest (sql/0028).
CREATE UNLOGGED TABLE habit.import_areas (
    user_id uuid NOT NULL, i integer NOT NULL, id uuid, name text, sort_order integer,
    PRIMARY KEY (user_id, i)
);
CREATE INDEX import_areas_id_idx ON habit.import_areas (user_id, id);
COMMENT ON TABLE habit.import_areas IS 'account.import''s staged areas of the document, alive only inside the importing transaction (sql/0037).';
COMMENT ON COLUMN habit.import_areas.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_areas.i IS 'The area''s index in document.areas.';
COMMENT ON COLUMN habit.import_areas.id IS 'document.areas[i].id.';
COMMENT ON COLUMN habit.import_areas.name IS 'document.areas[i].name.';
COMMENT ON COLUMN habit.import_areas.sort_order IS 'document.areas[i].sort_order.';
ALTER TABLE habit.import_habits ADD COLUMN area_id uuid;
COMMENT ON COLUMN habit.import_habits.area_id IS 'The document habit''s area_id (sql/0037).';
