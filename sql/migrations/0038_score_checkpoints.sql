-- 0038 (issue 33, item 4): Loop's score from a checkpoint. habit.habit_score folded ~14 months
-- of a habit's events on every read, which kept widget.get at a fifth of day.get's speed
-- (docs/performance.md, "The widget"). A checkpoint is a habit's exact score at the end of a
-- past day; a read at a later day folds only the events after it. The nightly batch
-- (`habit score-checkpoints`, habit.score_checkpoints_advance) writes them, never a read (reads
-- run on standbys too); the triggers of completions, skips and check-ins delete a habit's
-- checkpoint when they write a day on or before it (functions/scores.sql,
-- habit.score_checkpoint_forget), and a checkpoint whose basis (the habit's first local day,
-- schedule, kind and target) no longer matches the habit is ignored, so a schedule, zone or
-- day-start change needs no trigger. Derived state: one row a habit, never one a day.
CREATE TABLE habit.score_checkpoints (
    user_id     uuid NOT NULL,
    template_id uuid NOT NULL,
    as_of       date NOT NULL,
    score       double precision NOT NULL CONSTRAINT score_checkpoints_score_check CHECK (score BETWEEN 0 AND 1),
    basis       jsonb NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT score_checkpoints_pkey PRIMARY KEY (user_id, template_id),
    CONSTRAINT score_checkpoints_template_fkey FOREIGN KEY (template_id, user_id)
        REFERENCES public.habit_templates (id, user_id) ON DELETE CASCADE
);
COMMENT ON TABLE habit.score_checkpoints IS
    'Per habit, at most one: Loop''s score at the end of as_of, from which reads of later days fold (sql/0038). Written by habit.score_checkpoints_advance; deleted by the event triggers on a write on or before as_of.';
COMMENT ON COLUMN habit.score_checkpoints.user_id IS 'Owner; the owner of the habit (composite foreign key).';
COMMENT ON COLUMN habit.score_checkpoints.template_id IS 'The habit.';
COMMENT ON COLUMN habit.score_checkpoints.as_of IS 'The local day at whose end the score holds (a day before the user''s today when written).';
COMMENT ON COLUMN habit.score_checkpoints.score IS 'Loop''s score at the end of as_of, unrounded, from the habit''s first day (no horizon).';
COMMENT ON COLUMN habit.score_checkpoints.basis IS
    'What the score was computed with: [first local day, schedule, kind, target, target_type]. A read ignores a checkpoint whose basis differs from the habit''s now.';
COMMENT ON COLUMN habit.score_checkpoints.computed_at IS 'When the batch wrote it.';

-- habit.habit_score takes p_exact (the batch's walk from the first day): functions/scores.sql
-- creates it again with the new argument.
DROP FUNCTION IF EXISTS habit.habit_score(uuid, uuid, date, text, time);
