import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// The objects results are made of (docs/protocol.md, "Objects"): each one's writer and its JSON
// Schema, side by side. The document names each once, under components/schemas; results refer
// to it. Tests validate real results against these schemas (OpenRPCTests).

/// An object type the OpenRPC document defines once under `components/schemas/<componentName>`.
protocol SchemaComponent: MethodResult {
    static var componentName: String { get }
    static var objectSchema: JSONValue { get }
}

extension SchemaComponent {
    static var schema: JSONValue { OpenRPCDocument.reference(componentName) }
}

// The value types straight into a writer: habits are the bulk of `habits.list` and `day.get`
// responses, and building them as `JSONValue` trees first cost a third of the worker's time
// per `day.get` (see docs/performance.md).
extension JSONWriter {
    mutating func uuid(_ id: UUID) { asciiString { id.appendLowercase(to: &$0) } }
    mutating func date(_ date: CalendarDate) { asciiString { date.appendISO8601(to: &$0) } }
    mutating func timestamp(_ timestamp: PostgresTimestamp) { asciiString { timestamp.appendRFC3339(to: &$0) } }

    mutating func uuid(_ id: UUID?) {
        if let id { uuid(id) } else { null() }
    }

    mutating func date(_ date: CalendarDate?) {
        if let date { self.date(date) } else { null() }
    }

    mutating func timestamp(_ timestamp: PostgresTimestamp?) {
        if let timestamp { self.timestamp(timestamp) } else { null() }
    }

    /// `{id, name, icon, color, is_active, activated_at, deactivated_at, sort_order,
    /// created_at, updated_at, schedule}` (docs/protocol.md, "Habit"), and `due` and
    /// `current_streak` where given (day.get).
    mutating func habit(_ habit: Habit, due: Bool? = nil, currentStreak: CurrentStreak? = nil, detail: DayDetail? = nil) {
        beginObject()
        key("id"); uuid(habit.id)
        key("name"); string(habit.name)
        key("icon"); string(habit.icon)
        key("color"); string(habit.color)
        key("is_active"); bool(habit.isActive)
        key("activated_at"); timestamp(habit.activatedAt)
        key("deactivated_at"); timestamp(habit.deactivatedAt)
        key("sort_order"); if let order = habit.sortOrder { int(order) } else { null() }
        key("created_at"); timestamp(habit.createdAt)
        key("updated_at"); timestamp(habit.updatedAt)
        key("schedule"); schedule(habit.schedule)
        key("kind"); string(habit.measure.kind.rawValue)
        key("unit"); string(habit.measure.unit)
        key("target"); string(habit.measure.target.text)
        key("target_type"); string(habit.measure.targetType.rawValue)
        key("target_period"); string(habit.measure.targetPeriod.rawValue)
        key("archived_at"); timestamp(habit.archivedAt)
        key("area_id"); uuid(habit.areaID)
        if let due { key("due"); bool(due) }
        if let detail {
            // Where they apply (docs/protocol.md, "day.get"): the value and check-ins of a habit
            // counted from them (habit.is_counted in the statement: nil otherwise), the note of a
            // day that has one.
            if let value = detail.value, let checkins = detail.checkins {
                key("value"); string(value.text)
                key("checkins"); int(checkins)
            }
            if let note = detail.note { key("note"); string(note) }
            if let weekValue = detail.weekValue { key("week_value"); string(weekValue.text) }
        }
        if let currentStreak { key("current_streak"); self.currentStreak(currentStreak) }
        endObject()
    }

    /// docs/protocol.md, "Task".
    mutating func task(_ task: TaskItem) {
        beginObject()
        key("id"); uuid(task.id)
        key("title"); string(task.title)
        key("notes"); string(task.notes)
        key("list_id"); uuid(task.listID)
        key("state"); string(task.state.rawValue)
        key("scheduled_date"); date(task.scheduledDate)
        key("position"); int(task.position)
        key("completed_at"); timestamp(task.completedAt)
        key("created_at"); timestamp(task.createdAt)
        key("updated_at"); timestamp(task.updatedAt)
        endObject()
    }

    /// docs/protocol.md, "Area".
    mutating func area(_ area: Area) {
        beginObject()
        key("id"); uuid(area.id)
        key("name"); string(area.name)
        key("sort_order"); if let order = area.sortOrder { int(order) } else { null() }
        key("created_at"); timestamp(area.createdAt)
        key("updated_at"); timestamp(area.updatedAt)
        endObject()
    }

    /// docs/protocol.md, "List".
    mutating func taskList(_ list: TaskList) {
        beginObject()
        key("id"); uuid(list.id)
        key("name"); string(list.name)
        key("created_at"); timestamp(list.createdAt)
        key("updated_at"); timestamp(list.updatedAt)
        endObject()
    }
}

extension Habit: SchemaComponent {
    static let componentName = "Habit"
    static let objectSchema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("name", JSONSchema.string()),
        ("icon", JSONSchema.nullable(JSONSchema.string())),
        ("color", JSONSchema.nullable(JSONSchema.string())),
        ("is_active", JSONSchema.boolean),
        ("activated_at", ValueSchema.timestamp),
        ("deactivated_at", JSONSchema.nullable(ValueSchema.timestamp)),
        ("sort_order", JSONSchema.nullable(ValueSchema.int32)),
        ("created_at", ValueSchema.timestamp),
        ("updated_at", ValueSchema.timestamp),
        ("schedule", JSONSchema.described(HabitSchedule.schema, "The schedule in force now (the open period's), or from the next activation while inactive.")),
        ("kind", JSONSchema.described(JSONSchema.string(oneOf: HabitKind.allCases.map(\.rawValue)), "boolean (done or not) or measurable (a value a day); fixed at creation.")),
        ("unit", JSONSchema.described(JSONSchema.nullable(JSONSchema.string()), "A measurable habit's unit; null for a boolean habit, which counts times.")),
        ("target", JSONSchema.described(ValueSchema.decimal, "The value a day (a week, with target_period week) must reach to be done (a boolean habit: check-ins, default \"1\").")),
        ("target_type", JSONSchema.string(oneOf: TargetType.allCases.map(\.rawValue))),
        ("target_period", JSONSchema.described(JSONSchema.string(oneOf: TargetPeriod.allCases.map(\.rawValue)), "day, or week: the user's week's values summed, met once a week (schedule times_per_week 1); fixed at creation.")),
        ("archived_at", JSONSchema.described(JSONSchema.nullable(ValueSchema.timestamp), "When the habit was archived (habits.archive); null while not. Archived: hidden from day.get and habits.list's default view, history kept.")),
        ("area_id", JSONSchema.described(JSONSchema.nullable(ValueSchema.uuid), "The habit's area (areas.create); null for none.")),
    ])

    public func write(to json: inout JSONWriter) { json.habit(self) }
    public var estimatedJSONBytes: Int { 490 }
}

extension TaskItem: SchemaComponent {
    static let componentName = "Task"
    static let objectSchema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("title", JSONSchema.string()),
        ("notes", JSONSchema.nullable(JSONSchema.string())),
        ("list_id", JSONSchema.nullable(ValueSchema.uuid)),
        ("state", JSONSchema.string(oneOf: TaskState.allCases.map(\.rawValue))),
        ("scheduled_date", JSONSchema.nullable(ValueSchema.date)),
        ("position", ValueSchema.int32),
        ("completed_at", JSONSchema.nullable(ValueSchema.timestamp)),
        ("created_at", ValueSchema.timestamp),
        ("updated_at", ValueSchema.timestamp),
    ])

    public func write(to json: inout JSONWriter) { json.task(self) }
    public var estimatedJSONBytes: Int { 360 }
}

extension TaskList: SchemaComponent {
    static let componentName = "List"
    static let objectSchema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("name", JSONSchema.string()),
        ("created_at", ValueSchema.timestamp),
        ("updated_at", ValueSchema.timestamp),
    ])

    public func write(to json: inout JSONWriter) { json.taskList(self) }
    public var estimatedJSONBytes: Int { 160 }
}

extension Area: SchemaComponent {
    static let componentName = "Area"
    static let objectSchema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("name", JSONSchema.string()),
        ("sort_order", JSONSchema.described(JSONSchema.nullable(ValueSchema.int32), "The areas' order (ascending; null last, then by created_at, id).")),
        ("created_at", ValueSchema.timestamp),
        ("updated_at", ValueSchema.timestamp),
    ])

    public func write(to json: inout JSONWriter) { json.area(self) }
    public var estimatedJSONBytes: Int { 200 }
}

extension Profile: SchemaComponent {
    static let componentName = "Profile"
    static let objectSchema = JSONSchema.object([
        ("user_id", ValueSchema.uuid),
        ("timezone", JSONSchema.string()),
        ("week_start", JSONSchema.described(JSONSchema.string(oneOf: WeekStart.allCases.map(\.rawValue)),
                                            "First day of the user's week: times_per_week targets count in these weeks; week.counts' default.")),
        ("day_starts_at", JSONSchema.described(ValueSchema.dayStart,
                                               "Local time of day (HH:MM) at which each of the user's days begins; \"today\" and the day of every instant follow it.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("user_id"); json.uuid(userID)
        json.key("timezone"); json.string(timeZone)
        json.key("week_start"); json.string(weekStart.rawValue)
        json.key("day_starts_at"); json.string(dayStartsAt)
        json.endObject()
    }
}

/// `{"deleted": true}`, the result of every delete.
struct Deleted: MethodResult {
    static let schema = JSONSchema.object([("deleted", JSONSchema.described(JSONSchema.boolean, "Always true."))])

    func write(to json: inout JSONWriter) {
        json.object { $0.member("deleted", true) }
    }
}

/// `next_cursor` of a page (docs/protocol.md, "Pagination").
let nextCursorSchema = JSONSchema.described(JSONSchema.nullable(JSONSchema.string()),
                                            "Pass back as cursor for the next page; null on the last page.")
