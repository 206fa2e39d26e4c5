import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Shared pieces of the reliability tests. Each test has a short default size that keeps the
// normal suite quick; scripts/reliability.sh runs the same tests at full size by setting the
// RELIABILITY_* variables below, against a release build of the worker (HABIT_BINARY).

/// Sizes and seeds from the environment: `RELIABILITY_<NAME>`, else the normal-suite default.
enum Scale {
    static func int(_ name: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment["RELIABILITY_\(name)"].flatMap { Int($0) } ?? value
    }

    static func uint64(_ name: String, default value: UInt64) -> UInt64 {
        ProcessInfo.processInfo.environment["RELIABILITY_\(name)"].flatMap { UInt64($0) } ?? value
    }
}

/// The figures a run measured. Printed, and appended as one JSON object per line to
/// `$RELIABILITY_REPORT` when set (scripts/reliability.sh reads them back and checks the
/// timing bounds there: tests never assert durations).
enum Figures {
    private static let lock = NSLock()

    static func record(_ test: String, _ values: KeyValuePairs<String, Any>) {
        var members = [#""test":\#(WireJSON.quoted(test))"#]
        for (key, value) in values {
            let text: String
            switch value {
            case let number as Int: text = String(number)
            case let number as Double: text = number.isFinite ? String(format: "%.3f", number) : "null"
            case let flag as Bool: text = flag ? "true" : "false"
            default: text = WireJSON.quoted("\(value)")
            }
            members.append("\(WireJSON.quoted(key)):\(text)")
        }
        let line = "{" + members.joined(separator: ",") + "}"
        lock.withLock {
            print("reliability figure: \(line)")
            guard let path = ProcessInfo.processInfo.environment["RELIABILITY_REPORT"], !path.isEmpty else { return }
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            if let handle = FileHandle(forWritingAtPath: path) {
                handle.seekToEndOfFile()
                handle.write(Data((line + "\n").utf8))
                handle.closeFile()
            }
        }
    }
}

/// Monotonic time in seconds (for figures only).
func monotonicSeconds() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

extension WorkerProcess {
    /// Resident memory of the worker now and at its peak, in KiB.
    func memory() throws -> (residentKiB: Int, peakKiB: Int) {
        try #require(ProcessInspection.memory(of: pid), "no /proc/\(pid)/status: the worker is gone")
    }

    /// stderr log lines (JSON objects) whose "msg" is `message`.
    func logCount(_ message: String) -> Int {
        stderrText.split(separator: "\n").filter { $0.contains(#""msg":\#(WireJSON.quoted(message))"#) }.count
    }
}

extension Connection {
    /// Backend pids of the workers (`application_name` habit-serve) in the current database.
    func workerBackends() throws -> [Int] {
        try query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'habit-serve' ORDER BY pid")
            .map { try $0.decode(Int.self, at: 0) }
    }

    /// One checksum per table that a request could change: row count and md5 of every row's
    /// text, in a fixed order. Equal checksums ⇔ no row was inserted, updated or deleted.
    func tableChecksums() throws -> [String: String] {
        let tables = ["public.profiles", "public.habit_templates", "public.habit_completions", "public.weekly_completion_counts",
                      "public.task_lists", "public.tasks", "habit.time_zones", "habit.schema_migrations"]
        var sums: [String: String] = [:]
        for table in tables {
            let row = try queryOne(Query(unsafeSQL: "SELECT count(*)::text || ':' || coalesce(md5(string_agg(t::text, E'\\n' ORDER BY t::text)), '-') FROM \(table) t"))
            sums[table] = try row.decode(String.self, at: 0)
        }
        return sums
    }
}

/// Rows the reliability tests arrange through the worker itself: two users, A with an
/// active habit (activated 2020-01-01), a deactivated one, a list and tasks in every state;
/// B with a habit, a list and a task. Requests of one user on the other's rows must fail.
struct Fixture {
    let userA = UUID()
    let userB = UUID()
    var habitA = UUID()
    var habitAInactive = UUID()
    var habitB = UUID()
    var listA = UUID()
    var listB = UUID()
    var taskAActive = UUID()
    var taskADone = UUID()
    var taskANew = UUID()
    var taskB = UUID()
    /// Today in UTC as the worker computed it.
    var today = ""

    static func create(_ worker: WorkerProcess) throws -> Fixture {
        var fixture = Fixture()
        func id(_ result: WireJSON) throws -> UUID {
            try #require(result["id"]?.stringValue.flatMap(UUID.init(uuidString:)), "no id in \(result)")
        }
        let a = fixture.userA
        let b = fixture.userB
        try worker.call("profile.set", params(a, ["timezone": "UTC"]))
        fixture.habitA = try id(worker.call("habits.create", params(a, ["name": "Run", "activated_at": "2020-01-01T00:00:00Z"])))
        fixture.habitAInactive = try id(worker.call("habits.create", params(a, ["name": "Old", "activated_at": "2020-01-01T00:00:00Z"])))
        try worker.call("completions.set", params(a, ["template_id": .uuid(fixture.habitAInactive), "date": "2021-01-01", "completed": true]))
        try worker.call("habits.deactivate", params(a, ["id": .uuid(fixture.habitAInactive)]))
        fixture.habitB = try id(worker.call("habits.create", params(b, ["name": "Swim", "activated_at": "2020-01-01T00:00:00Z"])))
        try worker.call("completions.set", params(a, ["template_id": .uuid(fixture.habitA), "date": "2021-06-01", "completed": true]))
        fixture.listA = try id(worker.call("lists.create", params(a, ["name": "Work"])))
        fixture.listB = try id(worker.call("lists.create", params(b, ["name": "Home"])))
        fixture.today = try #require(worker.call("day.get", params(a, ["date": "2021-01-01"]))["today"]?.stringValue)
        fixture.taskAActive = try id(worker.call("tasks.create", params(a, ["title": "Report", "list_id": .uuid(fixture.listA),
                                                                             "scheduled_date": .string(fixture.today)])))
        try worker.call("tasks.set_state", params(a, ["id": .uuid(fixture.taskAActive), "state": "active"]))
        fixture.taskADone = try id(worker.call("tasks.create", params(a, ["title": "Milk", "scheduled_date": .string(fixture.today)])))
        try worker.call("tasks.complete", params(a, ["id": .uuid(fixture.taskADone)]))
        fixture.taskANew = try id(worker.call("tasks.create", params(a, ["title": "Flights"])))
        fixture.taskB = try id(worker.call("tasks.create", params(b, ["title": "Dentist", "list_id": .uuid(fixture.listB)])))
        return fixture
    }
}

/// A response matched to the request that caused it, for load generators.
struct Outcome: Sendable {
    var sentAt: Double
    var receivedAt: Double
    var code: Int?
    var reason: String?
    var raw: String
    var isSuccess: Bool { code == nil }
}

/// Percentile (nearest rank) of a list of values; 0 when empty.
func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
}

/// Worker bugs these tests found, both fixed (docs/reliability.md, "Bugs found"). Their
/// symptoms are now ordinary failures: no error-level log line is expected at all.
enum KnownBugs {
    /// Was: Connection.runPipeline left a connection busy (pipeline mode, result pending)
    /// when its backend died right after COMMIT; isAliveAfterIdle() still said alive; the
    /// next requests failed with misuse → -32603.
    static let busyConnectionReportedAlive = "called while a transaction is already open"
    /// Was: a send to a vanished server failed with "server closed the connection
    /// unexpectedly" while PQstatus was still CONNECTION_OK, classified `.client` → -32603.
    static let sendFailureClassifiedAsClient = "PostgresError.client: server closed the connection unexpectedly"

    /// Symptoms still tolerated: none.
    static let all: [String] = []

    /// The worker's error-level log lines, split into those explained by a known bug and the rest.
    static func errorLogs(of worker: WorkerProcess) -> (known: [String], unknown: [String]) {
        let lines = worker.stderrText.split(separator: "\n").map(String.init).filter { $0.contains(#""level":"error""#) }
        let known = lines.filter { line in all.contains { line.contains($0) } }
        return (known, lines.filter { !known.contains($0) })
    }
}
