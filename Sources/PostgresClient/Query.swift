/// A statement and its parameters. Written as a string literal, every interpolated value
/// becomes a `$n` placeholder plus a bound parameter, so values never reach the SQL text:
///
///     try connection.query("SELECT name FROM habit_templates WHERE user_id = \(userID)")
///
/// Raw SQL text (an identifier chosen by code, never by a user) needs the loud
/// `\(unsafeSQL: …)` label so it stands out in review.
public struct Query: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var sql: String
    public private(set) var bindings: Bindings

    /// Parameters in binary format, each with its type OID; nil is SQL NULL.
    public struct Bindings: Sendable {
        public private(set) var types: [UInt32] = []
        public private(set) var values: [[UInt8]?] = []
        public var count: Int { values.count }

        public init() {}

        public mutating func append<Value: PostgresEncodable>(_ value: Value) {
            var bytes: [UInt8] = []
            value.encode(into: &bytes)
            types.append(Value.postgresType.rawValue)
            values.append(bytes)
        }

        public mutating func appendNull(of type: PostgresType) {
            types.append(type.rawValue)
            values.append(nil)
        }
    }

    /// SQL written by code; use `$1, $2…` with `bindings`, never values spliced into text.
    public init(unsafeSQL sql: String, bindings: Bindings = Bindings()) {
        self.sql = sql
        self.bindings = bindings
    }

    public init(stringLiteral value: String) {
        self.sql = value
        self.bindings = Bindings()
    }

    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.bindings = stringInterpolation.bindings
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql: String
        var bindings = Bindings()

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            bindings.append(value)
            sql += "$\(bindings.count)"
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            if let value { bindings.append(value) } else { bindings.appendNull(of: Value.postgresType) }
            sql += "$\(bindings.count)"
        }

        /// Splices text into the SQL. Only for code-chosen fragments; never for values.
        public mutating func appendInterpolation(unsafeSQL fragment: String) { sql += fragment }
    }

    /// The SQL text only — parameters are deliberately not shown.
    public var description: String { sql }
}
