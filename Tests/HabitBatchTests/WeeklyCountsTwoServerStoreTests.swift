import Foundation
import HabitBatch
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `runStore(readingFrom:writingTo:)`, the path of `weekly-counts --store --store-url` (a hot
/// standby computes, the primary stores), here with two connections to one database: it must
/// store exactly what the one-server statement stores, across batch boundaries.
/// Tests/DeploymentTests/ReplicaTests runs it on a real standby.
@Suite struct WeeklyCountsTwoServerStoreTests {
    @Test func twoConnectionStoreEqualsTheOneServerStore() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            let gone = UUID(uuidString: "00000000-0000-0000-0000-0000000000ff")!
            try admin.execute("""
                INSERT INTO public.weekly_completion_counts (user_id, week_starts_on, week_start, completions, days_with_completion, active_habit_days)
                VALUES (\(gone), 'monday', '2020-12-28', 3, 3, 7), (\(gone), 'monday', '2021-01-04', 1, 1, 7),
                       (\(gone), 'monday', '2021-01-11', 1, 1, 7), (\(gone), 'sunday', '2021-01-03', 1, 1, 7)
                """)
            let source = try database.connect(user: "habit_batch"), target = try database.connect(user: "habit_batch")
            let job = WeeklyCountsJob(from: day("2020-12-28"), to: day("2021-01-10"))
            // 6 rows in batches of 4: one full batch and a partial one.
            #expect(try job.runStore(readingFrom: source, writingTo: target, batchRows: 4) == .init(written: 6, deleted: 2))
            // The one-server statement finds nothing to change.
            #expect(try job.runStore(on: target) == .init(written: 0, deleted: 0))
            let printed = try output(of: job, on: source).split(separator: "\n").dropFirst().map(String.init)
            let table = try admin.query("""
                SELECT concat_ws(',', user_id, week_start, completions, days_with_completion, active_habit_days,
                                 due_habit_days, skipped_habit_days, coalesce(completion_rate::text, ''))
                FROM public.weekly_completion_counts
                WHERE week_starts_on = 'monday' AND week_start BETWEEN '2020-12-28' AND '2021-01-04' ORDER BY user_id, week_start
                """).map { try $0.decode(String.self, at: 0) }
            #expect(printed == table)
            // Rows outside the run (another week, the other convention) are left alone.
            #expect(try admin.queryOne("SELECT count(*) FROM public.weekly_completion_counts WHERE user_id = \(gone)").decode(Int.self, at: 0) == 2)
            // One user, one row per batch; a second run changes nothing.
            var onlyBob = job
            onlyBob.user = WeeklyFixture.bob
            #expect(try onlyBob.runStore(readingFrom: source, writingTo: target, batchRows: 1) == .init(written: 0, deleted: 0))
            // The temporary table is gone with the transaction: a second run can create it again.
            #expect(try job.runStore(readingFrom: source, writingTo: target, batchRows: 1) == .init(written: 0, deleted: 0))
        }
    }
}
