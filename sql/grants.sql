-- Who may do what: every privilege on our schemas, tables, views and functions, and the
-- worker's role membership, in one place (docs/schema.md, "Roles"). Row-level security then
-- decides which rows (sql/policies.sql).
--
-- Current-state file, applied last, again whenever it changes or a versioned migration ran
-- (docs/schema.md, "Migrations"). Each object first loses every privilege of PUBLIC and of our
-- roles, then gets exactly the ones listed here, whatever it had before: a privilege removed
-- from this file is revoked on the next `habit migrate`, and a function or table added to
-- habit or admin is usable by nobody but its owner until it is listed. On Supabase every new
-- table in public gets ALL for anon, authenticated and service_role from ALTER DEFAULT
-- PRIVILEGES of postgres and supabase_admin; those defaults are Supabase's, not ours to change,
-- so each relation of ours is set explicitly here. Only our objects are named: public holds
-- other people's tables, and auth and extensions are Supabase's where it runs (auth.uid()'s
-- grants are made with it, in the baseline, only where it is created).
--
-- The roles (the baseline creates them; docs/schema.md, "Roles"):
--   authenticated  a user's requests, under row-level security (the worker acts as it)
--   service_role   Supabase's server-side role (bypasses row-level security)
--   anon           nothing at all
--   habit_worker   the worker's login role: acts only through SET LOCAL ROLE authenticated
--   habit_batch    batch jobs: read habits and completions of every user, write the summaries
--   habit_admin    people in psql: read-only, plus the admin schema and a few admin functions

-- The worker logs in as habit_worker and becomes authenticated per transaction.
GRANT authenticated TO habit_worker;

-- Schemas ---------------------------------------------------------------------------------
REVOKE ALL ON SCHEMA habit, admin FROM PUBLIC, anon, authenticated, service_role, habit_batch, habit_admin, habit_worker;
GRANT USAGE ON SCHEMA habit TO authenticated, service_role, habit_batch, habit_admin, habit_worker;
GRANT USAGE ON SCHEMA admin TO habit_admin;
-- btree_gist's ~200 functions: nobody of ours uses the schema (the constraint finds the
-- operator class by type). On Supabase the schema is Supabase's: only PUBLIC's USAGE goes.
REVOKE ALL ON SCHEMA extensions FROM PUBLIC;

-- Tables and views --------------------------------------------------------------------------
-- No TRUNCATE, TRIGGER or REFERENCES (nor MAINTAIN on PostgreSQL 17+) for anyone but the owner.
REVOKE ALL ON public.profiles, public.habit_templates, public.habit_completions, public.habit_periods,
    public.habit_skips, public.habit_checkins, public.habit_day_notes, public.habit_streak_runs, public.habit_streak_state, public.weekly_completion_counts,
    public.task_lists, public.tasks, public.habit_reminders, public.habit_areas
    FROM PUBLIC, anon, authenticated, service_role, habit_batch, habit_admin, habit_worker;
REVOKE ALL ON ALL TABLES IN SCHEMA habit, admin
    FROM PUBLIC, anon, authenticated, service_role, habit_batch, habit_admin, habit_worker;

-- The apps' own rows: a user reads and writes them (row-level security: only their own).
GRANT SELECT, INSERT, UPDATE, DELETE ON public.profiles, public.habit_templates, public.habit_completions,
    public.habit_skips, public.habit_checkins, public.habit_day_notes, public.task_lists, public.tasks, public.habit_reminders,
    public.habit_areas
    TO authenticated, service_role;
-- Derived rows, written only by SECURITY DEFINER triggers (periods, the streak runs) or the
-- batch (weekly counts): users read.
GRANT SELECT ON public.habit_periods, public.habit_streak_runs, public.habit_streak_state,
    public.weekly_completion_counts TO authenticated, service_role;
-- Batch jobs read what weekly counts read (never tasks or lists) and write the stored counts.
GRANT SELECT ON public.profiles, public.habit_templates, public.habit_completions, public.habit_periods,
    public.habit_skips, public.habit_checkins, public.habit_day_notes, public.habit_streak_runs, public.habit_streak_state TO habit_batch;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.weekly_completion_counts TO habit_batch;
-- Admins read everything of ours.
GRANT SELECT ON public.profiles, public.habit_templates, public.habit_completions, public.habit_periods,
    public.habit_skips, public.habit_checkins, public.habit_day_notes, public.habit_streak_runs, public.habit_streak_state,
    public.weekly_completion_counts, public.task_lists, public.tasks, public.habit_reminders, public.habit_areas TO habit_admin;
GRANT SELECT ON ALL TABLES IN SCHEMA habit, admin TO habit_admin;

-- habit: zone names for every role that computes a date; the migrations for system.health
-- (habit.current_state_files: admins only, above).
GRANT SELECT ON habit.time_zones TO authenticated, service_role, habit_worker, habit_batch;
GRANT SELECT ON habit.schema_migrations TO service_role, habit_worker, habit_batch;
-- Sync: a pull reads its clock and tombstones; a push reads its replay records and writes them
-- only through habit.sync_mutation_claim/_record (sql/0023: no INSERT or UPDATE of its own, so
-- no record of any size written by hand).
GRANT SELECT ON habit.sync_clocks, habit.sync_tombstones, habit.sync_mutations TO authenticated, service_role;
-- Loop's score reads its checkpoint as the caller (sql/0038); the batch writes through
-- habit.score_checkpoints_advance (SECURITY DEFINER) and reads to report.
GRANT SELECT ON habit.score_checkpoints TO authenticated, service_role, habit_batch;
-- Incremental weekly counts: the batch keeps its state and claims the dirty days.
GRANT SELECT, UPDATE ON habit.weekly_counts_state TO habit_batch;
GRANT SELECT, INSERT, DELETE ON habit.weekly_counts_dirty TO habit_batch;
-- habit.row_limits, habit.user_row_counts: admins read (above); changing a limit is an
-- operator's UPDATE as the owner (docs/admin.md).

-- Functions -----------------------------------------------------------------------------------
-- None but the owner, then EXECUTE to the roles that call each. A trigger function needs no
-- EXECUTE to fire, so the trigger functions and the helpers only they call are granted to
-- nobody: the trigger functions (habit.<table>_before/_after, habit_streak_state_rebuild,
-- user_row_counts_recount, count_truncated_rows), habit.check_row_limit, count_row,
-- next_change_seq, check_acting_for, acts_for_users, sync_stamp, sync_tombstone, import_refusal,
-- weekly_counts_mark, streak_invalidate, streak_rebuild, streak_apply, rebuild_pending_streaks,
-- checkin_day_follow, checkins_retarget, week_follow, week_toggle, quota_reach. They run as their
-- owner inside the SECURITY DEFINER trigger functions; a user calling one directly could write
-- another user's derived rows.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA habit, admin
    FROM PUBLIC, anon, authenticated, service_role, habit_batch, habit_admin, habit_worker;

-- Time zones, dates and weeks, and the rules of "on" and "due": whoever computes a day.
GRANT EXECUTE ON FUNCTION habit.user_time_zone(uuid, text), habit.local_date(timestamptz, text),
    habit.local_day(timestamptz, text, time), habit.day_begins(date, text, time), habit.user_day_start(uuid), habit.user_today(uuid, text),
    habit.is_counted(text, numeric, text), habit.value_meets(numeric, numeric, text), habit.done_value(numeric, text),
    habit.week_start(date, integer), habit.week_start_isodow(text), habit.user_week_start_isodow(uuid),
    habit.valid_schedule(jsonb), habit.period_on_days(timestamptz, timestamptz, text, date, time),
    habit.due_days(jsonb, date, daterange, date), habit.due_on(jsonb, date, date), habit.week_target_met_on(uuid, uuid, date, integer),
    habit.week_value_met_on(uuid, uuid, date, numeric, text),
    habit.quota_block_start(jsonb, date, integer, date), habit.quota_block_days(jsonb),
    habit.block_target_met_on(uuid, uuid, date, integer, integer),
    habit.habit_days_at(uuid, date, date, date, text, uuid), habit.habit_days(uuid, date, date, text)
    TO authenticated, service_role, habit_batch, habit_admin;
-- The text rule of the names', titles' and notes' CHECK constraints (sql/0019): every role
-- that writes those tables evaluates it (a CHECK's function needs EXECUTE like any call);
-- admins and the batch may look for rows with it, as with habit.valid_schedule.
GRANT EXECUTE ON FUNCTION habit.has_no_bidi_controls(text) TO authenticated, service_role, habit_batch, habit_admin;
-- The zone-name rule of habit.time_zones' CHECK (sql/0023): admins may look for rows with it.
GRANT EXECUTE ON FUNCTION habit.is_zone_name(text) TO habit_admin;
GRANT EXECUTE ON FUNCTION habit.is_on_day(boolean, timestamptz, date, text),
    habit.completion_refusal(boolean, date, date, boolean),
    habit.backfilling(), habit.check_future(date, date, boolean)
    TO authenticated, service_role, habit_admin;

-- A user's writes (the worker, or an app through Supabase).
GRANT EXECUTE ON FUNCTION habit.next_habit_sort_order(uuid), habit.next_task_position(uuid, date),
    habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer),
    habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb),
    habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb, jsonb),
    habit.create_habit(uuid, uuid, text, text, text, timestamptz, integer, jsonb, jsonb, uuid),
    habit.order_between(integer[], integer, integer),
    habit.create_area(uuid, uuid, text), habit.move_area(uuid, uuid, uuid, uuid),
    habit.create_list(uuid, uuid, text), habit.create_task(uuid, uuid, text, text, uuid, date, integer),
    habit.set_schedule(uuid, jsonb), habit.move_habit(uuid, uuid, uuid, uuid), habit.set_habit_archived(uuid, uuid, boolean),
    habit.set_day_state(uuid, uuid, date, text, text, boolean), habit.set_skips(uuid, uuid, date, date, boolean, text),
    habit.toggle_day(uuid, uuid, date, text),
    habit.add_checkin(uuid, uuid, date, numeric, time, text, text), habit.remove_checkin(uuid, uuid),
    habit.set_day_value(uuid, uuid, date, numeric, text), habit.day_value(uuid, uuid, date), habit.week_value(uuid, uuid, date),
    habit.set_day_note(uuid, uuid, date, text),
    habit.import_account(uuid, jsonb, text), habit.account_document_with_new_ids(uuid, jsonb), habit.account_new_id(uuid, text, text),
    habit.sync_mutation_claim(uuid, text, text), habit.sync_mutation_record(uuid, text, text, jsonb),
    habit.lock_user_writes(uuid)
    TO authenticated, service_role;
-- The worker's change listener learns each subscribed user's notification token, as that user
-- (sql/0025), then polls those users' clocks by token as habit_worker itself (sql/0026): the
-- poll reads many users at once, so it is not the users' (authenticated is not granted it).
GRANT EXECUTE ON FUNCTION habit.change_token(uuid) TO authenticated, service_role;
GRANT EXECUTE ON FUNCTION habit.changed_clocks(uuid[], bigint[]) TO habit_worker, service_role;
-- Account deletion checks who calls it (the user, or an admin).
GRANT EXECUTE ON FUNCTION habit.delete_account(uuid) TO authenticated, service_role, habit_admin;

-- Streaks, rates and the calendar, and day.get's one-day path: reads, and the engine they
-- run as their caller (row-level security applies).
GRANT EXECUTE ON FUNCTION habit.habit_slots(uuid, uuid, text, date, date, date), habit.streak_unit(jsonb),
    habit.habit_stats_scan(uuid, uuid, date, date), habit.habit_stats(uuid, uuid, date),
    habit.habit_score(uuid, uuid, date, text, time, boolean), habit.habit_scores(uuid, uuid, date),
    habit.habit_scores_at(uuid, uuid[], date, text, time), habit.loop_numerator(jsonb), habit.loop_denominator(jsonb),
    habit.loop_share(double precision, double precision, double precision, boolean, boolean),
    habit.score_basis(date, jsonb, text, numeric, text),
    habit.habits_on(uuid, date, date, text, time), habit.day_habits(uuid, date, date, text, integer, time),
    habit.current_streak(uuid, uuid, date, date), habit.current_streaks(uuid, date),
    habit.stats_calendar(uuid, uuid, date, date),
    habit.streak_stats(uuid, uuid, date, date), habit.streak_windows(habit.streak_habit, public.habit_streak_state, date[], date),
    habit.streak_state_answers(public.habit_streak_state, date, date), habit.streak_kept_between(uuid, uuid, date, date),
    habit.streak_segments(uuid, uuid, text, date, time), habit.streak_habit(uuid, uuid),
    habit.streak_habit_of(public.habit_streak_state), habit.streak_segment_due(habit.streak_segment, date, date),
    habit.streak_quiet_due(habit.streak_habit, date, date), habit.streak_segment_at(habit.streak_habit, date),
    habit.streak_next_quiet_due(habit.streak_habit, date), habit.streak_is_due(habit.streak_habit, habit.streak_segment, date),
    habit.streak_days(habit.streak_habit, date, date, date, text, boolean),
    habit.streak_slot_states(habit.streak_habit, date, date, date, text, boolean),
    habit.streak_slot_state(habit.streak_habit, date), habit.streak_quiet_weeks(habit.streak_habit, date, date),
    habit.streak_open(habit.streak_habit, date, date), habit.streak_first_missed(habit.streak_habit, date, date),
    habit.streak_kept_before(habit.streak_habit, date), habit.streak_kept_after(habit.streak_habit, date),
    habit.streak_kept_slots(habit.streak_habit),
    habit.streak_gap_missed(habit.streak_habit, date, date, date[], text[]),
    habit.streak_gap_first_missed(habit.streak_habit, date, date, date[], text[])
    TO authenticated, service_role, habit_batch, habit_admin;
GRANT USAGE ON TYPE habit.streak_segment, habit.streak_habit TO authenticated, service_role, habit_batch, habit_admin;
GRANT EXECUTE ON FUNCTION habit.rebuild_all_streaks() TO habit_admin;

-- Weekly counts: the batch, admins, and Supabase's server side.
GRANT EXECUTE ON FUNCTION habit.weekly_counts(date, date, text, uuid), habit.weekly_counts_of(date, date, text, uuid[]),
    habit.weekly_values(date, date, text, uuid)
    TO habit_batch, habit_admin, service_role;
-- week.counts reads its week's values through the batch's definition, as the user (row-level security).
GRANT EXECUTE ON FUNCTION habit.weekly_values(date, date, text, uuid) TO authenticated;
GRANT EXECUTE ON FUNCTION habit.weekly_counts_start_tracking(text) TO habit_batch, habit_admin;
GRANT EXECUTE ON FUNCTION habit.weekly_counts_mark_days_passed(text, timestamptz) TO habit_batch;
-- Loop's score checkpoints (sql/0038): the nightly batch and admins move them, for any user.
GRANT EXECUTE ON FUNCTION habit.score_checkpoints_advance(uuid, integer, integer) TO habit_batch, habit_admin;

-- Reminders (sql/0036): a user replaces a habit's reminders; the zone's wall clock for whoever
-- computes an instant; the push sender's window, claim and acknowledgement run as the worker's
-- login role (SECURITY DEFINER: a window holds many users), never as a user.
GRANT EXECUTE ON FUNCTION habit.set_reminders(uuid, uuid, time[], smallint[]) TO authenticated, service_role;
GRANT EXECUTE ON FUNCTION habit.wall_floor(timestamptz, text), habit.fire_instant(timestamp, text)
    TO authenticated, service_role, habit_batch, habit_admin;
GRANT EXECUTE ON FUNCTION habit.reminders_due(timestamptz, timestamptz, integer),
    habit.claim_reminder_firings(text[], interval, text), habit.ack_reminder_firings(text[]),
    habit.prune_reminder_firings(interval)
    TO habit_worker, service_role;
GRANT EXECUTE ON FUNCTION habit.prune_reminder_firings(interval) TO habit_admin;

-- Sync: the worker prunes on a schedule; admins prune and reset.
GRANT EXECUTE ON FUNCTION habit.prune_sync(interval) TO habit_worker, habit_admin;
GRANT EXECUTE ON FUNCTION habit.sync_reset(uuid) TO habit_admin;
-- A push keeps its user's replay records within the per-user caps (as that user).
GRANT EXECUTE ON FUNCTION habit.prune_replay_records(uuid) TO authenticated, service_role, habit_admin;

-- The admin schema.
GRANT EXECUTE ON FUNCTION admin.inactive_users(integer), admin.user_week(uuid, date, text) TO habit_admin;
