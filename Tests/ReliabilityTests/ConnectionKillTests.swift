import Foundation
import PostgresClient
import TestSupport
import Testing

/// The connection-level root of the -32603 bursts seen in LostConnectionTests: a backend
/// terminated right as a one-round-trip transaction ends (after COMMIT, where the pipeline's
/// Sync would be answered) leaves `Connection` in libpq pipeline mode with a result pending.
/// `isAliveAfterIdle()` still says true, `transactionStatus` says `.active`, and every
/// `transaction(…)`/`withTransaction` then throws `.misuse` ("called while a transaction is
/// already open") — which the worker maps to -32603 and which does not make it drop the
/// connection — until libpq happens to read the closed socket.
///
/// The kill lands at a moment set by scheduling jitter (the killer waits for a number of
/// completed transactions, never for a time), so each round hits a different point of the
/// pipeline; a few rounds in a hundred hit the window. Rounds: RELIABILITY_CONNECTION_KILL_ROUNDS
/// (default 150; scripts/reliability.sh kills runs 2,000).
@Suite("Reliability: connections killed mid-pipeline", .serialized)
struct ConnectionKillTests {
    final class Progress: @unchecked Sendable {
        let condition = NSCondition()
        var completed = 0
        var stopped = false
    }

    @Test("after pg_terminate_backend at any point of a transaction, a connection is dead or idle — never alive but busy")
    func neverAliveButBusy() throws {
        let rounds = Scale.int("CONNECTION_KILL_ROUNDS", default: 150)
        try TestDatabase.with { database in
            var aliveButBusy: [String] = []
            var outcomes: [String: Int] = [:]
            for round in 0..<rounds {
                let connection = try database.connect()
                let pid = connection.backendPID
                let progress = Progress()
                let killAfter = round % 6
                let url = database.url
                let killed = DispatchSemaphore(value: 0)
                let killer = Thread {
                    defer { killed.signal() }
                    progress.condition.withLock {
                        while progress.completed < killAfter && !progress.stopped { progress.condition.wait() }
                    }
                    guard let admin = try? Connection(url, applicationName: "habit-tests") else { return }
                    defer { admin.close() }
                    _ = try? admin.execute("SELECT pg_terminate_backend(\(pid), 5000)")
                }
                killer.start()
                var outcome = "no effect"
                for _ in 0..<100_000 {
                    guard connection.isAliveAfterIdle() else {
                        outcome = "seen dead while idle"
                        break
                    }
                    if connection.transactionStatus != .idle {
                        outcome = "ALIVE BUT \(connection.transactionStatus)"
                        var next = ""
                        do { _ = try connection.transaction(statement: "SELECT 1") } catch { next = "\(error)" }
                        aliveButBusy.append("round \(round): isAliveAfterIdle() true, transactionStatus \(connection.transactionStatus); next transaction: \(next)")
                        break
                    }
                    do {
                        _ = try connection.transaction(prelude: ["SET LOCAL statement_timeout = 5000"], statement: "SELECT 1")
                    } catch let error as PostgresError {
                        outcome = error.isConnectionLost ? "lost during a transaction" : "other error: \(error.kind)"
                        break
                    }
                    progress.condition.withLock {
                        progress.completed += 1
                        progress.condition.broadcast()
                    }
                }
                progress.condition.withLock {
                    progress.stopped = true
                    progress.condition.broadcast()
                }
                killed.wait()
                connection.close()
                outcomes[outcome.hasPrefix("ALIVE") ? "alive but busy" : outcome, default: 0] += 1
            }
            #expect(outcomes.keys.allSatisfy { !$0.hasPrefix("other error") }, "\(outcomes)")
            // Regression check for a fixed bug (see docs/reliability.md, "Bugs found").
            #expect(aliveButBusy.isEmpty, "\(aliveButBusy.count) of \(rounds) rounds: \(aliveButBusy.prefix(3))")
            Figures.record("connection-kill-rounds", [
                "rounds": rounds, "alive_but_busy": aliveButBusy.count,
                "outcomes": outcomes.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: " "),
            ])
        }
    }
}
