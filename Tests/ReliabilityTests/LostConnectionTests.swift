import Foundation
import PostgresClient
import TestSupport
import Testing

/// The worker's backends are killed (`pg_terminate_backend`) again and again while it serves
/// a steady load. Allowed: the request running on a killed backend fails, with -32010
/// database_unavailable. Not allowed: any other failure, a failure of a request that was
/// not in flight during some kill, the worker exiting.
///
/// Size: RELIABILITY_KILLS (default 40; scripts/reliability.sh kills: 1,000).
@Suite("Reliability: lost connections", .serialized)
struct LostConnectionTests {
    @Test("pg_terminate_backend during load: at most the in-flight requests fail (-32010), every later one succeeds, 0 worker exits")
    func terminateBackendsUnderLoad() throws {
        let kills = Scale.int("KILLS", default: 40)
        var rng = SeededGenerator(seed: Scale.uint64("SEED", default: 20_261_122))
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            try WorkerProcess.withServe(databaseURL: try database.workerURL(), arguments: ["--pool-size", "4"]) { worker in
                let fixture = try Fixture.create(worker)
                let a = fixture.userA
                let requests: [(String, WireJSON)] = [
                    ("habits.list", params(a)),
                    ("day.get", params(a, ["date": "2021-06-01"])),
                    ("tasks.today", params(a, ["date": .string(fixture.today)])),
                    ("profile.get", params(a)),
                    ("week.counts", params(a, ["date": "2021-06-01"])),
                ]
                let driver = LoadDriver(worker: worker, inFlight: 8, idPrefix: "k") { index in
                    if index % 3 == 0 {
                        // An idempotent write: safe whether or not a killed COMMIT went through.
                        let day = 1 + index % 28
                        return ("completions.set", params(a, ["template_id": .uuid(fixture.habitA),
                                                               "date": .string("2022-02-\(day < 10 ? "0" : "")\(day)"),
                                                               "completed": .bool(index % 2 == 0)]), "write")
                    }
                    let (method, parameters) = requests[index % requests.count]
                    return (method, parameters, "read")
                }
                driver.start()

                var killWindows: [(start: Double, end: Double)] = []
                var attempts = 0
                var noBackend = 0
                while killWindows.count < kills {
                    // Let the load move on between kills: block until two more responses.
                    driver.waitForResponses(atLeast: driver.receivedSoFar + 2)
                    try #require(driver.failures.isEmpty, "\(driver.failures)")
                    attempts += 1
                    let backends = try admin.workerBackends()
                    guard !backends.isEmpty else {
                        noBackend += 1 // every connection is being re-opened right now
                        continue
                    }
                    let victim = backends[Int.random(in: 0..<backends.count, using: &rng)]
                    let start = monotonicSeconds()
                    // With a timeout, pg_terminate_backend returns true only once the backend has exited.
                    let confirmed = try admin.queryOne("SELECT pg_terminate_backend(\(Int32(victim)), 10000)").decode(Bool.self, at: 0)
                    let end = monotonicSeconds()
                    if confirmed { killWindows.append((start, end)) }
                }
                let results = driver.stop()
                #expect(driver.failures.isEmpty, "\(driver.failures)")

                // Every failure is -32010 and its request was in flight during some kill.
                let failed = results.filter { !$0.outcome.isSuccess }
                // Known bug (ConnectionKillTests): a backend terminated just as a transaction's
                // pipeline ends leaves the connection busy yet "alive"; requests on it then fail
                // with -32603 (misuse: "called while a transaction is already open") until libpq
                // notices the closed socket. Kept apart so every other check stays strict.
                let internalErrors = failed.filter { $0.outcome.code == Code.internalError }
                let lostFailures = failed.filter { $0.outcome.code != Code.internalError }
                let wrongCode = lostFailures.filter { $0.outcome.code != Code.databaseUnavailable || $0.outcome.reason != "database_unavailable" }
                let notInFlight = lostFailures.filter { result in
                    !killWindows.contains { $0.start <= result.outcome.receivedAt && result.outcome.sentAt <= $0.end }
                }
                let logs = KnownBugs.errorLogs(of: worker)
                #expect(logs.unknown.isEmpty, "error logs no known bug explains: \(logs.unknown.prefix(3))")
                // Regression check for a fixed bug (see docs/reliability.md, "Bugs found").
                #expect(internalErrors.isEmpty, "\(internalErrors.count) internal errors; error logs: \(logs.known.prefix(3))")
                #expect(wrongCode.isEmpty, "failures other than database_unavailable: \(wrongCode.prefix(5).map(\.outcome.raw))")
                #expect(notInFlight.isEmpty, "requests failed that were not in flight during a kill: \(notInFlight.prefix(5).map(\.outcome.raw))")
                #expect(lostFailures.count <= killWindows.count, "\(lostFailures.count) failures for \(killWindows.count) kills")

                // Afterwards: every request succeeds, on fresh connections.
                let after = (0..<20).map { index in requests[index % requests.count] }
                for (index, (method, parameters)) in after.enumerated() {
                    let response = try worker.request(method, params: parameters, id: .string("after-\(index)"))
                    #expect(response.isSuccess, "after the kills: \(response.raw)")
                }
                #expect(worker.isRunning, "the worker exited")
                let lostLogs = worker.logCount("database connection lost")
                worker.closeInput()
                #expect(try worker.remainingOutput().isEmpty)
                let status = worker.waitForExit()
                #expect(status == 0)

                let latencies = results.map { $0.outcome.receivedAt - $0.outcome.sentAt }
                Figures.record("lost-connections", [
                    "kills_confirmed": killWindows.count, "kill_attempts": attempts, "rounds_without_backend": noBackend,
                    "requests": results.count + after.count, "failed_database_unavailable": lostFailures.count,
                    "failed_other": wrongCode.count + notInFlight.count, "internal_errors_known_bug": internalErrors.count,
                    "after_kills_ok": after.count, "connection_lost_logs": lostLogs, "worker_exit_status": Int(status ?? -1),
                    "p50_ms": percentile(latencies, 0.5) * 1_000, "p99_ms": percentile(latencies, 0.99) * 1_000,
                ])
            }
        }
    }
}
