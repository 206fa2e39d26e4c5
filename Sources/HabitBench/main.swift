// habit-bench: drives a spawned `habit serve` through its pipes, keeping a fixed number of
// requests in flight, and prints requests/s and latency percentiles as one JSON line.
//
//   habit-bench --binary .build/release/habit --database-url URL --method completions.set \
//               --in-flight 64 --seconds 10 --users 64 [--pool-size 4]
//
// Users and habits must exist (scripts/bench-worker.sh creates them): user n is
// md5('bench-user-n')::uuid with one habit md5('bench-habit-n')::uuid.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var binary = ".build/release/habit"
    var databaseURL = ""
    var method = "day.get"
    var inFlight = 1
    var seconds = 10.0
    var users = 64
    var poolSize = 4
    var date = "2026-11-02"
    var extra: [String] = []

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let flag = iterator.next() {
            let value = iterator.next() ?? ""
            switch flag {
            case "--binary": binary = value
            case "--database-url": databaseURL = value
            case "--method": method = value
            case "--in-flight": inFlight = Int(value) ?? 1
            case "--seconds": seconds = Double(value) ?? 10
            case "--users": users = Int(value) ?? 64
            case "--pool-size": poolSize = Int(value) ?? 4
            case "--date": date = value
            default: extra.append(flag); extra.append(value)
            }
        }
    }
}

/// md5-based ids, as the SQL side computes them: md5('bench-user-n')::uuid.
func md5UUID(_ text: String) -> String {
    var digest = [UInt8](repeating: 0, count: 16)
    MD5.hash(Array(text.utf8), into: &digest)
    let hex = digest.map { String(format: "%02x", $0) }.joined()
    let chars = Array(hex)
    return "\(String(chars[0..<8]))-\(String(chars[8..<12]))-\(String(chars[12..<16]))-\(String(chars[16..<20]))-\(String(chars[20..<32]))"
}

let options = Options(CommandLine.arguments)
let users = (1...options.users).map { md5UUID("bench-user-\($0)") }
let habits = (1...options.users).map { md5UUID("bench-habit-\($0)") }

func requestLine(id: Int) -> [UInt8] {
    let index = Int.random(in: 0..<users.count)
    let params: String
    switch options.method {
    case "completions.set":
        params = #"{"user_id":"\#(users[index])","template_id":"\#(habits[index])","date":"\#(options.date)","completed":\#(Bool.random())}"#
    case "day.get":
        params = #"{"user_id":"\#(users[index])","date":"\#(options.date)"}"#
    default:
        params = "{}"
    }
    return Array(#"{"jsonrpc":"2.0","id":\#(id),"method":"\#(options.method)","params":\#(params)}"#.utf8) + [10]
}

// Spawn the worker with pipes.
var toWorker: [Int32] = [0, 0], fromWorker: [Int32] = [0, 0]
pipe(&toWorker); pipe(&fromWorker)
var actions = posix_spawn_file_actions_t()
posix_spawn_file_actions_init(&actions)
posix_spawn_file_actions_adddup2(&actions, toWorker[0], 0)
posix_spawn_file_actions_adddup2(&actions, fromWorker[1], 1)
posix_spawn_file_actions_addclose(&actions, toWorker[1])
posix_spawn_file_actions_addclose(&actions, fromWorker[0])
let argv = [options.binary, "serve", "--database-url", options.databaseURL, "--pool-size", String(options.poolSize),
            "--max-in-flight", String(max(options.inFlight, 1)), "--log-level", "warning"] + options.extra
let cArgs = argv.map { strdup($0) } + [nil]
var pid: pid_t = 0
guard posix_spawn(&pid, options.binary, &actions, nil, cArgs, environ) == 0 else {
    FileHandle.standardError.write(Data("cannot start \(options.binary)\n".utf8)); exit(1)
}
close(toWorker[0]); close(fromWorker[1])

// One thread, like pgbench: write requests until `inFlight` are outstanding, then block
// reading responses. No hand-offs between threads, so the driver adds as little as possible
// to each request's latency. The worker writes `{"jsonrpc":"2.0","id":N,"result"…` or
// `…,"error"…`, so the id and the outcome are read straight from the bytes.
@Sendable func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
let prefix = Array(#"{"jsonrpc":"2.0","id":"#.utf8)
var sentAt = [UInt64](repeating: 0, count: 1 << 22)
var latencies: [UInt64] = []
latencies.reserveCapacity(1 << 20)
var errors = 0
var outstanding = 0
var nextID = 0
var buffer = [UInt8](repeating: 0, count: 1 << 16)
var outgoing: [UInt8] = []
/// The start of the current response line: the id and the outcome are in its first bytes.
var line: [UInt8] = []
let lineBytesKept = 64

func finishLine() {
    defer { line.removeAll(keepingCapacity: true) }
    guard line.count > prefix.count + 2, line.starts(with: prefix) else { return }
    var index = prefix.count
    var id = 0
    while index < line.count, line[index] >= 48, line[index] <= 57 {
        id = id * 10 + Int(line[index] - 48)
        index += 1
    }
    if index + 2 < line.count, line[index + 2] == UInt8(ascii: "e") { errors += 1 }
    if id > 0, id < sentAt.count, sentAt[id] != 0 {
        latencies.append(now() - sentAt[id])
        sentAt[id] = 0
        outstanding -= 1
    }
}

/// Keeps at most `lineBytesKept` bytes of each line.
func collect(_ bytes: ArraySlice<UInt8>) {
    let room = lineBytesKept - line.count
    if room > 0 { line.append(contentsOf: bytes.prefix(room)) }
}

let start = now()
let deadline = start + UInt64(options.seconds * 1e9)
var sending = true
while sending || outstanding > 0 {
    if sending && now() >= deadline {
        sending = false
        close(toWorker[1]) // EOF: the worker answers what it has and exits
    }
    // Requests that can go now leave in one write, as a gateway would send what it has.
    while sending && outstanding < options.inFlight && nextID + 1 < sentAt.count {
        nextID += 1
        outgoing.append(contentsOf: requestLine(id: nextID))
        sentAt[nextID] = now()
        outstanding += 1
    }
    if !outgoing.isEmpty {
        var written = 0
        while written < outgoing.count {
            let result = outgoing[written...].withUnsafeBytes { write(toWorker[1], $0.baseAddress, $0.count) }
            guard result > 0 else { break }
            written += result
        }
        outgoing.removeAll(keepingCapacity: true)
    }
    let count = read(fromWorker[0], &buffer, buffer.count)
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
if sending { close(toWorker[1]) }
var status: Int32 = 0
waitpid(pid, &status, 0)
let elapsed = Double(now() - start) / 1e9
let sorted = latencies.sorted()
func percentile(_ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1e6
}
let result = String(format: #"{"method":"%@","in_flight":%d,"requests":%d,"errors":%d,"seconds":%.3f,"rps":%.1f,"p50_ms":%.3f,"p99_ms":%.3f}"#,
                    options.method, options.inFlight, sorted.count, errors, elapsed, Double(sorted.count) / elapsed,
                    percentile(0.50), percentile(0.99))
print(result)
