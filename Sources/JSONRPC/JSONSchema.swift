// JSON Schema values for describing params and results (the OpenRPC document, `rpc.discover`).
// Built as `JSONValue`s whose members always come in the same order, so a document made of
// them prints the same bytes every time. Only the keywords the worker needs; nothing here
// validates: the readers and writers do, and tests check them against these schemas.

public enum JSONSchema {
    /// Any JSON value (the empty schema).
    public static let any: JSONValue = .object(JSONObject())

    public static let boolean: JSONValue = type("boolean")

    /// `{"type": name}`.
    public static func type(_ name: String) -> JSONValue {
        .object(JSONObject([("type", .string(name))]))
    }

    /// A string, with a `format` (`uuid`, `date`, `date-time`) or a `minLength` when given.
    public static func string(format: String? = nil, minLength: Int? = nil) -> JSONValue {
        var schema = JSONObject([("type", "string")])
        if let format { schema.append(key: "format", value: .string(format)) }
        if let minLength { schema.append(key: "minLength", value: .int(minLength)) }
        return .object(schema)
    }

    /// One of `choices`.
    public static func string(oneOf choices: [String]) -> JSONValue {
        .object(JSONObject([("type", "string"), ("enum", .array(choices.map(JSONValue.string)))]))
    }

    /// An integer in `range`; the bounds are left out when they are `Int`'s own.
    public static func integer(_ range: ClosedRange<Int> = Int.min...Int.max) -> JSONValue {
        var schema = JSONObject([("type", "integer")])
        if range.lowerBound != Int.min { schema.append(key: "minimum", value: .int(range.lowerBound)) }
        if range.upperBound != Int.max { schema.append(key: "maximum", value: .int(range.upperBound)) }
        return .object(schema)
    }

    public static func array(of items: JSONValue) -> JSONValue {
        .object(JSONObject([("type", "array"), ("items", items)]))
    }

    /// An object with exactly these members, every one required unless named in `optional`.
    public static func object(_ properties: [(String, JSONValue)], optional: Set<String> = []) -> JSONValue {
        var schema = JSONObject([("type", "object")])
        schema.append(key: "properties", value: .object(JSONObject(properties.map { (key: $0.0, value: $0.1) })))
        let required = properties.map(\.0).filter { !optional.contains($0) }
        if !required.isEmpty { schema.append(key: "required", value: .array(required.map(JSONValue.string))) }
        schema.append(key: "additionalProperties", value: false)
        return .object(schema)
    }

    /// An object schema made by `object(_:)` with more members after its own, every one
    /// required unless named in `optional` (a habit as day.get lists it: a habit, whether it is
    /// due, and its current streak when asked for).
    public static func extending(_ schema: JSONValue, with properties: [(String, JSONValue)], optional: Set<String> = []) -> JSONValue {
        guard case .object(var object) = schema, case .object(var members)? = object["properties"] else { return schema }
        for (key, value) in properties { members.append(key: key, value: value) }
        object["properties"] = .object(members)
        let required: [JSONValue] = (object["required"]?.arrayValue ?? []) + properties.map(\.0).filter { !optional.contains($0) }.map { .string($0) }
        object["required"] = .array(required)
        return .object(object)
    }

    /// `schema` or null: `"type": ["t", "null"]` (and null among an `enum`'s values) when
    /// `schema` names one type, else `oneOf` with `{"type": "null"}`.
    public static func nullable(_ schema: JSONValue) -> JSONValue {
        guard case .object(var object) = schema, !object.isEmpty else { return schema }
        guard case .string(let type)? = object["type"] else {
            return .object(JSONObject([("oneOf", [schema, JSONSchema.type("null")])]))
        }
        object["type"] = [.string(type), "null"]
        if case .array(let choices)? = object["enum"] { object["enum"] = .array(choices + [.null]) }
        return .object(object)
    }

    /// `schema` with a `description` (replacing any it had).
    public static func described(_ schema: JSONValue, _ description: String) -> JSONValue {
        guard case .object(var object) = schema else { return schema }
        object["description"] = .string(description)
        return .object(object)
    }
}
