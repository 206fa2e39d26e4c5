import Foundation
import HabitBatch
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The batch and the per-user path agree on history (issue 16): for random users, zones and
/// histories (deactivations, reactivations on the same local day, schedule changes — often
/// mid-week — between all five schedule types, periods starting in the future, habits without
/// periods, users without habits), completions and skips (also, backfilled, on days the habit
/// is not on) and users' weeks (profiles.week_start), the stored weekly counts of
/// `habit weekly-counts --store` equal, row for row, what the repository's `weekCounts`
/// (week.counts' SQL, on `habit.habit_days_at`) gives for each user and week, summed over the
/// week's days: habit-days on, due and skipped, completions; and the completion rate equals
/// (done on due days) ÷ (due − skipped due days) counted from the per-day rows of
/// `habit.habit_days`. The batch counts set-based over all users (`habit.period_on_days`,
/// habit.due_days per piece of a period in a week); the per-user path expands the same
/// definitions day by day. The run's week convention and a user's week differ for some users:
/// a times_per_week target is met in the user's week whatever week the run groups by.
/// "Today" is the real one for both (now() in each user's zone), so the histories are placed
/// around it.
@Suite struct WeeklyCountsHistoryTests {
    /// Kiritimati (UTC+14), Niue and Etc/GMT+12 (UTC−11, UTC−12): the same instant on
    /// different dates; zones with DST (their change days are used when one falls within the
    /// histories' weeks, see `transitions`); half-hour offsets.
    static let zones = ["Pacific/Kiritimati", "Pacific/Niue", "Etc/GMT+12", "America/New_York", "Europe/London",
                        "Australia/Lord_Howe", "Asia/Kolkata", "UTC", "America/Havana", "America/Santiago", "Pacific/Auckland"]

    struct Period { var start: Int64; var end: Int64?; var schedule: String }

    /// The DST transitions of `zone` within 45 days before and 14 after `now`.
    static func transitions(zone: String, now: Int64) -> [Int64] {
        let timeZone = TimeZone(identifier: zone)!
        var result: [Int64] = []
        var after = Date(timeIntervalSince1970: Double(now - 45 * 86_400))
        while let next = timeZone.nextDaylightSavingTimeTransition(after: after), next.timeIntervalSince1970 < Double(now + 14 * 86_400) {
            result.append(Int64(next.timeIntervalSince1970))
            after = next
        }
        return result
    }

    static func schedule(using rng: inout SeededGenerator) -> String {
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: return #"{"type":"daily"}"#
        case 4:
            let days = Int.random(in: 2...10, using: &rng)
            return #"{"type":"times_in_days","times":\#(Int.random(in: 1..<days, using: &rng)),"days":\#(days)}"#
        case 1:
            let days = (1...7).filter { _ in Bool.random(using: &rng) }
            return #"{"type":"weekdays","days":[\#((days.isEmpty ? [Int.random(in: 1...7, using: &rng)] : days).map(String.init).joined(separator: ","))]}"#
        case 2: return #"{"type":"every_n_days","n":\#(Int.random(in: 1...5, using: &rng))}"#
        default: return #"{"type":"times_per_week","times":\#(Int.random(in: 1...7, using: &rng))}"#
        }
    }

    /// Random periods of one habit in `zone` around `now` (seconds): sorted, never overlapping,
    /// at most the last one open, each with a random schedule; boundaries at local midnights, a
    /// second either side, DST transitions and the midnights of their days, or anywhere, often
    /// within a day and a half before now; a reopening often on the day (or, a schedule
    /// change, at the instant) of the closing.
    static func periods(zone: String, now: Int64, using rng: inout SeededGenerator) -> [Period] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let changes = transitions(zone: zone, now: now)
        func boundary(after previous: Int64?) -> Int64 {
            if let previous, Int.random(in: 0..<3, using: &rng) == 0 {
                // Closed and reopened the same day, or a schedule change at the same instant.
                return previous + (Bool.random(using: &rng) ? 0 : Int64.random(in: 1...3_600, using: &rng))
            }
            let base = max(previous.map { $0 + 1 } ?? now - 40 * 86_400, now - 40 * 86_400)
            var instant = base + Int64.random(in: 0...(12 * 86_400), using: &rng)
            // Often near now: closed yesterday or today, in zones where today is another date.
            if Int.random(in: 0..<3, using: &rng) == 0, base < now - 1 { instant = max(base, now - Int64.random(in: 0...(36 * 3_600), using: &rng)) }
            // Sometimes at a DST change: the transition itself, or near it (the day before, of or
            // after it, at that time or an hour later) and then often at that day's midnight.
            if let change = changes.randomElement(using: &rng), change >= base, Int.random(in: 0..<3, using: &rng) == 0 {
                instant = change + Int64.random(in: -1...1, using: &rng) * 86_400 + (Bool.random(using: &rng) ? 0 : 3_600)
                if instant < base { instant = change }
                if Bool.random(using: &rng) { return max(change, base) }
            }
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
            result.append(Period(start: start, end: end, schedule: schedule(using: &rng)))
            last = end
        }
        if !result.isEmpty, Bool.random(using: &rng) { result[result.count - 1].end = nil }
        return result
    }

    static func timestamp(_ seconds: Int64) -> PostgresTimestamp {
        PostgresTimestamp(microsecondsSinceUnixEpoch: seconds * 1_000_000)
    }

    /// Writes `users` random users as a superuser: profiles (random zone and week start),
    /// habits, their periods (replacing the one creating a habit opens), then completions and
    /// skips: on about 2 in 5 of the days each habit is on up to the user's today done, on
    /// about 1 in 5 (any day of the window) skipped, and about 1 in 8 of the days it is not on
    /// done or skipped anyway. `SET LOCAL habit.backfill = 'on'` (a superuser may) lifts the
    /// triggers' date and activity checks for those; done and skipped never meet (HB005).
    /// Returns the users and the number of users whose week starts on Sunday.
    static func load(_ admin: Connection, users: Int, seed: UInt64) throws -> (users: [UUID], sundayUsers: Int) {
        var rng = SeededGenerator(seed: seed)
        let now = try admin.queryOne("SELECT extract(epoch FROM now())::bigint").decode(Int64.self, at: 0)
        var ids: [UUID] = []
        var sundayUsers = 0
        try admin.withTransaction { connection in
            try connection.execute("SET LOCAL habit.backfill = 'on'")
            for index in 0..<users {
                let user = UUID()
                let zone = zones.randomElement(using: &rng)!
                let weekStart = Bool.random(using: &rng) ? "sunday" : "monday"
                // Every fifth user has habits but no profile (UTC and Monday weeks, as the batch
                // and the worker read it).
                if index % 5 != 4 {
                    try connection.execute("INSERT INTO public.profiles (user_id, timezone, week_start) VALUES (\(user), \(zone), \(weekStart))")
                    if weekStart == "sunday" { sundayUsers += 1 }
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
                            INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at, schedule)
                            VALUES (\(user), \(id), \(timestamp(period.start)), \(period.end.map(timestamp)), \(JSONB(text: period.schedule)))
                            """)
                    }
                }
                let salt = "\(rng.next())"
                // Which of done (0, 1), skipped (2), nothing (3, 4) a habit-day gets; off-days:
                // done (0), skipped (1), nothing (2…7).
                // Picked by one read, written by two plain inserts: on a Citus coordinator one
                // statement that reads habit.habit_days and writes both tables fails there
                // ("another command is already in progress").
                let picks = try connection.query("""
                    SELECT p.template_id::text, p.day::text,
                           CASE WHEN p.on_day THEN CASE WHEN p.draw % 5 IN (0, 1) AND p.day <= habit.local_date(now(), habit.user_time_zone(\(user), NULL)) THEN 'done'
                                                        WHEN p.draw % 5 = 2 THEN 'skipped' END
                                ELSE CASE p.draw % 8 WHEN 0 THEN 'done' WHEN 1 THEN 'skipped' END END
                    FROM (SELECT t.id AS template_id, d::date AS day, h.template_id IS NOT NULL AS on_day,
                                 abs(hashtext(t.id::text || d::date::text || \(salt))) AS draw
                          FROM public.habit_templates t
                          CROSS JOIN generate_series((now() - interval '46 days')::date, (now() + interval '15 days')::date, interval '1 day') d
                          LEFT JOIN habit.habit_days(\(user), (now() - interval '46 days')::date, (now() + interval '15 days')::date) h
                                 ON h.template_id = t.id AND h.day = d::date
                          WHERE t.user_id = \(user)) p
                    """).map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(String?.self, at: 2)) }
                func days(_ kind: String) -> JSONB {
                    JSONB(text: "[" + picks.filter { $0.2 == kind }.map { "[\"\($0.0)\",\"\($0.1)\"]" }.joined(separator: ",") + "]")
                }
                try connection.execute("""
                    INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                    SELECT \(user), (e ->> 0)::uuid, (e ->> 1)::date FROM jsonb_array_elements(\(days("done"))) e
                    """)
                try connection.execute("""
                    INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
                    SELECT \(user), (e ->> 0)::uuid, (e ->> 1)::date FROM jsonb_array_elements(\(days("skipped"))) e
                    """)
            }
        }
        return (ids, sundayUsers)
    }

    /// 4 decimals, half away from zero, as PostgreSQL's round(numeric, 4) prints it; "" for none.
    static func rate(_ numerator: Int, _ denominator: Int) -> String {
        guard denominator > 0 else { return "" }
        let scaled = (2 * numerator * 10_000 + denominator) / (2 * denominator)
        return "\(scaled / 10_000)." + String(String(scaled % 10_000 + 10_000).dropFirst())
    }

    @Test(arguments: [WeekStart.monday, .sunday])
    func batchEqualsTheSumOfPerUserWeekCounts(weekStart: WeekStart) throws {
        try TestDatabase.with { database throws in
            let admin = try database.connect()
            let (users, sundayUsers) = try Self.load(admin, users: 40, seed: weekStart == .monday ? 16 : 61)
            let today = try admin.queryOne("SELECT (now() AT TIME ZONE 'UTC')::date").decode(CalendarDate.self, at: 0)
            let job = WeeklyCountsJob(from: today.adding(days: -42), to: today.adding(days: 14))
            var storing = job
            storing.weekStart = weekStart
            _ = try storing.runStore(on: try database.connect(user: "habit_batch"))
            let stored = try admin.query("""
                SELECT concat_ws(',', user_id, week_start, completions, days_with_completion, active_habit_days,
                                 due_habit_days, skipped_habit_days, coalesce(completion_rate::text, ''))
                FROM public.weekly_completion_counts WHERE week_starts_on = \(weekStart == .monday ? "monday" : "sunday")
                ORDER BY user_id, week_start
                """).map { try $0.decode(String.self, at: 0) }

            let repository = HabitRepository(connection: try database.connect(user: "habit_worker"))
            var expected: [String] = []
            var totals = (due: 0, notDue: 0, skipped: 0, skippedDue: 0, offDay: 0, rated: 0)
            let first = weekStart.weekStart(containing: job.from)
            let last = weekStart.weekStart(containing: job.to)
            for user in users.sorted(by: { $0.uuidString.lowercased() < $1.uuidString.lowercased() }) {
                var week = first
                while week <= last {
                    // week.counts' SQL, grouped by the run's week (not the user's).
                    let days = try repository.weekCounts(user: user, containing: week, weekStart: weekStart)
                    let doneOn = days.reduce(0) { $0 + $1.completed }
                    let active = days.reduce(0) { $0 + $1.active }
                    let due = days.reduce(0) { $0 + $1.due }
                    let skipped = days.reduce(0) { $0 + $1.skipped }
                    // The per-day rows: done and skipped on due days; and the completions of
                    // the week on days their habit is not on (counted by the batch's
                    // `completions`, not by week.counts' `completed`, nor the rate).
                    let row = try admin.queryOne("""
                        SELECT (SELECT count(*) FROM habit.habit_days(\(user), \(week), \(week.adding(days: 6))) h WHERE h.done AND h.due),
                               (SELECT count(*) FROM habit.habit_days(\(user), \(week), \(week.adding(days: 6))) h WHERE h.skipped AND h.due),
                               (SELECT count(*) FROM public.habit_completions c
                                WHERE c.user_id = \(user) AND c.completed_date BETWEEN \(week) AND \(week.adding(days: 6))
                                  AND NOT EXISTS (SELECT 1 FROM habit.habit_days(\(user), c.completed_date, c.completed_date) h
                                                  WHERE h.template_id = c.template_id)),
                               (SELECT count(DISTINCT c.completed_date) FROM public.habit_completions c
                                WHERE c.user_id = \(user) AND c.completed_date BETWEEN \(week) AND \(week.adding(days: 6)))
                        """)
                    let doneDue = try row.decode(Int.self, at: 0)
                    let skippedDue = try row.decode(Int.self, at: 1)
                    let offDay = try row.decode(Int.self, at: 2)
                    let withCompletion = try row.decode(Int.self, at: 3)
                    expected.append("\(user.uuidString.lowercased()),\(week),\(doneOn + offDay),\(withCompletion),\(active),\(due),\(skipped),"
                                    + Self.rate(doneDue, due - skippedDue))
                    totals.due += due; totals.notDue += active - due; totals.skipped += skipped
                    totals.skippedDue += skippedDue; totals.offDay += offDay; totals.rated += due - skippedDue > 0 ? 1 : 0
                    week = week.adding(days: 7)
                }
            }
            // The data is not trivial: due and undue habit-days, skips (of due days too),
            // completions off the habits' days, rates, and users of both week conventions.
            #expect(totals.due > 0 && totals.notDue > 0 && totals.skipped > 0 && totals.skippedDue > 0, "\(totals)")
            #expect(totals.offDay > 0 && totals.rated > 0, "\(totals)")
            #expect(sundayUsers > 0 && sundayUsers < users.count, "\(sundayUsers)")
            #expect(stored.count == expected.count)
            let differences = zip(stored, expected).filter { $0 != $1 }.prefix(5).map { "batch \($0)\nusers \($1)" }
            #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
        }
    }
}
