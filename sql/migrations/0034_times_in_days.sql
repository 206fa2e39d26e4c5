-- 0034 (issue 32, item 5): a schedule of n times in m days, as Loop Habit Tracker's frequency
-- "2 times in 3 days" (FrequencyNumerator / FrequencyDenominator) is, kept as such instead of
-- the nearest times per week.
--
-- {"type": "times_in_days", "times": n, "days": m}, 1 <= n < m <= 365: the period's days are cut
-- into blocks of m days from its first local day (as every_n_days counts from it), and a block
-- needs n completions: a day is due while fewer than n completions are dated in its block before
-- it, the times_per_week rule with the user's week replaced by the block
-- (functions/history.sql, habit.due_days). Streaks and rates count days.
--
-- habit.valid_schedule, the CHECK of both schedule columns, gains the shape (every stored row
-- stays valid: the other shapes are unchanged).
CREATE OR REPLACE FUNCTION habit.valid_schedule(schedule jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT coalesce(jsonb_typeof(schedule) = 'object' AND CASE schedule ->> 'type'
        WHEN 'daily' THEN (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['type']
        WHEN 'weekdays' THEN
            (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['days', 'type']
            AND jsonb_typeof(schedule -> 'days') = 'array'
            AND jsonb_array_length(schedule -> 'days') BETWEEN 1 AND 7
            AND (SELECT bool_and(jsonb_typeof(d) = 'number' AND d::text ~ '^[1-7]$')
                        AND count(DISTINCT d) = count(*)
                 FROM jsonb_array_elements(schedule -> 'days') d)
        WHEN 'every_n_days' THEN
            (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['n', 'type']
            AND jsonb_typeof(schedule -> 'n') = 'number' AND (schedule ->> 'n') ~ '^[0-9]{1,3}$'
            AND (schedule ->> 'n')::integer BETWEEN 1 AND 365
        WHEN 'times_per_week' THEN
            (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['times', 'type']
            AND jsonb_typeof(schedule -> 'times') = 'number' AND (schedule ->> 'times') ~ '^[1-7]$'
        WHEN 'times_in_days' THEN
            (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(schedule) k) = ARRAY['days', 'times', 'type']
            AND jsonb_typeof(schedule -> 'times') = 'number' AND (schedule ->> 'times') ~ '^[0-9]{1,3}$'
            AND jsonb_typeof(schedule -> 'days') = 'number' AND (schedule ->> 'days') ~ '^[0-9]{1,3}$'
            AND (schedule ->> 'days')::integer BETWEEN 2 AND 365
            AND (schedule ->> 'times')::integer BETWEEN 1 AND (schedule ->> 'days')::integer - 1
        ELSE false END, false)
    $fn$;
COMMENT ON FUNCTION habit.valid_schedule(jsonb) IS
    'Whether schedule is {"type":"daily"}, {"type":"weekdays","days":[1..7,…]}, {"type":"every_n_days","n":1..365}, {"type":"times_per_week","times":1..7} or {"type":"times_in_days","times":n,"days":m} (1 <= n < m <= 365, sql/0034), with no other keys.';

COMMENT ON COLUMN public.habit_streak_state.has_tpw IS
    'Whether a segment is times_per_week or times_in_days (sql/0034): its due days then depend on the completions of its week or block.';
