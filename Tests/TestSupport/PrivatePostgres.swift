import Foundation

/// A PostgreSQL server of a test's own (scripts/pg-tmp in a fresh /tmp/habit-pg.* directory)
/// that the test may stop and start, e.g. to simulate an outage. Unix socket only.
/// `with` deletes it on every path.
public final class PrivatePostgresServer: @unchecked Sendable {
    public let directory: String
    /// Superuser URL of the `postgres` database.
    public var adminURL: String { "postgresql://postgres@/postgres?host=\(directory)/socket" }
    /// Extra server settings (scripts/pg-tmp's PG_TMP_OPTIONS), e.g.
    /// `-c shared_preload_libraries=pg_stat_statements`.
    public let options: String

    private static var script: String { TestDatabase.repositoryRoot.appendingPathComponent("scripts/pg-tmp").path }

    private init(directory: String, options: String) {
        self.directory = directory
        self.options = options
    }

    /// Starts a new server (initdb + start), runs `body`, and always destroys the server.
    public static func with<Value>(options: String = "", _ body: (PrivatePostgresServer) throws -> Value) throws -> Value {
        let suffix = UUID().uuidString.lowercased().prefix(8)
        let server = PrivatePostgresServer(directory: "/tmp/habit-pg.wt\(suffix)", options: options)
        defer { server.destroy() }
        try server.start()
        return try body(server)
    }

    /// Starts the server (initialising the directory the first time). Idempotent only when stopped.
    public func start() throws {
        try WorkerProcess.checked(WorkerProcess.run("/bin/bash", [Self.script, "start", directory], environment: Self.environment.merging(["PG_TMP_OPTIONS": options]) { $1 }), "pg-tmp start")
    }

    /// `pg_ctl stop -m fast`: open sessions are terminated, like a server going away.
    public func stop() throws {
        let bindir = try WorkerProcess.checked(WorkerProcess.run("/bin/bash", [Self.script, "bindir"], environment: Self.environment), "pg-tmp bindir")
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        var command = ["\(bindir)/pg_ctl", "-D", "\(directory)/data", "-m", "fast", "-w", "-t", "60", "stop"]
        if getuid() == 0 { command = ["runuser", "-u", "postgres", "--"] + command }
        try WorkerProcess.checked(WorkerProcess.run("/usr/bin/env", command, environment: Self.environment), "pg_ctl stop")
    }

    /// Stops the server and deletes its directory (best effort, never throws).
    public func destroy() {
        _ = try? WorkerProcess.run("/bin/bash", [Self.script, "stop", directory], environment: Self.environment)
    }

    private static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        return environment
    }
}
