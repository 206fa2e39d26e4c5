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
    static let summary = "The user's profile (time zone, week start, day start); UTC, Monday and 00:00 for a user without one."
    static func decode(_ params: ParamsReader) throws(RPCError) -> UUID { try params.userID() }
    static func run(_ user: UUID, in context: MethodContext) throws -> Profile {
        try context.habits.profile(user: user)
    }
}

enum ProfileSet: DatabaseMethod {
    static let name = "profile.set"
    static let retry = RetrySafety.always
    static let summary = "Creates or changes the user's profile: time zone, week start, day start (each kept when absent; at least one given)."
    struct Params: Sendable { let user: UUID; let timeZone: String?; let weekStart: WeekStart?; let dayStartsAt: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let zone = try params.profileTimeZone()
        let weekStart = try params.optionalOneOf("week_start", WeekStart.self)
        let dayStart = try params.optionalDayStart("day_starts_at")
        if zone == nil, weekStart == nil, dayStart == nil, !params.isDescribing {
            throw .invalidParams(field: "timezone", reason: RPCReason.required, message: "missing: give timezone, week_start or day_starts_at")
        }
        return Params(user: try params.userID(), timeZone: zone, weekStart: weekStart, dayStartsAt: dayStart)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Profile {
        try context.habits.setProfile(user: params.user, timeZone: params.timeZone, weekStart: params.weekStart, dayStartsAt: params.dayStartsAt)
    }
}

enum HabitsCreate: DatabaseMethod {
    static let name = "habits.create"
    static let retry = RetrySafety.withClientID
    static let summary = "Creates a habit; with a client id, safe to retry."
    static let errors: [DomainErrorCode] = [.limitExceeded, .idConflict]
    struct Params: Sendable { let user: UUID; let draft: HabitDraft }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        var draft = HabitDraft(
            id: try params.clientID(),
            name: try params.requiredString("name", description: "Trimmed, then 1–100 characters, no control characters."),
            icon: try params.optionalString("icon", description: "SF Symbol name: lowercase dot-separated words."),
            color: try params.optionalString("color", description: "#rrggbb in any case, stored uppercase."),
            activatedAt: try params.activationInstant(),
            sortOrder: try params.optionalInt("sort_order", range: sortOrderRange, description: "Default 1 + the user's highest."),
            schedule: try params.optionalSchedule(description: "The schedule of the first period. Absent or null: daily; with a weekly target, times_per_week 1 (the one it takes)."),
            measure: try measure(params),
            areaID: try params.optionalUUID("area_id", description: "One of the user's areas (areas.create). Absent or null: none.")
        )
        // A weekly target is met once a week (sql/0033): its schedule is times_per_week 1.
        if draft.schedule == nil, draft.measure.targetPeriod == .week { draft.schedule = .timesPerWeek(1) }
        return Params(user: user, draft: draft)
    }
    /// kind (default boolean), unit, target (default "1"), target_type, target_period.
    static func measure(_ params: ParamsReader) throws(RPCError) -> HabitMeasure {
        let given = try params.measureParams()
        return HabitMeasure(kind: given.kind ?? .boolean, unit: given.unit ?? nil, target: given.target ?? .one,
                            targetType: given.type ?? .atLeast, targetPeriod: given.period ?? .day)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Habit {
        try context.habits.createHabit(user: params.user, params.draft)
    }
}

enum HabitsUpdate: DatabaseMethod {
    static let name = "habits.update"
    static let retry = RetrySafety.always
    static let summary = "Changes a habit's name, icon, color, sort order, schedule, unit, target or area."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let id: UUID; let changes: HabitChanges }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID(), id = try params.uuid("id")
        var changes = HabitChanges(
            name: try params.optionalString("name", description: "Absent or null: keep."),
            icon: try params.clearableString("icon"),
            color: try params.clearableString("color"),
            sortOrder: try params.clearableInt("sort_order", range: sortOrderRange),
            schedule: try params.optionalSchedule(description: "A new schedule: while active, the open period ends now and one starts with it (habits.history). Absent or null: keep."),
            areaID: try params.clearableUUID("area_id")
        )
        let measure = try params.measureParams()
        (changes.kind, changes.unit, changes.target, changes.targetType, changes.targetPeriod) =
            (measure.kind, measure.unit, measure.target, measure.type, measure.period)
        return Params(user: user, id: id, changes: changes)
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

/// habits.archive / habits.unarchive (issue 33, item 2; sql/0035).
struct ArchiveParams: Sendable { let user: UUID; let template: UUID }

extension ParamsReader {
    func archiveParams() throws(RPCError) -> ArchiveParams {
        ArchiveParams(user: try userID(), template: try uuid("template_id", description: "The habit."))
    }
}

enum HabitsArchive: DatabaseMethod {
    static let name = "habits.archive"
    static let retry = RetrySafety.always
    static let summary = "Archives a habit (idempotent: the first archived_at stays): gone from day.get and habits.list's default view; history, streaks, sync and export kept; its period stays open."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> ArchiveParams { try params.archiveParams() }
    static func run(_ params: ArchiveParams, in context: MethodContext) throws -> Habit {
        try context.habits.setArchived(user: params.user, id: params.template, archived: true)
    }
}

enum HabitsUnarchive: DatabaseMethod {
    static let name = "habits.unarchive"
    static let retry = RetrySafety.always
    static let summary = "Brings an archived habit back (idempotent), unchanged."
    static let errors: [DomainErrorCode] = [.notFound]
    static func decode(_ params: ParamsReader) throws(RPCError) -> ArchiveParams { try params.archiveParams() }
    static func run(_ params: ArchiveParams, in context: MethodContext) throws -> Habit {
        try context.habits.setArchived(user: params.user, id: params.template, archived: false)
    }
}

enum HabitsMove: DatabaseMethod {
    static let name = "habits.move"
    static let retry = RetrySafety.always
    static let summary = "Moves a habit just before or just after another habit of the user in the daily list's order; the others keep their places."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let template: UUID; let before: UUID?; let after: UUID? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let template = try params.uuid("template_id", description: "The habit to move.")
        let before = try params.optionalUUID("before", description: "Another habit's id: put the habit just before it. Give before or after, not both.")
        let after = try params.optionalUUID("after", description: "Another habit's id: put the habit just after it.")
        if params.isDescribing { return Params(user: user, template: template, before: nil, after: nil) }
        try params.checkMoveAnchor(before: before, after: after, moved: template, noun: "habit", movedField: "template_id")
        return Params(user: user, template: template, before: before, after: after)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Habit {
        try context.habits.moveHabit(user: params.user, id: params.template, before: params.before, after: params.after)
    }
}

enum HabitsList: DatabaseMethod {
    static let name = "habits.list"
    static let retry = RetrySafety.always
    static let summary = "A page of the user's habits in display order."
    struct Params: Sendable { let user: UUID; let includeInactive: Bool; let includeArchived: Bool; let page: PageRequest<HabitSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(),
               includeInactive: try params.optionalBool("include_inactive", description: "Default false.") ?? false,
               includeArchived: try params.optionalBool("include_archived", description: "Also archived habits (habits.archive). Default false.") ?? false,
               page: try params.habitPage())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> HabitPage {
        let habits = try context.habits.listHabits(user: params.user, includeInactive: params.includeInactive,
                                                   includeArchived: params.includeArchived, page: params.page)
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
        var estimatedJSONBytes: Int { 128 + 360 * habits.count }
    }
}

extension DayView: MethodResult {
    static let schema = JSONSchema.object([
        ("date", ValueSchema.date),
        ("today", JSONSchema.described(ValueSchema.date, "Today in the zone used.")),
        ("is_future", JSONSchema.boolean),
        ("habits", JSONSchema.described(JSONSchema.array(of: dayHabitSchema),
                                        "The habits on date (a period of activity makes them on: past days it overlaps, or an open one from today on), in display order.")),
        ("completed", JSONSchema.described(JSONSchema.array(of: ValueSchema.uuid),
                                           "Ids (sorted) of the listed habits done on date.")),
        ("skipped", JSONSchema.described(JSONSchema.array(of: ValueSchema.uuid),
                                         "Ids (sorted) of the listed habits skipped on date.")),
        ("areas", JSONSchema.described(JSONSchema.array(of: areaDaySchema),
                                       "Every area of the user, in the areas' order, with its listed habits due and not skipped on date (due) and of those the done ones (done).")),
    ])

    static let areaDaySchema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("name", JSONSchema.string()),
        ("due", JSONSchema.described(JSONSchema.integer(0...1000), "The area's habits listed, due and not skipped on date.")),
        ("done", JSONSchema.described(JSONSchema.integer(0...1000), "Of those, the done ones.")),
        ("complete", JSONSchema.described(JSONSchema.boolean, "At least one is due and every one is done.")),
    ])

    /// A habit as the day lists it: the habit, and whether its schedule asks for it that day.
    static let dayHabitSchema = JSONSchema.extending(Habit.objectSchema, with: [
        ("due", JSONSchema.described(JSONSchema.boolean,
                                     "The schedule in force that day asks for the habit (times_per_week: the week's target was not met before that day).")),
        ("current_streak", JSONSchema.described(StatsSchema.currentStreak,
                                                "Only with include [\"streaks\"]: the current streak at date (habits.stats' current_streak).")),
        ("value", JSONSchema.described(ValueSchema.decimal, "A measurable habit, or a target other than 1: the day's value (its check-ins' sum; the target when done without check-ins).")),
        ("checkins", JSONSchema.described(JSONSchema.integer(0...100), "With value: how many check-ins the day has.")),
        ("note", JSONSchema.described(JSONSchema.string(), "Only when the day has a note: the note (notes.set).")),
        ("week_value", JSONSchema.described(ValueSchema.decimal, "A weekly target (target_period week): the value of the user's week holding date, its check-ins' sum; the week is met on the one day it shows done.")),
    ], optional: ["current_streak", "value", "checkins", "note", "week_value"])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("date"); json.date(date)
        json.key("today"); json.date(today)
        json.key("is_future"); json.bool(isFuture)
        json.key("habits"); json.beginArray()
        for habit in habits {
            json.habit(habit, due: due.contains(habit.id), currentStreak: currentStreaks.map { $0[habit.id] ?? CurrentStreak.zero },
                       detail: details[habit.id])
        }
        json.endArray()
        // Sorted as their text: UUID bytes compare in the same order as lowercase hex.
        json.key("completed"); json.beginArray()
        for id in completed.sorted(by: UUID.textOrder) { json.uuid(id) }
        json.endArray()
        json.key("skipped"); json.beginArray()
        for id in skipped.sorted(by: UUID.textOrder) { json.uuid(id) }
        json.endArray()
        json.key("areas"); json.beginArray()
        for area in areas {
            json.beginObject()
            json.key("id"); json.uuid(area.id)
            json.key("name"); json.string(area.name)
            json.key("due"); json.int(area.due)
            json.key("done"); json.int(area.done)
            json.key("complete"); json.bool(area.complete)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    public var estimatedJSONBytes: Int {
        256 + (currentStreaks == nil ? 510 : 560) * habits.count + 40 * (completed.count + skipped.count) + 500 * areas.count
    }
}

enum DayGet: SingleStatementMethod {
    static let name = "day.get"
    static let retry = RetrySafety.always
    static let summary = "One day: the habits on it, which are due, done and skipped."
    typealias Result = DayView
    struct Params: Sendable { let user: UUID; let date: CalendarDate; let timeZone: String?; let includeStreaks: Bool }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), date: try params.referenceDate("date", description: "Past or future."),
               timeZone: try params.timeZone(),
               includeStreaks: try params.optionalChoices("include", ["streaks"], description: "Extra members for each habit: \"streaks\" adds current_streak at date. Absent, null or []: none.").contains("streaks"))
    }
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<DayView> {
        try context.habits.dayStatement(user: params.user, date: params.date, timeZone: params.timeZone, includeStreaks: params.includeStreaks)
    }
}

// Not a SingleStatementMethod: a write can wait for a row lock (a concurrent toggle, an admin's
// transaction) up to the statement timeout, and would hold up every request sharing its round trip.
enum CompletionsSet: DatabaseMethod {
    static let name = "completions.set"
    static let retry = RetrySafety.always
    static let summary = "Sets a habit's state on a date: done, skipped or none (idempotent)."
    static let errors: [DomainErrorCode] = [.notFound, .futureDate, .habitNotActive]
    struct Params: Sendable {
        let user: UUID; let template: UUID; let date: CalendarDate; let state: DayState; let legacy: Bool; let timeZone: String?
        var value: DecimalValue? = nil
    }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID(), template = try params.uuid("template_id", description: "The habit.")
        let date = try params.writtenDate("date", description: "done: on or before today in the zone used; skipped (and none): up to today + 366 days.")
        let completed = try params.optionalBool("completed", description: "true = state done, false = state none (but, as always, not after today). Exactly one of completed, state and value.")
        let state = try params.optionalString("state", oneOf: DayState.allCases.map(\.rawValue),
                                              description: "done, skipped or none; replaces the day's other state. Exactly one of completed, state and value.")
        let value = try params.optionalDecimal("value", description: "The day's total becomes this value (\"0\": none): its check-ins are replaced by one. Exactly one of completed, state and value.")
        let timeZone = try params.timeZone()
        // All read before their combination is checked (a describing reader returns nil for each).
        if params.isDescribing { return Params(user: user, template: template, date: date, state: .done, legacy: true, timeZone: timeZone) }
        if let value {
            guard completed == nil, state == nil else {
                throw .invalidParams(field: "value", reason: InputFailure.notAllowed, message: "give one of completed, state and value")
            }
            return Params(user: user, template: template, date: date, state: .done, legacy: false, timeZone: timeZone, value: value)
        }
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
        if let value = params.value {
            let change = try context.habits.setDayValue(user: params.user, template: params.template, date: params.date,
                                                        value: value, timeZone: params.timeZone)
            return CompletionChange(state: change.day.state, changed: change.changed, day: change.day)
        }
        return params.legacy
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
        ("changed", JSONSchema.described(JSONSchema.boolean, "False when the day already was in that state (with value: had that value in one check-in).")),
        ("value", JSONSchema.described(ValueSchema.decimal, "Only with the value param: the day's value now.")),
        ("checkins", JSONSchema.described(JSONSchema.integer(0...100), "Only with the value param: the day's check-ins now.")),
        ("week_value", JSONSchema.described(ValueSchema.decimal, "Only with the value param, for a weekly target: the check-ins' sum of the user's week holding the day.")),
    ], optional: ["value", "checkins", "week_value"])

    public func write(to json: inout JSONWriter) {
        json.object { json in
            json.member("completed", completed)
            json.member("state", state.rawValue)
            json.member("changed", changed)
            if let day {
                json.member("value", day.value.text)
                json.member("checkins", day.checkins)
                if let weekValue = day.weekValue { json.member("week_value", weekValue.text) }
            }
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
               date: try params.writtenDate("date", description: "On or before today in the zone used."),
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
        let from = try params.writtenDate("from", description: "First day of the range.")
        let to = try params.writtenDate("to", description: "Last day (inclusive): on or after from, at most 365 days after it (366 days in all); when skipping, at most today + 366 days.")
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
    static let summary = "Per day of one week: the habits on it, and how many are done, due and skipped; the week's value of each counted habit."
    struct Params: Sendable { let user: UUID; let date: CalendarDate; let weekStart: WeekStart?; let timeZone: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let weekStart = try params.optionalOneOf("week_start", WeekStart.self)
        // The range makes the week's days dates the API accepts back (its week may begin in 1969).
        let date = try params.referenceDate("date", description: "Any day of the week.")
        return Params(user: try params.userID(), date: date, weekStart: weekStart, timeZone: try params.timeZone())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> Week {
        let week = try context.habits.weekSummary(user: params.user, containing: params.date, weekStart: params.weekStart,
                                                  timeZone: params.timeZone)
        guard let first = week.days.first else { throw PostgresError(kind: .unexpectedRowCount, message: "week.counts returned no day") }
        return Week(start: first.date, days: week.days, values: week.values)
    }

    struct Week: MethodResult {
        let start: CalendarDate
        let days: [DayCount]
        let values: [(templateID: UUID, value: DecimalValue)]

        static let schema = JSONSchema.object([
            ("week_start", ValueSchema.date),
            ("days", JSONSchema.array(of: JSONSchema.object([
                ("date", ValueSchema.date),
                ("completed", JSONSchema.described(JSONSchema.integer(0...Int.max), "Habits on that day done that day.")),
                ("active", JSONSchema.described(JSONSchema.integer(0...Int.max), "Habits on that day (as day.get lists them).")),
                ("due", JSONSchema.described(JSONSchema.integer(0...Int.max), "Of those, the due ones (day.get's due).")),
                ("skipped", JSONSchema.described(JSONSchema.integer(0...Int.max), "Of the due ones, the skipped ones (never more than due).")),
            ]))),
            ("values", JSONSchema.described(JSONSchema.array(of: JSONSchema.object([
                ("template_id", ValueSchema.uuid),
                ("value", JSONSchema.described(ValueSchema.decimal, "The week's value: its days' values summed (each the check-ins' sum; done without any, the target, or 0 at most).")),
            ])), "Each habit counted from check-ins (measurable, a target other than 1, or at most) that is on some day of the week, by id.")),
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
                json.key("due"); json.int(day.due)
                json.key("skipped"); json.int(day.skipped)
                json.endObject()
            }
            json.endArray()
            json.key("values"); json.beginArray()
            for (id, value) in values {
                json.beginObject()
                json.key("template_id"); json.uuid(id)
                json.member("value", value.text)
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
    }
}
