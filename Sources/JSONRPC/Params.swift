// Typed access to named params for method handlers (still JSON-level: no domain types).
// Every failure is `RPCError.invalidParams(field: key, reason: …)` so clients learn
// which field to fix.
//
// Null policy: for the `optional…` accessors an explicit JSON null means the same as an
// absent key (returns nil); clients often send null for "not set". Use
// `optionalValue(_:)` to tell a present null from a missing key. The `required…`
// accessors reject null.

public struct ParamsReader: Sendable {
    public let object: JSONObject

    /// Absent params read as an empty object. Duplicate keys are rejected here as well
    /// (the codec already rejects them, but a reader may be built from other objects):
    /// reading "first wins" while a gateway reads "last wins" would be request smuggling.
    public init(_ params: JSONObject?) throws(RPCError) {
        let object = params ?? JSONObject()
        if let duplicate = object.firstDuplicateKey {
            throw .invalidParams(field: duplicate, reason: "duplicate key")
        }
        self.object = object
    }

    public init(_ request: IncomingRequest) throws(RPCError) {
        try self.init(request.params)
    }

    /// The raw value: nil if absent, `.null` if present as null.
    public func optionalValue(_ key: String) -> JSONValue? { object[key] }

    /// The raw value, which may be `.null`; throws only if the key is absent.
    public func requiredValue(_ key: String) throws(RPCError) -> JSONValue {
        guard let value = object[key] else { throw .invalidParams(field: key, reason: "missing") }
        return value
    }

    public func requiredString(_ key: String) throws(RPCError) -> String {
        guard let value = try optionalString(key) else { throw missingOrNull(key) }
        return value
    }

    public func optionalString(_ key: String) throws(RPCError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw .invalidParams(field: key, reason: "expected a string")
        }
    }

    public func requiredBool(_ key: String) throws(RPCError) -> Bool {
        guard let value = try optionalBool(key) else { throw missingOrNull(key) }
        return value
    }

    public func optionalBool(_ key: String) throws(RPCError) -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        default: throw .invalidParams(field: key, reason: "expected a boolean")
        }
    }

    /// Only integer literals (`5`, `-3`; not `5.0` or `1e2`) within `range`.
    public func requiredInt(_ key: String, range: ClosedRange<Int> = Int.min...Int.max) throws(RPCError) -> Int {
        guard let value = try optionalInt(key, range: range) else { throw missingOrNull(key) }
        return value
    }

    public func optionalInt(_ key: String, range: ClosedRange<Int> = Int.min...Int.max) throws(RPCError) -> Int? {
        switch object[key] {
        case nil, .null?:
            return nil
        case .number(let literal)?:
            guard literal.utf8.allSatisfy({ JSONNumberGrammar.isDigit($0) || $0 == UInt8(ascii: "-") }) else {
                throw .invalidParams(field: key, reason: "expected an integer")
            }
            guard let value = JSONNumberGrammar.exactInt(literal), range.contains(value) else {
                throw .invalidParams(field: key, reason: "out of range \(range.lowerBound)...\(range.upperBound)")
            }
            return value
        default:
            throw .invalidParams(field: key, reason: "expected an integer")
        }
    }

    public func requiredObject(_ key: String) throws(RPCError) -> JSONObject {
        guard let value = try optionalObject(key) else { throw missingOrNull(key) }
        return value
    }

    public func optionalObject(_ key: String) throws(RPCError) -> JSONObject? {
        switch object[key] {
        case nil, .null?: return nil
        case .object(let o)?: return o
        default: throw .invalidParams(field: key, reason: "expected an object")
        }
    }

    public func requiredArray(_ key: String) throws(RPCError) -> [JSONValue] {
        guard let value = try optionalArray(key) else { throw missingOrNull(key) }
        return value
    }

    public func optionalArray(_ key: String) throws(RPCError) -> [JSONValue]? {
        switch object[key] {
        case nil, .null?: return nil
        case .array(let a)?: return a
        default: throw .invalidParams(field: key, reason: "expected an array")
        }
    }

    /// Throws for the first key (in wire order) not in `allowed`, so typos such as
    /// "limt" fail loudly instead of being ignored.
    public func rejectUnknownKeys(allowed: Set<String>) throws(RPCError) {
        for member in object.members where !allowed.contains(member.key) {
            throw .invalidParams(field: member.key, reason: "unknown key")
        }
    }

    private func missingOrNull(_ key: String) -> RPCError {
        .invalidParams(field: key, reason: object[key] == nil ? "missing" : "must not be null")
    }
}
