import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL for `habit serve` without a database URL: a data directory under
/// the working directory (default `.habit/`), reachable only through a unix socket in a
/// 0700 directory — no TCP port. Started on first use and left running for the next
/// worker; `habit db stop` stops it.
///
/// initdb and postgres refuse to run as root, so under root they run as the `postgres`
/// system user (Debian's postgresql package creates it), which must be able to reach the
/// directory.
public struct EmbeddedServer: Sendable {
    public let directory: String
    public let binDirectory: String
    public static let databaseName = "habit"

    public var dataDirectory: String { directory + "/pgdata" }
    public var logFile: String { directory + "/server.log" }

    /// The socket directory: inside `directory`, unless that path is too long for a unix
    /// socket address (107 bytes), then a per-directory folder under /tmp.
    public var socketDirectory: String {
        let inside = directory + "/socket"
        if (inside + "/.s.PGSQL.5432").utf8.count < 100 { return inside }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325 // FNV-1a of the path
        for byte in directory.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "/tmp/habit-socket-\(String(hash, radix: 16))"
    }

    public init(directory: String, binDirectory: String? = nil) throws {
        let absolute = URL(fileURLWithPath: directory, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL.path
        self.directory = absolute
        self.binDirectory = try binDirectory ?? Self.locateBinDirectory()
    }

    public static func locateBinDirectory() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["HABIT_PG_BINDIR"], !explicit.isEmpty { return explicit }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        let ordered = versions.contains(15) ? [15] + versions.filter { $0 != 15 } : versions
        for version in ordered {
            let candidate = "\(root)/\(version)/bin"
            if FileManager.default.isExecutableFile(atPath: candidate + "/initdb") { return candidate }
        }
        throw EmbeddedServerError.notInstalled
    }

    /// Superuser connection string (migrations, administration).
    public var adminConnectionString: String {
        "host='\(socketDirectory)' user=postgres dbname=\(Self.databaseName)"
    }

    /// The worker's connection string: the `habit_worker` login role, which can do nothing
    /// but `SET LOCAL ROLE authenticated`.
    public var workerConnectionString: String {
        "host='\(socketDirectory)' user=habit_worker dbname=\(Self.databaseName)"
    }

    /// The batch job's connection string: the least-privileged `habit_batch` role.
    public var batchConnectionString: String {
        "host='\(socketDirectory)' user=habit_batch dbname=\(Self.databaseName)"
    }

    var runsAsRoot: Bool { geteuid() == 0 }

    public var isInitialized: Bool { FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") }

    public func isRunning() -> Bool {
        guard isInitialized else { return false }
        return (try? runServerTool(["pg_ctl", "status", "-D", dataDirectory])) != nil
    }

    /// Initializes (once) and starts the server if it is not running, then makes sure the
    /// `habit` database exists. Safe to call from several workers at once (a file lock).
    public func start() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let lock = try FileLock(path: directory + "/.lock")
        defer { lock.unlock() }
        try prepareOwnership()
        if !isInitialized {
            try runServerTool(["initdb", "-D", dataDirectory, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                               "--locale=C.UTF-8", "--no-instructions"])
        }
        if !isRunning() {
            try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            if runsAsRoot { try chownToPostgres(socketDirectory) }
            let options = "-c listen_addresses='' -c unix_socket_directories='\(socketDirectory)' -c unix_socket_permissions=0700"
            do {
                try runServerTool(["pg_ctl", "start", "-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-o", options])
            } catch {
                let tail = (try? String(contentsOfFile: logFile, encoding: .utf8))?.split(separator: "\n").suffix(5).joined(separator: "\n") ?? ""
                throw EmbeddedServerError.startFailed("\(error)\n\(tail)")
            }
        }
        try createDatabaseIfMissing()
    }

    public func stop() throws {
        guard isRunning() else { return }
        try runServerTool(["pg_ctl", "stop", "-D", dataDirectory, "-m", "fast", "-w", "-t", "60"])
    }

    private func createDatabaseIfMissing() throws {
        let check = try runServerTool(["psql", "-h", socketDirectory, "-U", "postgres", "-d", "postgres", "-Atc",
                                       "SELECT 1 FROM pg_database WHERE datname = '\(Self.databaseName)'"])
        if check.trimmingCharacters(in: .whitespacesAndNewlines) != "1" {
            try runServerTool(["createdb", "-h", socketDirectory, "-U", "postgres", Self.databaseName])
        }
    }

    /// Under root the data directory belongs to `postgres`, which must be able to reach it
    /// (every parent directory must let it through).
    private func prepareOwnership() throws {
        guard runsAsRoot else { return }
        try chownToPostgres(directory)
        guard (try? run("/usr/sbin/runuser", ["-u", "postgres", "--", "test", "-w", directory])) != nil else {
            throw EmbeddedServerError.inaccessible(directory)
        }
    }

    private func chownToPostgres(_ path: String) throws {
        try run("/bin/chown", ["-R", "postgres:", path])
    }

    /// Runs a PostgreSQL program from the bin directory, as `postgres` when we are root.
    @discardableResult
    private func runServerTool(_ arguments: [String]) throws -> String {
        let program = binDirectory + "/" + arguments[0]
        if runsAsRoot {
            return try run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments.dropFirst())
        }
        return try run(program, Array(arguments.dropFirst()))
    }

    @discardableResult
    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(executable, arguments)
        guard result.status == 0 else {
            throw EmbeddedServerError.commandFailed(([executable] + arguments).joined(separator: " "), result.output)
        }
        return result.output
    }
}

/// Runs a program to completion with posix_spawn and waitpid, output captured in a file.
///
/// Not Foundation's Process: `pg_ctl start` leaves a daemon behind, and Process watches
/// for the child's end through a descriptor the daemon inherits, so it would wait for the
/// server to stop. Here the child gets only stdin (/dev/null) and stdout/stderr (a file);
/// every other descriptor is closed before exec.
enum ChildProcess {
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let outputPath = NSTemporaryDirectory() + "habit-cmd-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // posix_spawn_file_actions_addclosefrom_np is not exported to Swift: close each open
        // descriptor (as listed now) in the child instead.
        let open = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap(Int32.init)
        for descriptor in open where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw EmbeddedServerError.commandFailed(executable, String(cString: strerror(spawned)))
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw EmbeddedServerError.commandFailed(executable, String(cString: strerror(errno))) }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED/WEXITSTATUS are macros: decode the wait status by hand.
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output)
    }
}

public enum EmbeddedServerError: Error, CustomStringConvertible {
    case notInstalled
    case inaccessible(String)
    case startFailed(String)
    case commandFailed(String, String)

    public var description: String {
        switch self {
        case .notInstalled:
            "PostgreSQL server programs not found under /usr/lib/postgresql/*/bin. Install them (apt-get install postgresql), set HABIT_PG_BINDIR, or point --database-url/DATABASE_URL at a server."
        case .inaccessible(let directory):
            "running as root, the embedded server runs as the postgres user, which cannot reach \(directory). Choose a data directory it can reach with --data-dir (e.g. /var/lib/habit)."
        case .startFailed(let detail):
            "the embedded PostgreSQL did not start: \(detail)"
        case .commandFailed(let command, let output):
            "\(command) failed: \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
        }
    }
}

/// An exclusive advisory file lock (flock), released on unlock or process exit.
final class FileLock {
    private var descriptor: Int32

    init(path: String) throws {
        descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw EmbeddedServerError.commandFailed("open \(path)", String(cString: strerror(errno))) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw EmbeddedServerError.commandFailed("flock \(path)", String(cString: strerror(errno))) }
        }
    }

    func unlock() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    deinit { unlock() }
}
