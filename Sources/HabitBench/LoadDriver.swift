import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A spawned worker and the loop that keeps `inFlight` requests outstanding on it.
///
/// One thread, like pgbench: write requests until `inFlight` are outstanding, then block
/// reading responses. No hand-offs between threads, so the driver adds as little as possible
/// to each request's latency. The worker writes `{"jsonrpc":"2.0","id":N,"result"…` or
/// `…,"error"…`, so the id and the outcome are read straight from the bytes.
final class LoadDriver {
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

    private let pid: pid_t
    private let toWorker: Int32
    private let fromWorker: Int32
    private let inFlight: Int
    private let requests: RequestMaker

    private static let prefix = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
    /// Bytes kept of each response line: the id and the outcome are in its first bytes.
    private static let lineBytesKept = 64

    private var sentAt = [UInt64](repeating: 0, count: 1 << 22)
    private var latencies: [UInt64] = []
    private var errors = 0
    private var outstanding = 0
    /// The start of the current response line.
    private var line: [UInt8] = []

    /// Spawns `binary arguments…` with its stdin and stdout on pipes (stderr inherited).
    init(binary: String, arguments: [String], inFlight: Int, requests: RequestMaker) throws {
        self.inFlight = inFlight
        self.requests = requests
        var input: [Int32] = [0, 0], output: [Int32] = [0, 0]
        guard pipe(&input) == 0, pipe(&output) == 0 else { throw SpawnError(binary: binary, code: errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_addclose(&actions, input[1])
        posix_spawn_file_actions_addclose(&actions, output[0])
        let argv = ([binary] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, binary, &actions, nil, argv, environ)
        close(input[0])
        close(output[1])
        guard status == 0 else {
            close(input[1])
            close(output[0])
            throw SpawnError(binary: binary, code: status)
        }
        pid = child
        toWorker = input[1]
        fromWorker = output[0]
        latencies.reserveCapacity(1 << 20)
    }

    struct SpawnError: Error, CustomStringConvertible {
        let binary: String
        let code: Int32
        var description: String { "cannot start \(binary): \(String(cString: strerror(code)))" }
    }

    /// Sends for `seconds`, then closes the worker's stdin (EOF: it answers what it has and
    /// exits), reads the remaining responses and waits for the worker.
    func run(seconds: Double) -> Result {
        let start = Self.now()
        let deadline = start + UInt64(seconds * 1e9)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var outgoing: [UInt8] = []
        var nextID = 0
        var sending = true
        while sending || outstanding > 0 {
            if sending && Self.now() >= deadline {
                sending = false
                close(toWorker)
            }
            // Requests that can go now leave in one write, as a gateway would send what it has.
            while sending && outstanding < inFlight && nextID + 1 < sentAt.count {
                nextID += 1
                outgoing.append(contentsOf: requests.line(id: nextID))
                sentAt[nextID] = Self.now()
                outstanding += 1
            }
            if !outgoing.isEmpty {
                var written = 0
                while written < outgoing.count {
                    let result = outgoing[written...].withUnsafeBytes { write(toWorker, $0.baseAddress, $0.count) }
                    guard result > 0 else { break }
                    written += result
                }
                outgoing.removeAll(keepingCapacity: true)
            }
            let count = read(fromWorker, &buffer, buffer.count)
            if count <= 0 { break }
            var lineStart = 0
            while lineStart < count {
                let newline: Int? = buffer.withUnsafeBytes { bytes in
                    memchr(bytes.baseAddress! + lineStart, 10, count - lineStart).map { UnsafeRawPointer($0) - bytes.baseAddress! }
                }
                guard let newline else {
                    collect(buffer[lineStart..<count])
                    break
                }
                collect(buffer[lineStart..<newline])
                finishLine()
                lineStart = newline + 1
            }
        }
        if sending { close(toWorker) }
        close(fromWorker)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return Result(latencies: latencies, errors: errors, seconds: Double(Self.now() - start) / 1e9)
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Keeps at most `lineBytesKept` bytes of each line.
    private func collect(_ bytes: ArraySlice<UInt8>) {
        let room = Self.lineBytesKept - line.count
        if room > 0 { line.append(contentsOf: bytes.prefix(room)) }
    }

    private func finishLine() {
        defer { line.removeAll(keepingCapacity: true) }
        let prefix = Self.prefix
        guard line.count > prefix.count + 2, line.starts(with: prefix) else { return }
        var index = prefix.count
        var id = 0
        while index < line.count, line[index] >= 48, line[index] <= 57 {
            id = id * 10 + Int(line[index] - 48)
            index += 1
        }
        if index + 2 < line.count, line[index + 2] == UInt8(ascii: "e") { errors += 1 }
        if id > 0, id < sentAt.count, sentAt[id] != 0 {
            latencies.append(Self.now() - sentAt[id])
            sentAt[id] = 0
            outstanding -= 1
        }
    }
}
