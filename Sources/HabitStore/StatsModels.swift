import Foundation
import PostgresClient

// Streaks, rates and the calendar (issue 17): the values `habit.habit_stats`,
// `habit.current_streaks` and `habit.stats_calendar` (sql/functions/streaks.sql) return. The definitions are
// the database's, written out in docs/protocol.md ("Streaks, rates and the calendar").

/// What a habit's streaks and rates count in: days, or the user's weeks (a habit whose current
/// schedule is times_per_week).
public enum StatsUnit: String, Sendable, CaseIterable {
    case days, weeks
}

/// The run of kept slots that reaches the reference date: `length` 0 and `start` nil when none.
public struct CurrentStreak: Sendable, Equatable {
    public var length: Int
    /// Its first kept day (for weeks: the first day of its first week).
    public var start: CalendarDate?

    public init(length: Int, start: CalendarDate?) {
        self.length = length
        self.start = start
    }

    public static let zero = CurrentStreak(length: 0, start: nil)
}

/// The longest run up to the reference date (the earliest on ties): `length` 0 and both days
/// nil when there is no kept slot.
public struct LongestStreak: Sendable, Equatable {
    public var length: Int
    public var start: CalendarDate?
    /// Its last kept day (for weeks: the last day of its last week).
    public var end: CalendarDate?

    public init(length: Int, start: CalendarDate?, end: CalendarDate?) {
        self.length = length
        self.start = start
        self.end = end
    }
}

/// One habit's streaks, rates and totals at a reference date (`habit.habit_stats`).
public struct HabitStats: Sendable, Equatable {
    public var id: UUID
    public var unit: StatsUnit
    public var currentStreak: CurrentStreak
    public var longestStreak: LongestStreak
    /// kept ÷ (due − excused) over the 7, 30, 365 days ending at the reference date and over
    /// all time (weeks: kept weeks ÷ non-neutral weeks); nil when the divisor is 0.
    public var rate7: Double?
    public var rate30: Double?
    public var rate365: Double?
    public var rateAll: Double?
    /// Completions dated on or before the reference date (any day).
    public var totalDone: Int
    public var lastDone: CalendarDate?
    /// A habit counted from check-ins (measurable, or a target other than 1): its days' values
    /// summed; nil for the others.
    public var values: ValueTotals?
    /// Loop Habit Tracker's habit score at the reference date, four decimals as Loop prints it
    /// ("0.8123"; sql/functions/scores.sql); nil unless asked for.
    public var score: String?

    public init(id: UUID, unit: StatsUnit, currentStreak: CurrentStreak, longestStreak: LongestStreak,
                rate7: Double?, rate30: Double?, rate365: Double?, rateAll: Double?, totalDone: Int, lastDone: CalendarDate?,
                values: ValueTotals? = nil, score: String? = nil) {
        self.values = values
        self.score = score
        self.id = id
        self.unit = unit
        self.currentStreak = currentStreak
        self.longestStreak = longestStreak
        self.rate7 = rate7
        self.rate30 = rate30
        self.rate365 = rate365
        self.rateAll = rateAll
        self.totalDone = totalDone
        self.lastDone = lastDone
    }
}

/// A counted habit's values summed (each day: its check-ins' sum, or the target when done
/// without check-ins): over the days on or before the reference date R, and the 7 and 30 days
/// ending at R.
public struct ValueTotals: Sendable, Equatable {
    public var total: DecimalValue
    public var last7: DecimalValue
    public var last30: DecimalValue
}

/// `habits.stats`: the reference date and the stats of one habit or of every habit on it.
public struct StatsReport: Sendable, Equatable {
    /// The reference date R: the one asked for, else today in the user's zone.
    public var date: CalendarDate
    /// In day.get's display order.
    public var habits: [HabitStats]
}

/// One day of `stats.calendar`: over the (habit, day) pairs where the habit is on and due.
public struct CalendarDay: Sendable, Equatable {
    public var date: CalendarDate
    public var due: Int
    public var done: Int
    public var skipped: Int
    /// 0 when done = 0 or due = skipped, else ceil(4 × done ÷ (due − skipped)) within 1…4; for
    /// one habit counted from check-ins, its value against the target (sql/0032).
    public var level: Int
    /// One habit counted from check-ins: the day's value; else nil.
    public var value: DecimalValue?

    public init(date: CalendarDate, due: Int, done: Int, skipped: Int, level: Int, value: DecimalValue? = nil) {
        self.date = date
        self.due = due
        self.done = done
        self.skipped = skipped
        self.level = level
        self.value = value
    }
}

/// `stats.calendar`: every day of `from`…`to`, in order.
public struct StatsCalendar: Sendable, Equatable {
    public var from: CalendarDate
    public var to: CalendarDate
    public var days: [CalendarDay]
}
