import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The rule functions of sql/0007, called the way an app writing through Supabase or a person
/// in psql calls them: as `authenticated` with a user's claims (and as `habit_admin`), not
/// only through the repositories.
@Suite struct RuleFunctionsTests {
    /// Runs `body` in a transaction as `authenticated` with `user`'s claims, as PostgREST does.
    static func asUser<Value>(_ user: UUID, on connection: Connection, _ body: (Connection) throws -> Value) throws -> Value {
        try connection.withTransaction(prelude: [
            "SET LOCAL ROLE authenticated",
            "SELECT set_config('request.jwt.claims', \(#"{"sub":"\#(user.uuidString.lowercased())","role":"authenticated"}"#), true)",
            // On Citus a claim reaches the shards only as a SET LOCAL, as the worker sends it
            // there (docs/scaling.md, "Running on Citus"); set_config() alone reads nothing.
            Query(unsafeSQL: CitusCluster.current == nil ? "SELECT 1" : "SET LOCAL request.jwt.claim.sub = '\(user.uuidString.lowercased())'"),
        ], body)
    }

    /// The model: a habit is on local date D when it is active and the local date of its
    /// activation instant in the zone is on or before D (Foundation's time-zone data).
    static func isOnDay(active: Bool, activatedAt: Date, day: CalendarDate, zone: String) -> Bool {
        active && localDate(activatedAt, in: zone) <= day
    }

    static func localDate(_ instant: Date, in zone: String) -> CalendarDate {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let parts = calendar.dateComponents([.year, .month, .day], from: instant)
        return CalendarDate(year: parts.year!, month: parts.month!, day: parts.day!)!
    }

    /// Zones a day apart (UTC+14, UTC−12), with half- and quarter-hour offsets, and with DST
    /// changes in 2026 (Berlin 29 March / 25 October, Los Angeles 8 March / 1 November,
    /// Auckland 5 April / 27 September, Lord Howe's half-hour change).
    static let zones = ["Pacific/Kiritimati", "Etc/GMT+12", "Asia/Kathmandu", "Australia/Lord_Howe", "Europe/Berlin",
                        "America/Los_Angeles", "Pacific/Auckland", "UTC"]
    static let transitions = ["2026-03-08T10:00:00Z", "2026-03-29T01:00:00Z", "2026-04-04T14:00:00Z", "2026-04-04T15:00:00Z",
                              "2026-09-26T14:00:00Z", "2026-10-25T01:00:00Z", "2026-11-01T09:00:00Z"]

    /// For random habits, instants (many within hours of a DST change) and days, the SQL rule
    /// gives the model's answer. Seeded, so a failure replays.
    @Test(arguments: [UInt64(14), 16, 2026])
    func isOnDayMatchesTheModel(seed: UInt64) throws {
        try TestDatabase.with { database throws in
            var random = SeededGenerator(seed: seed)
            let user = UUID()
            try Self.asUser(user, on: database.connect()) { connection in
                for _ in 0..<300 {
                    let zone = Self.zones.randomElement(using: &random)!
                    let anchor = Bool.random(using: &random)
                        ? instant(Self.transitions.randomElement(using: &random)!).date
                        : instant("2026-01-01T00:00:00Z").date.addingTimeInterval(Double(Int.random(in: 0..<365, using: &random)) * 86_400)
                    let activatedAt = anchor.addingTimeInterval(Double(Int.random(in: -36 * 60...36 * 60, using: &random)) * 60)
                    let day = Self.localDate(activatedAt, in: zone).adding(days: Int.random(in: -2...2, using: &random))
                    let active = Int.random(in: 0..<5, using: &random) > 0
                    let answer = try connection.queryOne("""
                        SELECT habit.is_on_day(\(active), \(PostgresTimestamp(activatedAt)), \(day), \(zone))
                        """).decode(Bool.self, at: 0)
                    let expected = Self.isOnDay(active: active, activatedAt: activatedAt, day: day, zone: zone)
                    #expect(answer == expected, "seed \(seed): active \(active), activated \(PostgresTimestamp(activatedAt)), \(day) in \(zone)")
                }
            }
        }
    }

    /// Every case of the completion rule: the future is refused both ways, a habit that is not
    /// on the day only when completing.
    @Test func completionRefusalEveryCase() throws {
        try TestDatabase.with { database throws in
            let today = date("2026-11-20")
            try Self.asUser(UUID(), on: database.connect()) { connection in
                for completing in [true, false] {
                    for day in [today.adding(days: -1), today, today.adding(days: 1)] {
                        for onDay in [true, false] {
                            let refusal = try connection.queryOne("""
                                SELECT habit.completion_refusal(\(completing), \(day), \(today), \(onDay))
                                """).decode(String?.self, at: 0)
                            let expected: String? = day > today ? "future_date" : (completing && !onDay ? "habit_not_active" : nil)
                            #expect(refusal == expected, "completing \(completing), \(day), on day \(onDay)")
                        }
                    }
                }
            }
        }
    }

    /// What a seed app writing through Supabase does: insert with the next position itself.
    /// Positions count per user and date (the inbox apart), another user's rows never count,
    /// and the largest integer is the ceiling.
    @Test func nextPositionsAsAuthenticated() throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            let (alice, bob) = (UUID(), UUID())
            let day = date("2026-05-04")
            // Bob's rows sit higher on the same date and in the inbox; alice must not see them.
            try admin.execute("""
                INSERT INTO public.tasks (user_id, title, scheduled_date, position)
                VALUES (\(bob), 'b1', \(day), 50), (\(bob), 'b2', NULL, 70)
                """)
            try admin.execute("INSERT INTO public.habit_templates (user_id, name, sort_order) VALUES (\(bob), 'b', 90)")
            let connection = try database.connect()
            try Self.asUser(alice, on: connection) { connection in
                func next(_ date: CalendarDate?) throws -> Int {
                    Int(try connection.queryOne("SELECT habit.next_task_position(\(alice), \(date))").decode(Int32.self, at: 0))
                }
                func nextHabit() throws -> Int {
                    Int(try connection.queryOne("SELECT habit.next_habit_sort_order(\(alice))").decode(Int32.self, at: 0))
                }
                #expect(try next(day) == 1 && next(nil) == 1 && nextHabit() == 1)
                for title in ["one", "two"] {
                    try connection.execute("""
                        INSERT INTO public.tasks (user_id, title, scheduled_date, position)
                        VALUES (\(alice), \(title), \(day), habit.next_task_position(\(alice), \(day)))
                        """)
                }
                try connection.execute("""
                    INSERT INTO public.tasks (user_id, title, position) VALUES (\(alice), 'inbox', habit.next_task_position(\(alice), NULL))
                    """)
                try connection.execute("""
                    INSERT INTO public.habit_templates (user_id, name, sort_order) VALUES (\(alice), 'a', habit.next_habit_sort_order(\(alice)))
                    """)
                #expect(try next(day) == 3 && next(day.adding(days: 1)) == 1 && next(nil) == 2 && nextHabit() == 2)
                // Bob's positions are invisible to alice (row-level security).
                #expect(try next(nil) == 2)
                // The ceiling: after the largest integer comes the largest integer.
                try connection.execute("INSERT INTO public.tasks (user_id, title, scheduled_date, position) VALUES (\(alice), 'max', \(day), 2147483647)")
                try connection.execute("INSERT INTO public.habit_templates (user_id, name, sort_order) VALUES (\(alice), 'max', 2147483647)")
                #expect(try next(day) == 2_147_483_647 && nextHabit() == 2_147_483_647)
            }
            // Asked for bob's, alice is refused (sql/0023: a user's request acts only for
            // that user, so it cannot take bob's writer lock either).
            let refused = #expect(throws: PostgresError.self) {
                try Self.asUser(alice, on: connection) { connection in
                    try connection.queryOne("SELECT habit.next_task_position(\(bob), NULL)")
                }
            }
            #expect(refused?.sqlState == .insufficientPrivilege, "\(String(describing: refused))")
            // The repositories use the same functions.
            let tasks = TaskRepository(connection: try database.connect(user: "habit_worker"))
            #expect(try tasks.createTask(user: alice, TaskDraft(title: "repo", scheduledDate: day.adding(days: 1))).position == 1)
            #expect(try tasks.createTask(user: alice, TaskDraft(title: "repo inbox")).position == 2)
        }
    }

    /// admin.user_week counts a day's habits by the same rule as week.counts (habit.is_on_day).
    @Test func adminUserWeekAgreesWithWeekCounts() throws {
        try HabitFixture.with { fixture throws in
            let repository = fixture.repository
            let user = UUID()
            _ = try repository.setTimeZone(user: user, timeZone: "America/Los_Angeles")
            // 2026-11-18 23:30 in Los Angeles is already the 19th in UTC: on from the 18th.
            _ = try repository.createHabit(user: user, HabitDraft(name: "Late", activatedAt: instant("2026-11-19T07:30:00Z")))
            _ = try repository.createHabit(user: user, HabitDraft(name: "Old", activatedAt: instant("2026-01-01T12:00:00Z")))
            let gone = try repository.createHabit(user: user, HabitDraft(name: "Gone", activatedAt: instant("2026-01-01T12:00:00Z")))
            // Gone's period ends 2026-11-19 04:00 in Los Angeles: on through the 19th (issue 16).
            try fixture.admin.execute("UPDATE public.habit_periods SET ended_at = '2026-11-19T12:00:00Z' WHERE template_id = \(gone.id)")
            _ = try repository.deactivateHabit(user: user, id: gone.id)
            let strip = try repository.weekCounts(user: user, containing: date("2026-11-18"), weekStart: .monday)
            #expect(strip.map(\.active) == [2, 2, 3, 3, 2, 2, 2])
            try fixture.admin.withTransaction(prelude: ["SET LOCAL ROLE habit_admin"]) { connection in
                let week = try connection.query("SELECT day, active_habits FROM admin.user_week(\(user), '2026-11-18')")
                #expect(try week.map { try $0.decode(CalendarDate.self, at: 0) } == strip.map(\.date))
                #expect(try week.map { try $0.decode(Int.self, at: 1) } == strip.map(\.active))
            }
        }
    }
}
