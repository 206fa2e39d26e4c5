import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The change clock of sql/0012 as every writer meets it: the triggers of the seven synced
/// tables, the lock that orders a user's writers, and row-level security on the sync tables.
@Suite struct SyncClockTests {
    static let habit = UUID(uuidString: "10000000-0000-0000-0000-000000000001")!

    /// The user's clock, a row's change_seq and a key's tombstone, read behind RLS (superuser).
    struct Probe {
        let admin: Connection
        let user: UUID
        func clock() throws -> Int64 {
            try admin.queryOptional("SELECT seq FROM habit.sync_clocks WHERE user_id = \(user)")?.decode(Int64.self, at: 0) ?? 0
        }
        func changeSeq(_ table: String, _ condition: String) throws -> Int64? {
            try admin.queryOptional(Query(unsafeSQL: "SELECT change_seq FROM public.\(table) WHERE user_id = '\(user.lowercaseString)' AND \(condition)"))?
                .decode(Int64.self, at: 0)
        }
        func tombstone(_ kind: String, _ key: String) throws -> Int64? {
            try admin.queryOptional("SELECT change_seq FROM habit.sync_tombstones WHERE user_id = \(user) AND kind = \(kind) AND key = \(key)")?
                .decode(Int64.self, at: 0)
        }
    }

    /// One synced table written through SQL: insert, a real update, a no-op update, delete,
    /// insert again. `condition` finds the row, `key` is its sync key.
    struct Case: CustomStringConvertible {
        let table, kind, key, condition, insert, update, noOpUpdate, delete: String
        var description: String { table }
    }

    static let user = UUID(uuidString: "00000000-0000-0000-0000-00000000000a")!
    static let cases: [Case] = {
        let u = user.lowercaseString, h = habit.uuidString.lowercased()
        let list = "20000000-0000-0000-0000-000000000002", task = "30000000-0000-0000-0000-000000000003"
        return [
            Case(table: "profiles", kind: "profile", key: "", condition: "true",
                 insert: "INSERT INTO profiles (user_id, timezone) VALUES ('\(u)', 'Europe/Paris')",
                 update: "UPDATE profiles SET timezone = 'Asia/Tokyo'", noOpUpdate: "UPDATE profiles SET timezone = timezone",
                 delete: "DELETE FROM profiles"),
            Case(table: "habit_templates", kind: "habits", key: h, condition: "id = '\(h)'",
                 insert: "INSERT INTO habit_templates (id, user_id, name, activated_at) VALUES ('\(h)', '\(u)', 'Run', '2025-01-01Z')",
                 update: "UPDATE habit_templates SET name = 'Walk'", noOpUpdate: "UPDATE habit_templates SET name = name",
                 delete: "DELETE FROM habit_templates"),
            Case(table: "habit_completions", kind: "completions", key: "\(h)/2025-02-03", condition: "completed_date = '2025-02-03'",
                 insert: "INSERT INTO habit_completions (user_id, template_id, completed_date) VALUES ('\(u)', '\(h)', '2025-02-03')",
                 update: "UPDATE habit_completions SET created_at = created_at - interval '1 minute'",
                 noOpUpdate: "UPDATE habit_completions SET created_at = created_at", delete: "DELETE FROM habit_completions"),
            Case(table: "habit_skips", kind: "skips", key: "\(h)/2025-02-04", condition: "skipped_date = '2025-02-04'",
                 insert: "INSERT INTO habit_skips (user_id, template_id, skipped_date) VALUES ('\(u)', '\(h)', '2025-02-04')",
                 update: "UPDATE habit_skips SET created_at = created_at - interval '1 minute'",
                 noOpUpdate: "UPDATE habit_skips SET created_at = created_at", delete: "DELETE FROM habit_skips"),
            Case(table: "task_lists", kind: "lists", key: list, condition: "id = '\(list)'",
                 insert: "INSERT INTO task_lists (id, user_id, name) VALUES ('\(list)', '\(u)', 'Home')",
                 update: "UPDATE task_lists SET name = 'Work'", noOpUpdate: "UPDATE task_lists SET name = name",
                 delete: "DELETE FROM task_lists"),
            Case(table: "tasks", kind: "tasks", key: task, condition: "id = '\(task)'",
                 insert: "INSERT INTO tasks (id, user_id, title, position) VALUES ('\(task)', '\(u)', 'Call', 1)",
                 update: "UPDATE tasks SET title = 'Write'", noOpUpdate: "UPDATE tasks SET title = title",
                 delete: "DELETE FROM tasks"),
        ]
    }()

    /// Each synced table, written as authenticated with the user's claims and by a superuser in
    /// psql: every change takes a new number from the user's clock, a delete leaves a
    /// tombstone, a re-insert removes it, and an update that changes nothing keeps its number.
    @Test(arguments: cases, [false, true])
    func everyWriteIsNumberedAndEveryDeleteLeavesATombstone(_ item: Case, asAdmin: Bool) throws {
        try HabitFixture.with { fixture throws in
            let probe = Probe(admin: fixture.admin, user: Self.user)
            let scope = UserScope(connection: fixture.workerConnection)
            func write(_ sql: String) throws {
                if asAdmin {
                    _ = try fixture.admin.execute(Query(unsafeSQL: sql))
                } else {
                    _ = try scope.transaction(as: Self.user) { try $0.execute(Query(unsafeSQL: sql)) }
                }
            }
            if item.kind == "completions" || item.kind == "skips" {
                try write(Self.cases[1].insert) // their habit
            }
            var last = try probe.clock()
            func expectNewNumber(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int64 {
                let now = try probe.clock()
                #expect(now == last + 1, "\(item) \(step): clock \(last) → \(now)", sourceLocation: sourceLocation)
                last = now
                return now
            }
            try write(item.insert)
            #expect(try probe.changeSeq(item.table, item.condition) == expectNewNumber("insert"))
            try write(item.update)
            #expect(try probe.changeSeq(item.table, item.condition) == expectNewNumber("update"))
            try write(item.noOpUpdate)
            #expect(try probe.clock() == last, "\(item): a no-op update took a number")
            #expect(try probe.changeSeq(item.table, item.condition) == last)
            try write(item.delete)
            #expect(try probe.changeSeq(item.table, item.condition) == nil)
            #expect(try probe.tombstone(item.kind, item.key) == expectNewNumber("delete"))
            try write(item.insert)
            #expect(try probe.changeSeq(item.table, item.condition) == expectNewNumber("re-insert"))
            #expect(try probe.tombstone(item.kind, item.key) == nil, "\(item): the key is live and tombstoned")
        }
    }

    /// Periods are written by habit_templates' triggers: their rows and tombstones follow the
    /// habit, and a cascaded delete leaves a tombstone for every row it removes, all with the
    /// number of the deleting transaction.
    @Test func periodsAndCascadedDeletesAreNumberedToo() throws {
        try HabitFixture.with { fixture throws in
            let probe = Probe(admin: fixture.admin, user: Self.user)
            for sql in [Self.cases[1].insert, Self.cases[2].insert, Self.cases[3].insert] {
                _ = try fixture.admin.execute(Query(unsafeSQL: sql))
            }
            let period = try fixture.admin.queryOne("SELECT id, change_seq FROM habit_periods WHERE template_id = \(Self.habit)")
            let periodID = try period.decode(UUID.self, at: 0)
            #expect(try period.decode(Int64.self, at: 1) == 1) // the habit's own transaction
            _ = try fixture.admin.execute("UPDATE habit_templates SET is_active = false WHERE id = \(Self.habit)")
            let deactivated = try probe.clock()
            #expect(try probe.changeSeq("habit_periods", "id = '\(periodID.lowercaseString)'") == deactivated)
            _ = try fixture.admin.execute("DELETE FROM habit_templates WHERE id = \(Self.habit)")
            let deleted = try probe.clock()
            #expect(deleted == deactivated + 1)
            let tombstones = try fixture.admin.query("SELECT kind, key, change_seq FROM habit.sync_tombstones ORDER BY kind")
                .map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String.self, at: 1)) \(try $0.decode(Int64.self, at: 2))" }
            let h = Self.habit.uuidString.lowercased()
            #expect(tombstones == ["completions \(h)/2025-02-03 \(deleted)", "habits \(h) \(deleted)",
                                   "periods \(periodID.lowercaseString) \(deleted)", "skips \(h)/2025-02-04 \(deleted)"])
        }
    }

    /// The ordering argument, tried: T1 takes number n for U and stays open; T2 writing U waits
    /// for T1's lock (seen in pg_locks, not guessed with sleeps); a pull in between sees
    /// neither; after T1 commits, T2 gets n + 1 and commits; a pull from the earlier cursor
    /// gets both. Meanwhile a writer of another user V never waits.
    @Test func writersOfOneUserTakeNumbersInCommitOrder() throws {
        try HabitFixture.with { fixture throws in
            let user = Self.user, other = UUID()
            let sync = SyncRepository(connection: try fixture.database.connect(user: "habit_worker"))
            let first = UUID(), second = UUID()
            let before = try sync.currentCursor(user: user)
            let t2Connection = try fixture.database.connect(user: "habit_worker")
            // T2's scope moves to T2's thread and is used only there.
            let t2Scope = LockedBox(UserScope(connection: t2Connection))
            let t2Done = DispatchSemaphore(value: 0)
            let t2Outcome = LockedBox<Result<Int64, Error>?>(nil)
            try UserScope(connection: fixture.workerConnection).transaction(as: user) { t1 in
                let n = try t1.queryOne("INSERT INTO habit_templates (id, user_id, name) VALUES (\(first), \(user), 'First') RETURNING change_seq")
                    .decode(Int64.self, at: 0)
                #expect(n == 1)
                Thread.detachNewThread {
                    let outcome = Result {
                        try t2Scope.withValue { try $0.transaction(as: user) { t2 in
                            try t2.queryOne("INSERT INTO habit_templates (id, user_id, name) VALUES (\(second), \(user), 'Second') RETURNING change_seq")
                                .decode(Int64.self, at: 0)
                        } }
                    }
                    t2Outcome.withValue { $0 = outcome }
                    t2Done.signal()
                }
                try Self.waitUntilWaitingForALock(pid: t2Connection.backendPID, observer: fixture.admin)
                // The pull in between: nothing of U is committed.
                let between = try sync.pull(user: user, cursor: before, limit: 100, retention: .seconds(3600))
                #expect(between.count == 0 && !between.hasMore)
                // Another user's writer does not wait for U's lock (lock_timeout: a hang guard).
                let otherNumber = try UserScope(connection: try fixture.database.connect(user: "habit_worker")).transaction(as: other) { c in
                    try c.execute("SET LOCAL lock_timeout = '10s'")
                    return try c.queryOne("INSERT INTO task_lists (user_id, name) VALUES (\(other), 'V') RETURNING change_seq").decode(Int64.self, at: 0)
                }
                #expect(otherNumber == 1)
            }
            t2Done.wait()
            let t2Number = try #require(t2Outcome.withValue { $0 }).get()
            #expect(t2Number == 2)
            let after = try sync.pull(user: user, cursor: before, limit: 100, retention: .seconds(3600))
            #expect(Set(after.habits.map(\.id)) == [first, second])
            #expect(!after.hasMore)
            #expect(after.cursor.seq == 2 && after.cursor.rank == 11) // caught up: after the eleven kinds
        }
    }

    /// Polls pg_locks until the backend `pid` waits for a lock it was not granted (hang guard 20 s).
    static func waitUntilWaitingForALock(pid: Int32, observer: Connection) throws {
        let deadline = Date(timeIntervalSinceNow: 20)
        while try !observer.queryOne("""
            SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = \(pid) AND NOT granted)
               AND EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = \(pid) AND wait_event_type = 'Lock')
            """).decode(Bool.self, at: 0) {
            guard Date() < deadline else { throw PostgresError(kind: .misuse, message: "backend \(pid) never waited for a lock") }
            usleep(2_000)
        }
    }

    /// Row-level security on the sync tables: a user sees only its own clock, tombstones and
    /// replay records, and writes none of them directly (clocks and tombstones only through the
    /// triggers' functions, replay records only through habit.sync_mutation_claim/_record).
    @Test func syncTablesAreWalledPerUser() throws {
        try HabitFixture.with { fixture throws in
            let alice = UUID(), bob = UUID()
            let scope = UserScope(connection: fixture.workerConnection)
            for user in [alice, bob] {
                try scope.transaction(as: user) { c in
                    _ = try c.execute("INSERT INTO task_lists (user_id, name) VALUES (\(user), 'L')")
                    _ = try c.execute("DELETE FROM task_lists WHERE user_id = \(user)")
                    // Replay records only through their functions (sql/0023, issue 31 item 5).
                    #expect(try c.queryOne("SELECT habit.sync_mutation_claim(\(user), 'phone', 'm1')").decode(Bool.self, at: 0))
                    _ = try c.queryOne("SELECT habit.sync_mutation_record(\(user), 'phone', 'm1', '{\"result\": null}')")
                }
            }
            try scope.transaction(as: bob) { c in
                for table in ["habit.sync_clocks", "habit.sync_tombstones", "habit.sync_mutations"] {
                    let users = try c.query(Query(unsafeSQL: "SELECT DISTINCT user_id FROM \(table)")).map { try $0.decode(UUID.self, at: 0) }
                    #expect(users == [bob], "\(table)")
                }
                // The user's notification token (sql/0025): only their own clock row shows one.
                let token = try c.queryOne("SELECT habit.change_token(\(bob))").decode(UUID.self, at: 0)
                #expect(try c.queryOne("SELECT notify_token FROM habit.sync_clocks").decode(UUID.self, at: 0) == token)
                // A claim that exists is not claimed again.
                #expect(try c.queryOne("SELECT habit.sync_mutation_claim(\(bob), 'phone', 'm1')").decode(Bool.self, at: 0) == false)
            }
            let writes: [Query] = [
                "UPDATE habit.sync_clocks SET seq = 0",
                "INSERT INTO habit.sync_clocks (user_id, seq) VALUES (\(bob), 99)",
                "DELETE FROM habit.sync_tombstones",
                "INSERT INTO habit.sync_tombstones (user_id, kind, key, change_seq) VALUES (\(bob), 'tasks', 'x', 1)",
                "INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id) VALUES (\(alice), 'phone', 'm2')",
                // Not even its own (issue 31 item 5: 300 rows of 180 KB went in this way).
                "INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome) VALUES (\(bob), 'phone', 'm2', '{}')",
                "UPDATE habit.sync_mutations SET outcome = '{\"result\": 1}' WHERE user_id = \(bob)",
                "UPDATE habit.sync_mutations SET outcome = NULL WHERE user_id = \(alice)",
                "DELETE FROM habit.sync_mutations",
                // The functions act only for the caller.
                "SELECT habit.sync_mutation_claim(\(alice), 'phone', 'm3')",
                "SELECT habit.sync_mutation_record(\(alice), 'phone', 'm1', '{}')",
                "SELECT habit.next_change_seq(\(bob))",
                "SELECT habit.change_token(\(alice))",
                "SELECT habit.sync_reset(\(bob))",
                "SELECT * FROM habit.prune_sync('0')",
            ]
            for write in writes {
                let error = try #require(throws: PostgresError.self, "\(write.sql)") {
                    try scope.transaction(as: bob) { try $0.execute(write) }
                }
                #expect(error.sqlState == .insufficientPrivilege, "\(write.sql): \(error)")
            }
            // An outcome is recorded only for a claim of the same transaction, once.
            let error = try #require(throws: PostgresError.self) {
                try scope.transaction(as: bob) { try $0.queryOne("SELECT habit.sync_mutation_record(\(bob), 'phone', 'm1', '{}')") }
            }
            #expect(error.sqlState == "55000", "\(error)")
        }
    }
}
