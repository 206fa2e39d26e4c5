import Foundation
import PostgresClient
import TestSupport
import Testing

/// The worker's background prune (`habit.prune_sync` at start-up, then hourly): it forgets
/// tombstones and replay records past `--sync-retention-days`, and a failing prune is a log
/// line, never the worker's end.
@Suite("habit serve: sync prune")
struct SyncPruneTests {
    @Test("at start-up: tombstones and replay records older than --sync-retention-days are deleted, newer ones kept")
    func pruneAtStartUp() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            let user = UUID()
            try admin.execute("""
                INSERT INTO habit.sync_tombstones (user_id, kind, key, change_seq, deleted_at) VALUES
                    (\(user), 'habits', \(UUID().uuidString.lowercased()), 1, now() - interval '31 days'),
                    (\(user), 'habits', \(UUID().uuidString.lowercased()), 2, now() - interval '29 days')
                """)
            try admin.execute("""
                INSERT INTO habit.sync_mutations (user_id, client_id, mutation_id, outcome, created_at) VALUES
                    (\(user), 'phone', 'old', '{"result":null}', now() - interval '31 days'),
                    (\(user), 'phone', 'new', '{"result":null}', now() - interval '1 day')
                """)
            try WorkerProcess.withServe(databaseURL: try database.workerURL(), arguments: ["--pool-size", "1", "--sync-retention-days", "30"]) { (worker: WorkerProcess) throws in
                #expect(try waitForLog(worker, containing: #""msg":"sync pruned""#))
                #expect(worker.stderrText.contains(#""msg":"sync pruned","mutations":1,"#) && worker.stderrText.contains(#""retention_days":30,"tombstones":1}"#), "\(worker.stderrText.suffix(2_000))")
                #expect(try admin.queryOne("SELECT array_agg(change_seq)::text FROM habit.sync_tombstones WHERE user_id = \(user)").decode(String.self, at: 0) == "{2}")
                #expect(try admin.queryOne("SELECT array_agg(mutation_id)::text FROM habit.sync_mutations WHERE user_id = \(user)").decode(String.self, at: 0) == "{new}")
            }
        }
    }

    @Test("a failing prune is a warning; the worker serves on")
    func failingPruneIsNotFatal() throws {
        try TestDatabase.with { database in
            let admin = try database.connect()
            defer { admin.close() }
            try admin.execute("REVOKE EXECUTE ON FUNCTION habit.prune_sync(interval) FROM habit_worker")
            try WorkerProcess.withServe(databaseURL: try database.workerURL(), arguments: ["--pool-size", "1"]) { (worker: WorkerProcess) throws in
                #expect(try waitForLog(worker, containing: #""msg":"sync prune failed""#))
                #expect(try worker.call("system.health", nil)["database"] == "ok")
            }
        }
    }

    /// Waits (30 s at most) for a log line of the worker containing `text`.
    private func waitForLog(_ worker: WorkerProcess, containing text: String) throws -> Bool {
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline {
            if worker.stderrText.contains(text) { return true }
            usleep(20_000)
        }
        return false
    }
}
