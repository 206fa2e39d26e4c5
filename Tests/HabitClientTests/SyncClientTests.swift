import Foundation
import HabitClient
import JSONRPC
import TestSupport
import Testing

/// HabitClient's typed sync methods against a spawned worker: what a device written with the
/// library would do (push its queue, pull its pages, retry a push whose answer it lost).
@Suite("HabitClient: sync.push and sync.pull", .timeLimit(.minutes(5)))
struct SyncClientTests {
    @Test("syncPush applies each mutation once (a repeat answers the recorded outcomes, errors included); syncPull pages chain to the whole state")
    func pushOnceThenPullPages() async throws {
        try await HabitClientTests.withClient { client, _ in
            let user = UUID(), habit = UUID(), unknown = UUID()
            let mutations = [
                SyncMutation(mutationID: "m1", method: "habits.create",
                             params: JSONObject([("id", .string(habit.uuidString)), ("name", .string("Read"))])),
                SyncMutation(mutationID: "m2", method: "habits.create", params: JSONObject([("name", .string("Walk"))])),
                SyncMutation(mutationID: "m3", method: "habits.update",
                             params: JSONObject([("id", .string(unknown.uuidString)), ("name", .string("Nobody"))])),
                SyncMutation(mutationID: "m4", method: "tasks.create", params: JSONObject([("title", .string("Post"))])),
            ]
            let first = try await client.syncPush(userID: user, clientID: "phone", mutations: mutations)
            #expect(first.outcomes.map(\.mutationID) == ["m1", "m2", "m3", "m4"])
            guard case .error(_, let reason, _) = first.outcomes[2].outcome else {
                Issue.record("m3 (an unknown habit) should have failed: \(first.outcomes[2].outcome)")
                return
            }
            #expect(reason == "not_found")

            // The answer was "lost": the same push again applies nothing and answers the same.
            let again = try await client.syncPush(userID: user, clientID: "phone", mutations: mutations)
            #expect(again.outcomes.map(\.mutationID) == first.outcomes.map(\.mutationID))
            #expect(zip(again.outcomes, first.outcomes).allSatisfy { $0.outcome == $1.outcome })

            // Pages of one row chain by cursor to the whole state: two habits (one created
            // without an id, once), their two periods, one task.
            var habits: [UUID] = [], periods = 0, tasks = 0, pages = 0
            var cursor: String?
            repeat {
                let page = try await client.syncPull(userID: user, cursor: cursor, limit: 1)
                pages += 1
                habits += page.changes.habits.map(\.id)
                periods += page.changes.periods.count
                tasks += page.changes.tasks.count
                cursor = page.cursor
                if !page.hasMore { break }
            } while pages < 100
            #expect(habits.count == 2 && habits.contains(habit))
            #expect(periods == 2 && tasks == 1 && pages >= 5)

            // Caught up: nothing new.
            let caughtUp = try await client.syncPull(userID: user, cursor: cursor)
            #expect(caughtUp.changes.habits.isEmpty && caughtUp.changes.tasks.isEmpty && !caughtUp.hasMore)
        }
    }
}
