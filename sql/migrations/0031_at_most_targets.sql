-- 0031 (issue 32, item 1): at-most targets ("at most 2 coffees a day").
--
-- A day of an at-most habit is done when it was entered and its value stays within the target:
-- it has check-ins whose sum is at most the target, or it was marked kept without any (a
-- toggle, completions.set "done" or a value of 0: the day's value is then 0). An empty day is
-- not done, as Loop Habit Tracker shows it (its checkmark stays unknown: Habit.isCompletedToday
-- asks for an entry); Loop's score counts an empty day as 0, within the target, and so will
-- ours (issue 33). A day over the target is not done, and marking it done is refused (HB007):
-- its check-ins say otherwise. Streaks and rates read the days done, as for every habit.
--
-- Weekly targets are still to come: habit_templates_target_supported now refuses only them.

ALTER TABLE public.habit_templates DROP CONSTRAINT habit_templates_target_supported;
ALTER TABLE public.habit_templates ADD CONSTRAINT habit_templates_target_supported CHECK (target_period = 'day');
COMMENT ON COLUMN public.habit_templates.target_type IS
    'at_least: a day is done when its value is >= target; at_most: when it was entered (check-ins, or marked kept at 0) and its value is <= target (sql/0031).';
COMMENT ON COLUMN public.habit_templates.target_period IS
    'day: the target is per day. (week is not built yet: habit_templates_target_supported.)';

-- habit.check_day answers the target's type too (a new OUT parameter is a new result type).
DROP FUNCTION IF EXISTS habit.check_day(uuid, uuid, date, text, boolean, uuid);
-- habit.checkins_retarget takes the target's type (the trigger re-decides on either change).
DROP FUNCTION IF EXISTS habit.checkins_retarget(uuid, uuid, numeric);
