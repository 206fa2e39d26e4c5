import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 30, item 9, at the wall every writer meets (a Supabase app writes these tables
/// directly): the CHECK constraints of sql/migrations/0019 refuse bidirectional control
/// characters in habit and list names, task titles and notes, for `authenticated` and
/// `service_role` alike; and 0019 itself cleans the rows stored before it.
@Suite struct BidiControlConstraintTests {
    static let controls: [Unicode.Scalar] = ["\u{061C}", "\u{200E}", "\u{200F}", "\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}",
                                             "\u{202E}", "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}"]

    static func text(_ control: Unicode.Scalar) -> String { "Run\(Character(control))gnp" }

    /// The statement fails with 23514 naming `constraint`.
    static func expectRefused(_ constraint: String, sourceLocation: SourceLocation = #_sourceLocation,
                              _ statement: () throws -> Void) {
        do {
            try statement()
            Issue.record("accepted; expected \(constraint) to refuse it", sourceLocation: sourceLocation)
        } catch let error as PostgresError {
            #expect(error.sqlState == .checkViolation && error.constraint == constraint, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("as authenticated (the user's claims) and as service_role: every character refused, in inserts and updates")
    func everyWriterMeetsTheConstraints() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            let user = UUID()
            // Rows to update, written as the user.
            let (habit, list, task) = try RuleFunctionsTests.asUser(user, on: connection) { connection in
                (try connection.queryOne("INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), 'Run') RETURNING id").decode(UUID.self, at: 0),
                 try connection.queryOne("INSERT INTO public.task_lists (user_id, name) VALUES (\(user), 'Errands') RETURNING id").decode(UUID.self, at: 0),
                 try connection.queryOne("INSERT INTO public.tasks (user_id, title, position) VALUES (\(user), 'Buy milk', 1) RETURNING id").decode(UUID.self, at: 0))
            }
            for control in Self.controls {
                let bad = Self.text(control)
                func asUser(_ statement: Query) throws {
                    _ = try RuleFunctionsTests.asUser(user, on: connection) { try $0.execute(statement) }
                }
                Self.expectRefused("habit_templates_name_bidi_check") { try asUser("INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), \(bad))") }
                Self.expectRefused("habit_templates_name_bidi_check") { try asUser("UPDATE public.habit_templates SET name = \(bad) WHERE id = \(habit)") }
                Self.expectRefused("task_lists_name_bidi_check") { try asUser("INSERT INTO public.task_lists (user_id, name) VALUES (\(user), \(bad))") }
                Self.expectRefused("task_lists_name_bidi_check") { try asUser("UPDATE public.task_lists SET name = \(bad) WHERE id = \(list)") }
                Self.expectRefused("tasks_title_bidi_check") { try asUser("INSERT INTO public.tasks (user_id, title, position) VALUES (\(user), \(bad), 2)") }
                Self.expectRefused("tasks_title_bidi_check") { try asUser("UPDATE public.tasks SET title = \(bad) WHERE id = \(task)") }
                Self.expectRefused("tasks_notes_bidi_check") { try asUser("INSERT INTO public.tasks (user_id, title, notes, position) VALUES (\(user), 'x', \(bad), 2)") }
                Self.expectRefused("tasks_notes_bidi_check") { try asUser("UPDATE public.tasks SET notes = \(bad) WHERE id = \(task)") }
                // sql/0029: a measurable habit's unit, a day's note.
                Self.expectRefused("habit_templates_unit_bidi_check") {
                    try asUser("INSERT INTO public.habit_templates (user_id, name, kind, unit) VALUES (\(user), 'Run', 'measurable', \(bad))")
                }
                Self.expectRefused("habit_day_notes_note_bidi_check") {
                    try asUser("INSERT INTO public.habit_day_notes (user_id, template_id, note_date, note) VALUES (\(user), \(habit), '2026-01-01', \(bad))")
                }
            }
            // Supabase's server-side role (no row-level security) meets the same wall.
            Self.expectRefused("habit_templates_name_bidi_check") {
                try connection.withTransaction(prelude: ["SET LOCAL ROLE service_role"]) { connection in
                    _ = try connection.execute("INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), \(Self.text("\u{202E}")))")
                }
            }
            // Right-to-left letters, joiners and line breaks in notes are fine; nothing refused was written.
            try RuleFunctionsTests.asUser(user, on: connection) { connection in
                _ = try connection.execute("UPDATE public.habit_templates SET name = 'ריצה' WHERE id = \(habit)")
                _ = try connection.execute("UPDATE public.task_lists SET name = \("👩‍💻 عمل") WHERE id = \(list)")
                _ = try connection.execute("UPDATE public.tasks SET notes = \("שורה\nline") WHERE id = \(task)")
            }
            let counts = try connection.queryOne("""
                SELECT (SELECT count(*) FROM public.habit_templates WHERE user_id = \(user)) || ' ' ||
                       (SELECT count(*) FROM public.task_lists WHERE user_id = \(user)) || ' ' ||
                       (SELECT count(*) FROM public.tasks WHERE user_id = \(user))
                """).decode(String.self, at: 0)
            #expect(counts == "1 1 1")
        }
    }

    /// A database at 0018 holding such characters: 0019 replaces each by U+FFFD — the other
    /// rules stay true (same length, no white space at an end, even for a name that was
    /// nothing else). The rows are written with no triggers: today's functions need columns
    /// of later migrations (0024's tombstone count, 0025's notification token), so they
    /// cannot stand in for 0018's, and 0018's are not kept. On a real database at 0018, its
    /// triggers give the cleaned rows a new change number (0019's UPDATEs are writes like any
    /// other), so devices pull the new text; here the rows keep theirs.
    @Test func migrationReplacesStoredCharactersWithTheReplacementCharacter() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            let sql = try MigrationSource.load(directory: TestDatabase.migrationsDirectory)
            // 0018's tables, without functions or triggers (above).
            try Migrator(migrations: sql.migrations.filter { $0.version <= 18 }, currentStateFiles: []).migrate(connection)
            #expect(try Migrator.schemaVersion(connection) == 18)
            let user = UUID()
            try connection.execute("""
                INSERT INTO public.habit_templates (user_id, name) VALUES
                    (\(user), \("Run\u{202E}gnp.exe")), (\(user), \("\u{200F}")), (\(user), 'Plain')
                """)
            try connection.execute("INSERT INTO public.task_lists (user_id, name) VALUES (\(user), \("\u{2066}List\u{2069}"))")
            try connection.execute("""
                INSERT INTO public.tasks (user_id, title, notes, position) VALUES
                    (\(user), \("A\u{061C}B"), \("line\u{200E}\nline"), 1), (\(user), 'Fine', \("\u{202A}"), 2), (\(user), 'Clean', 'notes', 3)
                """)
            #expect(try connection.queryOne("SELECT count(*) FROM public.habit_templates WHERE name ~ '[\\u202E\\u200F]'").decode(Int.self, at: 0) == 2)

            try Migrator(directory: TestDatabase.migrationsDirectory).migrate(connection)
            let after = try connection.query("""
                SELECT 'h ' || name, change_seq FROM public.habit_templates WHERE user_id = \(user)
                UNION ALL SELECT 'l ' || name, change_seq FROM public.task_lists WHERE user_id = \(user)
                UNION ALL SELECT 't ' || title || ' ' || coalesce(notes, ''), change_seq FROM public.tasks WHERE user_id = \(user)
                ORDER BY 1
                """).map { (try $0.decode(String.self, at: 0), try $0.decode(Int.self, at: 1)) }
            #expect(after.map(\.0) == ["h Plain", "h Run\u{FFFD}gnp.exe", "h \u{FFFD}", "l \u{FFFD}List\u{FFFD}",
                                       "t A\u{FFFD}B line\u{FFFD}\nline", "t Clean notes", "t Fine \u{FFFD}"].sorted())
            #expect(try connection.queryOne("""
                SELECT bool_and(convalidated) AND count(*) = 7 FROM pg_constraint WHERE conname LIKE '%_bidi_check'
                """).decode(Bool.self, at: 0))
        }
    }
}
