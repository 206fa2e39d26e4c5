import Foundation
import HabitClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// HabitClient's side of changes.subscribe: notifications on `changes`, and subscriptions
/// carried over to a restarted worker (they belong to a worker process).
@Suite("HabitClient: change notifications", .timeLimit(.minutes(5)))
struct ChangeNotificationClientTests {
    @Test("changesSubscribe: the user's changes arrive on client.changes; a killed worker's replacement is subscribed again and notifies")
    func changesStreamAndResubscribe() async throws {
        try await HabitClientTests.withClient { client, _ in
            let user = UUID()
            var changes = client.changes.makeAsyncIterator()
            #expect(try await client.changesSubscribe(userID: user).subscribed)
            // Every subscribed user is notified once the worker listens.
            let listening = try #require(await changes.next())
            #expect(listening.userID == user && listening.pid == client.workerPIDs[0])
            _ = try await client.habitsCreate(userID: user, name: "Heard")
            let heard = try #require(await changes.next())
            #expect(heard.userID == user && heard.pid == listening.pid && heard.cursor != listening.cursor)

            kill(listening.pid, SIGKILL)
            let again = try #require(await changes.next())
            #expect(again.userID == user && again.pid != listening.pid)

            #expect(try await client.changesUnsubscribe(userID: user).subscribed == false)
            #expect(try await client.systemPing().ok)
        }
    }
}
