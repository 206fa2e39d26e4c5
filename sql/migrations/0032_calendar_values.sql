-- 0032 (issue 32, item 5): the calendar of one habit counted from check-ins shows each day's
-- value, and its level (the heatmap's intensity) is the value against the target instead of
-- done against due. habit.stats_calendar gains a column (a new result type: dropped here, made
-- again by sql/functions/streaks.sql).
DROP FUNCTION IF EXISTS habit.stats_calendar(uuid, uuid, date, date);
