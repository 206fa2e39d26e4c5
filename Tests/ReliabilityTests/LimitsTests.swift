import Foundation
import PostgresClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Input at and far past the worker's limits: a 10 MB line, 10,000-deep nesting, a
/// 100,000-element batch, 10,000 requests written while nobody reads the responses. Each gets
/// an error or a bounded answer, the worker stays alive, and its resident memory (the kernel's
/// high-water mark, VmHWM) stays under the bound documented in docs/reliability.md.
@Suite("Reliability: limits", .serialized)
struct LimitsTests {
    static let defaultLimit = 1_048_576
    static let tenMB = 10 * 1_048_576

    /// Peak resident growth allowed while a line the worker must skip goes through: far less
    /// than the line, so the line was never held in memory.
    static let skippedLineGrowthKiB = 4 * 1_024

    /// A habits.create line of exactly `length` bytes (the name pads it).
    static func createLine(length: Int, id: String, user: UUID) -> [UInt8] {
        let prefix = #"{"jsonrpc":"2.0","id":"\#(id)","method":"habits.create","params":{"user_id":"\#(user.uuidString.lowercased())","name":""#
        let suffix = #""}}"#
        return Array(prefix.utf8) + [UInt8](repeating: UInt8(ascii: "n"), count: length - prefix.utf8.count - suffix.utf8.count) + Array(suffix.utf8)
    }

    static func withWorker(_ arguments: [String] = [], _ body: (WorkerProcess, TestDatabase) throws -> Void) throws {
        try TestDatabase.with { database in
            try WorkerProcess.withServe(databaseURL: try database.workerURL(), arguments: ["--pool-size", "2"] + arguments) { worker in
                // Warm up both paths so the baseline includes connections and method tables.
                #expect(try worker.call("system.ping") == ["ok": true])
                try worker.call("profile.get", params(UUID()))
                try body(worker, database)
            }
        }
    }

    @Test("a 10 MB line (default 1 MiB limit): -32600 id null, skipped without buffering, next line served")
    func tenMegabyteLine() throws {
        try Self.withWorker { worker, database in
            let user = UUID()
            let before = try worker.memory()
            try worker.sendRaw(Self.createLine(length: Self.tenMB, id: "big", user: user) + [0x0A])
            let response = try worker.readResponse(timeout: 120)
            #expect(response.code == Code.invalidRequest && response.id == .null, "\(response.raw)")
            #expect(response.data?["limit"]?.intValue == Self.defaultLimit, "\(response.raw)")
            #expect(response.reason == "line_too_long" && response.dataMessage?.contains(String(Self.tenMB)) == true, "\(response.raw)")
            // The same again in a line without a final newline, delivered at EOF below.
            #expect(try worker.call("system.ping") == ["ok": true])
            let after = try worker.memory()
            let growth = after.peakKiB - before.peakKiB
            #expect(growth < Self.skippedLineGrowthKiB, "peak RSS grew by \(growth) KiB while a 10 MiB line was skipped")

            try worker.sendRaw(Self.createLine(length: Self.tenMB, id: "tail", user: user))
            worker.closeInput()
            let tail = try worker.remainingOutput(timeout: 120)
            #expect(tail.count == 1 && tail.first?.contains(#""code":-32600"#) == true, "\(tail.map { $0.prefix(200) })")
            #expect(worker.waitForExit(timeout: 60) == 0)
            let admin = try database.connect()
            defer { admin.close() }
            #expect(try admin.queryOne("SELECT count(*) FROM habit_templates").decode(Int.self, at: 0) == 0)
            Figures.record("limits-10mb-line-skipped", ["line_bytes": Self.tenMB, "limit": Self.defaultLimit,
                                                        "peak_rss_before_kib": before.peakKiB, "peak_rss_after_kib": after.peakKiB,
                                                        "peak_growth_kib": growth])
        }
    }

    @Test("a 10 MB line under a 16 MiB limit is parsed and refused (-32602 name); memory bounded by a few times the line")
    func tenMegabyteLineAccepted() throws {
        try Self.withWorker(["--max-line-bytes", String(16 * 1_048_576)]) { worker, _ in
            let before = try worker.memory()
            try worker.sendRaw(Self.createLine(length: Self.tenMB, id: "big", user: UUID()) + [0x0A])
            let response = try worker.readResponse(timeout: 120)
            #expect(response.code == Code.invalidParams && response.field == "name" && response.id == "big", "\(response.raw.prefix(300))")
            #expect(try worker.call("system.ping") == ["ok": true])
            let after = try worker.memory()
            let growth = after.peakKiB - before.peakKiB
            // Documented bound: 8 × the line (buffer, parsed string, trimmed copy, …).
            #expect(growth < 8 * Self.tenMB / 1_024, "peak RSS grew by \(growth) KiB for one 10 MiB line")
            Figures.record("limits-10mb-line-parsed", ["line_bytes": Self.tenMB, "peak_rss_before_kib": before.peakKiB,
                                                       "peak_rss_after_kib": after.peakKiB, "peak_growth_kib": growth])
        }
    }

    @Test("10,000-deep nesting (arrays, objects, unclosed, inside params, inside a batch): -32700 nesting too deep")
    func deepNesting() throws {
        try Self.withWorker { worker, _ in
            let depth = 10_000
            let before = try worker.memory()
            let lines: [String] = [
                String(repeating: "[", count: depth) + String(repeating: "]", count: depth),
                String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth),
                String(repeating: "[", count: depth),
                #"{"jsonrpc":"2.0","id":1,"method":"system.ping","params":{"a":"# + String(repeating: "[", count: depth)
                    + String(repeating: "]", count: depth) + "}}",
                #"[{"jsonrpc":"2.0","id":2,"method":"system.ping"},"# + String(repeating: #"{"x":["#, count: depth / 2)
                    + String(repeating: "]}", count: depth / 2) + "]",
            ]
            for line in lines {
                try worker.send(line)
                let response = try worker.readResponse()
                #expect(response.code == Code.parseError && response.id == .null && response.reason == "too_deep",
                        "\(response.raw) for \(line.prefix(80))")
            }
            // 64 levels (the request object included) are accepted.
            let ok = #"{"jsonrpc":"2.0","id":3,"method":"system.ping","params":{"a":"# + String(repeating: "[", count: 62)
                + String(repeating: "]", count: 62) + "}}"
            try worker.send(ok)
            let accepted = try worker.readResponse()
            #expect(accepted.id == 3 && accepted.code == Code.invalidParams, "\(accepted.raw)")
            #expect(try worker.call("system.ping") == ["ok": true])
            let growth = try worker.memory().peakKiB - before.peakKiB
            #expect(growth < Self.skippedLineGrowthKiB, "peak RSS grew by \(growth) KiB")
            Figures.record("limits-deep-nesting", ["depth": depth, "lines": lines.count, "peak_growth_kib": growth])
        }
    }

    @Test("the default --max-batch 1000: a batch of 1,001 gets one -32600 and none of it runs; 1,000 are answered")
    func batchLimit() throws {
        try Self.withWorker { worker, database in
            let user = UUID()
            let habit = try #require(try worker.call("habits.create", params(user, ["name": "Run", "activated_at": "2020-01-01T00:00:00Z"]))["id"]?.stringValue)
            let element = #"{"jsonrpc":"2.0","id":ID,"method":"completions.set","params":{"user_id":"\#(user.uuidString.lowercased())","template_id":"\#(habit)","date":"2021-02-03","completed":true}}"#
            func batch(_ count: Int) -> String {
                "[" + (0..<count).map { element.replacingOccurrences(of: "ID", with: String($0)) }.joined(separator: ",") + "]"
            }
            try worker.send(batch(1_001))
            let refused = try worker.readResponse()
            #expect(!refused.isBatch && refused.code == Code.invalidRequest && refused.id == .null, "\(refused.raw.prefix(300))")
            #expect(refused.error?["data"]?["limit"] == 1_000)
            #expect(refused.reason == "batch_too_large" && refused.dataMessage == "batch of 1001 elements exceeds the limit of 1000")
            let admin = try database.connect()
            defer { admin.close() }
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_completions").decode(Int.self, at: 0) == 0, "a refused batch wrote rows")

            try worker.send(batch(1_000))
            let answered = try worker.readResponse(timeout: 120)
            #expect(answered.batch.count == 1_000)
            #expect(answered.batch.allSatisfy { $0.result != nil }, "\(answered.batch.first { $0.result == nil }?.raw ?? "")")
            #expect(try admin.queryOne("SELECT count(*) FROM public.habit_completions").decode(Int.self, at: 0) == 1)
        }
    }

    @Test("a 100,000-element batch of non-requests (200 kB line): one array of 100,000 -32600 entries")
    func hugeBatchOfInvalidElements() throws {
        try Self.withWorker(["--max-batch", "1000000"]) { worker, _ in
            let count = 100_000
            let before = try worker.memory()
            try worker.send("[" + Array(repeating: "1", count: count).joined(separator: ",") + "]")
            let response = try worker.readResponse(timeout: 300)
            let entries = response.batch
            #expect(entries.count == count)
            #expect(entries.allSatisfy { $0.code == Code.invalidRequest && $0.id == .null }, "\(entries.first?.raw ?? response.raw.prefix(200).description)")
            #expect(try worker.call("system.ping") == ["ok": true])
            let after = try worker.memory()
            let growth = after.peakKiB - before.peakKiB
            #expect(growth < 256 * 1_024, "peak RSS grew by \(growth) KiB")
            Figures.record("limits-batch-100k-invalid", ["elements": count, "request_bytes": 2 * count + 1, "response_bytes": response.raw.utf8.count,
                                                         "peak_growth_kib": growth, "peak_rss_kib": after.peakKiB])
        }
    }

    @Test("a 100,000-element batch of pings (5 MB line, 16 MiB limit): 100,000 results in element order")
    func hugeBatchOfPings() throws {
        try Self.withWorker(["--max-line-bytes", String(16 * 1_048_576), "--max-batch", "1000000"]) { worker, _ in
            let count = 100_000
            let before = try worker.memory()
            let line = "[" + (0..<count).map { #"{"jsonrpc":"2.0","id":\#($0),"method":"system.ping"}"# }.joined(separator: ",") + "]"
            try worker.send(line)
            let response = try worker.readResponse(timeout: 300)
            let entries = response.batch
            #expect(entries.count == count)
            #expect(entries.enumerated().allSatisfy { $0.element.id == .int($0.offset) && $0.element.result == ["ok": true] })
            let after = try worker.memory()
            let growth = after.peakKiB - before.peakKiB
            #expect(growth < 256 * 1_024, "peak RSS grew by \(growth) KiB")
            Figures.record("limits-batch-100k-ping", ["elements": count, "request_bytes": line.utf8.count, "response_bytes": response.raw.utf8.count,
                                                      "peak_growth_kib": growth, "peak_rss_kib": after.peakKiB])
        }
    }

    @Test("a batch of database requests (RELIABILITY_DB_BATCH, default 2,000; full run 100,000): every element answered, in order")
    func hugeBatchOfDatabaseRequests() throws {
        let count = Scale.int("DB_BATCH", default: 2_000)
        try Self.withWorker(["--max-line-bytes", String(64 * 1_048_576), "--pool-size", "4", "--max-batch", "1000000"]) { worker, _ in
            let user = UUID()
            try worker.call("profile.set", params(user, ["timezone": "Asia/Tokyo"]))
            let before = try worker.memory()
            let started = monotonicSeconds()
            let element = #"{"jsonrpc":"2.0","id":ID,"method":"profile.get","params":{"user_id":"\#(user.uuidString.lowercased())"}}"#
            try worker.send("[" + (0..<count).map { element.replacingOccurrences(of: "ID", with: String($0)) }.joined(separator: ",") + "]")
            let response = try worker.readResponse(timeout: 1_800)
            let seconds = monotonicSeconds() - started
            let entries = response.batch
            #expect(entries.count == count)
            #expect(entries.enumerated().allSatisfy { $0.element.id == .int($0.offset) && $0.element.result?["timezone"] == "Asia/Tokyo" },
                    "\(entries.first { $0.result == nil }?.raw ?? "")")
            let after = try worker.memory()
            let growth = after.peakKiB - before.peakKiB
            #expect(growth < 512 * 1_024, "peak RSS grew by \(growth) KiB")
            Figures.record("limits-batch-db", ["elements": count, "response_bytes": response.raw.utf8.count, "seconds": seconds,
                                               "peak_growth_kib": growth, "peak_rss_kib": after.peakKiB])
        }
    }

    @Test("10,000 requests written before any response is read: each answered exactly once, memory bounded by the in-flight limit")
    func tenThousandBeforeReading() throws {
        let count = 10_000
        try Self.withWorker(["--pool-size", "4"]) { worker, _ in
            let user = UUID()
            let habit = try #require(try worker.call("habits.create", params(user, ["name": "Run", "activated_at": "2020-01-01T00:00:00Z"]))["id"]?.stringValue)
            let before = try worker.memory()
            var bytes: [UInt8] = []
            for index in 0..<count {
                let u = user.uuidString.lowercased()
                let line: String = switch index % 5 {
                case 0: #"{"jsonrpc":"2.0","id":\#(index),"method":"system.ping"}"#
                case 1: #"{"jsonrpc":"2.0","id":\#(index),"method":"profile.get","params":{"user_id":"\#(u)"}}"#
                case 2: #"{"jsonrpc":"2.0","id":\#(index),"method":"completions.set","params":{"user_id":"\#(u)","template_id":"\#(habit)","date":"2021-02-0\#(index % 9 + 1)","completed":\#(index % 2 == 0)}}"#
                case 3: #"{"jsonrpc":"2.0","id":\#(index),"method":"day.get","params":{"user_id":"\#(u)","date":"2021-13-01"}}"#
                default: #"{"jsonrpc":"2.0","id":\#(index),"method":"week.counts","params":{"user_id":"\#(u)","date":"2021-02-03"}}"#
                }
                bytes += Array(line.utf8) + [0x0A]
            }
            // All 10,000 written first (the harness drains stdout into its buffer meanwhile, as a
            // gateway's reader would; the test reads nothing until the last byte is written).
            try worker.sendRaw(bytes)
            var answered = Set<Int>()
            var wrong: [String] = []
            for _ in 0..<count {
                let response = try worker.readResponse(timeout: 120)
                guard let id = response.id?.intValue, answered.insert(id).inserted else {
                    wrong.append("duplicate or foreign: \(response.raw)")
                    continue
                }
                let ok = id % 5 == 3 ? response.code == Code.invalidParams : response.isSuccess
                if !ok { wrong.append(response.raw) }
            }
            #expect(answered.count == count && wrong.isEmpty, "\(answered.count) answered; \(wrong.prefix(3))")
            #expect(try worker.call("system.ping") == ["ok": true])
            let after = try worker.memory()
            let growth = after.peakKiB - before.peakKiB
            #expect(growth < 16 * 1_024, "peak RSS grew by \(growth) KiB")
            Figures.record("limits-10k-before-reading", ["requests": count, "request_bytes": bytes.count, "peak_growth_kib": growth,
                                                         "peak_rss_kib": after.peakKiB])
        }
    }

    @Test("a gateway that stops reading stdout: its writes are refused once the pipes fill, then all 10,000 answered once; memory flat")
    func tenThousandUnread() throws {
        let count = 10_000
        try TestDatabase.with { database in
            let setup = try WorkerProcess.serve(databaseURL: try database.workerURL())
            let user = UUID()
            let habit = try #require(try setup.call("habits.create", params(user, ["name": "Run", "activated_at": "2020-01-01T00:00:00Z"]))["id"]?.stringValue)
            setup.closeInput()
            _ = try setup.remainingOutput()
            #expect(setup.waitForExit() == 0)

            try FifoWorker.with(databaseURL: try database.workerURL(), arguments: ["--pool-size", "2"]) { worker in
                var lines: [[UInt8]] = []
                for index in 0..<count {
                    let id = #""u\#(index)""#
                    let line: String = switch index % 5 {
                    case 0: #"{"jsonrpc":"2.0","id":\#(id),"method":"system.ping"}"#
                    case 1: #"{"jsonrpc":"2.0","id":\#(id),"method":"profile.get","params":{"user_id":"\#(user.uuidString.lowercased())"}}"#
                    case 2: #"{"jsonrpc":"2.0","id":\#(id),"method":"completions.set","params":{"user_id":"\#(user.uuidString.lowercased())","template_id":"\#(habit)","date":"2021-01-0\#(index % 9 + 1)","completed":\#(index % 2 == 0)}}"#
                    case 3: #"{"jsonrpc":"2.0","id":\#(id),"method":"habits.lst"}"#
                    default: #"{"jsonrpc":"2.0","id":\#(id),"method":"day.get","params":{"user_id":"\#(user.uuidString.lowercased())","date":"2021-01-01"}}"#
                    }
                    lines.append(Array(line.utf8) + [0x0A])
                }
                // Ready: the worker answers, a database connection is up.
                #expect(try worker.roundTrip(#"{"jsonrpc":"2.0","id":"ready","method":"system.ping"}"#).isSuccess)
                #expect(try worker.roundTrip(#"{"jsonrpc":"2.0","id":"ready2","method":"profile.get","params":{"user_id":"\#(user.uuidString.lowercased())"}}"#).isSuccess)
                let baseline = try #require(ProcessInspection.memory(of: worker.process.pid))
                // Write without reading until the pipe refuses more. Nobody reads stdout, so the
                // worker can absorb at most: 64 KiB of responses in its stdout pipe, its in-flight
                // places, one read chunk and 64 KiB in its stdin pipe — about 3,000 of these lines.
                // Refusal before all 10,000 is therefore certain if backpressure works, whatever
                // the timing; a worker that slurped its input into memory would take them all.
                // (In practice the writer outruns the reader, so the figure is near one pipe's worth.)
                let acceptedBeforeBlock = try worker.writeUntilBlocked(lines)
                #expect(acceptedBeforeBlock < count, "the worker read all \(count) requests although nobody read its output")
                let stalled = try #require(ProcessInspection.memory(of: worker.process.pid))
                // Now read, and write the rest.
                let responses = try worker.drainWhileWriting(expecting: count)
                var seen: [String: Int] = [:]
                for response in responses { seen[response.id?.stringValue ?? "?", default: 0] += 1 }
                #expect(seen.count == count && seen.values.allSatisfy { $0 == 1 }, "\(seen.count) distinct ids answered")
                #expect(responses.filter { $0.code != nil && $0.code != Code.methodNotFound }.isEmpty,
                        "\(responses.first { $0.code != nil && $0.code != Code.methodNotFound }?.raw ?? "")")
                let after = try #require(ProcessInspection.memory(of: worker.process.pid))
                let status = try worker.finish()
                #expect(status == 0)
                let growth = after.peakKiB - baseline.peakKiB
                #expect(growth < 16 * 1_024, "peak RSS grew by \(growth) KiB")
                Figures.record("limits-10k-unread", ["requests": count, "accepted_before_block": acceptedBeforeBlock,
                                                     "rss_stalled_kib": stalled.residentKiB, "peak_growth_kib": growth,
                                                     "peak_rss_kib": after.peakKiB, "exit_status": Int(status ?? -1)])
            }
        }
    }
}
