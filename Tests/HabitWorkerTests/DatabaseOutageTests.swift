import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// The worker's PostgreSQL goes away and comes back while the worker runs. Uses a private
/// server (scripts/pg-tmp) that the test stops and starts; it is deleted on every path.
@Suite("habit serve: database outage", .serialized)
struct DatabaseOutageTests {
    @Test("server stopped mid-session: -32010 promptly (in-flight and new requests), recovery without restarting the worker")
    func stopAndStartDuringSession() throws {
        try PrivatePostgresServer.with { server in
            let migrate = try WorkerProcess.run(try WorkerProcess.binaryPath(),
                                                ["migrate", "--database-url", server.adminURL, "--migrations-dir", TestDatabase.migrationsDirectory],
                                                environment: WorkerProcess.childEnvironment())
            try #require(migrate.status == 0, "habit migrate failed: \(migrate.stderr)")
            let workerURL = try ConnectionString.applying(["user": "habit_worker"], to: server.adminURL)
            // Prepared transactions keep their locks through a shutdown: the in-flight request
            // below then cannot complete before the server stops, whatever the timing.
            do {
                let admin = try Connection(server.adminURL, applicationName: "habit-tests")
                defer { admin.close() }
                try admin.execute("ALTER SYSTEM SET max_prepared_transactions = 4")
            }
            try server.stop()
            try server.start()

            try WorkerProcess.withServe(databaseURL: workerURL, arguments: ["--pool-size", "2", "--connect-timeout", "2",
                                                                            "--statement-timeout-ms", "25000"]) { worker in
                let user = UUID()
                let habit = try #require(try worker.createHabit(user: user, name: "Survivor").habitID)
                let today = try #require(try worker.call("day.get", params(user, ["date": "2026-01-01"]))["today"]?.stringValue)

                // A request in flight when the server goes down: it waits on a row lock held by a
                // prepared transaction, which outlives the shutdown (and is rolled back after it).
                do {
                    let blocker = try Connection(server.adminURL, applicationName: "habit-tests")
                    defer { blocker.close() }
                    try blocker.execute("BEGIN")
                    try blocker.lockUserRowForUpdate("public.habit_templates", id: habit)
                    try blocker.execute("PREPARE TRANSACTION 'habit_outage_lock'")
                }
                try worker.sendRequest("habits.update", params: params(user, ["id": .uuid(habit), "name": "Lost"]), id: "in-flight")

                try server.stop()

                let inFlight = try worker.response(id: "in-flight")
                expectError(inFlight, code: Code.databaseUnavailable, id: "in-flight", reason: "database_unavailable")

                // New requests, one at a time and several at once (both pool threads): each
                // answered -32010 (the hang guard is the only timeout here).
                let calls: [(String, WireJSON?)] = [
                    ("habits.list", params(user)), ("day.get", params(user, ["date": .string(today)])), ("system.health", nil),
                    ("completions.toggle", params(user, ["template_id": .uuid(habit), "date": .string(today)])),
                    ("profile.get", params(user)), ("habits.list", params(user)),
                ]
                for (method, parameters) in calls {
                    expectError(try worker.request(method, params: parameters), code: Code.databaseUnavailable, id: nil, reason: "database_unavailable")
                }
                for (index, (method, parameters)) in calls.enumerated() { try worker.sendRequest(method, params: parameters, id: .int(index)) }
                for index in calls.indices {
                    expectError(try worker.response(id: .int(index)), code: Code.databaseUnavailable, id: .int(index), reason: "database_unavailable")
                }
                // Methods that need no database still work.
                #expect(try worker.call("system.ping") == ["ok": true])
                #expect(worker.isRunning)

                try server.start()
                do {
                    let admin = try Connection(server.adminURL, applicationName: "habit-tests")
                    defer { admin.close() }
                    try admin.execute("ROLLBACK PREPARED 'habit_outage_lock'")
                }

                // Recovery: after a failed connect a thread answers -32010 at once for the
                // reconnect backoff (500 ms), so retry until a whole round of concurrent
                // requests succeeds. The pause only spaces out retries; the hang guard bounds it.
                let deadline = Date(timeIntervalSinceNow: WorkerProcess.defaultTimeout)
                var recovered = false
                var round = 0
                while !recovered && Date() < deadline {
                    round += 1
                    let ids = (0..<4).map { WireJSON.string("recover-\(round)-\($0)") }
                    for id in ids { try worker.sendRequest("habits.list", params: params(user), id: id) }
                    let responses = try ids.map { try worker.response(id: $0) }
                    for response in responses where !response.isSuccess {
                        expectError(response, code: Code.databaseUnavailable, id: nil, reason: "database_unavailable")
                    }
                    recovered = responses.allSatisfy(\.isSuccess)
                    if !recovered { Thread.sleep(forTimeInterval: 0.1) }
                }
                #expect(recovered, "the worker did not recover after the server restarted")

                // The data from before the outage is there; the in-flight update was not applied.
                let habits = try worker.call("habits.list", params(user))["habits"]?.arrayValue
                #expect(habits?.compactMap { $0["name"]?.stringValue } == ["Survivor"])
                #expect(try worker.call("completions.toggle", params(user, ["template_id": .uuid(habit), "date": .string(today)])) == ["completed": true])
                #expect(try worker.call("system.health")["database"] == "ok")

                // The worker never exited; it still stops cleanly.
                #expect(worker.isRunning)
                worker.closeInput()
                #expect(try worker.remainingOutput().isEmpty)
                #expect(worker.waitForExit() == 0)
            }
        }
    }

    @Test("server restarted while the worker is idle: the next requests succeed (stale connections are replaced before use)")
    func restartWhileIdle() throws {
        try PrivatePostgresServer.with { server in
            let migrate = try WorkerProcess.run(try WorkerProcess.binaryPath(),
                                                ["migrate", "--database-url", server.adminURL, "--migrations-dir", TestDatabase.migrationsDirectory],
                                                environment: WorkerProcess.childEnvironment())
            try #require(migrate.status == 0, "habit migrate failed: \(migrate.stderr)")
            let workerURL = try ConnectionString.applying(["user": "habit_worker"], to: server.adminURL)

            try WorkerProcess.withServe(databaseURL: workerURL, arguments: ["--pool-size", "1", "--log-level", "debug"]) { worker in
                let user = UUID()
                try worker.createHabit(user: user, name: "Before")
                // The one connection is open and idle; the server goes away and comes back.
                try server.stop()
                try server.start()
                // ConnectionPool.context(_:) promises to reconnect "when it broke while idle":
                // no request should see the outage that ended before it was sent.
                let first = try worker.request("habits.list", params: params(user))
                #expect(first.isSuccess, "first request after an idle restart: \(first.raw)\nstderr:\n\(worker.stderrText)")
                let second = try worker.request("habits.list", params: params(user))
                #expect(second.result?["habits"]?.arrayValue?.count == 1, "\(second.raw)")
                worker.closeInput()
                #expect(try worker.remainingOutput().isEmpty)
                #expect(worker.waitForExit() == 0)
            }
        }
    }
}
