import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// Why `--prepared-statements off` exists: pgbouncer 1.18 in transaction mode does not track
/// protocol-level prepared statements (1.21+ can, with max_prepared_statements). The worker
/// prepares each statement once per *client* connection under names habit_1, habit_2, …, but
/// pgbouncer hands each transaction whichever *server* connection is free, where those names
/// are missing or belong to another client.
@Suite("deployment: prepared statements through pgbouncer 1.18 (transaction mode)", .serialized)
struct PreparedStatementsTests {
    static let user = UUID(uuidString: "7d9f0e2a-3c41-4b8e-9a57-1f2e3d4c5b6a")!

    @Test("two workers on one server connection: the second one's names collide (42P05) unless statements are unnamed",
          arguments: ["on", "off"])
    func namesCollide(prepared: String) throws {
        try TestDatabase.with { database in
            try PgBouncer.with(poolSize: 1) { bouncer in
                let url = try bouncer.url(user: "habit_worker", database: database.name)
                let arguments = ["--pool-size", "1", "--prepared-statements", prepared]
                try Workers.with(count: 2, databaseURL: url, arguments: arguments) { workers in
                    // The first worker prepares habit_1, habit_2, … on the only server connection.
                    #expect(try workers[0].request("profile.get", params: params(Self.user)).isSuccess)
                    let second = try workers[1].request("profile.get", params: params(Self.user))
                    if prepared == "on" {
                        #expect(second.code == Code.internalError, "\(second.raw)")
                        try Workers.stop(workers)
                        #expect(workers[1].stderrText.contains("42P05"), "\(workers[1].stderrText)")
                        #expect(workers[1].stderrText.contains(#"prepared statement \"habit_1\" already exists"#), "\(workers[1].stderrText)")
                    } else {
                        #expect(second.isSuccess, "\(second.raw)")
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
                        #expect(!workers[1].stderrText.contains("\"level\":\"error\""), "\(workers[1].stderrText)")
                    }
                }
            }
        }
    }

    @Test("one worker whose next transaction lands on another server connection: its names are missing there (26000) unless statements are unnamed",
          arguments: ["on", "off"])
    func namesMissing(prepared: String) throws {
        try TestDatabase.with { database in
            try PgBouncer.with(poolSize: 2) { bouncer in
                let url = try bouncer.url(user: "habit_worker", database: database.name)
                // Two transactions of our own take the two server connections in turn, so the
                // worker's first request can only run on one of them (B) and its second only
                // on the other (A), whatever order pgbouncer prefers.
                let holderA = try Connection(url, applicationName: "habit-tests", preparedStatements: false)
                defer { holderA.close() }
                let holderB = try Connection(url, applicationName: "habit-tests", preparedStatements: false)
                defer { holderB.close() }
                try WorkerProcess.withServe(databaseURL: url, arguments: ["--pool-size", "1", "--prepared-statements", prepared]) { worker in
                    var pids: [Int] = []
                    try holderA.execute("BEGIN")
                    pids.append(try holderA.queryOne("SELECT pg_backend_pid()").decode(Int.self, at: 0))
                    // A is held: the worker runs (and prepares its statements) on B.
                    let first = try worker.request("profile.get", params: params(Self.user))
                    #expect(first.isSuccess, "\(first.raw)")
                    try holderB.execute("BEGIN") // B is the only free one
                    pids.append(try holderB.queryOne("SELECT pg_backend_pid()").decode(Int.self, at: 0))
                    try holderA.execute("COMMIT")
                    // Only A is free: the worker's next transaction runs there.
                    let response = try worker.request("profile.get", params: params(Self.user))
                    try holderB.execute("COMMIT")
                    #expect(pids.count == 2 && pids[0] != pids[1], "\(pids)")
                    if prepared == "on" {
                        #expect(response.code == Code.internalError, "\(response.raw)")
                        try Workers.stop([worker])
                        #expect(worker.stderrText.contains("26000"), "\(worker.stderrText)")
                        #expect(worker.stderrText.contains(#"prepared statement \"habit_1\" does not exist"#), "\(worker.stderrText)")
                    } else {
                        #expect(response.isSuccess, "\(response.raw)")
                        try Workers.stop([worker])
                    }
                }
            }
        }
    }
}
