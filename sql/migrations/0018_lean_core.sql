-- 0018: the lean core (issue 29): derived state that grows with events, not days; one row-level
-- trigger per table and timing; each rule checked in one place. The functions and triggers
-- themselves are in the current-state files (sql/functions/streaks.sql, sql/triggers/*.sql);
-- this migration removes what they replace and makes the tables they keep.
--
-- 1. What goes: every trigger of the user tables (generated per concern before: rules, sync,
-- streaks, row counts, weekly marks, touch; now one BEFORE and one AFTER per table, in
-- sql/triggers/), the functions that only they called, and the per-day slot ledger
-- (habit_streak_slots: a row per kept or missed day, rebuilt from the written day to today on
-- every write). Functions whose signature changes are dropped here too, so their files can
-- create them again. IF EXISTS: on a fresh database the current-state files, which made them,
-- have not run yet (they run after the versioned migrations).
DROP TRIGGER IF EXISTS profiles_streaks_delete ON public.profiles;
DROP TRIGGER IF EXISTS profiles_streaks_insert ON public.profiles;
DROP TRIGGER IF EXISTS profiles_streaks_update ON public.profiles;
DROP TRIGGER IF EXISTS profiles_sync_change_seq ON public.profiles;
DROP TRIGGER IF EXISTS profiles_sync_moved_key ON public.profiles;
DROP TRIGGER IF EXISTS profiles_sync_tombstone ON public.profiles;
DROP TRIGGER IF EXISTS profiles_touch_updated_at ON public.profiles;
DROP TRIGGER IF EXISTS profiles_weekly_counts_delete ON public.profiles;
DROP TRIGGER IF EXISTS profiles_weekly_counts_insert ON public.profiles;
DROP TRIGGER IF EXISTS profiles_weekly_counts_update ON public.profiles;
DROP TRIGGER IF EXISTS habit_templates_count_deleted ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_count_inserted ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_count_moved ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_count_truncated ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_first_period ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_history ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_streaks_update ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_sync_change_seq ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_sync_moved_key ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_sync_tombstone ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_touch_updated_at ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_weekly_counts_delete ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_templates_weekly_counts_insert ON public.habit_templates;
DROP TRIGGER IF EXISTS habit_completions_rules ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_streaks_delete ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_streaks_insert ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_streaks_update ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_sync_change_seq ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_sync_moved_key ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_sync_tombstone ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_weekly_counts_delete ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_weekly_counts_insert ON public.habit_completions;
DROP TRIGGER IF EXISTS habit_completions_weekly_counts_update ON public.habit_completions;
DROP TRIGGER IF EXISTS task_lists_count_deleted ON public.task_lists;
DROP TRIGGER IF EXISTS task_lists_count_inserted ON public.task_lists;
DROP TRIGGER IF EXISTS task_lists_count_moved ON public.task_lists;
DROP TRIGGER IF EXISTS task_lists_count_truncated ON public.task_lists;
DROP TRIGGER IF EXISTS task_lists_sync_change_seq ON public.task_lists;
DROP TRIGGER IF EXISTS task_lists_sync_moved_key ON public.task_lists;
DROP TRIGGER IF EXISTS task_lists_sync_tombstone ON public.task_lists;
DROP TRIGGER IF EXISTS task_lists_touch_updated_at ON public.task_lists;
DROP TRIGGER IF EXISTS tasks_count_deleted ON public.tasks;
DROP TRIGGER IF EXISTS tasks_count_inserted ON public.tasks;
DROP TRIGGER IF EXISTS tasks_count_moved ON public.tasks;
DROP TRIGGER IF EXISTS tasks_count_truncated ON public.tasks;
DROP TRIGGER IF EXISTS tasks_sync_change_seq ON public.tasks;
DROP TRIGGER IF EXISTS tasks_sync_moved_key ON public.tasks;
DROP TRIGGER IF EXISTS tasks_sync_tombstone ON public.tasks;
DROP TRIGGER IF EXISTS tasks_touch_updated_at ON public.tasks;
DROP TRIGGER IF EXISTS habit_periods_streaks_delete ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_streaks_insert ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_streaks_update ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_sync_change_seq ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_sync_moved_key ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_sync_tombstone ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_weekly_counts_delete ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_weekly_counts_insert ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_periods_weekly_counts_update ON public.habit_periods;
DROP TRIGGER IF EXISTS habit_skips_rules ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_streaks_delete ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_streaks_insert ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_streaks_update ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_sync_change_seq ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_sync_moved_key ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_sync_tombstone ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_weekly_counts_delete ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_weekly_counts_insert ON public.habit_skips;
DROP TRIGGER IF EXISTS habit_skips_weekly_counts_update ON public.habit_skips;

DROP FUNCTION IF EXISTS habit.habit_stats_quick(uuid, uuid, date, jsonb);
DROP FUNCTION IF EXISTS habit.current_streak(uuid, uuid, date, jsonb);
DROP FUNCTION IF EXISTS habit.habit_stats_slow(uuid, uuid, date);
DROP FUNCTION IF EXISTS habit.habit_stats_fast(uuid, uuid[], date, date, text, integer);
DROP FUNCTION IF EXISTS habit.streak_ledger_answers(public.habit_streak_state, jsonb, date);
DROP FUNCTION IF EXISTS habit.streak_base(uuid, uuid, date, integer);
DROP FUNCTION IF EXISTS habit.streak_counts_before(uuid, uuid, date, integer);
DROP FUNCTION IF EXISTS habit.streak_rate(integer, integer);
DROP FUNCTION IF EXISTS habit.rebuild_streaks_from(jsonb);
DROP FUNCTION IF EXISTS habit.rebuild_streak_slots(uuid, uuid, date);
DROP FUNCTION IF EXISTS habit.streaks_after_rows();
DROP FUNCTION IF EXISTS habit.streaks_after_templates();
DROP FUNCTION IF EXISTS habit.streaks_after_profiles();
DROP FUNCTION IF EXISTS habit.streak_period_day(uuid, timestamptz, timestamptz);
DROP FUNCTION IF EXISTS habit.open_first_period();
DROP FUNCTION IF EXISTS habit.follow_activity();
DROP FUNCTION IF EXISTS habit.check_completion();
DROP FUNCTION IF EXISTS habit.check_skip();
DROP FUNCTION IF EXISTS habit.check_day(uuid, uuid, date, boolean);
DROP FUNCTION IF EXISTS habit.count_inserted_rows();
DROP FUNCTION IF EXISTS habit.count_deleted_rows();
DROP FUNCTION IF EXISTS habit.count_moved_row();
DROP FUNCTION IF EXISTS habit.sync_stamp_row();
DROP FUNCTION IF EXISTS habit.sync_record_deletion();
DROP FUNCTION IF EXISTS habit.sync_key(text, anyelement);
DROP FUNCTION IF EXISTS habit.weekly_counts_mark(jsonb);
DROP FUNCTION IF EXISTS habit.weekly_counts_after_rows();
DROP FUNCTION IF EXISTS habit.weekly_counts_after_profiles_update();
DROP FUNCTION IF EXISTS habit.touch_updated_at();
DROP TABLE public.habit_streak_slots;
DROP TABLE public.habit_streak_state;

-- 2. Row counters are counted per row now (row-level triggers): a bulk insert of one user's
-- rows would update one counter once per row, so after 8 in a transaction it is marked
-- pending and counted once at commit (habit.user_row_counts_recount).
ALTER TABLE habit.user_row_counts
    ADD COLUMN pending boolean NOT NULL DEFAULT false,
    ADD COLUMN xact xid8,
    ADD COLUMN xact_writes integer NOT NULL DEFAULT 0;
COMMENT ON COLUMN habit.user_row_counts.pending IS 'Counted again at commit (more than 8 counts of this counter in one transaction).';
COMMENT ON COLUMN habit.user_row_counts.xact IS 'The transaction that last counted a row here.';
COMMENT ON COLUMN habit.user_row_counts.xact_writes IS 'How many rows it counted here.';

-- 3. The streak engine's types: a habit's shape (segments), kept on its state row.

CREATE TYPE habit.streak_segment AS (
    lo        date,   -- first on-day of the segment
    hi        date,   -- the day after its last on-day; 'infinity' while open-ended
    schedule  jsonb,  -- the schedule in force on these days
    first_day date    -- first on-day of the period it comes from (every_n_days counts from it)
);
COMMENT ON TYPE habit.streak_segment IS
    'A run of on-days of one habit with one schedule in force: a period''s on-days (habit.period_on_days) minus those of later-starting periods.';

-- Everything the engine needs to know about one habit: its state row's columns.
CREATE TYPE habit.streak_habit AS (
    user_id     uuid,
    template_id uuid,
    unit        text,                    -- days | weeks (habit.streak_unit of the current schedule)
    wk          integer,                 -- ISO weekday the user's week starts on
    segs        habit.streak_segment[],  -- ordered by lo
    has_tpw     boolean,                 -- some segment is times_per_week
    first_slot  date,                    -- the first slot that can be on (NULL: never on)
    skips       integer                  -- the habit's skips (0: no skip to look up)
);
COMMENT ON TYPE habit.streak_habit IS
    'What the streak engine reads of one habit (habit_streak_state''s columns).';

-- 4. The derived tables. A habit's state row holds what its runs are counted in (unit, week,
-- segments: recomputed at commit whenever periods, schedule unit, zone or week start change)
-- and its totals; its runs are the maximal sequences of kept slots with no missed slot
-- between (neutral and excused slots pass), each with the gap after it. Both grow with the
-- habit's completions and skips (a kept slot holds one), never with days.
CREATE TABLE public.habit_streak_state (
    user_id      uuid NOT NULL,
    template_id  uuid NOT NULL,
    unit         text NOT NULL CONSTRAINT habit_streak_state_unit_check CHECK (unit IN ('days', 'weeks')),
    wk           integer NOT NULL CONSTRAINT habit_streak_state_wk_check CHECK (wk IN (1, 7)),
    segs         habit.streak_segment[] NOT NULL DEFAULT '{}',
    has_tpw      boolean NOT NULL DEFAULT false,
    first_slot   date,
    closed_until date,
    done_total   integer NOT NULL DEFAULT 0,
    last_done    date,
    skips_total  integer NOT NULL DEFAULT 0,
    kept_total   integer NOT NULL DEFAULT 0,
    missed_total integer NOT NULL DEFAULT 0,
    lead_missed  integer,
    pending      boolean NOT NULL DEFAULT false,
    xact         xid8,
    xact_writes  integer NOT NULL DEFAULT 0,
    CONSTRAINT habit_streak_state_pkey PRIMARY KEY (user_id, template_id),
    CONSTRAINT habit_streak_state_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_streak_state IS
    'Per habit: what its streak runs are counted in, its totals, and the bookkeeping of their maintenance . Written only by triggers.';
COMMENT ON COLUMN public.habit_streak_state.user_id IS 'Owner; the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_streak_state.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_streak_state.unit IS 'days or weeks: habit.streak_unit of the habit''s current schedule.';
COMMENT ON COLUMN public.habit_streak_state.wk IS 'ISO weekday the user''s week starts on (1 Monday, 7 Sunday).';
COMMENT ON COLUMN public.habit_streak_state.segs IS 'The habit''s on-days as segments with the schedule in force, with every closed period''s last day on (habit.streak_segments with today infinity).';
COMMENT ON COLUMN public.habit_streak_state.has_tpw IS 'Whether a segment is times_per_week (its due days then depend on the week''s completions).';
COMMENT ON COLUMN public.habit_streak_state.first_slot IS 'The first slot (day, or week start) that can be on; NULL when never on.';
COMMENT ON COLUMN public.habit_streak_state.closed_until IS 'The day after the last on-day of closed periods; while it is after today, reads from today on use the scan.';
COMMENT ON COLUMN public.habit_streak_state.done_total IS 'Completions of the habit.';
COMMENT ON COLUMN public.habit_streak_state.last_done IS 'Its latest completion date (NULL: none).';
COMMENT ON COLUMN public.habit_streak_state.skips_total IS 'Skips of the habit (0: none to look up).';
COMMENT ON COLUMN public.habit_streak_state.kept_total IS 'Kept slots (the sum of the runs'' kept).';
COMMENT ON COLUMN public.habit_streak_state.missed_total IS 'Missed slots before the last run (lead_missed plus the runs'' missed_after).';
COMMENT ON COLUMN public.habit_streak_state.lead_missed IS 'Missed slots before the first run; NULL when there is no run.';
COMMENT ON COLUMN public.habit_streak_state.pending IS 'The runs are being rebuilt at commit (a bulk write, or a change of periods, unit, zone or week start).';
COMMENT ON COLUMN public.habit_streak_state.xact IS 'The transaction that last changed the runs.';
COMMENT ON COLUMN public.habit_streak_state.xact_writes IS 'How many changes that transaction made (from the 9th on, the habit is rebuilt at commit).';

CREATE TABLE public.habit_streak_runs (
    user_id      uuid NOT NULL,
    template_id  uuid NOT NULL,
    first_slot   date NOT NULL,
    last_slot    date NOT NULL,
    kept         integer NOT NULL CONSTRAINT habit_streak_runs_kept_check CHECK (kept > 0),
    missed_after integer CONSTRAINT habit_streak_runs_missed_after_check CHECK (missed_after > 0),
    next_missed  date,
    CONSTRAINT habit_streak_runs_pkey PRIMARY KEY (user_id, template_id, first_slot),
    CONSTRAINT habit_streak_runs_order_check CHECK (last_slot >= first_slot),
    CONSTRAINT habit_streak_runs_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_streak_runs IS
    'Per habit, its runs of kept slots (days, or weeks for times_per_week habits) with the gap after each: at most one row per kept slot . Written only by triggers.';
COMMENT ON COLUMN public.habit_streak_runs.user_id IS 'Owner; the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_streak_runs.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_streak_runs.first_slot IS 'Its first kept slot (a day, or a week''s first day).';
COMMENT ON COLUMN public.habit_streak_runs.last_slot IS 'Its last kept slot.';
COMMENT ON COLUMN public.habit_streak_runs.kept IS 'Its kept slots (excused and neutral slots inside do not count).';
COMMENT ON COLUMN public.habit_streak_runs.missed_after IS 'Missed slots between it and the next run; NULL for the last run (the open tail).';
COMMENT ON COLUMN public.habit_streak_runs.next_missed IS 'The first missed slot after it (before the next run); NULL when none ever comes.';
-- The longest streak: the longest run (the earliest on ties) by one probe.
CREATE INDEX habit_streak_runs_longest_idx ON public.habit_streak_runs (user_id, template_id, kept DESC, first_slot);

ALTER TABLE public.habit_streak_state ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_streak_state FORCE ROW LEVEL SECURITY;
ALTER TABLE public.habit_streak_runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE public.habit_streak_runs FORCE ROW LEVEL SECURITY;

-- 5. Every habit's streaks are counted again by the new rules: marked pending here, rebuilt by
-- sql/derived.sql once the functions exist (a versioned migration runs before them).
INSERT INTO public.habit_streak_state (user_id, template_id, unit, wk, pending)
SELECT t.user_id, t.id, 'days', 1, true FROM public.habit_templates t;

-- 6. auth.uid(), where this project made it (the baseline): inlinable (no SET clause, a
-- schema-qualified body), so a policy's (SELECT auth.uid()) and the functions' calls cost an
-- expression, not a call with its own search_path. Supabase's own is left as it is.
DO $auth$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_proc p
               WHERE p.oid = to_regprocedure('auth.uid()')
                 AND obj_description(p.oid, 'pg_proc') = 'The acting user: the "sub" of the request.jwt.claims setting (set per transaction). Supabase-compatible.'
                 AND pg_has_role(current_user, p.proowner, 'USAGE')) THEN
        ALTER FUNCTION auth.uid() RESET search_path;
        CREATE OR REPLACE FUNCTION auth.uid() RETURNS uuid
            LANGUAGE sql STABLE
            AS $fn$
                SELECT coalesce(
                    nullif(pg_catalog.current_setting('request.jwt.claim.sub', true), ''),
                    (nullif(pg_catalog.current_setting('request.jwt.claims', true), '')::pg_catalog.jsonb OPERATOR(pg_catalog.->>) 'sub')
                )::pg_catalog.uuid
            $fn$;
    END IF;
END
$auth$;

-- updated_at is set by each table's one BEFORE trigger now (sql/triggers/), not by a trigger of its own.
COMMENT ON COLUMN public.profiles.updated_at IS 'Last change, set by trigger profiles_before.';
COMMENT ON COLUMN public.habit_templates.updated_at IS 'Last change, set by trigger habit_templates_before.';
COMMENT ON COLUMN public.task_lists.updated_at IS 'Last change, set by trigger task_lists_before.';
COMMENT ON COLUMN public.tasks.updated_at IS 'Last change, set by trigger tasks_before.';
