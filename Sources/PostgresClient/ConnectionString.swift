import CLibPQ

/// Reads and rewrites libpq connection strings (URL or `key=value` form) with libpq's own
/// parser, so every form libpq accepts is understood the same way here.
public enum ConnectionString {
    /// Returns a `key='value'` conninfo equal to `conninfo` with `overrides` applied
    /// (e.g. another `dbname` or `user`). Throws as `validate` does for what the result
    /// would get wrong.
    public static func applying(_ overrides: [String: String], to conninfo: String) throws -> String {
        var options = try parse(conninfo)
        for (key, value) in overrides { options[key] = value }
        if let problem = problem(in: options) { throw invalid(problem) }
        return options.keys.sorted().map { key in "\(key)=\(quote(options[key]!))" }.joined(separator: " ")
    }

    /// Checks a connection string as libpq will read it, without connecting: its form with
    /// libpq's own parser (PQconninfoParse), then the values libpq checks only when it
    /// connects (port, sslmode…). Throws a `.connectionFailed` `PostgresError` whose message
    /// names the wrong part but never quotes the string or a value: libpq's messages can
    /// quote the whole URL, password included, and they end up in logs.
    public static func validate(_ conninfo: String) throws {
        let options = try parse(conninfo)
        if let problem = problem(in: options) { throw invalid(problem) }
    }

    /// The explicitly set options of a connection string (not libpq's defaults). A string
    /// libpq cannot parse throws as `validate` does: what is wrong, not the text.
    public static func parse(_ conninfo: String) throws -> [String: String] {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            let libpqMessage = errorMessage.map { String(cString: $0) } ?? "out of memory"
            if let errorMessage { PQfreemem(errorMessage) }
            throw invalid(parseFailure(libpqMessage))
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

    static func invalid(_ reason: String) -> PostgresError {
        PostgresError(kind: .connectionFailed, message: "invalid connection string: \(reason)")
    }

    /// What a PQconninfoParse error is about, told without the text it quotes. libpq gives no
    /// code, only an English sentence (translated under other LC_MESSAGES): the markers below
    /// only pick a more precise explanation, the fallback is just as safe.
    static func parseFailure(_ libpqMessage: String) -> String {
        let known: [(marker: String, reason: String)] = [
            ("missing \"=\" after", "a word without \"=\" (expected a postgresql:// URL or key=value pairs)"),
            ("unterminated quoted string", "a quoted value without its closing quote"),
            ("invalid connection option", "an unknown option name"),
            ("missing key/value separator", "a URI query parameter without \"=\""),
            ("extra key/value separator", "a URI query parameter with a second \"=\""),
            ("invalid URI query parameter", "an unknown URI query parameter"),
            ("invalid percent-encoded token", "an invalid percent-encoding (% must be followed by two hex digits)"),
            ("forbidden value %00", "a percent-encoded NUL (%00)"),
            ("matching \"]\" in IPv6 host address", "an IPv6 host address without its closing \"]\""),
            ("IPv6 host address may not be empty", "an empty IPv6 host address"),
            ("unexpected character", "an unexpected character after the host (expected \":\" before a port or \"/\" before the database)"),
            ("definition of service", "a service not defined in the service file"),
            ("service file", "a problem with the service file (pg_service.conf)"),
            ("out of memory", "libpq ran out of memory"),
        ]
        return known.first { libpqMessage.contains($0.marker) }?.reason ?? "libpq cannot parse it"
    }

    /// The first option value that libpq would refuse only when connecting, described
    /// without the value. Empty lists entries and empty integers mean libpq's default.
    static func problem(in options: [String: String]) -> String? {
        if let ports = options["port"] {
            for port in ports.split(separator: ",", omittingEmptySubsequences: false) {
                let digits = trimmingBlanks(port)
                guard digits.isEmpty || (digits.allSatisfy({ $0.isASCII && $0.isNumber }) && Int(digits).map { (1...65535).contains($0) } == true) else {
                    return "invalid port (each must be a number from 1 to 65535)"
                }
            }
        }
        for key in ["connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout"] {
            if let value = options[key].map(trimmingBlanks), !value.isEmpty, Int(value) == nil {
                return "invalid \(key) (must be an integer)"
            }
        }
        let choices: [(key: String, allowed: [String])] = [
            ("sslmode", ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]),
            ("gssencmode", ["disable", "prefer", "require"]),
            ("channel_binding", ["disable", "prefer", "require"]),
            ("target_session_attrs", ["any", "read-write", "read-only", "primary", "standby", "prefer-standby"]),
            ("load_balance_hosts", ["disable", "random"]),
        ]
        for (key, allowed) in choices {
            if let value = options[key], !allowed.contains(value) {
                return "invalid \(key) (must be one of \(allowed.joined(separator: ", ")))"
            }
        }
        for key in ["ssl_min_protocol_version", "ssl_max_protocol_version"] {
            if let value = options[key], !["", "tlsv1", "tlsv1.1", "tlsv1.2", "tlsv1.3"].contains(value.lowercased()) {
                return "invalid \(key) (must be TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3)"
            }
        }
        return nil
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

/// Without leading and trailing blanks, as libpq's integer parser skips them.
private func trimmingBlanks<Text: StringProtocol>(_ text: Text) -> String {
    let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
    guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) }) else { return "" }
    return String(text[first...last])
}
