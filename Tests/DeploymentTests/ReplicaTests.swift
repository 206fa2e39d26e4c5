import Foundation
import PostgresClient
import TestSupport
import Testing

/// A primary and a hot standby of the test's own (scripts/replica-tmp); `with` stops both and
/// deletes their directory on every path.
struct ReplicaServers {
    let directory: String
    let primaryURL: String
    let standbyURL: String

    private static var script: String { TestDatabase.repositoryRoot.appendingPathComponent("scripts/replica-tmp").path }

    static func with<Value>(_ body: (ReplicaServers) throws -> Value) throws -> Value {
        let directory = "/tmp/habit-replica.wt\(UUID().uuidString.lowercased().prefix(8))"
        // A failed start tears itself down; stop is for every other path.
        defer { _ = try? WorkerProcess.run("/bin/bash", [script, "stop", directory], environment: environment) }
        let started = try WorkerProcess.checked(WorkerProcess.run("/bin/bash", [script, "start", directory], environment: environment),
                                                "replica-tmp start")
        func exported(_ name: String) throws -> String {
            let prefix = "export \(name)='"
            let line = try #require(started.stdout.split(separator: "\n").first { $0.hasPrefix(prefix) }, "no \(name) in \(started.stdout)")
            return String(line.dropFirst(prefix.count).dropLast())
        }
        return try body(ReplicaServers(directory: directory, primaryURL: try exported("PRIMARY_URL"),
                                       standbyURL: try exported("STANDBY_URL")))
    }

    /// Waits until the standby has replayed the primary's current WAL position (polls
    /// pg_last_wal_replay_lsn; no fixed sleep decides anything). Returns the seconds waited.
    @discardableResult
    func waitForReplay(timeout: TimeInterval = 30, sourceLocation: SourceLocation = #_sourceLocation) throws -> TimeInterval {
        let primary = try Connection(primaryURL), standby = try Connection(standbyURL)
        defer { primary.close(); standby.close() }
        let target = try primary.queryOne("SELECT pg_current_wal_lsn()::text").decode(String.self, at: 0)
        let started = Date()
        while Date().timeIntervalSince(started) < timeout {
            if try standby.queryOne("SELECT pg_last_wal_replay_lsn() >= \(target)::pg_lsn").decode(Bool.self, at: 0) {
                return Date().timeIntervalSince(started)
            }
            usleep(5_000)
        }
        Issue.record("the standby did not replay \(target) within \(timeout) s", sourceLocation: sourceLocation)
        throw CancellationError()
    }

    private static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        return environment
    }
}

/// `habit weekly-counts` on a hot standby (issue #20, read replica): the batch reads the
/// standby and stores through the primary, or refuses to store on a read-only server.
@Suite("deployment: weekly counts from a hot standby")
struct ReplicaTests {
    static func habit(_ arguments: [String], environment: [String: String] = [:]) throws -> WorkerProcess.CommandResult {
        try WorkerProcess.run(try WorkerProcess.binaryPath(), arguments, environment: WorkerProcess.childEnvironment(environment))
    }

    /// The stored rows in the CSV layout of `habit weekly-counts` (NULL rate: empty).
    static func stored(_ url: String) throws -> [String] {
        let connection = try Connection(url)
        defer { connection.close() }
        return try connection.query("""
            SELECT format('%s,%s,%s,%s,%s,%s,%s,%s', user_id, week_start, completions, days_with_completion, active_habit_days,
                          due_habit_days, skipped_habit_days, completion_rate)
            FROM public.weekly_completion_counts WHERE week_starts_on = 'monday' ORDER BY user_id, week_start
            """).map { try $0.decode(String.self, at: 0) }
    }

    /// Three users with two daily habits each and a different pattern of completions and
    /// skips over the 28 days before 2026-03-01, written on the primary.
    static func seed(_ url: String) throws {
        let connection = try Connection(url)
        defer { connection.close() }
        let first = CalendarDate(iso8601: "2026-02-01")!
        try connection.withTransaction { connection in
            try connection.execute("SET LOCAL habit.backfill = 'on'")
            for (index, zone) in ["UTC", "Europe/Berlin", "America/New_York"].enumerated() {
                let user = UUID()
                try connection.execute("INSERT INTO public.profiles (user_id, timezone) VALUES (\(user), \(zone))")
                for name in ["a", "b"] {
                    let habit = try connection.queryOne("""
                        INSERT INTO public.habit_templates (user_id, name, activated_at)
                        VALUES (\(user), \(name), '2026-01-20') RETURNING id
                        """).decode(UUID.self, at: 0)
                    let skipped = 7 + index
                    for offset in 0..<28 where offset != skipped && (offset + index) % (name == "a" ? 2 : 3) == 0 {
                        try connection.execute("""
                            INSERT INTO public.habit_completions (user_id, template_id, completed_date)
                            VALUES (\(user), \(habit), \(first.adding(days: offset)))
                            """)
                    }
                    try connection.execute("""
                        INSERT INTO public.habit_skips (user_id, template_id, skipped_date) VALUES (\(user), \(habit), \(first.adding(days: skipped)))
                        """)
                }
            }
        }
    }

    @Test("identical output from primary and standby after catch-up; --store reads the standby and writes the primary; --store on the standby alone is refused")
    func weeklyCountsFromTheStandby() throws {
        try ReplicaServers.with { servers in
            let migrated = try Self.habit(["migrate", "--database-url", servers.primaryURL])
            try #require(migrated.status == 0, "migrate: \(migrated.stderr)")
            try Self.seed(servers.primaryURL)
            try servers.waitForReplay()

            let range = ["--from", "2026-02-01", "--to", "2026-02-28"]
            let fromPrimary = try Self.habit(["weekly-counts", "--database-url", servers.primaryURL] + range)
            let fromStandby = try Self.habit(["weekly-counts", "--database-url", servers.standbyURL] + range)
            try #require(fromPrimary.status == 0, "primary: \(fromPrimary.stderr)")
            try #require(fromStandby.status == 0, "standby: \(fromStandby.stderr)")
            let rows = fromPrimary.stdout.split(separator: "\n").dropFirst().map(String.init)
            #expect(rows.count == 3 * 5, "3 users × 5 Monday weeks: \(fromPrimary.stdout)")
            #expect(rows.contains { !$0.hasSuffix(",") && !$0.contains(",0,0,") }, "some counts are not zero")
            #expect(fromStandby.stdout == fromPrimary.stdout)

            // Only the standby's URL: refused before computing, nothing written anywhere.
            let refused = try Self.habit(["weekly-counts", "--store", "--database-url", servers.standbyURL] + range)
            #expect(refused.status == 64, "\(refused)")
            #expect(refused.stderr.contains("read-only") && refused.stderr.contains("--store-url"), "\(refused.stderr)")
            // A read-only --store-url is refused too.
            let readOnlyTarget = try Self.habit(["weekly-counts", "--store", "--database-url", servers.primaryURL,
                                                 "--store-url", servers.standbyURL] + range)
            #expect(readOnlyTarget.status == 64 && readOnlyTarget.stderr.contains("--store-url server is read-only"), "\(readOnlyTarget)")
            #expect(try Self.stored(servers.primaryURL).isEmpty)

            // Read from the standby, write to the primary: the rows are the primary's own output.
            let storedRun = try Self.habit(["weekly-counts", "--store", "--database-url", servers.standbyURL,
                                            "--store-url", servers.primaryURL] + range)
            #expect(storedRun.status == 0, "\(storedRun)")
            #expect(storedRun.stderr.contains("stored 15 changed row(s), deleted 0"), "\(storedRun.stderr)")
            #expect(try Self.stored(servers.primaryURL) == rows)
            // Again through HABIT_STORE_URL, after catch-up: nothing changed, nothing written.
            try servers.waitForReplay()
            let again = try Self.habit(["weekly-counts", "--store", "--database-url", servers.standbyURL] + range,
                                       environment: ["HABIT_STORE_URL": servers.primaryURL])
            #expect(again.status == 0 && again.stderr.contains("stored 0 changed row(s), deleted 0"), "\(again)")
            // --store-url without --store is a usage error.
            let stray = try Self.habit(["weekly-counts", "--database-url", servers.standbyURL, "--store-url", servers.primaryURL] + range)
            #expect(stray.status == 64 && stray.stderr.contains("--store-url is only used with --store"), "\(stray)")
        }
    }
}
