import Foundation
import JSONRPC
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Per-call envelope members, put into `params` by the lowest layer (docs/protocol.md).
public struct CallOptions: Sendable, Equatable {
    /// `params.deadline_ms`: the worker does not start the request after this long from
    /// reading its line, and cancels it if it still runs (reason `deadline_exceeded`).
    public var deadlineMilliseconds: Int?
    /// `params.traceparent`: a W3C trace context; the worker logs its trace id.
    public var traceparent: String?
    /// What `HabitClient` may do when no answer comes (not sent to the worker; a single
    /// `WorkerConnection` never retries).
    public var retry: RetryPolicy

    public init(deadlineMilliseconds: Int? = nil, traceparent: String? = nil, retry: RetryPolicy = .never) {
        self.deadlineMilliseconds = deadlineMilliseconds
        self.traceparent = traceparent
        self.retry = retry
    }

    /// A deadline as a `Duration`, rounded up to whole milliseconds (at least 1).
    public init(deadline: Duration?, traceparent: String? = nil, retry: RetryPolicy = .never) {
        self.traceparent = traceparent
        self.retry = retry
        if let deadline {
            let (seconds, attoseconds) = deadline.components
            let milliseconds = seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            deadlineMilliseconds = Int(max(1, milliseconds))
        }
    }

    var isEmpty: Bool { deadlineMilliseconds == nil && traceparent == nil }
}

/// One stdout line that answered a call: the bytes as the worker wrote them, parsed only
/// when asked (the reader thread only finds the id).
public struct ResponseLine: Sendable {
    public let bytes: [UInt8]
    /// `r` or `e` when the line started `{"jsonrpc":"2.0","id":N,"r…`/`"e…` (how the worker writes).
    let kindHint: UInt8?

    /// Whether this is an error response; cheap for lines in the worker's own member order.
    public var isError: Bool {
        if let kindHint { return kindHint == UInt8(ascii: "e") }
        return (try? JSONValue(parsing: bytes))?["error"] != nil
    }

    /// The `result`, or `.rpc` for an error response.
    public func result() throws(HabitClientError) -> JSONValue {
        let json: JSONValue
        do {
            json = try JSONValue(parsing: bytes)
        } catch {
            throw .malformedResponse(line: String(decoding: bytes.prefix(300), as: UTF8.self), problem: "\(error)")
        }
        if let result = json["result"] { return result }
        if let error = json["error"], let code = error["code"]?.intValue, let message = error["message"]?.stringValue {
            throw .rpc(RPCErrorResponse(code: code, message: message, data: error["data"]))
        }
        throw .malformedResponse(line: String(decoding: bytes.prefix(300), as: UTF8.self), problem: "neither result nor error")
    }
}

/// One spawned worker (`habit serve`) and the requests in flight on it.
///
/// * Requests get integer ids from 1 up; answers are matched by id, in whatever order the
///   worker writes them. Any number of requests may be in flight: the worker applies its
///   `--max-in-flight` by not reading stdin, and a write then blocks until it reads again.
/// * Lines are written whole by whichever caller finds the pipe free, together with the
///   lines queued meanwhile (no writer thread, no hand-off on the way out).
/// * stdout and stderr are read by one thread each, with blocking reads. A stdout line that
///   answers a pending call completes it on the stdout thread; any other line (a
///   notification, or the answer to something written with `sendRaw`) goes to
///   `Handlers.otherLine`, each stderr line to `Handlers.stderrLine`.
/// * When stdout ends (the worker exited or was killed), every call still in flight fails
///   with `unknownOutcome`; later sends fail with `notSent`. A connection is not restarted:
///   `HabitClient` replaces dead ones.
public final class WorkerConnection: @unchecked Sendable { // mutable state lives in `core`, under its lock
    public struct Options: Sendable {
        /// The worker's `--max-line-bytes` (default 1 MiB, WorkerConfiguration.maxLineBytes):
        /// a longer request line is refused before anything is written.
        public var maxLineBytes: Int = 1_048_576
        /// Close the read end of the worker's stdout at once (tests of a client that went away).
        public var closeOutput = false
        public init(maxLineBytes: Int = 1_048_576, closeOutput: Bool = false) {
            self.maxLineBytes = maxLineBytes
            self.closeOutput = closeOutput
        }
    }

    public struct Handlers: Sendable {
        /// Each stderr line (without "\n"), on the stderr thread, in order.
        public var stderrLine: (@Sendable ([UInt8]) -> Void)?
        /// After the last stderr line.
        public var stderrEnded: (@Sendable () -> Void)?
        /// Each stdout line that answers no pending call, on the stdout thread, in order.
        public var otherLine: (@Sendable ([UInt8]) -> Void)?
        /// After stdout ended and the calls in flight were failed.
        public var outputEnded: (@Sendable () -> Void)?

        public init(stderrLine: (@Sendable ([UInt8]) -> Void)? = nil, stderrEnded: (@Sendable () -> Void)? = nil,
                    otherLine: (@Sendable ([UInt8]) -> Void)? = nil, outputEnded: (@Sendable () -> Void)? = nil) {
            self.stderrLine = stderrLine
            self.stderrEnded = stderrEnded
            self.otherLine = otherLine
            self.outputEnded = outputEnded
        }
    }

    public typealias Completion = @Sendable (Result<ResponseLine, HabitClientError>) -> Void

    public let command: WorkerCommand
    public let options: Options
    public var pid: pid_t { process.pid }
    private let process: ChildProcess
    private let core: Core

    /// Spawns the worker.
    public init(command: WorkerCommand, options: Options = Options(), handlers: Handlers = Handlers()) throws(HabitClientError) {
        self.command = command
        self.options = options
        let core = Core(handlers: handlers)
        self.core = core
        let stdoutLines = LockedSplitter()
        let stderrLines = LockedSplitter()
        process = try ChildProcess(
            command: command, closeOutput: options.closeOutput,
            onStdout: { bytes in
                // Requests sent by completions of this chunk's answers leave in one write at its end.
                core.cork()
                stdoutLines.append(bytes) { core.received($0) }
                core.uncork()
            },
            onStdoutEnd: {
                stdoutLines.finish { core.received($0) }
                core.outputEnded()
            },
            onStderr: { bytes in
                if let handler = handlers.stderrLine { stderrLines.append(bytes) { handler(Array($0)) } }
            },
            onStderrEnd: {
                if let handler = handlers.stderrLine { stderrLines.finish { handler(Array($0)) } }
                handlers.stderrEnded?()
            })
        core.setProcess(process)
    }

    deinit {
        process.closeInput()
    }

    // MARK: - Calls

    /// Sends a request and calls `completion` once: with the answer (on the stdout thread),
    /// or with `unknownOutcome`/`notSent` if none can come. Returns the request's id.
    /// A completion must not block. One that sends the next request (a load generator) has
    /// it written on the stdout thread, together with the others sent while that chunk of
    /// answers is handed out; keep such requests within the worker's `--max-in-flight`, or
    /// the write waits for a worker that waits for its answers to be read.
    /// Throws, sending nothing, if the line would exceed `options.maxLineBytes` or the
    /// worker's output already ended.
    @discardableResult
    public func send(method: String, params: JSONObject? = nil, options callOptions: CallOptions = CallOptions(),
                     completion: @escaping Completion) throws(HabitClientError) -> Int {
        let id = core.reserveID()
        let line = Self.requestLine(id: id, method: method, params: params, options: callOptions)
        guard line.count - 1 <= options.maxLineBytes else {
            throw .requestTooLarge(method: method, bytes: line.count - 1, limit: options.maxLineBytes)
        }
        try core.register(id: id, method: method, completion: completion)
        core.enqueue(id: id, line: line)
        return id
    }

    /// Sends a request and waits for its answer: the result, or `HabitClientError.rpc` for
    /// an error answer. Cancelling the calling task stops the wait with `unknownOutcome`
    /// (`.cancelled`); the request may still run. Throws only `HabitClientError` (and
    /// `CancellationError` if the task was cancelled before anything was sent).
    public func call(method: String, params: JSONObject? = nil, options callOptions: CallOptions = CallOptions()) async throws -> JSONValue {
        try await response(method: method, params: params, options: callOptions).result()
    }

    /// `call`, returning the answer's line unparsed.
    public func response(method: String, params: JSONObject? = nil, options callOptions: CallOptions = CallOptions()) async throws -> ResponseLine {
        let token = CancelToken()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ResponseLine, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                do {
                    let id = try send(method: method, params: params, options: callOptions) { continuation.resume(with: $0) }
                    if token.sent(id: id) { core.abandon(id: id) }
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            if let id = token.cancel() { core.abandon(id: id) }
        }
    }

    /// Calls in flight (sent, not answered).
    public var inFlight: Int { core.pendingCount }

    // MARK: - Raw access (tests, hostile input)

    /// Writes exactly these bytes (no newline added), blocking while the pipe is full.
    /// Answers to them arrive at `Handlers.otherLine`. Use ids the connection does not
    /// (it numbers its own calls 1, 2, 3…), e.g. strings.
    public func sendRaw(_ bytes: [UInt8]) throws(HabitClientError) {
        let (_, error) = bytes.withUnsafeBytes { process.writeAll($0) }
        if let error { throw .notSent(method: "(raw)", errno: error) }
    }

    /// Closes the worker's stdin: it answers what it accepted and exits. Idempotent.
    public func closeInput() {
        process.closeInput()
    }

    // MARK: - The process

    /// Exit status (128 + signal if a signal killed it), nil while it runs.
    public var exitStatus: Int32? { process.exitMonitor.status }

    public var isRunning: Bool { exitStatus == nil }

    /// Whether stdout has ended (every call in flight was failed then).
    public var outputHasEnded: Bool { core.hasEnded }

    /// Waits (blocking this thread) for the exit; nil if `timeout` passed first.
    public func waitForExit(timeout: TimeInterval) -> Int32? {
        process.exitMonitor.wait(deadline: Date(timeIntervalSinceNow: timeout))
    }

    /// Calls `observer` once the process exited (at once if it has).
    public func onExit(_ observer: @escaping @Sendable (Int32) -> Void) {
        process.exitMonitor.onExit(observer)
    }

    /// Waits for the exit without blocking a thread.
    public func exited() async -> Int32 {
        await withCheckedContinuation { continuation in onExit { continuation.resume(returning: $0) } }
    }

    /// Waits until stdout ended and every call in flight was answered or failed.
    public func outputEnd() async {
        await withCheckedContinuation { continuation in core.onOutputEnd { continuation.resume() } }
    }

    /// Calls that end unanswered from now on fail with `unknownOutcome(.closed)` (`HabitClient.close`).
    func markClosing() { core.markClosing() }

    /// Sends `signal` unless the process was already reaped (never a recycled pid).
    @discardableResult
    public func terminate(signal: Int32 = SIGTERM) -> Bool {
        process.sendSignal(signal)
    }

    // MARK: - Encoding

    /// The line `send` writes: `{"jsonrpc":"2.0","id":id,"method":method,"params":{…}}` and
    /// "\n"; the options' members are appended to params (an object is made if there were none).
    public static func requestLine(id: Int, method: String, params: JSONObject?, options: CallOptions) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(128)
        line.append(contentsOf: #"{"jsonrpc":"2.0","id":"#.utf8)
        line.append(contentsOf: String(id).utf8)
        line.append(contentsOf: #","method":"#.utf8)
        JSONValue.writeString(method, into: &line)
        var params = params
        if !options.isEmpty {
            var object = params ?? JSONObject()
            if let deadline = options.deadlineMilliseconds { object["deadline_ms"] = .int(deadline) }
            if let traceparent = options.traceparent { object["traceparent"] = .string(traceparent) }
            params = object
        }
        if let params {
            line.append(contentsOf: #","params":"#.utf8)
            JSONValue.object(params).write(into: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        return line
    }

    private static let responsePrefix = Array(#"{"jsonrpc":"2.0","id":"#.utf8)

    /// The integer id and `r`/`e` of a line written as the worker writes responses.
    static func fastID(_ line: UnsafeRawBufferPointer) -> (id: Int, kind: UInt8)? {
        let prefix = responsePrefix
        guard line.count > prefix.count + 4, line.starts(with: prefix) else { return nil }
        var index = prefix.count
        var id = 0
        var digits = 0
        while index < line.count, line[index] >= 48, line[index] <= 57, digits < 18 {
            id = id * 10 + Int(line[index] - 48)
            index += 1
            digits += 1
        }
        guard digits > 0, index + 2 < line.count, line[index] == UInt8(ascii: ","), line[index + 1] == UInt8(ascii: "\"") else { return nil }
        let kind = line[index + 2]
        guard kind == UInt8(ascii: "r") || kind == UInt8(ascii: "e") else { return nil }
        return (id, kind)
    }

    /// The integer id of any JSON-RPC response line, parsing it whole.
    static func parsedID(_ line: UnsafeRawBufferPointer) -> Int? {
        guard let json = try? JSONParser.parse(line), json["result"] != nil || json["error"] != nil else { return nil }
        return json["id"]?.intValue
    }
}

// MARK: - Shared state

extension WorkerConnection {
    /// The calls in flight, the outgoing queue and the end of output, under one lock.
    final class Core: @unchecked Sendable { // every var under `lock`
        private let lock = NSLock()
        private let handlers: Handlers
        private var pid: pid_t = 0
        private var process: ChildProcess?
        /// The stdout thread while it hands out one chunk's answers: lines its completions send
        /// are queued then and leave in one write at the chunk's end. Other threads write
        /// their own lines at once (the stdout thread must never wait on a full stdin pipe
        /// for them: the worker may be waiting for its answers to be read).
        private var corkedBy: pthread_t?
        private var nextID = 1
        private var pending: [Int: (method: String, completion: Completion)] = [:]
        /// Ids whose callers stopped waiting (cancelled): their late answers are dropped.
        private var abandoned: Set<Int> = []
        private var ended = false
        private var closing = false
        private var endObservers: [@Sendable () -> Void] = []
        private var inputBroken: Int32?
        private var outgoing: [UInt8] = []
        private var outgoingIDs: [(id: Int, end: Int)] = []
        private var spare: [UInt8] = []
        private var writing = false

        init(handlers: Handlers) {
            self.handlers = handlers
        }

        func setProcess(_ process: ChildProcess) {
            lock.withLock {
                self.process = process
                pid = process.pid
            }
        }

        func cork() {
            let me = pthread_self()
            lock.withLock { corkedBy = me }
        }

        /// Writes what was queued while corked (unless another thread is writing it).
        func uncork() {
            lock.lock()
            corkedBy = nil
            guard !writing, !outgoing.isEmpty else {
                lock.unlock()
                return
            }
            writeQueue()
        }

        var pendingCount: Int { lock.withLock { pending.count } }
        var hasEnded: Bool { lock.withLock { ended } }

        func reserveID() -> Int {
            lock.withLock {
                defer { nextID += 1 }
                return nextID
            }
        }

        func register(id: Int, method: String, completion: @escaping Completion) throws(HabitClientError) {
            lock.lock()
            defer { lock.unlock() }
            if ended { throw .notSent(method: method, errno: EPIPE) }
            if let inputBroken { throw .notSent(method: method, errno: inputBroken) }
            pending[id] = (method, completion)
        }

        /// Queues `line`; if no one is writing (and the stdout thread is not handing out
        /// answers), writes the queue until it is empty.
        func enqueue(id: Int, line: [UInt8]) {
            lock.lock()
            outgoing.append(contentsOf: line)
            outgoingIDs.append((id, outgoing.count))
            if writing {
                lock.unlock()
                return
            }
            if let corkedBy, pthread_equal(corkedBy, pthread_self()) != 0 {
                lock.unlock()
                return
            }
            writeQueue()
        }

        /// Called with `lock` held and `writing` false; returns with it released.
        private func writeQueue() {
            guard let process else {
                lock.unlock()
                return
            }
            writing = true
            while !outgoing.isEmpty {
                var batch = outgoing
                let ids = outgoingIDs
                outgoing = spare
                outgoing.removeAll(keepingCapacity: true)
                outgoingIDs = []
                lock.unlock()
                let (written, error) = batch.withUnsafeBytes { process.writeAll($0) }
                var failed: [(Completion, HabitClientError)] = []
                lock.lock()
                if let error {
                    inputBroken = error
                    var start = 0
                    for (id, end) in ids {
                        defer { start = end }
                        guard end > written, let call = pending.removeValue(forKey: id) else { continue }
                        failed.append((call.completion, start >= written
                            ? .notSent(method: call.method, errno: error)
                            : .unknownOutcome(method: call.method, reason: .writeFailed(errno: error))))
                    }
                    // Lines queued meanwhile will not be written either.
                    for (id, _) in outgoingIDs {
                        if let call = pending.removeValue(forKey: id) { failed.append((call.completion, .notSent(method: call.method, errno: error))) }
                    }
                    outgoing.removeAll()
                    outgoingIDs = []
                }
                batch.removeAll(keepingCapacity: true)
                spare = batch
                if !failed.isEmpty {
                    lock.unlock()
                    for (completion, error) in failed { completion(.failure(error)) }
                    lock.lock()
                }
            }
            writing = false
            lock.unlock()
        }

        /// A stdout line: completes its call, or goes to `otherLine`.
        func received(_ line: UnsafeRawBufferPointer) {
            let fast = WorkerConnection.fastID(line)
            lock.lock()
            if pending.isEmpty && abandoned.isEmpty {
                lock.unlock()
                handlers.otherLine?(Array(line))
                return
            }
            lock.unlock()
            let id = fast?.id ?? WorkerConnection.parsedID(line)
            lock.lock()
            guard let id else {
                lock.unlock()
                handlers.otherLine?(Array(line))
                return
            }
            if let call = pending.removeValue(forKey: id) {
                lock.unlock()
                call.completion(.success(ResponseLine(bytes: Array(line), kindHint: fast?.kind)))
            } else if abandoned.remove(id) != nil {
                lock.unlock()
            } else {
                lock.unlock()
                handlers.otherLine?(Array(line))
            }
        }

        /// Stops waiting for `id`: its caller gets `unknownOutcome(.cancelled)` now.
        func abandon(id: Int) {
            lock.lock()
            guard let call = pending.removeValue(forKey: id) else {
                lock.unlock()
                return
            }
            if !ended { abandoned.insert(id) }
            lock.unlock()
            call.completion(.failure(.unknownOutcome(method: call.method, reason: .cancelled)))
        }

        /// stdout ended: nothing more will be answered.
        func outputEnded() {
            lock.lock()
            ended = true
            let calls = pending.values
            pending = [:]
            abandoned = []
            let reason: HabitClientError.UnknownOutcomeReason = closing ? .closed : .workerExited(pid: pid)
            let observers = endObservers
            endObservers = []
            lock.unlock()
            for call in calls { call.completion(.failure(.unknownOutcome(method: call.method, reason: reason))) }
            handlers.outputEnded?()
            for observer in observers { observer() }
        }

        /// From now on, calls that end unanswered were stopped by `close()`.
        func markClosing() { lock.withLock { closing = true } }

        func onOutputEnd(_ observer: @escaping @Sendable () -> Void) {
            lock.lock()
            if ended {
                lock.unlock()
                observer()
                return
            }
            endObservers.append(observer)
            lock.unlock()
        }
    }

    /// Bridges a task's cancellation and the id its request got.
    final class CancelToken: @unchecked Sendable { // vars under `lock`
        private let lock = NSLock()
        private var id: Int?
        private var cancelled = false

        /// Records the id; true if the task was cancelled meanwhile (abandon it now).
        func sent(id: Int) -> Bool {
            lock.withLock {
                self.id = id
                return cancelled
            }
        }

        /// Marks cancelled; the id to abandon if the request was already sent.
        func cancel() -> Int? {
            lock.withLock {
                cancelled = true
                return id
            }
        }
    }
}

/// A `LineSplitter` used from one reader thread (the lock only satisfies Sendable checking).
final class LockedSplitter: @unchecked Sendable {
    private let lock = NSLock()
    private var splitter = LineSplitter()

    func append(_ bytes: UnsafeRawBufferPointer, _ line: (UnsafeRawBufferPointer) -> Void) {
        lock.withLock { splitter.append(bytes, line) }
    }

    func finish(_ line: (UnsafeRawBufferPointer) -> Void) {
        lock.withLock { splitter.finish(line) }
    }
}
