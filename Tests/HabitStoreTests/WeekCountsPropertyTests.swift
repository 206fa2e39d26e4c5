import Foundation
import HabitStore
import PostgresClient
import PropertyBased
import TestSupport
import Testing

// week.counts and the weekly batch against the model of HistoryModel.swift (issue 30, item 7):
// a day's `skipped` counts the habits skipped on a day they are due, so it never exceeds
// `due`. A skip on a day the schedule does not ask for (a holiday's skips.set_range skips
// every habit on, due or not; a times_per_week day after the target was met) excuses nothing
// and is counted nowhere, as in habit.stats_calendar.

/// week.counts' numbers for one day, or the batch's for one week.
struct WeekCountsRow: Equatable, CustomStringConvertible {
    var completed = 0
    var active = 0
    var due = 0
    var skipped = 0

    var description: String { "completed \(completed) active \(active) due \(due) skipped \(skipped)" }
}

/// The batch's row for one week (habit.weekly_counts), as the model computes it.
struct WeeklyCountsRow: Equatable, CustomStringConvertible {
    var completions = 0
    var daysWithCompletion = 0
    var active = 0
    var due = 0
    var skipped = 0
    /// round(done on due days ÷ (due − skipped), 4) as PostgreSQL prints it; "" when NULL.
    var rate = ""

    var description: String {
        "completions \(completions) days \(daysWithCompletion) active \(active) due \(due) skipped \(skipped) rate \(rate.isEmpty ? "null" : rate)"
    }
}

extension HistoryModel {
    /// One day of week.counts: the habits on `day` (active), of those the done ones
    /// (completed), the due ones (due), and the due ones that are skipped (skipped).
    func dayCounts(_ habits: [[HistoryPeriod]], on day: CalendarDate) -> WeekCountsRow {
        var row = WeekCountsRow()
        for habitDay in habitDays(habits, from: day, to: day) {
            row.active += 1
            if habitDay.done { row.completed += 1 }
            if habitDay.due { row.due += 1 }
            if habitDay.due && habitDay.skipped { row.skipped += 1 }
        }
        return row
    }

    /// One week of habit.weekly_counts (days `first` … `first` + 6): every completion row of
    /// the week (also of habits not on their day), the dates with one, and per habit-day on:
    /// active, due, skipped due; the rate is done ÷ (due − skipped) over due habit-days.
    func weeklyCounts(_ habits: [[HistoryPeriod]], week first: CalendarDate) -> WeeklyCountsRow {
        let last = first.adding(days: 6)
        var row = WeeklyCountsRow()
        var dates = Set<CalendarDate>()
        for index in habits.indices {
            let done = completions(of: index).filter { $0 >= first && $0 <= last }
            row.completions += done.count
            dates.formUnion(done)
        }
        row.daysWithCompletion = dates.count
        var doneDue = 0
        for habitDay in habitDays(habits, from: first, to: last) {
            row.active += 1
            guard habitDay.due else { continue }
            row.due += 1
            if habitDay.skipped { row.skipped += 1 }
            if habitDay.done { doneDue += 1 }
        }
        row.rate = Self.rate(doneDue, row.due - row.skipped)
        return row
    }

    /// `round(n ÷ d, 4)` as numeric prints it (half away from zero), in integers.
    static func rate(_ numerator: Int, _ denominator: Int) -> String {
        guard denominator > 0 else { return "" }
        let scaled = (2 * numerator * 10_000 + denominator) / (2 * denominator)
        return "\(scaled / 10_000)." + String(String(scaled % 10_000 + 10_000).dropFirst())
    }
}

@Suite struct WeekCountsPropertyTests {
    static let rounds = max(1, HistoryPropertyTests.rounds / 2)

    /// For random histories (HistoryGenerator: zones with DST, every schedule, schedule changes,
    /// completions and skips on any day, the habit on or not), with today the real one (both
    /// read now()): week.counts (the user's weeks) equals the model day by day, and
    /// habit.weekly_counts (both conventions) week by week; skipped never exceeds due.
    @Test func weekCountsAndTheBatchMatchTheModel() async throws {
        try await HistoryDatabase.with { database in
            let worker = try database.database.connect(user: "habit_worker")
            defer { worker.close() }
            let repository = HabitRepository(connection: worker)
            await propertyCheck(count: Self.rounds, input: HistoryGenerator.generator) { generated in
                try Self.check(generated, database: database, repository: repository)
            }
        }
    }

    /// Compares one case; the generated "today" is replaced by the real one in the case's zone
    /// and day start.
    static func check(_ generated: HistoryCase, database: HistoryDatabase, repository: HabitRepository,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        var history = generated
        // The user's today: the case's day start counts (between midnight and a 03:00 start the
        // calendar date is already tomorrow's; the database's today is not).
        history.today = try database.admin.queryOne("SELECT habit.local_day(now(), \(history.zone), \(history.dayStartText)::time)")
            .decode(CalendarDate.self, at: 0)
        let model = history.model
        let (user, _) = try database.write(history)
        let userWeeks: WeekStart = history.weekStart == 7 ? .sunday : .monday
        var differences: [String] = []

        var week = userWeeks.weekStart(containing: history.from)
        while week <= history.to {
            let days = try repository.weekCounts(user: user, containing: week)
            for (offset, day) in days.enumerated() {
                let actual = WeekCountsRow(completed: day.completed, active: day.active, due: day.due, skipped: day.skipped)
                let expected = model.dayCounts(history.habits, on: week.adding(days: offset))
                #expect(day.date == week.adding(days: offset), sourceLocation: sourceLocation)
                #expect(actual.skipped <= actual.due, "week.counts \(day.date): \(actual)", sourceLocation: sourceLocation)
                if actual != expected { differences.append("week.counts \(day.date): \(actual), model \(expected)") }
            }
            week = week.adding(days: 7)
        }

        for convention in WeekStart.allCases {
            let rows = try database.admin.query("""
                SELECT week_start, completions, days_with_completion, active_habit_days, due_habit_days, skipped_habit_days,
                       coalesce(completion_rate::text, '')
                FROM habit.weekly_counts(\(history.from), \(history.to), \(convention.rawValue), \(user))
                """)
            var expectedWeeks = 0
            var first = convention.weekStart(containing: history.from)
            while first <= history.to { expectedWeeks += 1; first = first.adding(days: 7) }
            #expect(rows.count == expectedWeeks, sourceLocation: sourceLocation)
            for row in rows {
                let start = try row.decode(CalendarDate.self, at: 0)
                let actual = WeeklyCountsRow(completions: try row.decode(Int.self, at: 1), daysWithCompletion: try row.decode(Int.self, at: 2),
                                             active: try row.decode(Int.self, at: 3), due: try row.decode(Int.self, at: 4),
                                             skipped: try row.decode(Int.self, at: 5), rate: try row.decode(String.self, at: 6))
                let expected = model.weeklyCounts(history.habits, week: start)
                #expect(actual.skipped <= actual.due, "weekly_counts \(convention) \(start): \(actual)", sourceLocation: sourceLocation)
                if actual != expected { differences.append("weekly_counts \(convention) \(start): \(actual), model \(expected)") }
            }
        }
        #expect(differences.isEmpty, """
            week.counts or habit.weekly_counts disagree with the model (real today \(history.today)) for
            \(history)
            \(differences.joined(separator: "\n"))
            """, sourceLocation: sourceLocation)
    }

    /// Issue 30's report, pinned: three habits on a Tuesday, one due (daily), two not (Monday
    /// only, Wednesday only), all three skipped by a holiday: due 1, skipped 1 (it was 3).
    @Test func aHolidayCountsOnlyTheDueHabitsAsSkipped() async throws {
        let zone = "UTC"
        let start = HistoryCaseTests.local("2025-01-06", 8, in: zone) // a Monday
        let holiday: Set<CalendarDate> = [date("2025-01-07"), date("2025-01-08")]
        let history = HistoryCase(zone: zone, today: date("2025-02-01"), from: date("2025-01-06"), to: date("2025-01-12"), habits: [
            [HistoryCaseTests.period(start, nil, .daily)],
            [HistoryCaseTests.period(start, nil, .weekdays([1]))],
            [HistoryCaseTests.period(start, nil, .weekdays([3]))],
        ], completions: [[], [], []], skips: [holiday, holiday, holiday])
        try await HistoryDatabase.with { database in
            let worker = try database.database.connect(user: "habit_worker")
            defer { worker.close() }
            let repository = HabitRepository(connection: worker)
            try Self.check(history, database: database, repository: repository)
            let (user, _) = try database.write(history)
            let days = try repository.weekCounts(user: user, containing: date("2025-01-08"))
            #expect(days.map { "\($0.date) \($0.due) \($0.skipped)" } == [
                "2025-01-06 2 0", "2025-01-07 1 1", "2025-01-08 2 2", "2025-01-09 1 0",
                "2025-01-10 1 0", "2025-01-11 1 0", "2025-01-12 1 0",
            ])
        }
    }
}
