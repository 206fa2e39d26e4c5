import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// sql/0010 section 10 as psql and Supabase meet it: `habit.set_day_state` and `habit.set_skips`
/// as `authenticated` (row-level security applies: SECURITY INVOKER), not for `anon`; and two
/// direct writers of one day racing — exactly one wins, the other gets HB005.
@Suite struct DayStateFunctionsTests {
    typealias Rules = HistoryRulesTests

    static func counts(_ admin: Connection) throws -> (done: Int, skipped: Int) {
        let row = try admin.queryOne("""
            SELECT (SELECT count(*) FROM public.habit_completions WHERE template_id = \(Rules.habit)),
                   (SELECT count(*) FROM public.habit_skips WHERE template_id = \(Rules.habit))
            """)
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
    }

    @Test func functionsRunUnderTheUsersRights() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try Rules.arrange(admin)
            let connection = try database.connect()
            let day = date("2026-01-05")
            // The owner: skipped, then done (the skip replaced), in one call each.
            try Rules.asUser(Rules.user, on: connection) { c throws in
                #expect(try c.queryOne("SELECT changed FROM habit.set_day_state(\(Rules.user), \(Rules.habit), \(day), 'skipped')").decode(Bool.self, at: 0))
            }
            #expect(try Self.counts(admin) == (0, 1))
            try Rules.asUser(Rules.user, on: connection) { c throws in
                #expect(try c.queryOne("SELECT changed FROM habit.set_day_state(\(Rules.user), \(Rules.habit), \(day), 'done')").decode(Bool.self, at: 0))
            }
            #expect(try Self.counts(admin) == (1, 0))
            // Another user naming the owner (claims are the other's): row-level security hides
            // the habit, so no row and nothing written, for both functions.
            try Rules.asUser(Rules.other, on: connection) { c throws in
                #expect(try c.query("SELECT * FROM habit.set_day_state(\(Rules.user), \(Rules.habit), \(day), 'none')").isEmpty)
                let range = try c.queryOne("SELECT found, changed FROM habit.set_skips(\(Rules.user), \(Rules.habit), '2026-01-02', '2026-01-04', true)")
                #expect(try range.decode(Bool.self, at: 0) == false)
            }
            #expect(try Self.counts(admin) == (1, 0))
            // The owner's range: the done day stays done, the others of [2, 6] are skipped.
            try Rules.asUser(Rules.user, on: connection) { c throws in
                let range = try c.queryOne("SELECT changed, days::text FROM habit.set_skips(\(Rules.user), NULL, '2026-01-02', '2026-01-06', true)")
                #expect(try range.decode(Int.self, at: 0) == 4)
                #expect(try range.decode(String.self, at: 1) == "{2026-01-02,2026-01-03,2026-01-04,2026-01-06}")
            }
            #expect(try Self.counts(admin) == (1, 4))
            Rules.expectState("42501", comment: "anon may not execute them") {
                try connection.withTransaction(prelude: ["SET LOCAL ROLE anon"]) { c throws in
                    _ = try c.query("SELECT * FROM habit.set_day_state(\(Rules.user), \(Rules.habit), \(day), 'none')")
                }
            }
        }
    }

    /// Two direct writers (an app through Supabase, psql) of one day: the first holds the
    /// habit's lock (its trigger takes it) until it commits; the second's trigger then sees
    /// the first's row and refuses with HB005. Never both rows.
    @Test(arguments: [true, false])
    func racingDirectWritersNeverLeaveBoth(skipFirst: Bool) throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            try Rules.arrange(admin)
            let first = try database.connect(), second = try database.connect()
            let day = date("2026-01-05")
            let skip: Query = "INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(Rules.user), \(Rules.habit), \(day))"
            let complete: Query = "INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(Rules.user), \(Rules.habit), \(day))"
            let secondState = LockedBox<String?>(nil)
            let finished = DispatchSemaphore(value: 0)
            let secondConnection = UncheckedBox(second)
            let secondStatement = UncheckedBox(skipFirst ? complete : skip)
            try Rules.asUser(Rules.user, on: first) { c throws in
                _ = try c.execute(skipFirst ? skip : complete)
                let thread = Thread {
                    let state = Rules.sqlState {
                        try Rules.asUser(Rules.user, on: secondConnection.value) { c throws in _ = try c.execute(secondStatement.value) }
                    }
                    secondState.withValue { $0 = state }
                    finished.signal()
                }
                thread.start()
                // The second writer waits for the habit's lock (hang guard 20 s, not a speed check).
                let deadline = Date(timeIntervalSinceNow: 20)
                while try admin.queryOne("""
                    SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """).decode(Int.self, at: 0) == 0 {
                    guard Date() < deadline else { Issue.record("the second writer never waited"); break }
                    usleep(5_000)
                }
            }
            finished.wait()
            #expect(secondState.withValue { $0 } == "HB005")
            #expect(try Self.counts(admin) == (skipFirst ? (0, 1) : (1, 0)))
        }
    }
}

/// Hands a value that is not Sendable to one other thread that alone uses it from then on.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
