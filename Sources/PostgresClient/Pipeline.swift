import CLibPQ

/// One round trip in libpq's pipeline mode: statements grouped in segments, each segment
/// followed by a Sync, all sent before any result is read; then the results, read in order by
/// the one loop of this module (`readResults`).
///
/// A segment is a transaction of its own. PostgreSQL's protocol documentation ("Extended
/// Query"): a Sync "causes the backend to close the current transaction if it's not inside a
/// BEGIN/COMMIT transaction block ('close' meaning to commit if no error, or roll back if
/// error)", and after an error the backend "reads and discards messages until a Sync is
/// reached". Without BEGIN, everything up to a Sync is one implicit transaction: it commits
/// at its Sync, or rolls back as a whole, and a failing segment leaves the next one untouched.
struct Pipeline {
    let handle: OpaquePointer
    let statements: PreparedStatementCache
    let session: SessionState
    /// How this thread waits for the results; nil: libpq's own blocking wait.
    let wait: WaitStrategy?

    /// One message group: preparing a statement, or executing one (by name, or unnamed).
    enum Step {
        case prepare(Query, name: String)
        case execute(Query, name: String?)

        var query: Query {
            switch self {
            case .prepare(let query, _), .execute(let query, _): query
            }
        }

        var isNamed: Bool {
            if case .execute(_, nil) = self { return false }
            return true
        }
    }

    /// Sends `segments`, each followed by its own Sync, preparing on the way the statements not
    /// yet prepared, and returns one outcome per segment: the results of its statements in
    /// order, or its first error (thrown once all its results were read). A segment whose
    /// results did not all arrive, up to its Sync, is reported lost: whether the server
    /// committed it is unknown.
    func run(_ segments: [[Query]]) -> [Result<[ResultSet], PostgresError>] {
        let stepsPerSegment = statements.steps(for: segments)
        // libpq: PQenterPipelineMode "returns 0 and has no effect if the connection is not
        // currently idle".
        guard PQenterPipelineMode(handle) == 1 else {
            let failure = session.lost(handle, sql: segments.first?.first?.sql)
            return segments.map { _ in .failure(failure) }
        }
        defer {
            // libpq: PQexitPipelineMode fails while results are pending; then nobody knows where
            // the session is.
            if PQexitPipelineMode(handle) != 1 { session.ended = true }
        }
        var sendFailure: PostgresError?
        var syncsSent = 0
        for steps in stepsPerSegment where sendFailure == nil {
            for step in steps where sendFailure == nil {
                if !send(step) { sendFailure = session.lost(handle, sql: step.query.sql) }
            }
            if sendFailure == nil {
                // libpq: PQpipelineSync "marks a synchronization point in a pipeline by sending a
                // sync message and flushing the send buffer".
                if PQpipelineSync(handle) == 1 { syncsSent += 1 } else { sendFailure = session.lost(handle, sql: nil) }
            }
        }
        if let sendFailure {
            // Read whatever the server answers, so the connection leaves pipeline mode cleanly.
            if PQstatus(handle) == CONNECTION_OK, PQpipelineSync(handle) == 1 {
                for _ in 0...syncsSent {
                    guard readResults(of: handle, through: .sync, waitingWith: wait, { result, _ in PQclear(result) }) else { break }
                }
            }
            return segments.map { _ in .failure(sendFailure) }
        }
        return zip(segments, stepsPerSegment).map { queries, steps in
            guard PQstatus(handle) == CONNECTION_OK, !session.ended else {
                return .failure(session.lost(handle, sql: queries.last?.sql))
            }
            return readSegment(queries, steps)
        }
    }

    /// The results of one segment, through its Sync.
    private func readSegment(_ queries: [Query], _ steps: [Step]) -> Result<[ResultSet], PostgresError> {
        var results = [ResultSet?](repeating: nil, count: steps.count)
        var firstError: PostgresError?
        let unconfirmedBefore = session.unconfirmedCommits
        let synced = readResults(of: handle, through: .sync, waitingWith: wait) { result, index in
            let step = index < steps.count ? steps[index] : nil
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
                switch step {
                case .prepare(let query, let name):
                    statements.confirm(name, for: PreparedStatementCache.Key(query))
                    PQclear(result)
                case .execute:
                    results[index] = ResultSet(handle: result)
                case nil:
                    PQclear(result)
                }
            case PGRES_PIPELINE_ABORTED:
                PQclear(result) // skipped because an earlier statement of the segment failed
            case PGRES_COPY_OUT, PGRES_COPY_IN, PGRES_COPY_BOTH:
                PQclear(result) // readResults ends the COPY
                if firstError == nil {
                    firstError = PostgresError(kind: .misuse, message: "COPY statements need copyOut", sql: step?.query.sql)
                }
            default:
                // A statement's error, or (arriving after the last statement's results, so with
                // no step) the implicit transaction's own, raised by its commit at the Sync (a
                // deferred constraint). Either way the segment failed and nothing of it committed.
                let error = PostgresError.fromResult(result, connection: handle, sql: (step?.query ?? queries.last)?.sql)
                if let step, step.isNamed, PreparedStatementCache.isNameError(error) { statements.noteNameFailure(error) }
                if firstError == nil { firstError = error }
                PQclear(result)
            }
        }
        if !synced {
            // Without the Sync's result the session is in an unknown state: after a success the
            // server may have gone away before or after committing, so the segment is lost. A
            // server error stands: such a segment was rolled back whatever happened next.
            session.ended = true
            if firstError == nil { firstError = session.lost(handle, sql: queries.last?.sql) }
        }
        if firstError == nil, session.unconfirmedCommits != unconfirmedBefore {
            // The implicit transaction committed at the Sync, but its wait for the synchronous
            // standby was cancelled: applied on this server only.
            firstError = PostgresError.commitUnconfirmed(sql: queries.last?.sql)
        }
        if let firstError { return .failure(firstError) }
        var executed: [ResultSet] = []
        executed.reserveCapacity(queries.count)
        for (step, result) in zip(steps, results) {
            guard case .execute = step else { continue }
            guard let result else { return .failure(session.lost(handle, sql: step.query.sql)) }
            executed.append(result)
        }
        return .success(executed)
    }

    /// Queues one step (libpq sends it with the next flush, at the latest the Sync's).
    private func send(_ step: Step) -> Bool {
        switch step {
        case .prepare(let query, let name):
            withParameters(query.bindings) { count, types, _, _, _ in
                PQsendPrepare(handle, name, query.sql, count, types)
            } == 1
        case .execute(let query, let name?):
            withParameters(query.bindings) { count, _, values, lengths, formats in
                PQsendQueryPrepared(handle, name, count, values, lengths, formats, 1)
            } == 1
        case .execute(let query, nil):
            sendUnnamed(query, on: handle)
        }
    }
}

/// Where `readResults` stops.
enum ResultsEnd {
    /// In pipeline mode: at the next Sync's result (PGRES_PIPELINE_SYNC), which it reads.
    case sync
    /// Outside a pipeline: at the end of the command in progress (libpq's NULL).
    case command
}

/// The one loop that reads a connection's results, through `end`. `each` receives every
/// result other than the Sync's, with the index of the pipeline step it belongs to, and owns
/// it (clears it or keeps it). A COPY nobody asked for is ended here so the connection stays
/// usable. Returns false if the connection ended before `end`.
///
/// libpq, pipeline mode: "the application calls PQgetResult repeatedly and handles each result
/// until PQgetResult returns null", then the next query's results follow; PGRES_PIPELINE_SYNC
/// "is reported exactly once for each PQpipelineSync at the corresponding point in the
/// pipeline". An error after the last step's NULL belongs to the Sync itself (a commit that
/// failed); it is handed to `each` with an index past the last step.
@discardableResult
func readResults(of handle: OpaquePointer, through end: ResultsEnd, waitingWith wait: WaitStrategy?,
                 _ each: (_ result: OpaquePointer, _ step: Int) -> Void) -> Bool {
    var step = 0
    var nullsInARow = 0
    while true {
        guard let result = nextResult(of: handle, waitingWith: wait) else {
            if end == .command { return PQstatus(handle) == CONNECTION_OK }
            // Two NULLs in a row, or a NULL on a broken connection: nothing more is coming.
            nullsInARow += 1
            if nullsInARow > 1 || PQstatus(handle) != CONNECTION_OK { return false }
            step += 1
            continue
        }
        nullsInARow = 0
        let status = PQresultStatus(result)
        if status == PGRES_PIPELINE_SYNC {
            PQclear(result)
            if end == .sync { return true }
            continue
        }
        each(result, step)
        switch status {
        case PGRES_COPY_OUT:
            // libpq keeps returning the COPY state until the copy ends: discard its data.
            // PQgetCopyData with async = 0 "will block until data is available", inside libpq.
            wait?.willBlockInLibpq()
            var buffer: UnsafeMutablePointer<CChar>?
            while PQgetCopyData(handle, &buffer, 0) > 0 { PQfreemem(buffer) }
        case PGRES_COPY_IN, PGRES_COPY_BOTH:
            // libpq: with an error message, PQputCopyEnd makes the COPY fail; its final result follows.
            _ = PQputCopyEnd(handle, "COPY is not supported here")
        default:
            break
        }
    }
}
