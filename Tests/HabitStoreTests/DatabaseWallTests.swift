import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The database is the wall for every writer (PostgREST, psql, the worker, batch jobs):
/// privileges and function search paths read from the catalog (sql/grants.sql; the SET clauses
/// of sql/functions).
@Suite struct DatabaseWallTests {
    let migrator = try! Migrator(directory: TestDatabase.migrationsDirectory)

    /// The SQL functions that carry no SET search_path so that PostgreSQL can inline them;
    /// their bodies are schema-qualified instead (docs/schema.md, "search_path").
    static let inlined = [
        "habit.local_date(timestamp with time zone,text)", "habit.week_start(date,integer)",
        "habit.weekly_counts(date,date,text,uuid)",
        // sql/0015: the body habit.weekly_counts now calls, with a list of users.
        "habit.weekly_counts_of(date,date,text,uuid[])",
        // The week values of counted habits (issue 32), the batch's --values.
        "habit.weekly_values(date,date,text,uuid)",
        "habit.is_on_day(boolean,timestamp with time zone,date,text)", "habit.completion_refusal(boolean,date,date,boolean)",
        "habit.period_on_days(timestamp with time zone,timestamp with time zone,text,date,time without time zone)",
        "habit.local_day(timestamp with time zone,text,time without time zone)", "habit.day_begins(date,text,time without time zone)",
        // A day's value rules (sql/0031).
        "habit.is_counted(text,numeric,text)", "habit.value_meets(numeric,numeric,text)", "habit.done_value(numeric,text)",
        // Loop's frequency (issue 33), inlined into the score's functions.
        "habit.loop_numerator(jsonb)", "habit.loop_denominator(jsonb)",
        "habit.loop_share(double precision,double precision,double precision,boolean,boolean)",
        "habit.score_basis(date,jsonb,text,numeric,text)",
        "habit.due_days(jsonb,date,daterange,date)", "habit.due_on(jsonb,date,date)",
        // The block of a times_per_week or times_in_days day (sql/0034), inlined into day.get's one-day path.
        "habit.quota_block_start(jsonb,date,integer,date)", "habit.quota_block_days(jsonb)",
        // The streak reads planned into their callers (day.get's statement, habit_stats), and
        // day.get's one-day path (issue 29).
        "habit.streak_unit(jsonb)", "habit.habits_on(uuid,date,date,text,time without time zone)",
        "habit.current_streak(uuid,uuid,date,date)", "habit.streak_state_answers(habit_streak_state,date,date)",
        "habit.day_habits(uuid,date,date,text,integer,time without time zone)",
        // The streak engine's arithmetic, inlined into its own expressions (issue 29).
        "habit.streak_habit_of(habit_streak_state)", "habit.streak_segment_due(habit.streak_segment,date,date)",
        // auth.uid() where this project made it: inlined into every policy and statement (issue 29).
        "auth.uid()",
        // The CHECK of names, titles and notes (sql/migrations/0019), inlined into the constraints.
        "habit.has_no_bidi_controls(text)",
        // The lower bound of written dates (sql/migrations/0021), a constant the triggers inline.
        "habit.earliest_day()",
        // The rule of a reminder's firing (sql/0036), inlined into the sender's window.
        "habit.reminder_firing_rule(uuid,uuid,smallint,text,time without time zone,date,date)",
    ]

    /// Every function of ours runs with a fixed search_path, except the documented helpers.
    @Test func everyFunctionHasAFixedSearchPath() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let functions = try connection.query("""
                SELECT p.oid::regprocedure::text,
                       EXISTS (SELECT 1 FROM unnest(p.proconfig) AS setting
                               WHERE setting IN ('search_path=pg_catalog, pg_temp', 'search_path=pg_catalog,pg_temp'))
                FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname IN ('habit', 'admin', 'auth', 'public')
                ORDER BY 1
                """).map { (try $0.decode(String.self, at: 0), try $0.decode(Bool.self, at: 1)) }
            #expect(functions.count >= 9, "\(functions)")
            let missing = functions.filter { !$0.1 && !Self.inlined.contains($0.0) }.map(\.0)
            #expect(missing.isEmpty, "functions without SET search_path = pg_catalog, pg_temp: \(missing)")
            // The exceptions are exactly the documented ones, and still without a SET clause.
            #expect(functions.filter { Self.inlined.contains($0.0) }.map(\.1) == Array(repeating: false, count: Self.inlined.count))
        }
    }

    /// The functions without a SET clause mean the same whatever the caller's search_path, and
    /// PostgreSQL still inlines them (the reason they have no SET clause).
    @Test func inlineHelpersIgnoreTheCallersSearchPathAndStayInlined() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            try connection.executeScript(unsafeSQL: """
                CREATE SCHEMA hostile;
                CREATE FUNCTION hostile.minus(date, integer) RETURNS date LANGUAGE sql AS $$ SELECT date '1900-01-01' $$;
                CREATE OPERATOR hostile.- (LEFTARG = date, RIGHTARG = integer, FUNCTION = hostile.minus);
                CREATE FUNCTION hostile.plus(integer, integer) RETURNS integer LANGUAGE sql AS $$ SELECT 1000 $$;
                CREATE OPERATOR hostile.+ (LEFTARG = integer, RIGHTARG = integer, FUNCTION = hostile.plus);
                CREATE FUNCTION hostile.timezone(text, timestamptz) RETURNS timestamp LANGUAGE sql AS $$ SELECT timestamp '1900-01-01' $$;
                CREATE FUNCTION hostile.always(date, date) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
                CREATE OPERATOR hostile.<= (LEFTARG = date, RIGHTARG = date, FUNCTION = hostile.always);
                CREATE OPERATOR hostile.> (LEFTARG = date, RIGHTARG = date, FUNCTION = hostile.always);
                GRANT USAGE ON SCHEMA hostile TO PUBLIC;
                INSERT INTO public.habit_templates (id, user_id, name, activated_at)
                    VALUES ('10000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-00000000000a', 'Run', '2026-11-17 12:00Z');
                INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                    VALUES ('00000000-0000-0000-0000-00000000000a', '10000000-0000-0000-0000-000000000001', '2026-11-18');
                """)
            let weekly = "SELECT week_start::text || ' ' || completions || ' ' || active_habit_days FROM habit.weekly_counts('2026-11-16', '2026-11-29', 'monday')"
            let expectedWeeks = ["2026-11-16 1 6", "2026-11-23 0 7"]
            #expect(try connection.query(Query(unsafeSQL: weekly)).map { try $0.decode(String.self, at: 0) } == expectedWeeks)
            // The streak read day.get inlines, and its one-day path (the runs answer at R).
            let streaks: Query = """
                SELECT row(d.*)::text || ' ' || row(c.*)::text FROM public.habit_templates t,
                       habit.day_habits(t.user_id, '2026-11-20', '2026-11-25', 'UTC', 1, '00:00') d,
                       habit.current_streak(t.user_id, t.id, '2026-11-20', '2026-11-25') c
                WHERE d.template_id = t.id
                """
            let expectedStreaks = try connection.query(streaks).map { try $0.decode(String.self, at: 0) }
            #expect(expectedStreaks.count == 1)
            try connection.withTransaction(prelude: ["SET LOCAL search_path = hostile, pg_catalog, public"]) { connection throws in
                #expect(try connection.query(streaks).map { try $0.decode(String.self, at: 0) } == expectedStreaks)
                // The hostile operator really is what an unqualified `-` means here.
                #expect(try connection.queryOne("SELECT date '2026-11-20' - 4").decode(CalendarDate.self, at: 0) == date("1900-01-01"))
                let row = try connection.queryOne("""
                    SELECT habit.week_start('2026-11-20', 1), habit.week_start('2026-11-20', 7),
                           habit.local_date('2026-11-20 23:30Z', 'Asia/Tokyo')
                    """)
                #expect(try row.decode(CalendarDate.self, at: 0) == date("2026-11-16"))
                #expect(try row.decode(CalendarDate.self, at: 1) == date("2026-11-15"))
                #expect(try row.decode(CalendarDate.self, at: 2) == date("2026-11-21"))
                // The hostile <= and > say true for any two dates; the rules still compare.
                #expect(try connection.queryOne("SELECT date '2026-11-20' > date '2026-11-21'").decode(Bool.self, at: 0))
                let rules = try connection.queryOne("""
                    SELECT habit.is_on_day(true, '2026-11-20 12:00Z', '2026-11-19', 'UTC'),
                           habit.completion_refusal(true, '2026-11-19', '2026-11-20', true)
                    """)
                #expect(try rules.decode(Bool.self, at: 0) == false)
                #expect(try rules.decode(String?.self, at: 1) == nil)
                // Ended at midnight of the 20th: on through the 19th; open: from the 17th on.
                let periods = try connection.queryOne("""
                    SELECT habit.period_on_days('2026-11-17 12:00Z', '2026-11-20 00:00Z', 'UTC', '2026-11-25', '00:00')::text,
                           habit.period_on_days('2026-11-17 12:00Z', NULL, 'UTC', '2026-11-25', '00:00')::text,
                           habit.period_on_days('2026-11-17 02:00Z', '2026-11-20 03:00Z', 'UTC', '2026-11-25', '03:00')::text
                    """)
                #expect(try periods.decode(String.self, at: 0) == "[2026-11-17,2026-11-20)")
                #expect(try periods.decode(String.self, at: 1) == "[2026-11-17,)")
                // Days from 03:00: 02:00 on the 17th is the 16th; ending as the 20th begins.
                #expect(try periods.decode(String.self, at: 2) == "[2026-11-16,2026-11-20)")
                #expect(try connection.query(Query(unsafeSQL: weekly)).map { try $0.decode(String.self, at: 0) } == expectedWeeks)
            }
            // Inlined: the plan computes the expressions, it does not call the functions.
            let plan = try connection.query("""
                EXPLAIN (VERBOSE, COSTS OFF)
                SELECT habit.week_start(d::date, 1), habit.local_date(d, 'UTC'),
                       habit.completion_refusal(true, d::date, habit.local_date(now(), 'UTC'), habit.is_on_day(true, d, '2026-11-20', 'UTC')),
                       habit.period_on_days(d, d + interval '1 day', 'UTC', '2026-11-25', '03:00'),
                       habit.local_day(d, 'Europe/Helsinki', '03:00'), habit.day_begins(d::date, 'UTC', '03:00')
                FROM generate_series(now(), now() + interval '3 days', interval '1 day') d
                """).map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            for name in ["week_start(", "local_date(", "completion_refusal(", "is_on_day(", "period_on_days(", "local_day(", "day_begins("] {
                #expect(!plan.contains(name), "\(plan)")
            }
            let streaksPlan = try connection.query(Query(unsafeSQL: "EXPLAIN (COSTS OFF) " + streaks.sql)).map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            for name in ["Function Scan on day_habits", "Function Scan on current_streak", "streak_state_answers", "period_on_days"] {
                #expect(!streaksPlan.contains(name), "\(streaksPlan)")
            }
            let weeklyPlan = try connection.query(Query(unsafeSQL: "EXPLAIN (COSTS OFF) " + weekly)).map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
            #expect(!weeklyPlan.contains("Function Scan on weekly_counts"), "\(weeklyPlan)")
        }
    }

    /// Privileges of the migrated database, read from the catalog.
    @Test func privilegesFromTheCatalog() throws {
        try TestDatabase.with { database throws in
            let violations = try Self.privilegeViolations(try database.connect())
            #expect(violations.isEmpty, "\(violations)")
        }
    }

    /// On Supabase, every table created in public gets ALL (TRUNCATE, TRIGGER, REFERENCES
    /// included) for anon, authenticated and service_role from ALTER DEFAULT PRIVILEGES of
    /// postgres. Those defaults are Supabase's, not ours; the migrations revoke per table.
    @Test func supabaseDefaultPrivilegesAreRevoked() throws {
        // The roles are cluster-wide and made by the first migration on the server: have one.
        try TestDatabase.with { _ in }
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            try connection.executeScript(unsafeSQL: """
                ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO anon, authenticated, service_role;
                ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON FUNCTIONS TO anon, authenticated, service_role;
                ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON SEQUENCES TO anon, authenticated, service_role;
                """)
            try migrator.migrate(connection)
            #expect(try connection.queryOne("SELECT has_table_privilege('anon', 'public.profiles', 'SELECT')").decode(Bool.self, at: 0) == false)
            let violations = try Self.privilegeViolations(connection)
            #expect(violations.isEmpty, "\(violations)")
            // authenticated keeps exactly what the app needs.
            let kept = try connection.queryOne("""
                SELECT has_table_privilege('authenticated', 'public.habit_completions', 'SELECT, INSERT, UPDATE, DELETE')
                   AND has_table_privilege('authenticated', 'public.weekly_completion_counts', 'SELECT')
                   AND NOT has_table_privilege('authenticated', 'public.weekly_completion_counts', 'INSERT')
                """).decode(Bool.self, at: 0)
            #expect(kept)
        }
    }

    /// One line per privilege that should not exist:
    /// - anon, authenticated, service_role: on the relations of public, habit and admin, only
    ///   the documented privileges (anon none; so no TRUNCATE, TRIGGER or REFERENCES anywhere);
    /// - anon: no EXECUTE on functions of habit, admin or public;
    /// - habit_batch: no access to tasks or task lists, and no policy applying to it there.
    static func privilegeViolations(_ connection: Connection) throws -> [String] {
        try connection.query("""
            WITH relations AS (
                SELECT c.oid, n.nspname || '.' || c.relname AS name
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname IN ('public', 'habit', 'admin') AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
            ),
            allowed (grantee, relation, privilege) AS (
                SELECT grantee, relation, privilege
                FROM unnest(ARRAY['authenticated', 'service_role']) AS grantee,
                     unnest(ARRAY['public.profiles', 'public.habit_templates', 'public.habit_completions',
                                  'public.task_lists', 'public.tasks', 'public.habit_skips',
                                  'public.habit_checkins', 'public.habit_day_notes', 'public.habit_reminders', 'public.habit_areas']) AS relation,
                     unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) AS privilege
                UNION ALL
                SELECT grantee, relation, 'SELECT'
                FROM unnest(ARRAY['authenticated', 'service_role']) AS grantee,
                     -- habit_periods: written only by the habit_templates trigger; the streak
                     -- runs and state only by the triggers of completions, skips and habits.
                     unnest(ARRAY['public.weekly_completion_counts', 'habit.time_zones', 'public.habit_periods',
                                  'public.habit_streak_runs', 'public.habit_streak_state']) AS relation
                UNION ALL
                -- Sync (sql/0012): a pull reads its clock and tombstones (written only by the
                -- triggers' SECURITY DEFINER functions); a push reads its replay records, which
                -- only habit.sync_mutation_claim/_record write (sql/0023).
                SELECT grantee, relation, privilege
                FROM unnest(ARRAY['authenticated', 'service_role']) AS grantee,
                     (VALUES ('habit.sync_clocks', 'SELECT'), ('habit.sync_tombstones', 'SELECT'),
                             ('habit.sync_mutations', 'SELECT'),
                             -- Loop's score reads its checkpoint as the caller (sql/0038).
                             ('habit.score_checkpoints', 'SELECT')) AS sync (relation, privilege)
                UNION ALL
                VALUES ('service_role', 'habit.schema_migrations', 'SELECT')
            )
            SELECT g.role || ' has ' || k.kind || ' on ' || r.name
            FROM relations r, unnest(ARRAY['anon', 'authenticated', 'service_role']) AS g (role),
                 unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS k (kind)
            WHERE has_table_privilege(g.role, r.oid, k.kind)
              AND NOT EXISTS (SELECT 1 FROM allowed a WHERE a.grantee = g.role AND a.relation = r.name AND a.privilege = k.kind)
            UNION ALL
            SELECT 'anon may execute ' || p.oid::regprocedure::text
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname IN ('habit', 'admin', 'public') AND has_function_privilege('anon', p.oid, 'EXECUTE')
            UNION ALL
            SELECT 'habit_batch has ' || privilege || ' on ' || relation
            FROM unnest(ARRAY['public.tasks', 'public.task_lists']) AS relation,
                 unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) AS privilege
            WHERE has_table_privilege('habit_batch', relation, privilege)
            UNION ALL
            SELECT 'policy ' || policyname || ' on ' || tablename || ' applies to habit_batch'
            FROM pg_policies WHERE tablename IN ('tasks', 'task_lists') AND 'habit_batch' = ANY (roles)
            ORDER BY 1
            """).map { try $0.decode(String.self, at: 0) }
    }
}
