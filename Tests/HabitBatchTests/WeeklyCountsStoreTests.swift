import Foundation
import HabitBatch
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit weekly-counts --store`: rows keyed by user, week convention and week; a run replaces
/// the rows of its weeks, convention and users (sql/0005).
@Suite struct WeeklyCountsStoreTests {
    static func stored(_ connection: Connection) throws -> [String] {
        try connection.query("""
            SELECT concat_ws(',', user_id, week_starts_on, week_start, completions)
            FROM public.weekly_completion_counts ORDER BY user_id, week_starts_on, week_start
            """).map { try $0.decode(String.self, at: 0) }
    }

    /// Monday and Sunday runs over the same range keep their own rows side by side.
    @Test func rowsAreKeyedByWeekConvention() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            let batch = try database.connect(user: "habit_batch")
            var job = WeeklyCountsJob(from: day("2021-01-03"), to: day("2021-01-04"))
            job.user = WeeklyFixture.bob
            #expect(try job.runStore(on: batch).written == 2) // Monday weeks of 28 Dec and 4 Jan
            job.weekStart = .sunday
            #expect(try job.runStore(on: batch) == .init(written: 1, deleted: 0)) // the Sunday week of 3 Jan
            #expect(try Self.stored(admin) == [
                "00000000-0000-0000-0000-00000000000b,monday,2020-12-28,1",
                "00000000-0000-0000-0000-00000000000b,monday,2021-01-04,1",
                "00000000-0000-0000-0000-00000000000b,sunday,2021-01-03,2",
            ])
            // Re-running either convention leaves the other alone.
            job.weekStart = .monday
            #expect(try job.runStore(on: batch) == .init(written: 0, deleted: 0))
            #expect(try Self.stored(admin).count == 3)
            // The week_start of a row is its convention's weekday, whoever writes.
            let error = try #require(throws: PostgresError.self) {
                try admin.execute("""
                    INSERT INTO public.weekly_completion_counts (user_id, week_starts_on, week_start, completions, days_with_completion, active_habit_days)
                    VALUES (\(WeeklyFixture.bob), 'sunday', '2021-01-04', 0, 0, 0)
                    """)
            }
            #expect(error.sqlState == .checkViolation)
        }
    }

    /// A run deletes the stored rows of its weeks, convention and users that it did not
    /// produce, and nothing else.
    @Test func storeReplacesTheRowsOfItsRangeAndUsers() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try WeeklyFixture.load(admin)
            let batch = try database.connect(user: "habit_batch")
            let job = WeeklyCountsJob(from: day("2020-12-28"), to: day("2021-01-10"))
            #expect(try job.runStore(on: batch).written == 6)
            // Rows the run will not produce: a user who is gone, inside and outside the range,
            // and in the other convention.
            let gone = UUID(uuidString: "00000000-0000-0000-0000-0000000000ff")!
            try admin.execute("""
                INSERT INTO public.weekly_completion_counts (user_id, week_starts_on, week_start, completions, days_with_completion, active_habit_days)
                VALUES (\(gone), 'monday', '2020-12-28', 3, 3, 7), (\(gone), 'monday', '2021-01-04', 1, 1, 7),
                       (\(gone), 'monday', '2021-01-11', 1, 1, 7), (\(gone), 'sunday', '2021-01-03', 1, 1, 7)
                """)
            // carol's profile is deleted: she is no longer a user.
            try admin.execute("DELETE FROM public.profiles WHERE user_id = \(WeeklyFixture.carol)")

            // A one-user run touches only that user's rows.
            var onlyBob = job
            onlyBob.user = WeeklyFixture.bob
            #expect(try onlyBob.runStore(on: batch) == .init(written: 0, deleted: 0))
            // A run for a user who is gone deletes that user's rows of the range.
            var onlyCarol = job
            onlyCarol.user = WeeklyFixture.carol
            #expect(try onlyCarol.runStore(on: batch) == .init(written: 0, deleted: 2))
            // A run for every user deletes every unproduced row of its range and convention.
            #expect(try job.runStore(on: batch) == .init(written: 0, deleted: 2))
            #expect(try Self.stored(admin) == [
                "00000000-0000-0000-0000-00000000000a,monday,2020-12-28,5",
                "00000000-0000-0000-0000-00000000000a,monday,2021-01-04,0",
                "00000000-0000-0000-0000-00000000000b,monday,2020-12-28,1",
                "00000000-0000-0000-0000-00000000000b,monday,2021-01-04,1",
                "00000000-0000-0000-0000-0000000000ff,monday,2021-01-11,1",
                "00000000-0000-0000-0000-0000000000ff,sunday,2021-01-03,1",
            ])
            // The stored rows of the range equal the printed ones.
            let printed = try output(of: job, on: batch).split(separator: "\n").dropFirst().map(String.init)
            let table = try admin.query("""
                SELECT concat_ws(',', user_id, week_start, completions, days_with_completion, active_habit_days,
                                 due_habit_days, skipped_habit_days, coalesce(completion_rate::text, ''))
                FROM public.weekly_completion_counts
                WHERE week_starts_on = 'monday' AND week_start BETWEEN '2020-12-28' AND '2021-01-04' ORDER BY user_id, week_start
                """).map { try $0.decode(String.self, at: 0) }
            #expect(printed == table)
        }
    }

    /// Rows stored before 0005 got the convention of their week_start's weekday (the files the
    /// baseline replaced: every database that reached version 16 went through them).
    @Test(.enabled(if: CitusCluster.current == nil, "migrating a fresh database on a coordinator resets the workers' roles"))
    func migrationDerivesTheConventionOfStoredRows() throws {
        try TestDatabase.with(migrated: false) { database throws in
            let connection = try database.connect()
            let migrations = try MigrationSource.loadVersioned(directory: TestDatabase.legacyMigrationsDirectory)
            try Migrator(migrations: migrations.filter { $0.version <= 4 }).migrate(connection)
            try connection.execute("""
                INSERT INTO public.weekly_completion_counts (user_id, week_start, completions, days_with_completion, active_habit_days)
                VALUES (\(WeeklyFixture.alice), '2020-12-28', 5, 4, 10), (\(WeeklyFixture.alice), '2021-01-03', 2, 2, 7),
                       (\(WeeklyFixture.bob), '2020-12-30', 1, 1, 1)
                """)
            try Migrator(migrations: migrations).migrate(connection)
            #expect(try Self.stored(connection) == [
                "00000000-0000-0000-0000-00000000000a,monday,2020-12-28,5",
                "00000000-0000-0000-0000-00000000000a,sunday,2021-01-03,2",
            ]) // bob's Wednesday row matched neither convention and is gone
            let key = try connection.queryOne("""
                SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'weekly_completion_counts_pkey'
                """).decode(String.self, at: 0)
            #expect(key == "PRIMARY KEY (user_id, week_starts_on, week_start)")
        }
    }

    /// The batch role reads no task or list (weekly counts never do).
    @Test func batchRoleCannotReadTasks() throws {
        try TestDatabase.with { database throws in
            let batch = try database.connect(user: "habit_batch")
            for table in ["public.tasks", "public.task_lists"] {
                let error = try #require(throws: PostgresError.self) { try batch.query(Query(unsafeSQL: "SELECT count(*) FROM \(table)")) }
                #expect(error.sqlState == .insufficientPrivilege, "\(table)")
            }
        }
    }
}
