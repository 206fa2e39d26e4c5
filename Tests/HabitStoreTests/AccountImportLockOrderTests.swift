import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit.import_account` takes a user's locks in the order a completion write does: the user's
/// habits first, then the user's clock row. A completion write (habit.set_day_state,
/// habit.toggle_day, an INSERT's trigger through habit.check_day) locks its habit, then its
/// change number locks the clock. The import used to lock the clock first
/// (habit.lock_user_writes) and each habit when it wrote it: an import and a completion of the
/// same user could each hold what the other waited for, and PostgreSQL ended one of them with
/// 40P01 (the worker's -32012). The interleavings are forced with held locks, each step taken
/// once the import is seen waiting for the transaction it must wait for (pg_blocking_pids).
@Suite struct AccountImportLockOrderTests {
    static let habit = UUID(uuidString: "aaaaaaaa-0000-4000-8000-0000000000b1")!
    static let newHabit = UUID(uuidString: "aaaaaaaa-0000-4000-8000-0000000000b2")!
    static let start = "2025-01-01T00:00:00Z"

    static func asUser(_ user: UUID) -> [Query] {
        ["SET LOCAL ROLE authenticated",
         "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#), true)"]
    }

    /// A merge document: each habit with one open daily period from `start`, and completions.
    static func document(habits: [(UUID, String)], completions: [(UUID, String)]) -> String {
        let period = #"{"started_at":"\#(start)","ended_at":null,"schedule":{"type":"daily"}}"#
        let habits = habits.map { #"{"id":"\#($0.0.uuidString.lowercased())","name":"\#($0.1)","periods":[\#(period)]}"# }
        let completions = completions.map { #"{"template_id":"\#($0.0.uuidString.lowercased())","date":"\#($0.1)"}"# }
        return #"{"format":"habit-account","version":1,"profile":null,"habits":[\#(habits.joined(separator: ","))],"completions":[\#(completions.joined(separator: ","))],"skips":[],"lists":[],"tasks":[]}"#
    }

    /// Starts the import of `document` for `user` on its own thread, as the user; `wait()`
    /// returns its outcome.
    final class Import: @unchecked Sendable {
        let pid: Int32
        private let done = DispatchSemaphore(value: 0)
        private let outcome = LockedBox<Result<String, Error>?>(nil)

        init(_ document: String, user: UUID, on connection: Connection) {
            pid = connection.backendPID
            let box = LockedBox(connection)
            Thread.detachNewThread { [done, outcome] in
                let result = Result {
                    try box.withValue { connection in
                        try connection.withTransaction(prelude: AccountImportLockOrderTests.asUser(user)) {
                            try $0.queryOne("SELECT habit.import_account(\(user), \(document)::jsonb, 'merge')::text").decode(String.self, at: 0)
                        }
                    }
                }
                outcome.withValue { $0 = result }
                done.signal()
            }
        }

        func wait() -> Result<String, Error> {
            done.wait()
            return outcome.withValue { $0 }!
        }
    }

    /// Polls until backend `pid` waits for a lock `holder` holds (hang guard 20 s, no timing asserted).
    static func waitUntil(_ pid: Int32, waitsFor holder: Int32, observer: Connection) throws {
        let deadline = Date(timeIntervalSinceNow: 20)
        while try !observer.queryOne("SELECT \(holder) = ANY (pg_blocking_pids(\(pid)))").decode(Bool.self, at: 0) {
            guard Date() < deadline else { throw PostgresError(kind: .misuse, message: "backend \(pid) never waited for \(holder)") }
            usleep(2_000)
        }
    }

    /// Runs `statement` in `connection`'s open transaction and ends it: COMMIT, or ROLLBACK and
    /// the error.
    /// The second interleaving, for every account operation that locks the user's habits and
    /// then the clock (the import, the deletion): `clockHolder` holds the clock and the
    /// operation (backend `operation`) waits for it; meanwhile `newHabit` is committed (triggers
    /// off, as a bulk load writes) and `completer`, as the user, locks it; then the clock is let
    /// go and the operation meets the completion's habit. Returns the completion's error (nil:
    /// it committed). `abandon` waits for the operation when a step fails.
    static func habitAppearsWhileWaitingForTheClock(operation: Int32, abandon: () -> Void, user: UUID, newHabit: UUID, completed: String,
                                                   admin: Connection, clockHolder: Connection, completer: Connection) throws -> Error? {
        do {
            try waitUntil(operation, waitsFor: clockHolder.backendPID, observer: admin)
            try admin.executeScript(unsafeSQL: """
                SET session_replication_role = replica;
                INSERT INTO public.habit_templates (id, user_id, name, activated_at)
                    VALUES ('\(newHabit.uuidString.lowercased())', '\(user.uuidString.lowercased())', 'Read', '\(start)');
                INSERT INTO public.habit_periods (user_id, template_id, started_at)
                    VALUES ('\(user.uuidString.lowercased())', '\(newHabit.uuidString.lowercased())', '\(start)');
                RESET session_replication_role;
                """)
            try completer.execute("BEGIN")
            for statement in asUser(user) { _ = try completer.query(statement) }
            _ = try completer.query("SELECT 1 FROM public.habit_templates WHERE id = \(newHabit) AND user_id = \(user) FOR NO KEY UPDATE")
            _ = try clockHolder.execute("COMMIT")
            try waitUntil(operation, waitsFor: completer.backendPID, observer: admin)
        } catch {
            _ = try? clockHolder.execute("ROLLBACK")
            _ = try? completer.execute("ROLLBACK")
            abandon()
            throw error
        }
        return finish(completer, with: "SELECT * FROM habit.set_day_state(\(user), \(newHabit), \(completed)::date, 'done')")
    }

    static func finish(_ connection: Connection, with statement: Query) -> Error? {
        do {
            _ = try connection.query(statement)
            _ = try connection.execute("COMMIT")
            return nil
        } catch {
            _ = try? connection.execute("ROLLBACK")
            return error
        }
    }

    static func days(_ admin: Connection, _ user: UUID) throws -> [String] {
        try admin.query("SELECT template_id::text || ' ' || completed_date FROM public.habit_completions WHERE user_id = \(user) ORDER BY 1")
            .map { try $0.decode(String.self, at: 0) }
    }

    @Test("an import and a completion of the same habit, each started while the other holds a lock: both commit")
    func importAndCompletionOfOneHabit() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect(), completer = try database.connect(), importer = try database.connect()
            defer { admin.close(); completer.close(); importer.close() }
            let user = UUID(), habit = Self.habit
            try admin.execute("INSERT INTO public.habit_templates (id, user_id, name, activated_at) VALUES (\(habit), \(user), 'Run', \(Self.start)::timestamptz)")
            let days = try admin.queryOne("SELECT (current_date - 2)::text, (current_date - 3)::text")
            let completed = try days.decode(String.self, at: 0), imported = try days.decode(String.self, at: 1)

            // The completion write's first step: its habit's lock (what set_day_state and
            // check_day take before anything else), held.
            try completer.execute("BEGIN")
            for statement in Self.asUser(user) { _ = try completer.query(statement) }
            _ = try completer.query("SELECT 1 FROM public.habit_templates WHERE id = \(habit) AND user_id = \(user) FOR NO KEY UPDATE")
            // The import of a document renaming the habit and completing another day of it
            // waits for that habit (before: holding the user's clock).
            let running = Import(Self.document(habits: [(habit, "Run again")], completions: [(habit, imported)]), user: user, on: importer)
            do {
                try Self.waitUntil(running.pid, waitsFor: completer.backendPID, observer: admin)
            } catch {
                _ = try? completer.execute("ROLLBACK")
                _ = running.wait()
                throw error
            }
            // The completion's change number needs the clock: free, so the completion commits
            // and the import goes on (before: the two waited for each other, 40P01).
            let completion = Self.finish(completer, with: "SELECT * FROM habit.set_day_state(\(user), \(habit), \(completed)::date, 'done')")
            let importResult = running.wait()
            #expect(completion == nil, "completion: \(String(describing: completion))")
            if case .failure(let error) = importResult { Issue.record("import: \(error)") }

            let h = habit.uuidString.lowercased()
            #expect(try Self.days(admin, user) == ["\(h) \(imported)", "\(h) \(completed)"].sorted())
            #expect(try admin.queryOne("SELECT name FROM public.habit_templates WHERE id = \(habit)").decode(String.self, at: 0) == "Run again")
        }
    }

    /// A habit can appear after the import locked the user's habits and before it has the clock
    /// (here one written with the triggers off, as a bulk load is, while the clock is held; made
    /// normally, a habit commits when its maker lets the clock go, just before the import takes
    /// it). A completion of that habit that locks it before the import does: the import lets the
    /// clock go again and waits for it, instead of waiting while holding the clock.
    @Test("a habit that appears while the import waits for the clock, its completion started first: both commit")
    func habitAppearingBeforeTheClock() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect(), clockHolder = try database.connect()
            let completer = try database.connect(), importer = try database.connect()
            defer { admin.close(); clockHolder.close(); completer.close(); importer.close() }
            let user = UUID(), habit = Self.habit, newHabit = Self.newHabit
            try admin.execute("INSERT INTO public.habit_templates (id, user_id, name, activated_at) VALUES (\(habit), \(user), 'Run', \(Self.start)::timestamptz)")
            let completed = try admin.queryOne("SELECT (current_date - 2)::text").decode(String.self, at: 0)

            try clockHolder.execute("BEGIN")
            _ = try clockHolder.query("SELECT 1 FROM habit.sync_clocks WHERE user_id = \(user) FOR UPDATE")
            let running = Import(Self.document(habits: [(habit, "Run"), (newHabit, "Read again")], completions: []), user: user, on: importer)
            let completion = try Self.habitAppearsWhileWaitingForTheClock(
                operation: running.pid, abandon: { _ = running.wait() }, user: user, newHabit: newHabit, completed: completed,
                admin: admin, clockHolder: clockHolder, completer: completer)
            let importResult = running.wait()
            #expect(completion == nil, "completion: \(String(describing: completion))")
            if case .failure(let error) = importResult { Issue.record("import: \(error)") }

            #expect(try Self.days(admin, user) == ["\(newHabit.uuidString.lowercased()) \(completed)"])
            #expect(try admin.queryOne("SELECT name FROM public.habit_templates WHERE id = \(newHabit)").decode(String.self, at: 0) == "Read again")
        }
    }
}
