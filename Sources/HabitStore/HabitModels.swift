import Foundation
import PostgresClient

public struct Profile: Sendable, Equatable {
    public var userID: UUID
    public var timeZone: String
    public init(userID: UUID, timeZone: String) {
        self.userID = userID
        self.timeZone = timeZone
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

    /// The columns `init(row:)` reads, in a SELECT or RETURNING list.
    static let columns = "id, name, icon, color, is_active, activated_at, deactivated_at, sort_order, created_at, updated_at"

    init(row: Row) throws {
        id = try row.decode(UUID.self, "id")
        name = try row.decode(String.self, "name")
        icon = try row.decode(String?.self, "icon")
        color = try row.decode(String?.self, "color")
        isActive = try row.decode(Bool.self, "is_active")
        activatedAt = try row.decode(PostgresTimestamp.self, "activated_at")
        deactivatedAt = try row.decode(PostgresTimestamp?.self, "deactivated_at")
        sortOrder = try row.decode(Int32?.self, "sort_order").map(Int.init)
        createdAt = try row.decode(PostgresTimestamp.self, "created_at")
        updatedAt = try row.decode(PostgresTimestamp.self, "updated_at")
    }
}

/// A new habit. Name, icon and color are validated (and normalized) by the repository.
public struct HabitDraft: Sendable {
    public var name: String
    public var icon: String?
    public var color: String?
    /// When the habit starts; default now.
    public var activatedAt: PostgresTimestamp?
    /// Position in the list; default after the user's last habit.
    public var sortOrder: Int?

    public init(name: String, icon: String? = nil, color: String? = nil, activatedAt: PostgresTimestamp? = nil, sortOrder: Int? = nil) {
        self.name = name
        self.icon = icon
        self.color = color
        self.activatedAt = activatedAt
        self.sortOrder = sortOrder
    }
}

/// Changes to a habit: `nil` keeps a field; `.some(nil)` clears an optional one.
public struct HabitChanges: Sendable {
    public var name: String?
    public var icon: String??
    public var color: String??
    public var sortOrder: Int??

    public init(name: String? = nil, icon: String?? = nil, color: String?? = nil, sortOrder: Int?? = nil) {
        self.name = name
        self.icon = icon
        self.color = color
        self.sortOrder = sortOrder
    }

    var isEmpty: Bool { name == nil && icon == nil && color == nil && sortOrder == nil }
}

/// Everything the daily habit view shows for one date.
public struct DayView: Sendable, Equatable {
    public var date: CalendarDate
    /// Today in the user's time zone.
    public var today: CalendarDate
    public var isFuture: Bool { date > today }
    /// Active habits whose activation day is on or before `date`, in display order.
    public var habits: [Habit]
    /// Template ids completed on `date`.
    public var completed: Set<UUID>
}

public struct CompletionChange: Sendable, Equatable {
    public var completed: Bool
    public var changed: Bool
    public init(completed: Bool, changed: Bool) {
        self.completed = completed
        self.changed = changed
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
    /// Completions that day of habits active that day.
    public var completed: Int
    /// Habits active that day (same rule as the daily view).
    public var active: Int
}
