import Foundation
import PostgresClient
#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL for `habit serve` without a database URL: a data directory (default
/// `.habit/` in the working directory: `atDefaultLocation`), reachable only through a unix
/// socket in a 0700 directory — no TCP port. Started on first use and left running for the
/// next worker, also after the last one exits; `habit db stop` stops it.
///
/// initdb and postgres refuse to run as root, so under root they run as the `postgres`
/// system user (Debian's postgresql package creates it), which must be able to reach the
/// directory (by default, one it can reach is chosen).
///
/// The server's programs run with `directory` as their working directory (the caller's may
/// be one the `postgres` user cannot enter, e.g. a 0700 home), only their exit status and
/// stdout are read (stderr goes into error messages, never into decisions), and the
/// `habit` database is checked and created over the socket through `PostgresClient`.
public struct EmbeddedServer: Sendable {
    public let directory: String
    public let binDirectory: String
    /// Why `directory` is not `.habit` in the working directory, when `atDefaultLocation`
    /// chose another one (said in the log or on stderr); nil otherwise.
    public private(set) var defaultLocationNote: String?
    public static let databaseName = "habit"

    /// Where root keeps the data directories of working directories the `postgres` user
    /// cannot enter (`atDefaultLocation`): root's, mode 0755, so that user can pass through.
    public static let sharedRoot = "/var/lib/habit"

    public var dataDirectory: String { directory + "/pgdata" }
    public var logFile: String { directory + "/server.log" }

    /// The socket directory: inside `directory`, unless that path is too long for a unix
    /// socket address (107 bytes), then a per-directory folder under /tmp. Either way `start()`
    /// uses it only when it is a real directory owned by the server's user with mode 0700
    /// (`prepareSocketDirectory`): a folder someone else made in /tmp is refused, not used.
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

    /// The server used when no data directory is configured: `.habit` in `workingDirectory`.
    ///
    /// Under root the server runs as `postgres`, which must reach its data directory. When it
    /// cannot enter `workingDirectory` (a 0700 home, a clone inside `mktemp -d`: issue 30),
    /// the data lives in `/var/lib/habit/<folder>-<hash of the working directory>` instead,
    /// made by `start()` owned by `postgres` with mode 0700. The name depends only on the
    /// working directory, so every command run from there (`habit db stop`, `db status`…)
    /// finds the server `habit serve` started. As an ordinary user the server runs as that
    /// user, who is in the working directory already: always `.habit`.
    public static func atDefaultLocation(workingDirectory: String = FileManager.default.currentDirectoryPath,
                                         binDirectory: String? = nil) throws -> EmbeddedServer {
        let inWorkingDirectory = (workingDirectory as NSString).appendingPathComponent(".habit")
        guard geteuid() == 0, getpwnam("postgres") != nil, !postgresCanEnter(workingDirectory) else {
            return try EmbeddedServer(directory: inWorkingDirectory, binDirectory: binDirectory)
        }
        var server = try EmbeddedServer(directory: sharedDirectory(for: workingDirectory), binDirectory: binDirectory)
        server.defaultLocationNote = "the postgres user (the embedded server's, under root) cannot enter \(workingDirectory), "
            + "so the embedded database is in \(server.directory) instead of \(inWorkingDirectory) "
            + "(the same for every command run from this directory; --data-dir chooses another)"
        return server
    }

    /// `/var/lib/habit/<last component of workingDirectory, in safe characters>-<FNV-1a of it>`.
    static func sharedDirectory(for workingDirectory: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in workingDirectory.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        let name = String((workingDirectory as NSString).lastPathComponent.filter { allowed.contains($0) }.prefix(40))
        let hex = String(hash, radix: 16)
        return sharedRoot + "/" + (name.isEmpty || name.hasPrefix(".") ? hex : name + "-" + hex)
    }

    /// Whether the `postgres` user can pass through `path` (search permission on it and on
    /// every directory above it), asked as that user: ACLs and groups count as the kernel counts them.
    private static func postgresCanEnter(_ path: String) -> Bool {
        let result = try? ChildProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", "/usr/bin/test", "-x", path])
        return result?.status == 0
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
        throw EmbeddedServerError.notInstalled(root + "/*/bin")
    }

    /// The server's programs this type runs. Checked before anything else, so a machine
    /// without them is told so (and how to install them) instead of a later step's failure.
    static let serverPrograms = ["initdb", "pg_ctl", "postgres"]

    /// Throws `notInstalled` unless `binDirectory` holds every server program, and, under root,
    /// `noPostgresUser` unless the `postgres` system user exists.
    public func checkInstalled() throws {
        let missing = Self.serverPrograms.filter { !FileManager.default.isExecutableFile(atPath: binDirectory + "/" + $0) }
        guard missing.isEmpty else { throw EmbeddedServerError.notInstalled(binDirectory) }
        if runsAsRoot, getpwnam("postgres") == nil { throw EmbeddedServerError.noPostgresUser }
    }

    /// Superuser connection to the `postgres` maintenance database: creating `habit`.
    var maintenanceConnectionString: String {
        "host='\(socketDirectory)' user=postgres dbname=postgres"
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
        try checkInstalled()
        try makeDirectory()
        let lock = try FileLock(path: directory + "/.lock")
        defer { lock.unlock() }
        try prepareOwnership()
        if !isInitialized {
            try runServerTool(["initdb", "-D", dataDirectory, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                               "--locale=C.UTF-8", "--no-instructions"])
        }
        if !isRunning() {
            try prepareSocketDirectory()
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

    /// Stops the server (fast: open transactions roll back), under the same file lock as
    /// `start()`, so a worker restarting it never interleaves with a stop.
    public func stop() throws {
        guard isRunning() else { return }
        let lock = try FileLock(path: directory + "/.lock")
        defer { lock.unlock() }
        guard isRunning() else { return }
        try runServerTool(["pg_ctl", "stop", "-D", dataDirectory, "-m", "fast", "-w", "-t", "60"])
    }

    /// For a worker whose connection attempt failed: starts the server if it is not running
    /// (someone ran `habit db stop`); true if it did. Running already: false, nothing done.
    public func startIfStopped() throws -> Bool {
        guard isInitialized, !isRunning() else { return false }
        try start()
        return true
    }

    /// Connects as the superuser over the socket and creates `habit` unless it exists. A
    /// `CREATE DATABASE` that loses a race (42P04, duplicate_database) counts as done.
    private func createDatabaseIfMissing() throws {
        let connection = try Connection(maintenanceConnectionString, applicationName: "habit-embedded")
        defer { connection.close() }
        let exists = try connection.queryOptional("SELECT 1 FROM pg_database WHERE datname = \(Self.databaseName)") != nil
        guard !exists else { return }
        do {
            // An identifier cannot be a bound parameter; databaseName is a constant of this type.
            try connection.execute("CREATE DATABASE \(unsafeSQL: Self.databaseName)")
        } catch let error as PostgresError where error.sqlState == .duplicateDatabase {
            return
        }
    }

    /// Makes the socket directory, or accepts an existing one only if it is a directory (not
    /// a symlink) owned by the server's user (`postgres` under root, else us) with mode 0700.
    /// Under /tmp anyone could have made the folder first, to read or replace the socket.
    private func prepareSocketDirectory() throws {
        let path = socketDirectory
        let serverUID: uid_t
        if runsAsRoot {
            guard let entry = getpwnam("postgres") else { throw EmbeddedServerError.commandFailed("getpwnam postgres", "no postgres user") }
            serverUID = entry.pointee.pw_uid
        } else {
            serverUID = geteuid()
        }
        if mkdir(path, 0o700) == 0 {
            // Ours: mkdir cannot follow or reuse anything. Under root hand it to postgres.
            if runsAsRoot, chown(path, serverUID, gid_t(bitPattern: -1)) != 0 {
                throw EmbeddedServerError.commandFailed("chown \(path)", String(cString: strerror(errno)))
            }
        } else if errno != EEXIST {
            throw EmbeddedServerError.commandFailed("mkdir \(path)", String(cString: strerror(errno)))
        }
        var status = stat()
        guard lstat(path, &status) == 0 else {
            throw EmbeddedServerError.commandFailed("lstat \(path)", String(cString: strerror(errno)))
        }
        guard status.st_mode & S_IFMT == S_IFDIR, status.st_uid == serverUID, status.st_mode & 0o7777 == 0o700 else {
            throw EmbeddedServerError.unsafeSocketDirectory(path)
        }
    }

    /// Makes `directory` unless it exists: the missing directories above it with mode 0755
    /// whatever the umask (under root the `postgres` user must pass through them, e.g.
    /// /var/lib/habit), the directory itself 0700 (only the server's user, and root, inside).
    private func makeDirectory() throws {
        var missing: [String] = []
        var path = directory
        while path != "/", !path.isEmpty, !FileManager.default.fileExists(atPath: path) {
            missing.append(path)
            path = (path as NSString).deletingLastPathComponent
        }
        for path in missing.reversed() {
            let mode: mode_t = path == directory ? 0o700 : 0o755
            if mkdir(path, mode) == 0 {
                chmod(path, mode)
            } else if errno != EEXIST {
                throw EmbeddedServerError.commandFailed("mkdir \(path)", String(cString: strerror(errno)))
            }
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

    /// Runs a PostgreSQL program from the bin directory, as `postgres` when we are root, in
    /// `directory` (which that user can enter: `prepareOwnership`). PostgreSQL's programs go
    /// back to the directory they started in after locating themselves and complain on
    /// stderr when they cannot. posix_spawn_file_actions_addchdir_np is not exported to
    /// Swift, so coreutils' `env --chdir` (8.28+) changes directory, after runuser.
    @discardableResult
    private func runServerTool(_ arguments: [String]) throws -> String {
        let command = ["/usr/bin/env", "--chdir=\(directory)", binDirectory + "/" + arguments[0]] + arguments.dropFirst()
        if runsAsRoot {
            return try run("/usr/sbin/runuser", ["-u", "postgres", "--"] + command)
        }
        return try run(command[0], Array(command.dropFirst()))
    }

    /// Runs a program to completion; returns its stdout. Its stderr only explains a failure.
    @discardableResult
    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let result = try ChildProcess.run(executable, arguments)
        guard result.status == 0 else {
            let explanation = [result.errors, result.output].filter { !$0.isEmpty }.joined(separator: "\n")
            throw EmbeddedServerError.commandFailed(([executable] + arguments).joined(separator: " "), explanation)
        }
        return result.output
    }
}

/// Runs a program to completion with posix_spawn and waitpid, stdout and stderr captured
/// in two files and returned apart: stdout is the answer, stderr only ever an explanation.
///
/// Not Foundation's Process: `pg_ctl start` leaves a daemon behind, and Process watches
/// for the child's end through a descriptor the daemon inherits, so it would wait for the
/// server to stop. Here the child gets only stdin (/dev/null), stdout and stderr (files);
/// every other descriptor is closed before exec.
enum ChildProcess {
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let outputPath = NSTemporaryDirectory() + "habit-cmd-\(UUID().uuidString)"
        let errorsPath = outputPath + ".err"
        defer {
            unlink(outputPath)
            unlink(errorsPath)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorsPath, O_WRONLY | O_CREAT | O_EXCL, 0o600)
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
        let errors = (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? ""
        // WIFEXITED/WEXITSTATUS are macros: decode the wait status by hand.
        let exited = status & 0x7f == 0
        return (exited ? (status >> 8) & 0xff : 128 + (status & 0x7f), output, errors)
    }
}

public enum EmbeddedServerError: Error, CustomStringConvertible {
    /// Where the programs were looked for.
    case notInstalled(String)
    case noPostgresUser
    case inaccessible(String)
    case unsafeSocketDirectory(String)
    case startFailed(String)
    case commandFailed(String, String)

    public var description: String {
        switch self {
        case .notInstalled(let directory):
            "the PostgreSQL server programs (\(EmbeddedServer.serverPrograms.joined(separator: ", "))) are not installed: not found in \(directory). Install them (apt-get install postgresql), set HABIT_PG_BINDIR to their directory, or point --database-url/DATABASE_URL at a server."
        case .noPostgresUser:
            "running as root, the embedded server runs as the postgres system user, which does not exist. Install the PostgreSQL server (apt-get install postgresql creates the user), or point --database-url/DATABASE_URL at a server."
        case .inaccessible(let directory):
            "running as root, the embedded server runs as the postgres user, which cannot reach \(directory). Choose a data directory it can reach with --data-dir (e.g. /var/lib/habit/NAME), or leave --data-dir and HABIT_DATA_DIR unset: then one is chosen."
        case .unsafeSocketDirectory(let path):
            "refusing to use the socket directory \(path): it must be a directory owned by \(geteuid() == 0 ? "postgres" : "this user") with mode 0700 (someone else may have made it). Remove it, or choose a shorter --data-dir so the socket lives inside it."
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
