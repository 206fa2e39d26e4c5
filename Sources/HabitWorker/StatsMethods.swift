import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// Streaks, rates and the calendar (issue 17): `habits.stats`, `stats.calendar`, and the
// objects day.get's `include: ["streaks"]` adds. docs/protocol.md ("Streaks, rates and the
// calendar") has the definitions; the database computes them (sql/functions/streaks.sql).

enum HabitsStats: SingleStatementMethod {
    static let name = "habits.stats"
    static let retry = RetrySafety.always
    static let summary = "Streaks, rates and totals of one habit, or of every habit on the reference date."
    static let errors: [DomainErrorCode] = [.notFound]
    typealias Result = StatsReport
    struct Params: Sendable { let user: UUID; let template: UUID?; let date: CalendarDate? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let template = try params.optionalUUID("id", description: "Only this habit, whatever its state (active or not, on R or not). Absent or null: every habit on date, in day.get's order.")
        let date = try params.optionalReferenceDate("date", description: "The reference date R. Absent or null: today in the user's zone.")
        // Checked and ignored: since protocol 1.10.0 every habit carries its score.
        _ = try params.optionalChoices("include", ["score"], description: "Accepted as before protocol 1.10.0, when [\"score\"] asked for Loop's habit score; every habit carries it now. Absent, null, [] or [\"score\"]: the same answer.")
        return Params(user: user, template: template, date: date)
    }
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<StatsReport> {
        context.habits.statsStatement(user: params.user, template: params.template, date: params.date)
    }
}

enum StatsCalendarMethod: SingleStatementMethod {
    static let name = "stats.calendar"
    static let retry = RetrySafety.always
    static let summary = "Per day of a range of at most 366 days: due, done and skipped habit counts and a level 0–4 (a heatmap)."
    static let errors: [DomainErrorCode] = [.notFound]
    typealias Result = StatsCalendar
    struct Params: Sendable { let user: UUID; let template: UUID?; let from: CalendarDate; let to: CalendarDate }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        let user = try params.userID()
        let template = try params.optionalUUID("id", description: "Only this habit. Absent or null: every habit of the user.")
        let from = try params.referenceDate("from", description: "First day of the range.")
        let to = try params.referenceDate("to", description: "Last day (inclusive): on or after from, at most 365 days after it (366 days in all).")
        guard to >= from else {
            throw .invalidParams(field: "to", reason: RPCReason.outOfRange, message: "must be on or after from")
        }
        guard from.adding(days: HabitRepository.maxCalendarDays - 1) >= to else {
            throw .invalidParams(field: "to", reason: RPCReason.outOfRange, message: "the range may hold at most \(HabitRepository.maxCalendarDays) days")
        }
        return Params(user: user, template: template, from: from, to: to)
    }
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<StatsCalendar> {
        try context.habits.statsCalendarStatement(user: params.user, template: params.template, from: params.from, to: params.to)
    }
}

extension ParamsReader {
    /// An optional array of distinct-or-not strings, each one of `choices` (day.get's
    /// `include`). Absent or null: empty. Not an array: `wrong_type` naming `key`; an element
    /// that is not a string: `wrong_type` naming `key[i]`; a string not among the choices:
    /// `invalid_choice` naming `key[i]`.
    func optionalChoices(_ key: String, _ choices: [String], description: String) throws(RPCError) -> Set<String> {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.array(of: JSONSchema.string(oneOf: choices))), required: false,
                    description: description) { return [] }
        switch object[key] {
        case nil, .null?:
            return []
        case .array(let elements)?:
            var chosen = Set<String>()
            for (index, element) in elements.enumerated() {
                guard case .string(let text) = element else {
                    throw .invalidParams(field: "\(key)[\(index)]", reason: RPCReason.wrongType, message: "expected a string")
                }
                guard choices.contains(text) else {
                    throw .invalidParams(field: "\(key)[\(index)]", reason: RPCReason.invalidChoice,
                                         message: "expected " + choices.map { "\"\($0)\"" }.joined(separator: " or "))
                }
                chosen.insert(text)
            }
            return chosen
        default:
            throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected an array of strings")
        }
    }
}

// MARK: - Results

extension JSONWriter {
    /// `{length, start}`.
    mutating func currentStreak(_ streak: CurrentStreak) {
        beginObject()
        key("length"); int(streak.length)
        key("start"); date(streak.start)
        endObject()
    }

    /// A rate as a JSON number (not rounded), or null.
    mutating func rate(_ rate: Double?) {
        if let rate, let number = JSONValue.double(rate) { value(number) } else { null() }
    }
}

enum StatsSchema {
    static let currentStreak = JSONSchema.object([
        ("length", JSONSchema.described(JSONSchema.integer(0...Int.max), "Kept days (weeks) in the run; excused days do not count.")),
        ("start", JSONSchema.described(JSONSchema.nullable(ValueSchema.date), "Its first kept day (weeks: the first day of its first week); null when length is 0.")),
    ])
    static let longestStreak = JSONSchema.object([
        ("length", JSONSchema.integer(0...Int.max)),
        ("start", JSONSchema.described(JSONSchema.nullable(ValueSchema.date), "First kept day (weeks: first day of the first week); null when length is 0.")),
        ("end", JSONSchema.described(JSONSchema.nullable(ValueSchema.date), "Last kept day (weeks: last day of the last week); null when length is 0.")),
    ])
    static let rate = JSONSchema.described(JSONSchema.nullable(JSONSchema.type("number")),
                                           "kept ÷ (due − excused) (weeks: kept ÷ non-neutral weeks), 0…1, not rounded; null when the divisor is 0.")
}

extension StatsReport: MethodResult {
    static let schema = JSONSchema.object([
        ("date", JSONSchema.described(ValueSchema.date, "The reference date R.")),
        ("habits", JSONSchema.described(JSONSchema.array(of: JSONSchema.object([
            ("id", ValueSchema.uuid),
            ("unit", JSONSchema.described(JSONSchema.string(oneOf: StatsUnit.allCases.map(\.rawValue)),
                                          "weeks when the habit's current schedule is times_per_week, else days.")),
            ("current_streak", StatsSchema.currentStreak),
            ("longest_streak", StatsSchema.longestStreak),
            ("rate_7", StatsSchema.rate),
            ("rate_30", StatsSchema.rate),
            ("rate_365", StatsSchema.rate),
            ("rate_all", StatsSchema.rate),
            ("total_done", JSONSchema.described(JSONSchema.integer(0...Int.max), "Completions dated on or before R.")),
            ("last_done", JSONSchema.described(JSONSchema.nullable(ValueSchema.date), "The latest of them; null when none.")),
            ("value_total", JSONSchema.described(ValueSchema.decimal, "Only for a habit counted from check-ins (measurable, or a target other than 1): its days' values (check-ins' sum; the target when done without check-ins) on or before R.")),
            ("value_7", JSONSchema.described(ValueSchema.decimal, "With value_total: over the 7 days ending at R.")),
            ("value_30", JSONSchema.described(ValueSchema.decimal, "With value_total: over the 30 days ending at R.")),
            ("score", JSONSchema.described(JSONSchema.string(minLength: 6),
                                           "Loop Habit Tracker's habit score at the end of R, 0…1 with four decimals as Loop prints it (protocol.md, \"Score\").")),
        ], optional: ["value_total", "value_7", "value_30"])), "With id: that habit alone; without: the habits on R, in day.get's order.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("date"); json.date(date)
        json.key("habits"); json.beginArray()
        for habit in habits {
            json.beginObject()
            json.key("id"); json.uuid(habit.id)
            json.key("unit"); json.string(habit.unit.rawValue)
            json.key("current_streak"); json.currentStreak(habit.currentStreak)
            json.key("longest_streak"); json.beginObject()
            json.key("length"); json.int(habit.longestStreak.length)
            json.key("start"); json.date(habit.longestStreak.start)
            json.key("end"); json.date(habit.longestStreak.end)
            json.endObject()
            json.key("rate_7"); json.rate(habit.rate7)
            json.key("rate_30"); json.rate(habit.rate30)
            json.key("rate_365"); json.rate(habit.rate365)
            json.key("rate_all"); json.rate(habit.rateAll)
            json.key("total_done"); json.int(habit.totalDone)
            json.key("last_done"); json.date(habit.lastDone)
            if let values = habit.values {
                json.key("value_total"); json.string(values.total.text)
                json.key("value_7"); json.string(values.last7.text)
                json.key("value_30"); json.string(values.last30.text)
            }
            if let score = habit.score { json.key("score"); json.string(score) }
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 64 + 380 * habits.count }
}

extension StatsCalendar: MethodResult {
    static let schema = JSONSchema.object([
        ("from", ValueSchema.date),
        ("to", ValueSchema.date),
        ("days", JSONSchema.described(JSONSchema.array(of: JSONSchema.object([
            ("date", ValueSchema.date),
            ("due", JSONSchema.described(JSONSchema.integer(0...Int.max), "Habits on and due that day.")),
            ("done", JSONSchema.described(JSONSchema.integer(0...Int.max), "Of those, the done ones.")),
            ("skipped", JSONSchema.described(JSONSchema.integer(0...Int.max), "Of those, the skipped ones.")),
            ("level", JSONSchema.described(JSONSchema.integer(0...4),
                                           "0 when done = 0 or due = skipped, else ceil(4 × done ÷ (due − skipped)), at most 4. One habit counted from check-ins: its value against the target (ceil(4 × value ÷ target), at most 4; an at-most habit's done day 4), 0 when not due or skipped.")),
            ("value", JSONSchema.described(ValueSchema.decimal, "Only for one habit counted from check-ins (id given): the day's value.")),
        ], optional: ["value"])), "Every day of from…to, in order.")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("from"); json.date(from)
        json.key("to"); json.date(to)
        json.key("days"); json.beginArray()
        for day in days {
            json.beginObject()
            json.key("date"); json.date(day.date)
            json.key("due"); json.int(day.due)
            json.key("done"); json.int(day.done)
            json.key("skipped"); json.int(day.skipped)
            json.key("level"); json.int(day.level)
            if let value = day.value { json.member("value", value.text) }
            json.endObject()
        }
        json.endArray()
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 64 + 72 * days.count }
}
