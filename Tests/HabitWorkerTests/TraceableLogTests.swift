import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// docs/operations.md, "Logs": every line carries the worker's `pid`; every line about a request
/// its `id` (as sent) and `method`, and the `trace_id` and `span_id` of a valid `traceparent`.
@Suite("habit serve: traceable logs")
struct TraceableLogTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"
    static let traceparent = "00-\(traceID)-\(parentID)-01"

    /// Ends the worker's input and returns its stderr lines as JSON objects, once it exited.
    private func logEntries(of worker: WorkerProcess) throws -> [WireJSON] {
        worker.closeInput()
        #expect(worker.waitForExit() == 0)
        #expect(worker.waitForStderrEnd())
        return try worker.stderrText.split(separator: "\n").map { try WireJSON.parse(String($0)) }
    }

    private func entries(_ all: [WireJSON], msg: String, id: WireJSON) -> [WireJSON] {
        all.filter { $0["msg"]?.stringValue == msg && $0["id"] == id }
    }

    @Test("request lines carry id, method, pid and the traceparent's trace_id and span_id; every line carries pid")
    func requestLines() throws {
        try WorkerSession.with(arguments: ["--log-level", "debug", "--log-format", "json"]) { session in
            let worker = session.worker
            let user = UUID()
            let withTrace = params(user, ["traceparent": .string(Self.traceparent)])
            #expect(try worker.request("habits.list", params: withTrace, id: "list-1").isSuccess)
            #expect(try worker.request("habits.list", params: withTrace, id: 7).isSuccess)
            #expect(try worker.request("habits.list", params: params(user), id: "7").isSuccess)
            // A failed one: not found.
            expectError(try worker.request("habits.update", params: params(user, ["id": .uuid(UUID()), "name": "X",
                                                                                    "traceparent": .string(Self.traceparent)]), id: "missing"),
                        code: Code.notFound, id: "missing")
            // Refused before it runs.
            expectError(try worker.request("habits.list", params: params(user, ["limit": "many"]), id: "refused"),
                        code: Code.invalidParams, id: "refused")
            // A notification: its line has no id.
            try worker.notify("habits.list", params: params(user, ["traceparent": .string(Self.traceparent)]))
            #expect(try worker.request("system.ping", id: "after-notification").isSuccess)

            let all = try logEntries(of: worker)
            #expect(!all.isEmpty)
            for entry in all {
                #expect(entry["pid"] == .number(String(worker.pid)), "\(entry)")
            }
            let list = try #require(entries(all, msg: "request", id: "list-1").first, "\(worker.stderrText)")
            #expect(list["method"] == "habits.list")
            #expect(list["trace_id"] == .string(Self.traceID))
            #expect(list["span_id"] == .string(Self.parentID))
            #expect(entries(all, msg: "request", id: 7).first?["trace_id"] == .string(Self.traceID), "numeric id: \(worker.stderrText)")
            let stringSeven = try #require(entries(all, msg: "request", id: "7").first, "string id \"7\" logged as a string: \(worker.stderrText)")
            #expect(stringSeven["trace_id"] == nil)
            let missing = try #require(entries(all, msg: "request", id: "missing").first, "\(worker.stderrText)")
            #expect(missing["method"] == "habits.update")
            #expect(missing["code"] == .number(String(Code.notFound)))
            #expect(missing["trace_id"] == .string(Self.traceID))
            #expect(entries(all, msg: "rejected", id: "refused").first?["method"] == "habits.list", "\(worker.stderrText)")
            let notification = all.filter { $0["msg"] == "request" && $0["trace_id"] == .string(Self.traceID) && $0["id"] == nil }
            #expect(notification.count == 1 && notification.first?["method"] == "habits.list", "\(worker.stderrText)")
        }
    }

    @Test("traceparent follows W3C parsing: an invalid one is ignored and the request still runs", arguments: [
        (Self.traceparent, true),
        ("00-\(Self.traceID)-\(Self.parentID)-00", true), // not sampled: still logged
        ("cc-\(Self.traceID)-\(Self.parentID)-01-what-the-future-holds", true), // a later version may go on after a dash
        ("cc-\(Self.traceID)-\(Self.parentID)-01", true),
        ("00-\(Self.traceID)-\(Self.parentID)-01-extra", false), // version 00 is exactly 55 characters
        ("cc-\(Self.traceID)-\(Self.parentID)-01extra", false),
        ("ff-\(Self.traceID)-\(Self.parentID)-01", false), // version ff is invalid
        ("00-\(Self.traceID.uppercased())-\(Self.parentID)-01", false), // lowercase only
        ("00-00000000000000000000000000000000-\(Self.parentID)-01", false),
        ("00-\(Self.traceID)-0000000000000000-01", false),
        ("00-\(Self.traceID)-\(Self.parentID)", false),
        ("00_\(Self.traceID)_\(Self.parentID)_01", false),
        ("", false),
    ])
    func parsing(header: String, valid: Bool) throws {
        try WorkerSession.with(arguments: ["--log-level", "debug", "--log-format", "json"]) { session in
            let worker = session.worker
            #expect(try worker.request("habits.list", params: params(UUID(), ["traceparent": .string(header)]), id: "traced").isSuccess)
            // Not a string: ignored as well.
            #expect(try worker.request("system.ping", params: ["traceparent": 5], id: "number").isSuccess)
            let line = try #require(entries(try logEntries(of: worker), msg: "request", id: "traced").first, "\(worker.stderrText)")
            #expect(line["trace_id"] == (valid ? .string(Self.traceID) : nil), "\(header): \(line)")
            #expect(line["span_id"] == (valid ? .string(Self.parentID) : nil), "\(header): \(line)")
        }
    }

    @Test("a request whose connection is lost: the warning carries its id, method, pid and trace (info level)")
    func failureLineAtInfoLevel() throws {
        try WorkerSession.with(arguments: ["--log-level", "info", "--log-format", "json"]) { session in
            let worker = session.worker
            let user = UUID()
            let habit = try #require(try worker.createHabit(user: user, name: "Blocked").habitID)
            try session.admin.withTransaction { connection in
                try connection.lockUserRowForUpdate("public.habit_templates", id: habit)
                try worker.sendRequest("habits.update", params: params(user, ["id": .uuid(habit), "name": "Lost",
                                                                             "traceparent": .string(Self.traceparent)]), id: "doomed")
                let observer = try session.database.connect()
                defer { observer.close() }
                for backend in try observer.workerBackendsWaitingForLocks() {
                    _ = try observer.queryOne("SELECT pg_terminate_backend(\(backend))")
                }
                expectError(try worker.response(id: "doomed"), code: Code.databaseUnavailable, id: "doomed")
            }
            let all = try logEntries(of: worker)
            let lost = try #require(entries(all, msg: "database connection lost", id: "doomed").first, "\(worker.stderrText)")
            #expect(lost["level"] == "warning")
            #expect(lost["method"] == "habits.update")
            #expect(lost["pid"] == .number(String(worker.pid)))
            #expect(lost["trace_id"] == .string(Self.traceID))
            #expect(all.allSatisfy { $0["msg"] != "request" }, "per-request lines are debug only")
        }
    }
}
