import Foundation
import HabitStore
import PostgresClient
import TestSupport
import Testing

/// `habit migrate` and `habit weekly-counts` through pgbouncer 1.18 in transaction mode with
/// default settings. With fixed statement names, a second `habit migrate` failed on a server
/// connection that still held the first run's statements (42P05).
@Suite("deployment: habit migrate and weekly-counts through pgbouncer (transaction mode)", .serialized)
struct PooledCommandsTests {
    static func habit(_ arguments: [String]) throws -> WorkerProcess.CommandResult {
        try WorkerProcess.run(try WorkerProcess.binaryPath(), arguments, environment: WorkerProcess.childEnvironment())
    }

    @Test("migrate twice, then weekly-counts twice, through one pooled server connection: all succeed")
    func commandsThroughThePooler() throws {
        try TestDatabase.with(migrated: false) { database in
            try PgBouncer.with(poolSize: 1) { bouncer in
                let owner = try bouncer.url(user: "postgres", database: database.name)
                let migrations = ["--migrations-dir", TestDatabase.migrationsDirectory]
                for run in 1...2 {
                    let result = try Self.habit(["migrate", "--database-url", owner] + migrations)
                    #expect(result.status == 0, "run \(run): \(result.stderr)")
                    #expect(!result.stderr.contains("42P05") && !result.stderr.contains("26000"), "run \(run): \(result.stderr)")
                }
                let batch = try bouncer.url(user: "habit_batch", database: database.name)
                var outputs: [String] = []
                for run in 1...2 {
                    let result = try Self.habit(["weekly-counts", "--database-url", batch, "--from", "2026-01-05", "--to", "2026-01-18"])
                    #expect(result.status == 0, "run \(run): \(result.stderr)")
                    outputs.append(result.stdout)
                }
                #expect(outputs[0] == outputs[1] && outputs[0].hasPrefix("user_id,"), "\(outputs)")

                // --store --incremental (two transactions a run: start tracking, then claim and
                // store) and --work-mem, through the same pooled connection: the first run computes
                // the range in full, the second finds nothing marked.
                let incremental = ["weekly-counts", "--database-url", batch, "--from", "2026-01-05", "--to", "2026-01-18",
                                   "--store", "--incremental", "--work-mem", "64MB"]
                let first = try Self.habit(incremental)
                #expect(first.status == 0 && first.stderr.contains("2 new week(s) in full"), "\(first.stderr)")
                let second = try Self.habit(incremental)
                #expect(second.status == 0 && second.stderr.contains("recomputed 0 changed user(s), 0 new week(s) in full"), "\(second.stderr)")
            }
        }
    }

    @Test("weekly-counts refuses --incremental without --store or with --user, and a malformed --work-mem, before connecting (exit 64)")
    func incrementalUsageErrors() throws {
        let base = ["weekly-counts", "--database-url", "postgresql:///habit?host=/nonexistent-habit", "--from", "2026-01-05", "--to", "2026-01-18"]
        for (extra, complaint) in [(["--incremental"], "--incremental needs --store"),
                                   (["--store", "--incremental", "--user", UUID().uuidString.lowercased()], "takes no --user"),
                                   (["--work-mem", "lots"], "--work-mem must be a size")] {
            let result = try Self.habit(base + extra)
            #expect(result.status == 64 && result.stderr.contains(complaint), "\(extra): \(result.status) \(result.stderr)")
        }
    }
}
