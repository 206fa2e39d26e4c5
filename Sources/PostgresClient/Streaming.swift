import CLibPQ

/// Rows one at a time and COPY output: libpq's synchronous reading, so no wait strategy takes
/// part (each call says `willBlockInLibpq` first).
extension Connection {
    /// Streams the rows of `query` one at a time (libpq single-row mode), so memory stays flat
    /// however many rows there are. If `body` throws, the query is cancelled on the server.
    public func stream(_ query: Query, _ body: (Row) throws -> Void) throws {
        try flushDeferredStatements()
        let handle = try liveHandle()
        waitStrategy?.willBlockInLibpq()
        guard sendUnnamed(query, on: handle) else { throw connectionFailure(sql: query.sql) }
        // libpq: PQsetSingleRowMode "can only be called immediately after PQsendQuery or one of
        // its sibling functions, before any other operation on the connection".
        guard PQsetSingleRowMode(handle) == 1 else {
            readResults(of: handle, through: .command, waitingWith: nil) { result, _ in PQclear(result) }
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
        waitStrategy?.willBlockInLibpq()
        guard sendUnnamed(query, on: handle) else { throw connectionFailure(sql: query.sql) }
        guard let first = PQgetResult(handle) else { throw connectionFailure(sql: query.sql) }
        guard PQresultStatus(first) == PGRES_COPY_OUT else {
            let error = PQresultStatus(first) == PGRES_FATAL_ERROR
                ? PostgresError.fromResult(first, connection: handle, sql: query.sql)
                : PostgresError(kind: .misuse, message: "copyOut needs a COPY … TO STDOUT statement", sql: query.sql)
            PQclear(first)
            readResults(of: handle, through: .command, waitingWith: nil) { result, _ in PQclear(result) }
            throw error
        }
        PQclear(first)
        var total = 0
        var bodyError: Error?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            // libpq: with async = 0 PQgetCopyData blocks until a row arrives; "a result of -1
            // indicates that the COPY is done. A result of -2 indicates that an error occurred".
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

    /// Asks the server to cancel the statement in progress. PQcancel sends the request over a
    /// connection of its own, so the PGconn is not touched; the PGcancel object from
    /// PQgetCancel is freed with PQfreeCancel.
    func cancelRunningStatement(_ handle: OpaquePointer) {
        guard let cancel = PQgetCancel(handle) else { return }
        var errorBuffer = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancel, &errorBuffer, Int32(errorBuffer.count))
        PQfreeCancel(cancel)
    }
}
