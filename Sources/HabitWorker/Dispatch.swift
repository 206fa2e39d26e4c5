import Foundation
import HabitStore
import JSONRPC
import Logging
import PostgresClient

/// One database request accepted from a line: what runs, for whom, and how it is answered.
struct Job: Sendable {
    let method: String
    /// The request's id as sent (nil for a notification): for the log only.
    let id: RequestID?
    /// The request's `user_id`: one user's jobs run in the order they were read (`Scheduler`);
    /// nil (no user: `system.health`) runs in any order.
    let user: UUID?
    let run: @Sendable (MethodContext) throws -> JSONValue
    /// Single-statement methods: the same work as a statement that can share a round trip.
    let statement: (@Sendable (MethodContext) throws -> UserStatement<JSONValue>)?
    /// When the worker read the request's line.
    let accepted: DispatchTime
    /// The envelope members (`deadline_ms`, `traceparent`).
    let envelope: Envelope
    /// An element of a batch (answered only with the whole batch).
    let inBatch: Bool
    /// Answers the request and gives back its in-flight place. `handOver`: the lead of a
    /// leader answering its own job (`WorkerTransport.write(line:beforeBlocking:)`).
    let complete: @Sendable (Result<JSONValue, RPCError>, LeadHandOver?) -> Void

    /// What every log line about this request carries: its id, method and trace.
    var logMetadata: Logger.Metadata { .request(id: id, method: method, trace: envelope.trace) }
}

/// The members every method accepts in `params` besides its own (docs/protocol.md, "Envelope
/// members"): taken out of `params` before the method decodes them, so no method refuses them
/// as unknown keys, and carried in the `Job`.
struct Envelope: Sendable {
    static let deadlineKey = "deadline_ms"
    static let traceParentKey = "traceparent"
    /// `deadline_ms` is at most what `statement_timeout` takes (ms, a 32-bit integer).
    static let deadlineRange = 1...Int(Int32.max)

    /// `deadline_ms` after the line was read: a job not started by then is not run, a running
    /// one is cancelled (`JobRunner`).
    var deadline: DispatchTime?
    /// A valid `traceparent`; an invalid one is ignored (W3C Trace Context), as if absent.
    var trace: TraceParent?

    /// How `rpc.discover` lists them, in every method's params.
    static let declarations: [ParamDeclaration] = [
        ParamDeclaration(name: deadlineKey, schema: JSONSchema.nullable(JSONSchema.integer(deadlineRange)), required: false,
                         description: "Envelope member of every method: milliseconds from when the worker read the line. "
                             + "Not started by then: not run; running then: cancelled. Either way data.reason deadline_exceeded."),
        ParamDeclaration(name: traceParentKey, schema: JSONSchema.nullable(JSONSchema.string()), required: false,
                         description: "Envelope member of every method: a W3C Trace Context traceparent; its trace-id "
                             + "and parent-id are logged with the request. An invalid value is ignored."),
    ]

    /// Takes the envelope members out of `request.params` (the line was read at `read`).
    /// Null counts as absent, as for every optional param; a `deadline_ms` that is not an
    /// integer in `deadlineRange` is -32602.
    static func take(from request: inout IncomingRequest, readAt read: DispatchTime) throws(RPCError) -> Envelope {
        var envelope = Envelope()
        // Most requests carry neither: one pass over the keys, nothing copied.
        guard let params = request.params,
              params.members.contains(where: { $0.key == deadlineKey || $0.key == traceParentKey }) else { return envelope }
        switch params[deadlineKey] {
        case nil, .null?:
            break
        case let value?:
            let expected = "expected an integer from 1 to \(deadlineRange.upperBound) (milliseconds)"
            guard let milliseconds = value.intValue else {
                throw .invalidParams(field: deadlineKey, reason: RPCReason.wrongType, message: expected)
            }
            guard deadlineRange.contains(milliseconds) else {
                throw .invalidParams(field: deadlineKey, reason: RPCReason.outOfRange, message: expected)
            }
            envelope.deadline = read + .milliseconds(milliseconds)
        }
        if case .string(let text)? = params[traceParentKey] { envelope.trace = TraceParent(text) }
        request.params?[deadlineKey] = nil
        request.params?[traceParentKey] = nil
        return envelope
    }
}

/// From lines to running jobs: the leader decodes each line, answers what needs no database
/// at once, and turns the rest into jobs (`registry.prepare`) that take an in-flight place and
/// go to the scheduler; every thread then runs what the scheduler assigns it (`serve`).
final class Dispatcher: @unchecked Sendable {
    private let registry = MethodRegistry.standard
    private let transport: WorkerTransport
    private let runner: JobRunner
    private let scheduler: Scheduler<Job, ConnectionSlot>
    private let logger: Logger
    private let maxJSONDepth: Int
    private let maxBatchElements: Int
    /// Places for requests accepted but not yet answered; the leader waits for one.
    private let inFlight: DispatchSemaphore
    /// Counts the places taken, for the health socket.
    private let status: WorkerStatus
    /// What `WorkerMethod`s act on.
    private let worker: WorkerContext

    init(configuration: WorkerConfiguration, transport: WorkerTransport, pool: ConnectionPool, worker: WorkerContext, logger: Logger) {
        self.transport = transport
        self.worker = worker
        self.logger = logger
        maxJSONDepth = configuration.maxJSONDepth
        maxBatchElements = configuration.maxBatchElements
        inFlight = DispatchSemaphore(value: max(1, configuration.maxInFlight))
        status = pool.status
        runner = JobRunner(pool: pool, transport: transport, statementTimeoutMilliseconds: configuration.statementTimeoutMilliseconds,
                           logger: logger)
        scheduler = Scheduler(slots: pool.slots, maxJobsPerRoundTrip: configuration.maxRequestsPerRoundTrip,
                              canShareRoundTrip: { $0.statement != nil }, userOf: { $0.user })
    }

    /// The thread that reads first.
    func serveAsLeader() {
        serve(startingWith: .lead, as: .init())
    }

    /// Every other thread: connects a slot early, so the first requests don't wait for it
    /// (failures are retried per request), then serves.
    func serveAsFollower() {
        let me = Scheduler<Job, ConnectionSlot>.Follower()
        let warmUp = scheduler.reserveSlot()
        if let warmUp { runner.connect(warmUp) }
        serve(startingWith: scheduler.next(after: warmUp, finished: EmptyCollection(), as: me), as: me)
    }

    private func serve(startingWith first: Scheduler<Job, ConnectionSlot>.Assignment, as me: Scheduler<Job, ConnectionSlot>.Follower) {
        let handOver = LeadHandOver(scheduler.handOverLead)
        var assignment = first
        while true {
            switch assignment {
            case .lead:
                guard let (job, slot) = lead() else {
                    assignment = scheduler.next(after: nil, finished: EmptyCollection(), as: me)
                    continue
                }
                if transport.hasBufferedInput {
                    scheduler.handOverLead()
                    assignment = .run(job, slot)
                    continue
                }
                // Still the leader: run the job and hand reading over only if input arrives
                // meanwhile, so at one request in flight no other thread wakes per request.
                handOver.arm()
                runner.run(job, on: slot, handOver: handOver)
                assignment = handOver.done ? scheduler.next(after: slot, finished: CollectionOfOne(job), as: me)
                                           : scheduler.continueLeading(after: slot, finished: job)
            case .run(let job, let slot):
                runner.run(job, on: slot, handOver: nil)
                assignment = scheduler.next(after: slot, finished: CollectionOfOne(job), as: me)
            case .runTogether(let jobs, let slot):
                runner.runTogether(jobs, on: slot)
                assignment = scheduler.next(after: slot, finished: jobs, as: me)
            case .stop:
                return
            }
        }
    }

    /// Reads lines until one gives this thread a job to run (returned with its slot; this
    /// thread still leads) or input ends (nil, after `endInput`).
    private func lead() -> (Job, ConnectionSlot)? {
        while let line = transport.nextLine() {
            var own: (Job, ConnectionSlot)?
            var jobsInLine = 0
            handle(line: line, readAt: .now()) { job in
                jobsInLine += 1
                if jobsInLine == 2, let (kept, slot) = own {
                    // A batch: its first job must not wait until the whole line is dispatched.
                    own = nil
                    scheduler.give(kept, slot: slot)
                }
                acquirePlace(giving: &own)
                if let slot = scheduler.accept(job, keep: jobsInLine == 1) { own = (job, slot) }
            }
            if let own { return own }
        }
        scheduler.endInput()
        return nil
    }

    /// Takes a place for one more accepted request, waiting while there is none. A job the
    /// leader kept for itself goes to another thread first: it may hold the place we wait for.
    private func acquirePlace(giving own: inout (Job, ConnectionSlot)?) {
        defer { status.accepted() }
        if inFlight.wait(timeout: .now()) == .success { return }
        if let (job, slot) = own {
            own = nil
            scheduler.give(job, slot: slot)
        }
        inFlight.wait()
    }

    /// `enqueue` gets each database job of the line, in order, once it has a place.
    private func handle(line: [UInt8], readAt read: DispatchTime, enqueue: (Job) -> Void) {
        switch RPCCodec.decode(line: line, maxDepth: maxJSONDepth) {
        case .blank:
            return
        case .invalid(let error):
            logger.debug("invalid line", metadata: ["code": "\(error.code.rawValue)"])
            transport.write(.error(id: .null, error: error))
        case .single(let message):
            dispatch(message, inBatch: false, readAt: read, enqueue: enqueue) { [transport] response, handOver in
                if let response { transport.write(response, beforeBlocking: handOver) }
            }
        case .batch(let messages):
            guard messages.count <= maxBatchElements else {
                logger.warning("batch too large", metadata: ["elements": "\(messages.count)", "limit": "\(maxBatchElements)"])
                transport.write(.error(id: .null, error: .invalidRequest(
                    .batchTooLarge, "batch of \(messages.count) elements exceeds the limit of \(maxBatchElements)", limit: maxBatchElements)))
                return
            }
            let batch = transport.batch(expected: messages.filter(\.expectsResponse).count)
            var slot = 0
            for message in messages {
                let mySlot = message.expectsResponse ? slot : -1
                if message.expectsResponse { slot += 1 }
                dispatch(message, inBatch: true, readAt: read, enqueue: enqueue) { response, handOver in
                    if let response, mySlot >= 0 { batch.fill(mySlot, with: response, beforeBlocking: handOver) }
                }
            }
        }
    }

    /// Answers one message or hands its database job to `enqueue`; `respond` gets nil for notifications.
    private func dispatch(_ message: DecodedMessage, inBatch: Bool, readAt read: DispatchTime, enqueue: (Job) -> Void,
                          respond: @escaping @Sendable (OutgoingResponse?, LeadHandOver?) -> Void) {
        switch message {
        case .invalid(let id, let error):
            respond(.error(id: id, error: error), nil)
        case .invalidNotification(let method, let error):
            logger.debug("dropped invalid notification", metadata: ["method": "\(Self.loggable(method))", "code": "\(error.code.rawValue)"])
        case .request(var request):
            let id = request.id
            let method = request.method
            let finish: @Sendable (Result<JSONValue, RPCError>, LeadHandOver?) -> Void = { result, handOver in
                guard let id else { return respond(nil, handOver) } // notifications are never answered
                switch result {
                case .success(let value): respond(.result(id: id, result: value), handOver)
                case .failure(let error): respond(.error(id: id, error: error), handOver)
                }
            }
            let prepared: MethodRegistry.Prepared
            let envelope: Envelope
            do throws(RPCError) {
                do throws(RPCError) {
                    envelope = try Envelope.take(from: &request, readAt: read)
                } catch {
                    // The documented precedence: an unknown method before its params.
                    guard registry.methodNames.contains(method) else { throw RPCError.methodNotFound(method) }
                    throw error
                }
                prepared = try registry.prepare(request)
            } catch {
                if logger.logLevel <= .debug {
                    var metadata = Logger.Metadata.request(id: id, method: Self.loggable(method), trace: nil)
                    metadata["code"] = "\(error.code.rawValue)"
                    logger.debug("rejected", metadata: metadata)
                }
                return finish(.failure(error), nil)
            }
            switch prepared {
            case .immediate(let value):
                finish(.success(value), nil)
            case .worker(let run):
                do throws(RPCError) {
                    finish(.success(try run(worker)), nil)
                } catch {
                    finish(.failure(error), nil)
                }
            case .database(let run, let statement):
                enqueue(Job(method: method, id: id, user: Self.user(of: request), run: run, statement: statement, accepted: read,
                            envelope: envelope, inBatch: inBatch, complete: { [inFlight, status] result, handOver in
                    finish(result, handOver)
                    status.answered()
                    inFlight.signal()
                }))
            }
        }
    }

    /// The user a prepared request acts for: its `user_id` (the method accepted it, so it is a
    /// UUID when present), or nil for a method without one.
    static func user(of request: IncomingRequest) -> UUID? {
        guard case .string(let text)? = request.params?["user_id"] else { return nil }
        return UUID(canonical: text)
    }

    /// Method names come from clients: log them only when they are ours.
    static func loggable(_ method: String) -> String {
        MethodRegistry.standard.methodNames.contains(method) ? method : "(unknown)"
    }
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
