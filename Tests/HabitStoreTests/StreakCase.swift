import Foundation
import PostgresClient
import TestSupport

// Random histories for the streak property tests, and writing them into a database. Shared by
// HabitStoreTests (StreakPropertyTests: the SQL functions) and HabitWorkerTests (a symlink:
// the worker's habits.stats), so it needs nothing but HistoryModel.swift, StreakModel.swift,
// Foundation, PostgresClient and TestSupport.

/// One generated user: a zone, the week start, each habit's periods (sorted, never
/// overlapping, at most the last one open), current schedule (habit_templates.schedule) and
/// sort order, completions and skips (never both on a date, on any date: a backfill), the
/// reference dates to ask about and a calendar range.
struct StreakCase: Sendable, CustomStringConvertible {
    var zone: String
    /// The zone's today when the case was generated (the checks use the database's today).
    var today: CalendarDate
    var weekStart = 1
    /// Seconds after local midnight at which the user's days begin (profiles.day_starts_at;
    /// issue 32): streaks, rates and the calendar follow the day's start.
    var dayStart: Int64 = 0
    var habits: [[HistoryPeriod]]
    var schedules: [HistorySchedule]
    /// habit_templates.sort_order (nil = NULL): the order day.get and habit_stats list habits in.
    var sortOrders: [Int?]
    var completions: [Set<CalendarDate>]
    var skips: [Set<CalendarDate>]
    /// Reference dates R passed as p_date (the checks also ask with p_date NULL).
    var references: [CalendarDate]
    /// The habit asked about by id (habit_stats with p_template, stats_calendar with it).
    var picked: Int
    var calendarFrom: CalendarDate
    var calendarTo: CalendarDate
    /// The order and grouping in which the completion and skip rows are written (the row triggers
    /// apply a few rows one by one and turn more than 8 into one rebuild at commit): seeded, so a
    /// case is written the same way each time (iterating a Set would not be: Swift seeds its hashing per process).
    var writeSeed: UInt64 = 0

    /// The model with the database's today of the zone.
    func model(today: CalendarDate) -> StreakModel {
        StreakModel(history: HistoryModel(clock: ZoneClock(zone, dayStart: dayStart), today: today, weekStart: weekStart,
                                          completions: completions, skips: skips),
                    habits: habits, schedules: schedules)
    }

    /// Smaller cases for the shrinker, each strictly smaller by (habits + periods + non-daily
    /// schedules + completions + skips + references + calendar days + a Sunday week start).
    var smaller: [StreakCase] {
        var result: [StreakCase] = []
        if habits.count > 1 {
            for index in habits.indices {
                var copy = self
                copy.habits.remove(at: index); copy.schedules.remove(at: index); copy.sortOrders.remove(at: index)
                copy.completions.remove(at: index); copy.skips.remove(at: index)
                copy.picked = min(picked, copy.habits.count - 1)
                result.append(copy)
            }
        }
        if references.count > 1 {
            for index in references.indices { var copy = self; copy.references.remove(at: index); result.append(copy) }
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
            if schedules[habit] != .daily { var copy = self; copy.schedules[habit] = .daily; result.append(copy) }
        }
        if calendarFrom < calendarTo {
            var later = self; later.calendarFrom = calendarFrom.adding(days: 1); result.append(later)
            var earlier = self; earlier.calendarTo = calendarTo.adding(days: -1); result.append(earlier)
        }
        return result
    }

    /// The day start as profiles.day_starts_at takes it, "HH:MM".
    var dayStartText: String { String(format: "%02lld:%02lld", dayStart / 3_600, dayStart / 60 % 60) }

    /// The history as a person reads it: instants in UTC and in the zone.
    var description: String {
        let clock = ZoneClock(zone, dayStart: dayStart)
        func show(_ instant: Int64) -> String {
            let offset = clock.offset(at: instant)
            let wall = instant + offset
            let second = ((wall % 86_400) + 86_400) % 86_400
            let local = String(format: "%02lld:%02lld:%02lld", second / 3600, second / 60 % 60, second % 60)
            return "\(instant)s (\(clock.localDate(instant)) \(local) local, offset \(offset)s)"
        }
        var lines = ["zone \(zone), days from \(dayStartText), generated on its \(today), weeks from ISO weekday \(weekStart), "
                     + "R \(references.map(\.description).joined(separator: " ")), picked habit \(picked), calendar \(calendarFrom)…\(calendarTo), "
                     + "rows written in the order of seed \(writeSeed)\(writeSeed % 3 == 0 ? ", periods after them" : "")"]
        for (index, periods) in habits.enumerated() {
            lines.append("  habit \(index): schedule \(schedules[index]), sort_order \(sortOrders[index].map(String.init) ?? "NULL")"
                         + (periods.isEmpty ? ", no periods" : ""))
            for period in periods {
                lines.append("    [\(show(period.start)), \(period.end.map(show) ?? "open")) \(period.schedule)")
            }
            let done = completions[index].sorted(), skipped = skips[index].sorted()
            if !done.isEmpty { lines.append("    done \(done.map(\.description).joined(separator: " "))") }
            if !skipped.isEmpty { lines.append("    skipped \(skipped.map(\.description).joined(separator: " "))") }
        }
        return lines.joined(separator: "\n")
    }

    /// Writes the case for a new user as a superuser (a backfill: completions and skips on any
    /// date; periods directly, replacing the one creating a habit opens) and returns the user
    /// and the habits' ids by index.
    func write(on admin: Connection) throws -> (user: UUID, ids: [UUID]) {
        let user = UUID()
        var ids: [UUID] = []
        try admin.withTransaction { connection in
            try connection.execute("SET LOCAL habit.backfill = 'on'")
            try connection.execute("""
                INSERT INTO public.profiles (user_id, timezone, week_start, day_starts_at)
                VALUES (\(user), \(zone), \(weekStart == 7 ? "sunday" : "monday"), \(dayStartText)::time)
                """)
            for (index, periods) in habits.enumerated() {
                // The seed's columns stay as created: the functions read only the periods.
                let id = try connection.queryOne("""
                    INSERT INTO public.habit_templates (user_id, name, schedule, sort_order)
                    VALUES (\(user), \("habit \(index)"), \(JSONB(text: schedules[index].json)), \(sortOrders[index].map(Int32.init)))
                    RETURNING id
                    """).decode(UUID.self, at: 0)
                ids.append(id)
            }
            // The periods replace the one creating a habit opened; written before the rows, or
            // (one case in three) after them, as when an admin backfills and then edits history.
            func writePeriods() throws {
                for (index, periods) in habits.enumerated() {
                    try connection.execute("DELETE FROM public.habit_periods WHERE template_id = \(ids[index])")
                    for period in periods {
                        try connection.execute("""
                            INSERT INTO public.habit_periods (user_id, template_id, started_at, ended_at, schedule)
                            VALUES (\(user), \(ids[index]), \(Self.timestamp(period.start)), \(period.end.map(Self.timestamp)),
                                    \(JSONB(text: period.schedule.json)))
                            """)
                    }
                }
            }
            let periodsLast = writeSeed % 3 == 0
            if !periodsLast { try writePeriods() }
            // Completion and skip rows of every habit in a seeded order, 1–4 rows of one table
            // per statement.
            var rows: [(done: Bool, habit: Int, day: CalendarDate)] = []
            for index in habits.indices {
                rows += completions[index].sorted().map { (true, index, $0) } + skips[index].sorted().map { (false, index, $0) }
            }
            var random = SeededGenerator(seed: writeSeed)
            rows.shuffle(using: &random)
            var next = 0
            while next < rows.count {
                let size = Int.random(in: 1...4, using: &random)
                var end = next + 1
                while end < rows.count, end - next < size, rows[end].done == rows[next].done { end += 1 }
                let chunk = rows[next..<end]
                let templates = chunk.map { ids[$0.habit].uuidString }.joined(separator: ",")
                let days = chunk.map(\.day.description).joined(separator: ",")
                if rows[next].done {
                    try connection.execute("""
                        INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                        SELECT \(user), t::uuid, d::date FROM unnest(string_to_array(\(templates), ','), string_to_array(\(days), ',')) AS x(t, d)
                        """)
                } else {
                    try connection.execute("""
                        INSERT INTO public.habit_skips (user_id, template_id, skipped_date)
                        SELECT \(user), t::uuid, d::date FROM unnest(string_to_array(\(templates), ','), string_to_array(\(days), ',')) AS x(t, d)
                        """)
                }
                next = end
            }
            if periodsLast { try writePeriods() }
        }
        return (user, ids)
    }

    static func timestamp(_ seconds: Int64) -> PostgresTimestamp {
        PostgresTimestamp(microsecondsSinceUnixEpoch: seconds * 1_000_000)
    }

    /// Habit indices in day.get's order: sort_order NULLS LAST, then created_at (one
    /// transaction: equal), then id (uuid order = the lowercase text's order).
    func order(ids: [UUID]) -> [Int] {
        habits.indices.sorted { a, b in
            let left = sortOrders[a] ?? Int.max, right = sortOrders[b] ?? Int.max
            if left != right { return left < right }
            return ids[a].uuidString.lowercased() < ids[b].uuidString.lowercased()
        }
    }
}

/// Random histories around the REAL today of a zone (the functions use it): 1–3 habits of 0–4
/// periods whose boundaries lie within three weeks of an anchor day (often a DST transition
/// day of the zone, or today), at local midnights, a second either side, 23:30 local, a DST
/// transition instant or anywhere in a day; schedule changes (a period starting the instant
/// the previous one ends) between all four shapes; each habit done on a share of its days
/// (so runs form), skipped on some, never both.
enum StreakGenerator {
    /// UTC±12/14, DST at 02:00 / 01:00, a 30-minute DST change, DST that skips or repeats
    /// midnight (Havana, Beirut), a half-hour offset without DST.
    /// Helsinki changes its clocks at 03:00, the day start night owls pick.
    static let zones = ["Pacific/Kiritimati", "Etc/GMT+12", "America/New_York", "Europe/London", "Australia/Lord_Howe",
                        "Asia/Kolkata", "UTC", "America/Havana", "Asia/Beirut", "Europe/Helsinki"]

    static func generate<R: RandomNumberGenerator>(using rng: inout R, now: Date = Date()) -> StreakCase {
        let zone = zones.randomElement(using: &rng)!
        let clock = ZoneClock(zone, dayStart: ZoneClock.randomDayStart(using: &rng))
        let today = clock.localDate(Int64(now.timeIntervalSince1970))
        var anchor: CalendarDate
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: anchor = today.adding(days: Int.random(in: -4...1, using: &rng))
        default: anchor = today.adding(days: Int.random(in: -100...(-5), using: &rng))
        }
        // Half the cases around one of the zone's DST transitions of the last 200 days or the
        // next 30, when it has one.
        var transition: Int64?
        if let next = clock.zone.nextDaylightSavingTimeTransition(after: Date(timeIntervalSince1970: Double(clock.midnight(today.adding(days: -200))))) {
            let instant = Int64(next.timeIntervalSince1970)
            var candidate: Int64? = instant
            // The last transition before today + 30.
            var after = next
            while let later = clock.zone.nextDaylightSavingTimeTransition(after: after), clock.localDate(Int64(later.timeIntervalSince1970)) < today.adding(days: 30) {
                candidate = Int64(later.timeIntervalSince1970); after = later
            }
            if Bool.random(using: &rng) { candidate = instant }
            if let chosen = candidate, clock.localDate(chosen) < today.adding(days: 30) {
                transition = chosen
                if Bool.random(using: &rng) { anchor = clock.localDate(chosen) }
            }
        }

        func boundary() -> Int64 {
            let day = anchor.adding(days: Int.random(in: -20...10, using: &rng))
            switch Int.random(in: 0..<8, using: &rng) {
            case 0: return clock.dayBegins(day)
            case 1: return clock.dayBegins(day) - 1
            case 2: return clock.dayBegins(day) + 1
            case 3: return clock.dayBegins(day.adding(days: 1)) - 1_800
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
            case 2: return .everyNDays(Int.random(in: 1...4, using: &rng))
            case 3:
                // n times in m days (sql/0034): short blocks, so that the cases cross many.
                let days = Int.random(in: 2...9, using: &rng)
                return .timesInDays(times: Int.random(in: 1..<days, using: &rng), days: days)
            default: return .timesPerWeek(Int.random(in: 1...7, using: &rng))
            }
        }

        var habits: [[HistoryPeriod]] = []
        var schedules: [HistorySchedule] = []
        for _ in 0..<Int.random(in: 1...3, using: &rng) {
            let count = Int.random(in: 0..<8, using: &rng) == 0 ? 0 : Int.random(in: 1...4, using: &rng)
            var instants = Set<Int64>()
            var attempts = 0
            while instants.count < 2 * count, attempts < 1_000 { instants.insert(boundary()); attempts += 1 }
            let sorted = instants.sorted()
            var periods: [HistoryPeriod] = []
            for index in 0..<sorted.count / 2 {
                var start = sorted[2 * index]
                // A schedule change: the next period starts the instant the previous one ends.
                if let previous = periods.last?.end, Int.random(in: 0..<3, using: &rng) == 0 { start = previous }
                periods.append(HistoryPeriod(start: start, end: sorted[2 * index + 1], schedule: schedule()))
            }
            if !periods.isEmpty, Int.random(in: 0..<3, using: &rng) > 0 { periods[periods.count - 1].end = nil }
            habits.append(periods)
            // While active the open period's schedule; while inactive the next activation's.
            if let last = periods.last, last.end == nil || Bool.random(using: &rng) {
                schedules.append(last.schedule)
            } else {
                schedules.append(schedule())
            }
        }

        let boundaries = habits.flatMap { $0.flatMap { [$0.start] + ($0.end.map { [$0] } ?? []) } }
        let firstDay = boundaries.map(clock.localDate).min() ?? anchor
        let lastDay = max(today, anchor).adding(days: 12)
        var completions: [Set<CalendarDate>] = []
        var skips: [Set<CalendarDate>] = []
        for _ in habits {
            // Each habit its own diligence, so that runs of several slots form.
            let share = [0.3, 0.6, 0.8, 0.95].randomElement(using: &rng)!
            let skipShare = [0.0, 0.08, 0.2].randomElement(using: &rng)!
            var done = Set<CalendarDate>(), skipped = Set<CalendarDate>()
            var day = firstDay.adding(days: -7)
            while day <= lastDay {
                let draw = Double.random(in: 0..<1, using: &rng)
                if draw < skipShare { skipped.insert(day) } else if draw < skipShare + share * (1 - skipShare) { done.insert(day) }
                day = day.adding(days: 1)
            }
            completions.append(done)
            skips.append(skipped)
        }

        // Reference dates: today, a day in the history, before the first period, in the
        // future, a completion's date (inside a run), a boundary's date or the day after.
        var references: [CalendarDate] = []
        for _ in 0..<Int.random(in: 2...3, using: &rng) {
            switch Int.random(in: 0..<6, using: &rng) {
            case 0: references.append(today)
            case 1: references.append(firstDay.adding(days: Int.random(in: 0...max(0, firstDay.days(until: lastDay)), using: &rng)))
            case 2: references.append(firstDay.adding(days: -Int.random(in: 1...10, using: &rng)))
            case 3: references.append(today.adding(days: Int.random(in: 1...40, using: &rng)))
            case 4:
                let all = completions.flatMap { $0 }.sorted()
                references.append(all.randomElement(using: &rng) ?? today)
            default:
                let pick = boundaries.randomElement(using: &rng).map(clock.localDate) ?? today
                references.append(pick.adding(days: Int.random(in: 0...1, using: &rng)))
            }
        }
        let calendarFrom = firstDay.adding(days: Int.random(in: -5...15, using: &rng))
        let calendarTo = calendarFrom.adding(days: Int.random(in: 0...45, using: &rng))
        return StreakCase(zone: zone, today: today, weekStart: Bool.random(using: &rng) ? 1 : 7, dayStart: clock.dayStart, habits: habits,
                          schedules: schedules,
                          sortOrders: habits.map { _ in Int.random(in: 0..<4, using: &rng) == 0 ? nil : Int.random(in: 0...2, using: &rng) },
                          completions: completions, skips: skips, references: references,
                          picked: Int.random(in: 0..<habits.count, using: &rng),
                          calendarFrom: calendarFrom, calendarTo: calendarTo, writeSeed: UInt64.random(in: 0...UInt64.max, using: &rng))
    }
}
