import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31 #4: a user keeps at most `habit.tombstone_cap()` (10,000) tombstones, whatever they
/// delete; the oldest go first, and a cursor that needed one of them expires (the device pulls
/// everything again) rather than missing a deletion.
@Suite struct TombstoneCapTests {
    @Test func threeRoundsOfTwentyThousandDeletionsKeepAtMostTheCap() throws {
        try HabitFixture.with { fixture throws in
            let sync = SyncRepository(connection: fixture.workerConnection)
            let user = UUID()
            #expect(try fixture.admin.queryOne("SELECT habit.tombstone_cap()").decode(Int.self, at: 0) == 10_000)
            var cursor = try sync.pull(user: user, cursor: nil, limit: 100, retention: .seconds(3_600)).cursor
            for round in 1...3 {
                // As a client deleting through Supabase would: one statement each, triggers on.
                _ = try fixture.admin.execute("""
                    INSERT INTO tasks (user_id, title, position)
                    SELECT \(user), 'Task ' || n, n FROM generate_series(1, 20000) n
                    """)
                // A device caught up with the tasks…
                while true {
                    let page = try sync.pull(user: user, cursor: cursor, limit: 5_000, retention: .seconds(3_600))
                    cursor = page.cursor
                    if !page.hasMore { break }
                }
                _ = try fixture.admin.execute("DELETE FROM tasks WHERE user_id = \(user)")
                let kept = try fixture.admin.queryOne("SELECT count(*) FROM habit.sync_tombstones WHERE user_id = \(user)").decode(Int.self, at: 0)
                #expect(kept <= 10_000 && kept >= 9_000, "round \(round): \(kept) tombstones")
                let counted = try fixture.admin.queryOne("SELECT tombstones FROM habit.sync_clocks WHERE user_id = \(user)").decode(Int.self, at: 0)
                #expect(counted >= kept, "round \(round): the clock counts \(counted), there are \(kept)")
                // …could no longer learn of every deletion: its cursor expired, so it pulls everything again.
                #expect(throws: StoreError.cursorExpired) { try sync.pull(user: user, cursor: cursor, limit: 100, retention: .seconds(3_600)) }
                let fresh = try sync.pull(user: user, cursor: nil, limit: 100, retention: .seconds(3_600))
                #expect(fresh.count == 0 && !fresh.hasMore)
                cursor = fresh.cursor
            }
        }
    }

    /// Under the cap nothing is trimmed and nothing expires: a device learns of every deletion.
    @Test func underTheCapEveryDeletionReachesAnOldCursor() throws {
        try HabitFixture.with { fixture throws in
            let sync = SyncRepository(connection: fixture.workerConnection)
            let user = UUID()
            _ = try fixture.admin.execute("""
                INSERT INTO tasks (user_id, title, position) SELECT \(user), 'Task ' || n, n FROM generate_series(1, 9000) n
                """)
            var cursor = try sync.pull(user: user, cursor: nil, limit: 10_000, retention: .seconds(3_600)).cursor
            #expect(try sync.pull(user: user, cursor: cursor, limit: 10_000, retention: .seconds(3_600)).count == 0)
            _ = try fixture.admin.execute("DELETE FROM tasks WHERE user_id = \(user)")
            var deleted = 0
            while true {
                let page = try sync.pull(user: user, cursor: cursor, limit: 5_000, retention: .seconds(3_600))
                deleted += page.deleted.tasks.count
                cursor = page.cursor
                if !page.hasMore { break }
            }
            #expect(deleted == 9_000)
            // A key written and deleted again keeps one tombstone (the clock's count may run
            // ahead: it is exact again after a trim), and the device hears of the deletion.
            let task = UUID()
            for _ in 0..<3 {
                _ = try fixture.admin.execute("INSERT INTO tasks (id, user_id, title, position) VALUES (\(task), \(user), 'Again', 1)")
                _ = try fixture.admin.execute("DELETE FROM tasks WHERE id = \(task)")
            }
            #expect(try fixture.admin.queryOne("SELECT count(*) FROM habit.sync_tombstones WHERE user_id = \(user)").decode(Int.self, at: 0) == 9_001)
            #expect(try sync.pull(user: user, cursor: cursor, limit: 100, retention: .seconds(3_600)).deleted.tasks == [task])
        }
    }
}
