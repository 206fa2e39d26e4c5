import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit.delete_account` takes a user's locks in the order a completion write does: the user's
/// habits first, then the user's clock row (the order `habit.import_account` took in 41fa44a;
/// AccountImportLockOrderTests). A completion write locks its habit, then its change number
/// locks the clock. The deletion used to lock the clock first and each habit only when its DELETE
/// reached it: a deletion and a completion of the same user could each hold what the other waited
/// for, and PostgreSQL ended one of them with 40P01 (the worker's -32012). The interleavings are
/// forced with held locks, each step taken once the deletion is seen waiting for the transaction
/// it must wait for (pg_blocking_pids); no time is asserted.
@Suite struct AccountDeletionLockOrderTests {
    static let habit = UUID(uuidString: "aaaaaaaa-0000-4000-8000-0000000000d1")!
    static let newHabit = UUID(uuidString: "aaaaaaaa-0000-4000-8000-0000000000d2")!
    static let start = "2025-01-01T00:00:00Z"

    /// Starts `habit.delete_account(user)` on its own thread, as the user; `wait()` returns its
    /// counts ("table n", in the function's order) or its error.
    final class Deletion: @unchecked Sendable {
        let pid: Int32
        private let done = DispatchSemaphore(value: 0)
        private let outcome = LockedBox<Result<[String], Error>?>(nil)

        init(of user: UUID, on connection: Connection) {
            pid = connection.backendPID
            let box = LockedBox(connection)
            Thread.detachNewThread { [done, outcome] in
                let result = Result {
                    try box.withValue { connection in
                        try connection.withTransaction(prelude: AccountImportLockOrderTests.asUser(user)) {
                            try $0.query("SELECT table_name || ' ' || deleted FROM habit.delete_account(\(user))").map { try $0.decode(String.self, at: 0) }
                        }
                    }
                }
                outcome.withValue { $0 = result }
                done.signal()
            }
        }

        func wait() -> Result<[String], Error> {
            done.wait()
            return outcome.withValue { $0 }!
        }
    }

    /// The deletion's counts of `tables`, or the error it ended with, recorded as an issue.
    static func counts(_ result: Result<[String], Error>, of tables: [String]) -> [String] {
        switch result {
        case .success(let rows):
            return rows.filter { row in tables.contains { row.hasPrefix($0 + " ") } }
        case .failure(let error):
            Issue.record("deletion: \(error)")
            return []
        }
    }

    static func left(_ admin: Connection, _ user: UUID) throws -> String {
        try admin.queryOne("""
            SELECT (SELECT count(*) FROM public.habit_templates WHERE user_id = \(user)) || ' '
                   || (SELECT count(*) FROM public.habit_completions WHERE user_id = \(user))
            """).decode(String.self, at: 0)
    }

    @Test("a deletion and a completion of one of the user's habits, each started while the other holds a lock: both commit, the completion counted and deleted")
    func deletionAndCompletionOfOneHabit() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect(), completer = try database.connect(), deleter = try database.connect()
            defer { admin.close(); completer.close(); deleter.close() }
            let user = UUID(), habit = Self.habit
            try admin.execute("INSERT INTO public.habit_templates (id, user_id, name, activated_at) VALUES (\(habit), \(user), 'Run', \(Self.start)::timestamptz)")
            try admin.execute("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(user), \(habit), current_date - 3)")
            let completed = try admin.queryOne("SELECT (current_date - 2)::text").decode(String.self, at: 0)

            // The completion write's first step: its habit's lock, held.
            try completer.execute("BEGIN")
            for statement in AccountImportLockOrderTests.asUser(user) { _ = try completer.query(statement) }
            _ = try completer.query("SELECT 1 FROM public.habit_templates WHERE id = \(habit) AND user_id = \(user) FOR NO KEY UPDATE")
            // The deletion waits for that habit (before: holding the user's clock).
            let running = Deletion(of: user, on: deleter)
            do {
                try AccountImportLockOrderTests.waitUntil(running.pid, waitsFor: completer.backendPID, observer: admin)
            } catch {
                _ = try? completer.execute("ROLLBACK")
                _ = running.wait()
                throw error
            }
            // The completion's change number needs the clock: free, so the completion commits
            // and the deletion goes on (before: the two waited for each other, 40P01).
            let completion = AccountImportLockOrderTests.finish(completer, with: "SELECT * FROM habit.set_day_state(\(user), \(habit), \(completed)::date, 'done')")
            let deletion = running.wait()
            #expect(completion == nil, "completion: \(String(describing: completion))")
            // Counted under the locks: the completion that committed first is among the rows removed.
            #expect(Self.counts(deletion, of: ["public.habit_templates", "public.habit_completions"])
                    == ["public.habit_templates 1", "public.habit_completions 2"])
            #expect(try Self.left(admin, user) == "0 0")
        }
    }

    /// A habit can appear after the deletion locked the user's habits and before it has the
    /// clock (here one written with the triggers off, as a bulk load is, while the clock is held;
    /// made normally, a habit commits when its maker lets the clock go, just before the deletion
    /// takes it). A completion of that habit that locks it before the deletion does: the deletion
    /// lets the clock go again and waits for it, instead of waiting while holding the clock.
    @Test("a habit that appears while the deletion waits for the clock, its completion started first: both commit, everything deleted")
    func habitAppearingBeforeTheClock() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect(), clockHolder = try database.connect()
            let completer = try database.connect(), deleter = try database.connect()
            defer { admin.close(); clockHolder.close(); completer.close(); deleter.close() }
            let user = UUID(), habit = Self.habit, newHabit = Self.newHabit
            try admin.execute("INSERT INTO public.habit_templates (id, user_id, name, activated_at) VALUES (\(habit), \(user), 'Run', \(Self.start)::timestamptz)")
            let completed = try admin.queryOne("SELECT (current_date - 2)::text").decode(String.self, at: 0)

            try clockHolder.execute("BEGIN")
            _ = try clockHolder.query("SELECT 1 FROM habit.sync_clocks WHERE user_id = \(user) FOR UPDATE")
            let running = Deletion(of: user, on: deleter)
            let completion = try AccountImportLockOrderTests.habitAppearsWhileWaitingForTheClock(
                operation: running.pid, abandon: { _ = running.wait() }, user: user, newHabit: newHabit, completed: completed,
                admin: admin, clockHolder: clockHolder, completer: completer)
            let deletion = running.wait()
            #expect(completion == nil, "completion: \(String(describing: completion))")
            #expect(Self.counts(deletion, of: ["public.habit_templates", "public.habit_completions"])
                    == ["public.habit_templates 2", "public.habit_completions 1"])
            #expect(try Self.left(admin, user) == "0 0")
        }
    }
}
