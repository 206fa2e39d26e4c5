import CLibPQ

/// Reads and rewrites libpq connection strings (URL or `key=value` form) with libpq's own
/// parser, so every form libpq accepts is understood the same way here.
public enum ConnectionString {
    /// Returns a `key='value'` conninfo equal to `conninfo` with `overrides` applied
    /// (e.g. another `dbname` or `user`).
    public static func applying(_ overrides: [String: String], to conninfo: String) throws -> String {
        var options = try parse(conninfo)
        for (key, value) in overrides { options[key] = value }
        return options.keys.sorted().map { key in "\(key)=\(quote(options[key]!))" }.joined(separator: " ")
    }

    /// The explicitly set options of a connection string (not libpq's defaults).
    public static func parse(_ conninfo: String) throws -> [String: String] {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let reason = errorMessage.map { String(cString: $0).trimmingTrailingNewlines() } ?? "out of memory"
            if let errorMessage { PQfreemem(errorMessage) }
            throw PostgresError(kind: .connectionFailed, message: "invalid connection string: \(reason)")
        }
        defer { PQconninfoFree(options) }
        var result: [String: String] = [:]
        var cursor = options
        while let keyword = cursor.pointee.keyword {
            if let value = cursor.pointee.val { result[String(cString: keyword)] = String(cString: value) }
            cursor += 1
        }
        return result
    }

    /// Quotes a conninfo value: single quotes, with `\` and `'` escaped by a backslash.
    static func quote(_ value: String) -> String {
        var quoted = "'"
        for character in value {
            if character == "\\" || character == "'" { quoted.append("\\") }
            quoted.append(character)
        }
        return quoted + "'"
    }
}
