-- 0029 (issue 32, first part): measurable habits, check-ins and notes on a day.
--
-- A habit is `boolean` (done or not, today's behaviour and the default) or `measurable` (a
-- number a day against a target: "run 5 km", "read 20 pages"). A day's value is the sum of its
-- check-ins (public.habit_checkins). Whether a day is done stays what it always was, a row of
-- public.habit_completions, so every derived answer (streak runs, rates, weekly counts, history,
-- the calendar) keeps working from the one table it reads; for a day that has check-ins the
-- row is kept by habit_checkins' trigger (sql/triggers/habit_checkins.sql): present exactly when
-- the value meets the habit's target. Nothing here grows with days: check-ins and notes are
-- events.
--
-- Values are exact: numeric with at most three decimals (Loop Habit Tracker keeps a numerical
-- habit's values in thousandths too), never binary floating point; decimal strings on the wire.
--
-- Not yet (issue 32, to come): at-most targets, weekly targets and the day's start. The
-- columns take their final domains now; habit_templates_target_supported refuses what is not
-- built, and the migration that builds it drops that constraint.

ALTER TABLE public.habit_templates
    ADD COLUMN kind text NOT NULL DEFAULT 'boolean'
        CONSTRAINT habit_templates_kind_check CHECK (kind IN ('boolean', 'measurable')),
    ADD COLUMN unit text
        CONSTRAINT habit_templates_unit_check
        CHECK (char_length(unit) BETWEEN 1 AND 30 AND unit !~ '^[[:space:]]' AND unit !~ '[[:space:]]$' AND unit !~ '[[:cntrl:]]')
        CONSTRAINT habit_templates_unit_bidi_check CHECK (habit.has_no_bidi_controls(unit)),
    ADD COLUMN target numeric NOT NULL DEFAULT 1
        CONSTRAINT habit_templates_target_check CHECK (target > 0 AND target <= 999999999.999 AND scale(target) <= 3),
    ADD COLUMN target_type text NOT NULL DEFAULT 'at_least'
        CONSTRAINT habit_templates_target_type_check CHECK (target_type IN ('at_least', 'at_most')),
    ADD COLUMN target_period text NOT NULL DEFAULT 'day'
        CONSTRAINT habit_templates_target_period_check CHECK (target_period IN ('day', 'week')),
    -- A boolean habit counts times: a whole target (check-ins a day, "8 times"), no unit of its own.
    ADD CONSTRAINT habit_templates_boolean_target_check
        CHECK (kind = 'measurable' OR (target = trunc(target) AND target <= 1000)),
    ADD CONSTRAINT habit_templates_boolean_unit_check CHECK (kind = 'measurable' OR unit IS NULL),
    ADD CONSTRAINT habit_templates_target_supported
        CHECK (target_type = 'at_least' AND target_period = 'day');
COMMENT ON COLUMN public.habit_templates.kind IS
    'boolean (done or not; the default) or measurable (a value a day against target). Fixed when the habit is created.';
COMMENT ON COLUMN public.habit_templates.unit IS
    'A measurable habit''s unit (e.g. km, pages), 1-30 characters; NULL for a boolean habit, which counts times.';
COMMENT ON COLUMN public.habit_templates.target IS
    'The value a day must reach (at_least) to be done: > 0, at most 999999999.999, three decimals; a boolean habit''s is a whole number of check-ins (default 1).';
COMMENT ON COLUMN public.habit_templates.target_type IS
    'at_least: done when the day''s value is >= target. (at_most is not built yet: habit_templates_target_supported.)';
COMMENT ON COLUMN public.habit_templates.target_period IS
    'day: the target is per day. (week is not built yet: habit_templates_target_supported.)';

-- The events of a day's value: one row per check-in.
CREATE TABLE public.habit_checkins (
    id           uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL,
    template_id  uuid NOT NULL,
    checkin_date date NOT NULL
                 CONSTRAINT habit_checkins_date_range CHECK (checkin_date >= '1970-01-01'),
    value        numeric NOT NULL DEFAULT 1
                 CONSTRAINT habit_checkins_value_check CHECK (value > 0 AND value <= 999999999.999 AND scale(value) <= 3),
    at_time      time
                 CONSTRAINT habit_checkins_at_time_check CHECK (at_time < '24:00'),
    client_id    text
                 CONSTRAINT habit_checkins_client_id_check
                 CHECK (char_length(client_id) BETWEEN 1 AND 100 AND client_id !~ '[[:cntrl:][:space:]]'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    change_seq   bigint NOT NULL DEFAULT 0,
    CONSTRAINT habit_checkins_pkey PRIMARY KEY (id, user_id),
    -- A retried add names the same client id and finds its row (NULLs are distinct: no id, no key).
    CONSTRAINT habit_checkins_user_client_id_key UNIQUE (user_id, client_id),
    CONSTRAINT habit_checkins_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_checkins IS
    'Check-ins: the events a day''s value sums (a boolean habit''s each count 1 time). The day''s habit_completions row follows them (done when the sum meets the target; trigger habit_checkins_after).';
COMMENT ON COLUMN public.habit_checkins.id IS 'Check-in id (unique per user).';
COMMENT ON COLUMN public.habit_checkins.user_id IS 'Owner; must be the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_checkins.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_checkins.checkin_date IS 'The calendar date the value counts for, in the user''s time zone.';
COMMENT ON COLUMN public.habit_checkins.value IS 'How much: > 0, at most 999999999.999, three decimals (1 for a boolean habit''s check-in).';
COMMENT ON COLUMN public.habit_checkins.at_time IS 'The local time of day of the check-in, when the client gave one.';
COMMENT ON COLUMN public.habit_checkins.client_id IS
    'The client''s key for the add (1-100 characters, no white space): a retried add with the same key is applied once.';
COMMENT ON COLUMN public.habit_checkins.created_at IS 'When the check-in was recorded.';
COMMENT ON COLUMN public.habit_checkins.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row. Set by trigger.';
-- A day's check-ins (the sum, the list, the per-day limit).
CREATE INDEX habit_checkins_user_template_date_idx ON public.habit_checkins (user_id, template_id, checkin_date) INCLUDE (value);
-- A user's check-ins on a date (day.get).
CREATE INDEX habit_checkins_user_date_idx ON public.habit_checkins (user_id, checkin_date) INCLUDE (template_id, value);
CREATE INDEX habit_checkins_user_change_seq_idx ON public.habit_checkins (user_id, change_seq, id);

-- A note on a habit's day: independent of whether the day is done, so it survives toggling.
CREATE TABLE public.habit_day_notes (
    user_id     uuid NOT NULL,
    template_id uuid NOT NULL,
    note_date   date NOT NULL
                CONSTRAINT habit_day_notes_date_range CHECK (note_date >= '1970-01-01'),
    note        text NOT NULL
                CONSTRAINT habit_day_notes_note_check CHECK (char_length(note) BETWEEN 1 AND 1000)
                CONSTRAINT habit_day_notes_note_bidi_check CHECK (habit.has_no_bidi_controls(note)),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    change_seq  bigint NOT NULL DEFAULT 0,
    CONSTRAINT habit_day_notes_pkey PRIMARY KEY (user_id, template_id, note_date),
    CONSTRAINT habit_day_notes_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE public.habit_day_notes IS
    'A note per habit and day ("knee hurt, walked instead"), whatever the day''s state; deleting the row clears it.';
COMMENT ON COLUMN public.habit_day_notes.user_id IS 'Owner; must be the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_day_notes.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_day_notes.note_date IS 'The calendar date, in the user''s time zone.';
COMMENT ON COLUMN public.habit_day_notes.note IS
    'The note: 1-1000 characters, no bidirectional control characters (an empty note is no row).';
COMMENT ON COLUMN public.habit_day_notes.created_at IS 'When the note was first written.';
COMMENT ON COLUMN public.habit_day_notes.updated_at IS 'When the note last changed. Set by trigger.';
COMMENT ON COLUMN public.habit_day_notes.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row. Set by trigger.';
CREATE INDEX habit_day_notes_user_date_idx ON public.habit_day_notes (user_id, note_date) INCLUDE (template_id);
CREATE INDEX habit_day_notes_user_change_seq_idx ON public.habit_day_notes (user_id, change_seq, template_id, note_date);

-- Deleted check-ins and notes leave tombstones like every synced row.
ALTER TABLE habit.sync_tombstones DROP CONSTRAINT sync_tombstones_kind_check,
    ADD CONSTRAINT sync_tombstones_kind_check
        CHECK (kind IN ('profile', 'habits', 'periods', 'completions', 'skips', 'lists', 'tasks', 'checkins', 'notes'));
COMMENT ON COLUMN habit.sync_tombstones.kind IS
    'What was deleted: profile, habits, periods, completions, skips, lists, tasks, checkins or notes.';
COMMENT ON COLUMN habit.sync_tombstones.key IS
    'The row''s key: its id (lowercase; a check-in''s too), ''<template_id>/<YYYY-MM-DD>'' for completions, skips and notes, '''' for the profile.';

-- habit.check_day (functions/history.sql) also answers the habit's target and kind (read with
-- the rules, so no trigger reads the habit twice): a new result type, so the old definition
-- goes first.
DROP FUNCTION IF EXISTS habit.check_day(uuid, uuid, date, text, boolean, uuid);

-- account.import takes a habit's kind and target, check-ins and notes (the document's optional
-- members, docs/protocol.md "Accounts"): staged like the rest (sql/0028).
ALTER TABLE habit.import_habits ADD COLUMN kind text, ADD COLUMN unit text, ADD COLUMN target numeric,
    ADD COLUMN target_type text, ADD COLUMN target_period text;
COMMENT ON COLUMN habit.import_habits.kind IS 'document.habits[i].kind (NULL: boolean).';
COMMENT ON COLUMN habit.import_habits.unit IS 'document.habits[i].unit.';
COMMENT ON COLUMN habit.import_habits.target IS 'document.habits[i].target (NULL: 1).';
COMMENT ON COLUMN habit.import_habits.target_type IS 'document.habits[i].target_type (NULL: at_least).';
COMMENT ON COLUMN habit.import_habits.target_period IS 'document.habits[i].target_period (NULL: day).';
CREATE UNLOGGED TABLE habit.import_checkins (
    user_id uuid NOT NULL, i integer NOT NULL, id uuid, template_id uuid, day date, value numeric, at_time time,
    PRIMARY KEY (user_id, i)
);
CREATE UNLOGGED TABLE habit.import_notes (
    user_id uuid NOT NULL, i integer NOT NULL, template_id uuid, day date, note text,
    PRIMARY KEY (user_id, i)
);
CREATE INDEX import_checkins_id_idx ON habit.import_checkins (user_id, id);
CREATE INDEX import_notes_day_idx ON habit.import_notes (user_id, template_id, day);
COMMENT ON TABLE habit.import_checkins IS 'account.import''s staged check-ins of the document, alive only inside the importing transaction (sql/0029).';
COMMENT ON TABLE habit.import_notes IS 'account.import''s staged notes of the document, alive only inside the importing transaction (sql/0029).';
COMMENT ON COLUMN habit.import_checkins.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_checkins.i IS 'The check-in''s index in document.checkins.';
COMMENT ON COLUMN habit.import_checkins.id IS 'document.checkins[i].id.';
COMMENT ON COLUMN habit.import_checkins.template_id IS 'document.checkins[i].template_id.';
COMMENT ON COLUMN habit.import_checkins.day IS 'document.checkins[i].date.';
COMMENT ON COLUMN habit.import_checkins.value IS 'document.checkins[i].value.';
COMMENT ON COLUMN habit.import_checkins.at_time IS 'document.checkins[i].time.';
COMMENT ON COLUMN habit.import_notes.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_notes.i IS 'The note''s index in document.notes.';
COMMENT ON COLUMN habit.import_notes.template_id IS 'document.notes[i].template_id.';
COMMENT ON COLUMN habit.import_notes.day IS 'document.notes[i].date.';
COMMENT ON COLUMN habit.import_notes.note IS 'document.notes[i].note.';
