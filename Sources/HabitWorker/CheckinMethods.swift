import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// Measurable habits, check-ins and notes (docs/protocol.md, "checkins.add" … "notes.set").

extension ValueSchema {
    /// A decimal string such as "2.5" (DecimalValue): never a JSON number, whose binary
    /// floating-point reading would not be exact.
    static let decimal = JSONSchema.described(JSONSchema.string(minLength: 1),
                                              "A decimal string: digits, an optional point and at most 3 fraction digits, at most 999999999.999 (\"2.5\").")
    static let localTime = JSONSchema.described(JSONSchema.string(minLength: 5), "A local time of day, \"HH:MM\" or \"HH:MM:SS\".")
    static let dayStart = JSONSchema.described(JSONSchema.string(minLength: 5), "A local time of day in whole minutes, \"HH:MM\" (00:00 to 23:59).")
}

extension ParamsReader {
    /// A decimal string (`DecimalValue`); absent or null → nil. A JSON number is `wrong_type`
    /// (exactness: "2.5", not 2.5); anything else that is not such a decimal is `invalid_decimal`.
    func optionalDecimal(_ key: String, description: String) throws(RPCError) -> DecimalValue? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.decimal), required: false, description: description) { return nil }
        switch optionalValue(key) {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let value = DecimalValue(normalizing: text) else {
                throw .invalidParams(field: key, reason: InputFailure.invalidDecimal,
                                     message: "expected a decimal string such as \"2.5\" (at most 3 decimals, at most 999999999.999)")
            }
            return value
        default:
            throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected a decimal string such as \"2.5\", not a JSON number")
        }
    }

    /// "HH:MM" or "HH:MM:SS", 00:00 to 23:59:59; absent or null → nil.
    func optionalLocalTime(_ key: String, description: String) throws(RPCError) -> String? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.localTime), required: false, description: description) { return nil }
        guard let text = try optionalString(key) else { return nil }
        guard Self.isLocalTime(text) else {
            throw .invalidParams(field: key, reason: InputFailure.invalidTime, message: "expected a local time of day \"HH:MM\" or \"HH:MM:SS\"")
        }
        return text
    }

    /// `day_starts_at`: "HH:MM" (whole minutes); absent or null → nil.
    func optionalDayStart(_ key: String) throws(RPCError) -> String? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.dayStart), required: false,
                    description: "Local time of day (HH:MM) at which each day begins, e.g. \"03:00\": 01:30 then still belongs to the day before. Absent: kept (a new profile: 00:00).") { return nil }
        guard let text = try optionalString(key) else { return nil }
        guard Self.isDayStart(text) else {
            throw .invalidParams(field: key, reason: InputFailure.invalidTime, message: "expected a local time of day \"HH:MM\" (00:00 to 23:59)")
        }
        return text
    }

    /// "HH:MM", 00:00 to 23:59: a day's start (profiles.day_starts_at, whole minutes).
    static func isDayStart(_ text: String) -> Bool {
        text.utf8.count == 5 && isLocalTime(text)
    }

    /// "HH:MM" or "HH:MM:SS", 00:00 to 23:59:59.
    static func isLocalTime(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        let numbers = parts.compactMap { $0.utf8.count == 2 && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } ? Int($0) : nil }
        return (2...3).contains(parts.count) && numbers.count == parts.count && numbers[0] < 24 && numbers[1] < 60
            && (numbers.count == 2 || numbers[2] < 60)
    }

    /// habits.create's and habits.update's kind and target (sql/0029). Absent fields: nil.
    func measureParams() throws(RPCError) -> (kind: HabitKind?, unit: String??, target: DecimalValue?, type: TargetType?, period: TargetPeriod?) {
        (kind: try optionalOneOf("kind", HabitKind.self),
         unit: try clearableString("unit"),
         target: try optionalDecimal("target", description: "Measurable: the value a day must reach, above 0. Boolean: check-ins a day, a whole number 1–1000 (default 1)."),
         type: try optionalOneOf("target_type", TargetType.self),
         period: try optionalOneOf("target_period", TargetPeriod.self))
    }
}

extension DayValue {
    static let schemaMembers: [(String, JSONValue)] = [
        ("value", JSONSchema.described(ValueSchema.decimal, "The day's value: its check-ins' sum (the target for a day done without check-ins).")),
        ("checkins", JSONSchema.described(JSONSchema.integer(0...100), "How many check-ins the day has.")),
        ("state", JSONSchema.described(JSONSchema.string(oneOf: DayState.allCases.map(\.rawValue)), "The day's state now: done when the value meets the target (a weekly target: the day the week was met).")),
        ("week_value", JSONSchema.described(ValueSchema.decimal, "Only for a weekly target: the check-ins' sum of the user's week holding the day.")),
    ]

    func writeMembers(to json: inout JSONWriter) {
        json.member("value", value.text)
        json.member("checkins", checkins)
        json.member("state", state.rawValue)
        if let weekValue { json.member("week_value", weekValue.text) }
    }
}

enum CheckinsAdd: DatabaseMethod {
    static let name = "checkins.add"
    static let retry = RetrySafety.withClientID
    static let summary = "Adds a check-in (a value) to a habit's day; with a client id, safe to retry."
    static let errors: [DomainErrorCode] = [.notFound, .futureDate, .habitNotActive, .limitExceeded, .idConflict]
    struct Params: Sendable {
        let user: UUID; let template: UUID; let date: CalendarDate; let value: DecimalValue
        let time: String?; let clientID: String?; let timeZone: String?
    }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), template: try params.uuid("template_id", description: "The habit."),
               date: try params.writtenDate("date", description: "On or before today in the zone used, on a day the habit is on."),
               value: try params.optionalDecimal("value", description: "Above 0; a boolean habit's a whole number of times. Absent or null: \"1\".") ?? .one,
               time: try params.optionalLocalTime("time", description: "The local time of day of the check-in, kept with it."),
               clientID: try params.optionalString("client_id", description: "1–100 characters, no white space: a retried add with the same client id is applied once."),
               timeZone: try params.timeZone())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> CheckinAdded {
        try context.habits.addCheckin(user: params.user, template: params.template, date: params.date, value: params.value,
                                      time: params.time, clientID: params.clientID, timeZone: params.timeZone)
    }
}

extension CheckinAdded: MethodResult {
    static let schema = JSONSchema.object([
        ("id", JSONSchema.described(ValueSchema.uuid, "The check-in's id (checkins.remove takes it).")),
        ("created", JSONSchema.described(JSONSchema.boolean, "False when a retried client id found its check-in: nothing was written.")),
    ] + DayValue.schemaMembers, optional: ["week_value"])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("id"); json.uuid(id)
        json.member("created", created)
        day.writeMembers(to: &json)
        json.endObject()
    }
}

enum CheckinsRemove: DatabaseMethod {
    static let name = "checkins.remove"
    static let retry = RetrySafety.always
    static let summary = "Removes a check-in; the day's value and state follow."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let id: UUID }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), id: try params.uuid("checkin_id", description: "The check-in (checkins.add's id)."))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> CheckinRemoved {
        try context.habits.removeCheckin(user: params.user, id: params.id)
    }
}

extension CheckinRemoved: MethodResult {
    static let schema = JSONSchema.object([
        ("template_id", ValueSchema.uuid),
        ("date", ValueSchema.date),
    ] + DayValue.schemaMembers, optional: ["week_value"])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("template_id"); json.uuid(templateID)
        json.key("date"); json.date(date)
        day.writeMembers(to: &json)
        json.endObject()
    }
}

enum CheckinsList: DatabaseMethod {
    static let name = "checkins.list"
    static let retry = RetrySafety.always
    static let summary = "A habit's check-ins on a day, oldest first, with the day's value and state."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let template: UUID; let date: CalendarDate }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), template: try params.uuid("template_id", description: "The habit."),
               date: try params.referenceDate("date", description: "Any day."))
    }
    static func run(_ params: Params, in context: MethodContext) throws -> CheckinList {
        let (checkins, day) = try context.habits.checkins(user: params.user, template: params.template, date: params.date)
        return CheckinList(checkins: checkins, day: day)
    }
}

extension Checkin {
    /// A check-in as checkins.list lists it; `withDay`, with its habit and day, as sync.pull
    /// sends it (JSONWriter.checkin writes the same members).
    static func schema(withDay: Bool) -> JSONValue {
        JSONSchema.object([("id", ValueSchema.uuid)]
            + (withDay ? [("template_id", ValueSchema.uuid), ("date", ValueSchema.date)] : [])
            + [("value", ValueSchema.decimal),
               ("time", JSONSchema.nullable(ValueSchema.localTime)),
               ("client_id", JSONSchema.nullable(JSONSchema.string())),
               ("created_at", ValueSchema.timestamp)])
    }
}

extension JSONWriter {
    /// `Checkin.schema(withDay:)`'s object.
    mutating func checkin(_ checkin: Checkin, withDay: Bool) {
        beginObject()
        key("id"); uuid(checkin.id)
        if withDay {
            key("template_id"); uuid(checkin.templateID)
            key("date"); date(checkin.date)
        }
        member("value", checkin.value.text)
        key("time"); string(checkin.time)
        key("client_id"); string(checkin.clientID)
        key("created_at"); timestamp(checkin.createdAt)
        endObject()
    }
}

struct CheckinList: MethodResult {
    let checkins: [Checkin]
    let day: DayValue

    static let schema = JSONSchema.object([
        ("checkins", JSONSchema.array(of: Checkin.schema(withDay: false))),
        ("value", JSONSchema.described(ValueSchema.decimal,
                                       "The day's value: its check-ins' sum (for a day done without check-ins the target, or 0 at most).")),
        ("state", JSONSchema.described(JSONSchema.string(oneOf: DayState.allCases.map(\.rawValue)), "The day's state.")),
        ("week_value", JSONSchema.described(ValueSchema.decimal, "Only for a weekly target: the check-ins' sum of the user's week holding the day.")),
    ], optional: ["week_value"])

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("checkins"); json.array(checkins) { json, checkin in json.checkin(checkin, withDay: false) }
        json.member("value", day.value.text)
        json.member("state", day.state.rawValue)
        if let weekValue = day.weekValue { json.member("week_value", weekValue.text) }
        json.endObject()
    }

    var estimatedJSONBytes: Int { 80 + 160 * checkins.count }
}

enum NotesSet: DatabaseMethod {
    static let name = "notes.set"
    static let retry = RetrySafety.always
    static let summary = "Sets or clears the note of a habit's day."
    static let errors: [DomainErrorCode] = [.notFound]
    struct Params: Sendable { let user: UUID; let template: UUID; let date: CalendarDate; let note: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID(), template = try params.uuid("template_id", description: "The habit.")
        let date = try params.referenceDate("date", description: "Any day, done or not.")
        if params.declares("note", schema: JSONSchema.nullable(JSONSchema.string()), required: true,
                           description: "Kept as written, at most 1000 characters; null or \"\" clears the note.") {
            return Params(user: user, template: template, date: date, note: nil)
        }
        let note: String?
        switch try params.requiredValue("note") {
        case .null: note = nil
        case .string(let text): note = text.isEmpty ? nil : text
        default: throw .invalidParams(field: "note", reason: RPCReason.wrongType, message: "expected a string or null")
        }
        return Params(user: user, template: template, date: date, note: note)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> NoteChange {
        NoteChange(note: params.note, changed: try context.habits.setNote(user: params.user, template: params.template,
                                                                           date: params.date, note: params.note))
    }
}

struct NoteChange: MethodResult {
    let note: String?
    let changed: Bool

    static let schema = JSONSchema.object([
        ("note", JSONSchema.described(JSONSchema.nullable(JSONSchema.string()), "The day's note now (null: none).")),
        ("changed", JSONSchema.described(JSONSchema.boolean, "False when the day already had that note.")),
    ])

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("note"); json.string(note)
        json.member("changed", changed)
        json.endObject()
    }

    var estimatedJSONBytes: Int { 40 + 3 * (note?.utf8.count ?? 4) }
}
