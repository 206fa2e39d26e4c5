import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit.delete_account` (sql/0014) against the real database. The tables are listed from the
/// catalog, not by hand: a table added later with a `user_id` column (or a foreign key to
/// auth.users) is covered at once — and fails the "a row in every table" precondition until
/// the seed below writes it a row, so nobody can add a table the deletion forgets unnoticed.
@Suite struct AccountDeletionTests {
    /// A table the user can own rows in, and the column that names the owner.
    struct OwnedTable: Hashable, CustomStringConvertible {
        let table: String
        let column: String
        var description: String { table }
    }

    /// Every table of public, habit and auth with a `user_id` column or a foreign key to
    /// auth.users (Supabase's identity table; absent on plain PostgreSQL).
    static func ownedTables(_ admin: Connection) throws -> [OwnedTable] {
        try admin.query("""
            SELECT n.nspname || '.' || c.relname, a.attname::text
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            WHERE c.relkind IN ('r', 'p') AND n.nspname IN ('public', 'habit', 'auth')
              -- account.import's staging tables (sql/0028) hold rows only inside an importing
              -- transaction: nothing of a user is ever there to delete (docs/schema.md).
              AND NOT (n.nspname = 'habit' AND c.relname IN ('import_habits', 'import_periods', 'import_days', 'import_lists', 'import_tasks',
                                                             'import_checkins', 'import_notes', 'import_reminders', 'import_areas'))
              AND (a.attname = 'user_id'
                   OR EXISTS (SELECT 1 FROM pg_constraint f
                              WHERE f.contype = 'f' AND f.conrelid = c.oid AND f.confrelid = to_regclass('auth.users')
                                AND a.attnum = ANY (f.conkey)))
            ORDER BY 1, 2
            """).map { OwnedTable(table: try $0.decode(String.self, at: 0), column: try $0.decode(String.self, at: 1)) }
    }

    /// Catalog-made SQL (names from pg_class, never input) with the user as $1.
    static func bound(_ sql: String, _ user: UUID) -> Query {
        var bindings = Query.Bindings()
        bindings.append(user)
        return Query(unsafeSQL: sql, bindings: bindings)
    }

    /// Rows of `user` in each table (table and column names come from the catalog, never input).
    static func counts(_ admin: Connection, _ tables: [OwnedTable], user: UUID) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for owned in tables {
            counts[owned.table, default: 0] += try admin.queryOne(Self.bound("SELECT count(*) FROM \(owned.table) WHERE \(owned.column) = $1", user))
                .decode(Int.self, at: 0)
        }
        return counts
    }

    /// A checksum of each table's rows that are not `user`'s: md5 of every such row's text, in order.
    static func othersChecksums(_ admin: Connection, _ tables: [OwnedTable], user: UUID) throws -> [String: String] {
        var sums: [String: String] = [:]
        for owned in tables {
            sums[owned.table] = try admin.queryOne(Self.bound("""
                SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, E'\\n' ORDER BY t::text)), '')
                FROM \(owned.table) t WHERE \(owned.column) IS DISTINCT FROM $1
                """, user)).decode(String.self, at: 0)
        }
        return sums
    }

    /// The tables docs/schema.md's "What account deletion keeps" lists (its table's first column).
    static func documentedKeptTables() throws -> Set<String> {
        let path = TestDatabase.repositoryRoot.appendingPathComponent("docs/schema.md").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        var kept: Set<String> = [], inSection = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#") { inSection = line.hasSuffix("What account deletion keeps") ; continue }
            guard inSection, line.hasPrefix("| `") else { continue }
            let name = line.dropFirst(3).prefix { $0 != "`" }
            if name.contains(".") { kept.insert(String(name)) }
        }
        return kept
    }

    /// A user with rows in every table, written as psql would (a superuser: the triggers
    /// number, tombstone, count and keep the streak runs for every writer): a profile in a
    /// non-UTC zone, habits with completions, skips and a second period, a deleted habit (a
    /// tombstone), an area holding a habit, lists and tasks, a stored weekly count, a sync.push replay record, and
    /// (an incremental weekly-counts convention being tracked) dirty marks.
    static func seed(_ admin: Connection, user: UUID) throws {
        let run = UUID(), read = UUID(), gone = UUID(), list = UUID(), area = UUID()
        // As after a first `weekly-counts --store --incremental`: from here on every write marks
        // habit.weekly_counts_dirty (sql/0015).
        try admin.execute("INSERT INTO habit.weekly_counts_state (week_starts_on) VALUES ('monday') ON CONFLICT DO NOTHING")
        try admin.execute("INSERT INTO profiles (user_id, timezone, week_start) VALUES (\(user), 'Europe/Berlin', 'sunday')")
        try admin.execute("""
            INSERT INTO habit_templates (id, user_id, name, activated_at) VALUES
                (\(run), \(user), 'Run', now() - interval '40 days'), (\(read), \(user), 'Read, "slowly"', now() - interval '40 days'),
                (\(gone), \(user), 'Gone', now() - interval '40 days')
            """)
        try admin.execute(#"UPDATE habit_templates SET schedule = '{"type":"times_per_week","times":2}' WHERE id = \#(read)"#)
        try admin.execute("""
            INSERT INTO habit_completions (user_id, template_id, completed_date)
            SELECT \(user), \(run), d::date FROM generate_series(current_date - 30, current_date - 2, interval '1 day') d
            """)
        try admin.execute("INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES (\(user), \(read), current_date - 3)")
        try admin.execute("INSERT INTO habit_skips (user_id, template_id, skipped_date) VALUES (\(user), \(read), current_date - 5)")
        // A check-in (its day's completion follows it) and a note (sql/0029).
        try admin.execute("INSERT INTO habit_checkins (user_id, template_id, checkin_date, value) VALUES (\(user), \(run), current_date - 1, 1)")
        try admin.execute("INSERT INTO habit_day_notes (user_id, template_id, note_date, note) VALUES (\(user), \(run), current_date - 1, 'felt good')")
        // A reminder and a claim of one of its firings (sql/0036).
        try admin.execute("""
            WITH r AS (INSERT INTO habit_reminders (user_id, template_id, local_time) VALUES (\(user), \(run), '07:30') RETURNING id)
            INSERT INTO habit.reminder_firings (reminder_id, local_date, user_id, fire_at, lease_until)
            SELECT r.id, current_date, \(user), now(), now() + interval '1 minute' FROM r
            """)
        // An area with a habit in it (sql/0037).
        try admin.execute("INSERT INTO habit_areas (id, user_id, name, sort_order) VALUES (\(area), \(user), 'Health', 1024)")
        try admin.execute("UPDATE habit_templates SET area_id = \(area) WHERE id = \(run)")
        try admin.execute("DELETE FROM habit_templates WHERE id = \(gone)")
        try admin.execute("INSERT INTO task_lists (id, user_id, name) VALUES (\(list), \(user), 'Home')")
        try admin.execute("INSERT INTO tasks (user_id, title, list_id, position) VALUES (\(user), 'Buy milk', \(list), 1), (\(user), 'Call', NULL, 1)")
        try admin.execute("""
            INSERT INTO weekly_completion_counts (user_id, week_start, completions, days_with_completion, active_habit_days, week_starts_on)
            VALUES (\(user), '2026-01-05', 3, 2, 14, 'monday')
            """)
        try admin.execute(#"INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome) VALUES (\#(user), 'phone', 'm1', '{"result":{"name":"Run"}}')"#)
        // Loop's score checkpoints, as the nightly batch writes them (sql/0038).
        try admin.execute("SELECT habit.score_checkpoints_advance(\(user), 1, 7)")
    }

    @Test("deletes the user's rows in every catalog table except what docs/schema.md keeps; others' rows untouched; a repeat answers zeros")
    func deletesEverythingButTheDocumentedKeep() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID(), other = UUID()
            try Self.seed(admin, user: user)
            try Self.seed(admin, user: other)
            let tables = try Self.ownedTables(admin)
            let before = try Self.counts(admin, tables, user: user)
            let empty = before.filter { $0.value == 0 }.map(\.key).sorted()
            #expect(empty.isEmpty, "the seed writes no row in \(empty): give the new table a row in seed(_:user:)")
            let othersBefore = try Self.othersChecksums(admin, tables, user: user)
            let clockBefore = try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)").decode(Int64.self, at: 0)

            // As the worker runs it: habit_worker's login, role authenticated, the user's claims.
            let worker = try database.connect(user: "habit_worker")
            let deletion = try AccountRepository(connection: worker).delete(user: user)

            let after = try Self.counts(admin, tables, user: user)
            let left = Set(after.filter { $0.value > 0 }.map(\.key))
            let kept = try Self.documentedKeptTables()
            #expect(left == kept, "rows of the deleted user left in \(left.sorted()); docs/schema.md keeps \(kept.sorted())")
            #expect(kept == ["habit.sync_clocks", "habit.sync_tombstones", "habit.weekly_counts_dirty"])
            // The answer: every table the function deletes from, with what was there before.
            let answered = Dictionary(uniqueKeysWithValues: deletion.tables.map { ($0.name, Int($0.deleted)) })
            #expect(Set(answered.keys) == Set(before.keys).subtracting(kept), "\(answered.keys.sorted())")
            for (table, count) in answered where table != "habit.user_row_counts" {
                #expect(count == before[table], "\(table): answered \(count), had \(before[table] ?? -1)")
            }
            #expect(answered["habit.user_row_counts"] == before["habit.user_row_counts"])
            #expect(deletion.total == Int64(answered.values.reduce(0, +)))
            #expect(try Self.othersChecksums(admin, tables, user: user) == othersBefore)

            // Kept: the clock, moved on by the deletion; tombstones for every deleted synced key,
            // all of one change number, and nothing but keys.
            let clockAfter = try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)").decode(Int64.self, at: 0)
            #expect(clockAfter == clockBefore + 1)
            let tombstones = try admin.query("""
                SELECT kind, count(*) FROM habit.sync_tombstones WHERE user_id = \(user) AND change_seq = \(clockAfter) GROUP BY kind ORDER BY kind
                """).map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int.self, at: 1))" }
            #expect(tombstones == ["areas 1", "checkins 1", "completions \(before["public.habit_completions"]!)", "habits 2", "lists 1", "notes 1",
                                   "periods \(before["public.habit_periods"]!)", "profile 1", "reminders 1", "skips 1", "tasks 2"])
            let tombstoneColumns = try admin.query("""
                SELECT attname::text FROM pg_attribute WHERE attrelid = 'habit.sync_tombstones'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum
                """).map { try $0.decode(String.self, at: 0) }
            #expect(tombstoneColumns == ["user_id", "kind", "key", "change_seq", "deleted_at"])

            // Again: nothing to delete, zeros, and not even a new change number.
            let again = try AccountRepository(connection: worker).delete(user: user)
            #expect(again.tables.map(\.name) == deletion.tables.map(\.name))
            #expect(again.tables.allSatisfy { $0.deleted == 0 } && again.total == 0)
            #expect(try admin.queryOne("SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)").decode(Int64.self, at: 0) == clockAfter)
            #expect(try Self.othersChecksums(admin, tables, user: user) == othersBefore)

            // The tombstones expire with the retention like any other.
            let pruned = try admin.queryOne("SELECT tombstones FROM habit.prune_sync(interval '0')").decode(Int.self, at: 0)
            #expect(pruned >= tombstones.count)
            #expect(try admin.queryOne("SELECT count(*) FROM habit.sync_tombstones WHERE user_id = \(user)").decode(Int.self, at: 0) == 0)

            // A re-signup of the same id starts empty and continues the same clock.
            try admin.execute("INSERT INTO habit_templates (user_id, name) VALUES (\(user), 'Again')")
            #expect(try admin.queryOne("SELECT change_seq FROM habit_templates WHERE user_id = \(user)").decode(Int64.self, at: 0) == clockAfter + 1)
        }
    }

    @Test("only the user (authenticated, own claims) or habit_admin may delete: another user's claims, no claims, habit_batch are refused with 42501, nothing deleted")
    func refusals() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            let user = UUID(), intruder = UUID()
            try Self.seed(admin, user: user)
            let tables = try Self.ownedTables(admin)
            let everything = try Self.othersChecksums(admin, tables, user: UUID())

            // As psql would: the worker's login role, SET LOCAL ROLE authenticated, someone's claims.
            let worker = try database.connect(user: "habit_worker")
            for claims in [#"{"sub":"\#(intruder.lowercaseString)","role":"authenticated"}"#, "", "{}"] {
                let error = #expect(throws: PostgresError.self, "claims \(claims)") {
                    try worker.withTransaction(prelude: ["SET LOCAL ROLE authenticated",
                                                         "SELECT set_config('request.jwt.claims', \(claims), true)"]) { connection in
                        try connection.query("SELECT * FROM habit.delete_account(\(user))")
                    }
                }
                #expect(error?.sqlState == .insufficientPrivilege, "\(String(describing: error))")
            }
            // The batch role may not even call it.
            let batch = try database.connect(user: "habit_batch")
            let batchError = #expect(throws: PostgresError.self) { try batch.query("SELECT * FROM habit.delete_account(\(user))") }
            #expect(batchError?.sqlState == .insufficientPrivilege)
            // `habit account delete`'s path needs membership of habit_admin (SET LOCAL ROLE).
            let notAdmin = #expect(throws: PostgresError.self) { try AccountRepository.deleteAsAdmin(batch, user: user) }
            #expect(notAdmin?.sqlState == .insufficientPrivilege)
            // The intruder's own deletion deletes only the intruder's (nothing).
            #expect(try AccountRepository(connection: worker).delete(user: intruder).total == 0)
            #expect(try Self.othersChecksums(admin, tables, user: UUID()) == everything)

            // habit_admin may (the superuser here is a member, as the embedded server's is).
            let deletion = try AccountRepository.deleteAsAdmin(admin, user: user)
            #expect(deletion.total > 0)
            #expect(try Self.counts(admin, tables, user: user).filter { $0.value > 0 }.keys.sorted() == ["habit.sync_clocks", "habit.sync_tombstones", "habit.weekly_counts_dirty"])
        }
    }
}
