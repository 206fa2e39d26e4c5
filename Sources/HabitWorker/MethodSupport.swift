import Foundation
import HabitStore
import JSONRPC
import PostgresClient

/// What a database method runs against: one connection's repositories, on one thread.
public final class MethodContext {
    public let connection: Connection
    public let habits: HabitRepository
    public let tasks: TaskRepository
    /// Runs several requests' statements in one round trip (`SingleStatementMethod`).
    public let scope: UserScope

    init(connection: Connection, settings: StoreSettings) {
        self.connection = connection
        habits = HabitRepository(connection: connection, settings: settings)
        tasks = TaskRepository(connection: connection, settings: settings)
        scope = UserScope(connection: connection, settings: settings)
    }
}

/// A method that needs PostgreSQL. Params are decoded (and rejected) by the thread reading stdin,
/// before the request takes an in-flight place; `run` executes with one of the pool's connections.
protocol DatabaseMethod: SendableMetatype {
    associatedtype Params: Sendable
    static var name: String { get }
    /// Every accepted key; any other key is -32602 naming it.
    static var keys: Set<String> { get }
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue
}

/// A database method that is one statement as one user and never waits for a lock (reads:
/// MVCC). Alone it runs like any other; when several such requests wait for a connection, the
/// thread that takes them sends all their transactions in one round trip (see `Scheduler` and
/// `UserScope.queries`). A statement that could wait for a row lock would hold up all the others.
protocol SingleStatementMethod: DatabaseMethod {
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<JSONValue>
}

extension SingleStatementMethod {
    static func run(_ params: Params, in context: MethodContext) throws -> JSONValue {
        try context.scope.run(statement(params, in: context))
    }
}

/// A method answered without the database.
protocol LocalMethod: SendableMetatype {
    static var name: String { get }
    static var keys: Set<String> { get }
    static func run(_ params: ParamsReader) throws(RPCError) -> JSONValue
}

/// Method name → typed handler. Handlers never see request ids, framing or file descriptors.
struct MethodRegistry: Sendable {
    enum Prepared: Sendable {
        case immediate(JSONValue)
        /// `statement`: for single-statement methods, the same work as a statement that can share
        /// a round trip with other requests'.
        case database(@Sendable (MethodContext) throws -> JSONValue,
                      statement: (@Sendable (MethodContext) throws -> UserStatement<JSONValue>)?)
    }

    private var handlers: [String: @Sendable (ParamsReader) throws -> Prepared] = [:]

    mutating func register<Method: DatabaseMethod>(_: Method.Type) {
        handlers[Method.name] = Self.databaseHandler(Method.self)
    }

    mutating func register<Method: SingleStatementMethod>(_: Method.Type) {
        handlers[Method.name] = Self.databaseHandler(Method.self, statement: Method.statement(_:in:))
    }

    mutating func register<Method: LocalMethod>(_: Method.Type) {
        handlers[Method.name] = Self.localHandler(Method.self)
    }

    private static func databaseHandler<Method: DatabaseMethod>(
        _: Method.Type,
        statement: (@Sendable (Method.Params, MethodContext) throws -> UserStatement<JSONValue>)? = nil
    ) -> @Sendable (ParamsReader) throws -> Prepared {
        { reader in
            try reader.rejectUnknownKeys(allowed: Method.keys)
            let params = try Method.decode(reader)
            var shareable: (@Sendable (MethodContext) throws -> UserStatement<JSONValue>)?
            if let statement { shareable = { context in try statement(params, context) } }
            return .database({ context in try Method.run(params, in: context) }, statement: shareable)
        }
    }

    private static func localHandler<Method: LocalMethod>(_: Method.Type) -> @Sendable (ParamsReader) throws -> Prepared {
        { reader in
            try reader.rejectUnknownKeys(allowed: Method.keys)
            return .immediate(try Method.run(reader))
        }
    }

    var methodNames: [String] { handlers.keys.sorted() }

    /// Resolves and decodes a request: unknown method → -32601, bad params → -32602.
    func prepare(_ request: IncomingRequest) throws(RPCError) -> Prepared {
        guard let handler = handlers[request.method] else { throw RPCError.methodNotFound(request.method) }
        do {
            return try handler(try ParamsReader(request))
        } catch let error as RPCError {
            throw error
        } catch {
            throw RPCError.internalError()
        }
    }
}

// MARK: - Reading the service's value types from params

extension ParamsReader {
    static let instantRange = PostgresTimestamp(rfc3339: "0001-01-01T00:00:00Z")!...PostgresTimestamp(rfc3339: "9999-12-31T23:59:59.999999Z")!
    static let dateRange = CalendarDate(year: 1, month: 1, day: 1)!...CalendarDate(year: 9999, month: 12, day: 31)!

    func uuid(_ key: String) throws(RPCError) -> UUID {
        let text = try requiredString(key)
        guard let id = UUID(canonical: text) else {
            throw .invalidParams(field: key, reason: "expected a UUID")
        }
        return id
    }

    func userID() throws(RPCError) -> UUID { try uuid("user_id") }

    func date(_ key: String) throws(RPCError) -> CalendarDate {
        let text = try requiredString(key)
        guard let date = CalendarDate(iso8601: text) else {
            throw .invalidParams(field: key, reason: "expected a calendar date YYYY-MM-DD")
        }
        return date
    }

    func optionalTimestamp(_ key: String) throws(RPCError) -> PostgresTimestamp? {
        guard let text = try optionalString(key) else { return nil }
        guard let timestamp = PostgresTimestamp(rfc3339: text) else {
            throw .invalidParams(field: key, reason: "expected an RFC 3339 timestamp with offset")
        }
        // Responses print instants in UTC; keep them printable in the same format.
        guard Self.instantRange.contains(timestamp) else {
            throw .invalidParams(field: key, reason: "must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z")
        }
        return timestamp
    }

    /// An optional IANA zone name; its validity is checked against PostgreSQL later.
    func timeZone() throws(RPCError) -> String? {
        guard let zone = try optionalString("timezone") else { return nil }
        guard !zone.isEmpty, zone.utf8.count <= 64 else { throw .invalidParams(field: "timezone", reason: "expected an IANA time zone name") }
        return zone
    }

    /// For fields that can be cleared: absent → keep (nil), null → clear (.some(nil)).
    func clearableString(_ key: String) throws(RPCError) -> String?? {
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        case .string(let text)?: return .some(text)
        default: throw .invalidParams(field: key, reason: "expected a string or null")
        }
    }

    func clearableInt(_ key: String, range: ClosedRange<Int>) throws(RPCError) -> Int?? {
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        default: return .some(try requiredInt(key, range: range))
        }
    }
}

// MARK: - Encoding results

extension JSONValue {
    init(_ date: CalendarDate) { self = .string(date.description) }
    init(_ timestamp: PostgresTimestamp) { self = .string(timestamp.rfc3339) }
    init(_ id: UUID) { self = .string(id.lowercaseString) }

    init<Wrapped>(optional value: Wrapped?, _ encode: (Wrapped) -> JSONValue) {
        self = value.map(encode) ?? .null
    }

    init(habit: Habit) {
        self = .encoded(JSONWriter.encode(capacity: 320) { $0.habit(habit) })
    }

    init(profile: Profile) {
        self = .object(["user_id": JSONValue(profile.userID), "timezone": .string(profile.timeZone)])
    }
}

// The value types straight into a writer: habits are the bulk of `habits.list` and `day.get`
// responses, and building them as `JSONValue` trees first cost a third of the worker's time
// per `day.get` (see docs/performance.md).
extension JSONWriter {
    mutating func uuid(_ id: UUID) { asciiString { id.appendLowercase(to: &$0) } }
    mutating func date(_ date: CalendarDate) { asciiString { date.appendISO8601(to: &$0) } }
    mutating func timestamp(_ timestamp: PostgresTimestamp) { asciiString { timestamp.appendRFC3339(to: &$0) } }

    mutating func timestamp(_ timestamp: PostgresTimestamp?) {
        if let timestamp { self.timestamp(timestamp) } else { null() }
    }

    /// `{id, name, icon, color, is_active, activated_at, deactivated_at, sort_order,
    /// created_at, updated_at}` (docs/protocol.md, "Habit").
    mutating func habit(_ habit: Habit) {
        beginObject()
        key("id"); uuid(habit.id)
        key("name"); string(habit.name)
        key("icon"); string(habit.icon)
        key("color"); string(habit.color)
        key("is_active"); bool(habit.isActive)
        key("activated_at"); timestamp(habit.activatedAt)
        key("deactivated_at"); timestamp(habit.deactivatedAt)
        key("sort_order"); if let order = habit.sortOrder { int(order) } else { null() }
        key("created_at"); timestamp(habit.createdAt)
        key("updated_at"); timestamp(habit.updatedAt)
        endObject()
    }
}
