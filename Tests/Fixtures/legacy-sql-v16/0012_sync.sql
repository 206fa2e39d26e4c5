-- 0012: sync (issue 18). Every change of a user's synced rows gets a number from that user's
-- change clock; deletions leave tombstones; pushes leave replay records.
--
--   habit.sync_clocks        one row per user: the last change number handed out (seq), the
--                            transaction that holds it (xact), how far tombstones were pruned
--   habit.next_change_seq    one number per (transaction, user), under the clock row's lock
--   <table>.change_seq       the number of the change that last wrote the row (0: before 0012)
--   habit.sync_tombstones    one row per deleted key, with the number of the deletion
--   habit.sync_mutations     sync.push's replay records: (client_id, mutation_id) → outcome
--   habit.prune_sync         drops tombstones and replay records older than the retention
--   habit.sync_reset         expires every cursor of a user (after writes that bypassed triggers)
--
-- Synced tables, with the kind and key a pull reports them by (docs/schema.md, "Sync"):
--   profiles 'profile' ''              habit_templates 'habits'  id
--   habit_periods 'periods' id         habit_completions 'completions' '<template_id>/<YYYY-MM-DD>'
--   habit_skips 'skips' '<template_id>/<YYYY-MM-DD>'
--   task_lists 'lists' id              tasks 'tasks' id
-- Derived tables (streak ledger, weekly counts, row counts) are not synced: they follow from these.
--
-- Why no change is ever skipped: next_change_seq updates the user's clock row, and the row
-- lock is held until the transaction ends. A transaction that got number n therefore ends
-- before any other transaction gets n + 1 (the second one's upsert waits for the lock, then
-- reads the committed n). A snapshot that shows the clock at S shows every change numbered
-- ≤ S, and no change numbered ≤ S can commit later: a pull that reads the clock and the rows
-- in one REPEATABLE READ snapshot can hand out "caught up to S" safely.
--
-- Like 0006 and 0010, the SECURITY DEFINER functions rely on the migrator (their owner)
-- bypassing row-level security: a superuser, or Supabase's postgres (BYPASSRLS).

-- 1. The clock -------------------------------------------------------------------------------
CREATE TABLE habit.sync_clocks (
    user_id        uuid PRIMARY KEY,
    seq            bigint NOT NULL CONSTRAINT sync_clocks_seq_check CHECK (seq >= 0),
    xact           xid8,
    pruned_through bigint NOT NULL DEFAULT 0,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE habit.sync_clocks IS
    'Per-user change clock (sql/0012): written only by habit.next_change_seq, habit.prune_sync and habit.sync_reset.';
COMMENT ON COLUMN habit.sync_clocks.user_id IS 'The user.';
COMMENT ON COLUMN habit.sync_clocks.seq IS 'The last change number handed out; committed rows never carry a larger change_seq.';
COMMENT ON COLUMN habit.sync_clocks.xact IS 'The transaction that took seq: it reuses the number for all its writes of this user.';
COMMENT ON COLUMN habit.sync_clocks.pruned_through IS 'Cursors below this are expired: the largest pruned tombstone number, or seq at the last sync_reset.';
COMMENT ON COLUMN habit.sync_clocks.updated_at IS 'When seq or pruned_through last changed.';

-- One number per (transaction, user). The first call of a transaction takes the clock row's
-- lock with the upsert and keeps it to the end of the transaction (see the header); later
-- calls of the same transaction only read the row (one index probe, no new row version). The
-- notification is delivered at commit (and dropped on rollback); PostgreSQL folds identical
-- payloads of one transaction.
CREATE FUNCTION habit.next_change_seq(p_user uuid) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        number bigint;
    BEGIN
        SELECT c.seq INTO number FROM habit.sync_clocks c
        WHERE c.user_id = p_user AND c.xact = pg_current_xact_id();
        IF FOUND THEN
            RETURN number;
        END IF;
        INSERT INTO habit.sync_clocks AS c (user_id, seq, xact) VALUES (p_user, 1, pg_current_xact_id())
        ON CONFLICT (user_id) DO UPDATE
            SET seq = CASE WHEN c.xact = excluded.xact THEN c.seq ELSE c.seq + 1 END,
                xact = excluded.xact, updated_at = now()
        RETURNING c.seq INTO number;
        PERFORM pg_notify('habit_changes', p_user::text || ' ' || number::text);
        RETURN number;
    END
    $fn$;
COMMENT ON FUNCTION habit.next_change_seq(uuid) IS
    'The change number of the current transaction for p_user (a new one on its first call, under the clock row''s lock until commit); notifies habit_changes with ''<user> <seq>''.';

-- 2. Tombstones ------------------------------------------------------------------------------
CREATE TABLE habit.sync_tombstones (
    user_id    uuid NOT NULL,
    kind       text NOT NULL
               CONSTRAINT sync_tombstones_kind_check
               CHECK (kind IN ('profile', 'habits', 'periods', 'completions', 'skips', 'lists', 'tasks')),
    key        text NOT NULL,
    change_seq bigint NOT NULL,
    deleted_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sync_tombstones_pkey PRIMARY KEY (user_id, kind, key)
);
COMMENT ON TABLE habit.sync_tombstones IS
    'Deleted synced rows (sql/0012): one per key, written by the tables'' triggers, removed when the key is inserted again or by habit.prune_sync.';
COMMENT ON COLUMN habit.sync_tombstones.user_id IS 'The owner of the deleted row.';
COMMENT ON COLUMN habit.sync_tombstones.kind IS 'What was deleted: profile, habits, periods, completions, skips, lists or tasks.';
COMMENT ON COLUMN habit.sync_tombstones.key IS 'The row''s key: its id (lowercase), ''<template_id>/<YYYY-MM-DD>'' for completions and skips, '''' for the profile.';
COMMENT ON COLUMN habit.sync_tombstones.change_seq IS 'The change number of the deletion.';
COMMENT ON COLUMN habit.sync_tombstones.deleted_at IS 'When it was deleted (the transaction''s time); prune_sync drops it after the retention.';
-- A pull's "deletions after position p"; prune's "older than".
CREATE INDEX sync_tombstones_user_seq_idx ON habit.sync_tombstones (user_id, change_seq);
CREATE INDEX sync_tombstones_deleted_at_idx ON habit.sync_tombstones (deleted_at);

-- The key of a synced row, as the pull and the tombstones spell it. Polymorphic, so PL/pgSQL
-- compiles it once per table row type and each branch reads only its own table's columns.
-- to_char, not ::text, for dates: a date's text form follows the session's DateStyle.
CREATE FUNCTION habit.sync_key(kind text, r anyelement) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF kind = 'profile' THEN
            RETURN '';
        ELSIF kind = 'completions' THEN
            RETURN r.template_id::text || '/' || to_char(r.completed_date, 'YYYY-MM-DD');
        ELSIF kind = 'skips' THEN
            RETURN r.template_id::text || '/' || to_char(r.skipped_date, 'YYYY-MM-DD');
        END IF;
        RETURN r.id::text;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_key(text, anyelement) IS
    'The sync key of row r of kind: its id, ''<template_id>/<YYYY-MM-DD>'' for completions and skips, '''' for the profile.';

-- BEFORE INSERT OR UPDATE, each synced table (TG_ARGV[0] = the kind): stamps the row with the
-- transaction's change number. An UPDATE that changes nothing (a retried request) keeps its
-- number, as it keeps updated_at. A row inserted (or moved) onto a deleted key takes the
-- tombstone's place: a key is either live or tombstoned, never both.
CREATE FUNCTION habit.sync_stamp_row() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        new_key text;
    BEGIN
        IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN
            RETURN NEW;
        END IF;
        NEW.change_seq := habit.next_change_seq(NEW.user_id);
        new_key := habit.sync_key(TG_ARGV[0], NEW);
        IF TG_OP = 'UPDATE' THEN
            IF NEW.user_id = OLD.user_id AND new_key = habit.sync_key(TG_ARGV[0], OLD) THEN
                RETURN NEW;
            END IF;
        END IF;
        DELETE FROM habit.sync_tombstones t
        WHERE t.user_id = NEW.user_id AND t.kind = TG_ARGV[0] AND t.key = new_key;
        RETURN NEW;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_stamp_row() IS
    'BEFORE INSERT OR UPDATE on the synced tables: change_seq := habit.next_change_seq(user_id), and removes the tombstone of the row''s key.';

-- AFTER DELETE (and AFTER UPDATE that changes the key or the owner), each synced table: the
-- old key gets a tombstone numbered by its owner's clock. Cascaded deletes (a habit's
-- completions, skips and periods) fire it too.
CREATE FUNCTION habit.sync_record_deletion() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        INSERT INTO habit.sync_tombstones AS t (user_id, kind, key, change_seq)
        VALUES (OLD.user_id, TG_ARGV[0], habit.sync_key(TG_ARGV[0], OLD), habit.next_change_seq(OLD.user_id))
        ON CONFLICT (user_id, kind, key) DO UPDATE SET change_seq = excluded.change_seq, deleted_at = excluded.deleted_at;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_record_deletion() IS
    'AFTER DELETE (or key-changing UPDATE) on the synced tables: a tombstone for the old key, numbered by habit.next_change_seq.';

-- 3. The synced tables --------------------------------------------------------------------------
-- change_seq: the existing rows keep 0 (a full pull starts below it). The index serves both
-- "the user's rows after position p" and the page's order within one change number (the key
-- columns: a uuid orders like its lowercase text, '<uuid>/<YYYY-MM-DD>' like (uuid, date)).
-- habit_templates_user_id_idx (user_id) is dropped: the new index leads with user_id and
-- serves every per-user read of habits as well (the planner took it anyway, costs being equal).
-- Trigger names: BEFORE row triggers fire in name order; <table>_sync_change_seq comes after
-- the rules and history triggers, so it sees the row they leave.
DO $synced$
DECLARE
    synced text[] := ARRAY[
        -- table,              kind,          index key columns,               columns whose change moves the key
        ARRAY['profiles',          'profile',     '',                              'user_id'],
        ARRAY['habit_templates',   'habits',      ', id',                          'user_id, id'],
        ARRAY['habit_periods',     'periods',     ', id',                          'user_id, id'],
        ARRAY['habit_completions', 'completions', ', template_id, completed_date', 'user_id, template_id, completed_date'],
        ARRAY['habit_skips',       'skips',       ', template_id, skipped_date',   'user_id, template_id, skipped_date'],
        ARRAY['task_lists',        'lists',       ', id',                          'user_id, id'],
        ARRAY['tasks',             'tasks',       ', id',                          'user_id, id']
    ];
    item text[];
BEGIN
    FOREACH item SLICE 1 IN ARRAY synced LOOP
        EXECUTE format('ALTER TABLE public.%I ADD COLUMN change_seq bigint NOT NULL DEFAULT 0', item[1]);
        EXECUTE format('COMMENT ON COLUMN public.%I.change_seq IS %L', item[1],
                       'The change number (habit.sync_clocks) of the write that last changed the row; 0 for rows older than sql/0012. Set by trigger.');
        EXECUTE format('CREATE INDEX %I ON public.%I (user_id, change_seq%s)', item[1] || '_user_change_seq_idx', item[1], item[3]);
        EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON public.%I FOR EACH ROW EXECUTE FUNCTION habit.sync_stamp_row(%L)',
                       item[1] || '_sync_change_seq', item[1], item[2]);
        EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON public.%I FOR EACH ROW EXECUTE FUNCTION habit.sync_record_deletion(%L)',
                       item[1] || '_sync_tombstone', item[1], item[2]);
        EXECUTE format('CREATE TRIGGER %I AFTER UPDATE OF %s ON public.%I FOR EACH ROW WHEN ((%s) IS DISTINCT FROM (%s)) EXECUTE FUNCTION habit.sync_record_deletion(%L)',
                       item[1] || '_sync_moved_key', item[4], item[1],
                       regexp_replace(item[4], '(\w+)', 'OLD.\1', 'g'), regexp_replace(item[4], '(\w+)', 'NEW.\1', 'g'), item[2]);
    END LOOP;
    DROP INDEX public.habit_templates_user_id_idx;
END
$synced$;

-- 4. Replay records of sync.push ------------------------------------------------------------------
CREATE TABLE habit.sync_mutations (
    user_id     uuid NOT NULL,
    client_id   text NOT NULL CONSTRAINT sync_mutations_client_id_check CHECK (char_length(client_id) BETWEEN 1 AND 200),
    mutation_id text NOT NULL CONSTRAINT sync_mutations_mutation_id_check CHECK (char_length(mutation_id) BETWEEN 1 AND 200),
    outcome     jsonb,
    change_seq  bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sync_mutations_pkey PRIMARY KEY (user_id, client_id, mutation_id)
);
COMMENT ON TABLE habit.sync_mutations IS
    'sync.push''s replay records (sql/0012): each (client_id, mutation_id) of a user with its outcome, written in the transaction of its effect.';
COMMENT ON COLUMN habit.sync_mutations.user_id IS 'The user.';
COMMENT ON COLUMN habit.sync_mutations.client_id IS 'The pushing device''s id (1-200 characters).';
COMMENT ON COLUMN habit.sync_mutations.mutation_id IS 'The mutation''s id, unique per client (1-200 characters).';
COMMENT ON COLUMN habit.sync_mutations.outcome IS 'NULL while claimed; then {"result": …} or {"error": {"code", "message", "data"}}.';
COMMENT ON COLUMN habit.sync_mutations.change_seq IS 'The user''s change number after the mutation, when it changed something.';
COMMENT ON COLUMN habit.sync_mutations.created_at IS 'When it was claimed; prune_sync drops it after the retention.';
CREATE INDEX sync_mutations_created_at_idx ON habit.sync_mutations (created_at);

-- 5. Prune and reset ------------------------------------------------------------------------------
-- Drops tombstones and replay records older than p_retention. A user's cursors below the
-- largest pruned tombstone number expire (pruned_through), in the same transaction, so a
-- pull's snapshot sees either the tombstones or the raised mark.
CREATE FUNCTION habit.prune_sync(p_retention interval) RETURNS TABLE (tombstones bigint, mutations bigint)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        cutoff timestamptz;
    BEGIN
        IF p_retention IS NULL OR p_retention < interval '0' THEN
            RAISE EXCEPTION 'retention must be a non-negative interval, got %', p_retention
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        cutoff := now() - p_retention;
        WITH pruned AS (
            DELETE FROM habit.sync_tombstones t WHERE t.deleted_at < cutoff RETURNING t.user_id, t.change_seq
        ),
        marks AS (
            SELECT p.user_id, max(p.change_seq) AS through FROM pruned p GROUP BY p.user_id
        ),
        raised AS (
            UPDATE habit.sync_clocks c SET pruned_through = m.through, updated_at = now()
            FROM marks m
            WHERE c.user_id = m.user_id AND c.pruned_through < m.through
            RETURNING c.user_id
        )
        SELECT count(*) INTO tombstones FROM pruned;
        DELETE FROM habit.sync_mutations m WHERE m.created_at < cutoff;
        GET DIAGNOSTICS mutations = ROW_COUNT;
        RETURN NEXT;
    END
    $fn$;
COMMENT ON FUNCTION habit.prune_sync(interval) IS
    'Deletes tombstones and replay records older than p_retention and raises each affected user''s pruned_through; returns the counts.';

-- Expires every cursor of p_user: after writes that bypassed the triggers (COPY with
-- session_replication_role = replica, TRUNCATE, a restore), the change numbers no longer tell
-- what changed. Takes a new number (so a fresh pull's cursor is valid) and marks everything
-- before it pruned; subscribed devices are notified.
CREATE FUNCTION habit.sync_reset(p_user uuid) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        number bigint;
    BEGIN
        INSERT INTO habit.sync_clocks AS c (user_id, seq, xact, pruned_through) VALUES (p_user, 1, pg_current_xact_id(), 1)
        ON CONFLICT (user_id) DO UPDATE
            SET seq = c.seq + 1, pruned_through = c.seq + 1, xact = excluded.xact, updated_at = now()
        RETURNING c.seq INTO number;
        PERFORM pg_notify('habit_changes', p_user::text || ' ' || number::text);
        RETURN number;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_reset(uuid) IS
    'Expires every sync cursor of p_user (after bulk writes that bypassed the triggers); returns the user''s new change number.';

-- 6. Row-level security and privileges --------------------------------------------------------------
-- authenticated reads its own clock and tombstones (a pull) and reads/claims/records its own
-- replay records (a push); nobody but the functions above writes clocks or tombstones.
ALTER TABLE habit.sync_clocks ENABLE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_clocks FORCE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_tombstones ENABLE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_tombstones FORCE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_mutations ENABLE ROW LEVEL SECURITY;
ALTER TABLE habit.sync_mutations FORCE ROW LEVEL SECURITY;

CREATE POLICY sync_clocks_select_own ON habit.sync_clocks FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY sync_tombstones_select_own ON habit.sync_tombstones FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY sync_mutations_select_own ON habit.sync_mutations FOR SELECT TO authenticated USING (user_id = (SELECT auth.uid()));
CREATE POLICY sync_mutations_insert_own ON habit.sync_mutations FOR INSERT TO authenticated WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY sync_mutations_update_own ON habit.sync_mutations FOR UPDATE TO authenticated
    USING (user_id = (SELECT auth.uid())) WITH CHECK (user_id = (SELECT auth.uid()));
CREATE POLICY sync_clocks_read_all ON habit.sync_clocks FOR SELECT TO habit_admin USING (true);
CREATE POLICY sync_tombstones_read_all ON habit.sync_tombstones FOR SELECT TO habit_admin USING (true);
CREATE POLICY sync_mutations_read_all ON habit.sync_mutations FOR SELECT TO habit_admin USING (true);

REVOKE ALL ON habit.sync_clocks, habit.sync_tombstones, habit.sync_mutations FROM PUBLIC, anon, authenticated, service_role;
GRANT SELECT ON habit.sync_clocks, habit.sync_tombstones TO authenticated, service_role, habit_admin;
GRANT SELECT, INSERT, UPDATE ON habit.sync_mutations TO authenticated, service_role;
GRANT SELECT ON habit.sync_mutations TO habit_admin;

-- Trigger functions need no EXECUTE to fire; next_change_seq is called only by them.
REVOKE ALL ON FUNCTION habit.next_change_seq(uuid), habit.sync_key(text, anyelement), habit.sync_stamp_row(),
    habit.sync_record_deletion(), habit.prune_sync(interval), habit.sync_reset(uuid)
    FROM PUBLIC, anon;
GRANT EXECUTE ON FUNCTION habit.prune_sync(interval) TO habit_worker, habit_admin;
GRANT EXECUTE ON FUNCTION habit.sync_reset(uuid) TO habit_admin;
