-- The schema as the catalog holds it, as text: every role, schema, extension, table, column,
-- constraint, index, view, function, trigger, policy, grant and comment of ours, one entry
-- per object, sorted. Tests/Fixtures/catalog.snapshot is this text for a freshly migrated
-- database (CatalogSnapshotTests compares them; scripts/catalog-snapshot --write rewrites
-- it), so every change to the real schema shows in review.
--
-- Run in one session, then read the result (scripts/catalog-snapshot, Tests/TestSupport/
-- CatalogSnapshot.swift):
--   SELECT dump FROM pg_temp.catalog_snapshot;
--
-- Independent of who owns the objects (a grant to the owner reads OWNER, no grantor) and of
-- the order grants were given in (privileges are sorted), so a database migrated from older
-- files compares equal to a fresh one. Only our objects: the schemas public, habit, admin,
-- extensions and auth (of auth, only auth.uid()), nothing an extension brings, our roles.

-- The deparsers (pg_get_functiondef, format_type, ::regclass…) qualify a name unless it is
-- visible: with only pg_catalog on the path, every name of ours comes out qualified.
SET search_path = pg_catalog, pg_temp;
SET client_min_messages = warning;

-- aclitem[] → 'grantee=PRIV,PRIV grantee=PRIV*' (* = WITH GRANT OPTION), sorted; NULL (the
-- default privileges) spelled out with acldefault so that an explicit copy compares equal.
CREATE OR REPLACE FUNCTION pg_temp.acl_text(acl aclitem[], owner oid, kind "char") RETURNS text
    LANGUAGE sql STABLE
    AS $fn$
    SELECT coalesce(string_agg(g.grantee || '=' || g.privileges, ' ' ORDER BY g.grantee COLLATE "C"), '(none)')
    FROM (SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' WHEN a.grantee = owner THEN 'OWNER'
                      ELSE pg_get_userbyid(a.grantee)::text END AS grantee,
                 string_agg(a.privilege_type || CASE WHEN a.is_grantable THEN '*' ELSE '' END, ','
                            ORDER BY a.privilege_type COLLATE "C") AS privileges
          FROM aclexplode(coalesce(acl, acldefault(kind, owner))) a
          GROUP BY 1) g
    $fn$;

DROP TABLE IF EXISTS pg_temp.catalog_snapshot;
CREATE TEMP TABLE catalog_snapshot AS
WITH schemas AS (
    SELECT n.oid, n.nspname FROM pg_namespace n WHERE n.nspname IN ('public', 'habit', 'admin', 'auth', 'extensions')
),
-- Objects an extension brought (btree_gist's functions and operator classes) are not ours.
extension_members AS (
    SELECT d.classid, d.objid FROM pg_depend d WHERE d.deptype = 'e'
),
roles AS (
    SELECT r.oid, r.rolname FROM pg_roles r
    WHERE r.rolname IN ('anon', 'authenticated', 'service_role', 'habit_batch', 'habit_admin', 'habit_worker')
),
relations AS (
    SELECT c.oid, c.oid::regclass::text AS name, c.relkind,
           CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence'
                          WHEN 'f' THEN 'foreign table' ELSE 'table' END AS kind, c.relowner, c.relacl, c.relrowsecurity,
           c.relforcerowsecurity, c.relreplident, c.relpersistence, c.reloptions
    FROM pg_class c JOIN schemas s ON s.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
      AND s.nspname NOT IN ('extensions', 'auth')
      AND NOT EXISTS (SELECT 1 FROM extension_members e WHERE e.classid = 'pg_class'::regclass AND e.objid = c.oid)
),
functions AS (
    SELECT p.oid, p.oid::regprocedure::text AS name, p.prokind, p.proowner, p.proacl, p.proconfig
    FROM pg_proc p JOIN schemas s ON s.oid = p.pronamespace
    WHERE s.nspname <> 'extensions'
      AND (s.nspname <> 'auth' OR p.proname = 'uid')
      AND NOT EXISTS (SELECT 1 FROM extension_members e WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid)
),
entries (key, body) AS (
    SELECT 'role ' || r.rolname,
           concat_ws(' ', CASE WHEN a.rolsuper THEN 'SUPERUSER' END,
                     CASE WHEN a.rolcanlogin THEN 'LOGIN' ELSE 'NOLOGIN' END,
                     CASE WHEN a.rolinherit THEN 'INHERIT' ELSE 'NOINHERIT' END,
                     CASE WHEN a.rolcreaterole THEN 'CREATEROLE' END, CASE WHEN a.rolcreatedb THEN 'CREATEDB' END,
                     CASE WHEN a.rolreplication THEN 'REPLICATION' END, CASE WHEN a.rolbypassrls THEN 'BYPASSRLS' END)
           || coalesce((SELECT E'\n  member of ' || string_agg(g.rolname::text, ', ' ORDER BY g.rolname COLLATE "C")
                        FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid), '')
    FROM roles r JOIN pg_authid a ON a.oid = r.oid

    UNION ALL
    SELECT 'schema ' || s.nspname,
           'acl ' || pg_temp.acl_text(n.nspacl, n.nspowner, 'n')
           || coalesce(E'\n  comment ' || obj_description(n.oid, 'pg_namespace'), '')
    FROM schemas s JOIN pg_namespace n ON n.oid = s.oid

    UNION ALL
    SELECT 'extension ' || x.extname, 'in schema ' || x.extnamespace::regnamespace::text
    FROM pg_extension x JOIN schemas s ON s.oid = x.extnamespace

    UNION ALL
    SELECT r.kind || ' ' || r.name,
           concat_ws(E'\n  ',
               'acl ' || pg_temp.acl_text(r.relacl, r.relowner, CASE WHEN r.relkind = 'S' THEN 's' ELSE 'r' END::"char"),
               CASE WHEN r.relrowsecurity THEN 'row level security' || CASE WHEN r.relforcerowsecurity THEN ', forced' ELSE '' END END,
               CASE WHEN r.relpersistence <> 'p' THEN 'persistence ' || r.relpersistence::text END,
               CASE WHEN r.relreplident NOT IN ('d', 'n') OR (r.relreplident = 'n' AND r.relkind IN ('r', 'p'))
                    THEN 'replica identity ' || r.relreplident::text END,
               'options ' || array_to_string(r.reloptions, ', '),
               'comment ' || obj_description(r.oid, 'pg_class'),
               CASE WHEN r.relkind IN ('v', 'm') THEN E'definition\n' || pg_get_viewdef(r.oid, true) END,
               CASE WHEN r.relkind = 'S' THEN (SELECT format('sequence %s start %s increment %s min %s max %s cache %s%s',
                                                          format_type(q.seqtypid, NULL), q.seqstart, q.seqincrement, q.seqmin,
                                                          q.seqmax, q.seqcache, CASE WHEN q.seqcycle THEN ' cycle' ELSE '' END)
                                               FROM pg_sequence q WHERE q.seqrelid = r.oid) END)
    FROM relations r

    UNION ALL
    -- Columns by position among the live ones: a table built in one statement and the same
    -- table grown by ALTER TABLE … ADD COLUMN compare equal.
    SELECT r.kind || ' ' || r.name || ' column ' || lpad(row_number() OVER (PARTITION BY r.oid ORDER BY a.attnum)::text, 3, '0'),
           concat_ws(' ', quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
                     CASE WHEN a.attnotnull THEN 'NOT NULL' END,
                     CASE WHEN a.attidentity <> '' THEN 'IDENTITY ' || a.attidentity::text END,
                     CASE WHEN a.attgenerated <> '' THEN 'GENERATED ' || a.attgenerated::text END,
                     'DEFAULT ' || pg_get_expr(d.adbin, d.adrelid),
                     CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
                          THEN 'COLLATE ' || a.attcollation::regcollation::text END)
           || coalesce(E'\n  acl ' || CASE WHEN a.attacl IS NOT NULL THEN pg_temp.acl_text(a.attacl, r.relowner, 'c') END, '')
           || coalesce(E'\n  comment ' || col_description(r.oid, a.attnum), '')
    FROM relations r
    JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped AND r.relkind <> 'S'
    JOIN pg_type t ON t.oid = a.atttypid
    LEFT JOIN pg_attrdef d ON d.adrelid = r.oid AND d.adnum = a.attnum

    UNION ALL
    SELECT 'table ' || r.name || ' constraint ' || c.conname,
           pg_get_constraintdef(c.oid) || coalesce(E'\n  comment ' || obj_description(c.oid, 'pg_constraint'), '')
    FROM relations r JOIN pg_constraint c ON c.conrelid = r.oid

    UNION ALL
    SELECT 'table ' || r.name || ' index ' || i.indexrelid::regclass::text,
           pg_get_indexdef(i.indexrelid) || coalesce(E'\n  comment ' || obj_description(i.indexrelid, 'pg_class'), '')
    FROM relations r JOIN pg_index i ON i.indrelid = r.oid

    UNION ALL
    -- Name order is firing order among a table's triggers of one timing and event.
    SELECT 'table ' || r.name || ' trigger ' || g.tgname,
           pg_get_triggerdef(g.oid)
           || CASE WHEN g.tgenabled <> 'O' THEN E'\n  enabled ' || g.tgenabled::text ELSE '' END
           || coalesce(E'\n  comment ' || obj_description(g.oid, 'pg_trigger'), '')
    FROM relations r JOIN pg_trigger g ON g.tgrelid = r.oid AND NOT g.tgisinternal

    UNION ALL
    SELECT 'table ' || r.name || ' policy ' || p.polname,
           concat_ws(' ', CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                     'FOR ' || CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                                             WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                     'TO ' || (SELECT string_agg(CASE WHEN o = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(o)::text END, ', '
                                                 ORDER BY CASE WHEN o = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(o)::text END COLLATE "C")
                               FROM unnest(p.polroles) o),
                     'USING (' || pg_get_expr(p.polqual, p.polrelid) || ')',
                     'WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')')
           || coalesce(E'\n  comment ' || obj_description(p.oid, 'pg_policy'), '')
    FROM relations r JOIN pg_policy p ON p.polrelid = r.oid

    UNION ALL
    SELECT 'function ' || f.name,
           CASE WHEN f.prokind IN ('f', 'p') THEN rtrim(pg_get_functiondef(f.oid), E'\n') ELSE 'kind ' || f.prokind::text END
           || E'\n  config ' || coalesce(array_to_string(f.proconfig, ', '), '(none)')
           || E'\n  acl ' || pg_temp.acl_text(f.proacl, f.proowner, 'f')
           || coalesce(E'\n  comment ' || obj_description(f.oid, 'pg_proc'), '')
    FROM functions f

    UNION ALL
    -- Types of our own (not the row types of tables, nor arrays): none today.
    SELECT 'type ' || t.oid::regtype::text,
           CASE t.typtype WHEN 'd' THEN 'domain over ' || format_type(t.typbasetype, t.typtypmod)
                          WHEN 'e' THEN 'enum ' || (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
                                                    FROM pg_enum e WHERE e.enumtypid = t.oid)
                          ELSE 'typtype ' || t.typtype::text END
           || coalesce(E'\n  comment ' || obj_description(t.oid, 'pg_type'), '')
    FROM pg_type t JOIN schemas s ON s.oid = t.typnamespace
    WHERE s.nspname NOT IN ('extensions', 'auth')
      AND t.typelem = 0 AND (t.typrelid = 0 OR (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c')
      AND NOT EXISTS (SELECT 1 FROM extension_members e WHERE e.classid = 'pg_type'::regclass AND e.objid = t.oid)

    UNION ALL
    SELECT 'default privileges in schema ' || coalesce(s.nspname, '(all)') || ' for ' || pg_get_userbyid(d.defaclrole)
           || ' on ' || d.defaclobjtype::text,
           pg_temp.acl_text(d.defaclacl, d.defaclrole, d.defaclobjtype)
    FROM pg_default_acl d LEFT JOIN schemas s ON s.oid = d.defaclnamespace
    WHERE d.defaclnamespace = 0 OR s.oid IS NOT NULL
)
-- No final newline: psql prints one after the value.
SELECT string_agg(e.key || E'\n  ' || e.body, E'\n' ORDER BY e.key COLLATE "C") AS dump FROM entries e;
