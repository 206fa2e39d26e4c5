-- 0036 (issue 33, item 3): reminders. A habit has up to 24 reminders, each a local time of day
-- and the days it applies (the habit's due days, or chosen ISO weekdays of them). A push
-- sender (the gateway's process, not a user) asks which fire in a window of real time
-- (habit.reminders_due), claims them with a lease (habit.claim_reminder_firings) and
-- acknowledges them once sent (habit.ack_reminder_firings): functions/reminders.sql.
--
-- The window is answered from an index on (time_zone, local_time): for each zone, the window
-- is the range of local wall-clock times it covers (one to three local dates), so a window
-- reads the reminders whose local time falls in it and none other, whatever the total. That
-- needs the zone on the reminder: time_zone and day_starts_at copy the user's profile, set by
-- the reminder's trigger and kept by the profile's (a zone or day-start change takes effect for
-- the next firing).
CREATE TABLE public.habit_reminders (
    id            uuid NOT NULL DEFAULT gen_random_uuid(),
    user_id       uuid NOT NULL,
    template_id   uuid NOT NULL,
    local_time    time NOT NULL
                  CONSTRAINT habit_reminders_local_time_check
                  CHECK (local_time = date_trunc('minute', '2000-01-01'::date + local_time)::time),
    weekdays      smallint
                  CONSTRAINT habit_reminders_weekdays_check CHECK (weekdays BETWEEN 1 AND 127),
    time_zone     text NOT NULL DEFAULT 'UTC',
    day_starts_at time NOT NULL DEFAULT '00:00',
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    change_seq    bigint NOT NULL DEFAULT 0,
    CONSTRAINT habit_reminders_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE,
    -- Per user, as every key since sql/0027 (a table sharded by user keeps it unique).
    CONSTRAINT habit_reminders_pkey PRIMARY KEY (id, user_id),
    -- One reminder per time and days of a habit: a second is the same notification twice.
    CONSTRAINT habit_reminders_habit_time_key UNIQUE NULLS NOT DISTINCT (user_id, template_id, local_time, weekdays)
);
COMMENT ON TABLE public.habit_reminders IS
    'A habit''s reminders (at most 24 a habit): a local time of day on the habit''s due days, or on chosen ISO weekdays of them (sql/0036).';
COMMENT ON COLUMN public.habit_reminders.id IS 'The reminder''s id (reminders.set makes it; kept while its time and days are).';
COMMENT ON COLUMN public.habit_reminders.user_id IS 'Owner; must be the owner of the habit (composite foreign key).';
COMMENT ON COLUMN public.habit_reminders.template_id IS 'The habit.';
COMMENT ON COLUMN public.habit_reminders.local_time IS
    'Local time of day, whole minutes, in the user''s zone. It belongs to the habit''s day that contains it (with a day start of 04:00, 01:00 is the late part of the day before). A time a spring-forward day skips fires at the first instant after the gap; a time a fall-back day repeats fires at its first occurrence.';
COMMENT ON COLUMN public.habit_reminders.weekdays IS
    'NULL: every due day of the habit. Otherwise a bit set of ISO weekdays (bit 0 Monday … bit 6 Sunday): only due days that are one of them (weekday of the habit''s day).';
COMMENT ON COLUMN public.habit_reminders.time_zone IS
    'A copy of the user''s profiles.timezone (UTC without a profile), set by trigger: the window query''s index key. Not written by clients.';
COMMENT ON COLUMN public.habit_reminders.day_starts_at IS
    'A copy of the user''s profiles.day_starts_at (00:00 without a profile), set by trigger. Not written by clients.';
COMMENT ON COLUMN public.habit_reminders.created_at IS 'When the reminder was created.';
COMMENT ON COLUMN public.habit_reminders.updated_at IS 'When the reminder last changed. Set by trigger.';
COMMENT ON COLUMN public.habit_reminders.change_seq IS
    'The change number (habit.sync_clocks) of the write that last changed the row. Set by trigger.';
-- The sender's window: per zone, a range of local times, read from the index alone (what the
-- window's rules need of each reminder is in it).
CREATE INDEX habit_reminders_zone_time_idx ON public.habit_reminders (time_zone, local_time)
    INCLUDE (id, user_id, template_id, weekdays, day_starts_at);
CREATE INDEX habit_reminders_user_change_seq_idx ON public.habit_reminders (user_id, change_seq, id);

-- A firing is a reminder on a local date: its id is '<reminder id>/<YYYY-MM-DD>', computed, so
-- a sender's claim and acknowledgement name it without this table holding every firing. A row
-- exists once a firing is claimed: the lease (who holds it until when) and, once sent, acked_at.
-- Rows grow with firings sent, never with days or reminders; habit.prune_reminder_firings
-- removes acknowledged ones past the window a sender may ask for.
CREATE TABLE habit.reminder_firings (
    reminder_id  uuid NOT NULL,
    local_date   date NOT NULL,
    user_id      uuid NOT NULL,
    fire_at      timestamptz NOT NULL,
    holder       text CONSTRAINT reminder_firings_holder_check CHECK (char_length(holder) BETWEEN 1 AND 100),
    lease_until  timestamptz NOT NULL,
    claims       integer NOT NULL DEFAULT 1,
    acked_at     timestamptz,
    -- user_id last: a firing is found by reminder and date; it is in the key because a table
    -- sharded by user (Citus, docs/scaling.md) needs it in every unique constraint.
    CONSTRAINT reminder_firings_pkey PRIMARY KEY (reminder_id, local_date, user_id),
    CONSTRAINT reminder_firings_reminder_fkey FOREIGN KEY (reminder_id, user_id)
        REFERENCES public.habit_reminders (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE habit.reminder_firings IS
    'Claimed reminder firings (sql/0036): the lease a sender holds and, once sent, acked_at. Written only by habit.claim_reminder_firings and habit.ack_reminder_firings.';
COMMENT ON COLUMN habit.reminder_firings.reminder_id IS 'The reminder.';
COMMENT ON COLUMN habit.reminder_firings.local_date IS 'The local calendar date on which it fires (the firing id''s date).';
COMMENT ON COLUMN habit.reminder_firings.user_id IS 'The reminder''s user.';
COMMENT ON COLUMN habit.reminder_firings.fire_at IS 'The instant it fires, as computed when last claimed.';
COMMENT ON COLUMN habit.reminder_firings.holder IS 'The sender that claimed it (reminders.claim''s sender), or NULL for an anonymous claim.';
COMMENT ON COLUMN habit.reminder_firings.lease_until IS 'Until when the claim holds; after it, another claim takes the firing.';
COMMENT ON COLUMN habit.reminder_firings.claims IS 'How many claims took it (1: once; more: a lease ran out, or a sender renewed).';
COMMENT ON COLUMN habit.reminder_firings.acked_at IS 'When a sender acknowledged it as sent; never claimed or listed again.';
-- The hourly prune (habit.prune_reminder_firings) finds the old claims by when they fired.
CREATE INDEX reminder_firings_fire_at_idx ON habit.reminder_firings (fire_at);

-- Reminders are synced, exported and tombstoned like every user table.
ALTER TABLE habit.sync_tombstones DROP CONSTRAINT sync_tombstones_kind_check,
    ADD CONSTRAINT sync_tombstones_kind_check
        CHECK (kind IN ('profile', 'habits', 'periods', 'completions', 'skips', 'lists', 'tasks', 'checkins', 'notes', 'reminders'));
COMMENT ON COLUMN habit.sync_tombstones.kind IS
    'What was deleted: profile, habits, periods, completions, skips, lists, tasks, checkins, notes or reminders.';

-- account.import takes the document's reminders (an optional member): staged like the rest
-- (sql/0028).
CREATE UNLOGGED TABLE habit.import_reminders (
    user_id uuid NOT NULL, i integer NOT NULL, id uuid, template_id uuid, local_time time, weekdays smallint,
    PRIMARY KEY (user_id, i)
);
CREATE INDEX import_reminders_id_idx ON habit.import_reminders (user_id, id);
COMMENT ON TABLE habit.import_reminders IS 'account.import''s staged reminders of the document, alive only inside the importing transaction (sql/0036).';
COMMENT ON COLUMN habit.import_reminders.user_id IS 'The importing user (p_user).';
COMMENT ON COLUMN habit.import_reminders.i IS 'The reminder''s index in document.reminders.';
COMMENT ON COLUMN habit.import_reminders.id IS 'document.reminders[i].id.';
COMMENT ON COLUMN habit.import_reminders.template_id IS 'document.reminders[i].template_id.';
COMMENT ON COLUMN habit.import_reminders.local_time IS 'document.reminders[i].time.';
COMMENT ON COLUMN habit.import_reminders.weekdays IS 'document.reminders[i].days as a bit set (NULL: "due").';
