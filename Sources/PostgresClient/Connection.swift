import CLibPQ
import Foundation

/// One libpq connection (`PGconn`), owned by one thread at a time.
///
/// The vocabulary is rust-postgres's: `execute` returns affected rows, `query` rows,
/// `queryOne` exactly one row, `queryOptional` zero or one, and `withTransaction` commits
/// when its body returns and rolls back when it throws. `transaction(prelude:statement:)` and
/// `transactions(_:)` run one-statement transactions in a single round trip.
///
/// Parameters and results travel in binary. Statements are prepared once per connection under
/// names no other client uses (`PreparedStatementCache`; see `PreparedStatementMode` for
/// poolers). How the thread waits for the server is libpq's, unless a `WaitStrategy` is given
/// (`waiting(with:_:)`).
public final class Connection {
    /// nil once closed. Every libpq call goes through `liveHandle()` so use-after-close throws.
    private var handle: OpaquePointer?
    /// Statements of an open `withTransaction` that are not yet sent (`BEGIN` and the prelude).
    /// They travel in one pipeline with the body's first statement, so a transaction with a
    /// one-statement body costs two round trips instead of one per statement.
    private var deferredStatements: [Query]?
    private var inTransactionBody = false
    /// Savepoints open inside the transaction body (nested `withTransaction`).
    private var savepointDepth = 0
    let statements: PreparedStatementCache
    /// Set when the server ended the session or the connection was found broken.
    let session = SessionState()
    /// Set for the duration of `waiting(with:_:)`.
    var waitStrategy: WaitStrategy?
    /// A round trip unanswered after this long is cancelled, and abandoned (connection lost)
    /// after as long again (`ResponseWatchdog`). nil: wait as long as the server takes. Set it
    /// above the session's `statement_timeout`, which the server applies first where it can.
    public var responseTimeout: Duration?
    private var watchdog: ResponseWatchdog?

    /// What a higher layer looked up once about this connection's server (e.g. whether the
    /// database is a Citus coordinator) and need not ask again: the kind of server behind a
    /// connection does not change.
    public var serverFacts: [String: Bool] = [:]

    public var preparedStatementMode: PreparedStatementMode { statements.mode }
    /// False in `.off` mode and once `.auto` fell back to unnamed statements.
    public var usesPreparedStatements: Bool { statements.usesNames }
    /// Called once, when `.auto` switches this connection to unnamed statements (with the
    /// server's error), so the owner can say so in its log.
    public var onPreparedStatementsDisabled: ((PostgresError) -> Void)? {
        get { statements.onDisabled }
        set { statements.onDisabled = newValue }
    }

    /// Connects with a libpq conninfo string (`host=/tmp dbname=app`) or a URL
    /// (`postgres://user@host/db`); an empty string means libpq's defaults and PG* variables.
    public init(_ conninfo: String, applicationName: String = "habit", connectTimeoutSeconds: Int = 10,
                preparedStatements: PreparedStatementMode = .auto) throws {
        statements = PreparedStatementCache(mode: preparedStatements)
        // A malformed string never reaches PQconnectdbParams, whose parse errors can quote it,
        // password included: validate names the wrong part, never its value.
        try ConnectionString.validate(conninfo)
        // Keywords before "dbname" are defaults: values inside the conninfo/URL override them
        // (PQconnectdbParams with expand_dbname = 1).
        let keywords = ["application_name", "connect_timeout", "client_encoding", "dbname"]
        let values = [applicationName, String(connectTimeoutSeconds), "UTF8", conninfo]
        let connection: OpaquePointer? = withCStringArray(keywords) { keywordPointers in
            withCStringArray(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection else {
            throw PostgresError(kind: .connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = PostgresError.clientMessage(result: nil, connection: connection)
            // libpq: "even if the server connection attempt fails (as indicated by PQstatus), the
            // application should call PQfinish to free the memory used by the PGconn object".
            PQfinish(connection)
            throw PostgresError(kind: .connectionFailed, message: "could not connect to PostgreSQL: \(message)")
        }
        handle = connection
        // libpq prints notices (WARNING, NOTICE) to stderr by default; they would interleave
        // unstructured text with the service's structured logs, so they are dropped — except
        // that a FATAL arriving while the connection is idle (the server shutting down or
        // terminating this backend) is delivered as a notice, and marks the session dead, and
        // that a cancelled wait for a synchronous standby is counted (`SessionState`).
        // The receiver's argument is `session`, which lives as long as the PGconn (both are
        // this object's, and PQfinish runs in deinit at the latest).
        PQsetNoticeReceiver(connection, { argument, result in
            guard let argument, let result, let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))) else { return }
            Unmanaged<SessionState>.fromOpaque(argument).takeUnretainedValue().noteNotice(result, severity: String(cString: severity))
        }, Unmanaged.passUnretained(session).toOpaque())
    }

    /// Connects to `DATABASE_URL`, or to libpq's defaults (PG* variables) when it is unset.
    public static func fromEnvironment(applicationName: String = "habit") throws -> Connection {
        try Connection(environmentDatabaseURL() ?? "", applicationName: applicationName)
    }

    public static func environmentDatabaseURL() -> String? {
        guard let raw = getenv("DATABASE_URL") else { return nil }
        let value = String(cString: raw)
        return value.isEmpty ? nil : value
    }

    deinit {
        // PQfinish exactly once: close() sets handle to nil. libpq: "The PGconn pointer must not
        // be used again after PQfinish has been called."
        watchdog?.free()
        if let handle { PQfinish(handle) }
    }

    /// Closes the connection. Idempotent; later calls on this object throw `.connectionClosed`.
    public func close() {
        watchdog?.free()
        watchdog = nil
        if let handle { PQfinish(handle) }
        handle = nil
        deferredStatements = nil
    }

    public var isClosed: Bool { handle == nil }

    /// False once the socket is known to be broken; `reset()` reconnects.
    public var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK && !session.ended
    }

    /// Reads whatever the server sent while the connection sat idle (such as the FATAL of a
    /// terminated backend) and says whether the connection is still usable. Never blocks:
    /// libpq's socket is non-blocking underneath.
    public func isAliveAfterIdle() -> Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK, !session.ended,
              PQtransactionStatus(handle) == PQTRANS_IDLE, PQpipelineStatus(handle) == PQ_PIPELINE_OFF else { return false }
        // libpq: PQconsumeInput "will read available data and save it in a buffer"; its result
        // "does not say whether any input data was actually collected".
        guard PQconsumeInput(handle) == 1 else { return false }
        _ = PQisBusy(handle) // parses what was read: an idle-time FATAL reaches the notice receiver
        return PQstatus(handle) == CONNECTION_OK && !session.ended
    }

    /// Reconnects with the original parameters (PQreset), discarding any transaction state.
    public func reset() throws {
        let handle = try liveHandle()
        deferredStatements = nil
        statements.sessionReplaced()
        session.ended = false
        watchdog?.free() // the new session has another socket and cancel key
        watchdog = nil
        waitStrategy?.willBlockInLibpq() // reconnecting blocks inside libpq
        PQreset(handle) // same PGconn, same parameters: keeps the notice receiver
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(kind: .connectionFailed, message: "reset failed: \(PostgresError.clientMessage(result: nil, connection: handle))")
        }
    }

    /// The server process serving this connection (for pg_stat_activity / pg_terminate_backend).
    public var backendPID: Int32 {
        guard let handle else { return 0 }
        return PQbackendPID(handle)
    }

    /// PostgreSQL server version as an integer (150018 for 15.18).
    public var serverVersion: Int {
        guard let handle else { return 0 }
        return Int(PQserverVersion(handle))
    }

    public enum TransactionStatus: Sendable {
        case idle, active, inTransaction, inFailedTransaction, unknown
    }

    public var transactionStatus: TransactionStatus {
        guard let handle else { return .unknown }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE: return .idle
        case PQTRANS_ACTIVE: return .active
        case PQTRANS_INTRANS: return .inTransaction
        case PQTRANS_INERROR: return .inFailedTransaction
        default: return .unknown
        }
    }

    // MARK: - Statements

    /// Runs a statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: Query) throws -> Int {
        try run(query).affectedRows
    }

    /// Runs a statement and returns all its rows.
    public func query(_ query: Query) throws -> [Row] {
        let result = try run(query)
        return (0..<result.rowCount).map { Row(result: result, index: $0) }
    }

    /// Runs a statement and returns its rows and affected-row count.
    public func statementResult(_ query: Query) throws -> StatementResult {
        StatementResult(try run(query))
    }

    /// Runs a statement that must return exactly one row.
    public func queryOne(_ query: Query) throws -> Row {
        let result = try run(query)
        guard result.rowCount == 1 else {
            throw PostgresError(kind: .unexpectedRowCount, message: "expected exactly one row, got \(result.rowCount)", sql: query.sql)
        }
        return Row(result: result, index: 0)
    }

    /// Runs a statement that returns zero or one row.
    public func queryOptional(_ query: Query) throws -> Row? {
        let result = try run(query)
        guard result.rowCount <= 1 else {
            throw PostgresError(kind: .unexpectedRowCount, message: "expected at most one row, got \(result.rowCount)", sql: query.sql)
        }
        return result.rowCount == 1 ? Row(result: result, index: 0) : nil
    }

    /// Runs SQL text with the simple query protocol: several statements, no parameters
    /// (migration files). The label is loud because nothing here may carry a value.
    public func executeScript(unsafeSQL sql: String) throws {
        try flushDeferredStatements()
        let handle = try liveHandle()
        waitStrategy?.willBlockInLibpq()
        var failure: PostgresError?
        // PQexec returns only the last result; the first error stops the script anyway.
        if let result = guarded({ PQexec(handle, sql) }) {
            let status = PQresultStatus(result)
            if status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY {
                failure = PostgresError.fromResult(result, connection: handle, sql: "(script)")
            }
            PQclear(result)
        } else {
            failure = connectionFailure(sql: "(script)")
        }
        if let failure { throw failure }
    }

    // MARK: - Transactions

    /// Runs `body` inside `BEGIN … COMMIT`. Commits when `body` returns, rolls back when it
    /// throws (or when the transaction was aborted by an error the body swallowed).
    ///
    /// `prelude` runs right after `BEGIN` (e.g. `set_config(…, true)` of role and claims);
    /// it is pipelined with the body's first statement.
    ///
    /// In `.auto` mode the body runs a second time (once) when its first attempt failed only
    /// because a prepared statement's name was missing or taken on the server: that attempt
    /// was rolled back, so nothing of it was applied. Keep bodies to database work.
    ///
    /// Called inside another transaction's body, it runs as a SAVEPOINT instead (as psycopg's
    /// and rust-postgres's nested transactions do): `prelude` and `body` run after `SAVEPOINT`,
    /// which is released when `body` returns and rolled back to when it throws, so only the
    /// nested part is undone and the outer transaction goes on. A nested one is never retried
    /// after a prepared-name failure: its error reaches the outer body, whose transaction is
    /// the one to run again.
    public func withTransaction<Value>(prelude: [Query] = [], _ body: (Connection) throws -> Value) throws -> Value {
        if inTransactionBody { return try savepointAttempt(prelude: prelude, body) }
        return try retryingAfterNameFailure { try transactionAttempt(prelude: prelude, body) }
    }

    /// `withTransaction` nested in an open transaction's body. `SAVEPOINT` and the prelude join
    /// the statements not yet sent, so they travel with the body's first statement as an
    /// outermost `BEGIN` does.
    private func savepointAttempt<Value>(prelude: [Query], _ body: (Connection) throws -> Value) throws -> Value {
        _ = try liveHandle()
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        // Depth-named: a nested savepoint of the same name would shadow ours until released.
        let name = "habit_savepoint_\(savepointDepth)"
        let unsent = deferredStatements
        deferredStatements = (unsent ?? []) + [Query(unsafeSQL: "SAVEPOINT \(name)")] + prelude
        let value: Value
        do {
            value = try body(self)
        } catch {
            try rollBack(to: name, unsent: unsent)
            throw error
        }
        if deferredStatements != nil {
            // The body sent nothing: neither did the savepoint.
            deferredStatements = unsent
            return value
        }
        if transactionStatus == .inFailedTransaction {
            try rollBack(to: name, unsent: nil)
            throw PostgresError(kind: .misuse, message: "savepoint was aborted by an earlier error and has been rolled back",
                                sqlState: .inFailedSQLTransaction)
        }
        try run(Query(unsafeSQL: "RELEASE SAVEPOINT \(name)"))
        return value
    }

    /// Undoes a savepoint's work after its body threw (or swallowed an error). When nothing of
    /// it was sent yet, the unsent statements go back to what they were before it.
    private func rollBack(to savepoint: String, unsent: [Query]?) throws {
        if deferredStatements != nil {
            deferredStatements = unsent
            return
        }
        guard let handle, PQstatus(handle) == CONNECTION_OK, transactionStatus != .idle else { return }
        // One simple-protocol round trip; RELEASE pops it so the next nested one reuses the name.
        try executeScript(unsafeSQL: "ROLLBACK TO SAVEPOINT \(savepoint); RELEASE SAVEPOINT \(savepoint)")
    }

    private func transactionAttempt<Value>(prelude: [Query], _ body: (Connection) throws -> Value) throws -> Value {
        _ = try liveHandle()
        guard !inTransactionBody, transactionStatus == .idle else {
            throw PostgresError(kind: .misuse, message: "withTransaction called while a transaction is already open")
        }
        inTransactionBody = true
        deferredStatements = ["BEGIN"] + prelude
        defer {
            inTransactionBody = false
            deferredStatements = nil
        }
        let value: Value
        do {
            value = try body(self)
        } catch {
            rollbackQuietly()
            throw error
        }
        if deferredStatements != nil {
            // The body sent nothing: the server never saw the transaction.
            return value
        }
        if transactionStatus == .inFailedTransaction {
            rollbackQuietly()
            throw PostgresError(kind: .misuse, message: "transaction was aborted by an earlier error and has been rolled back",
                                sqlState: .inFailedSQLTransaction)
        }
        do {
            try run("COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        return value
    }

    /// The rows and affected-row count of one statement.
    public struct StatementResult {
        public let rows: [Row]
        public let affectedRows: Int

        init(_ result: ResultSet) {
            rows = (0..<result.rowCount).map { Row(result: result, index: $0) }
            affectedRows = result.affectedRows
        }
    }

    /// A transaction of exactly one statement in one round trip: `prelude` and `statement`
    /// travel in one pipeline ending in a single Sync, without BEGIN or COMMIT. Everything
    /// before the Sync is one implicit transaction (see `Pipeline`): it commits at the Sync, or,
    /// if anything fails, the server skips the rest and rolls the whole of it back, so
    /// `set_config(…, true)` in the prelude lasts exactly until the Sync. Use `withTransaction`
    /// when statements depend on earlier results.
    ///
    /// Neither may open a transaction block of its own (BEGIN): that is refused as misuse and
    /// rolled back. A connection lost before the Sync was answered is reported lost: whether
    /// the statement committed is unknown.
    ///
    /// Inside a transaction's body it runs as a nested `withTransaction` (a SAVEPOINT).
    public func transaction(prelude: [Query] = [], statement: Query) throws -> StatementResult {
        let handle = try liveHandle()
        if inTransactionBody {
            return try withTransaction(prelude: prelude) { connection in StatementResult(try connection.run(statement)) }
        }
        guard transactionStatus == .idle else {
            throw PostgresError(kind: .misuse, message: "transaction(prelude:statement:) called while a transaction is already open")
        }
        return try retryingAfterNameFailure {
            let outcome = guarded { pipeline(handle).run([prelude + [statement]])[0] }
            try refuseOpenTransactionBlock(sql: statement.sql)
            let results = try outcome.get()
            return StatementResult(results[results.count - 1])
        }
    }

    /// Independent one-statement transactions, each exactly as `transaction(prelude:statement:)`
    /// runs it, sent together in one pipeline with a Sync after each: one round trip for all
    /// of them, so a busy connection serves several requests per wake-up of the server and of
    /// this thread. Returns one result per transaction, in order; a failing one (a unique-key
    /// conflict, an error raised by its statement) is rolled back at its own Sync and leaves
    /// the others untouched.
    ///
    /// When the connection is lost, every transaction whose Sync was not answered is reported
    /// lost (outcome unknown, as with `transaction(prelude:statement:)`), even if the server
    /// committed it.
    public func transactions(_ list: [(prelude: [Query], statement: Query)]) throws -> [Result<StatementResult, PostgresError>] {
        let handle = try liveHandle()
        guard !inTransactionBody, transactionStatus == .idle else {
            throw PostgresError(kind: .misuse, message: "transactions(_:) called while a transaction is already open")
        }
        guard !list.isEmpty else { return [] }
        let nameFailuresBefore = statements.nameFailures
        // Each transaction of the round trip has its own statement_timeout: the limit is theirs together.
        var results = guarded(transactions: list.count) { pipeline(handle).run(list.map { $0.prelude + [$0.statement] }) }.map { outcome in
            outcome.map { StatementResult($0[$0.count - 1]) }
        }
        do {
            try refuseOpenTransactionBlock(sql: list.last?.statement.sql)
        } catch let error as PostgresError {
            // The transactions after the BEGIN ran inside its block and were just rolled back;
            // which ones before it committed is not known here: none is reported a success.
            return results.map { _ in .failure(error) }
        }
        // `.auto`: after the fallback to unnamed statements, the transactions that failed on a
        // lost name ran nothing (such an error comes at Parse or Bind, and their Sync rolled back
        // whatever of them ran before it); they run once more, unnamed. Never loops: unnamed
        // statements cannot fail on a name.
        guard statements.mode == .auto, statements.nameFailures > nameFailuresBefore else { return results }
        let again = results.indices.filter { index in
            if case .failure(let error) = results[index] { return statements.isLostName(error) }
            return false
        }
        guard !again.isEmpty else { return results }
        if isHealthy, transactionStatus == .idle {
            for (index, result) in zip(again, try transactions(again.map { list[$0] })) { results[index] = result }
        } else {
            // The session is gone: they never ran, and are lost like the session.
            for index in again { results[index] = .failure(connectionFailure(sql: list[index].statement.sql)) }
        }
        return results
    }

    /// After one-statement transactions: the session must be outside any transaction block. A
    /// statement that opened one (BEGIN) would hold the rest of the session in it.
    private func refuseOpenTransactionBlock(sql: String?) throws {
        guard let handle else { return }
        let status = PQtransactionStatus(handle)
        guard status == PQTRANS_INTRANS || status == PQTRANS_INERROR else { return }
        rollbackQuietly()
        throw PostgresError(kind: .misuse, message: "a one-statement transaction opened a transaction block; it has been rolled back", sql: sql)
    }

    /// Runs `attempt`; in `.auto` mode, if it failed only because a statement's name was
    /// missing or taken on the server (a transaction pooler moved this client to another
    /// server connection), runs it once more with unnamed statements. The failed attempt ran
    /// nothing: such an error comes at Parse or Bind, before execution, and stops the rest of
    /// its pipeline; a transaction around it has been rolled back by the time we retry.
    private func retryingAfterNameFailure<Value>(_ attempt: () throws -> Value) throws -> Value {
        let failuresBefore = statements.nameFailures
        do {
            return try attempt()
        } catch {
            guard statements.mode == .auto, statements.nameFailures > failuresBefore, !inTransactionBody,
                  transactionStatus == .idle, isHealthy else { throw error }
            return try attempt()
        }
    }

    private func rollbackQuietly() {
        deferredStatements = nil
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return }
        let status = PQtransactionStatus(handle)
        guard status == PQTRANS_INTRANS || status == PQTRANS_INERROR else { return }
        waitStrategy?.willBlockInLibpq()
        if let result = PQexec(handle, "ROLLBACK") { PQclear(result) }
    }

    // MARK: - Internals

    func liveHandle() throws -> OpaquePointer {
        guard let handle else {
            throw PostgresError(kind: .connectionClosed, message: "the connection was closed")
        }
        return handle
    }

    /// The error for a call that returned no result: a broken connection or a client failure.
    /// The session is marked ended: the caller must reconnect, never reuse it.
    func connectionFailure(sql: String?) -> PostgresError {
        session.lost(handle, sql: sql)
    }

    private func pipeline(_ handle: OpaquePointer) -> Pipeline {
        Pipeline(handle: handle, statements: statements, session: session, wait: waitStrategy)
    }

    /// Executes one statement, pipelining any deferred transaction statements before it.
    /// Outside a transaction, a statement that failed on its name runs again unnamed (`.auto`).
    @discardableResult
    private func run(_ query: Query) throws -> ResultSet {
        try retryingAfterNameFailure {
            let unconfirmedBefore = session.unconfirmedCommits
            let result = try guarded { try runOnce(query) }
            // A statement that committed (COMMIT, or one outside a transaction block) whose
            // wait for the synchronous standby was cancelled: applied here, not replicated.
            if session.unconfirmedCommits != unconfirmedBefore { throw PostgresError.commitUnconfirmed(sql: query.sql) }
            return result
        }
    }

    /// Runs one round trip under the `responseTimeout` watchdog, if any; a round trip carrying
    /// several transactions (`transactions(_:)`) may take the limit once per transaction.
    func guarded<Value>(transactions: Int = 1, _ body: () throws -> Value) rethrows -> Value {
        guard let responseTimeout, let handle else { return try body() }
        if watchdog == nil { watchdog = ResponseWatchdog(handle: handle) }
        guard let watchdog else { return try body() }
        return try watchdog.guarding(after: responseTimeout * max(1, transactions), body)
    }

    private func runOnce(_ query: Query) throws -> ResultSet {
        let handle = try liveHandle()
        if let deferred = deferredStatements {
            deferredStatements = nil
            let results = try pipeline(handle).run([deferred + [query]])[0].get()
            return results[results.count - 1]
        }
        if statements.isNamed(query) {
            guard let name = statements.preparedName(query) else {
                // Prepare and execute in one round trip.
                return try pipeline(handle).run([[query]])[0].get()[0]
            }
            waitStrategy?.willBlockInLibpq() // PQexecPrepared waits inside libpq
            let result = withParameters(query.bindings) { count, _, values, lengths, formats in
                PQexecPrepared(handle, name, count, values, lengths, formats, 1)
            }
            do {
                return try check(result, on: handle, sql: query.sql)
            } catch let error as PostgresError where PreparedStatementCache.isNameError(error) {
                statements.noteNameFailure(error)
                throw error
            }
        }
        waitStrategy?.willBlockInLibpq() // PQexecParams waits inside libpq
        let result = withParameters(query.bindings) { count, types, values, lengths, formats in
            PQexecParams(handle, query.sql, count, types, values, lengths, formats, 1)
        }
        return try check(result, on: handle, sql: query.sql)
    }

    func flushDeferredStatements() throws {
        guard let deferred = deferredStatements, let handle else { return }
        deferredStatements = nil
        _ = try guarded { try pipeline(handle).run([deferred])[0].get() }
    }

    private func check(_ result: OpaquePointer?, on handle: OpaquePointer, sql: String) throws -> ResultSet {
        guard let result else { throw connectionFailure(sql: sql) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return ResultSet(handle: result)
        case PGRES_COPY_OUT, PGRES_COPY_IN, PGRES_COPY_BOTH:
            PQclear(result)
            // Leave the connection usable: cancel the copy and read it to its end.
            cancelRunningStatement(handle)
            readResults(of: handle, through: .command, waitingWith: nil) { result, _ in PQclear(result) }
            throw PostgresError(kind: .misuse, message: "COPY statements need copyOut", sql: sql)
        default:
            let error = PostgresError.fromResult(result, connection: handle, sql: sql)
            PQclear(result)
            throw error
        }
    }
}

@available(*, unavailable, message: "A PGconn must not be shared between threads")
extension Connection: Sendable {}

/// What the connection knows about its server session beyond libpq's status; owned by the
/// Connection (the notice receiver's argument), used on its thread only.
final class SessionState {
    /// The server announced the end of the session (a FATAL notice), or a call found the
    /// connection broken: it must be reset, never reused.
    var ended = false
    /// Commits whose wait for a synchronous standby the server cancelled (statement cancelled,
    /// backend terminated): it then commits locally and says so only in a WARNING. Compared
    /// before and after a round trip that commits.
    var unconfirmedCommits = 0

    /// The notice receiver's work. PostgreSQL gives the sync-rep WARNING no code of its own
    /// (01000, or 57P01 when the backend is being terminated), so it is recognised by its
    /// English message: servers must run with English `lc_messages` (the default, C) for it.
    func noteNotice(_ result: OpaquePointer, severity: String) {
        if severity == "FATAL" || severity == "PANIC" { ended = true }
        guard severity == "WARNING", let text = PQresultErrorField(result, Int32(UInt8(ascii: "M"))) else { return }
        let message = String(cString: text)
        if message.hasPrefix("canceling wait for synchronous replication") || message.hasPrefix("canceling the wait for synchronous replication") {
            unconfirmedCommits += 1
        }
    }

    /// The error for a call that got no answer: libpq may still report CONNECTION_OK after a
    /// failed send to a server that vanished (it notices on the next read), so any such failure
    /// counts as a lost connection, and the session as ended.
    func lost(_ handle: OpaquePointer?, sql: String?) -> PostgresError {
        ended = true
        return PostgresError(kind: .connectionLost, message: PostgresError.clientMessage(result: nil, connection: handle), sql: sql)
    }
}
