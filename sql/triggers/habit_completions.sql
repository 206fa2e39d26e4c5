-- The triggers of public.habit_completions: one BEFORE and one AFTER row trigger at most (issue
-- 29), each doing all of the table's bookkeeping for its timing and writing only rows of the
-- user_id of the row that fired it; nothing fires for a statement that touches no row, and an
-- UPDATE that changes nothing does nothing.
--
-- Current-state file: the table's trigger functions and triggers as they are now, applied
-- again by `habit migrate` whenever this file changes (docs/schema.md, "Migrations").
-- Removing a trigger needs a DROP TRIGGER in a versioned migration.

-- One BEFORE row trigger (SECURITY DEFINER: it writes the derived and sync tables, for the
-- row's user only) does all of a completion's bookkeeping, before the row is written:
-- earlier rows of the same statement are in the table by then (an AFTER row trigger would
-- see every row of its statement at once, and a change could not be applied alone).
--   insert, or an update giving a row a new (user, habit, date): the rules (habit.check_day:
--     the habit locked, HB003-HB005), the streak runs (habit.streak_apply), the change number
--     removing the new key's tombstone, the weekly-count marks (the day's week in either
--     convention: D - 6 ... D + 6, and the rest of a times_in_days block, habit.quota_reach);
--   delete: the habit locked, the runs, the tombstone, the marks;
--   an update moving a row to another date or habit (an admin's): both habits marked for a
--     rebuild at commit instead of applied;
--   an update changing nothing: nothing.
CREATE OR REPLACE FUNCTION habit.habit_completions_before() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        day record;
        total numeric;
        checkin_count bigint;
        weekly boolean;
        st public.habit_streak_state;
    BEGIN
        -- A user's request writing another user's row: row-level security refuses it; nothing
        -- here may run first (its checks would tell that user something about the other's habit,
        -- and its locks make it wait for that user's writes). A user's request is any role that
        -- does not act for users (habit.acts_for_users: authenticated, a role inheriting it);
        -- the roles that do are the ones row-level security lets write the row, and get the
        -- rules. Nested so that the user's own row (every write of the worker) asks no catalog.
        IF coalesce(NEW.user_id, OLD.user_id) IS DISTINCT FROM auth.uid() THEN
            IF NOT habit.acts_for_users() THEN
                RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
            END IF;
        END IF;
        IF TG_OP = 'DELETE' THEN
            day := habit.check_day(OLD.user_id, OLD.template_id, OLD.completed_date, 'completion', false, NULL);
            -- Loop's score: a day written on or before the habit's checkpoint forgets it (sql/0038),
            -- after the habit's lock: the batch skips a habit a write holds, and a write that waited
            -- for the batch sees its checkpoint (habit.score_checkpoints_advance).
            DELETE FROM habit.score_checkpoints cp
            WHERE cp.user_id = OLD.user_id AND cp.template_id = OLD.template_id AND cp.as_of >= OLD.completed_date;
            IF (day.st).user_id IS NOT NULL AND NOT (day.st).pending THEN
                PERFORM habit.streak_apply(day.st, OLD.completed_date, 'completion', false);
            END IF;
            weekly := habit.is_counted(day.kind, day.target, day.target_type) AND EXISTS (SELECT 1 FROM public.habit_templates t
                                                         WHERE t.id = OLD.template_id AND t.user_id = OLD.user_id AND t.target_period = 'week');
            -- Undone while its check-ins still meet the target (a direct writer's un-toggle): the
            -- un-toggle wins and the day's check-ins go (sql/0029, sql/0031: an at-most day is
            -- not entered any more). Their trigger, running inside this one, leaves this row to
            -- this delete. A weekly target (sql/0033): un-doing the day (this trigger not run by
            -- another's) clears the day's check-ins as well, and the week is decided again from
            -- the rest (habit.week_follow: it may be met on a later day); removed by the week's
            -- own bookkeeping (one level down), it leaves them.
            IF weekly THEN
                IF pg_trigger_depth() = 1 THEN
                    DELETE FROM public.habit_checkins i
                    WHERE i.user_id = OLD.user_id AND i.template_id = OLD.template_id AND i.checkin_date = OLD.completed_date;
                    PERFORM habit.week_follow(OLD.user_id, OLD.template_id, OLD.completed_date, OLD.completed_date, OLD.completed_date);
                END IF;
            ELSIF day.target IS NOT NULL THEN
                SELECT coalesce(sum(i.value), 0), count(*) INTO total, checkin_count FROM public.habit_checkins i
                WHERE i.user_id = OLD.user_id AND i.template_id = OLD.template_id AND i.checkin_date = OLD.completed_date;
                IF checkin_count > 0 AND habit.value_meets(total, day.target, day.target_type) THEN
                    DELETE FROM public.habit_checkins i
                    WHERE i.user_id = OLD.user_id AND i.template_id = OLD.template_id AND i.checkin_date = OLD.completed_date;
                END IF;
            END IF;
            PERFORM habit.sync_tombstone(OLD.user_id, 'completions', OLD.template_id::text || '/' || to_char(OLD.completed_date, 'YYYY-MM-DD'));
            IF day.tracking THEN
                PERFORM habit.weekly_counts_mark(OLD.user_id, daterange(OLD.completed_date - 6, OLD.completed_date + 7 + habit.quota_reach(OLD.user_id, OLD.template_id), '[)'));
            END IF;
            RETURN OLD;
        ELSIF TG_OP = 'UPDATE' THEN
            IF NEW IS NOT DISTINCT FROM OLD THEN
                RETURN NEW;
            ELSIF (NEW.user_id, NEW.template_id, NEW.completed_date) IS NOT DISTINCT FROM (OLD.user_id, OLD.template_id, OLD.completed_date) THEN
                NEW.change_seq := habit.sync_stamp(NEW.user_id, 'completions', NULL);
                RETURN NEW;
            END IF;
            PERFORM 1 FROM public.habit_templates t WHERE t.id = OLD.template_id AND t.user_id = OLD.user_id FOR NO KEY UPDATE;
            day := habit.check_day(NEW.user_id, NEW.template_id, NEW.completed_date, 'completion', true, NEW.id);
            PERFORM habit.streak_invalidate(OLD.user_id, OLD.template_id);
            PERFORM habit.streak_invalidate(NEW.user_id, NEW.template_id);
            PERFORM habit.sync_tombstone(OLD.user_id, 'completions', OLD.template_id::text || '/' || to_char(OLD.completed_date, 'YYYY-MM-DD'));
            PERFORM habit.weekly_counts_mark(OLD.user_id, daterange(OLD.completed_date - 6, OLD.completed_date + 7 + habit.quota_reach(OLD.user_id, OLD.template_id), '[)'));
        ELSE
            day := habit.check_day(NEW.user_id, NEW.template_id, NEW.completed_date, 'completion', true, NEW.id);
            st := day.st;
            -- A weekly target (sql/0033): at least, the completion says the week was met by this
            -- day (habit.week_toggle: refused when met earlier; a check-in of the rest; the
            -- week's later completion goes, so the runs are read again); at most, the day is kept
            -- (refused over the target). Written by the week's own bookkeeping (one level down),
            -- it is the week's already.
            weekly := habit.is_counted(day.kind, day.target, day.target_type)
                      AND EXISTS (SELECT 1 FROM public.habit_templates t
                                  WHERE t.id = NEW.template_id AND t.user_id = NEW.user_id AND t.target_period = 'week');
            IF weekly AND pg_trigger_depth() = 1 AND NOT EXISTS (SELECT 1 FROM public.habit_completions c
                                                                  WHERE c.user_id = NEW.user_id AND c.template_id = NEW.template_id
                                                                    AND c.completed_date = NEW.completed_date) THEN
                IF habit.week_toggle(NEW.user_id, NEW.template_id, NEW.completed_date, day.target, day.target_type) THEN
                    SELECT x.* INTO st FROM public.habit_streak_state x WHERE x.user_id = NEW.user_id AND x.template_id = NEW.template_id;
                END IF;
            END IF;
            IF st.user_id IS NOT NULL AND NOT st.pending THEN
                PERFORM habit.streak_apply(st, NEW.completed_date, 'completion', true);
            END IF;
            -- A day counted from check-ins (habit.is_counted) is done when they meet the target.
            -- Marked done while they do not (a toggle, completions.set "done"): under an
            -- at-least target the toggle wins, and a check-in of the rest makes the value the
            -- target; over an at-most target it is refused (HB007: what was taken cannot be
            -- undone by a tap; remove check-ins first). Without check-ins an at-most day is kept
            -- at 0 (sql/0031).
            IF NOT weekly AND habit.is_counted(day.kind, day.target, day.target_type) AND NOT EXISTS (SELECT 1 FROM public.habit_completions c
                                           WHERE c.user_id = NEW.user_id AND c.template_id = NEW.template_id
                                             AND c.completed_date = NEW.completed_date) THEN
                SELECT coalesce(sum(i.value), 0) INTO total FROM public.habit_checkins i
                WHERE i.user_id = NEW.user_id AND i.template_id = NEW.template_id AND i.checkin_date = NEW.completed_date;
                IF day.target_type = 'at_most' THEN
                    IF NOT habit.value_meets(total, day.target, day.target_type) THEN
                        RAISE EXCEPTION 'habit % is over its target on %: % taken, at most % allowed', NEW.template_id, NEW.completed_date,
                                        total, day.target
                            USING ERRCODE = 'HB007', TABLE = 'habit_completions', SCHEMA = 'public';
                    END IF;
                ELSIF total < day.target THEN
                    INSERT INTO public.habit_checkins (user_id, template_id, checkin_date, value)
                    VALUES (NEW.user_id, NEW.template_id, NEW.completed_date, day.target - total);
                END IF;
            END IF;
        END IF;
        -- The checkpoint, as above, for the row written.
        IF TG_OP = 'UPDATE' THEN
            DELETE FROM habit.score_checkpoints cp
            WHERE cp.user_id = OLD.user_id AND cp.template_id = OLD.template_id AND cp.as_of >= OLD.completed_date;
        END IF;
        DELETE FROM habit.score_checkpoints cp
        WHERE cp.user_id = NEW.user_id AND cp.template_id = NEW.template_id AND cp.as_of >= NEW.completed_date;
        NEW.change_seq := habit.sync_stamp(NEW.user_id, 'completions', NEW.template_id::text || '/' || to_char(NEW.completed_date, 'YYYY-MM-DD'));
        IF day.tracking THEN
            PERFORM habit.weekly_counts_mark(NEW.user_id, daterange(NEW.completed_date - 6, NEW.completed_date + 7 + habit.quota_reach(NEW.user_id, NEW.template_id), '[)'));
        END IF;
        RETURN NEW;
    END
    $fn$;

CREATE OR REPLACE TRIGGER habit_completions_before BEFORE INSERT OR UPDATE OR DELETE ON public.habit_completions
    FOR EACH ROW EXECUTE FUNCTION habit.habit_completions_before();
