import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Line limits, and the separation of protocol (stdout) from logs (stderr).
@Suite("habit serve: line limits and stdout purity")
struct FramingAndLoggingTests {
    static let limit = 1_048_576

    /// A habits.create request line of exactly `length` bytes (the name pads it).
    static func createLine(length: Int, id: Int, user: UUID) -> String {
        let prefix = #"{"jsonrpc":"2.0","id":\#(id),"method":"habits.create","params":{"user_id":"\#(user.uuidString.lowercased())","name":""#
        let suffix = #""}}"#
        return prefix + String(repeating: "n", count: length - prefix.utf8.count - suffix.utf8.count) + suffix
    }

    @Test("a line over --max-line-bytes gets -32600 with id null; the worker keeps answering")
    func oversizedLine() throws {
        try WorkerSession.with(arguments: ["--max-line-bytes", String(Self.limit)]) { session in
            let worker = session.worker
            let user = UUID()

            for length in [Self.limit + 1, 3 * Self.limit] {
                let line = Self.createLine(length: length, id: 1, user: user)
                #expect(line.utf8.count == length)
                try worker.send(line)
                let response = try worker.readResponse()
                expectError(response, code: Code.invalidRequest, id: .null)
                #expect(response.data?["limit"]?.intValue == Self.limit, "\(response.raw)")
                #expect(response.reason == "line_too_long" && response.dataMessage?.contains(String(length)) == true, "\(response.raw)")
                let ping = try worker.request("system.ping", id: 2)
                #expect(ping.result == ["ok": true])
            }

            // An oversized line and a request in the same write: both handled, in order.
            try worker.sendRaw(Array((Self.createLine(length: Self.limit + 100, id: 3, user: user) + "\n"
                + #"{"jsonrpc":"2.0","id":4,"method":"system.ping"}"# + "\n").utf8))
            expectError(try worker.readResponse(), code: Code.invalidRequest, id: .null)
            #expect(try worker.readResponse().id == 4)
            #expect(try session.habitCount(user: user) == 0)
        }
    }

    @Test("a line of exactly --max-line-bytes is accepted (the name is then too long: -32602)")
    func lineAtTheLimit() throws {
        try WorkerSession.with(arguments: ["--max-line-bytes", String(Self.limit)]) { session in
            let worker = session.worker
            let user = UUID()
            let line = Self.createLine(length: Self.limit, id: 5, user: user)
            #expect(line.utf8.count == Self.limit)
            try worker.send(line)
            expectError(try worker.readResponse(), code: Code.invalidParams, id: 5, field: "name")
            // "\r\n" endings: the "\r" does not count against the limit.
            try worker.sendRaw(Array(Self.createLine(length: Self.limit, id: 6, user: user).utf8) + [0x0D, 0x0A])
            expectError(try worker.readResponse(), code: Code.invalidParams, id: 6, field: "name")
            #expect(try session.habitCount(user: user) == 0)
        }
    }

    @Test("deeply nested JSON is refused with -32700 (no crash), and the worker goes on")
    func deepNesting() throws {
        try WorkerSession.with { session in
            let worker = session.worker
            for depth in [100, 500_000] {
                try worker.send(#"{"jsonrpc":"2.0","id":1,"method":"system.ping","params":{"a":"# + String(repeating: "[", count: depth)
                                + String(repeating: "]", count: depth) + "}}")
                let response = try worker.readResponse()
                expectError(response, code: Code.parseError, id: .null)
            }
            try worker.send(String(repeating: "[", count: 1_000_000))
            expectError(try worker.readResponse(), code: Code.parseError, id: .null)
            // Within the limit, nesting is fine (here: an unknown key, so -32602 naming it).
            try worker.send(#"{"jsonrpc":"2.0","id":2,"method":"system.ping","params":{"a":"# + String(repeating: "[", count: 60)
                            + String(repeating: "]", count: 60) + "}}")
            expectError(try worker.readResponse(), code: Code.invalidParams, id: 2, field: "a")
            #expect(try worker.call("system.ping") == ["ok": true])
            #expect(worker.isRunning)
        }
    }

    @Test("stdout closed by the client, request answered by the reader: exit 1 (stdin still open)")
    func stdoutClosedReaderAnswer() throws {
        try WorkerSession.with(closeOutput: true) { session in
            let worker = session.worker
            try worker.sendRequest("system.ping", id: 1)
            #expect(worker.waitForExit() == 1, "stderr:\n\(worker.stderrText)")
        }
    }

    @Test("stdout closed by the client, request answered by a database thread: the worker stops (exit 1) without waiting for more input")
    func stdoutClosedDatabaseAnswer() throws {
        try WorkerSession.with(closeOutput: true) { session in
            let worker = session.worker
            try worker.sendRequest("habits.list", params: params(UUID()), id: 1)
            // stdin stays open and silent. The worker logs "stdout closed; stopping": it must stop.
            let status = worker.waitForExit(timeout: 15)
            #expect(status == 1, "still running 15 s after stdout broke (exit status \(status.map(String.init) ?? "none")); stderr:\n\(worker.stderrText)")
        }
    }

    @Test("stdout carries only responses; stderr only log lines without user content", arguments: ["json", "text"])
    func stdoutPurityAndLogPrivacy(format: String) throws {
        try WorkerSession.with(arguments: ["--log-level", "debug", "--log-format", format]) { session in
            let worker = session.worker
            let user = UUID()
            let secret = "Zebra-Quokka-" + UUID().uuidString.prefix(8)
            let userText = WireJSON.uuid(user).encoded
            let created = try worker.createHabit(user: user, name: secret)
            let id = try #require(created["id"]?.encoded)
            let lines = [
                #"{"jsonrpc":"2.0","id":1,"method":"habits.update","params":{"user_id":\#(userText),"id":\#(id),"name":"\#(secret)-renamed"}}"#,
                #"{"jsonrpc":"2.0","id":2,"method":"habits.create","params":{"user_id":\#(userText),"name":"\#(String(repeating: secret, count: 10))"}}"#,
                #"{"jsonrpc":"2.0","id":3,"method":"habits.create","params":{"user_id":\#(userText),"name":"\#(secret)\u0001"}}"#,
                #"{"jsonrpc":"2.0","id":4,"method":"\#(secret)","params":{}}"#,
                #"{"jsonrpc":"2.0","id":5,"method":"habits.list","params":{"user_id":\#(userText),"\#(secret)":1}}"#,
                #"{"jsonrpc":"2.0","id":6,"method":"habits.create","params":{"user_id":"\#(secret)","name":"x"}}"#,
                #"{"jsonrpc":"2.0","id":7,"method":"day.get","params":{"user_id":\#(userText),"date":"2026-01-01","timezone":"\#(secret)/Zone"}}"#,
                #"{"jsonrpc":"2.0","id":8,"method":"system.ping","\#(secret)":1}"#,
                #"{"jsonrpc":"2.0","id":9,"method":"habits.create","params":{"user_id":\#(userText),"name":"\#(secret)"#, // parse error
                #"{"jsonrpc":"2.0","method":"habits.create","params":{"user_id":\#(userText),"name":"\#(secret)-notified"}}"#,
                #"{"jsonrpc":"2.0","method":"\#(secret)"}"#,
                #"{"jsonrpc":"2.0","method":"\#(secret)","params":[1]}"#,
                #"[{"jsonrpc":"2.0","id":10,"method":"habits.create","params":{"user_id":\#(userText),"name":"\#(secret)-batched"}},{"jsonrpc":"2.0","method":"\#(secret)"}]"#,
                #"{"jsonrpc":"2.0","id":11,"method":"habits.list","params":{"user_id":\#(userText),"include_inactive":true}}"#,
            ]
            for line in lines { try worker.send(line) }
            worker.closeInput()
            let output = try worker.remainingOutput()
            #expect(worker.waitForExit() == 0)
            #expect(worker.waitForStderrEnd())

            // stdout: one well-formed response per answered line (ids 1-8 and 11, the parse error, one batch).
            var responses: [WorkerResponse] = []
            for line in output {
                do {
                    responses.append(try WorkerResponse(line: Array(line.utf8)))
                } catch {
                    Issue.record("stdout line is not a JSON-RPC response: \(error)")
                }
            }
            #expect(output.count == 11, "\(output)")
            #expect(responses.filter(\.isBatch).count == 1)
            #expect(try session.habitCount(user: user) == 3)

            // stderr: log lines only, and never the user's content.
            let stderr = worker.stderrText
            #expect(!stderr.contains("Zebra-Quokka"), "user content in the log:\n\(stderr)")
            let logLines = stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(stderr.hasSuffix("\n"))
            #expect(!logLines.isEmpty)
            if format == "json" {
                var sawDebugRequest = false
                for line in logLines {
                    guard let entry = try? WireJSON.parse(String(line)) else {
                        Issue.record("stderr line is not JSON: \(line)")
                        continue
                    }
                    #expect(entry["ts"]?.stringValue != nil && entry["msg"]?.stringValue != nil, "\(line)")
                    #expect(["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(entry["level"]?.stringValue ?? ""), "\(line)")
                    if entry["level"] == "debug" && entry["msg"] == "request" { sawDebugRequest = true }
                }
                #expect(sawDebugRequest, "debug logging was not on:\n\(stderr)")
            } else {
                #expect(logLines.allSatisfy { !$0.hasPrefix("{") }, "\(stderr)")
                #expect(stderr.contains(" DEBUG request"), "\(stderr)")
            }
        }
    }
}
