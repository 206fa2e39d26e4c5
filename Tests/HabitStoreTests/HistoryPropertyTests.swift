import Foundation
import PostgresClient
import PropertyBased
import TestSupport
import Testing

/// One generated user: a zone, today, the first day of the user's week, a window of days to
/// ask about, the periods of each habit (sorted, never overlapping, at most the last one open)
/// and each habit's completion and skip dates (never both on one date).
struct HistoryCase: Sendable, CustomStringConvertible {
    var zone: String
    var today: CalendarDate
    var from: CalendarDate
    var to: CalendarDate
    var habits: [[HistoryPeriod]]
    /// ISO weekday the user's week starts on: 1 (profiles.week_start 'monday') or 7 ('sunday').
    var weekStart = 1
    /// Seconds after local midnight at which the user's days begin (profiles.day_starts_at,
    /// whole minutes).
    var dayStart: Int64 = 0
    /// Per habit (by index; missing = none), the dates completed and skipped.
    var completions: [Set<CalendarDate>] = []
    var skips: [Set<CalendarDate>] = []

    var model: HistoryModel {
        HistoryModel(clock: ZoneClock(zone, dayStart: dayStart), today: today, weekStart: weekStart, completions: completions, skips: skips)
    }

    /// Smaller cases for the shrinker, each strictly smaller by (habits + periods + non-daily
    /// schedules + days in the window + completions + skips + a Sunday week start + a day start
    /// after midnight), so
    /// shrinking always ends.
    var smaller: [HistoryCase] {
        var result: [HistoryCase] = []
        if habits.count > 1 {
            for index in habits.indices {
                var copy = self
                copy.habits.remove(at: index)
                if index < copy.completions.count { copy.completions.remove(at: index) }
                if index < copy.skips.count { copy.skips.remove(at: index) }
                result.append(copy)
            }
        }
        for (habit, days) in completions.enumerated() {
            for day in days { var copy = self; copy.completions[habit].remove(day); result.append(copy) }
        }
        for (habit, days) in skips.enumerated() {
            for day in days { var copy = self; copy.skips[habit].remove(day); result.append(copy) }
        }
        if weekStart != 1 { var monday = self; monday.weekStart = 1; result.append(monday) }
        if dayStart != 0 { var midnight = self; midnight.dayStart = 0; result.append(midnight) }
        for (habit, periods) in habits.enumerated() {
            for index in periods.indices {
                var copy = self
                copy.habits[habit].remove(at: index)
                result.append(copy)
                if periods[index].schedule != .daily {
                    var daily = self
                    daily.habits[habit][index].schedule = .daily
                    result.append(daily)
                }
            }
        }
        if from < to {
            var later = self; later.from = from.adding(days: 1); result.append(later)
            var earlier = self; earlier.to = to.adding(days: -1); result.append(earlier)
        }
        return result
    }

    /// The day start as profiles.day_starts_at takes it, "HH:MM".
    var dayStartText: String { String(format: "%02lld:%02lld", dayStart / 3_600, dayStart / 60 % 60) }

    /// The history as a person reads it: instants in UTC and in the zone.
    var description: String {
        let clock = ZoneClock(zone, dayStart: dayStart)
        func show(_ instant: Int64) -> String {
            let utc = PostgresTimestamp(microsecondsSinceUnixEpoch: instant * 1_000_000)
            let offset = clock.offset(at: instant)
            let wall = instant + offset
            let second = ((wall % 86_400) + 86_400) % 86_400
            let local = String(format: "%02lld:%02lld:%02lld", second / 3600, second / 60 % 60, second % 60)
            return "\(utc) (\(clock.localDate(instant)) \(local) local, offset \(offset)s)"
        }
        var lines = ["zone \(zone), days from \(dayStartText), today \(today), days \(from)…\(to), weeks from ISO weekday \(weekStart)"]
        for (index, periods) in habits.enumerated() {
            lines.append("  habit \(index):" + (periods.isEmpty ? " no periods" : ""))
            for period in periods {
                lines.append("    [\(show(period.start)), \(period.end.map(show) ?? "open")) \(period.schedule)")
            }
            let done = model.completions(of: index).sorted(), skipped = model.skips(of: index).sorted()
            if !done.isEmpty { lines.append("    done \(done.map(\.description).joined(separator: " "))") }
            if !skipped.isEmpty { lines.append("    skipped \(skipped.map(\.description).joined(separator: " "))") }
        }
        return lines.joined(separator: "\n")
    }
}

/// Random histories: 1–3 habits of 0–4 periods, boundaries at local midnights, a second either
/// side of one, 23:30 local, DST transition instants or anywhere in a day, all within a week of
/// an anchor day that is often a DST transition day of the zone.
enum HistoryGenerator {
    /// UTC+14 and UTC−12 (the same instant on different dates), DST at 02:00 or 01:00
    /// (New York, London), a 30-minute DST change (Lord Howe), DST that skipped or repeated
    /// midnight itself (Sao Paulo until 2019, Havana, Beirut), a half-hour offset without DST.
    /// Helsinki (03:00 → 04:00 in spring, 04:00 → 03:00 in autumn) and Chisinau (02:00 → 03:00,
    /// 03:00 → 02:00) change their clocks at 03:00, the day start night owls pick.
    static let zones = ["Pacific/Kiritimati", "Etc/GMT+12", "America/New_York", "Europe/London", "Australia/Lord_Howe",
                        "America/Sao_Paulo", "Asia/Kolkata", "UTC", "America/Havana", "Asia/Beirut",
                        "Europe/Helsinki", "Europe/Chisinau"]

    static let firstAnchor = CalendarDate(year: 2017, month: 10, day: 1)!
    static let lastAnchor = CalendarDate(year: 2026, month: 12, day: 31)!

    static var generator: Generator<HistoryCase, [HistoryCase]> {
        Generator(run: { rng in generate(using: &rng) }, shrink: { $0.smaller })
    }

    static func generate<R: RandomNumberGenerator>(using rng: inout R) -> HistoryCase {
        let zone = zones.randomElement(using: &rng)!
        let clock = ZoneClock(zone, dayStart: ZoneClock.randomDayStart(using: &rng))
        var anchor = firstAnchor.adding(days: Int.random(in: 0...firstAnchor.days(until: lastAnchor), using: &rng))
        if zone == "America/Sao_Paulo", Bool.random(using: &rng) {
            // Its last DST years (2017–2019), midnight skipped in November, repeated in February.
            anchor = firstAnchor.adding(days: Int.random(in: 0..<540, using: &rng))
        }
        // Half of the cases sit on the zone's next DST transition day, when it has one.
        var transition: Int64?
        if let next = clock.zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: Double(clock.midnight(anchor)))) {
            let instant = Int64(next.timeIntervalSince1970)
            if clock.localDate(instant).days(until: anchor) > -200 {
                transition = instant
                if Bool.random(using: &rng) { anchor = clock.localDate(instant) }
            }
        }

        func boundary() -> Int64 {
            let day = anchor.adding(days: Int.random(in: -6...6, using: &rng))
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: return clock.dayBegins(day)
            case 1: return clock.dayBegins(day) - 1
            case 2: return clock.dayBegins(day) + 1
            case 3: return clock.dayBegins(day.adding(days: 1)) - 1_800 // half an hour before the next day (most days)
            case 4: return transition ?? clock.dayBegins(day)
            default: return clock.dayBegins(day) + Int64.random(in: 0..<86_400, using: &rng)
            }
        }

        func schedule() -> HistorySchedule {
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: return .daily
            case 1:
                let days = (1...7).filter { _ in Bool.random(using: &rng) }
                return .weekdays(days.isEmpty ? [Int.random(in: 1...7, using: &rng)] : days)
            case 2: return .everyNDays(Int.random(in: 1...5, using: &rng))
            case 3:
                // n times in m days (sql/0034): short blocks, so that the cases cross many.
                let days = Int.random(in: 2...9, using: &rng)
                return .timesInDays(times: Int.random(in: 1..<days, using: &rng), days: days)
            default: return .timesPerWeek(Int.random(in: 1...7, using: &rng))
            }
        }

        var habits: [[HistoryPeriod]] = []
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let count = Int.random(in: 0...4, using: &rng)
            var instants = Set<Int64>()
            var attempts = 0
            while instants.count < 2 * count, attempts < 1_000 { instants.insert(boundary()); attempts += 1 }
            let sorted = instants.sorted()
            var periods: [HistoryPeriod] = []
            for index in 0..<sorted.count / 2 {
                var start = sorted[2 * index]
                // A schedule change: the next period starts the instant the previous one ends.
                if let previous = periods.last?.end, Int.random(in: 0..<4, using: &rng) == 0 { start = previous }
                periods.append(HistoryPeriod(start: start, end: sorted[2 * index + 1], schedule: schedule()))
            }
            if !periods.isEmpty, Bool.random(using: &rng) { periods[periods.count - 1].end = nil }
            habits.append(periods)
        }

        // Today: near the anchor, or a boundary's local date or the day after (the
        // deactivation day itself, the day after it).
        var today = anchor.adding(days: Int.random(in: -3...7, using: &rng))
        let boundaries = habits.flatMap { $0.flatMap { [$0.start] + ($0.end.map { [$0] } ?? []) } }
        if let pick = boundaries.randomElement(using: &rng), Int.random(in: 0..<3, using: &rng) == 0 {
            today = clock.localDate(pick).adding(days: Int.random(in: 0...1, using: &rng))
        }
        let from = min(anchor, today).adding(days: -8)
        let to = max(anchor, today).adding(days: 8)

        // Completions and skips on any day from a week before the window (a times_per_week
        // target counts the whole week, also days before the window) to its end: about one day
        // in three done, one in six skipped, never both; some fall on days the habit is not on
        // (a backfill writes them; they still count towards the week's target).
        var completions: [Set<CalendarDate>] = []
        var skips: [Set<CalendarDate>] = []
        for _ in habits {
            var done = Set<CalendarDate>(), skipped = Set<CalendarDate>()
            var day = from.adding(days: -7)
            while day <= to {
                switch Int.random(in: 0..<6, using: &rng) {
                case 0, 1: done.insert(day)
                case 2: skipped.insert(day)
                default: break
                }
                day = day.adding(days: 1)
            }
            completions.append(done)
            skips.append(skipped)
        }
        return HistoryCase(zone: zone, today: today, from: from, to: to, habits: habits,
                           weekStart: Bool.random(using: &rng) ? 1 : 7, dayStart: clock.dayStart, completions: completions, skips: skips)
    }
}

/// What habit.habit_days_at answers for a case, written for a fresh user.
struct HistoryDatabase {
    let database: TestDatabase
    /// Superuser: writes profiles, habits and their periods directly.
    let admin: Connection
    /// Calls habit.habit_days_at as `authenticated` with the user's claims, as the worker does.
    let caller: Connection

    static func with<Value>(_ body: (HistoryDatabase) async throws -> Value) async throws -> Value {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let admin = try database.connect()
        let caller = try database.connect()
        defer { admin.close(); caller.close() }
        return try await body(HistoryDatabase(database: database, admin: admin, caller: caller))
    }

    /// Writes the case's history for a new user and returns the function's rows as the
    /// model's values (habits by their index in the case).
    func habitDays(_ history: HistoryCase) throws -> Set<HabitDay> {
        let (user, ids) = try write(history)
        let rows = try RuleFunctionsTests.asUser(user, on: caller) { connection in
            try connection.query("""
                SELECT template_id, day, due, schedule, done, skipped
                FROM habit.habit_days_at(\(user), \(history.from), \(history.to), \(history.today))
                """)
        }
        var result = Set<HabitDay>()
        for row in rows {
            let id = try row.decode(UUID.self, at: 0)
            let text = try row.decode(JSONB.self, at: 3).text
            guard let habit = ids.firstIndex(of: id), let schedule = HistorySchedule(json: text) else {
                Issue.record("habit_days_at returned a row of an unknown habit or an unreadable schedule: \(id) \(text)")
                continue
            }
            result.insert(HabitDay(habit: habit, day: try row.decode(CalendarDate.self, at: 1),
                                   due: try row.decode(Bool.self, at: 2), schedule: schedule,
                                   done: try row.decode(Bool.self, at: 4), skipped: try row.decode(Bool.self, at: 5)))
        }
        return result
    }

    /// Writes the case's history (profile, habits, periods, completions, skips) for a new
    /// user: the user and the habits' ids, by their index in the case.
    func write(_ history: HistoryCase) throws -> (user: UUID, ids: [UUID]) {
        let user = UUID()
        var ids: [UUID] = []
        try admin.withTransaction { connection in
            // A backfill (a superuser may): completions and skips on any date, also where
            // the habit is not on or after today; done and skipped never meet (HB005).
            try connection.execute("SET LOCAL habit.backfill = 'on'")
            try connection.execute("""
                INSERT INTO public.profiles (user_id, timezone, week_start, day_starts_at)
                VALUES (\(user), \(history.zone), \(history.weekStart == 7 ? "sunday" : "monday"), \(history.dayStartText)::time)
                """)
            for (index, periods) in history.habits.enumerated() {
                let id = try connection.queryOne("""
                    INSERT INTO public.habit_templates (user_id, name) VALUES (\(user), \("habit \(index)")) RETURNING id
                    """).decode(UUID.self, at: 0)
                ids.append(id)
                try HistoryDatabase.replacePeriods(of: id, user: user, with: periods, on: connection)
                for day in history.model.completions(of: index) {
                    try connection.execute("INSERT INTO public.habit_completions (user_id, template_id, completed_date) VALUES (\(user), \(id), \(day))")
                }
                for day in history.model.skips(of: index) {
                    try connection.execute("INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(user), \(id), \(day))")
                }
            }
        }
        return (user, ids)
    }

    /// Replaces the period that creating the habit opened (trigger habit_templates_first_period)
    /// with `periods`. Only a superuser may: sql/0010 lets no user role write periods. The
    /// seed's columns are left as they are; habit.habit_days_at reads only the periods.
    static func replacePeriods(of id: UUID, user: UUID, with periods: [HistoryPeriod], on connection: Connection) throws {
        try connection.execute("DELETE FROM public.habit_periods WHERE template_id = \(id)")
        for period in periods {
            try connection.execute("""
                INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at, schedule)
                VALUES (\(user), \(id), \(timestamp(period.start)), \(period.end.map(timestamp)), \(JSONB(text: period.schedule.json)))
                """)
        }
    }

    static func timestamp(_ seconds: Int64) -> PostgresTimestamp {
        PostgresTimestamp(microsecondsSinceUnixEpoch: seconds * 1_000_000)
    }

    /// Compares the function with the model for one case, recording the difference.
    func check(_ history: HistoryCase, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let actual = try habitDays(history)
        let expected = history.model.habitDays(history.habits, from: history.from, to: history.to)
        let missing = expected.subtracting(actual).sorted { ($0.day, $0.habit) < ($1.day, $1.habit) }
        let extra = actual.subtracting(expected).sorted { ($0.day, $0.habit) < ($1.day, $1.habit) }
        #expect(missing.isEmpty && extra.isEmpty, """
            habit.habit_days_at disagrees with the model for
            \(history)
            only the model: \(missing)
            only SQL: \(extra)
            """, sourceLocation: sourceLocation)
    }
}

@Suite struct HistoryPropertyTests {
    /// Cases per run: 200 in the suite; HABIT_PROPERTY_ROUNDS for longer runs
    /// (scripts/reliability.sh sets it).
    static let rounds = ProcessInfo.processInfo.environment["HABIT_PROPERTY_ROUNDS"].flatMap(Int.init) ?? 200

    /// For random histories, zones, week starts, completions, skips and days,
    /// habit.habit_days_at answers exactly the model's (habit, day, due, schedule, done,
    /// skipped) set. A failure prints the case, shrunk, and the seed to
    /// replay it with `.fixedSeed(…)`.
    @Test func habitDaysAtMatchesTheModel() async throws {
        try await HistoryDatabase.with { database in
            await propertyCheck(count: Self.rounds, input: HistoryGenerator.generator) { history in
                try database.check(history)
            }
        }
    }
}

/// Hand-picked histories: each is compared with the model AND with the answer written out
/// here, so the model itself is pinned on the cases the issue names.
@Suite struct HistoryCaseTests {
    /// An instant given as a local date and time in `zone` (on days without a DST change).
    static func local(_ day: String, _ hour: Int, _ minute: Int = 0, in zone: String) -> Int64 {
        ZoneClock(zone).midnight(date(day)) + Int64(hour * 3_600 + minute * 60)
    }

    /// Habit 0's days in the window as "YYYY-MM-DD" → due, from the database, after checking
    /// that the database and the model agree on the whole case.
    static func habitZeroDays(_ history: HistoryCase, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Bool] {
        try await HistoryDatabase.with { database in
            try database.check(history, sourceLocation: sourceLocation)
            var days: [String: Bool] = [:]
            for row in try database.habitDays(history) where row.habit == 0 { days[row.day.description] = row.due }
            return days
        }
    }

    /// Habit 0's days in the window as "YYYY-MM-DD" → "due" or "-", then "+done" and
    /// "+skipped", from the database, after checking the whole case against the model.
    static func habitZeroStates(_ history: HistoryCase, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: String] {
        try await HistoryDatabase.with { database in
            try database.check(history, sourceLocation: sourceLocation)
            var days: [String: String] = [:]
            for row in try database.habitDays(history) where row.habit == 0 {
                days[row.day.description] = (row.due ? "due" : "-") + (row.done ? "+done" : "") + (row.skipped ? "+skipped" : "")
            }
            return days
        }
    }

    static func days(_ dates: String...) -> Set<CalendarDate> { Set(dates.map(date)) }

    static func period(_ start: Int64, _ end: Int64?, _ schedule: HistorySchedule = .daily) -> HistoryPeriod {
        HistoryPeriod(start: start, end: end, schedule: schedule)
    }

    @Test func deactivatedTodayShowsOnPastDaysNotToday() async throws {
        let zone = "America/New_York"
        let history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-18"), to: date("2026-03-21"),
                                  habits: [[Self.period(Self.local("2026-03-01", 9, in: zone), Self.local("2026-03-20", 15, in: zone))]])
        #expect(try await Self.habitZeroDays(history) == ["2026-03-18": true, "2026-03-19": true])
    }

    @Test func deactivatedYesterdayShowsOnItsDeactivationDayNotToday() async throws {
        let zone = "America/New_York"
        let history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-18"), to: date("2026-03-21"),
                                  habits: [[Self.period(Self.local("2026-03-01", 9, in: zone), Self.local("2026-03-19", 15, in: zone))]])
        #expect(try await Self.habitZeroDays(history) == ["2026-03-18": true, "2026-03-19": true])
    }

    @Test func reactivatedHabitIsNotOnTheDaysBetween() async throws {
        let zone = "Europe/London"
        let history = HistoryCase(zone: zone, today: date("2026-06-10"), from: date("2026-06-01"), to: date("2026-06-11"), habits: [[
            Self.period(Self.local("2026-06-01", 9, in: zone), Self.local("2026-06-03", 10, in: zone)),
            Self.period(Self.local("2026-06-06", 8, in: zone), nil),
        ]])
        let on = ["01", "02", "03", "06", "07", "08", "09", "10", "11"].map { "2026-06-\($0)" }
        #expect(try await Self.habitZeroDays(history) == Dictionary(uniqueKeysWithValues: on.map { ($0, true) }))
    }

    /// A period starting at 23:30 local is on that date (its first day) and counts
    /// every_n_days from it.
    @Test func periodStartingAt2330LocalIsOnThatDay() async throws {
        let zone = "Asia/Kolkata"
        let history = HistoryCase(zone: zone, today: date("2026-03-10"), from: date("2026-03-04"), to: date("2026-03-08"),
                                  habits: [[Self.period(Self.local("2026-03-05", 23, 30, in: zone), nil, .everyNDays(2))]])
        #expect(try await Self.habitZeroDays(history) == ["2026-03-05": true, "2026-03-06": false, "2026-03-07": true, "2026-03-08": false])
    }

    /// 2026-06-15 11:00 UTC is 06-16 01:00 on Kiritimati (UTC+14) and 06-14 23:00 in
    /// Etc/GMT+12 (UTC−12): the same start makes different first days.
    @Test func sameInstantIsADifferentDayInUTCPlus14AndUTCMinus12() async throws {
        let start = instant("2026-06-15T11:00:00Z").microsecondsSinceUnixEpoch / 1_000_000
        func history(_ zone: String) -> HistoryCase {
            HistoryCase(zone: zone, today: date("2026-06-20"), from: date("2026-06-13"), to: date("2026-06-16"),
                        habits: [[Self.period(start, nil)]])
        }
        #expect(try await Self.habitZeroDays(history("Pacific/Kiritimati")) == ["2026-06-16": true])
        #expect(try await Self.habitZeroDays(history("Etc/GMT+12")) == ["2026-06-14": true, "2026-06-15": true, "2026-06-16": true])
    }

    /// every_n_days counts from the first day of the period in force: the second period
    /// (from 03-05) is due on 03-05 and 03-08, not on 03-07 as counting from 03-01 would give.
    @Test func everyNDaysCountsFromEachPeriodsOwnFirstDay() async throws {
        let zone = "UTC"
        let change = Self.local("2026-03-05", 10, in: zone)
        let history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-01"), to: date("2026-03-10"), habits: [[
            Self.period(Self.local("2026-03-01", 10, in: zone), change, .everyNDays(3)),
            Self.period(change, nil, .everyNDays(3)),
        ]])
        let due = Set(["01", "04", "05", "08"])
        let expected = (1...10).map { String(format: "%02d", $0) }.map { ("2026-03-\($0)", due.contains($0)) }
        #expect(try await Self.habitZeroDays(history) == Dictionary(uniqueKeysWithValues: expected))
    }

    /// Mon/Wed/Fri until Wednesday noon, then Tue/Thu/Sat: Wednesday follows the new schedule
    /// (the latest-starting period), so it is not due; Friday is not due either.
    @Test func weekdaysAcrossAScheduleChangeMidWeek() async throws {
        let zone = "UTC"
        let change = Self.local("2026-03-04", 12, in: zone)
        let history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-02"), to: date("2026-03-08"), habits: [[
            Self.period(Self.local("2026-03-02", 0, in: zone), change, .weekdays([1, 3, 5])),
            Self.period(change, nil, .weekdays([2, 4, 6])),
        ]])
        #expect(try await Self.habitZeroDays(history) == [
            "2026-03-02": true, "2026-03-03": false, "2026-03-04": false, "2026-03-05": true,
            "2026-03-06": false, "2026-03-07": true, "2026-03-08": false,
        ])
    }

    /// Havana repeats 00:00–01:00 on 2025-11-02; "11-02 00:00" is the later reading (05:00Z,
    /// PostgreSQL's rule), so a period that ended at 04:30Z (the first 00:30) is not on 11-02.
    /// On 2026-03-08 midnight does not exist; "03-08 00:00" is the transition instant 05:00Z.
    @Test func repeatedAndSkippedMidnightsInHavana() async throws {
        let zone = "America/Havana"
        let clock = ZoneClock(zone)
        #expect(clock.midnight(date("2025-11-02")) == instant("2025-11-02T05:00:00Z").microsecondsSinceUnixEpoch / 1_000_000)
        #expect(clock.midnight(date("2026-03-08")) == instant("2026-03-08T05:00:00Z").microsecondsSinceUnixEpoch / 1_000_000)
        let seconds = { (text: String) in instant(text).microsecondsSinceUnixEpoch / 1_000_000 }
        let repeated = HistoryCase(zone: zone, today: date("2025-11-10"), from: date("2025-10-31"), to: date("2025-11-03"),
                                   habits: [[Self.period(seconds("2025-10-30T16:00:00Z"), seconds("2025-11-02T04:30:00Z"))]])
        #expect(try await Self.habitZeroDays(repeated) == ["2025-10-31": true, "2025-11-01": true])
        let skipped = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-06"), to: date("2026-03-09"), habits: [
            [Self.period(seconds("2026-03-06T15:00:00Z"), seconds("2026-03-08T05:00:00Z"))],
            [Self.period(seconds("2026-03-08T05:00:00Z"), nil, .everyNDays(2))],
        ])
        #expect(try await Self.habitZeroDays(skipped) == ["2026-03-06": true, "2026-03-07": true])
    }

    /// Days from 03:00 (issue 32, the day's start): a habit created at 01:30 local on the 10th
    /// is on the 9th (the night owl's "today" then), and one deactivated at 02:59 on the 15th
    /// is on through the 14th, not the 15th.
    @Test func dayStartingAt3MovesNightHoursToTheDayBefore() async throws {
        let zone = "Europe/Berlin"
        var history = HistoryCase(zone: zone, today: date("2026-06-20"), from: date("2026-06-08"), to: date("2026-06-16"),
                                  habits: [[Self.period(Self.local("2026-06-10", 1, 30, in: zone), Self.local("2026-06-15", 2, 59, in: zone))]])
        history.dayStart = 3 * 3_600
        let on = ["09", "10", "11", "12", "13", "14"].map { "2026-06-\($0)" }
        #expect(try await Self.habitZeroDays(history) == Dictionary(uniqueKeysWithValues: on.map { ($0, true) }))
        history.dayStart = 0
        let atMidnight = ["10", "11", "12", "13", "14", "15"].map { "2026-06-\($0)" }
        #expect(try await Self.habitZeroDays(history) == Dictionary(uniqueKeysWithValues: atMidnight.map { ($0, true) }))
    }

    /// Helsinki changes its clocks at 03:00 local: on 2026-03-29 03:00 EET jumps to 04:00 EEST
    /// (01:00Z), on 2026-10-25 04:00 EEST goes back to 03:00 EET (01:00Z). With days from 03:00
    /// the 29th begins at the jump (01:00Z: 02:59:59 EET is still the 28th), and the 25th at
    /// 03:00 EEST (00:00Z); the repeated hour 03:00–03:59 EET is the 25th too.
    @Test func dayStartAt3OnHelsinkisDSTChanges() async throws {
        let zone = "Europe/Helsinki"
        let clock = ZoneClock(zone, dayStart: 3 * 3_600)
        let seconds = { (text: String) in instant(text).microsecondsSinceUnixEpoch / 1_000_000 }
        #expect(clock.localDate(seconds("2026-03-29T00:59:59Z")) == date("2026-03-28"))
        #expect(clock.localDate(seconds("2026-03-29T01:00:00Z")) == date("2026-03-29"))
        #expect(clock.localDate(seconds("2026-10-24T23:59:59Z")) == date("2026-10-24"))
        #expect(clock.localDate(seconds("2026-10-25T00:00:00Z")) == date("2026-10-25"))
        #expect(clock.localDate(seconds("2026-10-25T01:30:00Z")) == date("2026-10-25"))
        #expect(clock.dayBegins(date("2026-03-29")) == seconds("2026-03-29T01:00:00Z"))
        var spring = HistoryCase(zone: zone, today: date("2026-04-10"), from: date("2026-03-27"), to: date("2026-03-31"), habits: [
            [Self.period(seconds("2026-03-29T00:59:59Z"), nil)],
            [Self.period(seconds("2026-03-29T01:00:00Z"), nil)],
            [Self.period(seconds("2026-03-27T12:00:00Z"), seconds("2026-03-29T01:00:00Z"))],
        ])
        spring.dayStart = 3 * 3_600
        #expect(try await Self.habitZeroDays(spring) == ["2026-03-28": true, "2026-03-29": true, "2026-03-30": true, "2026-03-31": true])
        var autumn = HistoryCase(zone: zone, today: date("2026-11-10"), from: date("2026-10-23"), to: date("2026-10-27"), habits: [
            [Self.period(seconds("2026-10-25T01:30:00Z"), nil)],
            [Self.period(seconds("2026-10-23T12:00:00Z"), seconds("2026-10-25T00:30:00Z"))],
        ])
        autumn.dayStart = 3 * 3_600
        #expect(try await Self.habitZeroDays(autumn) == ["2026-10-25": true, "2026-10-26": true, "2026-10-27": true])
    }

    /// times_per_week 3, done Mon 2, Tue 3, Wed 4 March 2026 (Monday weeks): the target is met
    /// on Wednesday, which is still due; Thursday to Sunday are not. Sunday 1 March ends the
    /// week before, with nothing done: due.
    @Test func timesPerWeekIsDueUntilTheDayItsTargetIsMet() async throws {
        let zone = "UTC"
        var history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-01"), to: date("2026-03-08"),
                                  habits: [[Self.period(Self.local("2026-02-01", 9, in: zone), nil, .timesPerWeek(3))]])
        history.completions = [Self.days("2026-03-02", "2026-03-03", "2026-03-04")]
        #expect(try await Self.habitZeroStates(history) == [
            "2026-03-01": "due", "2026-03-02": "due+done", "2026-03-03": "due+done", "2026-03-04": "due+done",
            "2026-03-05": "-", "2026-03-06": "-", "2026-03-07": "-", "2026-03-08": "-",
        ])
    }

    /// The same completions for a user whose week starts on Sunday: the week is Sun 1 – Sat 7,
    /// so Sunday 1 is due (nothing done before it that week), Thu 5 – Sat 7 are not, and
    /// Sunday 8 starts a new week: due again.
    @Test func timesPerWeekCountsInTheUsersSundayWeek() async throws {
        let zone = "UTC"
        var history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-01"), to: date("2026-03-08"),
                                  habits: [[Self.period(Self.local("2026-02-01", 9, in: zone), nil, .timesPerWeek(3))]])
        history.completions = [Self.days("2026-03-02", "2026-03-03", "2026-03-04")]
        history.weekStart = 7
        #expect(try await Self.habitZeroStates(history) == [
            "2026-03-01": "due", "2026-03-02": "due+done", "2026-03-03": "due+done", "2026-03-04": "due+done",
            "2026-03-05": "-", "2026-03-06": "-", "2026-03-07": "-", "2026-03-08": "due",
        ])
    }

    /// A skipped day stays on and keeps its due flag: a daily habit skipped on Wednesday is
    /// due and skipped; a Mon/Fri habit skipped on Tuesday is skipped but not due.
    @Test func skippedDaysKeepTheirDueFlag() async throws {
        let zone = "Europe/London"
        var history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-02"), to: date("2026-03-06"), habits: [
            [Self.period(Self.local("2026-02-01", 9, in: zone), nil)],
            [Self.period(Self.local("2026-02-01", 9, in: zone), nil, .weekdays([1, 5]))],
        ])
        history.skips = [Self.days("2026-03-04"), Self.days("2026-03-03")]
        history.completions = [Self.days("2026-03-02"), Self.days("2026-03-06")]
        #expect(try await Self.habitZeroStates(history) == [
            "2026-03-02": "due+done", "2026-03-03": "due", "2026-03-04": "due+skipped", "2026-03-05": "due", "2026-03-06": "due",
        ])
        var second = history
        second.habits.swapAt(0, 1); second.skips.swapAt(0, 1); second.completions.swapAt(0, 1)
        #expect(try await Self.habitZeroStates(second) == [
            "2026-03-02": "due", "2026-03-03": "-+skipped", "2026-03-04": "-", "2026-03-05": "-", "2026-03-06": "due+done",
        ])
    }

    /// Weekdays Mon/Fri across the end of January 2026: Fri 30 Jan and Mon 2 Feb are due, the
    /// days between are not (ISO weekdays, not days of the month).
    @Test func weekdaysAcrossAMonthEnd() async throws {
        let zone = "Pacific/Kiritimati"
        let history = HistoryCase(zone: zone, today: date("2026-02-20"), from: date("2026-01-28"), to: date("2026-02-03"),
                                  habits: [[Self.period(Self.local("2026-01-05", 9, in: zone), nil, .weekdays([1, 5]))]])
        #expect(try await Self.habitZeroStates(history) == [
            "2026-01-28": "-", "2026-01-29": "-", "2026-01-30": "due", "2026-01-31": "-",
            "2026-02-01": "-", "2026-02-02": "due", "2026-02-03": "-",
        ])
    }

    /// times_per_week 2 until Wednesday noon, then every 2 days: Mon 2 and Tue 3 are due
    /// (fewer than 2 done before them), Wednesday follows the new schedule, counted from its
    /// own first day (due 4, 6, 8); Thursday's completion is done on a day not due.
    @Test func everyNDaysAfterAChangeFromTimesPerWeek() async throws {
        let zone = "UTC"
        let change = Self.local("2026-03-04", 12, in: zone)
        var history = HistoryCase(zone: zone, today: date("2026-03-20"), from: date("2026-03-02"), to: date("2026-03-08"), habits: [[
            Self.period(Self.local("2026-02-01", 9, in: zone), change, .timesPerWeek(2)),
            Self.period(change, nil, .everyNDays(2)),
        ]])
        history.completions = [Self.days("2026-03-02", "2026-03-05")]
        #expect(try await Self.habitZeroStates(history) == [
            "2026-03-02": "due+done", "2026-03-03": "due", "2026-03-04": "due", "2026-03-05": "-+done",
            "2026-03-06": "due", "2026-03-07": "-", "2026-03-08": "due",
        ])
    }
}

/// The model's local dates and midnights are PostgreSQL's, on every DST transition day of the
/// generator's zones from 2017 to 2026 (Foundation's and PostgreSQL's zone data agree there).
@Suite struct HistoryClockTests {
    @Test func midnightsAndLocalDatesAreThoseOfPostgreSQL() throws {
        try TestDatabase.with { database in
            let connection = try database.connect()
            var checked = 0
            for zone in HistoryGenerator.zones {
                let clock = ZoneClock(zone)
                var after = Date(timeIntervalSince1970: Double(ZoneClock("UTC").midnight(HistoryGenerator.firstAnchor)))
                let end = Date(timeIntervalSince1970: Double(ZoneClock("UTC").midnight(HistoryGenerator.lastAnchor)))
                // Ordinary days too (Kolkata, UTC, Kiritimati have no transitions).
                var days = [date("2020-02-29"), date("2026-01-01"), date("2026-07-15")]
                var instants: [Int64] = []
                while let next = clock.zone.nextDaylightSavingTimeTransition(after: after), next < end {
                    let transition = Int64(next.timeIntervalSince1970)
                    days += (-1...1).map { clock.localDate(transition).adding(days: $0) }
                    instants += [transition - 1, transition, transition + 1]
                    after = next
                }
                for day in days {
                    let midnight = try connection.queryOne("SELECT (\(day)::timestamp AT TIME ZONE \(zone))")
                        .decode(PostgresTimestamp.self, at: 0)
                    #expect(midnight.microsecondsSinceUnixEpoch == clock.midnight(day) * 1_000_000, "\(day) 00:00 in \(zone)")
                    instants += [clock.midnight(day) - 1, clock.midnight(day), clock.midnight(day) + 1]
                }
                for second in instants {
                    let local = try connection.queryOne("SELECT habit.local_date(\(HistoryDatabase.timestamp(second)), \(zone))")
                        .decode(CalendarDate.self, at: 0)
                    #expect(local == clock.localDate(second), "\(HistoryDatabase.timestamp(second)) in \(zone)")
                    checked += 1
                }
            }
            #expect(checked > 1_000)
        }
    }
}
