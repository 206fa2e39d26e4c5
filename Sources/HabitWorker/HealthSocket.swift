import Foundation
import JSONRPC
import Logging
import PostgresClient
#if canImport(Glibc)
import Glibc
#endif

/// The worker's counters for the health socket: in-flight requests, running jobs, pool
/// connections, the last database error. Updated by dispatch and the pool under this object's
/// own lock, held only for an increment or a copy — never while waiting for anything — so a
/// snapshot is consistent and never waits for the database or the scheduler.
final class WorkerStatus: @unchecked Sendable {
    struct DatabaseError: Sendable {
        /// ISO 8601, UTC.
        var at: String
        var sqlState: String?
        /// `connect_failed`, `connection_lost` or `unexpected_state`.
        var reason: String
    }

    struct Snapshot: Sendable {
        var inFlight: Int
        var busy: Int
        var connected: Int
        /// The most recent connection attempt failed (cleared by a successful one).
        var lastConnectFailed: Bool
        var lastDatabaseError: DatabaseError?
    }

    private let lock = NSLock()
    private var snapshotValue = Snapshot(inFlight: 0, busy: 0, connected: 0, lastConnectFailed: false, lastDatabaseError: nil)
    let started = DispatchTime.now()
    /// Set once, before any thread reads it.
    var changes: ChangeListener?

    var snapshot: Snapshot { lock.withLock { snapshotValue } }

    /// A request took an in-flight place / gave it back.
    func accepted() { lock.withLock { snapshotValue.inFlight += 1 } }
    func answered() { lock.withLock { snapshotValue.inFlight -= 1 } }

    func connectionOpened() {
        lock.withLock {
            snapshotValue.connected += 1
            snapshotValue.lastConnectFailed = false
        }
    }

    func connectionClosed() { lock.withLock { snapshotValue.connected -= 1 } }

    /// A thread runs a job on a connection for the duration of `body`.
    func busy<Value>(_ body: () -> Value) -> Value {
        lock.withLock { snapshotValue.busy += 1 }
        defer { lock.withLock { snapshotValue.busy -= 1 } }
        return body()
    }

    func databaseError(_ error: Error, reason: String, connecting: Bool) {
        let entry = DatabaseError(at: Self.now(), sqlState: (error as? PostgresError)?.sqlState?.rawValue, reason: reason)
        lock.withLock {
            snapshotValue.lastDatabaseError = entry
            if connecting { snapshotValue.lastConnectFailed = true }
        }
    }

    /// The log lines' clock (UTC, milliseconds), so a status and the log agree on times.
    static func now() -> String { StderrLogHandler.timestamp() }
}

/// `--health-socket PATH`: a unix stream socket served by its own thread, independent of
/// stdin, the scheduler and the database. Each connection gets one JSON line and is closed:
///
///     {"status":"ok","pid":…,"in_flight":…,"max_in_flight":…,"queued":…,"running":…,
///      "stdin_pending_bytes":…,"pool":{"size":…,"connected":…,"busy":…},
///      "last_database_error":{"at":…,"sqlstate":…,"reason":…}|null,
///      "listen":{"subscribers":…,"connected":…,"last_error":{"at":…,"reason":…}|null},"uptime_s":…}
///
/// `listen` is the change listener (`changes.subscribe`): `connected` false while somebody is
/// subscribed means notifications are not coming (it reconnects with backoff).
///
/// `status` is `degraded` when no pool connection is up and the last attempt to connect
/// failed (the worker answers database methods with -32010 until one succeeds); otherwise
/// `ok`. A worker that does not answer at all is dead. The socket file has mode 0600, is
/// removed when the worker stops, and replaces a stale file left by a crashed worker only
/// after connecting to it failed (a live worker's socket is never taken over).
public final class HealthSocket: @unchecked Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case notASocket(String)
        case inUse(String)
        case tooLong(String)
        case noDirectory(String)
        case system(String, String)

        public var description: String {
            switch self {
            case .notASocket(let path): "health socket \(path) exists and is not a socket; refusing to replace it"
            case .inUse(let path): "health socket \(path) is served by another running process"
            case .tooLong(let path): "health socket path \(path) is longer than a unix socket address allows (107 bytes)"
            case .noDirectory(let path): "health socket directory \(path) does not exist"
            case .system(let call, let error): "health socket: \(call) failed: \(error)"
            }
        }
    }

    let path: String
    private let listener: Int32
    private let identity: (device: UInt64, inode: UInt64)
    private let status: WorkerStatus
    private let configuration: WorkerConfiguration
    private let stdinDescriptor: Int32
    private let logger: Logger
    private let stopped = LockedFlag()
    private let finished = DispatchSemaphore(value: 0)

    /// Binds `path` (replacing a stale socket file) and starts answering on its own thread.
    init(path: String, status: WorkerStatus, configuration: WorkerConfiguration, stdin: Int32, logger: Logger) throws {
        self.path = path
        self.status = status
        self.configuration = configuration
        self.stdinDescriptor = stdin
        self.logger = logger
        try Self.checkPath(path)
        try Self.removeStale(path)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure.system("socket", String(cString: strerror(errno))) }
        var address = try Self.address(path)
        // umask decides the socket file's mode at bind; 0177 leaves 0600 (chmod follows, too).
        let previous = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindError = errno
        umask(previous)
        guard bound == 0 else {
            close(descriptor)
            throw bindError == EADDRINUSE ? Failure.inUse(path) : Failure.system("bind \(path)", String(cString: strerror(bindError)))
        }
        chmod(path, 0o600)
        guard listen(descriptor, 16) == 0 else {
            let error = String(cString: strerror(errno))
            close(descriptor)
            unlink(path)
            throw Failure.system("listen", error)
        }
        var info = stat()
        lstat(path, &info)
        identity = (UInt64(info.st_dev), UInt64(info.st_ino))
        listener = descriptor
        let thread = Thread { [self] in serve() }
        thread.name = "habit-health"
        thread.start()
    }

    /// Refuses what cannot become the socket: a path too long, or an existing file that is not
    /// a socket. Cheap and without side effects: `habit serve` checks it with its settings.
    public static func checkPath(_ path: String) throws {
        _ = try address(path)
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFSOCK { throw Failure.notASocket(path) }
        let parent = (path as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: parent.isEmpty ? "." : parent, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw Failure.noDirectory(parent)
        }
    }

    /// Connects to the socket at `path` and returns the line it answers (for `habit health`).
    /// Throws when nothing answers: no socket, nobody accepting, or no line within `timeout`.
    public static func query(_ path: String, timeoutSeconds: Int = 5) throws -> String {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure.system("socket", String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = try address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw Failure.system("connect \(path)", String(cString: strerror(errno))) }
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !line.contains(0x0A) {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            line += buffer[..<count]
        }
        guard let end = line.firstIndex(of: 0x0A) else { throw Failure.system("read \(path)", "no status line") }
        return String(decoding: line[..<end], as: UTF8.self)
    }

    /// A socket file nobody accepts on (connect: ECONNREFUSED) is a crashed worker's: removed.
    private static func removeStale(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw Failure.system("socket", String(cString: strerror(errno))) }
        defer { close(probe) }
        var address = try address(path)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if connected == 0 { throw Failure.inUse(path) }
        guard errno == ECONNREFUSED else { throw Failure.system("connect \(path)", String(cString: strerror(errno))) }
        unlink(path)
    }

    static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { throw Failure.tooLong(path) }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        return address
    }

    private func serve() {
        defer { finished.signal() }
        while true {
            // accept4 is not exported to Swift; children are spawned with every other descriptor closed.
            let client = accept(listener, nil, nil)
            if client < 0 {
                if stopped.isSet { return }
                if errno == EINTR || errno == ECONNABORTED { continue }
                logger.error("health socket accept failed", metadata: ["error": "\(String(cString: strerror(errno)))"])
                return
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            // A probe that does not read must not hold this thread: the line fits the socket
            // buffer, and a send that would block gives up after a second.
            var timeout = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let line = Array(statusLine().utf8) + [0x0A]
            var offset = 0
            while offset < line.count {
                let sent = line[offset...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { break }
                offset += sent
            }
            close(client)
        }
    }

    /// The status line, from one snapshot of the counters.
    func statusLine() -> String {
        let now = status.snapshot
        let size = max(1, configuration.poolSize)
        let degraded = now.connected == 0 && now.lastConnectFailed
        var pending: Int32 = 0
        if ioctl(stdinDescriptor, UInt(FIONREAD), &pending) != 0 { pending = 0 }
        let uptime = Double(DispatchTime.now().uptimeNanoseconds - status.started.uptimeNanoseconds) / 1e9
        let encoded = JSONWriter.encode { json in
            json.object { json in
                json.key("status"); json.string(degraded ? "degraded" : "ok")
                json.key("pid"); json.int(getpid())
                json.key("in_flight"); json.int(now.inFlight)
                json.key("max_in_flight"); json.int(configuration.maxInFlight)
                json.key("running"); json.int(now.busy)
                json.key("queued"); json.int(max(0, now.inFlight - now.busy))
                json.key("stdin_pending_bytes"); json.int(pending)
                json.key("pool")
                json.object { json in
                    json.key("size"); json.int(size)
                    json.key("connected"); json.int(now.connected)
                    json.key("busy"); json.int(now.busy)
                }
                json.key("last_database_error")
                if let error = now.lastDatabaseError {
                    json.object { json in
                        json.key("at"); json.string(error.at)
                        json.key("sqlstate"); json.string(error.sqlState)
                        json.key("reason"); json.string(error.reason)
                    }
                } else {
                    json.null()
                }
                if let listener = status.changes {
                    let changes = listener.currentStatus
                    json.key("listen")
                    json.object { json in
                        json.key("subscribers"); json.int(changes.subscribers)
                        json.key("connected"); json.bool(changes.listening)
                        json.key("last_error")
                        if let error = changes.lastError {
                            json.object { json in
                                json.key("at"); json.string(error.at)
                                json.key("reason"); json.string(error.reason)
                            }
                        } else {
                            json.null()
                        }
                    }
                }
                json.key("uptime_s"); json.int(Int(uptime))
            }
        }
        return String(decoding: encoded.bytes, as: UTF8.self)
    }

    /// Stops answering and removes the socket file, unless another process replaced it.
    func stop() {
        guard stopped.set() else { return }
        var info = stat()
        if lstat(path, &info) == 0, UInt64(info.st_dev) == identity.device, UInt64(info.st_ino) == identity.inode {
            unlink(path)
        }
        // Linux: shutdown wakes a thread blocked in accept on this socket (EINVAL).
        shutdown(listener, Int32(SHUT_RDWR))
        finished.wait()
        close(listener)
    }
}
