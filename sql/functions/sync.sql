-- Sync (issue 18). Every change of a user's synced rows gets a number from that user's
-- change clock; deletions leave tombstones; pushes leave replay records.
--
--   habit.sync_clocks        one row per user: the last change number handed out (seq), the
--                            transaction that holds it (xact), how far tombstones were pruned
--   habit.next_change_seq    one number per (transaction, user), under the clock row's lock
--   <table>.change_seq       the number of the change that last wrote the row (0: before sync)
--   habit.sync_tombstones    one row per deleted key, with the number of the deletion
--   habit.sync_mutations     sync.push's replay records: (client_id, mutation_id) → outcome
--   habit.prune_sync         drops tombstones and replay records older than the retention
--   habit.prune_replay_records  keeps a user's newest replay records within the per-user caps
--   habit.sync_reset         expires every cursor of a user (after writes that bypassed triggers)
--
-- Synced tables, with the kind and key a pull reports them by (docs/schema.md, "Sync"):
--   profiles 'profile' ''              habit_templates 'habits'  id
--   habit_periods 'periods' id         habit_completions 'completions' '<template_id>/<YYYY-MM-DD>'
--   habit_skips 'skips' '<template_id>/<YYYY-MM-DD>'
--   task_lists 'lists' id              tasks 'tasks' id
-- Derived tables (streak runs and state, weekly counts, row counts) are not synced: they follow from these.
--
-- Notifications: writers send none (sql/0026). A NOTIFY takes PostgreSQL's cluster-wide
-- notification-queue lock at commit and keeps it until the transaction ends, which under
-- synchronous replication includes the wait for the standby: every writer of every user queued
-- behind one standby round trip. The worker instead polls the clocks of the users it subscribed
-- (habit.changed_clocks, by their notification tokens, habit.sync_clocks.notify_token from
-- sql/0025), so a write costs no statement and no lock for them, on plain PostgreSQL,
-- Supabase, under Patroni and on Citus alike.
--
-- Why no change is ever skipped: next_change_seq updates the user's clock row, and the row
-- lock is held until the transaction ends. A transaction that got number n therefore ends
-- before any other transaction gets n + 1 (the second one's upsert waits for the lock, then
-- reads the committed n). A snapshot that shows the clock at S shows every change numbered
-- ≤ S, and no change numbered ≤ S can commit later: a pull that reads the clock and the rows
-- in one REPEATABLE READ snapshot can hand out "caught up to S" safely.
--
-- Like the row-limit and period triggers, the SECURITY DEFINER functions rely on the migrator
-- (their owner) bypassing row-level security: a superuser, or Supabase's postgres (BYPASSRLS).
--
-- Current-state file: each definition as it is now, applied again by `habit migrate` whenever
-- this file changes (docs/schema.md, "Migrations"). A changed signature or return type needs
-- a DROP in a versioned migration first; so does removing a function.

-- Bodies are checked when called, not here, so the files of sql/functions apply in any order.
SET LOCAL check_function_bodies = off;

-- One number per (transaction, user). The first call of a transaction takes the clock row's
-- lock with the upsert and keeps it to the end of the transaction (see the header); later
-- calls of the same transaction only read the row (one index probe, no new row version).
CREATE OR REPLACE FUNCTION habit.next_change_seq(p_user uuid) RETURNS bigint
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
        -- updated_at comes from the VALUES (excluded), not now() in the SET: Citus refuses a
        -- non-IMMUTABLE function in DO UPDATE SET on a distributed table; same instant.
        INSERT INTO habit.sync_clocks AS c (user_id, seq, xact, updated_at) VALUES (p_user, 1, pg_current_xact_id(), now())
        ON CONFLICT (user_id) DO UPDATE
            SET seq = CASE WHEN c.xact = excluded.xact THEN c.seq ELSE c.seq + 1 END,
                xact = excluded.xact, updated_at = excluded.updated_at
        RETURNING c.seq INTO number;
        RETURN number;
    END
    $fn$;
COMMENT ON FUNCTION habit.next_change_seq(uuid) IS
    'The change number of the current transaction for p_user (a new one on its first call, under the clock row''s lock until commit); sends no notification (sql/0026: the worker polls habit.changed_clocks).';

-- 1. Sync: change numbers and tombstones --------------------------------------------------------
-- The change number of this transaction for p_user (a new one on its first call, under the
-- clock row's lock until commit: sql/0012's rule), and the tombstone of p_key removed (a key
-- written again is live). p_key NULL: the row keeps its key (an update), nothing to remove.
CREATE OR REPLACE FUNCTION habit.sync_stamp(p_user uuid, p_kind text, p_key text) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        number bigint;
    BEGIN
        -- The tombstone goes in the same statement as the clock's read (one round of the
        -- executor: this runs for every row written).
        WITH gone AS (
            DELETE FROM habit.sync_tombstones t WHERE p_key IS NOT NULL AND t.user_id = p_user AND t.kind = p_kind AND t.key = p_key
        )
        SELECT c.seq INTO number FROM habit.sync_clocks c WHERE c.user_id = p_user AND c.xact = pg_current_xact_id();
        IF number IS NULL THEN
            -- updated_at from the VALUES, as in habit.next_change_seq (Citus: DO UPDATE SET).
            INSERT INTO habit.sync_clocks AS c (user_id, seq, xact, updated_at) VALUES (p_user, 1, pg_current_xact_id(), now())
            ON CONFLICT (user_id) DO UPDATE
                SET seq = CASE WHEN c.xact = excluded.xact THEN c.seq ELSE c.seq + 1 END,
                    xact = excluded.xact, updated_at = excluded.updated_at
            RETURNING c.seq INTO number;
        END IF;
        RETURN number;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_stamp(uuid, text, text) IS
    'The change number of the current transaction for p_user (habit.next_change_seq''s rule), removing the tombstone of p_key when given.';

-- A tombstone for a deleted key (or the old key of a moved row), numbered by its owner's clock.
-- A new one is counted on the clock row; past habit.tombstone_cap() the user's oldest are
-- trimmed (sql/0024). A key deleted again only renumbers its tombstone.
CREATE OR REPLACE FUNCTION habit.sync_tombstone(p_user uuid, p_kind text, p_key text) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        inserted boolean;
        recorded integer;
        -- A value, not a call in the UPDATE: Citus refuses non-IMMUTABLE functions in its CASE.
        me xid8 := pg_current_xact_id();
    BEGIN
    -- xmax is 0 on a row version this statement inserted, not on one it updated.
    INSERT INTO habit.sync_tombstones AS t (user_id, kind, key, change_seq)
    VALUES (p_user, p_kind, p_key, habit.next_change_seq(p_user))
    ON CONFLICT (user_id, kind, key) DO UPDATE SET change_seq = excluded.change_seq, deleted_at = excluded.deleted_at
    RETURNING t.xmax = 0 INTO inserted;
    IF NOT inserted THEN
        RETURN;
    END IF;
    -- Counted here for the first 8 of a transaction; a bulk delete's are counted at commit
    -- (habit.sync_clocks_recount): each update of the clock row in one transaction leaves a
    -- version the next one has to pass.
    UPDATE habit.sync_clocks c
    SET tombstones = c.tombstones + 1,
        tombstones_writes = CASE WHEN c.tombstones_xact = me THEN c.tombstones_writes + 1 ELSE 1 END,
        tombstones_xact = me
    WHERE c.user_id = p_user AND NOT c.tombstones_pending
      AND NOT (c.tombstones_xact = me AND c.tombstones_writes >= 8)
    RETURNING c.tombstones INTO recorded;
    IF NOT FOUND THEN
        UPDATE habit.sync_clocks c SET tombstones_pending = true WHERE c.user_id = p_user AND NOT c.tombstones_pending;
    ELSIF recorded > habit.tombstone_cap() THEN
        PERFORM habit.trim_tombstones(p_user, habit.tombstone_cap() * 9 / 10);
    END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_tombstone(uuid, text, text) IS
    'Records the deletion of key p_key of kind p_kind of p_user, numbered by habit.next_change_seq; past habit.tombstone_cap() tombstones the user''s oldest are trimmed (sql/0024).';

-- The most tombstones a user keeps (all tables together): a function, so a test can see it and
-- the documentation names one place.
CREATE OR REPLACE FUNCTION habit.tombstone_cap() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$ SELECT 10000 $fn$;
COMMENT ON FUNCTION habit.tombstone_cap() IS
    'The most tombstones a user keeps, all tables together (sql/0024); past it the oldest are trimmed to 90 % of it.';

-- The deferred count of a bulk delete's tombstones (DEFERRABLE INITIALLY DEFERRED: at
-- commit): exact, and trimmed past the cap.
CREATE OR REPLACE FUNCTION habit.sync_clocks_recount() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        counted integer;
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM habit.sync_clocks c WHERE c.user_id = NEW.user_id AND c.tombstones_pending) THEN
            RETURN NULL; -- counted by an earlier event of this commit
        END IF;
        SELECT count(*) INTO counted FROM habit.sync_tombstones t WHERE t.user_id = NEW.user_id;
        UPDATE habit.sync_clocks c SET tombstones = counted, tombstones_pending = false WHERE c.user_id = NEW.user_id;
        IF counted > habit.tombstone_cap() THEN
            PERFORM habit.trim_tombstones(NEW.user_id, habit.tombstone_cap() * 9 / 10);
        END IF;
        RETURN NULL;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_clocks_recount() IS
    'Deferred trigger of habit.sync_clocks: counts a bulk delete''s tombstones at commit and trims them past habit.tombstone_cap() (sql/0024).';

-- Keeps p_user's newest p_keep tombstones; the cursors that needed a dropped one expire
-- (pruned_through), in the same transaction, and the clock's count becomes exact.
CREATE OR REPLACE FUNCTION habit.trim_tombstones(p_user uuid, p_keep integer) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        dropped bigint;
        total integer;
    BEGIN
        WITH ranked AS (
            SELECT t.kind, t.key, t.change_seq,
                   row_number() OVER (ORDER BY t.change_seq DESC, t.kind DESC, t.key DESC) AS newest
            FROM habit.sync_tombstones t WHERE t.user_id = p_user
        ),
        pruned AS (
            DELETE FROM habit.sync_tombstones t USING ranked r
            WHERE t.user_id = p_user AND t.kind = r.kind AND t.key = r.key AND r.newest > p_keep
            RETURNING t.change_seq
        ),
        raised AS (
            UPDATE habit.sync_clocks c SET pruned_through = greatest(c.pruned_through, (SELECT max(p.change_seq) FROM pruned p)),
                   updated_at = now()
            WHERE c.user_id = p_user AND EXISTS (SELECT 1 FROM pruned)
            RETURNING 1
        )
        SELECT count(*), (SELECT count(*) FROM ranked) INTO dropped, total FROM pruned;
        UPDATE habit.sync_clocks c SET tombstones = greatest(total - dropped, 0) WHERE c.user_id = p_user;
        RETURN dropped;
    END
    $fn$;
COMMENT ON FUNCTION habit.trim_tombstones(uuid, integer) IS
    'Deletes all but p_user''s newest p_keep tombstones, expires the cursors that needed them (pruned_through) and recounts the clock''s tombstones; returns how many it deleted (sql/0024).';

-- Who a write acts for ---------------------------------------------------------------------------
-- The one rule of every SECURITY DEFINER function of ours that acts for a user its caller names
-- (habit.lock_user_writes, change_token, sync_mutation_claim/_record, prune_replay_records,
-- delete_account), and of the BEFORE row triggers of the user tables, which step aside for a
-- row of another user so that row-level security refuses it before any rule runs: the caller
-- acts for its own claims' user (auth.uid()), or is a role acting for users, which acts for
-- whoever it names. An allow-list; a role acting for users is
--   a superuser or a BYPASSRLS role (it reads and writes every user's rows anyway; Supabase's
--     postgres, which may also be a member of authenticated),
--   a member of the functions' owner, the migrator (current_user here: this runs inside their
--     bodies and the triggers', as their owner; granted to nobody, it is called by nothing else),
--   a member of service_role (Supabase's back office, BYPASSRLS) or of habit_admin (people in
--     psql, `habit account delete`): docs/admin.md, "Roles".
-- Every other role acts only for auth.uid(): authenticated and anon, and any role that is a member
-- of them (GRANT authenticated TO some_role; habit_worker without its role switch). Before, only
-- roles named exactly authenticated or anon were held to auth.uid() here, so a role inheriting
-- authenticated acted for every user, while delete_account and prune_replay_records had rules of
-- their own (ActingForUsersWallTests). The caller is the role the session has set (SET ROLE /
-- set_config('role', …)), else the login role: a SECURITY DEFINER function changes current_user,
-- not that setting. The roles row-level security lets write another user's row (superusers,
-- BYPASSRLS: our policies give no other role one) are all on the list, so a trigger that steps
-- aside for the others never lets a row go in without its rules.
--
-- Whether the session's role acts for users: a catalog lookup, so callers ask it only once
-- acting for auth.uid() has been ruled out (the path of every user's request asks nothing).
CREATE OR REPLACE FUNCTION habit.acts_for_users() RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        caller text := coalesce(nullif(current_setting('role', true), 'none'), session_user::text);
    BEGIN
        -- The memberships first: no query (a superuser is a member of every role), where the
        -- attributes of a BYPASSRLS role that is none of these take one.
        IF pg_has_role(caller, current_user, 'MEMBER')
           OR pg_has_role(caller, 'service_role', 'MEMBER') OR pg_has_role(caller, 'habit_admin', 'MEMBER') THEN
            RETURN true;
        END IF;
        RETURN EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = caller AND (r.rolsuper OR r.rolbypassrls));
    END
    $fn$;
COMMENT ON FUNCTION habit.acts_for_users() IS
    'Whether the session''s role (the role setting, else the login role) acts for every user: a superuser or BYPASSRLS role, or a member of the owner, service_role or habit_admin; a member of authenticated or anon is no such role (habit.check_acting_for, the user tables'' BEFORE triggers).';

-- SQLSTATE 42501 (insufficient_privilege) unless p_user is auth.uid() or the caller acts for
-- users; auth.uid() first, without a catalog lookup.
CREATE OR REPLACE FUNCTION habit.check_acting_for(p_user uuid) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        IF p_user IS NOT DISTINCT FROM auth.uid() THEN
            RETURN;
        END IF;
        IF habit.acts_for_users() THEN
            RETURN;
        END IF;
        RAISE EXCEPTION 'a user''s request may act only for that user (auth.uid()); % acts for no other user',
            coalesce(nullif(current_setting('role', true), 'none'), session_user::text)
            USING ERRCODE = '42501';
    END
    $fn$;
COMMENT ON FUNCTION habit.check_acting_for(uuid) IS
    'Raises 42501 unless p_user is auth.uid() or the session''s role acts for users (habit.acts_for_users: a superuser or BYPASSRLS role, or a member of the owner, service_role or habit_admin); a member of authenticated or anon is no such role (sql/0023).';

-- A user's writers, one at a time ------------------------------------------------------------------
-- The creates that number rows after the user's last (habit.next_habit_sort_order,
-- habit.next_task_position) and account imports serialise on the user's clock row (sql/0023):
-- every write of the user takes that row's lock anyway (habit.next_change_seq), so this only
-- takes it earlier: before any row of the user for the creates (their new row is nobody else's
-- to lock), after the user's habits for an import (habit.import_account: a completion write
-- locks its habit and then the clock, so the import does the same; no new deadlock), and only the
-- user (habit.check_acting_for) or a role acting for users (service_role, admins, the owner) can
-- take it: authenticated has no UPDATE on habit.sync_clocks, so no SELECT … FOR UPDATE of it, and
-- row-level security hides other users' clocks. Before, these were advisory locks on guessable
-- keys (hashtextextended('habit.next_habit_sort_order ' || user, 0)) that any role could hold
-- for as long as its session lasted. A user without a clock gets one at 0 (no number taken:
-- the first write still takes 1), race-free by ON CONFLICT. Held until the transaction ends.
CREATE OR REPLACE FUNCTION habit.lock_user_writes(p_user uuid) RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        PERFORM habit.check_acting_for(p_user);
        PERFORM 1 FROM habit.sync_clocks c WHERE c.user_id = p_user FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO habit.sync_clocks (user_id, seq) VALUES (p_user, 0) ON CONFLICT DO NOTHING;
            PERFORM 1 FROM habit.sync_clocks c WHERE c.user_id = p_user FOR UPDATE;
        END IF;
    END
    $fn$;
COMMENT ON FUNCTION habit.lock_user_writes(uuid) IS
    'Locks p_user''s clock row (habit.sync_clocks, made at 0 when missing) until the transaction ends: serialises the user''s numbering creates and imports; only for the caller (42501 otherwise) (sql/0023).';

-- A user's notification token (sql/0025) and the worker's poll of clocks (sql/0026) ------------
-- The token is a random uuid on the user's clock row that names the user's clock without the
-- user id: the worker calls habit.change_token, as the user, for each user it subscribes, then
-- polls those users' clocks by token (habit.changed_clocks). A user without a clock gets one at
-- 0 (no number taken, as habit.lock_user_writes makes it), so the token exists before the
-- user's first write. Only for the caller (habit.check_acting_for); a user may know their own
-- token (it names only them).
CREATE OR REPLACE FUNCTION habit.change_token(p_user uuid) RETURNS uuid
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        token uuid;
    BEGIN
        PERFORM habit.check_acting_for(p_user);
        SELECT c.notify_token INTO token FROM habit.sync_clocks c WHERE c.user_id = p_user;
        IF NOT FOUND THEN
            INSERT INTO habit.sync_clocks AS c (user_id, seq) VALUES (p_user, 0)
            ON CONFLICT (user_id) DO UPDATE SET user_id = c.user_id -- a concurrent first write: read its row
            RETURNING c.notify_token INTO token;
        END IF;
        RETURN token;
    END
    $fn$;
COMMENT ON FUNCTION habit.change_token(uuid) IS
    'The notification token of p_user (habit.sync_clocks.notify_token), which habit.changed_clocks takes; the clock made at 0 when missing; only for the caller (42501 otherwise) (sql/0025).';

-- The worker's poll (its change listener, every 200 ms while anyone is subscribed): of the clocks
-- whose tokens it holds, those past the number it last saw. One statement for every subscribed
-- user, an index probe each (habit_sync_clocks_notify_token_idx), and nothing on the write path.
-- A token is the capability: it was handed out to the user's own role (habit.change_token), so
-- the worker reads no clock it was not given; an unknown token matches nothing. The answer is
-- the change number only, no row of the user's. Runs as habit_worker itself (no user claims: it
-- reads many users at once), so it is SECURITY DEFINER and granted to habit_worker and
-- service_role alone. Pairs by position; p_seqs shorter than p_tokens compares with NULL (then
-- every listed clock is returned). PL/pgSQL, not SQL: Citus cannot plan a parameterised SQL
-- function that reads a distributed table, and nothing is gained by inlining a call made once
-- per poll.
CREATE OR REPLACE FUNCTION habit.changed_clocks(p_tokens uuid[], p_seqs bigint[])
    RETURNS TABLE (token uuid, seq bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        RETURN QUERY
        SELECT c.notify_token, c.seq
        FROM unnest(p_tokens, p_seqs) AS known(token, seq)
        JOIN habit.sync_clocks c ON c.notify_token = known.token
        WHERE known.seq IS NULL OR c.seq > known.seq;
    END
    $fn$;
COMMENT ON FUNCTION habit.changed_clocks(uuid[], bigint[]) IS
    'The worker''s poll of change clocks: (token, seq) of each clock among p_tokens (habit.sync_clocks.notify_token) whose seq is past the paired p_seqs entry (any, when NULL) (sql/0026).';

-- Replay records (sync.push) -------------------------------------------------------------------
-- habit.sync_mutations is written only here (sql/0023; before, authenticated could INSERT and
-- UPDATE its own rows of any size): a claim of (client_id, mutation_id), and its outcome,
-- recorded once in the transaction that claimed it. The checks of the table (id lengths)
-- apply as before.
CREATE OR REPLACE FUNCTION habit.sync_mutation_claim(p_user uuid, p_client text, p_mutation text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    BEGIN
        PERFORM habit.check_acting_for(p_user);
        INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id) VALUES (p_user, p_client, p_mutation)
        ON CONFLICT DO NOTHING;
        RETURN FOUND;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_mutation_claim(uuid, text, text) IS
    'Claims sync.push''s replay record (p_client, p_mutation) of p_user: true when this transaction made it, false when it exists (after waiting for a concurrent claim to end).';

-- The outcome of a record claimed in this transaction (a committed record always has one: the
-- claim and its outcome commit together), with the user's change number if this transaction
-- took one. Returns the outcome as stored; NULL for an outcome whose jsonb text is longer than
-- sync_mutations_outcome_size allows (65,536 bytes, sql/0022), removing the claim: the caller
-- records an error in its place (sync.push: response_too_large) or the mutation stays unapplied. Asked here rather than in the
-- caller's statement so that the call is the whole statement, which Citus can send to the
-- user's node (docs/scaling.md, "Running on Citus").
CREATE OR REPLACE FUNCTION habit.sync_mutation_record(p_user uuid, p_client text, p_mutation text, p_outcome jsonb) RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        stored jsonb;
    BEGIN
        PERFORM habit.check_acting_for(p_user);
        IF octet_length(p_outcome::text) > 65536 THEN
            -- The claim goes too, so that a caller who commits now leaves no record without an
            -- outcome (the mutation counts as never applied); sync.push rolls this back with its
            -- savepoint and records an error in its place.
            DELETE FROM habit.sync_mutations m
            WHERE m.user_id = p_user AND m.client_id = p_client AND m.mutation_id = p_mutation AND m.outcome IS NULL;
            RETURN NULL;
        END IF;
        UPDATE habit.sync_mutations m SET outcome = p_outcome,
            change_seq = (SELECT c.seq FROM habit.sync_clocks c WHERE c.user_id = p_user AND c.xact = pg_current_xact_id())
        WHERE m.user_id = p_user AND m.client_id = p_client AND m.mutation_id = p_mutation AND m.outcome IS NULL
        RETURNING m.outcome INTO stored;
        IF NOT FOUND OR p_outcome IS NULL THEN
            RAISE EXCEPTION 'no replay record claimed in this transaction for (%, %), or no outcome given', p_client, p_mutation
                USING ERRCODE = '55000';
        END IF;
        RETURN stored;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_mutation_record(uuid, text, text, jsonb) IS
    'Records the outcome of the replay record p_user claimed in this transaction (habit.sync_mutation_claim); returns it as stored, or NULL, removing the claim, when it is over 65,536 bytes of jsonb text.';

-- Prune and reset ---------------------------------------------------------------------------------
-- Drops tombstones and replay records older than p_retention. A user's cursors below the
-- largest pruned tombstone number expire (pruned_through), in the same transaction, so a
-- pull's snapshot sees either the tombstones or the raised mark.
CREATE OR REPLACE FUNCTION habit.prune_sync(p_retention interval) RETURNS TABLE (tombstones bigint, mutations bigint)
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
            SELECT p.user_id, max(p.change_seq) AS through, count(*)::integer AS gone FROM pruned p GROUP BY p.user_id
        ),
        raised AS (
            UPDATE habit.sync_clocks c SET pruned_through = greatest(c.pruned_through, m.through),
                   tombstones = greatest(c.tombstones - m.gone, 0), updated_at = now()
            FROM marks m
            WHERE c.user_id = m.user_id
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

-- Keeps p_user's newest replay records, at most 10,000 of them and 16 MiB of outcomes (as
-- stored: pg_column_size, which reads no TOASTed value), and deletes the older ones: sync.push
-- calls it after each push, so a user holds at most the caps plus one push (1,000 records of
-- at most 64 KiB each) at any time. A mutation whose record was deleted runs again if pushed
-- again. It reads the user's records by (user_id, created_at), at most caps + one push of
-- them. Acts for auth.uid(), or for any user as a role acting for users (habit.check_acting_for).
-- Returns the number of records deleted.
CREATE OR REPLACE FUNCTION habit.prune_replay_records(p_user uuid) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        max_records constant bigint := 10000;
        max_bytes constant bigint := 16 * 1048576;
        deleted bigint;
    BEGIN
        PERFORM habit.check_acting_for(p_user);
        WITH ranked AS (
            SELECT m.client_id, m.mutation_id,
                   row_number() OVER newest AS n,
                   sum(coalesce(pg_column_size(m.outcome), 0)) OVER newest AS bytes
            FROM habit.sync_mutations m
            WHERE m.user_id = p_user
            WINDOW newest AS (ORDER BY m.created_at DESC, m.client_id DESC, m.mutation_id DESC)
        )
        DELETE FROM habit.sync_mutations m
        USING ranked r
        WHERE m.user_id = p_user AND m.client_id = r.client_id AND m.mutation_id = r.mutation_id
          AND (r.n > max_records OR r.bytes > max_bytes);
        GET DIAGNOSTICS deleted = ROW_COUNT;
        RETURN deleted;
    END
    $fn$;
COMMENT ON FUNCTION habit.prune_replay_records(uuid) IS
    'Keeps p_user''s newest 10,000 replay records and 16 MiB of outcomes, deleting older ones (0022); returns how many it deleted.';

-- Expires every cursor of p_user: after writes that bypassed the triggers (COPY with
-- session_replication_role = replica, TRUNCATE, a restore), the change numbers no longer tell
-- what changed. Takes a new number (so a fresh pull's cursor is valid) and marks everything
-- before it pruned; subscribed devices are notified (the worker sees the new number).
CREATE OR REPLACE FUNCTION habit.sync_reset(p_user uuid) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    DECLARE
        number bigint;
    BEGIN
        -- updated_at from the VALUES, as in habit.next_change_seq (Citus: DO UPDATE SET).
        INSERT INTO habit.sync_clocks AS c (user_id, seq, xact, pruned_through, updated_at)
        VALUES (p_user, 1, pg_current_xact_id(), 1, now())
        ON CONFLICT (user_id) DO UPDATE
            SET seq = c.seq + 1, pruned_through = c.seq + 1, xact = excluded.xact, updated_at = excluded.updated_at
        RETURNING c.seq INTO number;
        RETURN number;
    END
    $fn$;
COMMENT ON FUNCTION habit.sync_reset(uuid) IS
    'Expires every sync cursor of p_user (after bulk writes that bypassed the triggers); returns the user''s new change number.';
