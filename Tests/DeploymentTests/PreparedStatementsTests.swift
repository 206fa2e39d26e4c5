import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Prepared statements behind pgbouncer 1.18 in transaction mode, which does not track
/// protocol-level prepared statements (1.21+ can, with max_prepared_statements): the worker
/// prepares each statement once per *client* connection, but pgbouncer hands each transaction
/// whichever *server* connection is free, where those names may be missing. Names are random per
/// client session, so they never collide with another client's; `auto` (the default) turns a
/// missing name into a fallback to unnamed statements instead of an error.
@Suite("deployment: prepared statements through pgbouncer 1.18 (transaction mode)", .serialized)
struct PreparedStatementsTests {
    static let user = UUID(uuidString: "7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a")!

    /// Worker arguments for a mode; nil is the default (no flag, no environment).
    static func arguments(_ prepared: String?) -> [String] {
        ["--pool-size", "1"] + (prepared.map { ["--prepared-statements", $0] } ?? [])
    }

    @Test("two workers on one server connection never run each other's statements: names are random per session",
          arguments: ["on", "off", nil] as [String?])
    func namesNeverCollide(prepared: String?) throws {
        try TestDatabase.with { database in
            try PgBouncer.with(poolSize: 1) { bouncer in
                let url = try bouncer.url(user: "habit_worker", database: database.name)
                try Workers.with(count: 2, databaseURL: url, arguments: Self.arguments(prepared)) { workers in
                    // The first worker prepares its statements on the only server connection;
                    // the second one prepares the same SQL there under names of its own.
                    #expect(try workers[0].request("profile.get", params: params(Self.user)).isSuccess)
                    #expect(try workers[1].request("profile.get", params: params(Self.user)).isSuccess)
                    // Many more, from both workers at once, on the one server connection.
                    let plan = (0..<2).map { worker in
                        (0..<50).map { index in
                            Call(method: index % 2 == 0 ? "habits.create" : "day.get",
                                 params: params(Self.user, index % 2 == 0 ? ["name": .string("W\(worker) \(index)")] : ["date": "2025-03-10"]))
                        }
                    }
                    let responses = try exchange(workers, plan).flatMap { $0 }
                    let failed = responses.filter { !$0.isSuccess }.map(\.raw)
                    #expect(failed.isEmpty, "\(failed)")
                    try Workers.stop(workers)
                    for worker in workers {
                        #expect(!worker.stderrText.contains("\"level\":\"error\""), "\(worker.stderrText)")
                        #expect(!worker.stderrText.contains("42P05"), "\(worker.stderrText)")
                    }
                }
            }
        }
    }

    @Test("one worker whose next transaction lands on another server connection: on fails (26000); off and the default answer, and the write is applied once",
          arguments: ["on", "off", nil] as [String?])
    func namesMissing(prepared: String?) throws {
        try TestDatabase.with { database in
            try PgBouncer.with(poolSize: 2) { bouncer in
                let url = try bouncer.url(user: "habit_worker", database: database.name)
                // Two transactions of our own take the two server connections in turn, so the
                // worker's first request can only run on one of them (B) and its second only
                // on the other (A), whatever order pgbouncer prefers.
                let holderA = try Connection(url, applicationName: "habit-tests", preparedStatements: .off)
                defer { holderA.close() }
                let holderB = try Connection(url, applicationName: "habit-tests", preparedStatements: .off)
                defer { holderB.close() }
                let admin = try database.connect()
                defer { admin.close() }
                try WorkerProcess.withServe(databaseURL: url, arguments: Self.arguments(prepared)) { worker in
                    var pids: [Int] = []
                    try holderA.execute("BEGIN")
                    pids.append(try holderA.queryOne("SELECT pg_backend_pid()").decode(Int.self, at: 0))
                    // A is held: the worker runs (and prepares its statements) on B.
                    let first = try worker.request("habits.create", params: params(Self.user, ["name": "First"]))
                    #expect(first.isSuccess, "\(first.raw)")
                    try holderB.execute("BEGIN") // B is the only free one
                    pids.append(try holderB.queryOne("SELECT pg_backend_pid()").decode(Int.self, at: 0))
                    try holderA.execute("COMMIT")
                    // Only A is free: the worker's next transaction runs there, where its names are missing.
                    let response = try worker.request("habits.create", params: params(Self.user, ["name": "Second"]))
                    try holderB.execute("COMMIT")
                    #expect(pids.count == 2 && pids[0] != pids[1], "\(pids)")
                    let names = try admin.query("SELECT name FROM habit_templates WHERE user_id = \(Self.user) ORDER BY name")
                        .map { try $0.decode(String.self, at: 0) }
                    if prepared == "on" {
                        #expect(response.code == Code.internalError, "\(response.raw)")
                        #expect(names == ["First"])
                        try Workers.stop([worker])
                        #expect(worker.stderrText.contains("26000"), "\(worker.stderrText)")
                        #expect(worker.stderrText.contains("does not exist"), "\(worker.stderrText)")
                    } else {
                        #expect(response.isSuccess, "\(response.raw)")
                        #expect(names == ["First", "Second"], "applied exactly once")
                        // Later requests work too, whichever server connection they land on.
                        for index in 0..<6 {
                            #expect(try worker.request("day.get", params: params(Self.user, ["date": .string("2025-03-1\(index)")])).isSuccess)
                        }
                        try Workers.stop([worker])
                        let warnings = worker.stderrText.components(separatedBy: "prepared statements off").count - 1
                        #expect(warnings == (prepared == nil ? 1 : 0), "one warning that says why: \(worker.stderrText)")
                        #expect(!worker.stderrText.contains("\"level\":\"error\""), "\(worker.stderrText)")
                    }
                }
            }
        }
    }
}
