-- The triggers of public.habit_templates: one BEFORE and one AFTER row trigger at most (issue
-- 29), each doing all of the table's bookkeeping for its timing and writing only rows of the
-- user_id of the row that fired it; nothing fires for a statement that touches no row, and an
-- UPDATE that changes nothing does nothing. A TRUNCATE trigger (statement-level: the one kind
-- there is) forgets the row counters.
--
-- Current-state file: the table's trigger functions and triggers as they are now, applied
-- again by `habit migrate` whenever this file changes (docs/schema.md, "Migrations").
-- Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- BEFORE: a new or changed activated_at lies on or after 1970-01-01 00:00 UTC (23514,
-- CONSTRAINT habit_templates_activated_at_range; sql/migrations/0021); on UPDATE, the periods follow is_active and schedule (sql/0010's rules, at now()),
-- updated_at is touched; the change number. SECURITY DEFINER: periods are written only here.
CREATE OR REPLACE FUNCTION habit.habit_templates_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        open_period public.habit_periods;
    BEGIN
        -- A user's request writing another user's row: row-level security refuses it after this
        -- trigger; nothing here may run first (sql/0023: the change number would lock the other
        -- user's clock, waiting for that user's writes and blocking them). A user's request is
        -- any role that does not act for users (habit.acts_for_users; the rule and the reason in
        -- triggers/habit_completions.sql); the user's own row asks no catalog.
        IF NEW.user_id IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN NEW;
            END IF;
        END IF;
        -- The range (sql/migrations/0021): a new or changed activation starts on or after
        -- habit.earliest_day() at 00:00 UTC; older rows keep theirs, and stay editable.
        IF (TG_OP = 'INSERT' OR NEW.activated_at IS DISTINCT FROM OLD.activated_at)
           AND NEW.activated_at < habit.earliest_day()::timestamp AT TIME ZONE 'UTC' THEN
            RAISE EXCEPTION 'activated_at % is before % 00:00 UTC: violates check constraint "habit_templates_activated_at_range"', NEW.activated_at, habit.earliest_day()
                USING ERRCODE = 'check_violation', CONSTRAINT = 'habit_templates_activated_at_range',
                      TABLE = 'habit_templates', COLUMN = 'activated_at', SCHEMA = 'public';
        END IF;
        IF TG_OP = 'UPDATE' THEN
            IF NEW IS NOT DISTINCT FROM OLD THEN
                RETURN NEW;
            END IF;
            -- A habit's kind is fixed at creation (sql/0029): its recorded days mean times or a
            -- unit, and one cannot become the other.
            IF NEW.kind IS DISTINCT FROM OLD.kind THEN
                RAISE EXCEPTION 'a habit''s kind is fixed when it is created (% to %): violates check constraint "habit_templates_kind_fixed"', OLD.kind, NEW.kind
                    USING ERRCODE = 'check_violation', CONSTRAINT = 'habit_templates_kind_fixed',
                          TABLE = 'habit_templates', COLUMN = 'kind', SCHEMA = 'public';
            END IF;
            -- So is its target's period (sql/0033): a week's completion and a day's mean
            -- different things, and the days recorded under one cannot be read as the other.
            IF NEW.target_period IS DISTINCT FROM OLD.target_period THEN
                RAISE EXCEPTION 'a habit''s target period is fixed when it is created (% to %): violates check constraint "habit_templates_target_period_fixed"', OLD.target_period, NEW.target_period
                    USING ERRCODE = 'check_violation', CONSTRAINT = 'habit_templates_target_period_fixed',
                          TABLE = 'habit_templates', COLUMN = 'target_period', SCHEMA = 'public';
            END IF;
            IF OLD.is_active IS DISTINCT FROM NEW.is_active OR OLD.schedule IS DISTINCT FROM NEW.schedule THEN
                SELECT p.* INTO open_period FROM public.habit_periods p
                WHERE p.user_id = OLD.user_id AND p.template_id = OLD.id AND p.ended_at IS NULL FOR UPDATE;
                IF OLD.is_active AND NOT NEW.is_active THEN
                    -- Closing: at now(); a period that has not started yet never was active.
                    IF FOUND THEN
                        IF open_period.started_at >= now() THEN
                            DELETE FROM public.habit_periods p WHERE p.user_id = OLD.user_id AND p.id = open_period.id;
                        ELSE
                            UPDATE public.habit_periods p SET ended_at = now() WHERE p.user_id = OLD.user_id AND p.id = open_period.id;
                        END IF;
                    END IF;
                    NEW.deactivated_at := now();
                ELSIF NOT OLD.is_active AND NEW.is_active THEN
                    -- Opening: at now(), or reopening a period closed at this very instant with the same schedule.
                    IF NOT FOUND THEN
                        UPDATE public.habit_periods p SET ended_at = NULL
                        WHERE p.user_id = OLD.user_id AND p.template_id = OLD.id AND p.ended_at = now() AND p.schedule = NEW.schedule;
                        IF NOT FOUND THEN
                            INSERT INTO public.habit_periods (user_id, template_id, started_at, schedule)
                            VALUES (NEW.user_id, NEW.id, now(), NEW.schedule);
                        END IF;
                    END IF;
                    IF NOT EXISTS (SELECT 1 FROM public.habit_periods p
                                   WHERE p.user_id = OLD.user_id AND p.template_id = OLD.id AND p.started_at < now()) THEN
                        NEW.activated_at := now();
                    END IF;
                    NEW.deactivated_at := NULL;
                ELSIF NEW.is_active AND NEW.schedule IS DISTINCT FROM OLD.schedule AND FOUND THEN
                    -- A new schedule: the open period ends now and one starts, or a period starting
                    -- now or later takes it.
                    IF open_period.started_at >= now() THEN
                        UPDATE public.habit_periods p SET schedule = NEW.schedule WHERE p.user_id = OLD.user_id AND p.id = open_period.id;
                    ELSE
                        UPDATE public.habit_periods p SET ended_at = now() WHERE p.user_id = OLD.user_id AND p.id = open_period.id;
                        INSERT INTO public.habit_periods (user_id, template_id, started_at, schedule)
                        VALUES (NEW.user_id, NEW.id, now(), NEW.schedule);
                    END IF;
                END IF;
            END IF;
            IF NEW IS DISTINCT FROM OLD THEN
                NEW.updated_at := now();
            END IF;
        END IF;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'habits',
            CASE WHEN TG_OP = 'INSERT' OR (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN NEW.id::text END);
        RETURN NEW;
    END
    $fn$;

-- AFTER: a new target or target type re-decides the days that have check-ins (habit.checkins_retarget); a
-- new habit gets its first period [activated_at, deactivated_at) (open when active;
-- none when deactivated at or before its activation) and its streak state (no events yet:
-- nothing to count, whatever activated_at), and counts against the row limit; a deleted or
-- moved habit leaves a tombstone and its count; a schedule change of an inactive habit can
-- change its unit (the periods' trigger covers the rest); habits coming or going mark the
-- user's weekly counts.
CREATE OR REPLACE FUNCTION habit.habit_templates_after() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            IF NEW.is_active OR NEW.deactivated_at > NEW.activated_at THEN
                INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at, schedule)
                VALUES (NEW.user_id, NEW.id, NEW.activated_at, CASE WHEN NOT NEW.is_active THEN NEW.deactivated_at END, NEW.schedule);
            END IF;
            INSERT INTO public.habit_streak_state (user_id, template_id, unit, wk, segs, has_tpw, first_slot, closed_until)
            SELECT NEW.user_id, NEW.id, h.unit, h.wk, h.segs, h.has_tpw, h.first_slot,
                   (SELECT max(s.hi) FROM unnest(h.segs) s WHERE s.hi < 'infinity')
            FROM habit.streak_habit(NEW.user_id, NEW.id) h;
            PERFORM habit.count_row(NEW.user_id, 'habit_templates', 1);
            PERFORM habit.weekly_counts_mark(NEW.user_id, '(,)');
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM habit.sync_tombstone(OLD.user_id, 'habits', OLD.id::text);
            PERFORM habit.count_row(OLD.user_id, 'habit_templates', -1);
            PERFORM habit.weekly_counts_mark(OLD.user_id, '(,)');
        ELSIF NEW IS DISTINCT FROM OLD THEN
            IF (NEW.user_id, NEW.id) IS DISTINCT FROM (OLD.user_id, OLD.id) THEN
                PERFORM habit.sync_tombstone(OLD.user_id, 'habits', OLD.id::text);
                IF NEW.user_id IS DISTINCT FROM OLD.user_id THEN
                    PERFORM habit.count_row(OLD.user_id, 'habit_templates', -1);
                    PERFORM habit.count_row(NEW.user_id, 'habit_templates', 1);
                    PERFORM habit.weekly_counts_mark(OLD.user_id, '(,)');
                    PERFORM habit.weekly_counts_mark(NEW.user_id, '(,)');
                END IF;
            END IF;
            IF habit.streak_unit(NEW.schedule) IS DISTINCT FROM habit.streak_unit(OLD.schedule) THEN
                PERFORM habit.streak_invalidate(NEW.user_id, NEW.id);
            END IF;
            IF (NEW.target, NEW.target_type) IS DISTINCT FROM (OLD.target, OLD.target_type) THEN
                PERFORM habit.checkins_retarget(NEW.user_id, NEW.id, NEW.target, NEW.target_type);
            END IF;
        END IF;
        RETURN NULL;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_templates_before BEFORE INSERT OR UPDATE ON public.habit_templates
    FOR EACH ROW EXECUTE FUNCTION habit.habit_templates_before();
CREATE OR REPLACE TRIGGER habit_templates_after AFTER INSERT OR UPDATE OR DELETE ON public.habit_templates
    FOR EACH ROW EXECUTE FUNCTION habit.habit_templates_after();
CREATE OR REPLACE TRIGGER habit_templates_truncate AFTER TRUNCATE ON public.habit_templates
    FOR EACH STATEMENT EXECUTE FUNCTION habit.count_truncated_rows();
