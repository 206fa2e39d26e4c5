-- 0023 (issue 31, items 5 and 11): walls around what a user's role may write.
--
-- Item 5: habit.sync_mutations (sync.push's replay records) is written only through
-- habit.sync_mutation_claim and habit.sync_mutation_record (functions/sync.sql); authenticated
-- loses INSERT and UPDATE (grants.sql) and the two policies that let it write its own rows go.
DROP POLICY IF EXISTS sync_mutations_insert_own ON habit.sync_mutations;
DROP POLICY IF EXISTS sync_mutations_update_own ON habit.sync_mutations;

-- Item 11: a user's zone is an IANA zone name (or an alias tzdata keeps for one, such as
-- US/Pacific), never one of the other names PostgreSQL reads from its zoneinfo directory:
-- `localtime` (the database host's own zone: a user's today would follow the host), `posixrules`
-- (the rules file for POSIX TZ strings), `Factory` (tzdata's "local time zone must be set"
-- placeholder), and the `posix/` and `right/` copies of the tree (right/ counts leap seconds).
-- Profiles holding one move to the zone it copies (posix/Europe/Paris → Europe/Paris), the
-- others to UTC (docs/admin.md); the names leave habit.time_zones, and a CHECK keeps them out
-- of it (the documented refresh from pg_timezone_names included), so profiles_timezone_fkey
-- refuses them for every writer and the worker, which reads this table, answers
-- invalid_timezone.
-- The rule, once: the CHECK below and the refresh after a tzdata upgrade (docs/schema.md) call
-- it. Changing it is a versioned migration, as for habit.valid_schedule.
CREATE OR REPLACE FUNCTION habit.is_zone_name(p_name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path = pg_catalog, pg_temp
    AS $fn$
    SELECT p_name NOT IN ('localtime', 'posixrules', 'Factory', 'posix', 'right') AND p_name !~ '^(posix|right)/'
    $fn$;
COMMENT ON FUNCTION habit.is_zone_name(text) IS
    'Whether a name pg_timezone_names lists is a zone a user may have: IANA names and their aliases, not localtime, posixrules, Factory, nor the posix/ and right/ copies (sql/0023).';

UPDATE public.profiles p
SET timezone = CASE WHEN p.timezone ~ '^(posix|right)/'
                         AND EXISTS (SELECT 1 FROM habit.time_zones z WHERE z.name = regexp_replace(p.timezone, '^(posix|right)/', ''))
                    THEN regexp_replace(p.timezone, '^(posix|right)/', '') ELSE 'UTC' END
WHERE NOT habit.is_zone_name(p.timezone);
DELETE FROM habit.time_zones z
WHERE NOT habit.is_zone_name(z.name);
ALTER TABLE habit.time_zones ADD CONSTRAINT time_zones_name_check
    CHECK (habit.is_zone_name(name));
COMMENT ON CONSTRAINT time_zones_name_check ON habit.time_zones IS
    'IANA zone names and their aliases only: not localtime, posixrules, Factory, nor the posix/ and right/ copies (sql/0023).';
