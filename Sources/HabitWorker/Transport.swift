import Foundation
import JSONRPC
import Logging

/// Lines in, responses out: the worker's stdin and stdout. Reads request lines (answering
/// oversized ones itself), writes responses within the response byte budget, collects batch
/// responses, and notices when nobody reads stdout any more. Knows JSON-RPC messages, never
/// methods or connections.
final class WorkerTransport: @unchecked Sendable {
    /// Read by the leader only.
    private let reader: LineReader
    private let writer: LineWriter
    private let wake: WakePipe
    private let logger: Logger
    private let maxLineBytes: Int
    private let maxResponseBytes: Int
    private let outputBroken = LockedFlag()
    private let inputFailed = LockedFlag()

    /// `wake` ends reading like EOF when written to (signals, or stdout breaking).
    init(input: Int32, output: Int32, wake: WakePipe, maxLineBytes: Int, maxResponseBytes: Int, logger: Logger) {
        reader = LineReader(fileDescriptor: input, wakeFileDescriptor: wake.readEnd, maxLineBytes: maxLineBytes)
        writer = LineWriter(fileDescriptor: output)
        self.wake = wake
        self.logger = logger
        self.maxLineBytes = maxLineBytes
        self.maxResponseBytes = maxResponseBytes
    }

    /// Whether stdin or stdout failed: the worker then exits 1.
    var failed: Bool { outputBroken.isSet || inputFailed.isSet }

    // MARK: - Lines in

    /// Leader: the next request line, or nil once input ended (EOF, a wake byte, a read error
    /// or a broken stdout). Oversized lines are answered here and skipped.
    func nextLine() -> [UInt8]? {
        while !outputBroken.isSet {
            let event: LineEvent
            do {
                event = try reader.next()
            } catch {
                logger.error("stdin read failed", metadata: ["error": "\(error)"])
                inputFailed.set()
                return nil
            }
            switch event {
            case .endOfFile:
                return nil
            case .oversized(let byteCount):
                logger.warning("request line too long", metadata: ["bytes": "\(byteCount)", "limit": "\(maxLineBytes)"])
                write(.error(id: .null, error: .invalidRequest(
                    .lineTooLong, "request line of \(byteCount) bytes exceeds the limit of \(maxLineBytes) bytes", limit: maxLineBytes)))
            case .line(let bytes):
                return bytes
            }
        }
        return nil
    }

    /// Leader: whether more input was read than delivered (another line may be waiting).
    var hasBufferedInput: Bool { reader.hasBufferedInput }

    /// What becomes readable when input arrives: stdin and the wake pipe.
    var inputDescriptors: [Int32] { [reader.fileDescriptor, wake.readEnd] }

    // MARK: - Responses out

    /// Writes one response (a result past `maxResponseBytes` as `response_too_large`).
    /// `handOver`: see `write(line:beforeBlocking:)`.
    func write(_ response: OutgoingResponse, beforeBlocking handOver: LeadHandOver? = nil) {
        write(line: encode(response, limit: maxResponseBytes), beforeBlocking: handOver)
    }

    /// Writes one line. A leader writing its own job's response passes its `handOver`: a
    /// leader blocked on a full stdout would read no stdin, and a gateway that writes before it
    /// reads would deadlock. A line below PIPE_BUF (4,096) bytes into a writable pipe (a free
    /// page) that no other thread is writing to does not block; before anything else the lead
    /// is handed over (`LineWriter.writeLine(_:beforeBlocking:)` decides under its lock).
    func write(line bytes: [UInt8], beforeBlocking handOver: LeadHandOver?) {
        guard !outputBroken.isSet else { return }
        do {
            if let handOver, !handOver.done {
                try writer.writeLine(bytes, beforeBlocking: handOver.callAsFunction)
            } else {
                try writer.writeLine(bytes)
            }
        } catch {
            outputBroke(because: "\(error)")
        }
    }

    /// The response's bytes; a result past `limit` becomes the `response_too_large` error for
    /// its id instead (the result is never encoded beyond the limit). Errors are short and
    /// always go out as they are.
    private func encode(_ response: OutgoingResponse, limit: Int) -> [UInt8] {
        guard case .result = response else { return response.encoded }
        var bytes: [UInt8] = []
        if case .result(_, .encoded(let json)) = response { bytes.reserveCapacity(min(json.bytes.count + 64, max(limit, 0) + 64)) }
        if response.encode(into: &bytes, limit: limit) { return bytes }
        logger.warning("response too large", metadata: ["limit": "\(maxResponseBytes)"])
        return OutgoingResponse.error(id: response.id, error: DomainErrorCode.responseTooLarge.error(extra: [
            ("limit", .int(maxResponseBytes)),
        ])).encoded
    }

    /// Collects the `expected` responses of one batch and writes them as one line.
    func batch(expected: Int) -> BatchResponse {
        BatchResponse(expected: expected, budget: maxResponseBytes,
                      encode: { [self] response, limit in encode(response, limit: limit) },
                      done: { [self] bytes, handOver in write(line: bytes, beforeBlocking: handOver) })
    }

    // MARK: - A broken stdout

    /// Whether nobody can read an answer any more; then the worker stops (see `outputBroke`).
    /// `checkNow` asks the output itself (one poll) instead of waiting for a write to fail:
    /// for a batch element, whose answer is written only after the batch's last element.
    func isUnheard(checkNow: Bool) -> Bool {
        guard outputBroken.isSet || (checkNow && writer.isBroken) else { return false }
        outputBroke(because: "the reading end of stdout is gone")
        return true
    }

    /// Stops the worker once nobody can read its answers: logged once, and the leader, which
    /// may be blocked on stdin, is woken.
    private func outputBroke(because reason: String) {
        if outputBroken.set() {
            logger.error("stdout closed; stopping", metadata: ["error": "\(reason)"])
            wake.wake()
        }
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
    private let done: ([UInt8], LeadHandOver?) -> Void

    init(expected: Int, budget: Int, encode: @escaping (OutgoingResponse, Int) -> [UInt8],
         done: @escaping ([UInt8], LeadHandOver?) -> Void) {
        parts = Array(repeating: nil, count: expected)
        remaining = expected
        self.budget = budget - 2 // the brackets
        self.encode = encode
        self.done = done
    }

    static let alwaysSent = 256

    /// `handOver`: the lead of the thread filling the last part, which writes the line.
    func fill(_ slot: Int, with response: OutgoingResponse, beforeBlocking handOver: LeadHandOver?) {
        lock.lock()
        let bytes = encode(response, max(budget, Self.alwaysSent))
        budget -= bytes.count + 1 // and its comma
        parts[slot] = bytes
        remaining -= 1
        let finished = remaining == 0
        lock.unlock()
        // Only called for a batch with responses: a batch of notifications is never filled.
        if finished, let line = OutgoingResponse.batchLine(parts.map { $0 ?? [] }) { done(line, handOver) }
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
