import Foundation
import HabitStore
import JSONRPC
import Logging
import PostgresClient

/// `habit serve`: reads JSON-RPC lines from one file descriptor, runs requests on a pool of
/// database threads (one connection each) and writes each response as soon as it is ready,
/// so responses may come out of order. Stops at EOF (or a wake byte from a signal) after
/// answering everything it accepted.
public final class WorkerServer: @unchecked Sendable {
    let configuration: WorkerConfiguration
    let registry = MethodRegistry.standard
    let logger: Logger
    let reader: LineReader
    let writer: LineWriter
    private let queue = WorkQueue<Job>()
    /// Places for requests accepted but not yet answered; the reader waits for one.
    private let inFlight: DispatchSemaphore
    private let outputBroken = LockedFlag()
    private let inputFailed = LockedFlag()
    private let wake: WakePipe

    struct Job: Sendable {
        let method: String
        let run: @Sendable (MethodContext) throws -> JSONValue
        let accepted: DispatchTime
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
    }

    /// Serves until end of input; returns the process exit code (0, or 1 if stdin or stdout failed).
    public func run() -> Int32 {
        let threads = DispatchGroup()
        for index in 0..<max(1, configuration.poolSize) {
            threads.enter()
            let thread = Thread { [self] in
                var databaseThread = DatabaseThread(server: self, index: index)
                databaseThread.loop()
                threads.leave()
            }
            thread.name = "habit-db-\(index)"
            thread.start()
        }
        logger.info("serving", metadata: ["pool_size": "\(configuration.poolSize)", "max_in_flight": "\(configuration.maxInFlight)"])
        readLoop()
        queue.close()
        threads.wait()
        logger.info("stopped")
        return outputBroken.isSet || inputFailed.isSet ? 1 : 0
    }

    private func readLoop() {
        while !outputBroken.isSet {
            let event: LineEvent
            do {
                event = try reader.next()
            } catch {
                logger.error("stdin read failed", metadata: ["error": "\(error)"])
                inputFailed.set()
                return
            }
            switch event {
            case .endOfFile:
                return
            case .oversized(let byteCount):
                logger.warning("request line too long", metadata: ["bytes": "\(byteCount)", "limit": "\(configuration.maxLineBytes)"])
                write(.error(id: .null, error: RPCError(
                    code: .invalidRequest, message: "Invalid Request",
                    data: ["reason": .string("request line of \(byteCount) bytes exceeds the limit of \(configuration.maxLineBytes) bytes"),
                           "limit": .int(configuration.maxLineBytes)])))
            case .line(let bytes):
                handle(line: bytes)
            }
        }
    }

    private func handle(line: [UInt8]) {
        switch RPCCodec.decode(line: line, maxDepth: configuration.maxJSONDepth) {
        case .blank:
            return
        case .invalid(let error):
            logger.debug("invalid line", metadata: ["code": "\(error.code.rawValue)"])
            write(.error(id: .null, error: error))
        case .single(let message):
            dispatch(message) { [self] response in
                if let response { write(response) }
            }
        case .batch(let messages):
            let batch = BatchResponse(expected: messages.filter(\.expectsResponse).count) { [self] responses in
                var bytes: [UInt8] = []
                if OutgoingResponse.encodeBatch(responses, into: &bytes) { writeRaw(bytes) }
            }
            var slot = 0
            for message in messages {
                let mySlot = message.expectsResponse ? slot : -1
                if message.expectsResponse { slot += 1 }
                dispatch(message) { response in
                    if let response, mySlot >= 0 { batch.fill(mySlot, with: response) }
                }
            }
        }
    }

    /// Answers or queues one message; `respond` gets nil for notifications.
    private func dispatch(_ message: DecodedMessage, respond: @escaping @Sendable (OutgoingResponse?) -> Void) {
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
            case .database(let run):
                inFlight.wait()
                queue.put(Job(method: method, run: run, accepted: .now(), complete: { [inFlight] result in
                    finish(result)
                    inFlight.signal()
                }))
            }
        }
    }

    func write(_ response: OutgoingResponse) {
        writeRaw(response.encoded)
    }

    private func writeRaw(_ bytes: [UInt8]) {
        guard !outputBroken.isSet else { return }
        do {
            try writer.writeLine(bytes)
        } catch {
            if outputBroken.set() {
                logger.error("stdout closed; stopping", metadata: ["error": "\(error)"])
                wake.wake() // the reader may be blocked on stdin: nobody can hear us anymore
            }
        }
    }

    /// Method names come from clients: log them only when they are ours.
    static func loggable(_ method: String) -> String {
        MethodRegistry.standard.methodNames.contains(method) ? method : "(unknown)"
    }

    // MARK: - Database threads

    /// One thread, one connection: runs queued jobs until the queue closes.
    private struct DatabaseThread {
        let server: WorkerServer
        let index: Int
        var connection: Connection?
        var context: MethodContext?
        var lastFailedConnect: DispatchTime?

        init(server: WorkerServer, index: Int) {
            self.server = server
            self.index = index
        }

        mutating func loop() {
            _ = try? usableContext() // connect early; failures are retried per request
            let waiter = WorkQueue<Job>.Waiter()
            while let job = server.queue.take(as: waiter) {
                let result = execute(job)
                if server.logger.logLevel <= .debug { logRequest(job, result) } // skip the formatting otherwise
                job.complete(result)
            }
            connection?.close()
        }

        func logRequest(_ job: Job, _ result: Result<JSONValue, RPCError>) {
            let microseconds = (DispatchTime.now().uptimeNanoseconds - job.accepted.uptimeNanoseconds) / 1_000
            var metadata: Logger.Metadata = [
                "method": "\(job.method)",
                "duration_ms": "\(microseconds / 1_000).\(String(microseconds % 1_000 + 1_000).dropFirst())",
            ]
            if case .failure(let error) = result {
                metadata["code"] = "\(error.code.rawValue)"
                if let reason = error.data?["reason"]?.stringValue, error.code.isServerError { metadata["reason"] = "\(reason)" }
            }
            server.logger.debug("request", metadata: metadata)
        }

        mutating func execute(_ job: Job) -> Result<JSONValue, RPCError> {
            do {
                let context = try usableContext()
                return .success(try job.run(context))
            } catch {
                if let postgres = error as? PostgresError {
                    if postgres.kind == .misuse {
                        // The session is not where it should be (a bug): never reuse it.
                        server.logger.error("connection in an unexpected state; reconnecting", metadata: ["method": "\(job.method)", "error": "\(postgres)"])
                        drop()
                    } else if postgres.isConnectionLost {
                        server.logger.warning("database connection lost", metadata: ["method": "\(job.method)", "error": "\(postgres)"])
                        drop()
                    } else if postgres.sqlState != .queryCanceled {
                        server.logger.error("database error", metadata: ["method": "\(job.method)", "error": "\(postgres)"])
                    }
                } else if !(error is StoreError) && !(error is RPCError) {
                    server.logger.error("internal error", metadata: ["method": "\(job.method)", "error": "\(error)"])
                }
                return .failure(ErrorMapping.rpcError(for: error))
            }
        }

        /// The connection, reconnecting when it broke while idle. During an outage, requests
        /// within the backoff window fail at once instead of each waiting to connect.
        mutating func usableContext() throws -> MethodContext {
            if let context, let connection, connection.isAliveAfterIdle() { return context }
            drop()
            if let lastFailedConnect,
               DispatchTime.now().uptimeNanoseconds < lastFailedConnect.uptimeNanoseconds + UInt64(server.configuration.reconnectBackoffMilliseconds) * 1_000_000 {
                throw PostgresError(kind: .connectionFailed, message: "database unavailable (retrying)")
            }
            do {
                let fresh = try Connection(server.configuration.connectionString, applicationName: "habit-serve",
                                           connectTimeoutSeconds: server.configuration.connectTimeoutSeconds,
                                           preparedStatements: server.configuration.preparedStatements)
                connection = fresh
                context = MethodContext(connection: fresh, settings: server.configuration.storeSettings)
                lastFailedConnect = nil
                return context!
            } catch {
                lastFailedConnect = .now()
                server.logger.warning("database connect failed", metadata: ["thread": "\(index)", "error": "\(error)"])
                throw error
            }
        }

        mutating func drop() {
            connection?.close()
            connection = nil
            context = nil
        }
    }
}

/// Collects the responses of one batch and writes them as one array when the last arrives.
final class BatchResponse: @unchecked Sendable {
    private let lock = NSLock()
    private var responses: [OutgoingResponse?]
    private var remaining: Int
    private let done: ([OutgoingResponse]) -> Void

    init(expected: Int, done: @escaping ([OutgoingResponse]) -> Void) {
        responses = Array(repeating: nil, count: expected)
        remaining = expected
        self.done = done
    }

    func fill(_ slot: Int, with response: OutgoingResponse) {
        lock.lock()
        responses[slot] = response
        remaining -= 1
        let finished = remaining == 0
        lock.unlock()
        if finished { done(responses.compactMap { $0 }) }
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
