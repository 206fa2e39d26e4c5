import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Issue 31, the direct-SQL attacks as `authenticated` with a user's claims (a Supabase client,
/// psql), those not covered elsewhere (WriterLockTests: #6; SyncClockTests: the sync tables of
/// #5; ZoneNameTests: #11; DateRangeConstraintTests: #1).
@Suite struct SideTableAttackTests {
    static func claims(_ user: UUID) -> Query {
        "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#), true)"
    }

    /// #5 beyond the sync tables: derived state, marks and counters are written only by the
    /// functions that own them, never by a user's own INSERT, UPDATE or DELETE — not even of
    /// the user's own rows.
    @Test func derivedStateMarksAndCountersRefuseTheUsersWrites() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            defer { connection.close() }
            let user = UUID()
            // The user has rows in each of them (periods, streaks, counters, clock) first.
            _ = try connection.withTransaction(prelude: ["SET LOCAL ROLE authenticated", Self.claims(user)]) { c in
                try c.execute("INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), 'Run')")
            }
            let tables = ["public.habit_periods", "public.habit_streak_runs", "public.habit_streak_state",
                          "public.weekly_completion_counts", "habit.user_row_counts", "habit.weekly_counts_dirty",
                          "habit.weekly_counts_state", "habit.row_limits", "habit.time_zones"]
            for table in tables {
                let column = try connection.queryOne("""
                    SELECT attname::text FROM pg_attribute WHERE attrelid = \(table)::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum LIMIT 1
                    """).decode(String.self, at: 0)
                for write in ["INSERT INTO \(table) DEFAULT VALUES", "UPDATE \(table) SET \(column) = \(column)", "DELETE FROM \(table)"] {
                    let error = try #require(throws: PostgresError.self, "\(write) as authenticated") {
                        try connection.withTransaction(prelude: ["SET LOCAL ROLE authenticated", Self.claims(user)]) { c in
                            try c.execute(Query(unsafeSQL: write))
                        }
                    }
                    #expect(error.sqlState == .insufficientPrivilege, "\(write): \(error)")
                }
            }
        }
    }

    /// #4 as the issue's attacker did it: `authenticated` inserting and deleting 12,000 tasks of
    /// its own in plain statements keeps at most the tombstone cap (10,000), whatever it deletes.
    @Test func anAuthenticatedUsersMassDeletionKeepsAtMostTheTombstoneCap() throws {
        try TestDatabase.with { database throws in
            let connection = try database.connect()
            defer { connection.close() }
            let user = UUID()
            for _ in 1...2 {
                _ = try connection.withTransaction(prelude: ["SET LOCAL ROLE authenticated", Self.claims(user)]) { c in
                    try c.execute("INSERT INTO public.tasks (user_id, title, position) SELECT \(user), 'Task ' || n, n FROM generate_series(1, 12000) n")
                }
                _ = try connection.withTransaction(prelude: ["SET LOCAL ROLE authenticated", Self.claims(user)]) { c in
                    try c.execute("DELETE FROM public.tasks WHERE user_id = \(user)")
                }
                let kept = try connection.queryOne("SELECT count(*) FROM habit.sync_tombstones WHERE user_id = \(user)").decode(Int.self, at: 0)
                #expect(kept <= 10_000, "\(kept) tombstones after deleting 12,000 tasks as authenticated")
            }
        }
    }
}
