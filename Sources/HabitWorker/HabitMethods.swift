import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// The JSON-RPC methods of the habit domain. docs/protocol.md documents each one.

let sortOrderRange = Int(Int32.min)...Int(Int32.max)

enum SystemPing: LocalMethod {
    static let name = "system.ping"
    static let keys: Set<String> = []
    static func run(_ params: ParamsReader) throws(RPCError) -> JSONValue { ["ok": true] }
}

enum SystemHealth: DatabaseMethod {
    static let name = "system.health"
    static let keys: Set<String> = []
    static func decode(_ params: ParamsReader) throws(RPCError) {}
    static func run(_ params: Void, in context: MethodContext) throws -> JSONValue {
        ["database": "ok", "schema_version": .int(try Migrator.schemaVersion(context.connection))]
    }
}

enum ProfileGet: DatabaseMethod {
    static let name = "profile.get"
    static let keys: Set<String> = ["user_id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> UUID { try params.userID() }
    static func run(_ user: UUID, in context: MethodContext) throws -> JSONValue {
        JSONValue(profile: try context.habits.profile(user: user))
    }
}

enum ProfileSet: DatabaseMethod {
    static let name = "profile.set"
    static let keys: Set<String> = ["user_id", "timezone"]
    struct Params: Sendable { let user: UUID; let timeZone: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        guard let zone = try params.timeZone() else { throw .invalidParams(field: "timezone", reason: "missing") }
        return Params(user: try params.userID(), timeZone: zone)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(profile: try context.habits.setTimeZone(user: params.user, timeZone: params.timeZone))
    }
}

enum HabitsCreate: DatabaseMethod {
    static let name = "habits.create"
    static let keys: Set<String> = ["user_id", "name", "icon", "color", "activated_at", "sort_order"]
    struct Params: Sendable { let user: UUID; let draft: HabitDraft }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), draft: HabitDraft(
            name: try params.requiredString("name"),
            icon: try params.optionalString("icon"),
            color: try params.optionalString("color"),
            activatedAt: try params.optionalTimestamp("activated_at"),
            sortOrder: try params.optionalInt("sort_order", range: sortOrderRange)
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(habit: try context.habits.createHabit(user: params.user, params.draft))
    }
}

enum HabitsUpdate: DatabaseMethod {
    static let name = "habits.update"
    static let keys: Set<String> = ["user_id", "id", "name", "icon", "color", "sort_order"]
    struct Params: Sendable { let user: UUID; let id: UUID; let changes: HabitChanges }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.uuid("id"), changes: HabitChanges(
            name: try params.optionalString("name"),
            icon: try params.clearableString("icon"),
            color: try params.clearableString("color"),
            sortOrder: try params.clearableInt("sort_order", range: sortOrderRange)
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        JSONValue(habit: try context.habits.updateHabit(user: params.user, id: params.id, params.changes))
    }
}

struct HabitReference: Sendable { let user: UUID; let id: UUID }

extension ParamsReader {
    func habitReference() throws(RPCError) -> HabitReference {
        HabitReference(user: try userID(), id: try uuid("id"))
    }
}

enum HabitsDeactivate: DatabaseMethod {
    static let name = "habits.deactivate"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> HabitReference { try params.habitReference() }
    static func run(_ params: HabitReference, in context: MethodContext) throws -> JSONValue {
        JSONValue(habit: try context.habits.deactivateHabit(user: params.user, id: params.id))
    }
}

enum HabitsActivate: DatabaseMethod {
    static let name = "habits.activate"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> HabitReference { try params.habitReference() }
    static func run(_ params: HabitReference, in context: MethodContext) throws -> JSONValue {
        JSONValue(habit: try context.habits.activateHabit(user: params.user, id: params.id))
    }
}

enum HabitsDelete: DatabaseMethod {
    static let name = "habits.delete"
    static let keys: Set<String> = ["user_id", "id"]
    static func decode(_ params: ParamsReader) throws(RPCError) -> HabitReference { try params.habitReference() }
    static func run(_ params: HabitReference, in context: MethodContext) throws -> JSONValue {
        try context.habits.deleteHabit(user: params.user, id: params.id)
        return ["deleted": true]
    }
}

enum HabitsList: DatabaseMethod {
    static let name = "habits.list"
    static let keys = Set<String>(["user_id", "include_inactive"]).union(PageCursor.keys)
    struct Params: Sendable { let user: UUID; let includeInactive: Bool; let page: PageRequest<HabitSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), includeInactive: try params.optionalBool("include_inactive") ?? false,
               page: try params.habitPage())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        let habits = try context.habits.listHabits(user: params.user, includeInactive: params.includeInactive, page: params.page)
        let next = habits.nextCursor(kind: HabitSortKey.cursorKind) { HabitSortKey($0).cursorFields }
        return .encoded(JSONWriter.encode(capacity: 128 + 320 * habits.count) { json in
            json.beginObject()
            json.key("habits"); json.beginArray()
            for habit in habits { json.habit(habit) }
            json.endArray()
            json.key("next_cursor"); json.string(next)
            json.endObject()
        })
    }
}

enum DayGet: SingleStatementMethod {
    static let name = "day.get"
    static let keys: Set<String> = ["user_id", "date", "timezone"]
    struct Params: Sendable { let user: UUID; let date: CalendarDate; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), date: try params.date("date"), timeZone: try params.timeZone())
    }
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<JSONValue> {
        try context.habits.dayStatement(user: params.user, date: params.date, timeZone: params.timeZone).map(encode)
    }

    static func encode(_ day: DayView) -> JSONValue {
        .encoded(JSONWriter.encode(capacity: 256 + 320 * day.habits.count + 40 * day.completed.count) { json in
            json.beginObject()
            json.key("date"); json.date(day.date)
            json.key("today"); json.date(day.today)
            json.key("is_future"); json.bool(day.isFuture)
            json.key("habits"); json.beginArray()
            for habit in day.habits { json.habit(habit) }
            json.endArray()
            // Sorted as their text: UUID bytes compare in the same order as lowercase hex.
            json.key("completed"); json.beginArray()
            for id in day.completed.sorted(by: UUID.textOrder) { json.uuid(id) }
            json.endArray()
            json.endObject()
        })
    }
}

// Not a SingleStatementMethod: a write can wait for a row lock (a concurrent toggle, an admin's
// transaction) up to the statement timeout, and would hold up every request sharing its round trip.
enum CompletionsSet: DatabaseMethod {
    static let name = "completions.set"
    static let keys: Set<String> = ["user_id", "template_id", "date", "completed", "timezone"]
    struct Params: Sendable { let user: UUID; let template: UUID; let date: CalendarDate; let completed: Bool; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), template: try params.uuid("template_id"), date: try params.date("date"),
               completed: try params.requiredBool("completed"), timeZone: try params.timeZone())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        let change = try context.habits.setCompletion(user: params.user, template: params.template, date: params.date,
                                                      completed: params.completed, timeZone: params.timeZone)
        return ["completed": .bool(change.completed), "changed": .bool(change.changed)]
    }
}

enum CompletionsToggle: DatabaseMethod {
    static let name = "completions.toggle"
    static let keys: Set<String> = ["user_id", "template_id", "date", "timezone"]
    struct Params: Sendable { let user: UUID; let template: UUID; let date: CalendarDate; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), template: try params.uuid("template_id"), date: try params.date("date"),
               timeZone: try params.timeZone())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        let completed = try context.habits.toggleCompletion(user: params.user, template: params.template, date: params.date,
                                                            timeZone: params.timeZone)
        return ["completed": .bool(completed)]
    }
}

enum WeekCounts: DatabaseMethod {
    static let name = "week.counts"
    static let keys: Set<String> = ["user_id", "date", "week_start", "timezone"]
    struct Params: Sendable { let user: UUID; let date: CalendarDate; let weekStart: WeekStart; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let weekStart: WeekStart
        if let text = try params.optionalString("week_start") {
            guard let parsed = WeekStart(rawValue: text) else {
                throw .invalidParams(field: "week_start", reason: "expected \"monday\" or \"sunday\"")
            }
            weekStart = parsed
        } else {
            weekStart = .monday
        }
        let date = try params.date("date")
        let first = weekStart.weekStart(containing: date)
        guard ParamsReader.dateRange.contains(first), ParamsReader.dateRange.contains(first.adding(days: 6)) else {
            throw .invalidParams(field: "date", reason: "its week must lie between 0001-01-01 and 9999-12-31")
        }
        return Params(user: try params.userID(), date: date, weekStart: weekStart, timeZone: try params.timeZone())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        let days = try context.habits.weekCounts(user: params.user, containing: params.date, weekStart: params.weekStart,
                                                 timeZone: params.timeZone)
        return [
            "week_start": JSONValue(params.weekStart.weekStart(containing: params.date)),
            "days": .array(days.map { ["date": JSONValue($0.date), "completed": .int($0.completed), "active": .int($0.active)] }),
        ]
    }
}
