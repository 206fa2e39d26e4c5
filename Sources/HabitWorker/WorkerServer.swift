import Foundation
import HabitStore
import JSONRPC
import Logging
import PostgresClient

/// `habit serve`: reads JSON-RPC lines from one file descriptor, runs requests on a pool of
/// database connections and writes each response as soon as it is ready, so responses may come
/// out of order. Threads take turns reading (see `Scheduler`): the thread that reads a
/// database request usually runs it. Stops at EOF (or a wake byte from a signal) after
/// answering everything it accepted.
public final class WorkerServer: @unchecked Sendable {
    let configuration: WorkerConfiguration
    let registry = MethodRegistry.standard
    let logger: Logger
    let reader: LineReader
    let writer: LineWriter
    private let scheduler: Scheduler<Job, ConnectionSlot>
    private let slots: [ConnectionSlot]
    /// Places for requests accepted but not yet answered; the leader waits for one.
    private let inFlight: DispatchSemaphore
    private let outputBroken = LockedFlag()
    /// Set when the first connection fell back to unnamed statements: one warning per worker.
    private let preparedStatementsFellBack = LockedFlag()
    private let inputFailed = LockedFlag()
    private let wake: WakePipe

    struct Job: Sendable {
        let method: String
        let run: @Sendable (MethodContext) throws -> JSONValue
        /// Single-statement methods: the same work as a statement that can share a round trip.
        let statement: (@Sendable (MethodContext) throws -> UserStatement<JSONValue>)?
        let accepted: DispatchTime
        /// An element of a batch (answered only with the whole batch).
        let inBatch: Bool
        let complete: @Sendable (Result<JSONValue, RPCError>) -> Void
    }

    /// `wake` stops the read loop when written to (signals); the worker makes one if none is given.
    public init(configuration: WorkerConfiguration, input: Int32 = 0, output: Int32 = 1, wake: WakePipe? = nil, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let wake = wake ?? WakePipe()
        self.wake = wake
        reader = LineReader(fileDescriptor: input, wakeFileDescriptor: wake.readEnd, maxLineBytes: configuration.maxLineBytes)
        writer = LineWriter(fileDescriptor: output)
        inFlight = DispatchSemaphore(value: max(1, configuration.maxInFlight))
        slots = (0..<max(1, configuration.poolSize)).map { ConnectionSlot(index: $0) }
        scheduler = Scheduler(slots: slots, maxJobsPerRoundTrip: configuration.maxRequestsPerRoundTrip) { $0.statement != nil }
    }

    /// Serves until end of input; returns the process exit code (0, or 1 if stdin or stdout failed).
    public func run() -> Int32 {
        logger.info("serving", metadata: ["pool_size": "\(configuration.poolSize)", "max_in_flight": "\(configuration.maxInFlight)"])
        // One thread per slot plus this one, which leads first: a thread is always free to read.
        let threads = DispatchGroup()
        for index in slots.indices {
            threads.enter()
            let thread = Thread { [self] in
                // Connect early, so the first requests don't wait for it; failures are retried per request.
                let me = Scheduler<Job, ConnectionSlot>.Follower()
                let warmUp = scheduler.reserveSlot()
                if let warmUp { _ = try? usableContext(warmUp) }
                serve(startingWith: scheduler.next(after: warmUp, as: me), as: me)
                threads.leave()
            }
            thread.name = "habit-db-\(index)"
            thread.start()
        }
        serve(startingWith: .lead, as: .init())
        threads.wait()
        for slot in slots { slot.drop() }
        logger.info("stopped")
        return outputBroken.isSet || inputFailed.isSet ? 1 : 0
    }

    private func serve(startingWith first: Scheduler<Job, ConnectionSlot>.Assignment, as me: Scheduler<Job, ConnectionSlot>.Follower) {
        var assignment = first
        while true {
            switch assignment {
            case .lead:
                guard let (job, slot) = lead() else {
                    assignment = scheduler.next(after: nil, as: me)
                    continue
                }
                if reader.hasBufferedInput {
                    scheduler.handOverLead()
                    assignment = .run(job, slot)
                    continue
                }
                // Still the leader: run the job and hand reading over only if input arrives
                // meanwhile, so at one request in flight no other thread wakes per request.
                let handOver = LeadHandOver(scheduler)
                let result = execute(job, on: slot, handOver: handOver)
                pthread_setspecific(Self.leaderHandOverKey, Unmanaged.passUnretained(handOver).toOpaque())
                finish(job, result) // writeRaw hands over first if the write might block
                pthread_setspecific(Self.leaderHandOverKey, nil)
                assignment = handOver.done ? scheduler.next(after: slot, as: me) : scheduler.continueLeading(after: slot)
            case .run(let job, let slot):
                finish(job, execute(job, on: slot))
                assignment = scheduler.next(after: slot, as: me)
            case .runTogether(let jobs, let slot):
                for (job, result) in zip(jobs, executeTogether(jobs, on: slot)) { finish(job, result) }
                assignment = scheduler.next(after: slot, as: me)
            case .stop:
                return
            }
        }
    }

    private func finish(_ job: Job, _ result: Result<JSONValue, RPCError>) {
        if logger.logLevel <= .debug { logRequest(job, result) } // skip the formatting otherwise
        job.complete(result)
    }

    /// Reads lines until one gives this thread a job to run (returned with its slot; this
    /// thread still leads) or input ends (nil, after `endInput`).
    private func lead() -> (Job, ConnectionSlot)? {
        while !outputBroken.isSet {
            let event: LineEvent
            do {
                event = try reader.next()
            } catch {
                logger.error("stdin read failed", metadata: ["error": "\(error)"])
                inputFailed.set()
                break
            }
            switch event {
            case .endOfFile:
                scheduler.endInput()
                return nil
            case .oversized(let byteCount):
                logger.warning("request line too long", metadata: ["bytes": "\(byteCount)", "limit": "\(configuration.maxLineBytes)"])
                write(.error(id: .null, error: RPCError(
                    code: .invalidRequest, message: "Invalid Request",
                    data: ["reason": .string("request line of \(byteCount) bytes exceeds the limit of \(configuration.maxLineBytes) bytes"),
                           "limit": .int(configuration.maxLineBytes)])))
            case .line(let bytes):
                var own: (Job, ConnectionSlot)?
                var jobsInLine = 0
                handle(line: bytes) { job in
                    jobsInLine += 1
                    if jobsInLine == 2, let (kept, slot) = own {
                        // A batch: its first job must not wait until the whole line is dispatched.
                        own = nil
                        scheduler.submit(kept, slot: slot)
                    }
                    acquirePlace(giving: &own)
                    if jobsInLine == 1, let slot = scheduler.reserveSlot() {
                        own = (job, slot)
                    } else {
                        scheduler.submit(job)
                    }
                }
                if let own { return own }
            }
        }
        scheduler.endInput()
        return nil
    }

    /// Takes a place for one more accepted request, waiting while there is none. A job the
    /// leader kept for itself goes to another thread first: it may hold the place we wait for.
    private func acquirePlace(giving own: inout (Job, ConnectionSlot)?) {
        if inFlight.wait(timeout: .now()) == .success { return }
        if let (job, slot) = own {
            own = nil
            scheduler.submit(job, slot: slot)
        }
        inFlight.wait()
    }

    /// `enqueue` gets each database job of the line once it has a place.
    private func handle(line: [UInt8], enqueue: (Job) -> Void) {
        switch RPCCodec.decode(line: line, maxDepth: configuration.maxJSONDepth) {
        case .blank:
            return
        case .invalid(let error):
            logger.debug("invalid line", metadata: ["code": "\(error.code.rawValue)"])
            write(.error(id: .null, error: error))
        case .single(let message):
            dispatch(message, inBatch: false, enqueue: enqueue) { [self] response in
                if let response { write(response) }
            }
        case .batch(let messages):
            guard messages.count <= configuration.maxBatchElements else {
                logger.warning("batch too large", metadata: ["elements": "\(messages.count)", "limit": "\(configuration.maxBatchElements)"])
                write(.error(id: .null, error: RPCError(
                    code: .invalidRequest, message: "Invalid Request",
                    data: ["reason": .string("batch of \(messages.count) elements exceeds the limit of \(configuration.maxBatchElements)"),
                           "limit": .int(configuration.maxBatchElements)])))
                return
            }
            let batch = BatchResponse(expected: messages.filter(\.expectsResponse).count, budget: configuration.maxResponseBytes,
                                      encode: { [self] response, limit in encode(response, limit: limit) },
                                      done: { [self] bytes in writeRaw(bytes) })
            var slot = 0
            for message in messages {
                let mySlot = message.expectsResponse ? slot : -1
                if message.expectsResponse { slot += 1 }
                dispatch(message, inBatch: true, enqueue: enqueue) { response in
                    if let response, mySlot >= 0 { batch.fill(mySlot, with: response) }
                }
            }
        }
    }

    /// Answers one message or hands its database job to `enqueue`; `respond` gets nil for notifications.
    private func dispatch(_ message: DecodedMessage, inBatch: Bool, enqueue: (Job) -> Void,
                          respond: @escaping @Sendable (OutgoingResponse?) -> Void) {
        switch message {
        case .invalid(let id, let error):
            respond(.error(id: id, error: error))
        case .invalidNotification(let method, let error):
            logger.debug("dropped invalid notification", metadata: ["method": "\(Self.loggable(method))", "code": "\(error.code.rawValue)"])
        case .request(let request):
            let id = request.id
            let method = request.method
            let finish: @Sendable (Result<JSONValue, RPCError>) -> Void = { result in
                guard let id else { return respond(nil) } // notifications are never answered
                switch result {
                case .success(let value): respond(.result(id: id, result: value))
                case .failure(let error): respond(.error(id: id, error: error))
                }
            }
            let prepared: MethodRegistry.Prepared
            do {
                prepared = try registry.prepare(request)
            } catch {
                logger.debug("rejected", metadata: ["method": "\(Self.loggable(method))", "code": "\(error.code.rawValue)"])
                return finish(.failure(error))
            }
            switch prepared {
            case .immediate(let value):
                finish(.success(value))
            case .database(let run, let statement):
                enqueue(Job(method: method, run: run, statement: statement, accepted: .now(), inBatch: inBatch, complete: { [inFlight] result in
                    finish(result)
                    inFlight.signal()
                }))
            }
        }
    }

    func write(_ response: OutgoingResponse) {
        writeRaw(encode(response, limit: configuration.maxResponseBytes))
    }

    /// The response's bytes; a result past `limit` becomes the `response_too_large` error for
    /// its id instead (the result is never encoded beyond the limit). Errors are short and
    /// always go out as they are.
    func encode(_ response: OutgoingResponse, limit: Int) -> [UInt8] {
        guard case .result = response else { return response.encoded }
        var bytes: [UInt8] = []
        if case .result(_, .encoded(let json)) = response { bytes.reserveCapacity(min(json.bytes.count + 64, max(limit, 0) + 64)) }
        if response.encode(into: &bytes, limit: limit) { return bytes }
        logger.warning("response too large", metadata: ["limit": "\(configuration.maxResponseBytes)"])
        return OutgoingResponse.error(id: response.id, error: DomainErrorCode.responseTooLarge.error(extra: [
            ("limit", .int(configuration.maxResponseBytes)),
        ])).encoded
    }

    /// The hand-over of a leader writing its own job's response on this thread (see `serve`).
    private static let leaderHandOverKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private func writeRaw(_ bytes: [UInt8]) {
        guard !outputBroken.isSet else { return }
        if let pointer = pthread_getspecific(Self.leaderHandOverKey) {
            // A leader blocked on a full stdout would read no stdin: a gateway that writes
            // before it reads would deadlock. A line of at most PIPE_BUF (4,096) bytes into a
            // writable pipe (a free page) does not block; for anything else, hand over first.
            let handOver = Unmanaged<LeadHandOver>.fromOpaque(pointer).takeUnretainedValue()
            if !handOver.done, !(bytes.count < 4_096 && writer.isWritableNow) { handOver() }
        }
        do {
            try writer.writeLine(bytes)
        } catch {
            outputBroke(because: "\(error)")
        }
    }

    /// Stops the worker once nobody can read its answers: logged once, and the leader, which
    /// may be blocked on stdin, is woken.
    private func outputBroke(because reason: String) {
        if outputBroken.set() {
            logger.error("stdout closed; stopping", metadata: ["error": "\(reason)"])
            wake.wake()
        }
    }

    /// Method names come from clients: log them only when they are ours.
    static func loggable(_ method: String) -> String {
        MethodRegistry.standard.methodNames.contains(method) ? method : "(unknown)"
    }

    // MARK: - Connections

    /// One database connection of the pool, used by one thread at a time (the scheduler hands
    /// it over under its lock).
    final class ConnectionSlot: @unchecked Sendable {
        let index: Int
        var connection: Connection?
        var context: MethodContext?
        var lastFailedConnect: DispatchTime?

        init(index: Int) { self.index = index }

        func drop() {
            connection?.close()
            connection = nil
            context = nil
        }
    }

    private func logRequest(_ job: Job, _ result: Result<JSONValue, RPCError>) {
        let microseconds = (DispatchTime.now().uptimeNanoseconds - job.accepted.uptimeNanoseconds) / 1_000
        var metadata: Logger.Metadata = [
            "method": "\(job.method)",
            "duration_ms": "\(microseconds / 1_000).\(String(microseconds % 1_000 + 1_000).dropFirst())",
        ]
        if case .failure(let error) = result {
            metadata["code"] = "\(error.code.rawValue)"
            if let reason = error.data?["reason"]?.stringValue, error.code.isServerError { metadata["reason"] = "\(reason)" }
        }
        logger.debug("request", metadata: metadata)
    }

    /// `handOver`, when this thread still leads: called once input arrives while the job waits
    /// for PostgreSQL, or before a wait that cannot watch stdin (connecting, libpq's synchronous calls).
    private func execute(_ job: Job, on slot: ConnectionSlot, handOver: LeadHandOver? = nil) -> Result<JSONValue, RPCError> {
        if let unheard = unheardFailure(job) { return .failure(unheard) }
        do {
            let context = try usableContext(slot, beforeConnecting: handOver?.callAsFunction)
            guard let handOver, !handOver.done else { return .success(try job.run(context)) }
            return .success(try context.connection.waiting(with: InputWatchingWait(descriptors: [reader.fileDescriptor, wake.readEnd], onReadable: handOver.callAsFunction)) {
                try job.run(context)
            })
        } catch {
            return .failure(failure(of: job, error, on: slot))
        }
    }

    /// Non-nil when nobody can read `job`'s answer any more (stdout broke): it is not run. A
    /// batch's answer is written only after its last element, so for a batch element the
    /// output is asked directly (one poll); a broken stdout is then noticed before the rest runs.
    private func unheardFailure(_ job: Job) -> RPCError? {
        guard outputBroken.isSet || (job.inBatch && writer.isBroken) else { return nil }
        outputBroke(because: "the reading end of stdout is gone")
        return RPCError(code: .internalError, message: "Internal error", data: ["reason": "not run: stdout is closed"])
    }

    /// Queued single-statement jobs, all their transactions in one round trip on `slot`'s
    /// connection; one result per job, in order.
    private func executeTogether(_ jobs: [Job], on slot: ConnectionSlot) -> [Result<JSONValue, RPCError>] {
        let context: MethodContext
        do {
            context = try usableContext(slot)
        } catch {
            return jobs.map { .failure(failure(of: $0, error, on: slot)) }
        }
        var results = [Result<JSONValue, RPCError>](repeating: .failure(.internalError()), count: jobs.count)
        var statements: [(job: Int, statement: UserStatement<JSONValue>)] = []
        for (index, job) in jobs.enumerated() {
            if let unheard = unheardFailure(job) {
                results[index] = .failure(unheard)
                continue
            }
            do {
                guard let statement = job.statement else { throw PostgresError(kind: .misuse, message: "job without a statement") }
                statements.append((index, try statement(context)))
            } catch {
                results[index] = .failure(failure(of: job, error, on: slot))
            }
        }
        if logger.logLevel <= .debug { logger.debug("one round trip", metadata: ["requests": "\(statements.count)"]) }
        do {
            let outcomes = try context.scope.queries(statements.map { (user: $0.statement.user, statement: $0.statement.statement) })
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
            if postgres.kind == .misuse {
                // The session is not where it should be (a bug): never reuse it.
                logger.error("connection in an unexpected state; reconnecting", metadata: ["method": "\(job.method)", "error": "\(postgres)"])
                slot.drop()
            } else if postgres.isConnectionLost {
                logger.warning("database connection lost", metadata: ["method": "\(job.method)", "error": "\(postgres)"])
                slot.drop()
            } else if postgres.isTransactionConflict {
                logger.warning("conflict with a concurrent transaction", metadata: ["method": "\(job.method)", "error": "\(postgres)"])
            } else if postgres.sqlState != .queryCanceled {
                logger.error("database error", metadata: ["method": "\(job.method)", "error": "\(postgres)"])
            }
        } else if !(error is StoreError) && !(error is RPCError) {
            logger.error("internal error", metadata: ["method": "\(job.method)", "error": "\(error)"])
        }
        return ErrorMapping.rpcError(for: error)
    }

    /// The slot's connection, reconnecting when it broke while idle. During an outage, requests
    /// within the backoff window fail at once instead of each waiting to connect.
    private func usableContext(_ slot: ConnectionSlot, beforeConnecting: (() -> Void)? = nil) throws -> MethodContext {
        if let context = slot.context, let connection = slot.connection, connection.isAliveAfterIdle() { return context }
        slot.drop()
        if let lastFailedConnect = slot.lastFailedConnect,
           DispatchTime.now().uptimeNanoseconds < lastFailedConnect.uptimeNanoseconds + UInt64(configuration.reconnectBackoffMilliseconds) * 1_000_000 {
            throw PostgresError(kind: .connectionFailed, message: "database unavailable (retrying)")
        }
        beforeConnecting?()
        do {
            let fresh = try Connection(configuration.connectionString, applicationName: "habit-serve",
                                       connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                                       preparedStatements: configuration.preparedStatements)
            fresh.onPreparedStatementsDisabled = { [logger, preparedStatementsFellBack] error in
                guard preparedStatementsFellBack.set() else { return }
                logger.warning("prepared statements off", metadata: ["reason": "\(PreparedStatementMode.fallbackWarning(error))"])
            }
            let context = MethodContext(connection: fresh, settings: configuration.storeSettings)
            slot.connection = fresh
            slot.context = context
            slot.lastFailedConnect = nil
            return context
        } catch {
            slot.lastFailedConnect = .now()
            logger.warning("database connect failed", metadata: ["slot": "\(slot.index)", "error": "\(error)"])
            throw error
        }
    }
}

/// Hands the lead over once, when the leader's own job must wait without watching stdin.
final class LeadHandOver {
    private let scheduler: Scheduler<WorkerServer.Job, WorkerServer.ConnectionSlot>
    private(set) var done = false

    init(_ scheduler: Scheduler<WorkerServer.Job, WorkerServer.ConnectionSlot>) { self.scheduler = scheduler }

    func callAsFunction() {
        guard !done else { return }
        done = true
        scheduler.handOverLead()
    }
}

/// Collects the responses of one batch, each encoded as it arrives within what is left of the
/// batch's byte budget, and writes them as one array when the last arrives. Past the budget a
/// result becomes its `response_too_large` error; errors and results of at most
/// `alwaysSent` bytes go out as they are (replacing them would not make the line shorter), so
/// the line stays within the budget plus a short entry per element.
final class BatchResponse: @unchecked Sendable {
    private let lock = NSLock()
    private var parts: [[UInt8]?]
    private var remaining: Int
    private var budget: Int
    private let encode: (OutgoingResponse, Int) -> [UInt8]
    private let done: ([UInt8]) -> Void

    init(expected: Int, budget: Int, encode: @escaping (OutgoingResponse, Int) -> [UInt8], done: @escaping ([UInt8]) -> Void) {
        parts = Array(repeating: nil, count: expected)
        remaining = expected
        self.budget = budget - 2 // the brackets
        self.encode = encode
        self.done = done
    }

    static let alwaysSent = 256

    func fill(_ slot: Int, with response: OutgoingResponse) {
        lock.lock()
        let bytes = encode(response, max(budget, Self.alwaysSent))
        budget -= bytes.count + 1 // and its comma
        parts[slot] = bytes
        remaining -= 1
        let finished = remaining == 0
        lock.unlock()
        // Only called for a batch with responses: a batch of notifications is never filled.
        if finished, let line = OutgoingResponse.batchLine(parts.map { $0 ?? [] }) { done(line) }
    }
}

final class LockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    /// Sets the flag; true if this call set it.
    @discardableResult
    func set() -> Bool { lock.withLock { defer { value = true }; return !value } }
}

extension DecodedMessage {
    /// Whether the message gets an entry in a response (everything but notifications).
    var expectsResponse: Bool {
        switch self {
        case .request(let request): !request.isNotification
        case .invalid: true
        case .invalidNotification: false
        }
    }
}
