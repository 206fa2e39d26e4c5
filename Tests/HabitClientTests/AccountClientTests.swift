import Foundation
import HabitClient
import JSONRPC
import TestSupport
import Testing

/// HabitClient's typed `accountDelete` against a spawned worker: what an app's "delete my
/// account" button does, and what the user's other device then pulls.
@Suite("HabitClient: account.delete", .timeLimit(.minutes(5)))
struct AccountClientTests {
    @Test("accountDelete answers the counts per table, a repeat zeros; another device's syncPull from its cursor gets every key as deleted")
    func deleteThenPull() async throws {
        try await HabitClientTests.withClient { client, _ in
            let user = UUID()
            let habit = try await client.habitsCreate(userID: user, name: "Read")
            let task = try await client.tasksCreate(userID: user, title: "Post")
            let tablet = try await client.syncPull(userID: user)
            #expect(!tablet.hasMore && tablet.changes.habits.map(\.id) == [habit.id])

            let deletion = try await client.accountDelete(userID: user)
            let counts = Dictionary(uniqueKeysWithValues: deletion.tables.map { ($0.table, $0.deleted) })
            #expect(counts["public.habit_templates"] == 1 && counts["public.tasks"] == 1 && counts["public.habit_periods"] == 1)
            #expect(deletion.total == deletion.tables.reduce(0) { $0 + $1.deleted })
            let again = try await client.accountDelete(userID: user)
            #expect(again.total == 0 && again.tables.map(\.table) == deletion.tables.map(\.table))

            let pulled = try await client.syncPull(userID: user, cursor: tablet.cursor)
            #expect(pulled.deleted.habits == [habit.id] && pulled.deleted.tasks == [task.id] && pulled.deleted.periods.count == 1)
            #expect(pulled.changes.habits.isEmpty && pulled.changes.tasks.isEmpty)
            #expect(try await client.habitsList(userID: user).habits.isEmpty)
        }
    }
}
