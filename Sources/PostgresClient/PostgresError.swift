import CLibPQ

/// The one error type of this module. It keeps what the server said (SQLSTATE, message,
/// detail, hint, constraint…) so callers can map errors by code, never by message text.
///
/// `description` is safe to log: it never contains bound parameter values. The server's
/// `detail` (which often quotes values, e.g. "Key (id)=(…) already exists") and, for
/// data exceptions (class 22, whose messages quote the offending input), the message
/// itself are left to `debugDescription`.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Could not establish a connection.
        case connectionFailed
        /// The connection broke (server restart, terminated backend, socket closed).
        case connectionLost
        /// The connection was closed by this process; using it is a programming error.
        case connectionClosed
        /// The server answered with an error (see `sqlState`).
        case server
        /// A result value could not be decoded into the requested Swift type.
        case decoding
        /// A Swift value could not be encoded as a parameter.
        case encoding
        /// The client library or the protocol reported something unexpected.
        case client
        /// An API misuse that the type system could not prevent (nested transaction…).
        case misuse
        /// `queryOne` found zero or several rows.
        case unexpectedRowCount
        /// The server committed, but only locally: its wait for a synchronous standby was
        /// cancelled (a WARNING instead of an error, `SessionState.noteNotice`). The write may
        /// be lost in a failover, so it must not be acknowledged as durable.
        case commitUnconfirmed
    }

    public var kind: Kind
    public var sqlState: SQLState?
    public var severity: String?
    public var message: String
    public var detail: String?
    public var hint: String?
    public var constraint: String?
    public var schema: String?
    public var table: String?
    public var column: String?
    public var dataType: String?
    /// The SQL text of the failing statement (parameters are never part of it).
    public var sql: String?

    public init(kind: Kind, message: String, sqlState: SQLState? = nil, sql: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.sql = sql
    }

    /// True when the connection can no longer be used as it is: the caller should `reset()`
    /// (or drop) it. Covers a broken socket and the server-side terminations of class 57P
    /// and class 08.
    public var isConnectionLost: Bool {
        if kind == .connectionLost || kind == .connectionFailed || kind == .connectionClosed { return true }
        guard let code = sqlState else { return false }
        return code.isInClass("08") || code == .adminShutdown || code == .crashShutdown
            || code == .cannotConnectNow || code == .idleSessionTimeout || code == .idleInTransactionSessionTimeout
    }

    /// The server rolled the transaction back because of a concurrent one (serialization
    /// failure or deadlock): nothing was written, and running it again may succeed.
    public var isTransactionConflict: Bool {
        sqlState == .serializationFailure || sqlState == .deadlockDetected
    }

    public var description: String {
        var text = "PostgresError.\(kind)"
        if let severity { text += " \(severity)" }
        if let sqlState { text += " \(sqlState.rawValue)" }
        if sqlState?.isInClass("22") == true {
            text += ": data exception (message withheld: it may quote a value)"
        } else {
            text += ": \(message)"
        }
        if let constraint { text += " [constraint \(constraint)]" }
        if let table { text += " [table \(table)]" }
        if let column { text += " [column \(column)]" }
        if let sql { text += " [sql \(Self.abbreviate(sql))]" }
        return text
    }

    public var debugDescription: String {
        var text = "PostgresError.\(kind) \(sqlState?.rawValue ?? "-"): \(message)"
        if let detail { text += "\nDETAIL: \(detail)" }
        if let hint { text += "\nHINT: \(hint)" }
        if let constraint { text += "\nCONSTRAINT: \(constraint)" }
        if let sql { text += "\nSQL: \(sql)" }
        return text
    }

    private static func abbreviate(_ sql: String) -> String {
        let flat = sql.split(whereSeparator: { $0 == "\n" || $0 == "\t" || $0 == " " }).joined(separator: " ")
        return flat.count > 200 ? String(flat.prefix(200)) + "…" : flat
    }

    /// Builds an error from a failed result, reading the server's diagnostic fields.
    static func fromResult(_ result: OpaquePointer, connection: OpaquePointer?, sql: String?) -> PostgresError {
        func field(_ code: Int32) -> String? {
            guard let value = PQresultErrorField(result, code) else { return nil }
            return String(cString: value)
        }
        let primary = field(Int32(UInt8(ascii: "M")))
        let connectionBroken = connection.map { PQstatus($0) == CONNECTION_BAD } ?? false
        var error = PostgresError(
            kind: .server,
            message: primary ?? Self.clientMessage(result: result, connection: connection),
            sqlState: field(Int32(UInt8(ascii: "C"))).map(SQLState.init(rawValue:)),
            sql: sql
        )
        error.severity = field(Int32(UInt8(ascii: "V"))) ?? field(Int32(UInt8(ascii: "S")))
        if error.sqlState == nil || connectionBroken || error.severity == "FATAL" || error.severity == "PANIC" {
            // No SQLSTATE means libpq itself reported the failure: the socket closed or a
            // send failed ("server closed the connection unexpectedly"), which libpq may not
            // yet reflect in PQstatus. FATAL means the server ended the session (e.g. 25P03,
            // idle_in_transaction_session_timeout), also before PQstatus says so. The
            // connection cannot be trusted either way.
            error.kind = .connectionLost
        }
        error.detail = field(Int32(UInt8(ascii: "D")))
        error.hint = field(Int32(UInt8(ascii: "H")))
        error.constraint = field(Int32(UInt8(ascii: "n")))
        error.schema = field(Int32(UInt8(ascii: "s")))
        error.table = field(Int32(UInt8(ascii: "t")))
        error.column = field(Int32(UInt8(ascii: "c")))
        error.dataType = field(Int32(UInt8(ascii: "d")))
        return error
    }

    static func commitUnconfirmed(sql: String?) -> PostgresError {
        PostgresError(kind: .commitUnconfirmed,
                      message: "committed on this server but not confirmed by a synchronous standby (the wait was cancelled)", sql: sql)
    }

    static func clientMessage(result: OpaquePointer?, connection: OpaquePointer?) -> String {
        if let result, let text = PQresultErrorMessage(result), text.pointee != 0 {
            return String(cString: text).trimmingTrailingNewlines()
        }
        if let connection, let text = PQerrorMessage(connection), text.pointee != 0 {
            return String(cString: text).trimmingTrailingNewlines()
        }
        return "unknown libpq error"
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var text = self
        while let last = text.last, last == "\n" || last == "\r" || last == " " { text.removeLast() }
        return text
    }
}
