-- 0033 (issue 32, item 1): weekly targets ("run 15 km a week", "at most 10 coffees a week").
--
-- A habit with target_period 'week' sums its check-ins over the user's week (profiles.week_start)
-- and is met once a week. It is a times_per_week habit with times 1 whose one completion in a
-- week lies on the day the week was met: the first day on which the week's running sum reaches
-- an at-least target, or, at most, the first day entered while the week stays within it. So the
-- schedule of every such habit is {"type": "times_per_week", "times": 1}, and what that schedule
-- already means carries over unchanged: due every day until the week is met, streaks and rates
-- in weeks, the weekly counts. habit.week_follow keeps the completion on its day for every
-- writer (functions/checkins.sql). A boolean habit needs a count above 1 for a weekly target
-- (with 1, it is times_per_week 1 without check-ins), and the period is fixed once created:
-- a week's completion and a day's mean different things.

ALTER TABLE public.habit_templates DROP CONSTRAINT habit_templates_target_supported;
ALTER TABLE public.habit_templates
    ADD CONSTRAINT habit_templates_week_target_schedule
        CHECK (target_period = 'day' OR schedule = '{"type": "times_per_week", "times": 1}'::jsonb),
    ADD CONSTRAINT habit_templates_week_target_counted
        CHECK (target_period = 'day' OR kind = 'measurable' OR target <> 1 OR target_type = 'at_most');
COMMENT ON COLUMN public.habit_templates.target_period IS
    'day: the target is per day; week: per user week (profiles.week_start), the schedule then times_per_week 1 and the week''s one completion on the day it was met (sql/0033). Fixed at creation.';
