import Foundation
import HabitStore
import JSONRPC
import Logging
import PostgresClient

/// Runs jobs on the pool's connections and answers them: one job alone, or queued
/// single-statement jobs in one round trip. Logs each request as the log level asks, and each
/// failure as its kind deserves, with the request's id, method and trace.
///
/// Deadlines (`deadline_ms`): a job whose deadline passed before it starts (queued behind other
/// requests or its user's earlier ones, waiting for a place or a connection) is not run and
/// answers `deadline_exceeded`. A job that starts runs with `statement_timeout` = min(time left,
/// `--statement-timeout-ms`) in its transaction's settings statement, which costs no extra
/// round trip; a cancellation (57014) once its deadline passed answers `deadline_exceeded`, not
/// `timeout`. Each statement of a several-statement transaction gets the time left when the
/// transaction began.
final class JobRunner: @unchecked Sendable {
    private let pool: ConnectionPool
    private let transport: WorkerTransport
    private let logger: Logger
    /// `--statement-timeout-ms` (0: none); a job's deadline can only shorten it.
    private let statementTimeoutMilliseconds: Int

    init(pool: ConnectionPool, transport: WorkerTransport, statementTimeoutMilliseconds: Int, logger: Logger) {
        self.pool = pool
        self.transport = transport
        self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
        self.logger = logger
    }

    /// Connects `slot` if it is not yet; a failure is retried by the next request.
    func connect(_ slot: ConnectionSlot) {
        _ = try? pool.context(slot)
    }

    /// Runs `job` on `slot` and answers it. `handOver`, when this thread still leads: called
    /// once input arrives while the job waits for PostgreSQL, before a wait that cannot watch
    /// stdin (connecting, libpq's synchronous calls), or before writing the answer might block.
    func run(_ job: Job, on slot: ConnectionSlot, handOver: LeadHandOver?) {
        finish(job, pool.busy(slot) { execute(job, on: slot, handOver: handOver) }, handOver: handOver)
    }

    /// Runs queued single-statement jobs in one round trip on `slot` and answers each.
    func runTogether(_ jobs: [Job], on slot: ConnectionSlot) {
        for (job, result) in zip(jobs, pool.busy(slot) { executeTogether(jobs, on: slot) }) { finish(job, result, handOver: nil) }
    }

    private func finish(_ job: Job, _ result: Result<JSONValue, RPCError>, handOver: LeadHandOver?) {
        if logger.logLevel <= .debug { logRequest(job, result) } // skip the formatting otherwise
        job.complete(result, handOver)
    }

    private func execute(_ job: Job, on slot: ConnectionSlot, handOver: LeadHandOver?) -> Result<JSONValue, RPCError> {
        if let unheard = unheardFailure(job) { return .failure(unheard) }
        if statementTimeout(for: job) == nil { return .failure(DomainErrorCode.deadlineExceeded.error()) }
        do {
            var context = try pool.context(slot, beforeConnecting: handOver?.callAsFunction)
            if job.envelope.deadline != nil {
                // Connecting may have taken a while: the time left is what it is now.
                guard let timeout = statementTimeout(for: job) else { return .failure(DomainErrorCode.deadlineExceeded.error()) }
                context = MethodContext(connection: context.connection, settings: StoreSettings(statementTimeoutMilliseconds: timeout),
                                        syncRetention: context.syncRetention, deadline: job.envelope.deadline,
                                        configuredStatementTimeoutMilliseconds: statementTimeoutMilliseconds)
            }
            guard let handOver, !handOver.done else { return .success(try job.run(context)) }
            return .success(try run(job, on: context, watchingInput: handOver))
        } catch {
            return .failure(failure(of: job, error, on: slot))
        }
    }

    /// `job.run` while stdin is watched: the first time input is waiting during the job's waits
    /// for PostgreSQL (or before a wait that cannot watch), the lead is handed over.
    private func run(_ job: Job, on context: MethodContext, watchingInput handOver: LeadHandOver) throws -> JSONValue {
        try context.connection.waiting(with: InputWatchingWait(descriptors: transport.inputDescriptors, onReadable: handOver.callAsFunction)) { try job.run(context) }
    }

    /// The `statement_timeout` (ms) for `job` if it starts now: `--statement-timeout-ms`, or the
    /// whole milliseconds left before its deadline when fewer; nil once less than one is left,
    /// when the job must not start.
    private func statementTimeout(for job: Job) -> Int? {
        guard let deadline = job.envelope.deadline else { return statementTimeoutMilliseconds }
        let now = DispatchTime.now().uptimeNanoseconds
        guard deadline.uptimeNanoseconds >= now + 1_000_000 else { return nil }
        let left = Int((deadline.uptimeNanoseconds - now) / 1_000_000)
        return statementTimeoutMilliseconds == 0 ? left : min(left, statementTimeoutMilliseconds)
    }

    /// Non-nil when nobody can read `job`'s answer any more (stdout broke): it is not run. A
    /// batch's answer is written only after its last element, so for a batch element the
    /// output is asked directly (one poll); a broken stdout is then noticed before the rest runs.
    private func unheardFailure(_ job: Job) -> RPCError? {
        guard transport.isUnheard(checkNow: job.inBatch) else { return nil }
        return .internalError()  // never heard: stdout is closed; the job is not run
    }

    /// Queued single-statement jobs, all their transactions in one round trip on `slot`'s
    /// connection; one result per job, in order.
    private func executeTogether(_ jobs: [Job], on slot: ConnectionSlot) -> [Result<JSONValue, RPCError>] {
        let context: MethodContext
        do {
            context = try pool.context(slot)
        } catch {
            return jobs.map { .failure(failure(of: $0, error, on: slot)) }
        }
        var results = [Result<JSONValue, RPCError>](repeating: .failure(.internalError()), count: jobs.count)
        var statements: [(job: Int, statement: UserStatement<JSONValue>)] = []
        // Each transaction's statement_timeout; passed on only when a deadline shortens one.
        var timeouts: [Int] = []
        var shortened = false
        for (index, job) in jobs.enumerated() {
            if let unheard = unheardFailure(job) {
                results[index] = .failure(unheard)
                continue
            }
            guard let timeout = statementTimeout(for: job) else {
                results[index] = .failure(DomainErrorCode.deadlineExceeded.error())
                continue
            }
            do {
                guard let statement = job.statement else { throw PostgresError(kind: .misuse, message: "job without a statement") }
                statements.append((index, try statement(context)))
                timeouts.append(timeout)
                shortened = shortened || timeout != statementTimeoutMilliseconds
            } catch {
                results[index] = .failure(failure(of: job, error, on: slot))
            }
        }
        if logger.logLevel <= .debug { logger.debug("one round trip", metadata: ["requests": "\(statements.count)"]) }
        do {
            let outcomes = try context.scope.queries(statements.map { (user: $0.statement.user, statement: $0.statement.statement) },
                                                     statementTimeouts: shortened ? timeouts : nil,
                                                     genericPlans: statements.map(\.statement.genericPlan))
            for ((index, statement), outcome) in zip(statements, outcomes) {
                do {
                    results[index] = .success(try statement.decode(outcome.get()))
                } catch {
                    results[index] = .failure(failure(of: jobs[index], error, on: slot))
                }
            }
        } catch {
            for (index, _) in statements { results[index] = .failure(failure(of: jobs[index], error, on: slot)) }
        }
        return results
    }

    /// Logs a failed job as its kind deserves, drops a connection that cannot be trusted, and
    /// answers with the error's JSON-RPC form.
    private func failure(of job: Job, _ error: Error, on slot: ConnectionSlot) -> RPCError {
        if let postgres = error as? PostgresError {
            if pool.dropIfUntrusted(slot, after: postgres, request: job.logMetadata) {
                // logged by the pool
            } else if postgres.kind == .commitUnconfirmed {
                logger.warning("commit not confirmed by a synchronous standby", metadata: job.logMetadata.merging(["error": "\(postgres)"]) { $1 })
            } else if postgres.isTransactionConflict {
                logger.warning("conflict with a concurrent transaction", metadata: job.logMetadata.merging(["error": "\(postgres)"]) { $1 })
            } else if postgres.sqlState == .queryCanceled {
                // A cancelled statement is the request's timeout, or its deadline once that passed
                // (the statement_timeout it ran with was the time left, or the deadline came first).
                if job.envelope.deadline != nil, statementTimeout(for: job) == nil { return DomainErrorCode.deadlineExceeded.error() }
            } else {
                logger.error("database error", metadata: job.logMetadata.merging(["error": "\(postgres)"]) { $1 })
            }
            return ErrorMapping.rpcError(for: error)
        }
        let answer = ErrorMapping.rpcError(for: error)
        // Every -32603 is logged with its cause (the answer carries none): an unexpected error,
        // or a domain error the mapping does not know (an import refusal's unknown reason).
        if answer.code == .internalError {
            logger.error("internal error", metadata: job.logMetadata.merging(["error": "\(error)"]) { $1 })
        }
        return answer
    }

    private func logRequest(_ job: Job, _ result: Result<JSONValue, RPCError>) {
        let microseconds = (DispatchTime.now().uptimeNanoseconds - job.accepted.uptimeNanoseconds) / 1_000
        var metadata = job.logMetadata
        metadata["duration_ms"] = "\(microseconds / 1_000).\(String(microseconds % 1_000 + 1_000).dropFirst())"
        if case .failure(let error) = result {
            metadata["code"] = "\(error.code.rawValue)"
            if let reason = error.data?["reason"]?.stringValue, error.code.isServerError { metadata["reason"] = "\(reason)" }
        }
        logger.debug("request", metadata: metadata)
    }
}
