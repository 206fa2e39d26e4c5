import Foundation

// Response collection: stdout read line by line (`StdoutLines`), requests sent with ids,
// and responses matched to them; responses read while waiting for another id are buffered
// in order. The checks each line must pass are `WorkerResponse`'s.
extension WorkerProcess {
    // MARK: - Requests

    /// Sends `{"jsonrpc":"2.0","id":id,"method":method[,"params":params]}`.
    public func sendRequest(_ method: String, params: WireJSON? = nil, id: WireJSON) throws {
        try send(Self.envelope(method: method, params: params, id: id))
    }

    /// Sends a notification (a request without "id").
    public func notify(_ method: String, params: WireJSON? = nil) throws {
        try send(Self.envelope(method: method, params: params, id: nil))
    }

    public static func envelope(method: String, params: WireJSON?, id: WireJSON?) -> WireJSON {
        var members: [WireJSON.Member] = [.init("jsonrpc", "2.0")]
        if let id { members.append(.init("id", id)) }
        members.append(.init("method", .string(method)))
        if let params { members.append(.init("params", params)) }
        return .object(members)
    }

    /// A fresh id ("auto-N") that no test writes by hand.
    public func automaticID() -> WireJSON {
        stateLock.withLock {
            defer { nextAutomaticID += 1 }
            return .string("auto-\(nextAutomaticID)")
        }
    }

    // MARK: - Reading

    public enum OutputEvent: Sendable, Equatable {
        case line([UInt8])
        /// stdout reached EOF (the worker closed it or exited) and every line was read.
        case endOfOutput
        /// The hang guard expired.
        case timedOut
    }

    /// The next stdout line (without "\n"), bypassing the response buffer.
    public func nextOutput(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> OutputEvent {
        stdoutLines.next(deadline: Date(timeIntervalSinceNow: timeout))
    }

    /// The next stdout line as text, or nil at end of output or when the hang guard expires.
    public func readLine(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> String? {
        if case .line(let bytes) = nextOutput(timeout: timeout) { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    /// Responses read ahead by `response(id:)` and not yet returned.
    public var bufferedResponses: [WorkerResponse] { stateLock.withLock { pending } }

    /// The next response: a buffered one first, else the next stdout line, which must be a
    /// well-formed JSON-RPC response object or batch array (else this throws).
    public func readResponse(timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> WorkerResponse {
        if let buffered = stateLock.withLock({ pending.isEmpty ? nil : pending.removeFirst() }) { return buffered }
        return try readLineResponse(timeout: timeout)
    }

    private func readLineResponse(timeout: TimeInterval) throws -> WorkerResponse {
        switch nextOutput(timeout: timeout) {
        case .line(let bytes):
            return try WorkerResponse(line: bytes)
        case .endOfOutput:
            throw WorkerProcessError.endOfOutput("while waiting for a response", stderrTail: stderrTail())
        case .timedOut:
            throw WorkerProcessError.timedOut("no response within \(timeout) s", stderrTail: stderrTail())
        }
    }

    /// The response (not a batch) with this id, buffering every other response read meanwhile.
    public func response(id: WireJSON, timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> WorkerResponse {
        let found: WorkerResponse? = stateLock.withLock {
            guard let index = pending.firstIndex(where: { !$0.isBatch && $0.id == id }) else { return nil }
            return pending.remove(at: index)
        }
        if let found { return found }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let response = try readLineResponse(timeout: max(0, deadline.timeIntervalSinceNow))
            if !response.isBatch && response.id == id { return response }
            stateLock.withLock { pending.append(response) }
        }
    }

    /// Sends a request and waits for the response with its id (others are buffered).
    /// Without `id`, a fresh automatic id is used.
    @discardableResult
    public func request(_ method: String, params: WireJSON? = nil, id: WireJSON? = nil,
                        timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> WorkerResponse {
        let id = id ?? automaticID()
        try sendRequest(method, params: params, id: id)
        return try response(id: id, timeout: timeout)
    }

    /// Reads until stdout ends; returns the lines seen on the way (none, if the worker said
    /// nothing more). Throws if the hang guard expires first.
    public func remainingOutput(timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> [String] {
        var lines = bufferedResponses.map(\.raw)
        stateLock.withLock { pending.removeAll() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            switch nextOutput(timeout: max(0, deadline.timeIntervalSinceNow)) {
            case .line(let bytes): lines.append(String(decoding: bytes, as: UTF8.self))
            case .endOfOutput: return lines
            case .timedOut: throw WorkerProcessError.timedOut("stdout did not end within \(timeout) s", stderrTail: stderrTail())
            }
        }
    }
}

/// stdout lines (split by `WorkerConnection`'s reader), handed out in order.
final class StdoutLines: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [[UInt8]] = []
    private var head = 0
    private var finished = false

    func append(line: [UInt8]) {
        condition.lock()
        defer { condition.unlock() }
        lines.append(line)
        condition.broadcast()
    }

    func finish() {
        condition.lock()
        defer { condition.unlock() }
        finished = true
        condition.broadcast()
    }

    func next(deadline: Date) -> WorkerProcess.OutputEvent {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if head < lines.count {
                let line = lines[head]
                head += 1
                return .line(line)
            }
            if finished { return .endOfOutput }
            if !condition.wait(until: deadline) {
                if head < lines.count || finished { continue }
                return .timedOut
            }
        }
    }
}
