import Foundation
import PostgresClient

/// A pgbouncer of a test's own (scripts/pgbouncer-tmp): Debian's pgbouncer 1.18 in
/// transaction mode, on a unix socket in a fresh /tmp/habit-pgb.* directory, in front of a
/// PostgreSQL server (normally the suite's, where each test has its own database: the
/// bouncer forwards any database name). `with` stops it and deletes its directory on every path.
public final class PgBouncer: @unchecked Sendable {
    public let directory: String
    /// The name of the socket, `.s.PGSQL.<port>`, in `socketDirectory`.
    public let port: Int
    /// `default_pool_size`: server connections per (database, user) pair.
    public let poolSize: Int
    public var socketDirectory: String { "\(directory)/socket" }

    private static var script: String { TestDatabase.repositoryRoot.appendingPathComponent("scripts/pgbouncer-tmp").path }

    private init(directory: String, port: Int, poolSize: Int) {
        self.directory = directory
        self.port = port
        self.poolSize = poolSize
    }

    /// libpq conninfo reaching `database` as `user` through this pgbouncer.
    public func url(user: String, database: String) throws -> String {
        try ConnectionString.applying(["host": socketDirectory, "port": String(port), "user": user, "dbname": database], to: "")
    }

    /// Starts a pgbouncer in front of the suite's server (`DATABASE_URL`), runs `body`, and
    /// always stops it.
    public static func with<Value>(poolSize: Int = 4, _ body: (PgBouncer) throws -> Value) throws -> Value {
        let (host, port) = try suiteServerAddress()
        return try with(serverHost: host, serverPort: port, poolSize: poolSize, body)
    }

    /// Starts a pgbouncer in front of the server at `serverHost` (a socket directory or host
    /// name) and `serverPort`, runs `body`, and always stops it.
    public static func with<Value>(serverHost: String, serverPort: Int, poolSize: Int = 4,
                                   _ body: (PgBouncer) throws -> Value) throws -> Value {
        let suffix = UUID().uuidString.lowercased().prefix(8)
        let bouncer = PgBouncer(directory: "/tmp/habit-pgb.t\(suffix)", port: 6432, poolSize: poolSize)
        defer { bouncer.destroy() }
        try WorkerProcess.checked(WorkerProcess.run("/bin/bash", [script, "start", "--server-host", serverHost, "--server-port", String(serverPort),
                                                  "--pool-size", String(poolSize), "--port", String(bouncer.port), bouncer.directory],
                                    environment: environment), "pgbouncer-tmp start")
        return try body(bouncer)
    }

    /// Stops pgbouncer and deletes its directory (best effort, never throws).
    public func destroy() {
        _ = try? WorkerProcess.run("/bin/bash", [Self.script, "stop", directory], environment: Self.environment)
    }

    /// Runs a command on pgbouncer's admin console (`SHOW SERVERS`, `RECONNECT`, …) with psql
    /// (the console speaks only the simple query protocol) and returns its rows, each as
    /// column name → text.
    public func console(_ command: String) throws -> [[String: String]] {
        let result = try WorkerProcess.checked(WorkerProcess.run("/usr/bin/env", [
            "psql", "-X", "-q", "-A", "-F", "\t", "-P", "footer=off", "-v", "ON_ERROR_STOP=1",
            "-h", socketDirectory, "-p", String(port), "-U", "postgres", "-d", "pgbouncer", "-c", command,
        ], environment: Self.environment), "psql \(command)")
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        guard let header = lines.first?.components(separatedBy: "\t") else { return [] }
        return lines.dropFirst().map { line in
            let fields = line.components(separatedBy: "\t")
            var row: [String: String] = [:]
            for (index, name) in header.enumerated() { row[name] = index < fields.count ? fields[index] : "" }
            return row
        }
    }

    /// `SHOW SERVERS` / `SHOW CLIENTS` rows of one (database, user) pool.
    public func servers(database: String, user: String) throws -> [[String: String]] {
        try console("SHOW SERVERS").filter { $0["database"] == database && $0["user"] == user }
    }

    public func clients(database: String, user: String) throws -> [[String: String]] {
        try console("SHOW CLIENTS").filter { $0["database"] == database && $0["user"] == user }
    }

    /// The pgbouncer log so far (for failure messages).
    public var log: String {
        (try? String(contentsOfFile: "\(directory)/pgbouncer.log", encoding: .utf8)) ?? ""
    }

    /// Host (socket directory or name) and port of the suite's server, from DATABASE_URL.
    public static func suiteServerAddress() throws -> (host: String, port: Int) {
        let options = try ConnectionString.parse(TestDatabase.serverURL)
        let environment = ProcessInfo.processInfo.environment
        let host = options["host"] ?? environment["PGHOST"] ?? "/var/run/postgresql"
        let port = (options["port"] ?? environment["PGPORT"]).flatMap { Int($0) } ?? 5432
        return (host, port)
    }

    private static var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        // psql must not pick up a password file or service of the person running the tests.
        environment["PGPASSFILE"] = "/dev/null"
        environment.removeValue(forKey: "PGSERVICE")
        return environment
    }
}
