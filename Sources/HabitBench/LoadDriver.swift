import Foundation
import HabitClient
import JSONRPC

/// A spawned worker and the loop that keeps `inFlight` requests outstanding on it, through
/// HabitClient's `WorkerConnection` (the library a gateway uses), at its callback layer.
///
/// Like pgbench, no thread hands work to another on the way: each answer completes on the
/// connection's stdout thread, which records its latency and sends the next request right
/// there. The answer's outcome comes from its first bytes (`ResponseLine.isError`); the rest
/// of the line is never parsed.
final class LoadDriver: @unchecked Sendable { // vars under `condition`
    struct Result {
        var latencies: [UInt64]
        var errors: Int
        var seconds: Double

        /// The latency at `p` (0…1) in milliseconds.
        func percentile(_ p: Double) -> Double {
            let sorted = latencies.sorted()
            guard !sorted.isEmpty else { return 0 }
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
        }
    }

    private let connection: WorkerConnection
    private let inFlight: Int
    private let requests: RequestMaker
    private let condition = NSCondition()
    private var latencies: [UInt64] = []
    private var errors = 0
    private var outstanding = 0
    private var deadline: UInt64 = 0

    /// Spawns `binary arguments…`; its stderr lines are copied to this process's stderr.
    init(binary: String, arguments: [String], inFlight: Int, requests: RequestMaker) throws {
        self.inFlight = inFlight
        self.requests = requests
        connection = try WorkerConnection(
            command: WorkerCommand(executable: binary, arguments: arguments),
            handlers: .init(stderrLine: { line in FileHandle.standardError.write(Data(line + [0x0A])) }))
        latencies.reserveCapacity(1 << 20)
    }

    /// Sends for `seconds`, then closes the worker's stdin (EOF: it answers what it has and
    /// exits), waits for the answers still outstanding and for the worker.
    func run(seconds: Double) -> Result {
        let start = Self.now()
        condition.withLock {
            deadline = start + UInt64(seconds * 1e9)
            outstanding = inFlight
        }
        for _ in 0..<inFlight { send() }
        condition.lock()
        while outstanding > 0 { condition.wait() }
        let result = Result(latencies: latencies, errors: errors, seconds: Double(Self.now() - start) / 1e9)
        condition.unlock()
        connection.closeInput()
        _ = connection.waitForExit(timeout: 60)
        return result
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

extension ResponseLine {
    /// A `sync.push` answer is a result even when a mutation failed: its outcome is an
    /// `"error"` member inside `results` (the bench's mutations never fail when all is well).
    var carriesAnError: Bool {
        let needle = Array(#""error":"#.utf8)
        return bytes.count >= needle.count && (0...(bytes.count - needle.count)).contains { bytes[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}

extension LoadDriver {

    /// Sends one request in a place already counted in `outstanding`; its answer sends the next.
    private func send() {
        let (method, params) = requests.next()
        let sentAt = Self.now()
        do {
            try connection.send(method: method, params: params) { [self] answer in finished(sentAt: sentAt, answer) }
        } catch {
            FileHandle.standardError.write(Data("habit-bench: \(error)\n".utf8))
            finished(sentAt: sentAt, .failure(error))
        }
    }

    /// Records an answer; before the deadline its place goes to the next request at once.
    private func finished(sentAt: UInt64, _ answer: Swift.Result<ResponseLine, HabitClientError>) {
        let now = Self.now()
        condition.lock()
        switch answer {
        case .success(let line):
            latencies.append(now - sentAt)
            if line.isError || (requests.answersCarryOutcomes && line.carriesAnError) { errors += 1 }
        case .failure:
            errors += 1
            deadline = 0 // the worker is gone: stop sending
        }
        let again = now < deadline
        if !again {
            outstanding -= 1
            if outstanding == 0 { condition.broadcast() }
        }
        condition.unlock()
        if again { send() }
    }
}
