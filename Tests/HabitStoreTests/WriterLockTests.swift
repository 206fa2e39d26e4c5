import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31 #6: a user's numbering creates and imports serialise on something only that user
/// (and the roles acting for users) can lock — the user's clock row — never on an advisory key
/// another user can guess and hold. Each of the victim's statements runs with a lock_timeout:
/// had it waited for the attacker's lock it would fail with 55P03 (no timing is measured).
@Suite struct WriterLockTests {
    static let emptyDocument = #"{"format":"habit-account","version":1,"profile":null,"habits":[],"completions":[],"skips":[],"lists":[],"tasks":[]}"#

    static func claims(_ user: UUID) -> Query {
        "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#), true)"
    }

    /// The victim's three writers, each in a transaction of its own as the victim.
    static func victimWrites(_ victim: UUID, on connection: Connection) throws {
        let statements: [Query] = [
            "SELECT (habit.create_habit(\(victim), NULL, 'Run', NULL, NULL, NULL, NULL)).sort_order",
            "SELECT (habit.create_task(\(victim), NULL, 'Call', NULL, NULL, NULL, NULL)).position",
            "SELECT habit.import_account(\(victim), \(emptyDocument)::jsonb, 'merge')::text",
        ]
        for statement in statements {
            _ = try connection.withTransaction(prelude: ["SET LOCAL ROLE authenticated", claims(victim), "SET LOCAL lock_timeout = '3s'"]) {
                try $0.queryOne(statement)
            }
        }
    }

    @Test func anotherUsersLocksBlockNoneOfTheUsersWriters() throws {
        try TestDatabase.with { database throws in
            let attacker = UUID(), victim = UUID()
            let holder = try database.connect(), aborted = try database.connect(), connection = try database.connect()
            defer { holder.close(); aborted.close(); connection.close() }
            // Session-level advisory locks on the keys the writers used before 0023, taken as
            // authenticated with the attacker's claims; they outlive the transaction.
            try holder.withTransaction(prelude: ["SET LOCAL ROLE authenticated", Self.claims(attacker)]) { c in
                for key in ["habit.next_habit_sort_order ", "habit.next_task_position ", "habit.import_account "] {
                    _ = try c.queryOne("SELECT pg_advisory_lock(hashtextextended(\(key + victim.uuidString.lowercased()), 0))")
                }
            }
            // The lock the writers take now is out of the attacker's reach.
            for statement: Query in ["SELECT habit.lock_user_writes(\(victim))",
                                     "SELECT 1 FROM habit.sync_clocks WHERE user_id = \(victim) FOR UPDATE"] {
                let error = try #require(throws: PostgresError.self, "\(statement.sql)") {
                    try holder.withTransaction(prelude: ["SET LOCAL ROLE authenticated", Self.claims(attacker)]) { try $0.query(statement) }
                }
                #expect(error.sqlState == .insufficientPrivilege, "\(error)")
            }
            // A transaction left open after writing a row of the victim's (refused by row-level
            // security, after the BEFORE triggers ran) holds nothing of the victim's either.
            try aborted.execute("BEGIN")
            try aborted.execute("SET LOCAL ROLE authenticated")
            _ = try aborted.queryOne(Self.claims(attacker))
            for insert: Query in ["INSERT INTO public.habit_templates (user_id, name) VALUES (\(victim), 'x')",
                                  "INSERT INTO public.tasks (user_id, title, position) VALUES (\(victim), 'x', 1)"] {
                try aborted.execute("SAVEPOINT s")
                let error = try #require(throws: PostgresError.self) { try aborted.execute(insert) }
                #expect(error.sqlState == .insufficientPrivilege, "\(error)")
                try aborted.execute("ROLLBACK TO SAVEPOINT s")
            }
            try aborted.execute("SAVEPOINT s")
            _ = try? aborted.execute("INSERT INTO public.profiles (user_id) VALUES (\(victim))")

            try Self.victimWrites(victim, on: connection)
            try Self.victimWrites(victim, on: connection)
            let orders = try connection.query("SELECT sort_order FROM public.habit_templates WHERE user_id = \(victim) ORDER BY 1")
                .map { try $0.decode(Int.self, at: 0) }
            #expect(orders == [1, 2])
            try aborted.execute("ROLLBACK")
        }
    }
}
