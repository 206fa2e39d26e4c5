import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31, finding 1, at the wall every writer meets (Supabase clients and psql write the
/// tables directly): the tables' BEFORE triggers (sql/migrations/0021's bound) keep new dates and instants
/// at or after 1970-01-01 (UTC) — for `authenticated`, for `service_role`, and for an admin's
/// backfill, which lifts the future and activity rules but not this one — and 0021 itself
/// applies to a database holding older rows without failing.
@Suite struct DateRangeConstraintTests {
    @Test("as authenticated, service_role and a backfilling admin: rows before 1970 refused, each naming its constraint")
    func everyWriterMeetsTheLowerBound() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let user = UUID()
            let habit = try RuleFunctionsTests.asUser(user, on: connection) { connection in
                try connection.queryOne("""
                    INSERT INTO public.habit_templates (user_id, name, activated_at) VALUES (\(user), 'Run', '1970-01-01 00:00:00+00') RETURNING id
                    """).decode(UUID.self, at: 0)
            }
            func asUser(_ statement: Query) throws {
                _ = try RuleFunctionsTests.asUser(user, on: connection) { try $0.execute(statement) }
            }
            BidiControlConstraintTests.expectRefused("habit_templates_activated_at_range") {
                try asUser("INSERT INTO public.habit_templates (user_id, name, activated_at) VALUES (\(user), 'Old', '1880-01-01 00:00:00+00')")
            }
            BidiControlConstraintTests.expectRefused("habit_templates_activated_at_range") {
                try asUser("UPDATE public.habit_templates SET activated_at = '1969-12-31 23:59:59+00' WHERE id = \(habit)")
            }
            BidiControlConstraintTests.expectRefused("habit_templates_activated_at_range") {
                try connection.withTransaction(prelude: ["SET LOCAL ROLE service_role"]) { connection in
                    _ = try connection.execute("INSERT INTO public.habit_templates (user_id, name, activated_at) VALUES (\(user), 'Old', '1900-06-01 00:00:00+00')")
                }
            }
            // An admin's backfill lifts future_date and habit_not_active; the range stays.
            func backfilling(_ statement: Query) throws {
                try connection.withTransaction(prelude: ["SET LOCAL habit.backfill = 'on'"]) { _ = try $0.execute(statement) }
            }
            BidiControlConstraintTests.expectRefused("habit_completions_date_range") {
                try backfilling("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(user), \(habit), '1881-03-03')")
            }
            BidiControlConstraintTests.expectRefused("habit_skips_date_range") {
                try backfilling("INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(user), \(habit), '1969-12-31')")
            }
            BidiControlConstraintTests.expectRefused("habit_periods_started_at_range") {
                try backfilling("""
                    INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at)
                    VALUES (\(user), \(habit), '1960-01-01 00:00:00+00', '1961-01-01 00:00:00+00')
                    """)
            }
            // The user's own completion on a day before 1970 is refused too (the habit is on no such day).
            do {
                try asUser("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(user), \(habit), '1969-12-31')")
                Issue.record("a completion on 1969-12-31 was accepted")
            } catch let error as PostgresError {
                #expect(error.sqlState == .checkViolation || error.sqlState == .habitNotActive, "\(error)")
            }
            // 1970-01-01 itself is in range.
            try asUser("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(user), \(habit), '1970-01-01')")
            #expect(try connection.queryOne("""
                SELECT (SELECT count(*) FROM public.habit_completions WHERE user_id = \(user)) || ' ' ||
                       (SELECT count(*) FROM public.habit_skips WHERE user_id = \(user)) || ' ' ||
                       (SELECT count(*) FROM public.habit_templates WHERE user_id = \(user)) || ' ' ||
                       (SELECT min(started_at) FROM public.habit_periods WHERE user_id = \(user))::date
                """).decode(String.self, at: 0) == "1 0 1 1970-01-01")
        }
    }

    /// A database at 0020 holding rows before 1970 (an admin's backfill): 0021 applies and
    /// keeps them, and they stay editable (the rule is the triggers', for a new date only: a
    /// CHECK constraint, even NOT VALID, would refuse every later update of such a row — a
    /// rename, a deactivation closing its period); a new row before 1970 is refused.
    @Test func migrationKeepsOlderRowsEditable() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            let sql = try MigrationSource.load(directory: TestDatabase.migrationsDirectory)
            // 0020's tables without functions or triggers: the rows below are written with the
            // triggers off anyway, and today's current-state files need later migrations'
            // columns (0024's, 0025's), as in BidiControlConstraintTests.
            try Migrator(migrations: sql.migrations.filter { $0.version <= 20 }, currentStateFiles: []).migrate(connection)
            #expect(try Migrator.schemaVersion(connection) == 20)
            // Rows as an old import or a restore left them, written with the triggers off.
            let user = UUID(), habit = UUID()
            try connection.withTransaction(prelude: ["SET LOCAL session_replication_role = replica"]) { connection in
                _ = try connection.execute("""
                    INSERT INTO public.habit_templates (id, user_id, name, activated_at) VALUES (\(habit), \(user), 'Old', '1965-03-01 00:00:00+00')
                    """)
                _ = try connection.execute("INSERT INTO public.habit_periods (user_id, template_id, started_at) VALUES (\(user), \(habit), '1965-03-01 00:00:00+00')")
                _ = try connection.execute("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(user), \(habit), '1965-03-02')")
            }

            try Migrator(directory: TestDatabase.migrationsDirectory).migrate(connection)
            #expect(try Migrator.schemaVersion(connection) >= 21)
            #expect(try connection.queryOne("SELECT count(*) FROM public.habit_completions WHERE user_id = \(user) AND completed_date = '1965-03-02'").decode(Int.self, at: 0) == 1)
            // The old rows stay editable, by the user too.
            try RuleFunctionsTests.asUser(user, on: connection) { connection in
                _ = try connection.execute("UPDATE public.habit_templates SET name = 'Older', is_active = false WHERE id = \(habit)")
            }
            #expect(try connection.queryOne("""
                SELECT name || ' ' || is_active || ' ' || activated_at::date || ' ' || (SELECT count(*) FROM public.habit_periods p
                                                                                     WHERE p.template_id = t.id AND p.ended_at IS NOT NULL)
                FROM public.habit_templates t WHERE id = \(habit)
                """).decode(String.self, at: 0) == "Older false 1965-03-01 1")
            // New rows meet the rule.
            BidiControlConstraintTests.expectRefused("habit_templates_activated_at_range") {
                _ = try connection.execute("INSERT INTO public.habit_templates (user_id, name, activated_at) VALUES (\(user), 'Oldest', '1960-01-01 00:00:00+00')")
            }
        }
    }
}
