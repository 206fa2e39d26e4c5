import CLibPQ
import Foundation

/// One libpq connection (`PGconn`), owned by one thread at a time.
///
/// The vocabulary is rust-postgres's: `execute` returns affected rows, `query` rows,
/// `queryOne` exactly one row, `queryOptional` zero or one, and `withTransaction` commits
/// when its body returns and rolls back when it throws.
///
/// Parameters and results travel in binary. Statements are prepared once per connection under
/// names no other client uses (`habit_<random>_N`); see `PreparedStatementMode` for poolers.
public final class Connection {
    /// nil once closed. Every libpq call goes through `liveHandle()` so use-after-close throws.
    private var handle: OpaquePointer?
    /// Statements of an open transaction that are not yet sent (`BEGIN` and the prelude).
    /// They travel in one pipeline with the transaction's first statement, so a transaction
    /// with a one-statement body costs two round trips instead of one per statement.
    private var deferredStatements: [Query]?
    private var inTransactionBody = false
    /// Named prepared statements of this session, by SQL text and parameter types. Parsing
    /// and planning a statement often costs more than running it (measured: 1.7 ms unnamed
    /// vs 0.47 ms prepared for the daily view), so statements are prepared once per
    /// connection, unless the mode is `.off` or `.auto` fell back to unnamed statements.
    public let preparedStatementMode: PreparedStatementMode
    public private(set) var usesPreparedStatements: Bool
    private var preparedStatements: [StatementKey: String] = [:]
    /// Prefix of this session's statement names, random per session: a name that exists on a
    /// server connection is then always one this session prepared there, for the same SQL, even
    /// when a transaction pooler mixes clients on that server connection.
    private var statementNamePrefix = Connection.randomStatementNamePrefix()
    /// The number of this session's last statement name.
    private var statementNumber = 0
    /// Counts statements that failed only because their name was missing or taken on the
    /// server (26000/42P05): a retry decision compares it before and after an attempt.
    private var statementNameFailures = 0
    /// Called once, when `.auto` switches this connection to unnamed statements (with the
    /// server's error), so the owner can say so in its log.
    public var onPreparedStatementsDisabled: ((PostgresError) -> Void)?

    /// A prepared statement is found by its text and parameter types (the same text with other
    /// types is another statement). A struct, not a concatenated string: built per statement.
    private struct StatementKey: Hashable {
        let sql: String
        let types: [UInt32]
    }
    /// Set by the notice receiver when the server announced the end of the session.
    private let notices = NoticeState()
    private static let preparedStatementLimit = 512

    /// Connects with a libpq conninfo string (`host=/tmp dbname=app`) or a URL
    /// (`postgres://user@host/db`); an empty string means libpq's defaults and PG* variables.
    public init(_ conninfo: String, applicationName: String = "habit", connectTimeoutSeconds: Int = 10,
                preparedStatements: PreparedStatementMode = .auto) throws {
        preparedStatementMode = preparedStatements
        usesPreparedStatements = preparedStatements != .off
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
            PQfinish(connection)
            throw PostgresError(kind: .connectionFailed, message: "could not connect to PostgreSQL: \(message)")
        }
        handle = connection
        // libpq prints notices (WARNING, NOTICE) to stderr by default; they would interleave
        // unstructured text with the service's structured logs, so they are dropped — except
        // that a FATAL arriving while the connection is idle (the server shutting down or
        // terminating this backend) is delivered as a notice, and marks the session dead.
        PQsetNoticeReceiver(connection, { argument, result in
            guard let argument, let result, let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))) else { return }
            let level = String(cString: severity)
            if level == "FATAL" || level == "PANIC" {
                Unmanaged<NoticeState>.fromOpaque(argument).takeUnretainedValue().sessionEnded = true
            }
        }, Unmanaged.passUnretained(notices).toOpaque())
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
        // PQfinish exactly once: close() sets handle to nil.
        if let handle { PQfinish(handle) }
    }

    /// Closes the connection. Idempotent; later calls on this object throw `.connectionClosed`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        deferredStatements = nil
    }

    public var isClosed: Bool { handle == nil }

    /// False once the socket is known to be broken; `reset()` reconnects.
    public var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK && !notices.sessionEnded
    }

    /// Reads whatever the server sent while the connection sat idle (such as the FATAL of a
    /// terminated backend) and says whether the connection is still usable. Never blocks:
    /// libpq's socket is non-blocking underneath.
    public func isAliveAfterIdle() -> Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK, !notices.sessionEnded,
              PQtransactionStatus(handle) == PQTRANS_IDLE, PQpipelineStatus(handle) == PQ_PIPELINE_OFF else { return false }
        guard PQconsumeInput(handle) == 1 else { return false }
        _ = PQisBusy(handle) // parses what was read: an idle-time FATAL reaches the notice receiver
        return PQstatus(handle) == CONNECTION_OK && !notices.sessionEnded
    }

    /// Reconnects with the original parameters (PQreset), discarding any transaction state.
    public func reset() throws {
        let handle = try liveHandle()
        deferredStatements = nil
        preparedStatements.removeAll() // a new session has none
        // A pooler may still hold the old session's names on some server connection: never reuse them.
        statementNamePrefix = Self.randomStatementNamePrefix()
        statementNumber = 0
        notices.sessionEnded = false
        releaseWatch()
        PQreset(handle) // keeps the notice receiver
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
        releaseWatch()
        var failure: PostgresError?
        // PQexec returns only the last result; the first error stops the script anyway.
        if let result = PQexec(handle, sql) {
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
    /// `prelude` runs right after `BEGIN` (e.g. `SET LOCAL ROLE …`, `set_config(…, true)`);
    /// it is pipelined with the body's first statement.
    ///
    /// In `.auto` mode the body runs a second time (once) when its first attempt failed only
    /// because a prepared statement's name was missing or taken on the server: that attempt
    /// was rolled back, so nothing of it was applied. Keep bodies to database work.
    public func withTransaction<Value>(prelude: [Query] = [], _ body: (Connection) throws -> Value) throws -> Value {
        try retryingAfterNameFailure { try transactionAttempt(prelude: prelude, body) }
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
    }

    /// A transaction of exactly one statement in one round trip: `BEGIN`, `prelude`,
    /// `statement` and `COMMIT` travel in one pipeline. If anything fails, the server skips
    /// the rest (COMMIT included) and the transaction is rolled back before the error is
    /// thrown. Use `withTransaction` when statements depend on earlier results.
    public func transaction(prelude: [Query] = [], statement: Query) throws -> StatementResult {
        let handle = try liveHandle()
        guard !inTransactionBody, transactionStatus == .idle else {
            throw PostgresError(kind: .misuse, message: "transaction(prelude:statement:) called while a transaction is already open")
        }
        return try retryingAfterNameFailure {
            do {
                return Self.statementResult(of: try runPipeline(Self.transactionQueries(prelude, statement), on: handle))
            } catch {
                rollbackQuietly()
                throw error
            }
        }
    }

    /// Runs `attempt`; in `.auto` mode, if it failed only because a statement's name was
    /// missing or taken on the server (a transaction pooler moved this client to another
    /// server connection), runs it once more with unnamed statements. The failed attempt ran
    /// nothing: such an error comes at Parse or Bind, before execution, and stops the rest of
    /// its pipeline; a transaction around it has been rolled back by the time we retry.
    private func retryingAfterNameFailure<Value>(_ attempt: () throws -> Value) throws -> Value {
        let failuresBefore = statementNameFailures
        do {
            return try attempt()
        } catch {
            guard preparedStatementMode == .auto, statementNameFailures > failuresBefore, !inTransactionBody,
                  transactionStatus == .idle, isHealthy else { throw error }
            return try attempt()
        }
    }

    /// A statement failed because its name is missing (26000) or already taken (42P05) on the
    /// server connection. In `.auto` mode the connection switches to unnamed statements for good.
    /// Only errors that name one of this session's statements count: the same codes raised while
    /// a statement executes (a function calling PREPARE or DEALLOCATE) are the statement's own.
    private func noteStatementNameFailure(_ error: PostgresError) {
        guard error.message.contains(statementNamePrefix) else { return }
        statementNameFailures += 1
        guard preparedStatementMode == .auto, usesPreparedStatements else { return }
        usesPreparedStatements = false
        preparedStatements.removeAll()
        onPreparedStatementsDisabled?(error)
    }

    /// BEGIN, COMMIT and ROLLBACK are always sent unnamed: parsing them costs nothing, and a
    /// transaction must never start or end on a name the server may have lost (a lost BEGIN
    /// would leave the body to run outside any transaction).
    private static func isTransactionControl(_ query: Query) -> Bool {
        query.bindings.count == 0 && (query.sql == "BEGIN" || query.sql == "COMMIT" || query.sql == "ROLLBACK")
    }

    private static func isStatementNameError(_ error: PostgresError) -> Bool {
        error.sqlState == .invalidSQLStatementName || error.sqlState == .duplicatePreparedStatement
    }

    private static func randomStatementNamePrefix() -> String {
        "habit_" + String(UInt64.random(in: 0...UInt64.max), radix: 36) + "_"
    }

    private static func transactionQueries(_ prelude: [Query], _ statement: Query) -> [Query] {
        ["BEGIN"] + prelude + [statement, "COMMIT"]
    }

    /// The statement's result among BEGIN, prelude, statement, COMMIT.
    private static func statementResult(of results: [ResultSet]) -> StatementResult {
        let result = results[results.count - 2]
        return StatementResult(rows: (0..<result.rowCount).map { Row(result: result, index: $0) }, affectedRows: result.affectedRows)
    }

    /// Independent one-statement transactions, each exactly as `transaction(prelude:statement:)`
    /// runs it, sent together in one pipeline with a Sync after each: one round trip for all
    /// of them, so a busy connection serves several requests per wake-up of the server and of
    /// this thread. Returns one result per transaction, in order.
    ///
    /// A transaction that fails inside its block leaves the session's block aborted after its
    /// Sync, so every later one fails at its BEGIN without running (25P02). Those are run again
    /// after a ROLLBACK: each result is what that transaction alone would have produced. When the
    /// connection is lost, every transaction whose results did not all arrive is reported lost
    /// (outcome unknown, as with `transaction(prelude:statement:)`), even if the server committed
    /// it: the worker uses this for reads only.
    public func transactions(_ list: [(prelude: [Query], statement: Query)]) throws -> [Result<StatementResult, PostgresError>] {
        let handle = try liveHandle()
        guard !inTransactionBody, transactionStatus == .idle else {
            throw PostgresError(kind: .misuse, message: "transactions(_:) called while a transaction is already open")
        }
        guard !list.isEmpty else { return [] }
        let nameFailuresBefore = statementNameFailures
        let outcomes = runPipeline(segments: list.map { Self.transactionQueries($0.prelude, $0.statement) }, on: handle)
        if transactionStatus != .idle { rollbackQuietly() }
        // After a fallback to unnamed statements (.auto), the ones that failed on a name ran
        // nothing and run again with the ones that never ran.
        let fellBack = preparedStatementMode == .auto && statementNameFailures > nameFailuresBefore
        var results: [Result<StatementResult, PostgresError>] = []
        var notRun: [Int] = []
        for (index, outcome) in outcomes.enumerated() {
            switch outcome {
            case .success(let sets):
                results.append(.success(Self.statementResult(of: sets)))
            case .failure(let error):
                results.append(.failure(error))
                if error.sqlState == .inFailedSQLTransaction || (fellBack && Self.isStatementNameError(error)) { notRun.append(index) }
            }
        }
        guard !notRun.isEmpty else { return results }
        // Never loops: after the ROLLBACK the first one to run again starts from an idle session
        // (and after a fallback, none can fail on a name again).
        if notRun.count < list.count || fellBack, isHealthy, transactionStatus == .idle {
            for (index, result) in zip(notRun, try transactions(notRun.map { list[$0] })) { results[index] = result }
        } else {
            // The session could not be brought back: they never ran, and are lost like the session.
            notices.sessionEnded = true
            for index in notRun { results[index] = .failure(connectionFailure(sql: list[index].statement.sql)) }
        }
        return results
    }

    private func rollbackQuietly() {
        deferredStatements = nil
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return }
        let status = PQtransactionStatus(handle)
        guard status == PQTRANS_INTRANS || status == PQTRANS_INERROR else { return }
        releaseWatch()
        if let result = PQexec(handle, "ROLLBACK") { PQclear(result) }
    }

    // MARK: - Streaming

    /// Streams the rows of `query` one at a time (libpq single-row mode), so memory stays flat
    /// however many rows there are. If `body` throws, the query is cancelled on the server.
    public func stream(_ query: Query, _ body: (Row) throws -> Void) throws {
        try flushDeferredStatements()
        let handle = try liveHandle()
        releaseWatch()
        try send(query, on: handle)
        guard PQsetSingleRowMode(handle) == 1 else {
            drainResults(handle)
            throw PostgresError(kind: .client, message: "could not enter single-row mode", sql: query.sql)
        }
        var failure: PostgresError?
        var bodyError: Error?
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            if status == PGRES_SINGLE_TUPLE, bodyError == nil, failure == nil {
                let set = ResultSet(handle: result)
                do { try body(Row(result: set, index: 0)) } catch {
                    bodyError = error
                    cancelRunningStatement(handle)
                }
            } else if status == PGRES_SINGLE_TUPLE || status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                PQclear(result)
            } else {
                if failure == nil, bodyError == nil { failure = PostgresError.fromResult(result, connection: handle, sql: query.sql) }
                PQclear(result)
            }
        }
        if let bodyError { throw bodyError }
        if let failure { throw failure }
        if PQstatus(handle) != CONNECTION_OK { throw connectionFailure(sql: query.sql) }
    }

    /// Runs `COPY (…) TO STDOUT` and hands each chunk (a row, for text/CSV formats) to `body`
    /// as libpq receives it. Returns the number of bytes received.
    @discardableResult
    public func copyOut(_ query: Query, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        try flushDeferredStatements()
        let handle = try liveHandle()
        releaseWatch()
        try send(query, on: handle)
        guard let first = PQgetResult(handle) else { throw connectionFailure(sql: query.sql) }
        guard PQresultStatus(first) == PGRES_COPY_OUT else {
            let error = PQresultStatus(first) == PGRES_FATAL_ERROR
                ? PostgresError.fromResult(first, connection: handle, sql: query.sql)
                : PostgresError(kind: .misuse, message: "copyOut needs a COPY … TO STDOUT statement", sql: query.sql)
            PQclear(first)
            drainResults(handle)
            throw error
        }
        PQclear(first)
        var total = 0
        var bodyError: Error?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 0)
            if length > 0, let buffer {
                if bodyError == nil {
                    do { try body(UnsafeRawBufferPointer(start: buffer, count: Int(length))) } catch {
                        bodyError = error
                        cancelRunningStatement(handle)
                    }
                }
                total += Int(length)
                PQfreemem(buffer)
            } else {
                break // -1: COPY finished; -2: error, reported by the final result below
            }
        }
        var failure: PostgresError?
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) == PGRES_FATAL_ERROR, failure == nil {
                failure = PostgresError.fromResult(result, connection: handle, sql: query.sql)
            }
            PQclear(result)
        }
        if let bodyError { throw bodyError }
        if let failure { throw failure }
        if PQstatus(handle) != CONNECTION_OK { throw connectionFailure(sql: query.sql) }
        return total
    }

    // MARK: - Internals

    private func liveHandle() throws -> OpaquePointer {
        guard let handle else {
            throw PostgresError(kind: .connectionClosed, message: "the connection was closed")
        }
        return handle
    }

    /// The error for a call that returned no result: a broken connection or a client failure.
    ///
    /// libpq may still report CONNECTION_OK after a failed send to a server that vanished
    /// (it notices on the next read), so any such failure counts as a lost connection and
    /// the session is marked ended: the caller must reconnect, never reuse it.
    private func connectionFailure(sql: String?) -> PostgresError {
        notices.sessionEnded = true
        return PostgresError(
            kind: .connectionLost,
            message: PostgresError.clientMessage(result: nil, connection: handle),
            sql: sql
        )
    }

    /// Executes one statement, pipelining any deferred transaction statements before it.
    /// Outside a transaction, a statement that failed on its name runs again unnamed (`.auto`).
    @discardableResult
    private func run(_ query: Query) throws -> ResultSet {
        try retryingAfterNameFailure { try runOnce(query) }
    }

    private func runOnce(_ query: Query) throws -> ResultSet {
        let handle = try liveHandle()
        if let deferred = deferredStatements {
            deferredStatements = nil
            return try runPipeline(deferred + [query], on: handle).last!
        }
        releaseWatch() // PQexecPrepared/PQexecParams wait inside libpq
        if usesPreparedStatements, !Self.isTransactionControl(query) {
            guard let name = preparedStatements[Self.cacheKey(query)] else {
                // Prepare and execute in one round trip.
                return try runPipeline([query], on: handle)[0]
            }
            let result = withParameters(query.bindings) { count, _, values, lengths, formats in
                PQexecPrepared(handle, name, count, values, lengths, formats, 1)
            }
            do {
                return try check(result, on: handle, sql: query.sql)
            } catch let error as PostgresError where Self.isStatementNameError(error) {
                noteStatementNameFailure(error)
                throw error
            }
        }
        let result = withParameters(query.bindings) { count, types, values, lengths, formats in
            PQexecParams(handle, query.sql, count, types, values, lengths, formats, 1)
        }
        return try check(result, on: handle, sql: query.sql)
    }

    private static func cacheKey(_ query: Query) -> StatementKey {
        StatementKey(sql: query.sql, types: query.bindings.types)
    }

    private func flushDeferredStatements() throws {
        guard let deferred = deferredStatements, let handle else { return }
        deferredStatements = nil
        _ = try runPipeline(deferred, on: handle)
    }

    private func check(_ result: OpaquePointer?, on handle: OpaquePointer, sql: String) throws -> ResultSet {
        guard let result else { throw connectionFailure(sql: sql) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return ResultSet(handle: result)
        case PGRES_COPY_OUT, PGRES_COPY_IN, PGRES_COPY_BOTH:
            PQclear(result)
            // Leave the connection usable: end the copy by draining/cancelling it.
            cancelRunningStatement(handle)
            drainResults(handle)
            throw PostgresError(kind: .misuse, message: "COPY statements need copyOut", sql: sql)
        default:
            let error = PostgresError.fromResult(result, connection: handle, sql: sql)
            PQclear(result)
            throw error
        }
    }

    private func send(_ query: Query, on handle: OpaquePointer) throws {
        let sent = withParameters(query.bindings) { count, types, values, lengths, formats in
            PQsendQueryParams(handle, query.sql, count, types, values, lengths, formats, 1)
        }
        guard sent == 1 else { throw connectionFailure(sql: query.sql) }
    }

    /// One message group of a pipeline: preparing a statement, or executing one.
    private enum PipelineStep {
        case prepare(name: String, key: StatementKey, query: Query)
        case execute(query: Query, preparedName: String?)

        var isNamed: Bool {
            if case .execute(_, nil) = self { return false }
            return true
        }
    }

    /// The steps of each segment; a statement is prepared once even if several segments use it.
    private func pipelineSteps(for segments: [[Query]]) -> [[PipelineStep]] {
        var preparing: [StatementKey: String] = [:]
        return segments.map { queries in
            var steps: [PipelineStep] = []
            for query in queries {
                guard usesPreparedStatements, !Self.isTransactionControl(query) else {
                    steps.append(.execute(query: query, preparedName: nil))
                    continue
                }
                let key = Self.cacheKey(query)
                if let name = preparedStatements[key] ?? preparing[key] {
                    steps.append(.execute(query: query, preparedName: name))
                } else if preparedStatements.count + preparing.count < Self.preparedStatementLimit {
                    // Never reused within a session, even when a Parse was skipped: a number the
                    // server may already hold would collide (42P05) or, behind a pooler, name
                    // another SQL text.
                    statementNumber += 1
                    let name = statementNamePrefix + String(statementNumber)
                    preparing[key] = name
                    steps.append(.prepare(name: name, key: key, query: query))
                    steps.append(.execute(query: query, preparedName: name))
                } else {
                    steps.append(.execute(query: query, preparedName: nil))
                }
            }
            return steps
        }
    }

    private func send(_ step: PipelineStep, on handle: OpaquePointer) throws {
        switch step {
        case .prepare(let name, _, let query):
            let sent = withParameters(query.bindings) { count, types, _, _, _ in
                PQsendPrepare(handle, name, query.sql, count, types)
            }
            guard sent == 1 else { throw connectionFailure(sql: query.sql) }
        case .execute(let query, let name?):
            let sent = withParameters(query.bindings) { count, _, values, lengths, formats in
                PQsendQueryPrepared(handle, name, count, values, lengths, formats, 1)
            }
            guard sent == 1 else { throw connectionFailure(sql: query.sql) }
        case .execute(let query, nil):
            try send(query, on: handle)
        }
    }

    // MARK: - Watching other input while waiting

    private struct WaitWatch {
        let descriptors: [Int32]
        let onReadable: () -> Void
    }

    private var waitWatch: WaitWatch?

    /// Runs `body`. While it waits for the server in a pipeline (the path of
    /// `transaction(prelude:statement:)` and of a transaction's first statement), the
    /// `descriptors` are watched too: the first time one is readable or hung up, `onReadable`
    /// runs, once. Waits that cannot watch (libpq's synchronous calls: statements outside a
    /// pipeline, COPY, scripts, reconnecting; every wait of a TLS or GSSAPI connection, whose
    /// decrypted bytes poll(2) cannot see) run `onReadable` before they start. For a thread
    /// that must also notice input elsewhere while it waits (the worker's reading thread runs
    /// requests itself and hands reading over only when more input arrives).
    public func watching<Value>(_ descriptors: [Int32], onReadable: @escaping () -> Void,
                                _ body: () throws -> Value) rethrows -> Value {
        waitWatch = WaitWatch(descriptors: descriptors, onReadable: onReadable)
        defer { waitWatch = nil }
        return try body()
    }

    /// A wait that cannot watch is about to start: the watch fires now.
    private func releaseWatch() {
        guard let watch = waitWatch else { return }
        waitWatch = nil
        watch.onReadable()
    }

    /// PQgetResult, but while a watch is set, wait for the server with poll(2) on its socket and
    /// the watched descriptors. Once the watch fired (or on a socket error, which PQgetResult
    /// then reports) it is libpq's ordinary blocking wait.
    private func nextResult(_ handle: OpaquePointer) -> OpaquePointer? {
        if waitWatch != nil, PQisBusy(handle) == 1, PQsslInUse(handle) != 0 || PQgetgssctx(handle) != nil {
            // An encrypted connection may hold decrypted bytes in OpenSSL/GSSAPI while its socket
            // is empty: polling the socket could then sleep forever. Only libpq's wait knows.
            releaseWatch()
        }
        if let watch = waitWatch, PQisBusy(handle) == 1 {
            let socket = PQsocket(handle)
            var descriptors = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0)]
            for descriptor in watch.descriptors { descriptors.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
            while socket >= 0, waitWatch != nil, PQisBusy(handle) == 1 {
                for index in descriptors.indices { descriptors[index].revents = 0 }
                if poll(&descriptors, nfds_t(descriptors.count), -1) < 0 {
                    if errno == EINTR { continue }
                    break
                }
                if descriptors.dropFirst().contains(where: { $0.revents != 0 }) { break }
                if descriptors[0].revents != 0, PQconsumeInput(handle) != 1 { break }
            }
            if PQisBusy(handle) == 1 { releaseWatch() } // about to block in libpq
        }
        return PQgetResult(handle)
    }

    /// Sends `queries` in one pipeline ending in a single Sync (one round trip), preparing
    /// the ones not yet prepared on the way, and returns their results in order. If one
    /// fails, the server skips the rest up to the Sync and the first error is thrown once
    /// every result has been consumed.
    private func runPipeline(_ queries: [Query], on handle: OpaquePointer) throws -> [ResultSet] {
        try runPipeline(segments: [queries], on: handle)[0].get()
    }

    /// `runPipeline` for several segments, each followed by its own Sync (so a failure skips
    /// only the rest of its segment), sent together; one result per segment.
    private func runPipeline(segments: [[Query]], on handle: OpaquePointer) -> [Result<[ResultSet], PostgresError>] {
        let stepsPerSegment = pipelineSteps(for: segments)
        guard PQenterPipelineMode(handle) == 1 else {
            let failure = connectionFailure(sql: segments.first?.first?.sql)
            return segments.map { _ in .failure(failure) }
        }
        defer {
            // Fails when results are still pending: then nobody knows where the session is.
            if PQexitPipelineMode(handle) != 1 { notices.sessionEnded = true }
        }
        var sendFailure: PostgresError?
        var syncsSent = 0
        for steps in stepsPerSegment where sendFailure == nil {
            for step in steps where sendFailure == nil {
                do { try send(step, on: handle) } catch let error as PostgresError { sendFailure = error } catch {}
            }
            if sendFailure == nil {
                if PQpipelineSync(handle) == 1 { syncsSent += 1 } else { sendFailure = connectionFailure(sql: nil) }
            }
        }
        if let sendFailure {
            // Consume whatever the server answers so the connection leaves pipeline mode cleanly.
            if PQstatus(handle) == CONNECTION_OK {
                _ = PQpipelineSync(handle)
                for _ in 0...syncsSent { drainPipeline(handle) }
            }
            return segments.map { _ in .failure(sendFailure) }
        }
        var outcomes: [Result<[ResultSet], PostgresError>] = []
        outcomes.reserveCapacity(segments.count)
        for (queries, steps) in zip(segments, stepsPerSegment) {
            guard PQstatus(handle) == CONNECTION_OK, !notices.sessionEnded else {
                outcomes.append(.failure(connectionFailure(sql: queries.last?.sql)))
                continue
            }
            var results: [ResultSet] = []
            var firstError: PostgresError?
            for step in steps {
                let sql: String
                switch step {
                case .prepare(_, _, let query), .execute(let query, _): sql = query.sql
                }
                var kept: ResultSet?
                while let result = nextResult(handle) {
                    switch PQresultStatus(result) {
                    case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                        if case .prepare(let name, let key, _) = step {
                            // Only once the server has it, and not after a fallback to unnamed
                            // statements earlier in this pipeline.
                            if usesPreparedStatements { preparedStatements[key] = name }
                            PQclear(result)
                        } else {
                            kept = ResultSet(handle: result)
                        }
                    case PGRES_PIPELINE_ABORTED:
                        PQclear(result) // skipped because an earlier statement failed
                    case PGRES_COPY_OUT, PGRES_COPY_IN, PGRES_COPY_BOTH:
                        // libpq keeps returning the COPY state until the copy ends: end it here
                        // (libpq's synchronous calls: they cannot watch).
                        releaseWatch()
                        let status = PQresultStatus(result)
                        PQclear(result)
                        if firstError == nil {
                            firstError = PostgresError(kind: .misuse, message: "COPY statements need copyOut", sql: sql)
                        }
                        if status == PGRES_COPY_OUT {
                            var buffer: UnsafeMutablePointer<CChar>?
                            while PQgetCopyData(handle, &buffer, 0) > 0 { PQfreemem(buffer) }
                        } else {
                            _ = PQputCopyEnd(handle, "COPY is not supported here")
                        }
                    default:
                        let error = PostgresError.fromResult(result, connection: handle, sql: sql)
                        if step.isNamed, Self.isStatementNameError(error) { noteStatementNameFailure(error) }
                        if firstError == nil { firstError = error }
                        PQclear(result)
                    }
                }
                if case .execute = step, let kept { results.append(kept) }
                if PQstatus(handle) != CONNECTION_OK { break }
            }
            // Everything up to the Sync's own result; without it the session is in an unknown
            // state (the server may have gone away after the last statement).
            if !awaitPipelineSync(handle) {
                notices.sessionEnded = true
                if firstError == nil { firstError = connectionFailure(sql: queries.last?.sql) }
            }
            if let firstError {
                outcomes.append(.failure(firstError))
            } else if results.count != queries.count {
                outcomes.append(.failure(connectionFailure(sql: queries.last?.sql)))
            } else {
                outcomes.append(.success(results))
            }
        }
        return outcomes
    }

    /// Reads results up to and including the Sync's; false if the connection ended first.
    private func awaitPipelineSync(_ handle: OpaquePointer) -> Bool {
        var emptyReads = 0
        while PQstatus(handle) == CONNECTION_OK {
            guard let result = nextResult(handle) else {
                emptyReads += 1
                if emptyReads > 1 { return false } // two NULLs in a row: nothing more is coming
                continue
            }
            emptyReads = 0
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { return true }
        }
        return false
    }

    private func drainPipeline(_ handle: OpaquePointer) {
        // Read until the Sync result; bounded because a broken connection yields no results.
        var nulls = 0
        while nulls < 2, PQstatus(handle) == CONNECTION_OK {
            guard let result = nextResult(handle) else { nulls += 1; continue }
            nulls = 0
            let isSync = PQresultStatus(result) == PGRES_PIPELINE_SYNC
            PQclear(result)
            if isSync { break }
        }
    }

    private func drainResults(_ handle: OpaquePointer) {
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_COPY_OUT {
                // Finish a COPY the caller did not want: discard its data.
                var buffer: UnsafeMutablePointer<CChar>?
                while PQgetCopyData(handle, &buffer, 0) > 0 { PQfreemem(buffer) }
            }
        }
    }

    /// Asks the server to cancel the statement in progress (a separate connection, per libpq).
    private func cancelRunningStatement(_ handle: OpaquePointer) {
        guard let cancel = PQgetCancel(handle) else { return }
        var errorBuffer = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancel, &errorBuffer, Int32(errorBuffer.count))
        PQfreeCancel(cancel)
    }
}

@available(*, unavailable, message: "A PGconn must not be shared between threads")
extension Connection: Sendable {}

/// What the notice receiver learned; owned by the Connection, used on its thread only.
private final class NoticeState {
    var sessionEnded = false
}

/// Lays the parameters out in one buffer and passes libpq the arrays it wants. Every
/// parameter is binary (format 1) with its type OID.
private func withParameters<Result>(
    _ bindings: Query.Bindings,
    _ body: (Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> Result
) -> Result {
    let count = bindings.count
    if count == 0 { return body(0, nil, nil, nil, nil) }
    let total = bindings.values.reduce(0) { $0 + ($1?.count ?? 0) }
    let storage = UnsafeMutablePointer<CChar>.allocate(capacity: max(total, 1))
    defer { storage.deallocate() }
    var pointers: [UnsafePointer<CChar>?] = []
    var lengths: [Int32] = []
    pointers.reserveCapacity(count)
    lengths.reserveCapacity(count)
    var offset = 0
    for value in bindings.values {
        if let value {
            value.withUnsafeBytes { bytes in
                UnsafeMutableRawPointer(storage + offset).copyMemory(from: bytes.baseAddress ?? UnsafeRawPointer(storage), byteCount: bytes.count)
            }
            // A zero-length value still needs a non-NULL pointer: NULL would mean SQL NULL.
            pointers.append(UnsafePointer(storage + offset))
            lengths.append(Int32(value.count))
            offset += value.count
        } else {
            pointers.append(nil)
            lengths.append(0)
        }
    }
    let formats = [Int32](repeating: 1, count: count)
    return bindings.types.withUnsafeBufferPointer { types in
        pointers.withUnsafeBufferPointer { values in
            lengths.withUnsafeBufferPointer { lengths in
                formats.withUnsafeBufferPointer { formats in
                    body(Int32(count), types.baseAddress, values.baseAddress, lengths.baseAddress, formats.baseAddress)
                }
            }
        }
    }
}

private func withCStringArray<Result>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result) -> Result {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// How a connection sends its statements.
public enum PreparedStatementMode: String, Sendable, CaseIterable {
    /// Named statements, each prepared once per connection: the fastest, for direct connections
    /// and poolers that keep prepared statements (pgbouncer ≥ 1.21 with max_prepared_statements).
    case on
    /// Unnamed statements only, parsed and planned on every execution.
    case off
    /// `on` until the server reports a statement name missing (26000) or taken (42P05), as a
    /// transaction pooler that does not track prepared statements does; then unnamed for good,
    /// and the failed work runs again (it had run nothing).
    case auto
}

extension PreparedStatementMode {
    /// What to log when `.auto` falls back: why, and how to silence it.
    public static func fallbackWarning(_ error: PostgresError) -> String {
        "the server lost or mixed up this connection's prepared statements (\(error.sqlState?.rawValue ?? "?"): a transaction pooler such as pgbouncer < 1.21); this connection now sends unnamed statements. Set --prepared-statements off (HABIT_PREPARED_STATEMENTS=off) behind such a pooler to silence this, or on with a pooler that keeps prepared statements."
    }
}
