import Foundation
import JSONRPC

/// Which methods may be sent again when their outcome is unknown: one list, used by
/// `RetryPolicy` and quoted by docs/client.md (it matches docs/protocol.md, Retrying).
public enum HabitMethods {
    /// Sending these twice has the effect of sending them once: reads, and writes that set
    /// a state rather than change it. A repeated `*.delete` answers -32001 (`not_found`) if
    /// the first one committed: the row is gone either way.
    public static let retrySafe: Set<String> = [
        "system.ping", "system.health", "rpc.discover",
        "profile.get", "profile.set",
        "habits.list", "habits.history", "habits.update", "habits.deactivate", "habits.activate", "habits.delete",
        "habits.move", "habits.archive", "habits.unarchive",
        "areas.list", "areas.update", "areas.delete", "areas.move",
        "day.get", "widget.get", "week.counts", "completions.set", "skips.set_range", "habits.stats", "stats.calendar",
        "checkins.remove", "checkins.list", "notes.set",
        "reminders.set", "reminders.list", "reminders.due", "reminders.claim", "reminders.ack",
        "lists.list", "lists.update", "lists.delete",
        "tasks.today", "tasks.list", "tasks.update", "tasks.delete",
        "tasks.complete", "tasks.uncomplete", "tasks.set_state",
        "sync.pull", "sync.push",
        "changes.subscribe", "changes.unsubscribe",
        "account.delete",
        "account.export", "account.import",
    ]

    /// Retry-safe only with a client-supplied `id` (the same id and fields again return the
    /// row the first attempt created; other fields answer `id_conflict`); `checkins.add`'s is
    /// `client_id`.
    public static let retrySafeWithID: Set<String> = ["habits.create", "areas.create", "lists.create", "tasks.create", "checkins.add"]

    /// Never retry-safe: each call changes the state again (`completions.toggle`, `tasks.cycle`).
    public static func isRetrySafe(method: String, params: JSONObject?) -> Bool {
        if retrySafe.contains(method) { return true }
        if method == "checkins.add" { return params?["client_id"]?.stringValue != nil }
        if retrySafeWithID.contains(method) { return params?["id"]?.stringValue != nil }
        return false
    }
}

/// The protocol's methods, typed. `HabitClient` (a pool of workers) and `WorkerConnection`
/// (one worker) both have them; each builds `params`, calls `call(method:params:options:)`
/// and decodes the result.
public protocol HabitCalling: Sendable {
    func call(method: String, params: JSONObject?, options: CallOptions) async throws -> JSONValue
}

extension WorkerConnection: HabitCalling {}

/// An update's field: keep the stored value (member absent), set it, or clear it (null).
public enum FieldUpdate<Value: Sendable>: Sendable {
    case keep
    case set(Value)
    case clear
}

public enum WeekStart: String, Sendable, Codable { case monday, sunday }
public enum TaskView: String, Sendable, Codable { case inbox, upcoming, list }
/// A habit's state on a day (`completions.set`'s `state`).
public enum DayState: String, Sendable, Codable { case done, skipped, none }

// MARK: - Results

/// Dates are `YYYY-MM-DD` and timestamps RFC 3339 text exactly as the worker wrote them
/// (microseconds kept); ids are UUIDs.
public struct Habit: Codable, Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var icon: String?
    public var color: String?
    public var isActive: Bool
    public var activatedAt: String
    public var deactivatedAt: String?
    public var sortOrder: Int?
    public var createdAt: String
    public var updatedAt: String
    /// The schedule in force now (the open period's), or from the next activation while inactive;
    /// in day.get's habits, the schedule in force on that day.
    public var schedule: Schedule
    /// Only in day.get's habits: the schedule in force that day asks for the habit.
    public var due: Bool?
    /// Only in day.get's habits with `include: [.streaks]`: the current streak at the day's date.
    public var currentStreak: Streak?
    /// When the habit was archived (habits.archive); nil while not.
    public var archivedAt: String?
    /// The habit's area (areas.create); nil for none.
    public var areaID: String?

    enum CodingKeys: String, CodingKey {
        case id, name, icon, color, isActive = "is_active", activatedAt = "activated_at", deactivatedAt = "deactivated_at"
        case sortOrder = "sort_order", createdAt = "created_at", updatedAt = "updated_at", schedule, due
        case currentStreak = "current_streak", archivedAt = "archived_at", areaID = "area_id"
    }
}

/// What day.get's `include` may ask for.
public enum DayInclude: String, Sendable, Codable { case streaks }

/// A current streak: kept days (or weeks) in the run reaching the reference date, and its first
/// day (`YYYY-MM-DD`; nil when `length` is 0). docs/protocol.md, "Streaks, rates and the calendar".
public struct Streak: Codable, Sendable, Equatable {
    public var length: Int
    public var start: String?
    public init(length: Int, start: String?) {
        self.length = length
        self.start = start
    }
}

/// The longest run up to the reference date (the earliest on ties); nil days when `length` is 0.
public struct LongestStreak: Codable, Sendable, Equatable {
    public var length: Int
    public var start: String?
    public var end: String?
    public init(length: Int, start: String?, end: String?) {
        self.length = length
        self.start = start
        self.end = end
    }
}

/// `habits.stats`: the reference date and each habit's streaks, rates and totals.
public struct HabitsStats: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public enum Unit: String, Sendable, Codable { case days, weeks }
        public var id: UUID
        public var unit: Unit
        public var currentStreak: Streak
        public var longestStreak: LongestStreak
        /// nil when the divisor is 0.
        public var rate7: Double?
        public var rate30: Double?
        public var rate365: Double?
        public var rateAll: Double?
        public var totalDone: Int
        public var lastDone: String?
        /// Loop's habit score at the reference date, "0.0000" … "1.0000" (every habit since protocol
        /// 1.10.0; nil from an older worker, which answered it only with include ["score"]).
        public var score: String?
        enum CodingKeys: String, CodingKey {
            case id, unit, currentStreak = "current_streak", longestStreak = "longest_streak"
            case rate7 = "rate_7", rate30 = "rate_30", rate365 = "rate_365", rateAll = "rate_all"
            case totalDone = "total_done", lastDone = "last_done", score
        }
    }
    /// The reference date.
    public var date: String
    public var habits: [Entry]
}

/// `stats.calendar`: every day of `from`…`to`, in order.
public struct StatsCalendar: Codable, Sendable, Equatable {
    public struct Day: Codable, Sendable, Equatable {
        public var date: String
        public var due: Int
        public var done: Int
        public var skipped: Int
        /// 0–4.
        public var level: Int
    }
    public var from: String
    public var to: String
    public var days: [Day]
}

/// When a habit is due (docs/protocol.md, "Schedules"). The worker writes weekdays ascending.
public enum Schedule: Codable, Sendable, Equatable {
    case daily
    /// ISO weekdays, 1 = Monday … 7 = Sunday.
    case weekdays([Int])
    /// Every n days from the period's first day (1…365).
    case everyNDays(Int)
    /// That many completions per week (1…7).
    case timesPerWeek(Int)

    enum CodingKeys: String, CodingKey { case type, days, n, times }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "daily": self = .daily
        case "weekdays": self = .weekdays(try container.decode([Int].self, forKey: .days))
        case "every_n_days": self = .everyNDays(try container.decode(Int.self, forKey: .n))
        case "times_per_week": self = .timesPerWeek(try container.decode(Int.self, forKey: .times))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown schedule type \(other)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .daily: try container.encode("daily", forKey: .type)
        case .weekdays(let days): try container.encode("weekdays", forKey: .type); try container.encode(days, forKey: .days)
        case .everyNDays(let n): try container.encode("every_n_days", forKey: .type); try container.encode(n, forKey: .n)
        case .timesPerWeek(let times): try container.encode("times_per_week", forKey: .type); try container.encode(times, forKey: .times)
        }
    }

    /// The params value.
    var json: JSONValue {
        switch self {
        case .daily: ["type": "daily"]
        case .weekdays(let days): ["type": "weekdays", "days": .array(days.map { JSONValue.int($0) })]
        case .everyNDays(let n): ["type": "every_n_days", "n": .int(n)]
        case .timesPerWeek(let times): ["type": "times_per_week", "times": .int(times)]
        }
    }
}

/// `habits.history`: a habit's periods of activity, oldest first.
public struct HabitHistory: Codable, Sendable, Equatable {
    public struct Period: Codable, Sendable, Equatable {
        public var startedAt: String
        /// nil for the open period.
        public var endedAt: String?
        public var schedule: Schedule
        enum CodingKeys: String, CodingKey { case startedAt = "started_at", endedAt = "ended_at", schedule }
    }
    public var id: UUID
    public var periods: [Period]
}

public struct HabitTask: Codable, Sendable, Equatable {
    public enum State: String, Sendable, Codable { case notStarted = "not_started", active, completed }

    public var id: UUID
    public var title: String
    public var notes: String?
    public var listID: UUID?
    public var state: State
    public var scheduledDate: String?
    public var position: Int
    public var completedAt: String?
    public var createdAt: String
    public var updatedAt: String

    enum CodingKeys: String, CodingKey {
        case id, title, notes, listID = "list_id", state, scheduledDate = "scheduled_date", position
        case completedAt = "completed_at", createdAt = "created_at", updatedAt = "updated_at"
    }
}

public struct TaskList: Codable, Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var createdAt: String
    public var updatedAt: String

    enum CodingKeys: String, CodingKey { case id, name, createdAt = "created_at", updatedAt = "updated_at" }
}

public struct Profile: Codable, Sendable, Equatable {
    public var userID: UUID
    public var timezone: String
    public var weekStart: WeekStart
    public var dayStartsAt: String

    enum CodingKeys: String, CodingKey { case userID = "user_id", timezone, weekStart = "week_start", dayStartsAt = "day_starts_at" }
}

public struct Ping: Codable, Sendable, Equatable { public var ok: Bool }

public struct Health: Codable, Sendable, Equatable {
    public var database: String
    public var schemaVersion: Int
    enum CodingKeys: String, CodingKey { case database, schemaVersion = "schema_version" }
}

public struct Deleted: Codable, Sendable, Equatable { public var deleted: Bool }

/// `changes.subscribe` / `changes.unsubscribe`: whether the user is subscribed after the call.
public struct Subscription: Codable, Sendable, Equatable { public var subscribed: Bool }

public struct HabitsPage: Codable, Sendable, Equatable {
    public var habits: [Habit]
    public var nextCursor: String?
    enum CodingKeys: String, CodingKey { case habits, nextCursor = "next_cursor" }
}

public struct Day: Codable, Sendable, Equatable {
    public var date: String
    public var today: String
    public var isFuture: Bool
    public var habits: [Habit]
    /// Ids of `habits` done on `date`, sorted.
    public var completed: [UUID]
    /// Ids of `habits` skipped on `date`, sorted.
    public var skipped: [UUID]
    enum CodingKeys: String, CodingKey { case date, today, isFuture = "is_future", habits, completed, skipped }
}

public struct CompletionSet: Codable, Sendable, Equatable {
    /// `state == .done`.
    public var completed: Bool
    /// The day's state now.
    public var state: DayState
    /// False when the day already was in that state.
    public var changed: Bool
}

public struct SkipRange: Codable, Sendable, Equatable {
    /// The number of habit-days skipped (or unskipped) by this call.
    public var changed: Int
    /// The dates (`YYYY-MM-DD`, sorted) on which something changed.
    public var days: [String]
}

public struct CompletionToggle: Codable, Sendable, Equatable {
    public var completed: Bool
}

public struct WeekCounts: Codable, Sendable, Equatable {
    public struct DayCount: Codable, Sendable, Equatable {
        public var date: String
        public var completed: Int
        public var active: Int
        public var due: Int
        public var skipped: Int
    }
    public var weekStart: String
    public var days: [DayCount]
    enum CodingKeys: String, CodingKey { case weekStart = "week_start", days }
}

public struct ListsPage: Codable, Sendable, Equatable {
    public var lists: [TaskList]
    public var nextCursor: String?
    enum CodingKeys: String, CodingKey { case lists, nextCursor = "next_cursor" }
}

public struct TasksToday: Codable, Sendable, Equatable {
    public var date: String
    public var tasks: [HabitTask]
    public var completedCount: Int
    public var totalCount: Int
    public var nextCursor: String?
    enum CodingKeys: String, CodingKey {
        case date, tasks, completedCount = "completed_count", totalCount = "total_count", nextCursor = "next_cursor"
    }
}

public struct TasksPage: Codable, Sendable, Equatable {
    public var view: TaskView
    public var tasks: [HabitTask]
    public var nextCursor: String?
    enum CodingKeys: String, CodingKey { case view, tasks, nextCursor = "next_cursor" }
}

// MARK: - Building params

/// `params` built member by member; nil values are left out (absent = the default).
struct Params {
    var object = JSONObject()

    init(user: UUID?) {
        if let user { object.append(key: "user_id", value: .string(user.uuidString.lowercased())) }
    }

    mutating func add(_ key: String, _ value: String?) {
        if let value { object.append(key: key, value: .string(value)) }
    }

    mutating func add(_ key: String, _ value: UUID?) {
        if let value { object.append(key: key, value: .string(value.uuidString.lowercased())) }
    }

    mutating func add(_ key: String, _ value: Int?) {
        if let value { object.append(key: key, value: .int(value)) }
    }

    mutating func add(_ key: String, _ value: Schedule?) {
        if let value { object.append(key: key, value: value.json) }
    }

    mutating func add(_ key: String, _ value: Bool?) {
        if let value { object.append(key: key, value: .bool(value)) }
    }

    mutating func update(_ key: String, _ value: FieldUpdate<String>) {
        switch value {
        case .keep: break
        case .set(let text): object.append(key: key, value: .string(text))
        case .clear: object.append(key: key, value: .null)
        }
    }

    mutating func update(_ key: String, _ value: FieldUpdate<UUID>) {
        switch value {
        case .keep: break
        case .set(let id): object.append(key: key, value: .string(id.uuidString.lowercased()))
        case .clear: object.append(key: key, value: .null)
        }
    }

    mutating func update(_ key: String, _ value: FieldUpdate<Int>) {
        switch value {
        case .keep: break
        case .set(let number): object.append(key: key, value: .int(number))
        case .clear: object.append(key: key, value: .null)
        }
    }
}

/// `sync.pull`: one page of what changed after the cursor. Rows are decoded as the methods that
/// return them decode them; see docs/protocol.md, "Sync".
public struct SyncPage: Codable, Sendable, Equatable {
    public struct DayKey: Codable, Sendable, Hashable {
        public var templateID: UUID
        public var date: String
        public init(templateID: UUID, date: String) {
            self.templateID = templateID
            self.date = date
        }
        enum CodingKeys: String, CodingKey { case templateID = "template_id", date }
    }
    public struct Period: Codable, Sendable, Equatable {
        public var id: UUID
        public var templateID: UUID
        public var startedAt: String
        public var endedAt: String?
        public var schedule: Schedule
        enum CodingKeys: String, CodingKey { case id, templateID = "template_id", startedAt = "started_at", endedAt = "ended_at", schedule }
    }
    public struct Completion: Codable, Sendable, Equatable {
        public var templateID: UUID
        public var date: String
        public var createdAt: String
        enum CodingKeys: String, CodingKey { case templateID = "template_id", date, createdAt = "created_at" }
    }
    public struct Changes: Codable, Sendable, Equatable {
        public var profile: Profile?
        public var habits: [Habit]
        public var periods: [Period]
        public var completions: [Completion]
        public var skips: [DayKey]
        public var lists: [TaskList]
        public var tasks: [HabitTask]
    }
    public struct Deletions: Codable, Sendable, Equatable {
        /// True only when the profile was deleted.
        public var profile: Bool?
        public var habits: [UUID]
        public var periods: [UUID]
        public var completions: [DayKey]
        public var skips: [DayKey]
        public var lists: [UUID]
        public var tasks: [UUID]
    }
    public var changes: Changes
    public var deleted: Deletions
    /// Opaque: pass it back for the next page or the next pull.
    public var cursor: String
    public var hasMore: Bool
    enum CodingKeys: String, CodingKey { case changes, deleted, cursor, hasMore = "has_more" }
}

/// `account.delete`'s answer: the rows deleted per table (schema-qualified names, in the
/// database's fixed order) and their sum.
public struct AccountDeletion: Codable, Sendable, Equatable {
    public struct Table: Codable, Sendable, Equatable {
        public var table: String
        public var deleted: Int
    }
    public var tables: [Table]
    public var total: Int
}

/// One mutation of `sync.push`: any method that takes `user_id` (which may be left out).
public struct SyncMutation: Sendable, Equatable {
    public var mutationID: String
    public var method: String
    public var params: JSONObject
    public init(mutationID: String, method: String, params: JSONObject = JSONObject()) {
        self.mutationID = mutationID
        self.method = method
        self.params = params
    }
}

/// `sync.push`'s answer: each mutation's recorded outcome, in order, and the cursor after it.
public struct SyncPushResult: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        case result(JSONValue)
        /// The error as the method answered it (recorded like a result: a retry answers it again).
        case error(code: Int, reason: String?, error: JSONValue)
    }
    public var outcomes: [(mutationID: String, outcome: Outcome)]
    public var cursor: String

    public static func == (lhs: SyncPushResult, rhs: SyncPushResult) -> Bool {
        lhs.cursor == rhs.cursor && lhs.outcomes.count == rhs.outcomes.count
            && zip(lhs.outcomes, rhs.outcomes).allSatisfy { $0.mutationID == $1.mutationID && $0.outcome == $1.outcome }
    }

    init(_ value: JSONValue) throws {
        guard case .object(let object) = value, case .array(let results)? = object["results"], case .string(let cursor)? = object["cursor"] else {
            throw HabitClientError.unexpectedResult(method: "sync.push", problem: "expected {results, cursor}")
        }
        self.cursor = cursor
        outcomes = try results.map { element in
            guard case .object(let entry) = element, case .string(let id)? = entry["mutation_id"] else {
                throw HabitClientError.unexpectedResult(method: "sync.push", problem: "a result without mutation_id")
            }
            if let result = entry["result"] { return (id, .result(result)) }
            guard let error = entry["error"], case .object(let body) = error, let code = body["code"]?.intValue else {
                throw HabitClientError.unexpectedResult(method: "sync.push", problem: "a result with neither result nor error")
            }
            return (id, .error(code: code, reason: body["data"]?["reason"]?.stringValue, error: error))
        }
    }
}

// MARK: - The methods

extension HabitCalling {
    /// `call` with default options.
    public func call(method: String, params: JSONObject? = nil) async throws -> JSONValue {
        try await call(method: method, params: params, options: CallOptions())
    }

    /// Calls `method` and decodes its result as `Result`.
    public func call<Result: Decodable>(_ method: String, _ params: JSONObject?, options: CallOptions,
                                        as type: Result.Type = Result.self) async throws -> Result {
        let value = try await call(method: method, params: params, options: options)
        do {
            return try JSONDecoder().decode(Result.self, from: Data(value.jsonBytes))
        } catch {
            throw HabitClientError.unexpectedResult(method: method, problem: "\(error)")
        }
    }

    public func systemPing(options: CallOptions = CallOptions()) async throws -> Ping {
        try await call("system.ping", nil, options: options)
    }

    public func systemHealth(options: CallOptions = CallOptions()) async throws -> Health {
        try await call("system.health", nil, options: options)
    }

    /// The OpenRPC document.
    public func rpcDiscover(options: CallOptions = CallOptions()) async throws -> JSONValue {
        try await call(method: "rpc.discover", params: nil, options: options)
    }

    /// Change notifications for the user (`HabitClient.changes`; on a `WorkerConnection`, its
    /// `otherLine` handler): one after the user's committed changes, at most one per 200 ms.
    public func changesSubscribe(userID: UUID, options: CallOptions = CallOptions()) async throws -> Subscription {
        try await call("changes.subscribe", Params(user: userID).object, options: options)
    }

    public func changesUnsubscribe(userID: UUID, options: CallOptions = CallOptions()) async throws -> Subscription {
        try await call("changes.unsubscribe", Params(user: userID).object, options: options)
    }

    public func profileGet(userID: UUID, options: CallOptions = CallOptions()) async throws -> Profile {
        try await call("profile.get", Params(user: userID).object, options: options)
    }

    /// `weekStart` nil keeps the stored one (Monday for a new profile).
    public func profileSet(userID: UUID, timezone: String, weekStart: WeekStart? = nil,
                           options: CallOptions = CallOptions()) async throws -> Profile {
        var params = Params(user: userID)
        params.add("timezone", timezone)
        if let weekStart { params.add("week_start", weekStart.rawValue) }
        return try await call("profile.set", params.object, options: options)
    }

    /// With `id`, retry-safe: the same id and fields again return the existing habit.
    public func habitsCreate(userID: UUID, name: String, icon: String? = nil, color: String? = nil,
                             activatedAt: String? = nil, sortOrder: Int? = nil, schedule: Schedule? = nil, id: UUID? = nil,
                             options: CallOptions = CallOptions()) async throws -> Habit {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("name", name)
        params.add("icon", icon)
        params.add("color", color)
        params.add("activated_at", activatedAt)
        params.add("sort_order", sortOrder)
        params.add("schedule", schedule)
        return try await call("habits.create", params.object, options: options)
    }

    public func habitsUpdate(userID: UUID, id: UUID, name: String? = nil, icon: FieldUpdate<String> = .keep,
                             color: FieldUpdate<String> = .keep, sortOrder: FieldUpdate<Int> = .keep, schedule: Schedule? = nil,
                             options: CallOptions = CallOptions()) async throws -> Habit {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("name", name)
        params.update("icon", icon)
        params.update("color", color)
        params.update("sort_order", sortOrder)
        params.add("schedule", schedule)
        return try await call("habits.update", params.object, options: options)
    }

    /// The habit's periods of activity with their schedules; another user's habit is `not_found`.
    public func habitsHistory(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> HabitHistory {
        try await call("habits.history", idParams(userID, id), options: options)
    }

    public func habitsDeactivate(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> Habit {
        try await call("habits.deactivate", idParams(userID, id), options: options)
    }

    public func habitsActivate(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> Habit {
        try await call("habits.activate", idParams(userID, id), options: options)
    }

    public func habitsDelete(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> Deleted {
        try await call("habits.delete", idParams(userID, id), options: options)
    }

    public func habitsList(userID: UUID, includeInactive: Bool? = nil, cursor: String? = nil, limit: Int? = nil,
                           options: CallOptions = CallOptions()) async throws -> HabitsPage {
        var params = Params(user: userID)
        params.add("include_inactive", includeInactive)
        params.add("cursor", cursor)
        params.add("limit", limit)
        return try await call("habits.list", params.object, options: options)
    }

    /// `date` is `YYYY-MM-DD`. `include: [.streaks]` gives each habit `currentStreak`.
    public func dayGet(userID: UUID, date: String, timezone: String? = nil, include: [DayInclude] = [],
                       options: CallOptions = CallOptions()) async throws -> Day {
        var params = Params(user: userID)
        params.add("date", date)
        params.add("timezone", timezone)
        if !include.isEmpty { params.object.append(key: "include", value: .array(include.map { .string($0.rawValue) })) }
        return try await call("day.get", params.object, options: options)
    }

    /// Streaks, rates and totals of habit `id`, or (nil) of every habit on `date`; `date`
    /// (`YYYY-MM-DD`) nil: today in the user's zone. Another user's habit is `not_found`.
    public func habitsStats(userID: UUID, id: UUID? = nil, date: String? = nil,
                            options: CallOptions = CallOptions()) async throws -> HabitsStats {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("date", date)
        return try await call("habits.stats", params.object, options: options)
    }

    /// Per day of `from`…`to` (inclusive, at most 366 days): due, done, skipped and level, over
    /// the user's habits or habit `id`'s alone.
    public func statsCalendar(userID: UUID, id: UUID? = nil, from: String, to: String,
                              options: CallOptions = CallOptions()) async throws -> StatsCalendar {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("from", from)
        params.add("to", to)
        return try await call("stats.calendar", params.object, options: options)
    }

    public func completionsSet(userID: UUID, templateID: UUID, date: String, completed: Bool, timezone: String? = nil,
                               options: CallOptions = CallOptions()) async throws -> CompletionSet {
        var params = Params(user: userID)
        params.add("template_id", templateID)
        params.add("date", date)
        params.add("completed", completed)
        params.add("timezone", timezone)
        return try await call("completions.set", params.object, options: options)
    }

    /// Sets the day's state (done, skipped or none), replacing the other state.
    public func completionsSet(userID: UUID, templateID: UUID, date: String, state: DayState, timezone: String? = nil,
                               options: CallOptions = CallOptions()) async throws -> CompletionSet {
        var params = Params(user: userID)
        params.add("template_id", templateID)
        params.add("date", date)
        params.add("state", state.rawValue)
        params.add("timezone", timezone)
        return try await call("completions.set", params.object, options: options)
    }

    /// Skips (or unskips) every habit, or `templateID`'s, on each day of `from`…`to` (inclusive,
    /// `YYYY-MM-DD`, at most 366 days). Done days stay done.
    public func skipsSetRange(userID: UUID, templateID: UUID? = nil, from: String, to: String, skipped: Bool,
                              timezone: String? = nil, options: CallOptions = CallOptions()) async throws -> SkipRange {
        var params = Params(user: userID)
        params.add("template_id", templateID)
        params.add("from", from)
        params.add("to", to)
        params.add("skipped", skipped)
        params.add("timezone", timezone)
        return try await call("skips.set_range", params.object, options: options)
    }

    /// Not retry-safe: use `completionsSet` where the gateway knows the state it wants.
    public func completionsToggle(userID: UUID, templateID: UUID, date: String, timezone: String? = nil,
                                  options: CallOptions = CallOptions()) async throws -> CompletionToggle {
        var params = Params(user: userID)
        params.add("template_id", templateID)
        params.add("date", date)
        params.add("timezone", timezone)
        return try await call("completions.toggle", params.object, options: options)
    }

    public func weekCounts(userID: UUID, date: String, weekStart: WeekStart? = nil, timezone: String? = nil,
                           options: CallOptions = CallOptions()) async throws -> WeekCounts {
        var params = Params(user: userID)
        params.add("date", date)
        params.add("week_start", weekStart?.rawValue)
        params.add("timezone", timezone)
        return try await call("week.counts", params.object, options: options)
    }

    /// With `id`, retry-safe (see `habitsCreate`).
    public func listsCreate(userID: UUID, name: String, id: UUID? = nil, options: CallOptions = CallOptions()) async throws -> TaskList {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("name", name)
        return try await call("lists.create", params.object, options: options)
    }

    public func listsUpdate(userID: UUID, id: UUID, name: String, options: CallOptions = CallOptions()) async throws -> TaskList {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("name", name)
        return try await call("lists.update", params.object, options: options)
    }

    public func listsDelete(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> Deleted {
        try await call("lists.delete", idParams(userID, id), options: options)
    }

    public func listsList(userID: UUID, cursor: String? = nil, limit: Int? = nil, options: CallOptions = CallOptions()) async throws -> ListsPage {
        var params = Params(user: userID)
        params.add("cursor", cursor)
        params.add("limit", limit)
        return try await call("lists.list", params.object, options: options)
    }

    /// With `id`, retry-safe (see `habitsCreate`).
    public func tasksCreate(userID: UUID, title: String, notes: String? = nil, listID: UUID? = nil, scheduledDate: String? = nil,
                            position: Int? = nil, id: UUID? = nil, options: CallOptions = CallOptions()) async throws -> HabitTask {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("title", title)
        params.add("notes", notes)
        params.add("list_id", listID)
        params.add("scheduled_date", scheduledDate)
        params.add("position", position)
        return try await call("tasks.create", params.object, options: options)
    }

    public func tasksUpdate(userID: UUID, id: UUID, title: String? = nil, notes: FieldUpdate<String> = .keep,
                            listID: FieldUpdate<UUID> = .keep, scheduledDate: FieldUpdate<String> = .keep,
                            position: Int? = nil, options: CallOptions = CallOptions()) async throws -> HabitTask {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("title", title)
        params.update("notes", notes)
        params.update("list_id", listID)
        params.update("scheduled_date", scheduledDate)
        params.add("position", position)
        return try await call("tasks.update", params.object, options: options)
    }

    public func tasksDelete(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> Deleted {
        try await call("tasks.delete", idParams(userID, id), options: options)
    }

    public func tasksComplete(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> HabitTask {
        try await call("tasks.complete", idParams(userID, id), options: options)
    }

    public func tasksUncomplete(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> HabitTask {
        try await call("tasks.uncomplete", idParams(userID, id), options: options)
    }

    /// Not retry-safe: each call moves the task one state on.
    public func tasksCycle(userID: UUID, id: UUID, options: CallOptions = CallOptions()) async throws -> HabitTask {
        try await call("tasks.cycle", idParams(userID, id), options: options)
    }

    public func tasksSetState(userID: UUID, id: UUID, state: HabitTask.State, options: CallOptions = CallOptions()) async throws -> HabitTask {
        var params = Params(user: userID)
        params.add("id", id)
        params.add("state", state.rawValue)
        return try await call("tasks.set_state", params.object, options: options)
    }

    public func tasksToday(userID: UUID, date: String? = nil, timezone: String? = nil, cursor: String? = nil, limit: Int? = nil,
                           options: CallOptions = CallOptions()) async throws -> TasksToday {
        var params = Params(user: userID)
        params.add("date", date)
        params.add("timezone", timezone)
        params.add("cursor", cursor)
        params.add("limit", limit)
        return try await call("tasks.today", params.object, options: options)
    }

    /// `listID` is required for `view: .list`.
    public func tasksList(userID: UUID, view: TaskView, listID: UUID? = nil, timezone: String? = nil, cursor: String? = nil,
                          limit: Int? = nil, options: CallOptions = CallOptions()) async throws -> TasksPage {
        var params = Params(user: userID)
        params.add("view", view.rawValue)
        params.add("list_id", listID)
        params.add("timezone", timezone)
        params.add("cursor", cursor)
        params.add("limit", limit)
        return try await call("tasks.list", params.object, options: options)
    }

    private func idParams(_ user: UUID, _ id: UUID) -> JSONObject {
        var params = Params(user: user)
        params.add("id", id)
        return params.object
    }

    /// `cursor` nil: the whole current state. Retry-safe; follow `hasMore` with the answer's cursor.
    public func syncPull(userID: UUID, cursor: String? = nil, limit: Int? = nil, options: CallOptions = CallOptions()) async throws -> SyncPage {
        var params = Params(user: userID)
        params.add("cursor", cursor)
        params.add("limit", limit)
        return try await call("sync.pull", params.object, options: options)
    }

    /// Each `(clientID, mutationID)` takes effect once: a retry after a lost answer answers the
    /// recorded outcomes. Retry-safe.
    public func syncPush(userID: UUID, clientID: String, mutations: [SyncMutation], options: CallOptions = CallOptions()) async throws -> SyncPushResult {
        var params = Params(user: userID)
        params.add("client_id", clientID)
        params.object.append(key: "mutations", value: .array(mutations.map { mutation in
            .object(JSONObject([("mutation_id", .string(mutation.mutationID)), ("method", .string(mutation.method)),
                                ("params", .object(mutation.params))]))
        }))
        return try SyncPushResult(try await call(method: "sync.push", params: params.object, options: options))
    }

    /// Deletes every row the user owns; `confirm` is sent as the user id itself (the worker
    /// requires it to equal `user_id`). Retry-safe: a repeat answers zeros.
    public func accountDelete(userID: UUID, options: CallOptions = CallOptions()) async throws -> AccountDeletion {
        var params = Params(user: userID)
        params.add("confirm", userID.uuidString.lowercased())
        return try await call("account.delete", params.object, options: options)
    }

}
