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
    public let settings: StoreSettings
    /// `--sync-retention-days`: sync cursors older than this have expired.
    let syncRetention: Duration
    /// The request's `deadline_ms`, if it has one (`settings` then holds the time that was left
    /// when it started). A method of many transactions (`sync.push`) checks it between them.
    let deadline: DispatchTime?
    /// `--statement-timeout-ms` as configured (0: none), whatever a deadline left of it.
    let configuredStatementTimeoutMilliseconds: Int

    init(connection: Connection, settings: StoreSettings, syncRetention: Duration,
         deadline: DispatchTime? = nil, configuredStatementTimeoutMilliseconds: Int? = nil) {
        self.connection = connection
        self.settings = settings
        self.syncRetention = syncRetention
        self.deadline = deadline
        self.configuredStatementTimeoutMilliseconds = configuredStatementTimeoutMilliseconds ?? settings.statementTimeoutMilliseconds
        habits = HabitRepository(connection: connection, settings: settings)
        tasks = TaskRepository(connection: connection, settings: settings)
        scope = UserScope(connection: connection, settings: settings)
    }
}

/// What every method declares, once, next to its implementation. The registry derives the
/// rest from it: the accepted keys, the handler, and the method's entry in the OpenRPC
/// document (`rpc.discover`, docs/openrpc.json).
protocol MethodDeclaration: SendableMetatype {
    associatedtype Params: Sendable
    static var name: String { get }
    /// One line for the OpenRPC document; docs/protocol.md has the prose.
    static var summary: String { get }
    /// The domain errors this method answers besides those every database method (or every
    /// method) can answer (`MethodRegistry.databaseErrors`, `.anyMethodErrors`).
    static var errors: [DomainErrorCode] { get }
    /// Whether a gateway may send the request again when its outcome is unknown (no answer:
    /// crash, kill, gateway timeout). Declared by every method, with no default, so a new method
    /// cannot be listed as safe by accident; docs/protocol.md's retry table says the same.
    static var retry: RetrySafety { get }
    /// Reads the params, and so declares them: run against a describing reader
    /// (`ParamsReader.declarations(of:)`) it yields the method's params and accepted keys; any
    /// other key is -32602 "unknown key" before `decode` runs. So every param must be read on
    /// every path: a describing reader returns placeholders (nil for an optional param, the
    /// first choice of an enumeration), and a check that refuses them before a later read is a
    /// bug the registry reports when the worker starts.
    static func decode(_ params: ParamsReader) throws(RPCError) -> Params
}

extension MethodDeclaration {
    static var errors: [DomainErrorCode] { [] }
}

/// A method's retry safety, published as `x-retry-safe` in the OpenRPC document.
enum RetrySafety: String, Sendable, CaseIterable {
    /// Sending it again after it took effect changes nothing more (reads, set-to-a-value writes,
    /// deletes, which answer not_found the second time).
    case always
    /// A create: safe when the request carries a client `id`, otherwise a retry makes a second row.
    case withClientID = "with_id"
    /// Each attempt changes the state again (toggles, cycles).
    case never
}

/// A method's result: how it writes itself and its JSON Schema, declared together. It is
/// written when the response is (`JSONValue.writable`): straight into the response line, and
/// never past `--max-response-bytes`.
protocol MethodResult: JSONWritable, Sendable {
    static var schema: JSONValue { get }
}

/// A method that needs PostgreSQL. Params are decoded (and rejected) by the thread reading stdin,
/// before the request takes an in-flight place; `run` executes with one of the pool's connections.
protocol DatabaseMethod: MethodDeclaration {
    associatedtype Result: MethodResult
    static func run(_ params: Params, in context: MethodContext) throws -> Result
}

/// A database method that is one statement as one user and never waits for a lock (reads:
/// MVCC). Alone it runs like any other; when several such requests wait for a connection, the
/// thread that takes them sends all their transactions in one round trip (see `Scheduler` and
/// `UserScope.queries`). A statement that could wait for a row lock would hold up all the others.
protocol SingleStatementMethod: DatabaseMethod {
    static func statement(_ params: Params, in context: MethodContext) throws -> UserStatement<Result>
}

extension SingleStatementMethod {
    static func run(_ params: Params, in context: MethodContext) throws -> Result {
        try context.scope.run(statement(params, in: context))
    }
}

/// A method answered without the database.
protocol LocalMethod: MethodDeclaration {
    associatedtype Result: MethodResult
    static func run(_ params: Params) throws(RPCError) -> Result
}

/// A method the worker answers from its own state, without the database (`changes.subscribe`):
/// run by the reading thread as soon as it is read, so it must never wait.
protocol WorkerMethod: MethodDeclaration {
    associatedtype Result: MethodResult
    static func run(_ params: Params, in worker: WorkerContext) throws(RPCError) -> Result
}

/// The worker's own state that `WorkerMethod`s act on.
final class WorkerContext: Sendable {
    let changes: ChangeListener

    init(changes: ChangeListener) {
        self.changes = changes
    }
}

/// Method name → typed handler. Handlers never see request ids, framing or file descriptors.
struct MethodRegistry: Sendable {
    enum Prepared: Sendable {
        case immediate(JSONValue)
        /// `statement`: for single-statement methods, the same work as a statement that can share
        /// a round trip with other requests'.
        case database(@Sendable (MethodContext) throws -> JSONValue,
                      statement: (@Sendable (MethodContext) throws -> UserStatement<JSONValue>)?)
        /// Answered at once from the worker's own state (`WorkerMethod`).
        case worker(@Sendable (WorkerContext) throws(RPCError) -> JSONValue)
    }

    /// One method as the OpenRPC document describes it.
    struct Description: Sendable {
        let name: String
        let summary: String
        let retry: RetrySafety
        let params: [ParamDeclaration]
        let result: JSONValue
        /// Ordered by code, from -32001 down.
        let errors: [DomainErrorCode]
    }

    /// What any database method can answer: the database unreachable, the statement timeout, a
    /// concurrent transaction, the request's `deadline_ms`, a commit a synchronous standby did not
    /// confirm (docs/protocol.md, "Errors").
    static let databaseErrors: [DomainErrorCode] = [.databaseUnavailable, .timeout, .conflict, .deadlineExceeded, .commitUnconfirmed]
    /// What any method can answer: its result past `--max-response-bytes`.
    static let anyMethodErrors: [DomainErrorCode] = [.responseTooLarge]

    private struct Entry: Sendable {
        /// The params `decode` reads; any other key is refused before it runs.
        let keys: Set<String>
        let prepare: @Sendable (ParamsReader) throws -> Prepared
    }

    private var entries: [String: Entry] = [:]
    /// In registration order.
    private(set) var descriptions: [Description] = []

    mutating func register<Method: DatabaseMethod>(_: Method.Type) {
        add(Method.self, result: Method.Result.schema, errors: Self.databaseErrors) { params in
            .database({ context in .writable(try Method.run(params, in: context)) }, statement: nil)
        }
    }

    mutating func register<Method: SingleStatementMethod>(_: Method.Type) {
        add(Method.self, result: Method.Result.schema, errors: Self.databaseErrors) { params in
            .database({ context in .writable(try Method.run(params, in: context)) },
                      statement: { context in try Method.statement(params, in: context).map { .writable($0) } })
        }
    }

    mutating func register<Method: WorkerMethod>(_: Method.Type) {
        add(Method.self, result: Method.Result.schema, errors: []) { params in
            .worker({ worker throws(RPCError) in .writable(try Method.run(params, in: worker)) })
        }
    }

    mutating func register<Method: LocalMethod>(_: Method.Type) {
        add(Method.self, result: Method.Result.schema, errors: []) { params in .immediate(.writable(try Method.run(params))) }
    }

    /// Describes the method by running its `decode` once against a describing reader. A
    /// `decode` that throws there validates before reading every param: a bug, found when the
    /// worker starts.
    private mutating func add<Method: MethodDeclaration>(
        _: Method.Type, result: JSONValue, errors implied: [DomainErrorCode],
        prepare: @escaping @Sendable (Method.Params) throws -> Prepared
    ) {
        precondition(entries[Method.name] == nil, "\(Method.name) registered twice")
        let params: [ParamDeclaration]
        do {
            params = try ParamsReader.declarations { reader throws(RPCError) in _ = try Method.decode(reader) }
        } catch {
            preconditionFailure("\(Method.name): decode threw \(error) while declaring its params; read every param before validating them")
        }
        entries[Method.name] = Entry(keys: Set(params.map(\.name))) { reader in try prepare(try Method.decode(reader)) }
        let errors = Set(Method.errors + implied + Self.anyMethodErrors).sorted { $0.rawValue > $1.rawValue }
        descriptions.append(Description(name: Method.name, summary: Method.summary, retry: Method.retry, params: params,
                                        result: result, errors: errors))
    }

    var methodNames: [String] { entries.keys.sorted() }

    func has(_ method: String) -> Bool { entries[method] != nil }

    /// Resolves and decodes a request: unknown method → -32601, bad params → -32602 (an unknown
    /// key first, then what `decode` refuses).
    func prepare(_ request: IncomingRequest) throws(RPCError) -> Prepared {
        guard let entry = entries[request.method] else { throw RPCError.methodNotFound(request.method) }
        do {
            let reader = try ParamsReader(request)
            try reader.rejectUnknownKeys(allowed: entry.keys)
            return try entry.prepare(reader)
        } catch let error as RPCError {
            throw error
        } catch {
            throw RPCError.internalError()
        }
    }
}

// MARK: - Reading the service's value types from params

/// The JSON Schemas of the service's value types, in params and results alike.
enum ValueSchema {
    static let uuid = JSONSchema.string(format: "uuid")
    static let date = JSONSchema.string(format: "date")
    static let timestamp = JSONSchema.string(format: "date-time")
    static let int32 = JSONSchema.integer(Int(Int32.min)...Int(Int32.max))
    static let timeZone = JSONSchema.string(minLength: 1)
}

/// What a describing reader's UUID and date accessors return.
private let placeholderUUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
private let placeholderDate = CalendarDate(year: 2000, month: 1, day: 1)!

/// For the params an update can clear.
private let clearableNote = "Absent: keep; null: clear."

/// The documented range of dates and instants (issue 31, finding 1; docs/protocol.md,
/// "Values"), checked while the params are read, before any statement runs. The database
/// keeps the lower bound for every writer (its triggers, sql/migrations/0021) and the
/// written dates' upper bound, the user's today (`future_date`), which needs the user's zone.
/// A reference date's upper bound is known without the zone: five years after the latest
/// today anywhere — UTC's date + 1 day (zones reach UTC+14) — so it holds every user's
/// today + 5 years, and at most one more day.
enum DateBounds {
    static let earliest = CalendarDate(year: 1970, month: 1, day: 1)!
    static let earliestInstant = PostgresTimestamp(rfc3339: "1970-01-01T00:00:00Z")!
    static let yearsAhead = 5
    static let referenceNote = "From 1970-01-01 to today + 5 years (UTC's today + 1 day + 5 years)."

    /// `earliest` … five years after UTC's date + 1 at `now`.
    static func reference(now: Date = Date()) -> ClosedRange<CalendarDate> {
        let latestToday = CalendarDate(daysSinceUnixEpoch: Int((now.timeIntervalSince1970 / 86_400).rounded(.down)) + 1)
        // 29 February + 5 years is 28 February.
        let latest = CalendarDate(year: latestToday.year + yearsAhead, month: latestToday.month, day: latestToday.day)
            ?? CalendarDate(year: latestToday.year + yearsAhead, month: latestToday.month, day: latestToday.day - 1)!
        return earliest...latest
    }

    static func checkWritten(_ date: CalendarDate, field: String) throws(RPCError) {
        guard date >= earliest else {
            throw .invalidParams(field: field, reason: RPCReason.outOfRange, message: "must be on or after \(earliest)")
        }
    }

    static func checkReference(_ date: CalendarDate, field: String) throws(RPCError) {
        let range = reference()
        guard range.contains(date) else {
            throw .invalidParams(field: field, reason: RPCReason.outOfRange,
                                 message: "must lie between \(range.lowerBound) and \(range.upperBound) (today + \(yearsAhead) years)")
        }
    }
}

extension ParamsReader {
    static let instantRange = PostgresTimestamp(rfc3339: "0001-01-01T00:00:00Z")!...PostgresTimestamp(rfc3339: "9999-12-31T23:59:59.999999Z")!
    static let dateRange = CalendarDate(year: 1, month: 1, day: 1)!...CalendarDate(year: 9999, month: 12, day: 31)!

    func uuid(_ key: String, description: String? = nil) throws(RPCError) -> UUID {
        if declares(key, schema: ValueSchema.uuid, required: true, description: description) { return placeholderUUID }
        let text = try requiredString(key)
        guard let id = UUID(canonical: text) else {
            throw .invalidParams(field: key, reason: InputFailure.invalidUUID, message: "expected a UUID")
        }
        return id
    }

    func userID() throws(RPCError) -> UUID {
        try uuid("user_id", description: "The user the request acts for; the gateway authenticates it.")
    }

    /// `user_id` and `id`: one of the user's rows.
    func ownedID() throws(RPCError) -> OwnedID {
        OwnedID(user: try userID(), id: try uuid("id"))
    }

    /// A move's anchor (habits.move, areas.move): exactly one of `before` and `after`, and not
    /// the moved row itself.
    func checkMoveAnchor(before: UUID?, after: UUID?, moved: UUID, noun: String, movedField: String) throws(RPCError) {
        switch (before, after) {
        case (_?, _?):
            throw .invalidParams(field: "after", reason: InputFailure.notAllowed, message: "give either before or after, not both")
        case (nil, nil):
            throw .invalidParams(field: "before", reason: RPCReason.required, message: "missing: give before or after")
        case (let anchor?, nil), (nil, let anchor?):
            guard anchor != moved else {
                throw .invalidParams(field: before != nil ? "before" : "after", reason: InputFailure.notAllowed, message: "must be another \(noun) than \(movedField)")
            }
        }
    }

    /// Absent or null → nil.
    func optionalUUID(_ key: String, description: String? = nil) throws(RPCError) -> UUID? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.uuid), required: false, description: description) { return nil }
        guard try optionalString(key) != nil else { return nil }
        return try uuid(key)
    }

    /// Absent → keep (nil), null → clear (.some(nil)).
    func clearableUUID(_ key: String) throws(RPCError) -> UUID?? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.uuid), required: false, description: clearableNote) { return nil }
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        case .string?: return .some(try uuid(key))
        default: throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected a UUID or null")
        }
    }

    /// A date a request writes (a completion's, a skip's): on or after `DateBounds.earliest`.
    /// The upper bound is the user's today (`future_date`), which the database knows.
    func writtenDate(_ key: String, description: String) throws(RPCError) -> CalendarDate {
        let value = try date(key, description: "From 1970-01-01. " + description)
        try DateBounds.checkWritten(value, field: key)
        return value
    }

    /// A reference date (day.get's, week.counts', habits.stats', stats.calendar's): within
    /// `DateBounds.reference()`.
    func referenceDate(_ key: String, description: String) throws(RPCError) -> CalendarDate {
        let value = try date(key, description: DateBounds.referenceNote + " " + description)
        try DateBounds.checkReference(value, field: key)
        return value
    }

    /// As `referenceDate`; absent or null → nil.
    func optionalReferenceDate(_ key: String, description: String) throws(RPCError) -> CalendarDate? {
        guard let value = try optionalDate(key, description: DateBounds.referenceNote + " " + description) else { return nil }
        try DateBounds.checkReference(value, field: key)
        return value
    }

    func date(_ key: String, description: String? = nil) throws(RPCError) -> CalendarDate {
        if declares(key, schema: ValueSchema.date, required: true, description: description) { return placeholderDate }
        let text = try requiredString(key)
        guard let date = CalendarDate(iso8601: text) else {
            throw .invalidParams(field: key, reason: InputFailure.invalidDate, message: "expected a calendar date YYYY-MM-DD")
        }
        return date
    }

    /// Absent or null → nil.
    func optionalDate(_ key: String, description: String? = nil) throws(RPCError) -> CalendarDate? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.date), required: false, description: description) { return nil }
        guard try optionalString(key) != nil else { return nil }
        return try date(key)
    }

    /// Absent → keep (nil), null → clear (.some(nil)).
    func clearableDate(_ key: String, description: String? = nil) throws(RPCError) -> CalendarDate?? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.date), required: false,
                    description: description.map { $0 + " " + clearableNote } ?? clearableNote) { return nil }
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        case .string?: return .some(try date(key))
        default: throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected a calendar date YYYY-MM-DD or null")
        }
    }

    func optionalTimestamp(_ key: String, description: String? = nil) throws(RPCError) -> PostgresTimestamp? {
        if declares(key, schema: JSONSchema.nullable(ValueSchema.timestamp), required: false, description: description) { return nil }
        guard let text = try optionalString(key) else { return nil }
        guard let timestamp = PostgresTimestamp(rfc3339: text) else {
            throw .invalidParams(field: key, reason: InputFailure.invalidTimestamp, message: "expected an RFC 3339 timestamp with offset")
        }
        // Responses print instants in UTC; keep them printable in the same format.
        guard Self.instantRange.contains(timestamp) else {
            throw .invalidParams(field: key, reason: RPCReason.outOfRange, message: "must lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z")
        }
        return timestamp
    }

    /// habits.create's `activated_at`: at or after 1970-01-01T00:00:00Z (`DateBounds`; the
    /// database's trigger keeps the same bound for every writer). Absent or null → nil (now).
    func activationInstant() throws(RPCError) -> PostgresTimestamp? {
        guard let instant = try optionalTimestamp("activated_at", description: "When the habit starts; default now. At or after 1970-01-01T00:00:00Z; may be in the future.") else { return nil }
        guard instant >= DateBounds.earliestInstant else {
            throw .invalidParams(field: "activated_at", reason: RPCReason.outOfRange, message: "must be at or after 1970-01-01T00:00:00Z")
        }
        return instant
    }

    /// The optional `timezone` override, an IANA zone name; its validity is checked against
    /// PostgreSQL later.
    func timeZone() throws(RPCError) -> String? {
        if declares("timezone", schema: JSONSchema.nullable(ValueSchema.timeZone), required: false,
                    description: "IANA zone name (pg_timezone_names) for this request's today; default the profile's zone, else UTC.") { return nil }
        return try checkedTimeZone(try optionalString("timezone"))
    }

    /// A profile's `timezone` (profile.set): absent or null keeps the stored zone.
    func profileTimeZone() throws(RPCError) -> String? {
        if declares("timezone", schema: JSONSchema.nullable(ValueSchema.timeZone), required: false,
                    description: "IANA zone name (pg_timezone_names); absent: kept (a new profile: UTC).") { return nil }
        return try checkedTimeZone(try optionalString("timezone"))
    }

    /// `timezone` where it is required; null counts as missing.
    func requiredTimeZone() throws(RPCError) -> String {
        if declares("timezone", schema: ValueSchema.timeZone, required: true, description: "IANA zone name (pg_timezone_names).") { return "UTC" }
        guard let zone = try checkedTimeZone(try optionalString("timezone")) else { throw .invalidParams(field: "timezone", reason: RPCReason.required, message: "missing") }
        return zone
    }

    private func checkedTimeZone(_ zone: String?) throws(RPCError) -> String? {
        guard let zone else { return nil }
        guard !zone.isEmpty, zone.utf8.count <= 64 else { throw .invalidParams(field: "timezone", reason: InputFailure.invalidTimeZone, message: "expected an IANA time zone name") }
        return zone
    }

    /// One of an enumeration's raw values.
    func oneOf<Value: RawRepresentable & CaseIterable>(_ key: String, _: Value.Type) throws(RPCError) -> Value where Value.RawValue == String {
        let text = try requiredString(key, oneOf: Value.allCases.map(\.rawValue))
        return Value(rawValue: text)!
    }

    /// As `oneOf`, absent or null → nil.
    func optionalOneOf<Value: RawRepresentable & CaseIterable>(_ key: String, _: Value.Type) throws(RPCError) -> Value? where Value.RawValue == String {
        try optionalString(key, oneOf: Value.allCases.map(\.rawValue)).flatMap(Value.init(rawValue:))
    }

    /// For fields that can be cleared: absent → keep (nil), null → clear (.some(nil)).
    func clearableString(_ key: String) throws(RPCError) -> String?? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.string()), required: false, description: clearableNote) { return nil }
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        case .string(let text)?: return .some(text)
        default: throw .invalidParams(field: key, reason: RPCReason.wrongType, message: "expected a string or null")
        }
    }

    func clearableInt(_ key: String, range: ClosedRange<Int>) throws(RPCError) -> Int?? {
        if declares(key, schema: JSONSchema.nullable(JSONSchema.integer(range)), required: false, description: clearableNote) { return nil }
        switch optionalValue(key) {
        case nil: return nil
        case .null?: return .some(nil)
        default: return .some(try requiredInt(key, range: range))
        }
    }
}

/// One of a user's rows (a habit, task or list): `user_id` and `id`.
struct OwnedID: Sendable {
    let user: UUID
    let id: UUID
}
