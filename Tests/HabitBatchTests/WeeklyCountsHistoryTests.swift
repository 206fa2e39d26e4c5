import Foundation
import HabitBatch
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The batch and the per-user path agree on history (issue 16): for random users, zones and
/// histories (deactivations, reactivations on the same local day, schedule changes, periods
/// starting in the future, habits without periods, users without habits) and completions, the
/// stored weekly counts of `habit weekly-counts --store` equal, row for row, what the
/// repository's `weekCounts` (week.counts' SQL, on `habit.habit_days_at`) gives for each user
/// and week, summed over the week's days. The batch counts set-based over all users
/// (`habit.period_on_days`, the union of each habit's periods, split by week); the per-user
/// path expands the same definition day by day. "Today" is the real one for both (now() in
/// each user's zone), so the histories are placed around it.
@Suite struct WeeklyCountsHistoryTests {
    static let zones = ["Pacific/Kiritimati", "Etc/GMT+12", "America/New_York", "Europe/London", "Australia/Lord_Howe",
                        "Asia/Kolkata", "UTC", "America/Havana"]

    struct Period { var start: Int64; var end: Int64? }

    /// Random periods of one habit in `zone` around `now` (seconds): sorted, never overlapping,
    /// at most the last one open; boundaries at local midnights, a second either side, or
    /// anywhere, often within a day and a half before now; a reopening often on the day (even
    /// the instant) of the closing.
    static func periods(zone: String, now: Int64, using rng: inout SeededGenerator) -> [Period] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        func boundary(after previous: Int64?) -> Int64 {
            if let previous, Int.random(in: 0..<3, using: &rng) == 0 {
                // Closed and reopened the same day, or a schedule change at the same instant.
                return previous + (Bool.random(using: &rng) ? 0 : Int64.random(in: 1...3_600, using: &rng))
            }
            let base = max(previous.map { $0 + 1 } ?? now - 40 * 86_400, now - 40 * 86_400)
            var instant = base + Int64.random(in: 0...(12 * 86_400), using: &rng)
            // Often near now: closed yesterday or today, in zones where today is another date.
            if Int.random(in: 0..<3, using: &rng) == 0, base < now - 1 { instant = max(base, now - Int64.random(in: 0...(36 * 3_600), using: &rng)) }
            let midnight = Int64(calendar.startOfDay(for: Date(timeIntervalSince1970: Double(instant))).timeIntervalSince1970)
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: return max(midnight, base)
            case 1: return max(midnight - 1, base)
            case 2: return max(midnight + 1, base)
            default: return instant
            }
        }
        var result: [Period] = []
        var last: Int64? = nil
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            let start = boundary(after: last)
            var end = boundary(after: start)
            if end <= start { end = start + 1 }
            result.append(Period(start: start, end: end))
            last = end
        }
        if !result.isEmpty, Bool.random(using: &rng) { result[result.count - 1].end = nil }
        return result
    }

    static func timestamp(_ seconds: Int64) -> PostgresTimestamp {
        PostgresTimestamp(microsecondsSinceUnixEpoch: seconds * 1_000_000)
    }

    /// Writes `users` random users as a superuser: profiles, habits, their periods (replacing
    /// the one creating a habit opens) and completions on some days each habit is on, up to
    /// the user's today (the completion trigger checks them). Returns the users.
    static func load(_ admin: Connection, users: Int, seed: UInt64) throws -> [UUID] {
        var rng = SeededGenerator(seed: seed)
        let now = try admin.queryOne("SELECT extract(epoch FROM now())::bigint").decode(Int64.self, at: 0)
        var ids: [UUID] = []
        try admin.withTransaction { connection in
            for index in 0..<users {
                let user = UUID()
                let zone = zones.randomElement(using: &rng)!
                // Every fifth user has habits but no profile (UTC, as the batch and the worker read it).
                if index % 5 != 4 {
                    try connection.execute("INSERT INTO public.profiles (user_id, timezone) VALUES (\(user), \(zone))")
                }
                let zoneOfUser = index % 5 == 4 ? "UTC" : zone
                // A user is someone with a profile or a habit.
                let habits = Int.random(in: index % 5 == 4 ? 1...4 : 0...4, using: &rng)
                ids.append(user)
                for habit in 0..<habits {
                    let id = try connection.queryOne("""
                        INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), \("habit \(habit)")) RETURNING id
                        """).decode(UUID.self, at: 0)
                    try connection.execute("DELETE FROM public.habit_periods WHERE template_id = \(id)")
                    for period in periods(zone: zoneOfUser, now: now, using: &rng) {
                        try connection.execute("""
                            INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at)
                            VALUES (\(user), \(id), \(timestamp(period.start)), \(period.end.map(timestamp)))
                            """)
                    }
                }
                let salt = "\(rng.next())"
                try connection.execute("""
                    INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                    SELECT \(user), h.template_id, h.day
                    FROM habit.habit_days(\(user), (now() - interval '45 days')::date, (now() + interval '2 days')::date) h
                    WHERE h.day <= habit.local_date(now(), habit.user_time_zone(\(user), NULL))
                      AND hashtext(h.template_id::text || h.day::text || \(salt)) % 3 <> 0
                    """)
            }
        }
        return ids
    }

    @Test(arguments: [WeekStart.monday, .sunday])
    func batchEqualsTheSumOfPerUserWeekCounts(weekStart: WeekStart) throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            let users = try Self.load(admin, users: 40, seed: weekStart == .monday ? 16 : 61)
            let today = try admin.queryOne("SELECT (now() AT TIME ZONE 'UTC')::date").decode(CalendarDate.self, at: 0)
            let job = WeeklyCountsJob(from: today.adding(days: -42), to: today.adding(days: 14))
            var storing = job
            storing.weekStart = weekStart
            _ = try storing.runStore(on: try database.connect(user: "habit_batch"))
            let stored = try admin.query("""
                SELECT concat_ws(',', user_id, week_start, completions, days_with_completion, active_habit_days)
                FROM public.weekly_completion_counts WHERE week_starts_on = \(weekStart == .monday ? "monday" : "sunday")
                ORDER BY user_id, week_start
                """).map { try $0.decode(String.self, at: 0) }

            let repository = HabitRepository(connection: try database.connect(user: "habit_worker"))
            var expected: [String] = []
            let first = weekStart.weekStart(containing: job.from)
            let last = weekStart.weekStart(containing: job.to)
            for user in users.sorted(by: { $0.uuidString.lowercased() < $1.uuidString.lowercased() }) {
                var week = first
                while week <= last {
                    let days = try repository.weekCounts(user: user, containing: week, weekStart: weekStart)
                    let completions = days.reduce(0) { $0 + $1.completed }
                    let withCompletion = days.filter { $0.completed > 0 }.count
                    let active = days.reduce(0) { $0 + $1.active }
                    expected.append("\(user.uuidString.lowercased()),\(week),\(completions),\(withCompletion),\(active)")
                    week = week.adding(days: 7)
                }
            }
            // The data is not trivial: habit-days on, completions, and both kinds of users.
            #expect(expected.contains { !$0.hasSuffix(",0") })
            #expect(stored.count == expected.count)
            #expect(stored == expected)
        }
    }
}
