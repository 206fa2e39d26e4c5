import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// Reminders (docs/protocol.md, "Reminders"; issue 33, item 3): a user's reminders.set and
// reminders.list, and the push sender's reminders.due, reminders.claim and reminders.ack — a
// service's methods, with no user_id, that the gateway must never expose to users.

extension ReminderDays {
    static let schema = JSONSchema.described(
        .object(JSONObject([("oneOf", [JSONSchema.string(oneOf: ["due"]), JSONSchema.array(of: JSONSchema.integer(1...7))])])),
        "\"due\": every due day of the habit; or ISO weekdays 1 (Monday) … 7 (Sunday) of the habit's day: only due days that are one of them.")
}

extension Reminder {
    static let schema = JSONSchema.object([
        ("id", ValueSchema.uuid),
        ("template_id", ValueSchema.uuid),
        ("time", JSONSchema.described(ValueSchema.dayStart, "Local time of day, \"HH:MM\", in the user's zone.")),
        ("days", ReminderDays.schema),
        ("created_at", ValueSchema.timestamp),
        ("updated_at", ValueSchema.timestamp),
    ])
}

extension JSONWriter {
    mutating func reminder(_ reminder: Reminder) {
        beginObject()
        key("id"); uuid(reminder.id)
        key("template_id"); uuid(reminder.templateID)
        member("time", reminder.time)
        key("days")
        switch reminder.days {
        case .due: string("due")
        case .weekdays(let days): array(days) { json, day in json.int(day) }
        }
        key("created_at"); timestamp(reminder.createdAt)
        key("updated_at"); timestamp(reminder.updatedAt)
        endObject()
    }

    mutating func firing(_ firing: ReminderFiring) {
        beginObject()
        member("firing_id", firing.firingID)
        key("user_id"); uuid(firing.userID)
        key("template_id"); uuid(firing.templateID)
        key("reminder_id"); uuid(firing.reminderID)
        key("fire_at"); timestamp(firing.fireAt)
        key("local_date"); date(firing.localDate)
        member("local_time", firing.localTime)
        key("habit_day"); date(firing.habitDay)
        member("name", firing.name)
        if let lease = firing.leaseUntil { key("lease_until"); timestamp(lease) }
        endObject()
    }
}

struct ReminderList: MethodResult {
    let reminders: [Reminder]
    static let schema = JSONSchema.object([("reminders", JSONSchema.array(of: Reminder.schema))])
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("reminders"); json.array(reminders) { json, reminder in json.reminder(reminder) }
        json.endObject()
    }
    var estimatedJSONBytes: Int { 40 + 220 * reminders.count }
}

extension ParamsReader {
    /// reminders.set's `reminders`: at most 24 of {time "HH:MM", days "due" | [1–7…]}, no two
    /// alike; each error names its path (`reminders[2].days`).
    func reminderSpecs() throws(RPCError) -> [ReminderSpec] {
        let itemSchema = JSONSchema.object([
            ("time", JSONSchema.described(ValueSchema.dayStart, "Local time of day \"HH:MM\" (00:00–23:59) in the user's zone; belongs to the habit's day holding it (the profile's day_starts_at).")),
            ("days", JSONSchema.described(ReminderDays.schema, "Default \"due\".")),
        ], optional: ["days"])
        if declares("reminders", schema: JSONSchema.array(of: itemSchema), required: true,
                    description: "The habit's reminders, replacing those it has (unchanged ones keep their ids); [] removes them all. At most 24.") { return [] }
        let items = try requiredArray("reminders")
        guard items.count <= HabitRepository.maxRemindersPerHabit else {
            throw .invalidParams(field: "reminders", reason: InputFailure.tooMany, message: "at most \(HabitRepository.maxRemindersPerHabit) reminders a habit")
        }
        var specs: [ReminderSpec] = []
        for (index, item) in items.enumerated() {
            let path = "reminders[\(index)]"
            guard case .object(let object) = item else {
                throw .invalidParams(field: path, reason: RPCReason.wrongType, message: "expected an object {time, days}")
            }
            for member in object.members where member.key != "time" && member.key != "days" {
                throw .invalidParams(field: "\(path).\(member.key)", reason: RPCReason.unknownKey, message: "unknown key: a reminder has time and days")
            }
            guard case .string(let time)? = object["time"] else {
                throw .invalidParams(field: "\(path).time", reason: object["time"] == nil ? RPCReason.required : RPCReason.wrongType,
                                     message: "expected a local time of day \"HH:MM\"")
            }
            guard Self.isDayStart(time) else {
                throw .invalidParams(field: "\(path).time", reason: InputFailure.invalidTime, message: "expected a local time of day \"HH:MM\" (00:00 to 23:59)")
            }
            let days: ReminderDays
            switch object["days"] {
            case nil, .null?, .string("due")?: days = .due
            case .array(let list)?:
                var weekdays: [Int] = []
                for (position, value) in list.enumerated() {
                    guard case .number = value, let day = value.intValue else {
                        throw .invalidParams(field: "\(path).days[\(position)]", reason: RPCReason.wrongType, message: "expected an ISO weekday 1–7")
                    }
                    guard (1...7).contains(day) else {
                        throw .invalidParams(field: "\(path).days[\(position)]", reason: InputFailure.outOfRange, message: "expected an ISO weekday 1 (Monday) to 7 (Sunday)")
                    }
                    guard !weekdays.contains(day) else {
                        throw .invalidParams(field: "\(path).days[\(position)]", reason: InputFailure.duplicateValue, message: "weekday \(day) is listed twice")
                    }
                    weekdays.append(day)
                }
                guard !weekdays.isEmpty else {
                    throw .invalidParams(field: "\(path).days", reason: InputFailure.empty, message: "expected \"due\" or at least one weekday")
                }
                days = .weekdays(weekdays.sorted())
            default:
                throw .invalidParams(field: "\(path).days", reason: RPCReason.wrongType, message: "expected \"due\" or a list of ISO weekdays 1–7")
            }
            let spec = ReminderSpec(time: time, days: days)
            guard !specs.contains(spec) else {
                throw .invalidParams(field: path, reason: InputFailure.duplicateValue, message: "the same time and days as an earlier reminder")
            }
            specs.append(spec)
        }
        return specs
    }

    /// A required RFC 3339 instant.
    func requiredInstant(_ key: String, description: String) throws(RPCError) -> PostgresTimestamp {
        if declares(key, schema: ValueSchema.timestamp, required: true, description: description) { return PostgresTimestamp(microsecondsSincePostgresEpoch: 0) }
        let text = try requiredString(key)
        guard let instant = PostgresTimestamp(rfc3339: text) else {
            throw .invalidParams(field: key, reason: InputFailure.invalidTimestamp, message: "expected an RFC 3339 timestamp with offset")
        }
        guard Self.instantRange.contains(instant) else {
            throw .invalidParams(field: key, reason: RPCReason.outOfRange, message: "must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z")
        }
        return instant
    }

    /// `firing_ids`: 1–10,000 firing ids "<reminder id>/<YYYY-MM-DD>".
    func firingIDs() throws(RPCError) -> [String] {
        if declares("firing_ids", schema: JSONSchema.array(of: JSONSchema.described(JSONSchema.string(minLength: 47), "A firing id, \"<reminder id>/<YYYY-MM-DD>\" (reminders.due's firing_id).")),
                    required: true, description: "1 to 10,000 firing ids, as reminders.due answered them.") { return [] }
        let items = try requiredArray("firing_ids")
        guard !items.isEmpty else { throw .invalidParams(field: "firing_ids", reason: InputFailure.empty, message: "expected at least one firing id") }
        guard items.count <= 10_000 else { throw .invalidParams(field: "firing_ids", reason: InputFailure.tooMany, message: "at most 10000 firing ids") }
        var ids: [String] = []
        ids.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard case .string(let id) = item else {
                throw .invalidParams(field: "firing_ids[\(index)]", reason: RPCReason.wrongType, message: "expected a firing id string")
            }
            guard Self.isFiringID(id) else {
                throw .invalidParams(field: "firing_ids[\(index)]", reason: InputFailure.invalidFiringID, message: "expected \"<reminder id>/<YYYY-MM-DD>\"")
            }
            ids.append(id)
        }
        return ids
    }

    /// "<lowercase uuid>/<a real YYYY-MM-DD>": what habit.reminder_firing_keys takes.
    static func isFiringID(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count == 36, let id = UUID(uuidString: String(parts[0])),
              id.uuidString.lowercased() == parts[0] else { return false }
        return parts[1].utf8.count == 10 && CalendarDate(iso8601: String(parts[1])) != nil
    }
}

enum RemindersSet: DatabaseMethod {
    static let name = "reminders.set"
    static let retry = RetrySafety.always
    static let summary = "Replaces a habit's reminders (each a local time on the habit's due days or chosen weekdays); unchanged ones keep their ids."
    static let errors: [DomainErrorCode] = [.notFound, .limitExceeded]
    struct Params: Sendable { let user: UUID; let template: UUID; let reminders: [ReminderSpec] }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), template: try params.uuid("template_id", description: "The habit."),
               reminders: try params.reminderSpecs())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> ReminderList {
        ReminderList(reminders: try context.habits.setReminders(user: params.user, template: params.template, reminders: params.reminders))
    }
}

enum RemindersList: DatabaseMethod {
    static let name = "reminders.list"
    static let retry = RetrySafety.always
    static let summary = "A page of the user's reminders, or one habit's, by habit and time."
    static let errors: [DomainErrorCode] = [.notFound]
    /// A habit has at most 24, so one habit's always fit a page; every habit's may not.
    static let defaultLimit = 1_000
    struct Params: Sendable { let user: UUID; let template: UUID?; let page: PageRequest<ReminderSortKey> }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(), template: try params.optionalUUID("template_id", description: "Only this habit's (absent: every habit's)."),
               page: try params.reminderPage())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> ReminderPage {
        let page = try context.habits.reminders(user: params.user, template: params.template, page: params.page)
        return ReminderPage(reminders: page, nextCursor: page.nextCursor(kind: ReminderSortKey.cursorKind) { ReminderSortKey($0).cursorFields })
    }

    struct ReminderPage: MethodResult {
        let reminders: Page<Reminder>
        let nextCursor: String?

        static let schema = JSONSchema.object([
            ("reminders", JSONSchema.array(of: Reminder.schema)),
            ("next_cursor", nextCursorSchema),
        ])
        func write(to json: inout JSONWriter) {
            json.beginObject()
            json.key("reminders"); json.array(Array(reminders)) { json, reminder in json.reminder(reminder) }
            json.key("next_cursor"); json.string(nextCursor)
            json.endObject()
        }
        var estimatedJSONBytes: Int { 80 + 220 * reminders.count }
    }
}

extension ReminderSortKey {
    static let cursorKind = "reminders"

    var cursorFields: [String] { [PageCursor.field(templateID), time, String(weekdays)] }

    init(cursorFields fields: [String]) throws(RPCError) {
        guard let template = PageCursor.uuid(fields[0]), ReminderSortKey.isTime(fields[1]),
              let weekdays = Int(fields[2]), (0...127).contains(weekdays) else { throw PageCursor.invalid() }
        self.init(templateID: template, time: fields[1], weekdays: weekdays)
    }
}

extension ParamsReader {
    /// reminders.list's `limit` (default and most 1,000) and `cursor`.
    func reminderPage() throws(RPCError) -> PageRequest<ReminderSortKey> {
        let fields = try PageCursor.fields(self, kind: ReminderSortKey.cursorKind, count: 3)
        let limit = try optionalInt("limit", range: PageCursor.limitRange, description: "Reminders per page; default \(RemindersList.defaultLimit).")
            ?? RemindersList.defaultLimit
        return PageRequest(limit: limit, after: try fields.map { fields throws(RPCError) in try ReminderSortKey(cursorFields: fields) })
    }
}

struct FiringList: MethodResult {
    let firings: [ReminderFiring]
    let more: Bool?

    static func firingSchema(lease: Bool) -> JSONValue {
        JSONSchema.object([
            ("firing_id", JSONSchema.described(JSONSchema.string(minLength: 47), "\"<reminder id>/<YYYY-MM-DD>\": the reminder on the local date it fires on. reminders.claim and reminders.ack take it.")),
            ("user_id", ValueSchema.uuid),
            ("template_id", ValueSchema.uuid),
            ("reminder_id", ValueSchema.uuid),
            ("fire_at", JSONSchema.described(ValueSchema.timestamp, "When it fires, UTC.")),
            ("local_date", JSONSchema.described(ValueSchema.date, "The local calendar date it fires on.")),
            ("local_time", JSONSchema.described(ValueSchema.dayStart, "The reminder's local time (a time a spring-forward day skips fires at the gap's end all the same).")),
            ("habit_day", JSONSchema.described(ValueSchema.date, "The habit's day it reminds of (local date and time less the user's day start).")),
            ("name", JSONSchema.described(JSONSchema.string(), "The habit's name.")),
        ] + (lease ? [("lease_until", JSONSchema.described(ValueSchema.timestamp, "Until when this caller holds it; acknowledge it before, or another claim takes it after."))] : []))
    }

    static let schema = JSONSchema.object([
        ("firings", JSONSchema.array(of: firingSchema(lease: false))),
        ("more", JSONSchema.described(JSONSchema.boolean, "More firings than limit: claim these, then ask again (claimed and acknowledged firings are left out).")),
    ])

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("firings"); json.array(firings) { json, firing in json.firing(firing) }
        if let more { json.member("more", more) }
        json.endObject()
    }
    var estimatedJSONBytes: Int { 40 + 420 * firings.count }
}

/// reminders.claim's answer: the firings now held, with their lease.
struct ClaimedFirings: MethodResult {
    let firings: [ReminderFiring]
    static let schema = JSONSchema.object([("firings", JSONSchema.array(of: FiringList.firingSchema(lease: true)))])
    func write(to json: inout JSONWriter) {
        FiringList(firings: firings, more: nil).write(to: &json)
    }
    var estimatedJSONBytes: Int { 40 + 460 * firings.count }
}

enum RemindersDue: DatabaseMethod {
    static let name = "reminders.due"
    static let retry = RetrySafety.always
    static let summary = "SERVICE (never exposed to users): the reminder firings in [from, to) of real time, earliest first, not acknowledged or under a lease."
    struct Params: Sendable { let from: PostgresTimestamp; let to: PostgresTimestamp; let limit: Int }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let from = try params.requiredInstant("from", description: "The window's start (RFC 3339), included; past or future.")
        let to = try params.requiredInstant("to", description: "The window's end (RFC 3339), excluded: after from, at most 24 hours after it.")
        let limit = try params.optionalInt("limit", range: 1...10_000, description: "Most firings to answer, 1–10000; default 1000.") ?? 1000
        if params.isDescribing { return Params(from: from, to: to, limit: limit) }
        if to <= from {
            throw .invalidParams(field: "to", reason: InputFailure.invalidOrder, message: "must be after from")
        }
        if to.microsecondsSincePostgresEpoch - from.microsecondsSincePostgresEpoch > 86_400_000_000 {
            throw .invalidParams(field: "to", reason: InputFailure.outOfRange, message: "a window is at most 24 hours")
        }
        return Params(from: from, to: to, limit: limit)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> FiringList {
        let (firings, more) = try ReminderSender(connection: context.connection, settings: context.settings)
            .due(from: params.from, to: params.to, limit: params.limit)
        return FiringList(firings: firings, more: more)
    }
}

enum RemindersClaim: DatabaseMethod {
    static let name = "reminders.claim"
    static let retry = RetrySafety.always
    static let summary = "SERVICE: claims firings for lease_ms; answers those this caller now holds (still firing, not acknowledged, not under another's lease)."
    struct Params: Sendable { let ids: [String]; let leaseMilliseconds: Int; let sender: String? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let ids = try params.firingIDs()
        let lease = try params.requiredInt("lease_ms", range: 1000...3_600_000, description: "How long the claim holds, 1000–3600000 ms: acknowledge before it runs out.")
        let sender = try params.optionalString("sender", description: "The sender's name, 1–100 characters: a claim by the same sender renews its own leases, so its retried claim gets the same firings back. Absent: anonymous (a retry gets nothing until the lease runs out).")
        if let sender, sender.isEmpty || sender.count > 100 {
            throw .invalidParams(field: "sender", reason: sender.isEmpty ? InputFailure.empty : InputFailure.tooLong, message: "1 to 100 characters")
        }
        return Params(ids: ids, leaseMilliseconds: lease, sender: sender)
    }
    static func run(_ params: Params, in context: MethodContext) throws -> ClaimedFirings {
        ClaimedFirings(firings: try ReminderSender(connection: context.connection, settings: context.settings)
            .claim(firingIDs: params.ids, leaseMilliseconds: params.leaseMilliseconds, sender: params.sender))
    }
}

struct AckedFirings: MethodResult {
    let ids: [String]
    static let schema = JSONSchema.object([
        ("acked", JSONSchema.described(JSONSchema.array(of: JSONSchema.string(minLength: 47)),
                                       "The firing ids this call acknowledged; one acknowledged before, or never claimed, is not listed.")),
    ])
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("acked"); json.array(ids) { json, id in json.string(id) }
        json.endObject()
    }
    var estimatedJSONBytes: Int { 20 + 50 * ids.count }
}

enum RemindersAck: DatabaseMethod {
    static let name = "reminders.ack"
    static let retry = RetrySafety.always
    static let summary = "SERVICE: acknowledges claimed firings as sent: never listed or claimed again. Twice changes nothing."
    struct Params: Sendable { let ids: [String] }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(ids: try params.firingIDs())
    }
    static func run(_ params: Params, in context: MethodContext) throws -> AckedFirings {
        AckedFirings(ids: try ReminderSender(connection: context.connection, settings: context.settings).ack(firingIDs: params.ids))
    }
}

/// One firing as reminders.due writes it: a line of `habit reminders due`.
public struct FiringLine: JSONWritable {
    public let firing: ReminderFiring
    public init(_ firing: ReminderFiring) { self.firing = firing }
    public func write(to json: inout JSONWriter) { json.firing(firing) }
    public var text: String { String(decoding: encodedJSON.bytes, as: UTF8.self) }
}
