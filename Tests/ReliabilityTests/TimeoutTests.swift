import Foundation
import PostgresClient
import TestSupport
import Testing

/// Statement timeouts: a request stuck behind a row lock answers -32011 timeout, its
/// transaction is rolled back, the connection is reused (same backend, no reconnect), and no
/// worker session is ever left idle in a transaction.
///
/// Durations (timeout + 0.5 s) are not asserted here; the figures are recorded and
/// scripts/reliability.sh timeouts checks them. Sizes: RELIABILITY_TIMEOUT_MS (default 300),
/// RELIABILITY_TIMEOUTS (default 5), RELIABILITY_SOAK_REQUESTS (default 1,500).
@Suite("Reliability: statement timeouts", .serialized)
struct TimeoutTests {
    @Test("a statement past the timeout answers -32011, is rolled back, and the same connection serves the next request")
    func timeoutThenReuse() throws {
        let timeout = Scale.int("TIMEOUT_MS", default: 300)
        let repeats = Scale.int("TIMEOUTS", default: 5)
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let locker = try database.connect()
            defer { locker.close() }
            try WorkerProcess.withServe(databaseURL: try database.workerURL(),
                                        arguments: ["--pool-size", "1", "--statement-timeout-ms", String(timeout)]) { worker in
                let fixture = try Fixture.create(worker)
                let a = fixture.userA
                let backends = try admin.workerBackends()
                #expect(backends.count == 1, "\(backends)")
                var latencies: [Double] = []
                var idleStates: [String] = []
                for round in 0..<repeats {
                    try locker.withTransaction { connection in
                        try connection.lockUserRowForUpdate("public.habit_templates", id: fixture.habitA)
                        let started = monotonicSeconds()
                        let response = try worker.request("habits.update", params: params(a, ["id": .uuid(fixture.habitA), "name": .string("T\(round)")]),
                                                          id: .string("timeout-\(round)"))
                        latencies.append(monotonicSeconds() - started)
                        #expect(response.code == Code.timeout && response.reason == "timeout", "\(response.raw)")
                        // Rolled back before the answer: the session is idle, not idle in transaction.
                        let state = try admin.queryOne("SELECT coalesce(state, '?') FROM pg_stat_activity WHERE pid = \(Int32(backends.first ?? 0))")
                            .decode(String.self, at: 0)
                        idleStates.append(state)
                        #expect(state == "idle", "worker session state after the timeout: \(state)")
                    }
                    // Lock released: the same request now succeeds, on the same backend.
                    let retry = try worker.request("habits.update", params: params(a, ["id": .uuid(fixture.habitA), "name": .string("R\(round)")]))
                    #expect(retry.result?["name"] == .string("R\(round)"), "\(retry.raw)")
                    #expect(try admin.workerBackends() == backends, "the connection was replaced after a timeout")
                }
                #expect(worker.logCount("database connection lost") == 0 && worker.logCount("database connect failed") == 0)
                worker.closeInput()
                #expect(try worker.remainingOutput().isEmpty)
                #expect(worker.waitForExit() == 0)
                Figures.record("timeout-reuse", [
                    "statement_timeout_ms": timeout, "timeouts": latencies.count,
                    "latency_max_ms": (latencies.max() ?? 0) * 1_000, "latency_p50_ms": percentile(latencies, 0.5) * 1_000,
                    "over_timeout_max_ms": ((latencies.max() ?? 0) * 1_000) - Double(timeout),
                    "same_backend": true, "session_states": Set(idleStates).sorted().joined(separator: ","),
                ])
            }
        }
    }

    @Test("soak with lock contention and timeouts: no session idle in transaction over 1 s, no lost connection, no internal error")
    func soakNoIdleInTransaction() throws {
        let total = Scale.int("SOAK_REQUESTS", default: 1_500)
        let timeout = Scale.int("TIMEOUT_MS", default: 300)
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            // PostgreSQL itself ends any worker session idle in a transaction for over 1 s; the
            // worker would then see a lost connection (-32010, "database connection lost").
            try admin.execute(Query(unsafeSQL: "ALTER ROLE habit_worker IN DATABASE \(database.name) SET idle_in_transaction_session_timeout = '1s'"))
            try WorkerProcess.withServe(databaseURL: try database.workerURL(),
                                        arguments: ["--pool-size", "4", "--statement-timeout-ms", String(timeout)]) { worker in
                let fixture = try Fixture.create(worker)
                let a = fixture.userA
                let habits = [fixture.habitA] + (0..<3).compactMap { index in
                    try? worker.call("habits.create", params(a, ["name": .string("Soak \(index)"), "activated_at": "2020-01-01T00:00:00Z"]))["id"]?
                        .stringValue.flatMap(UUID.init(uuidString:))
                }
                let tasks = [fixture.taskAActive, fixture.taskADone, fixture.taskANew]
                let driver = LoadDriver(worker: worker, inFlight: 16, idPrefix: "soak") { index in
                    guard index < total else { return nil }
                    let habit = habits[index % habits.count]
                    let day = "2023-03-\(10 + index % 18)"
                    switch index % 8 {
                    case 0: return ("completions.toggle", params(a, ["template_id": .uuid(habit), "date": .string(day)]), "toggle")
                    case 1: return ("completions.set", params(a, ["template_id": .uuid(habit), "date": .string(day), "completed": true]), "set")
                    case 2: return ("habits.update", params(a, ["id": .uuid(habit), "sort_order": .int(index % 50)]), "update")
                    case 3: return ("day.get", params(a, ["date": .string(day)]), "read")
                    case 4: return ("tasks.cycle", params(a, ["id": .uuid(tasks[index % tasks.count])]), "cycle")
                    case 5: return ("habits.delete", params(fixture.userB, ["id": .uuid(habit)]), "refused")
                    case 6: return ("week.counts", params(a, ["date": .string(day)]), "read")
                    default: return ("habits.create", params(a, ["name": "  "]), "invalid")
                    }
                }
                driver.start()

                // Row locks held by another session, for a number of responses at a time, so
                // requests queue behind them and time out.
                let locker = try database.connect()
                defer { locker.close() }
                var samples = 0
                var maxIdleInTransaction = 0.0
                var violations: [String] = []
                var lockRounds = 0
                while driver.receivedSoFar < total && driver.failures.isEmpty {
                    lockRounds += 1
                    let habit = habits[lockRounds % habits.count]
                    try locker.withTransaction { connection in
                        try connection.lockUserRowForUpdate("public.habit_templates", id: habit)
                        driver.waitForResponses(atLeast: min(total, driver.receivedSoFar + 40))
                        // Sample the worker's sessions (event-driven: after responses, not on a clock).
                        let rows = try admin.query("""
                            SELECT pid, extract(epoch FROM now() - state_change)::float8 FROM pg_stat_activity
                            WHERE datname = current_database() AND application_name = 'habit-serve' AND state LIKE 'idle in transaction%'
                            """)
                        samples += 1
                        for row in rows {
                            let seconds = try row.decode(Double.self, at: 1)
                            maxIdleInTransaction = max(maxIdleInTransaction, seconds)
                            if seconds > 1 { violations.append("pid \(try row.decode(Int.self, at: 0)) idle in transaction for \(seconds) s") }
                        }
                    }
                    driver.waitForResponses(atLeast: min(total, driver.receivedSoFar + 10))
                }
                let results = driver.stop()
                #expect(driver.failures.isEmpty, "\(driver.failures)")
                #expect(results.count == total)
                // No conflicts either: toggles of one habit queue on its row lock, and no two requests
                // lock rows in opposite orders.
                let forbidden = results.filter { [Code.databaseUnavailable, Code.internalError, Code.conflict].contains($0.outcome.code) }
                #expect(forbidden.isEmpty, """
                    \(forbidden.count) lost-connection/internal errors, first: \(forbidden.first?.outcome.raw ?? "")
                    worker log: \(worker.stderrText.split(separator: "\n").filter { $0.contains("error") }.prefix(5).joined(separator: "\n"))
                    """)
                let unexpectedSuccess = results.filter { ["refused", "invalid"].contains($0.tag) && $0.outcome.isSuccess }
                #expect(unexpectedSuccess.isEmpty)
                #expect(violations.isEmpty, "\(violations)")
                #expect(worker.logCount("database connection lost") == 0, "\(worker.stderrText.suffix(2_000))")
                #expect(worker.isRunning)
                worker.closeInput()
                #expect(try worker.remainingOutput().isEmpty)
                #expect(worker.waitForExit() == 0)
                let timeouts = results.filter { $0.outcome.code == Code.timeout }
                Figures.record("timeout-soak", [
                    "requests": results.count, "statement_timeout_ms": timeout, "timeouts": timeouts.count,
                    "lock_rounds": lockRounds, "activity_samples": samples,
                    "max_idle_in_transaction_ms": maxIdleInTransaction * 1_000, "violations": violations.count,
                    "lost_or_internal": forbidden.count,
                    "timeout_latency_max_ms": (timeouts.map { $0.outcome.receivedAt - $0.outcome.sentAt }.max() ?? 0) * 1_000,
                ])
            }
        }
    }
}
