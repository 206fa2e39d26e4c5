import Foundation
import HabitStore
import JSONRPC
import PostgresClient

// widget.get (docs/protocol.md, "widget.get"; issue 33, item 4).

enum WidgetGet: SingleStatementMethod {
    static let name = "widget.get"
    static let retry = RetrySafety.always
    static let summary = "A home-screen widget's day: the habits due, in order, with state, value against target, current streak and Loop's score."
    static let errors: [DomainErrorCode] = [.notFound]
    typealias Result = WidgetDay
    struct Params: Sendable { let user: UUID; let date: CalendarDate?; let area: UUID? }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params {
        Params(user: try params.userID(),
               date: try params.optionalReferenceDate("date", description: "The day; default today in the profile's zone (its day start applied)."),
               area: try params.optionalUUID("area_id", description: "Only this area's habits (one of the user's areas: a widget per area); absent or null: every habit."))
    }
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<WidgetDay> {
        context.habits.widgetStatement(user: params.user, date: params.date, area: params.area)
    }
}

extension WidgetDay: MethodResult {
    static let schema = JSONSchema.object([
        ("date", JSONSchema.described(ValueSchema.date, "The day shown (today when no date was given).")),
        ("items", JSONSchema.described(JSONSchema.array(of: JSONSchema.object([
            ("template_id", ValueSchema.uuid),
            ("name", JSONSchema.string()),
            ("icon", JSONSchema.nullable(JSONSchema.string())),
            ("color", JSONSchema.nullable(JSONSchema.string())),
            ("state", JSONSchema.described(JSONSchema.string(oneOf: DayState.allCases.map(\.rawValue)), "The day's state.")),
            ("value", JSONSchema.described(ValueSchema.decimal, "Counted habits only (measurable, or a target above 1): the day's value (a weekly target: the week's).")),
            ("target", JSONSchema.described(ValueSchema.decimal, "Counted habits only: the target the value is measured against.")),
            ("unit", JSONSchema.described(JSONSchema.nullable(JSONSchema.string()), "Counted habits only: the unit, if any.")),
            ("streak", JSONSchema.described(JSONSchema.integer(0...Int.max), "The current streak at the day, in the habit's slots (days, or weeks for times_per_week).")),
            ("score", JSONSchema.described(JSONSchema.string(minLength: 6), "Loop's habit score at the day, 0…1 with four decimals (protocol.md, \"Score\").")),
            ("area_id", JSONSchema.described(JSONSchema.nullable(ValueSchema.uuid), "The habit's area; null for none.")),
        ], optional: ["value", "target", "unit"])), "The habits due on the day, in day.get's order (archived habits left out).")),
    ])

    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.key("date"); json.date(date)
        json.key("items"); json.array(items) { json, item in
            json.beginObject()
            json.key("template_id"); json.uuid(item.templateID)
            json.member("name", item.name)
            json.key("icon"); json.string(item.icon)
            json.key("color"); json.string(item.color)
            json.member("state", item.state.rawValue)
            if let value = item.value, let target = item.target {
                json.member("value", value.text)
                json.member("target", target.text)
                json.key("unit"); json.string(item.unit)
            }
            json.member("streak", item.streak)
            json.member("score", item.score)
            json.key("area_id"); json.uuid(item.areaID)
            json.endObject()
        }
        json.endObject()
    }

    public var estimatedJSONBytes: Int { 40 + 310 * items.count }
}
