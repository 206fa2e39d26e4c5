// Typed access to named params for method handlers (still JSON-level: no domain types).
// Every failure is `RPCError.invalidParams(field: key, reason: …, message: …)`: `reason` a stable
// code (`RPCReason`), so clients learn which field to fix and what is wrong with it.
//
// Null policy: for the `optional…` accessors an explicit JSON null means the same as an
// absent key (returns nil); clients often send null for "not set". Use
// `optionalValue(_:)` to tell a present null from a missing key. The `required…`
// accessors reject null.
//
// The reads are also the declaration of a method's params: a reader made by
// `ParamsReader.declarations(of:)` reads nothing, and every accessor called on it records
// the param (name, JSON Schema, required, description) and returns a placeholder. So one
// `decode` function both reads params and describes them (the accepted keys, the
// OpenRPC document). An accessor built on these (a UUID, a date) calls `declares(_:…)`
// first and returns its own placeholder when it answers true.

/// One param as a method declares it by reading it.
public struct ParamDeclaration: Sendable, Equatable {
    public var name: String
    /// JSON Schema of the value (null included when the param accepts null).
    public var schema: JSONValue
    public var required: Bool
    public var description: String?

    public init(name: String, schema: JSONValue, required: Bool, description: String? = nil) {
        self.name = name
        self.schema = schema
        self.required = required
        self.description = description
    }
}

public struct ParamsReader: Sendable {
    public let object: JSONObject
    /// Non-nil only for a describing reader (see `declarations(of:)`).
    @usableFromInline let recorder: Recorder?

    /// The declarations of a describing reader, in the order read. Only the thread running
    /// `declarations(of:)` touches it.
    @usableFromInline final class Recorder: @unchecked Sendable {
        var declarations: [ParamDeclaration] = []

        @usableFromInline func record(_ key: String, schema: JSONValue, required: Bool, description: String?) {
            if !declarations.contains(where: { $0.name == key }) {
                declarations.append(ParamDeclaration(name: key, schema: schema, required: required, description: description))
            }
        }
    }

    /// Absent params read as an empty object. Duplicate keys are rejected here as well
    /// (the codec already rejects them, but a reader may be built from other objects):
    /// reading "first wins" while a gateway reads "last wins" would be request smuggling.
    public init(_ params: JSONObject?) throws(RPCError) {
        let object = params ?? JSONObject()
        if let duplicate = object.firstDuplicateKey {
            throw .invalidParams(field: duplicate, reason: RPCReason.duplicateKey, message: "duplicate key")
        }
        self.object = object
        recorder = nil
    }

    public init(_ request: IncomingRequest) throws(RPCError) {
        try self.init(request.params)
    }

    private init(describing recorder: Recorder) {
        object = JSONObject()
        self.recorder = recorder
    }

    /// The params `decode` reads, in order: `decode` runs once against a reader that holds no
    /// params, on which every accessor records its param and returns a placeholder (`nil` for
    /// an optional param) instead of reading. A `decode` must therefore read every param it
    /// accepts unconditionally, before validating their combination: what it validates
    /// afterwards sees placeholders, and a read skipped here would be an unknown key later.
    /// Throws what `decode` throws (with placeholders that is a bug in `decode`). A key read
    /// twice is declared once, as first read.
    public static func declarations(of decode: (ParamsReader) throws(RPCError) -> Void) throws(RPCError) -> [ParamDeclaration] {
        let recorder = Recorder()
        try decode(ParamsReader(describing: recorder))
        return recorder.declarations
    }

    /// Whether this reader only describes (`declarations(of:)`): a `decode` whose params are
    /// required in combination ("exactly one of a and b") returns placeholders on it instead
    /// of refusing the placeholders' combination.
    public var isDescribing: Bool { recorder != nil }

    /// Whether this reader only describes: then the param is recorded and the caller returns a
    /// placeholder without reading (see `declarations(of:)`). Always false for a reader of
    /// real params; `schema` is then not evaluated. Inlinable: on every read of every request
    /// it is one test of a nil.
    @inlinable
    public func declares(_ key: String, schema: @autoclosure () -> JSONValue, required: Bool, description: String? = nil) -> Bool {
        guard let recorder else { return false }
        recorder.record(key, schema: schema(), required: required, description: description)
        return true
    }

    /// The raw value: nil if absent, `.null` if present as null. Declared as any JSON value.
    public func optionalValue(_ key: String, description: String? = nil) -> JSONValue? {
        if declares(key, schema: JSONSchema.any, required: false, description: description) { return nil }
        return object[key]
    }

    /// The raw value, which may be `.null`; throws only if the key is absent.
    public func requiredValue(_ key: String, description: String? = nil) throws(RPCError) -> JSONValue {
        if declares(key, schema: JSONSchema.any, required: true, description: description) { return .null }
        guard let value = object[key] else { throw .invalidParams(field: key, reason: RPCReason.required, message: "missing") }
        return value
    }

    public func requiredString(_ key: String, description: String? = nil) throws(RPCError) -> String {
        if declares(key, schema: JSONSchema.string(), required: true, description: description) { return "" }
        guard let value = try optionalString(key) else { throw missingOrNull(key) }
        return value
    }

    /// One of `choices` (a string); anything else is refused naming them all. Declared as an
    /// `enum`; a describing reader returns the first choice.
    public func requiredString(_ key: String, oneOf choices: [String], description: String? = nil) throws(RPCError) -> String {
        if declares(key, schema: JSONSchema.string(oneOf: choices), required: true, description: description) { return choices[0] }
        let value = try requiredString(key)
        guard choices.contains(value) else { throw .invalidParams(field: key, reason: RPCReason.invalidChoice, message: "expected " + Self.alternatives(choices)) }
        return value
    }

    /// As `requiredString(_:oneOf:)`, absent or null → nil.
    public func optionalString(_ key: String, oneOf choices: [String], description: String? = nil) throws(RPCError) -> String? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.string(oneOf: choices)), required: false, description: description) { return nil }
        guard let value = try optionalString(key) else { return nil }
        guard choices.contains(value) else { throw .invalidParams(field: key, reason: RPCReason.invalidChoice, message: "expected " + Self.alternatives(choices)) }
        return value
    }

    /// `"a"`, `"a" or "b"`, `"a", "b" or "c"`.
    static func alternatives(_ choices: [String]) -> String {
        let quoted = choices.map { "\"\($0)\"" }
        guard quoted.count > 1 else { return quoted.first ?? "" }
        return quoted.dropLast().joined(separator: ", ") + " or " + quoted[quoted.count - 1]
    }

    public func optionalString(_ key: String, description: String? = nil) throws(RPCError) -> String? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.string()), required: false, description: description) { return nil }
        switch object[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected a string")
        }
    }

    public func requiredBool(_ key: String, description: String? = nil) throws(RPCError) -> Bool {
        if declares(key, schema: JSONSchema.boolean, required: true, description: description) { return false }
        guard let value = try optionalBool(key) else { throw missingOrNull(key) }
        return value
    }

    public func optionalBool(_ key: String, description: String? = nil) throws(RPCError) -> Bool? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.boolean), required: false, description: description) { return nil }
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        default: throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected a boolean")
        }
    }

    /// Only integer literals (`5`, `-3`; not `5.0` or `1e2`) within `range`.
    public func requiredInt(_ key: String, range: ClosedRange<Int> = Int.min...Int.max, description: String? = nil) throws(RPCError) -> Int {
        if declares(key, schema: JSONSchema.integer(range), required: true, description: description) { return range.clamp(0) }
        guard let value = try optionalInt(key, range: range) else { throw missingOrNull(key) }
        return value
    }

    public func optionalInt(_ key: String, range: ClosedRange<Int> = Int.min...Int.max, description: String? = nil) throws(RPCError) -> Int? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.integer(range)), required: false, description: description) { return nil }
        switch object[key] {
        case nil, .null?:
            return nil
        case .number(let literal)?:
            guard literal.utf8.allSatisfy({ JSONNumberGrammar.isDigit($0) || $0 == UInt8(ascii: "-") }) else {
                throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected an integer")
            }
            guard let value = JSONNumberGrammar.exactInt(literal), range.contains(value) else {
                throw .invalidParams(field: key, reason: RPCReason.outOfRange, message: "out of range \(range.lowerBound)...\(range.upperBound)")
            }
            return value
        default:
            throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected an integer")
        }
    }

    public func requiredObject(_ key: String, description: String? = nil) throws(RPCError) -> JSONObject {
        if declares(key, schema: JSONSchema.type("object"), required: true, description: description) { return JSONObject() }
        guard let value = try optionalObject(key) else { throw missingOrNull(key) }
        return value
    }

    public func optionalObject(_ key: String, description: String? = nil) throws(RPCError) -> JSONObject? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.type("object")), required: false, description: description) { return nil }
        switch object[key] {
        case nil, .null?: return nil
        case .object(let o)?: return o
        default: throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected an object")
        }
    }

    public func requiredArray(_ key: String, description: String? = nil) throws(RPCError) -> [JSONValue] {
        if declares(key, schema: JSONSchema.type("array"), required: true, description: description) { return [] }
        guard let value = try optionalArray(key) else { throw missingOrNull(key) }
        return value
    }

    public func optionalArray(_ key: String, description: String? = nil) throws(RPCError) -> [JSONValue]? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.type("array")), required: false, description: description) { return nil }
        switch object[key] {
        case nil, .null?: return nil
        case .array(let a)?: return a
        default: throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected an array")
        }
    }

    /// Throws for the first key (in wire order) not in `allowed`, so typos such as
    /// "limt" fail loudly instead of being ignored. `allowed` is usually the names of
    /// `declarations(of:)` for the method's `decode`.
    public func rejectUnknownKeys(allowed: Set<String>) throws(RPCError) {
        for member in object.members where !allowed.contains(member.key) {
            throw .invalidParams(field: member.key, reason: RPCReason.unknownKey, message: "unknown key: not a param of this method")
        }
    }

    private func missingOrNull(_ key: String) -> RPCError {
        .invalidParams(field: key, reason: RPCReason.required, message: object[key] == nil ? "missing" : "must not be null")
    }
}

private extension ClosedRange where Bound == Int {
    func clamp(_ value: Int) -> Int { Swift.min(Swift.max(value, lowerBound), upperBound) }
}
