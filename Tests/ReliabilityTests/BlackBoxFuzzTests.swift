import Foundation
import JSONRPC
import PostgresClient
import TestSupport
import Testing

/// Black-box fuzz of the spawned worker against a real database: hostile lines from
/// `HostileLineGenerator`, written in windows of 1,000, every response matched.
///
/// What must hold, whatever the input:
/// * the worker never exits (and exits 0 at EOF at the end), never writes a malformed line;
/// * exactly one response per request with an id — single or inside its batch's array, batch
///   entries in element order — and nothing for notifications or blank lines. Which lines
///   expect which answer is computed in-process by the worker's own framing rules and
///   `RPCCodec` (the oracle); errors the codec decides must come back with the same code and
///   data;
/// * no request that writes succeeds (they are all invalid by construction), no -32603, no
///   -32010/-32011, no "internal error"/"database error" in the log (notifications included);
/// * 0 rows changed: table checksums before and after are equal;
/// * after every window the worker still answers (system.health, and a read with known rows).
///
/// Size: RELIABILITY_FUZZ_LINES (default 3,000; scripts/reliability.sh blackbox: 100,000),
/// seed RELIABILITY_SEED (default 20261122).
@Suite("Reliability: black-box fuzz of habit serve", .serialized)
struct BlackBoxFuzzTests {
    static let maxLineBytes = 1_048_576

    @Test("hostile lines: 0 crashes, one response per request with an id, 0 rows changed")
    func hostileLines() throws {
        let total = Scale.int("FUZZ_LINES", default: 3_000)
        let seed = Scale.uint64("SEED", default: 20_261_122)
        let window = 1_000
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            // Debug logging: every rejected line is logged too, and every log line must be JSON.
            try WorkerProcess.withServe(databaseURL: try database.workerURL(), arguments: ["--pool-size", "4", "--log-level", "debug"]) { worker in
                let fixture = try Fixture.create(worker)
                let before = try admin.tableChecksums()
                var generator = HostileLineGenerator(seed: seed, fixture: fixture)
                var stats = FuzzStats()
                let started = monotonicSeconds()

                var sent = 0
                var windowIndex = 0
                while sent < total {
                    let count = min(window, total - sent)
                    var bytes: [UInt8] = []
                    var expected = ExpectedResponses()
                    for _ in 0..<count {
                        let line = generator.next()
                        stats.kinds[line.kind, default: 0] += 1
                        stats.bytes += line.text.count + 1
                        expected.add(line: line.text, maxLineBytes: Self.maxLineBytes)
                        bytes += line.text
                        bytes.append(0x0A)
                    }
                    try worker.sendRaw(bytes)
                    sent += count
                    for _ in 0..<expected.lineCount {
                        let response = try worker.readResponse(timeout: 120)
                        stats.responseLines += 1
                        expected.match(response, into: &stats)
                    }
                    #expect(expected.isEmpty, "window \(windowIndex): unanswered \(expected.remainingDescription)")

                    // Still working: the database path and a read whose answer is known.
                    let health = try worker.request("system.health", id: .string("control-health-\(windowIndex)"))
                    #expect(health.isSuccess, "\(health.raw)")
                    let habits = try worker.request("habits.list", params: params(fixture.userA, ["include_inactive": true]),
                                                    id: .string("control-list-\(windowIndex)"))
                    #expect(habits.result?["habits"]?.arrayValue?.count == 2, "\(habits.raw)")
                    #expect(worker.isRunning)
                    windowIndex += 1
                    if !stats.problems.isEmpty && stats.problems.count >= 20 { break }
                }
                let elapsed = monotonicSeconds() - started
                let after = try admin.tableChecksums()
                let changed = before.keys.filter { before[$0] != after[$0] }.sorted()
                let memory = try worker.memory()
                let internalLogs = worker.logCount("internal error") + worker.logCount("database error")

                #expect(stats.problems.isEmpty, "\(stats.problems.count) problems, first: \(stats.problems.prefix(5).joined(separator: "\n"))")
                #expect(changed.isEmpty, "tables changed by invalid requests: \(changed)")
                #expect(internalLogs == 0, "internal/database errors logged:\n\(worker.stderrText.suffix(3_000))")
                #expect(worker.isRunning, "the worker exited")
                worker.closeInput()
                let leftover = try worker.remainingOutput(timeout: 120)
                #expect(leftover.isEmpty, "unexpected output after the last window: \(leftover.prefix(3))")
                let status = worker.waitForExit(timeout: 60)
                #expect(status == 0, "exit status \(String(describing: status))")
                let logLines = worker.stderrText.split(separator: "\n")
                let notJSON = logLines.filter { line in
                    guard let parsed = try? WireJSON.parse(String(line)), parsed["level"] != nil, parsed["msg"] != nil else { return true }
                    return false
                }
                #expect(logLines.count > sent / 2, "debug logging logs the rejected lines")
                #expect(notJSON.isEmpty, "\(notJSON.count) log lines are not JSON objects, first: \(notJSON.prefix(3))")

                Figures.record("blackbox-fuzz", [
                    "seed": Int(truncatingIfNeeded: seed), "lines": sent, "bytes": stats.bytes, "response_lines": stats.responseLines,
                    "response_entries": stats.responseEntries, "successes": stats.successes,
                    "errors_by_code": stats.codes.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " "),
                    "line_kinds": stats.kinds.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " "),
                    "problems": stats.problems.count, "tables_changed": changed.count, "internal_error_logs": internalLogs,
                    "exit_status": Int(status ?? -1), "worker_peak_rss_kib": memory.peakKiB, "seconds": elapsed,
                ])
            }
        }
    }
}

/// Counters and the first problems of a fuzz run.
struct FuzzStats {
    var kinds: [String: Int] = [:]
    var codes: [Int: Int] = [:]
    var bytes = 0
    var responseLines = 0
    var responseEntries = 0
    var successes = 0
    var problems: [String] = []

    mutating func problem(_ text: String) {
        if problems.count < 200 { problems.append(text) }
    }
}

/// What the worker must answer for the lines of one window, computed with its own framing
/// rules and codec, and matched against the responses as they arrive (in any order).
struct ExpectedResponses {
    enum Kind {
        /// An error the codec decides (or the line limit): code and data known exactly.
        case codec(code: Int, data: WireJSON?)
        /// A well-formed request: what may come back depends on the method.
        case request(method: String)
    }

    struct Entry {
        var key: String
        var kind: Kind
        var line: String
    }

    private var singles: [String: [Entry]] = [:]
    private var batches: [String: [[Entry]]] = [:]
    private(set) var lineCount = 0

    var isEmpty: Bool { singles.values.allSatisfy(\.isEmpty) && batches.values.allSatisfy(\.isEmpty) }

    var remainingDescription: String {
        let single = singles.values.flatMap { $0 }.prefix(5).map { "\($0.key) ← \($0.line)" }
        let batch = batches.values.flatMap { $0 }.prefix(3).map { "batch \($0.map(\.key))" }
        return (single + batch).joined(separator: "\n")
    }

    static func key(_ id: RequestID) -> String {
        switch id {
        case .string(let s): "s:" + s
        case .number(let n): "n:" + n
        case .null: "null"
        }
    }

    static func key(_ id: WireJSON?) -> String {
        switch id {
        case .string(let s)?: "s:" + s
        case .number(let n)?: "n:" + n
        case .null?: "null"
        default: "invalid"
        }
    }

    static func wire(_ value: JSONValue?) -> WireJSON? {
        value.flatMap { try? WireJSON.parse($0.jsonBytes) }
    }

    /// Adds what one written chunk (sent with a trailing "\n") must produce.
    mutating func add(line chunk: [UInt8], maxLineBytes: Int) {
        for piece in chunk.split(separator: 0x0A, omittingEmptySubsequences: false) {
            var line = Array(piece)
            if line.last == 0x0D { line.removeLast() }
            let shown = String(decoding: line.prefix(300), as: UTF8.self)
            if line.count > maxLineBytes {
                let data: WireJSON = ["reason": "line_too_long",
                                      "message": .string("request line of \(line.count) bytes exceeds the limit of \(maxLineBytes) bytes"),
                                      "limit": .int(maxLineBytes)]
                addSingle(Entry(key: "null", kind: .codec(code: Code.invalidRequest, data: data), line: shown))
                continue
            }
            switch RPCCodec.decode(line: line, maxDepth: 64) {
            case .blank:
                continue
            case .invalid(let error):
                addSingle(Entry(key: "null", kind: .codec(code: error.code.rawValue, data: Self.wire(error.data)), line: shown))
            case .single(let message):
                if let entry = Self.entry(message, shown) { addSingle(entry) }
            case .batch(let messages):
                let entries = messages.compactMap { Self.entry($0, shown) }
                guard !entries.isEmpty else { continue }
                batches[entries.map(\.key).joined(separator: "|"), default: []].append(entries)
                lineCount += 1
            }
        }
    }

    private static func entry(_ message: DecodedMessage, _ line: String) -> Entry? {
        switch message {
        case .request(let request):
            guard let id = request.id else { return nil }
            return Entry(key: key(id), kind: .request(method: request.method), line: line)
        case .invalid(let id, let error):
            return Entry(key: key(id), kind: .codec(code: error.code.rawValue, data: wire(error.data)), line: line)
        case .invalidNotification:
            return nil
        }
    }

    private mutating func addSingle(_ entry: Entry) {
        singles[entry.key, default: []].append(entry)
        lineCount += 1
    }

    /// Matches one response line; anything unexpected becomes a problem in `stats`.
    mutating func match(_ response: WorkerResponse, into stats: inout FuzzStats) {
        if response.isBatch {
            let entries = response.batch
            let key = entries.map { Self.key($0.id) }.joined(separator: "|")
            guard var candidates = batches[key], !candidates.isEmpty else {
                return stats.problem("unexpected batch response (no batch with ids \(key)): \(response.raw.prefix(300))")
            }
            let expected = candidates.removeFirst()
            batches[key] = candidates
            for (entry, actual) in zip(expected, entries) { check(entry, actual, &stats) }
            return
        }
        let key = Self.key(response.id)
        guard var candidates = singles[key], !candidates.isEmpty else {
            return stats.problem("unexpected response (no request with id \(key) outstanding): \(response.raw.prefix(300))")
        }
        // Several entries may share a key (id null): take one whose code matches, if any.
        let index = candidates.firstIndex { entry in
            if case .codec(let code, _) = entry.kind { return response.code == code }
            return true
        } ?? 0
        let entry = candidates.remove(at: index)
        singles[key] = candidates
        check(entry, response, &stats)
    }

    private func check(_ entry: Entry, _ response: WorkerResponse, _ stats: inout FuzzStats) {
        stats.responseEntries += 1
        if let code = response.code { stats.codes[code, default: 0] += 1 } else { stats.successes += 1 }
        switch entry.kind {
        case .codec(let code, let data):
            if response.code != code || response.data != data {
                stats.problem("expected error \(code) \(data?.encoded ?? "-"), got \(response.raw.prefix(300)) for: \(entry.line)")
            }
        case .request(let method):
            let allowed: Set<Int>
            var successAllowed = false
            if HostileLineGenerator.writeMethods.contains(method) {
                allowed = [Code.invalidParams, Code.notFound, Code.futureDate, Code.habitNotActive, Code.invalidState]
            } else if HostileLineGenerator.readMethods.contains(method) {
                allowed = [Code.invalidParams, Code.notFound]
                successAllowed = true
            } else {
                allowed = [Code.methodNotFound]
            }
            if let code = response.code {
                if !allowed.contains(code) { stats.problem("\(method): unexpected error \(response.raw.prefix(300)) for: \(entry.line)") }
            } else if !successAllowed {
                stats.problem("\(method) SUCCEEDED (must be refused): \(response.raw.prefix(300)) for: \(entry.line)")
            }
        }
    }
}
