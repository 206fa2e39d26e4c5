-- The trigger of public.habit_streak_state (derived: written only by the triggers of the user
-- tables): a habit marked pending (a bulk write, or a change of its periods, schedule unit,
-- zone or week start) has its runs rebuilt once, at commit (functions/streaks.sql).
--
-- Current-state file (docs/schema.md, "Migrations"). A constraint trigger has no CREATE OR
-- REPLACE: it is dropped and made again.

DROP TRIGGER IF EXISTS habit_streak_state_rebuild ON public.habit_streak_state;
CREATE CONSTRAINT TRIGGER habit_streak_state_rebuild AFTER INSERT OR UPDATE ON public.habit_streak_state
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.pending) EXECUTE FUNCTION habit.habit_streak_state_rebuild();
