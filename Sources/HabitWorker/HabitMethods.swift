import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// The JSON-RPC methods of the habit domain. docs/protocol.md documents each one; each method's
// `decode` is the one declaration of its params (see `MethodDeclaration`).

let sortOrderRange = Int(Int32.min)...Int(Int32.max)

extension ParamsReader {
    /// The optional `id` of the creates (`habits.create`, `lists.create`, `tasks.create`).
    func clientID() throws(RPCError) -> UUID? {
        try optionalUUID("id", description: "The client's id for the new row: a retry with the same id and fields returns the existing row (docs/protocol.md, \"Retries and unknown outcomes\"). Absent or null: generated.")
    }
}

enum SystemPing: LocalMethod {
    static let name = "system.ping"
    static let retry = RetrySafety.always
    static let summary = "Answers {\"ok\": true} without the database."
    static func decode(_ params: ParamsReader) throws(RPCError) {}
    static func run(_ params: Void) throws(RPCError) -> Pong { Pong() }

    struct Pong: MethodResult {
        static let schema = JSONSchema.object([("ok", JSONSchema.boolean)])
        func write(to json: inout JSONWriter) { json.object { $0.member("ok", true) } }
    }
}

enum SystemHealth: DatabaseMethod {
    static let name = "system.health"
    static let retry = RetrySafety.always
    static let summary = "Checks the database with one query and returns the schema version."
    static func decode(_ params: ParamsReader) throws(RPCError) {}
    static func run(_ params: Void, in context: MethodContext) throws -> Health {
        Health(schemaVersion: try Migrator.schemaVersion(context.connection))
    }

    struct Health: MethodResult {
        let schemaVersion: Int
        static let schema = JSONSchema.object([
            ("database", JSONSchema.string(oneOf: ["ok"])),
            ("schema_version", JSONSchema.described(JSONSchema.integer(), "The highest applied migration.")),
        ])
        func write(to json: inout JSONWriter) {
            json.object { json in
                json.member("database", "ok")
                json.member("schema_version", schemaVersion)
            }
        }
    }
}

enum ProfileGet: DatabaseMethod {
    static let name = "profile.get"
    static let retry = RetrySafety.always
    static let summary = "The user's profile (time zone); UTC for a user without one."
    static func decode(_ params: ParamsReader) throws(RPCError) -> UUID { try params.userID() }
    static func run(_ user: UUID, in context: MethodContext) throws -> Profile {
        try context.habits.profile(user: user)
    }
}

enum ProfileSet: DatabaseMethod {
    static let name = "profile.set"
    static let retry = RetrySafety.always
    static let summary = "Creates or replaces the user's profile."
    struct Params: Sendable { let user: UUID; let timeZone: String }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let zone = try params.requiredTimeZone()
        return Params(user: try params.userID(), timeZone: zone)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Profile {
        try context.habits.setTimeZone(user: params.user, timeZone: params.timeZone)
    }
}

enum HabitsCreate: DatabaseMethod {
    static let name = "habits.create"
    static let retry = RetrySafety.withClientID
    static let summary = "Creates a habit; with a client id, safe to retry."
    static let errors: [DomainErrorCode] = [.limitExceeded, .idConflict]
    struct Params: Sendable { let user: UUID; let draft: HabitDraft }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), draft: HabitDraft(
            id: try params.clientID(),
            name: try params.requiredString("name", description: "Trimmed, then 1–100 characters, no control characters."),
            icon: try params.optionalString("icon", description: "SF Symbol name: lowercase dot-separated words."),
            color: try params.optionalString("color", description: "#rrggbb in any case, stored uppercase."),
            activatedAt: try params.optionalTimestamp("activated_at", description: "When the habit starts; default now."),
            sortOrder: try params.optionalInt("sort_order", range: sortOrderRange, description: "Default 1 + the user's highest.")
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Habit {
        try context.habits.createHabit(user: params.user, params.draft)
    }
}

enum HabitsUpdate: DatabaseMethod {
    static let name = "habits.update"
    static let retry = RetrySafety.always
    static let summary = "Changes a habit's name, icon, color or sort order."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let id: UUID; let changes: HabitChanges }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.uuid("id"), changes: HabitChanges(
            name: try params.optionalString("name", description: "Absent or null: keep."),
            icon: try params.clearableString("icon"),
            color: try params.clearableString("color"),
            sortOrder: try params.clearableInt("sort_order", range: sortOrderRange)
        ))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Habit {
        try context.habits.updateHabit(user: params.user, id: params.id, params.changes)
    }
}

enum HabitsDeactivate: DatabaseMethod {
    static let name = "habits.deactivate"
    static let retry = RetrySafety.always
    static let summary = "Deactivates a habit (idempotent); its completions are kept."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> Habit {
        try context.habits.deactivateHabit(user: params.user, id: params.id)
    }
}

enum HabitsActivate: DatabaseMethod {
    static let name = "habits.activate"
    static let retry = RetrySafety.always
    static let summary = "Activates a habit again (idempotent); activated_at keeps its value."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> Habit {
        try context.habits.activateHabit(user: params.user, id: params.id)
    }
}

enum HabitsDelete: DatabaseMethod {
    static let name = "habits.delete"
    static let retry = RetrySafety.always
    static let summary = "Deletes a habit and its completions."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func run(_ params: OwnedID, in context: MethodContext) throws -> Deleted {
        try context.habits.deleteHabit(user: params.user, id: params.id)
        return Deleted()
    }
}

enum HabitsList: DatabaseMethod {
    static let name = "habits.list"
    static let retry = RetrySafety.always
    static let summary = "A page of the user's habits in display order."
    struct Params: Sendable { let user: UUID; let includeInactive: Bool; let page: PageRequest<HabitSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(),
               includeInactive: try params.optionalBool("include_inactive", description: "Default false.") ?? false,
               page: try params.habitPage())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> HabitPage {
        let habits = try context.habits.listHabits(user: params.user, includeInactive: params.includeInactive, page: params.page)
        return HabitPage(habits: habits, nextCursor: habits.nextCursor(kind: HabitSortKey.cursorKind) { HabitSortKey($0).cursorFields })
    }

    struct HabitPage: MethodResult {
        let habits: Page<Habit>
        let nextCursor: String?

        static let schema = JSONSchema.object([
            ("habits", JSONSchema.array(of: Habit.schema)),
            ("next_cursor", nextCursorSchema),
        ])
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("habits"); json.beginArray()
            for habit in habits { json.habit(habit) }
            json.endArray()
            json.key("next_cursor"); json.string(nextCursor)
            json.endObject()
        }
        var estimatedJSONBytes: Int { 128 + 320 * habits.count }
    }
}

extension DayView: MethodResult {
    static let schema = JSONSchema.object([
        ("date", ValueSchema.date),
        ("today", JSONSchema.described(ValueSchema.date, "Today in the zone used.")),
        ("is_future", JSONSchema.boolean),
        ("habits", JSONSchema.described(JSONSchema.array(of: Habit.schema),
                                        "The habits on date (a period of activity makes them on: past days it overlaps, or an open one from today on), in display order.")),
        ("completed", JSONSchema.described(JSONSchema.array(of: ValueSchema.uuid),
                                           "Ids (sorted) of all the user's completions dated date, of listed habits or not.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("date"); json.date(date)
        json.key("today"); json.date(today)
        json.key("is_future"); json.bool(isFuture)
        json.key("habits"); json.beginArray()
        for habit in habits { json.habit(habit) }
        json.endArray()
        // Sorted as their text: UUID bytes compare in the same order as lowercase hex.
        json.key("completed"); json.beginArray()
        for id in completed.sorted(by: UUID.textOrder) { json.uuid(id) }
        json.endArray()
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 256 + 320 * habits.count + 40 * completed.count }
}

enum DayGet: SingleStatementMethod {
    static let name = "day.get"
    static let retry = RetrySafety.always
    static let summary = "One day: the habits active on it and the completions dated it."
    typealias Result = DayView
    struct Params: Sendable { let user: UUID; let date: CalendarDate; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), date: try params.date("date", description: "Any date, past or future."),
               timeZone: try params.timeZone())
    }
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<DayView> {
        try context.habits.dayStatement(user: params.user, date: params.date, timeZone: params.timeZone)
    }
}

// Not a SingleStatementMethod: a write can wait for a row lock (a concurrent toggle, an admin's
// transaction) up to the statement timeout, and would hold up every request sharing its round trip.
enum CompletionsSet: DatabaseMethod {
    static let name = "completions.set"
    static let retry = RetrySafety.always
    static let summary = "Sets a habit's state on a date: done, skipped or none (idempotent)."
    static let errors: [DomainErrorCode] = [.notFound, .futureDate, .habitNotActive]
    struct Params: Sendable { let user: UUID; let template: UUID; let date: CalendarDate; let state: DayState; let legacy: Bool; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID(), template = try params.uuid("template_id", description: "The habit.")
        let date = try params.date("date", description: "done: on or before today in the zone used; skipped (and none): up to today + 366 days.")
        let completed = try params.optionalBool("completed", description: "true = state done, false = state none (but, as always, not after today). Exactly one of completed and state.")
        let state = try params.optionalString("state", oneOf: DayState.allCases.map(\.rawValue),
                                              description: "done, skipped or none; replaces the day's other state. Exactly one of completed and state.")
        let timeZone = try params.timeZone()
        // Both read before their combination is checked (a describing reader returns nil for both).
        if params.isDescribing { return Params(user: user, template: template, date: date, state: .done, legacy: true, timeZone: timeZone) }
        switch (completed, state) {
        case (let completed?, nil):
            return Params(user: user, template: template, date: date, state: completed ? .done : .none, legacy: true, timeZone: timeZone)
        case (nil, let state?):
            return Params(user: user, template: template, date: date, state: DayState(rawValue: state) ?? .none, legacy: false, timeZone: timeZone)
        case (_?, _?):
            throw .invalidParams(field: "state", reason: InputFailure.notAllowed, message: "give either completed or state, not both")
        case (nil, nil):
            // Named as before `state` existed: the field every older client knows.
            throw .invalidParams(field: "completed", reason: RPCReason.required, message: "missing: give completed or state")
        }
    }
    static func run(_ params: Params, in context: MethodContext) throws -> CompletionChange {
        params.legacy
            ? try context.habits.setCompletion(user: params.user, template: params.template, date: params.date,
                                               completed: params.state == .done, timeZone: params.timeZone)
            : try context.habits.setDayState(user: params.user, template: params.template, date: params.date,
                                             state: params.state, timeZone: params.timeZone)
    }
}

extension CompletionChange: MethodResult {
    static let schema = JSONSchema.object([
        ("completed", JSONSchema.described(JSONSchema.boolean, "Whether the day is done now (state = done).")),
        ("state", JSONSchema.described(JSONSchema.string(oneOf: DayState.allCases.map(\.rawValue)), "The day's state now.")),
        ("changed", JSONSchema.described(JSONSchema.boolean, "False when the day already was in that state.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.member("completed", completed)
            json.member("state", state.rawValue)
            json.member("changed", changed)
        }
    }
}

enum CompletionsToggle: DatabaseMethod {
    static let name = "completions.toggle"
    static let retry = RetrySafety.never
    static let summary = "Flips whether a habit is completed on a date (not idempotent)."
    static let errors: [DomainErrorCode] = [.notFound, .futureDate, .habitNotActive]
    struct Params: Sendable { let user: UUID; let template: UUID; let date: CalendarDate; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), template: try params.uuid("template_id", description: "The habit."),
               date: try params.date("date", description: "On or before today in the zone used."),
               timeZone: try params.timeZone())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Toggled {
        Toggled(completed: try context.habits.toggleCompletion(user: params.user, template: params.template, date: params.date,
                                                               timeZone: params.timeZone))
    }

    struct Toggled: MethodResult {
        let completed: Bool
        static let schema = JSONSchema.object([("completed", JSONSchema.described(JSONSchema.boolean, "The new state."))])
        func write(to json: inout JSONWriter) { json.object { $0.member("completed", completed) } }
    }
}

enum SkipsSetRange: DatabaseMethod {
    static let name = "skips.set_range"
    static let retry = RetrySafety.always
    static let summary = "Skips (or unskips) every habit, or one, on each day of a range of at most 366 days (idempotent)."
    static let errors: [DomainErrorCode] = [.notFound, .futureDate, .habitNotActive]
    struct Params: Sendable { let user: UUID; let template: UUID?; let from: CalendarDate; let to: CalendarDate; let skipped: Bool; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let template = try params.optionalUUID("template_id", description: "Only this habit. Absent or null: every habit of the user.")
        let from = try params.date("from", description: "First day of the range.")
        let to = try params.date("to", description: "Last day (inclusive): on or after from, at most 365 days after it (366 days in all); when skipping, at most today + 366 days.")
        let skipped = try params.requiredBool("skipped", description: "true: skip each day a habit is on and not done (done days stay done); false: remove the range's skips.")
        let timeZone = try params.timeZone()
        guard to >= from else {
            throw .invalidParams(field: "to", reason: RPCReason.outOfRange, message: "must be on or after from")
        }
        guard from.adding(days: HabitRepository.maxSkipRangeDays - 1) >= to else {
            throw .invalidParams(field: "to", reason: RPCReason.outOfRange, message: "the range may hold at most \(HabitRepository.maxSkipRangeDays) days")
        }
        return Params(user: user, template: template, from: from, to: to, skipped: skipped, timeZone: timeZone)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> SkipRangeChange {
        try context.habits.setSkips(user: params.user, template: params.template, from: params.from, to: params.to,
                                    skipped: params.skipped, timeZone: params.timeZone)
    }
}

extension SkipRangeChange: MethodResult {
    static let schema = JSONSchema.object([
        ("changed", JSONSchema.described(JSONSchema.integer(0...Int.max), "The number of habit-days skipped (or unskipped) by this call; 0 when the range already was so.")),
        ("days", JSONSchema.described(JSONSchema.array(of: ValueSchema.date), "The dates (sorted) on which something changed.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("changed"); json.int(changed)
        json.key("days"); json.beginArray()
        for day in days { json.date(day) }
        json.endArray()
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 64 + 13 * days.count }
}

enum WeekCounts: DatabaseMethod {
    static let name = "week.counts"
    static let retry = RetrySafety.always
    static let summary = "Per day of one week: the active habits and their completions."
    struct Params: Sendable { let user: UUID; let date: CalendarDate; let weekStart: WeekStart; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let weekStart = try params.optionalOneOf("week_start", WeekStart.self) ?? .monday
        let date = try params.date("date", description: "Any day of the week; the whole week must lie in 0001-01-01…9999-12-31.")
        // The placeholders a describing reader returns pass this check, so the reads after it still declare.
        let first = weekStart.weekStart(containing: date)
        guard ParamsReader.dateRange.contains(first), ParamsReader.dateRange.contains(first.adding(days: 6)) else {
            throw .invalidParams(field: "date", reason: RPCReason.outOfRange, message: "its week must lie between 0001-01-01 and 9999-12-31")
        }
        return Params(user: try params.userID(), date: date, weekStart: weekStart, timeZone: try params.timeZone())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Week {
        let days = try context.habits.weekCounts(user: params.user, containing: params.date, weekStart: params.weekStart,
                                                 timeZone: params.timeZone)
        return Week(start: params.weekStart.weekStart(containing: params.date), days: days)
    }

    struct Week: MethodResult {
        let start: CalendarDate
        let days: [DayCount]

        static let schema = JSONSchema.object([
            ("week_start", ValueSchema.date),
            ("days", JSONSchema.array(of: JSONSchema.object([
                ("date", ValueSchema.date),
                ("completed", JSONSchema.integer(0...Int.max)),
                ("active", JSONSchema.integer(0...Int.max)),
            ]))),
        ])
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("week_start"); json.date(start)
            json.key("days"); json.beginArray()
            for day in days {
                json.beginObject()
                json.key("date"); json.date(day.date)
                json.key("completed"); json.int(day.completed)
                json.key("active"); json.int(day.active)
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
    }
}
