import Foundation
import HabitReports

/// The data of the pictures kept as golden PNGs (Tests/Fixtures/pictures): what
/// `habit report calendar|weekly` would read for a user in Los Angeles on Wednesday
/// 2026-11-25, made up but shaped like the real thing, and fixed (no clock, no randomness
/// that changes between runs).
enum PictureFixtures {
    static let user = "7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a"
    static let zone = "America/Los_Angeles"
    static let today = date("2026-11-25")
    static let habits = ["Morning Run", "Read 20 pages", "Drink 2 L of Water"]

    /// A small deterministic generator (64-bit LCG, Knuth's constants): the same days every run.
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    /// habit.stats_calendar's level: 0 when nothing done or nothing left due, else ceil(4 × done ÷ (due − skipped)).
    static func level(due: Int, done: Int, skipped: Int) -> Int {
        let counted = due - skipped
        guard done > 0, counted > 0 else { return 0 }
        return min(4, max(1, (4 * done + counted - 1) / counted))
    }

    /// The days habit.stats_calendar gives for the user over [from, to] with the real today:
    /// the habits start on 2026-10-05 (nothing due before); "Read 20 pages" is due on weekdays
    /// only; 2026-10-24 and 2026-11-14 every due habit skipped; 2026-12-24…26 skipped ahead
    /// (a planned holiday). Days after today are due and not done — what the function answers
    /// for them, and what the picture must not show as missed. `onlyFirstHabit`: `--habit`
    /// of "Morning Run".
    static func calendarDays(from: ReportDate, to: ReportDate, onlyFirstHabit: Bool = false) -> [CalendarHeatmap.Day] {
        var generator = Generator(state: 30)
        var days: [CalendarHeatmap.Day] = []
        var day = from
        let skippedAll: Set<String> = ["2026-10-24", "2026-11-14", "2026-12-24", "2026-12-25", "2026-12-26"]
        while day <= to {
            var due = 0
            if day >= date("2026-10-05") {
                due = onlyFirstHabit ? 1 : (day.isoWeekday <= 5 ? 3 : 2)
            }
            let skipped = skippedAll.contains(day.description) ? due : 0
            var done = 0
            if day <= today && due > skipped {
                // Mostly done, some days half, a few missed outright.
                let roll = generator.next(100)
                done = roll < 12 ? 0 : (roll < 40 ? generator.next(due - skipped + 1) : due - skipped)
                if day == today { done = min(done, 1) }
            }
            days.append(.init(date: day, due: due, done: done, skipped: skipped,
                              level: level(due: due, done: done, skipped: skipped)))
            day = day.adding(days: 1)
        }
        return days
    }

    /// Twelve Monday weeks from 2026-09-07; the last, 2026-11-23, is today's week.
    /// `soFar`: its rates over the days up to today (Monday to Wednesday: 21 habit-days due,
    /// 12 done by the median user: 0.5714); otherwise as the batch stores it, the whole week's
    /// due days counted, the four still to come as not done (12 of 32: 0.375).
    static func weeklyRows(soFar: Bool) -> [(start: ReportDate, lower: Double?, median: Double?, upper: Double?, users: Int)] {
        var generator = Generator(state: 8)
        var rows: [(start: ReportDate, lower: Double?, median: Double?, upper: Double?, users: Int)] = []
        for index in 0..<12 {
            let start = date("2026-09-07").adding(days: 7 * index)
            if index == 11 {
                rows.append(soFar ? (start, 0.4286, 0.5714, 0.8095, 206) : (start, 0.2813, 0.375, 0.5313, 214))
                continue
            }
            let median = 0.58 + Double(generator.next(18)) / 100
            rows.append((start, median - 0.12 - Double(generator.next(6)) / 100, median,
                         min(1, median + 0.1 + Double(generator.next(6)) / 100), 180 + 4 * index + generator.next(12)))
        }
        return rows
    }
}
