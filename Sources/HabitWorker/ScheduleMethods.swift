import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// Schedules in params and results (docs/protocol.md, "Schedules"), and `habits.history`. The
// shapes are the baseline's `habit.valid_schedule`, the CHECK of every schedule column: the worker
// reads them here for a precise -32602 naming the member at fault; the CHECK stays the wall for
// every other writer (and its 23514 maps to field `schedule`, `invalid_schedule`).

extension HabitSchedule: SchemaComponent {
    static let componentName = "Schedule"

    /// One of the five shapes, each an object with exactly its members.
    static let objectSchema: JSONValue = .object(JSONObject([
        ("description", .string("When the habit is due. weekdays' days: ISO weekdays (1 = Monday … 7 = Sunday), distinct, written ascending. times_in_days: each block of `days` days from the period's first day needs `times` completions (times < days).")),
        ("oneOf", .array([
            JSONSchema.object([("type", JSONSchema.string(oneOf: ["daily"]))]),
            JSONSchema.object([
                ("type", JSONSchema.string(oneOf: ["weekdays"])),
                ("days", .object(JSONObject([
                    ("type", "array"), ("items", JSONSchema.integer(HabitSchedule.weekdayRange)),
                    ("minItems", .int(1)), ("maxItems", .int(7)), ("uniqueItems", true),
                ]))),
            ]),
            JSONSchema.object([("type", JSONSchema.string(oneOf: ["every_n_days"])), ("n", JSONSchema.integer(HabitSchedule.intervalRange))]),
            JSONSchema.object([("type", JSONSchema.string(oneOf: ["times_per_week"])), ("times", JSONSchema.integer(HabitSchedule.timesRange))]),
            JSONSchema.object([("type", JSONSchema.string(oneOf: ["times_in_days"])), ("times", JSONSchema.integer(1...364)),
                               ("days", JSONSchema.integer(HabitSchedule.blockRange))]),
        ])),
    ]))

    public func write(to json: inout JSONWriter) { json.schedule(self) }
    public var estimatedJSONBytes: Int { 64 }
}

extension JSONWriter {
    /// `{"type": …}` plus the type's member (docs/protocol.md, "Schedules").
    mutating func schedule(_ schedule: HabitSchedule) {
        beginObject()
        key("type"); string(schedule.typeName)
        switch schedule {
        case .daily:
            break
        case .weekdays(let days):
            key("days"); beginArray()
            for day in days { int(day) }
            endArray()
        case .everyNDays(let n):
            key("n"); int(n)
        case .timesPerWeek(let times):
            key("times"); int(times)
        case .timesInDays(let times, let days):
            key("times"); int(times)
            key("days"); int(days)
        }
        endObject()
    }
}

extension ParamsReader {
    /// The optional `schedule` of `habits.create` (absent or null: daily) and `habits.update`
    /// (absent or null: keep). Each failure names the member at fault: `schedule` (not an
    /// object), `schedule.type` (required / wrong_type / invalid_choice), `schedule.<key>`
    /// (unknown_key: a member the type does not have), `schedule.days`, `schedule.days[i]`,
    /// `schedule.n`, `schedule.times` (required / wrong_type / out_of_range / duplicate_value).
    func optionalSchedule(description: String) throws(RPCError) -> HabitSchedule? {
        if declares("schedule", schema: JSONSchema.nullable(HabitSchedule.schema), required: false, description: description) { return nil }
        switch optionalValue("schedule") {
        case nil, .null?: return nil
        case let value?: return try Self.schedule(value)
        }
    }

    static func schedule(_ value: JSONValue) throws(RPCError) -> HabitSchedule {
        guard case .object(let object) = value else {
            throw .invalidParams(field: "schedule", reason: RPCReason.wrongType, message: #"expected an object such as {"type":"daily"}"#)
        }
        let type: String
        switch object["type"] {
        case nil, .null?:
            throw .invalidParams(field: "schedule.type", reason: RPCReason.required, message: object["type"] == nil ? "missing" : "must not be null")
        case .string(let text)?:
            type = text
        default:
            throw .invalidParams(field: "schedule.type", reason: RPCReason.wrongType, message: "expected a string")
        }
        let members: [String]
        switch type {
        case "daily": members = []
        case "weekdays": members = ["days"]
        case "every_n_days": members = ["n"]
        case "times_per_week": members = ["times"]
        case "times_in_days": members = ["times", "days"]
        default:
            throw .invalidParams(field: "schedule.type", reason: RPCReason.invalidChoice,
                                 message: #"expected "daily", "weekdays", "every_n_days", "times_per_week" or "times_in_days""#)
        }
        for key in object.keys where key != "type" && !members.contains(key) {
            throw .invalidParams(field: "schedule." + key, reason: RPCReason.unknownKey, message: "not a member of schedule type \(type)")
        }
        let schedule: HabitSchedule
        switch members.first {
        case "times"? where type == "times_in_days":
            schedule = .timesInDays(times: try integer(try required(object, "times"), field: "schedule.times"),
                                    days: try integer(try required(object, "days"), field: "schedule.days"))
        case "days"?:
            guard case .array(let elements) = try required(object, "days") else {
                throw .invalidParams(field: "schedule.days", reason: RPCReason.wrongType, message: "expected an array of ISO weekdays")
            }
            var days: [Int] = []
            for (index, element) in elements.enumerated() {
                days.append(try integer(element, field: "schedule.days[\(index)]"))
            }
            schedule = .weekdays(days)
        case "n"?:
            schedule = .everyNDays(try integer(try required(object, "n"), field: "schedule.n"))
        case "times"?:
            schedule = .timesPerWeek(try integer(try required(object, "times"), field: "schedule.times"))
        default:
            schedule = .daily
        }
        do {
            return try schedule.validated()
        } catch {
            guard case let .invalidInput(field, reason, message) = error else { throw .internalError() }
            throw .invalidParams(field: field, reason: reason, message: message)
        }
    }

    private static func required(_ object: JSONObject, _ key: String) throws(RPCError) -> JSONValue {
        switch object[key] {
        case nil: throw .invalidParams(field: "schedule." + key, reason: RPCReason.required, message: "missing")
        case .null?: throw .invalidParams(field: "schedule." + key, reason: RPCReason.required, message: "must not be null")
        case let value?: return value
        }
    }

    /// An integer literal (`5`; not `5.0`, `1e2` or `"5"`), as `requiredInt` reads one.
    private static func integer(_ value: JSONValue, field: String) throws(RPCError) -> Int {
        guard case .number(let literal) = value,
              literal.utf8.allSatisfy({ ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "-") }) else {
            throw .invalidParams(field: field, reason: RPCReason.wrongType, message: "expected an integer")
        }
        guard let number = value.intValue else {
            throw .invalidParams(field: field, reason: RPCReason.outOfRange, message: "out of range")
        }
        return number
    }
}

// MARK: - habits.history

enum HabitsHistory: SingleStatementMethod {
    static let name = "habits.history"
    static let retry = RetrySafety.always
    static let summary = "A habit's periods of activity, oldest first, each with its schedule."
    static let errors: [DomainErrorCode] = [.notFound]
    typealias Result = HabitHistory
    static func decode(_ params: ParamsReader) throws(RPCError) -> OwnedID { try params.ownedID() }
    static func statement(_ params: OwnedID, in context: MethodContext) throws -> UserStatement<HabitHistory> {
        context.habits.historyStatement(user: params.user, id: params.id)
    }
}

extension HabitHistory: MethodResult {
    static let schema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("periods", JSONSchema.described(JSONSchema.array(of: JSONSchema.object([
            ("started_at", JSONSchema.described(ValueSchema.timestamp, "Start (inclusive).")),
            ("ended_at", JSONSchema.described(JSONSchema.nullable(ValueSchema.timestamp), "End (exclusive); null for the open period.")),
            ("schedule", HabitSchedule.schema),
        ])), "Oldest first; they never overlap, and at most the last is open. Empty for a habit that never was active.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("id"); json.uuid(id)
        json.key("periods"); json.beginArray()
        for period in periods {
            json.beginObject()
            json.key("started_at"); json.timestamp(period.startedAt)
            json.key("ended_at"); json.timestamp(period.endedAt)
            json.key("schedule"); json.schedule(period.schedule)
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 64 + 160 * periods.count }
}
