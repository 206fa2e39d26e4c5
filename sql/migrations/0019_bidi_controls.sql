-- 0019 (issue 30, item 9): names, titles and notes hold no bidirectional control characters.
--
-- U+202A–U+202E (embeddings, overrides, their pop), U+2066–U+2069 (isolates, their pop), U+200E,
-- U+200F and U+061C (the left-to-right, right-to-left and Arabic letter marks) are invisible
-- and reorder the text around them: "Run" U+202E "gnp.exe" shows as "Runexe.png". Right-to-left
-- letters need none of them (the Unicode bidirectional algorithm orders them), and the
-- joiners emoji and Indic scripts use (U+200C, U+200D) are not among them. Every writer (the
-- worker, Supabase, psql, an account import) meets the same CHECK constraints; the worker
-- answers their violation -32602 `invalid_characters` naming the field
-- (Sources/HabitStore/StoreError.swift), an import the member's JSON path
-- (sql/functions/accounts.sql).
--
-- The rule is one function, here rather than in sql/functions for the reason
-- habit.valid_schedule is in the baseline: the constraints call it, and changing it changes
-- which rows are valid (a versioned migration, with a look at the stored rows). A SQL function
-- without a SET clause, every operator schema-qualified, so PostgreSQL inlines it into the
-- constraints' expressions (docs/schema.md, "search_path"). NULL (no notes) passes, as CHECK
-- lets NULL pass.
CREATE FUNCTION habit.has_no_bidi_controls(value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $fn$
    SELECT value OPERATOR(pg_catalog.!~) '[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]'
    $fn$;
COMMENT ON FUNCTION habit.has_no_bidi_controls(text) IS
    'Whether value holds none of the bidirectional control characters U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069 (NULL for NULL): the CHECK of every name, title and notes (sql/0019).';

-- Rows written before: each such character is replaced by U+FFFD (the replacement character),
-- not refused and not dropped. Refusing would stop `habit migrate` (and the embedded server's
-- start) until someone edits users' rows by hand; dropping the characters silently could
-- leave a name empty or with white space at an end, which the other CHECKs refuse. One
-- character for one keeps every other rule true (the length, no white space at the ends) and
-- leaves a visible mark where the invisible one was, for the user to rename. The updates fire
-- the tables' triggers as any write does (updated_at, the sync change number: devices pull the
-- new text). The character class is the function's, above.
UPDATE public.habit_templates SET name = regexp_replace(name, '[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]', U&'\FFFD', 'g')
WHERE NOT habit.has_no_bidi_controls(name);
UPDATE public.task_lists SET name = regexp_replace(name, '[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]', U&'\FFFD', 'g')
WHERE NOT habit.has_no_bidi_controls(name);
UPDATE public.tasks SET title = regexp_replace(title, '[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]', U&'\FFFD', 'g'),
                        notes = regexp_replace(notes, '[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]', U&'\FFFD', 'g')
WHERE NOT habit.has_no_bidi_controls(title) OR NOT habit.has_no_bidi_controls(notes);

-- Separate constraints from the length and white-space ones, so a violation names this rule
-- (the worker maps each constraint to its field and reason). Validated as they are added: the
-- rows were made valid just above, in the same transaction.
ALTER TABLE public.habit_templates
    ADD CONSTRAINT habit_templates_name_bidi_check CHECK (habit.has_no_bidi_controls(name));
ALTER TABLE public.task_lists
    ADD CONSTRAINT task_lists_name_bidi_check CHECK (habit.has_no_bidi_controls(name));
ALTER TABLE public.tasks
    ADD CONSTRAINT tasks_title_bidi_check CHECK (habit.has_no_bidi_controls(title)),
    ADD CONSTRAINT tasks_notes_bidi_check CHECK (habit.has_no_bidi_controls(notes));

COMMENT ON COLUMN public.habit_templates.name IS 'Display name: trimmed, 1-100 characters, no bidirectional control characters.';
COMMENT ON COLUMN public.task_lists.name IS 'Display name: trimmed, 1-100 characters, no bidirectional control characters (not unique).';
