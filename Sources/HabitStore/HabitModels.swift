import Foundation
import PostgresClient

public struct Profile: Sendable, Equatable {
    public var userID: UUID
    public var timeZone: String
    /// The first day of the user's week (profiles.week_start): a times_per_week
    /// schedule counts completions in these weeks, and week.counts groups by it by default.
    public var weekStart: WeekStart
    /// The local time of day at which each of the user's days begins, "HH:MM"
    /// (profiles.day_starts_at): "today", and the day of every instant, follow it.
    public var dayStartsAt: String
    public init(userID: UUID, timeZone: String, weekStart: WeekStart = .monday, dayStartsAt: String = "00:00") {
        self.userID = userID
        self.timeZone = timeZone
        self.weekStart = weekStart
        self.dayStartsAt = dayStartsAt
    }
}

public struct Habit: Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var icon: String?
    public var color: String?
    public var isActive: Bool
    public var activatedAt: PostgresTimestamp
    public var deactivatedAt: PostgresTimestamp?
    public var sortOrder: Int?
    public var createdAt: PostgresTimestamp
    public var updatedAt: PostgresTimestamp
    /// The schedule in force now (the open period's), or from the next activation while inactive.
    public var schedule: HabitSchedule
    /// Boolean or measurable, and the target (sql/0029).
    public var measure: HabitMeasure
    /// When it was archived (habits.archive, sql/0035); nil while not.
    public var archivedAt: PostgresTimestamp?
    /// The habit's area (sql/0037); nil for none.
    public var areaID: UUID?

    /// The columns `init(row:at:)` reads, in this order, in a SELECT or RETURNING list.
    static let columns = "id, name, icon, color, is_active, activated_at, deactivated_at, sort_order, created_at, updated_at, schedule, kind, unit, target, target_type, target_period, archived_at, area_id"

    static let columnNames = columns.split(separator: ", ").map(String.init)

    /// `columns` qualified by a table alias (`prefix`, e.g. "t."), for joins; `replacing` gives
    /// other expressions for some columns (kept under the column's name).
    static func columnList(prefix: String, replacing: [String: String] = [:]) -> String {
        columnNames.map { name in replacing[name].map { "\($0) AS \(name)" } ?? prefix + name }.joined(separator: ", ")
    }

    /// Decodes `columns` by position, starting at column `first`: looking each column up by
    /// name cost as much as decoding it. Debug builds (the tests) check the names, so a
    /// statement that lists the columns differently fails there instead of mixing fields up.
    init(row: Row, at first: Int = 0) throws {
        assert(Array(row.columnNames.dropFirst(first).prefix(Self.columnNames.count)) == Self.columnNames,
               "habit columns out of order: \(row.columnNames)")
        id = try row.decode(UUID.self, at: first)
        name = try row.decode(String.self, at: first + 1)
        icon = try row.decode(String?.self, at: first + 2)
        color = try row.decode(String?.self, at: first + 3)
        isActive = try row.decode(Bool.self, at: first + 4)
        activatedAt = try row.decode(PostgresTimestamp.self, at: first + 5)
        deactivatedAt = try row.decode(PostgresTimestamp?.self, at: first + 6)
        sortOrder = try row.decode(Int32?.self, at: first + 7).map(Int.init)
        createdAt = try row.decode(PostgresTimestamp.self, at: first + 8)
        updatedAt = try row.decode(PostgresTimestamp.self, at: first + 9)
        schedule = try HabitSchedule(storedJSON: row.decode(JSONB.self, at: first + 10).text)
        measure = try HabitMeasure(row: row, at: first + 11)
        archivedAt = try row.decode(PostgresTimestamp?.self, at: first + 16)
        areaID = try row.decode(UUID?.self, at: first + 17)
    }
}

/// A new habit. Name, icon and color are validated (and normalized) by the repository.
public struct HabitDraft: Sendable {
    /// The client's id for the new habit, which makes the create safe to retry; nil: generated.
    public var id: UUID?
    public var name: String
    public var icon: String?
    public var color: String?
    /// When the habit starts; default now.
    public var activatedAt: PostgresTimestamp?
    /// Position in the list; default after the user's last habit.
    public var sortOrder: Int?
    /// The schedule of the first period; default daily.
    public var schedule: HabitSchedule?
    /// Kind and target; default a boolean habit, once a day.
    public var measure: HabitMeasure
    /// The user's area it goes in; default none.
    public var areaID: UUID?

    public init(id: UUID? = nil, name: String, icon: String? = nil, color: String? = nil,
                activatedAt: PostgresTimestamp? = nil, sortOrder: Int? = nil, schedule: HabitSchedule? = nil,
                measure: HabitMeasure = .boolean, areaID: UUID? = nil) {
        self.measure = measure
        self.areaID = areaID
        self.id = id
        self.name = name
        self.icon = icon
        self.color = color
        self.activatedAt = activatedAt
        self.sortOrder = sortOrder
        self.schedule = schedule
    }
}

/// Changes to a habit: `nil` keeps a field; `.some(nil)` clears an optional one.
public struct HabitChanges: Sendable {
    public var name: String?
    public var icon: String??
    public var color: String??
    public var sortOrder: Int??
    /// A new schedule: while active, the open period ends now and one starts with it
    /// (the history trigger, sql/triggers/habit_templates.sql); while inactive, the next activation uses it.
    public var schedule: HabitSchedule?
    /// The kind is fixed at creation: a different one is refused (habit_templates_kind_fixed).
    public var kind: HabitKind?
    public var unit: String??
    /// A new target re-decides the days that have check-ins (habit.checkins_retarget).
    public var target: DecimalValue?
    public var targetType: TargetType?
    public var targetPeriod: TargetPeriod?
    /// Another area of the user, or `.some(nil)`: none.
    public var areaID: UUID??

    public init(name: String? = nil, icon: String?? = nil, color: String?? = nil, sortOrder: Int?? = nil,
                schedule: HabitSchedule? = nil, kind: HabitKind? = nil, unit: String?? = nil, target: DecimalValue? = nil,
                targetType: TargetType? = nil, targetPeriod: TargetPeriod? = nil, areaID: UUID?? = nil) {
        self.areaID = areaID
        self.kind = kind
        self.unit = unit
        self.target = target
        self.targetType = targetType
        self.targetPeriod = targetPeriod
        self.name = name
        self.icon = icon
        self.color = color
        self.sortOrder = sortOrder
        self.schedule = schedule
    }
}

/// One period of activity of a habit, `[startedAt, endedAt)` (public.habit_periods).
public struct HabitPeriod: Sendable, Equatable {
    public var startedAt: PostgresTimestamp
    /// nil for the open period.
    public var endedAt: PostgresTimestamp?
    public var schedule: HabitSchedule

    public init(startedAt: PostgresTimestamp, endedAt: PostgresTimestamp?, schedule: HabitSchedule) {
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.schedule = schedule
    }
}

/// A habit's periods, oldest first.
public struct HabitHistory: Sendable, Equatable {
    public var id: UUID
    public var periods: [HabitPeriod]
}

/// Everything the daily habit view shows for one date.
public struct DayView: Sendable, Equatable {
    public var date: CalendarDate
    /// Today in the user's time zone.
    public var today: CalendarDate
    public var isFuture: Bool { date > today }
    /// The habits on `date` (`habit.habit_days_at`, sql/functions/history.sql), in display order.
    public var habits: [Habit]
    /// Ids of `habits` done on `date`.
    public var completed: Set<UUID>
    /// Ids of `habits` skipped on `date` (habit_skips).
    public var skipped: Set<UUID> = []
    /// Ids of `habits` due on `date`: their schedule asks for them (`habit.due_days`;
    /// times_per_week: the week's target was not met before `date`).
    public var due: Set<UUID> = []
    /// Only when asked for (day.get's `include: ["streaks"]`): each listed habit's current
    /// streak at `date` (`habit.current_streaks`, sql/functions/streaks.sql); nil otherwise.
    public var currentStreaks: [UUID: CurrentStreak]? = nil
    /// Each listed habit's value, check-ins and note on `date` (sql/0029).
    public var details: [UUID: DayDetail] = [:]
    /// Every area of the user, in order, with its habits due and done on `date` (sql/0037).
    public var areas: [AreaDay] = []
}

/// A habit's day as day.get shows it: for a habit counted from check-ins (habit.is_counted; nil
/// for the others) its value (the check-ins' sum, or habit.done_value when done without any) and
/// the number of check-ins; and its note.
public struct DayDetail: Sendable, Equatable {
    public var value: DecimalValue?
    public var checkins: Int?
    public var note: String?
    /// A weekly target's (sql/0033): the value of the user's week holding the day.
    public var weekValue: DecimalValue? = nil
}

/// A habit's state on a day: done (a completion), skipped (a skip) or none. A day is at most
/// one of done and skipped (the tables' triggers, sql/functions/history.sql).
public enum DayState: String, Sendable, CaseIterable {
    case done, skipped, none
}

public struct CompletionChange: Sendable, Equatable {
    /// The day's state after the change; `completed` is `state == .done`.
    public var state: DayState
    public var changed: Bool
    /// With a value (completions.set's `value`, sql/0029): the day's value and check-ins.
    public var day: DayValue? = nil
    public var completed: Bool { state == .done }
    public init(state: DayState, changed: Bool, day: DayValue? = nil) {
        self.state = state
        self.changed = changed
        self.day = day
    }
    /// `completed: true` is done, `false` is none.
    public init(completed: Bool, changed: Bool) {
        self.init(state: completed ? .done : .none, changed: changed)
    }
}

/// What `skips.set_range` did: the number of habit-days whose state changed and the dates
/// (sorted) on which something changed.
public struct SkipRangeChange: Sendable, Equatable {
    public var changed: Int
    public var days: [CalendarDate]
    public init(changed: Int, days: [CalendarDate]) {
        self.changed = changed
        self.days = days
    }
}

public enum WeekStart: String, Sendable, CaseIterable {
    case monday, sunday

    /// The first day of the week containing `date`.
    public func weekStart(containing date: CalendarDate) -> CalendarDate {
        let weekday = date.isoWeekday // Monday 1 … Sunday 7
        let back = self == .monday ? weekday - 1 : weekday % 7
        return date.adding(days: -back)
    }
}

public struct DayCount: Sendable, Equatable {
    public var date: CalendarDate
    /// Completions that day of habits on that day.
    public var completed: Int
    /// Habits on that day (same rule as the daily view).
    public var active: Int
    /// Of those, the due ones (`habit.due_days`).
    public var due: Int = 0
    /// Of the due ones, the skipped ones (never more than `due`).
    public var skipped: Int = 0
}
