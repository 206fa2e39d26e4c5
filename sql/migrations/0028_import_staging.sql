-- 0028 (issue 34, item 1): account.import stages the document in these tables instead of
-- temporary ones, so that it runs on Citus too. A Citus coordinator cannot join a temporary
-- table (a local table) with the distributed user tables; these carry user_id, are
-- distributed with the user's tables by `habit db distribute`, and every statement of
-- habit.import_account (functions/accounts.sql) names the user, so on Citus the whole import
-- runs on the user's node.
--
-- The rows of one import live and die in its transaction: habit.import_account inserts them
-- and deletes them before it returns, so no other transaction ever sees them (MVCC), and an
-- import that fails rolls them back with everything else. UNLOGGED: what only ever lives inside
-- one transaction needs no WAL, nor a copy on the standbys (an unlogged table is emptied after a
-- crash or a failover, which loses nothing here). Only the function's owner writes them;
-- habit_admin may read the habit schema, and sees no row of them (none outlives its import). The primary keys (user_id first) give the deletes and reads an index, so
-- the dead rows of earlier imports are never scanned.
CREATE UNLOGGED TABLE habit.import_habits (
    user_id uuid NOT NULL, i integer NOT NULL, id uuid, name text, icon text, color text, sort_order integer, periods jsonb,
    PRIMARY KEY (user_id, i)
);
CREATE UNLOGGED TABLE habit.import_periods (
    user_id uuid NOT NULL, i integer NOT NULL, j integer NOT NULL, template_id uuid, started_at timestamptz,
    ended_at timestamptz, schedule jsonb,
    PRIMARY KEY (user_id, i, j)
);
CREATE UNLOGGED TABLE habit.import_days (
    user_id uuid NOT NULL, kind text NOT NULL, i integer NOT NULL, template_id uuid, day date,
    PRIMARY KEY (user_id, kind, i)
);
CREATE UNLOGGED TABLE habit.import_lists (
    user_id uuid NOT NULL, i integer NOT NULL, id uuid, name text,
    PRIMARY KEY (user_id, i)
);
CREATE UNLOGGED TABLE habit.import_tasks (
    user_id uuid NOT NULL, i integer NOT NULL, id uuid, list_id uuid, title text, notes text, state text,
    scheduled_date date, "position" integer, completed_at timestamptz,
    PRIMARY KEY (user_id, i)
);
-- Lookups by id and by (habit, day), user first: the planner has no useful statistics for rows
-- that live inside one transaction (it estimated one staged completion where there were 25,710,
-- and a semi join of skips against completions took 29 s as a nested loop over the primary
-- key); with these, a nested loop is an index lookup per row whatever it estimates.
CREATE INDEX import_habits_id_idx ON habit.import_habits (user_id, id);
CREATE INDEX import_periods_template_idx ON habit.import_periods (user_id, template_id);
CREATE INDEX import_days_day_idx ON habit.import_days (user_id, template_id, day, kind);
CREATE INDEX import_lists_id_idx ON habit.import_lists (user_id, id);
CREATE INDEX import_tasks_id_idx ON habit.import_tasks (user_id, id);
COMMENT ON TABLE habit.import_habits IS 'account.import''s staged habits of the document, alive only inside the importing transaction (sql/0028).';
COMMENT ON TABLE habit.import_periods IS 'account.import''s staged periods of the document, alive only inside the importing transaction (sql/0028).';
COMMENT ON TABLE habit.import_days IS 'account.import''s staged completions and skips of the document, alive only inside the importing transaction (sql/0028).';
COMMENT ON TABLE habit.import_lists IS 'account.import''s staged task lists of the document, alive only inside the importing transaction (sql/0028).';
COMMENT ON TABLE habit.import_tasks IS 'account.import''s staged tasks of the document, alive only inside the importing transaction (sql/0028).';
COMMENT ON COLUMN habit.import_habits.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_habits.i IS 'The habit''s index in document.habits.';
COMMENT ON COLUMN habit.import_habits.id IS 'document.habits[i].id.';
COMMENT ON COLUMN habit.import_habits.name IS 'document.habits[i].name.';
COMMENT ON COLUMN habit.import_habits.icon IS 'document.habits[i].icon.';
COMMENT ON COLUMN habit.import_habits.color IS 'document.habits[i].color.';
COMMENT ON COLUMN habit.import_habits.sort_order IS 'document.habits[i].sort_order.';
COMMENT ON COLUMN habit.import_habits.periods IS 'document.habits[i].periods, as given.';
COMMENT ON COLUMN habit.import_periods.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_periods.i IS 'The habit''s index in document.habits.';
COMMENT ON COLUMN habit.import_periods.j IS 'The period''s index in document.habits[i].periods.';
COMMENT ON COLUMN habit.import_periods.template_id IS 'document.habits[i].id.';
COMMENT ON COLUMN habit.import_periods.started_at IS 'document.habits[i].periods[j].started_at.';
COMMENT ON COLUMN habit.import_periods.ended_at IS 'document.habits[i].periods[j].ended_at.';
COMMENT ON COLUMN habit.import_periods.schedule IS 'document.habits[i].periods[j].schedule.';
COMMENT ON COLUMN habit.import_days.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_days.kind IS 'completions or skips: the document''s array.';
COMMENT ON COLUMN habit.import_days.i IS 'The row''s index in that array.';
COMMENT ON COLUMN habit.import_days.template_id IS 'The row''s template_id.';
COMMENT ON COLUMN habit.import_days.day IS 'The row''s date.';
COMMENT ON COLUMN habit.import_lists.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_lists.i IS 'The list''s index in document.lists.';
COMMENT ON COLUMN habit.import_lists.id IS 'document.lists[i].id.';
COMMENT ON COLUMN habit.import_lists.name IS 'document.lists[i].name.';
COMMENT ON COLUMN habit.import_tasks.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_tasks.i IS 'The task''s index in document.tasks.';
COMMENT ON COLUMN habit.import_tasks.id IS 'document.tasks[i].id.';
COMMENT ON COLUMN habit.import_tasks.list_id IS 'document.tasks[i].list_id.';
COMMENT ON COLUMN habit.import_tasks.title IS 'document.tasks[i].title.';
COMMENT ON COLUMN habit.import_tasks.notes IS 'document.tasks[i].notes.';
COMMENT ON COLUMN habit.import_tasks.state IS 'document.tasks[i].state.';
COMMENT ON COLUMN habit.import_tasks.scheduled_date IS 'document.tasks[i].scheduled_date.';
COMMENT ON COLUMN habit.import_tasks."position" IS 'document.tasks[i].position.';
COMMENT ON COLUMN habit.import_tasks.completed_at IS 'document.tasks[i].completed_at.';
