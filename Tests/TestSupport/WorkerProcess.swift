import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process (normally `habit serve`) driven through pipes on its stdin, stdout and
/// stderr, for black-box tests of the JSON-RPC worker.
///
/// * Spawned with `posix_spawn` from pipes made close-on-exec under a lock, so workers started
///   by tests running in parallel never inherit each other's pipe ends (which would hide EOF).
/// * stdout is drained line by line and stderr byte by byte by background threads, so the
///   child never blocks on a full pipe while the test is still writing requests.
/// * Every wait has a timeout that is only a hang guard (default 30 s): reads block until
///   the data arrives, nothing sleeps to wait for work, nothing asserts speed.
/// * A reaper thread waits for the child without reaping it first (`WNOWAIT`), so
///   `terminate(signal:)` can never hit a recycled pid.
/// * `withServe(…)`/`forceStop()` kill and reap the child on every path; so does deinit.
///
/// Not meant for concurrent use by several test threads at once (one test drives one worker).
///
/// This file spawns the process and owns its pipes, stdin and the captured stderr. Reading
/// responses and matching them to requests: WorkerProcess+Responses.swift; the checks every
/// response line must pass: WorkerResponse.swift; one-shot commands (`habit migrate`…):
/// WorkerProcess+Commands.swift.
public final class WorkerProcess: @unchecked Sendable {
    /// Default hang guard for reads and waits.
    public static let defaultTimeout: TimeInterval = 30

    public let pid: pid_t
    public let executable: String
    public let arguments: [String]

    private let inputLock = NSLock()
    private var inputFD: Int32
    private let stderrCapture = StderrCapture()
    private let exitMonitor = ExitMonitor()

    // Response collection (WorkerProcess+Responses.swift).
    let stdoutLines = StdoutLines()
    let stateLock = NSLock()
    /// Responses read while waiting for another id (see `response(id:)`), oldest first.
    var pending: [WorkerResponse] = []
    var nextAutomaticID = 1

    // MARK: - Starting

    /// Starts `executable` with `arguments` and exactly `environment`. With `closeOutput`,
    /// the read end of the child's stdout is closed at once (a client that went away), so
    /// its writes fail with EPIPE; `nextOutput` then reports `.endOfOutput` immediately.
    public init(executable: String, arguments: [String], environment: [String: String], closeOutput: Bool = false) throws {
        _ = WorkerProcess.ignoreSIGPIPE
        self.executable = executable
        self.arguments = arguments

        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        var stderrPipe: [Int32] = [-1, -1]
        func closeAll() { for fd in stdinPipe + stdoutPipe + stderrPipe where fd >= 0 { close(fd) } }
        // pipe2(O_CLOEXEC) is not exported to Swift: pipe + FD_CLOEXEC, and every spawn of this
        // helper holds the same lock, so no concurrently spawned child inherits these ends.
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        func makePipe(_ fds: inout [Int32]) -> Bool {
            guard pipe(&fds) == 0 else { return false }
            return fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 && fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0
        }
        guard makePipe(&stdinPipe), makePipe(&stdoutPipe), makePipe(&stderrPipe) else {
            let error = errno
            closeAll()
            throw WorkerProcessError.spawnFailed("pipe", errno: error)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the child's 0/1/2 only.
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The test process ignores SIGPIPE; the child starts with default dispositions and
        // an empty signal mask, as it would from a shell.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        close(stderrPipe[1])
        guard status == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            close(stderrPipe[0])
            throw WorkerProcessError.spawnFailed(executable, errno: status)
        }
        pid = child
        inputFD = stdinPipe[1]

        let stdoutLines = self.stdoutLines
        let stderrCapture = self.stderrCapture
        if closeOutput {
            close(stdoutPipe[0])
            stdoutLines.finish()
        } else {
            Self.startReader(fd: stdoutPipe[0], name: "worker-stdout-\(child)", onData: { stdoutLines.append($0) }, onEnd: { stdoutLines.finish() })
        }
        Self.startReader(fd: stderrPipe[0], name: "worker-stderr-\(child)", onData: { stderrCapture.append($0) }, onEnd: { stderrCapture.finish() })
        exitMonitor.startReaping(pid: child)
    }

    /// Starts `habit serve --database-url <url> <arguments…>` from `binaryPath()`.
    /// The environment is this process's minus `DATABASE_URL`, `HABIT_*`, `PGTZ`, `PGOPTIONS`,
    /// plus `environment`.
    public static func serve(databaseURL: String, arguments: [String] = [], environment: [String: String] = [:],
                             closeOutput: Bool = false) throws -> WorkerProcess {
        try WorkerProcess(executable: try binaryPath(), arguments: ["serve", "--database-url", databaseURL] + arguments,
                          environment: childEnvironment(environment), closeOutput: closeOutput)
    }

    /// `serve(…)`, then `body`; the worker is killed and reaped afterwards on every path.
    public static func withServe<Value>(databaseURL: String, arguments: [String] = [], environment: [String: String] = [:],
                                        closeOutput: Bool = false, _ body: (WorkerProcess) throws -> Value) throws -> Value {
        let worker = try serve(databaseURL: databaseURL, arguments: arguments, environment: environment, closeOutput: closeOutput)
        defer { worker.forceStop() }
        return try body(worker)
    }

    /// This process's environment without the settings that would steer a worker away from
    /// what a test asks for, plus `overrides`.
    public static func childEnvironment(_ overrides: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { key, _ in
            !key.hasPrefix("HABIT_") && !["DATABASE_URL", "PGTZ", "PGOPTIONS", "TZ"].contains(key)
        }
        for (key, value) in overrides { environment[key] = value }
        return environment
    }

    deinit {
        forceStop()
    }

    // MARK: - Locating the binary

    /// The `habit` executable: `$HABIT_BINARY`, else the first executable file named `habit`
    /// in the directory of the running test binary or one of its ancestors (on Linux the
    /// tests run as `.build/debug/habitPackageTests.xctest`, next to `.build/debug/habit`;
    /// on macOS from inside the `.xctest` bundle).
    public static func binaryPath() throws -> String {
        try locatedBinary.get()
    }

    private static let locatedBinary: Result<String, WorkerProcessError> = {
        if let explicit = ProcessInfo.processInfo.environment["HABIT_BINARY"], !explicit.isEmpty {
            return isExecutableFile(explicit) ? .success(explicit) : .failure(.binaryNotFound(searched: ["HABIT_BINARY=\(explicit)"]))
        }
        var starts: [URL] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            starts.append(URL(fileURLWithPath: exe))
        }
        if let executable = Bundle.main.executableURL { starts.append(executable) }
        starts.append(Bundle.main.bundleURL)
        if let first = CommandLine.arguments.first, !first.isEmpty {
            starts.append(URL(fileURLWithPath: first, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)))
        }
        var searched: [String] = []
        for start in starts {
            var directory = start.standardizedFileURL.resolvingSymlinksInPath()
            for _ in 0..<6 {
                directory = directory.deletingLastPathComponent()
                let candidate = directory.appendingPathComponent("habit").path
                if searched.contains(candidate) { continue }
                searched.append(candidate)
                if isExecutableFile(candidate) { return .success(candidate) }
                if directory.path == "/" { break }
            }
        }
        return .failure(.binaryNotFound(searched: searched))
    }()

    private static func isExecutableFile(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
            && FileManager.default.isExecutableFile(atPath: path)
    }

    private static let spawnLock = NSLock()

    private static let ignoreSIGPIPE: Void = {
        // Writing to a worker that already exited must be an EPIPE error, not death by SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
    }()

    // MARK: - Writing

    /// Writes `line` and a newline.
    public func send(_ line: String) throws {
        try sendRaw(Array(line.utf8) + [0x0A])
    }

    /// Writes a JSON value as one line.
    public func send(_ message: WireJSON) throws {
        try send(message.encoded)
    }

    /// Writes exactly these bytes (no newline added). Blocks while the pipe is full.
    public func sendRaw(_ bytes: [UInt8]) throws {
        inputLock.lock()
        defer { inputLock.unlock() }
        guard inputFD >= 0 else { throw WorkerProcessError.inputClosed(errno: EBADF) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(inputFD, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                throw WorkerProcessError.inputClosed(errno: errno)
            }
        }
    }

    /// Closes the worker's stdin: it sees EOF after the bytes already written.
    public func closeInput() {
        inputLock.lock()
        defer { inputLock.unlock() }
        if inputFD >= 0 {
            close(inputFD)
            inputFD = -1
        }
    }

    // MARK: - stderr

    /// Everything written to stderr so far.
    public var stderrText: String { String(decoding: stderrCapture.bytes, as: UTF8.self) }

    /// Whether stderr reached EOF (after the process exited, once the reader drained it).
    public func waitForStderrEnd(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> Bool {
        stderrCapture.waitForEnd(deadline: Date(timeIntervalSinceNow: timeout))
    }

    func stderrTail(_ count: Int = 2_000) -> String {
        String(stderrText.suffix(count))
    }

    // MARK: - Process state

    /// Waits for the process to exit: its exit status, 128 + signal number if a signal
    /// killed it, or nil if the hang guard expired.
    public func waitForExit(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> Int32? {
        exitMonitor.wait(deadline: Date(timeIntervalSinceNow: timeout))
    }

    public var isRunning: Bool { exitMonitor.status == nil }

    /// Sends `signal` unless the process was already reaped (never a recycled pid).
    @discardableResult
    public func terminate(signal: Int32 = SIGTERM) -> Bool {
        exitMonitor.signalIfRunning(pid: pid, signal: signal)
    }

    /// Closes stdin, SIGKILLs the process if it still runs and waits for it. Idempotent.
    public func forceStop() {
        closeInput()
        if isRunning {
            terminate(signal: SIGKILL)
            _ = waitForExit(timeout: 10)
        }
    }

    // MARK: - Threads

    private static func startReader(fd: Int32, name: String, onData: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
                                    onEnd: @escaping @Sendable () -> Void) {
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    buffer.withUnsafeBytes { onData(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            close(fd)
            onEnd()
        }
        thread.name = name
        thread.start()
    }
}

public enum WorkerProcessError: Error, CustomStringConvertible {
    case binaryNotFound(searched: [String])
    case spawnFailed(String, errno: Int32)
    case inputClosed(errno: Int32)
    case timedOut(String, stderrTail: String)
    case endOfOutput(String, stderrTail: String)
    case malformedOutput(line: String, problem: String)

    public var description: String {
        switch self {
        case .binaryNotFound(let searched):
            "the habit executable was not found (build it with `swift build --build-tests`, or set HABIT_BINARY); searched: \(searched.joined(separator: ", "))"
        case .spawnFailed(let what, let error): "spawning \(what) failed: \(String(cString: strerror(error)))"
        case .inputClosed(let error): "writing to the worker's stdin failed: \(String(cString: strerror(error)))"
        case .timedOut(let what, let tail): "hang guard: \(what). stderr tail:\n\(tail)"
        case .endOfOutput(let what, let tail): "the worker's stdout ended \(what). stderr tail:\n\(tail)"
        case .malformedOutput(let line, let problem): "malformed stdout line (\(problem)): \(line.prefix(500))"
        }
    }
}

// MARK: - Capture

/// stderr, kept whole.
final class StderrCapture: @unchecked Sendable {
    private let condition = NSCondition()
    private var storage: [UInt8] = []
    private var finished = false

    func append(_ bytes: UnsafeRawBufferPointer) {
        condition.lock()
        storage.append(contentsOf: bytes)
        condition.unlock()
    }

    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    var bytes: [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        return storage
    }

    func waitForEnd(deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !finished {
            if !condition.wait(until: deadline) { return finished }
        }
        return true
    }
}

/// Waits for the child on its own thread. The child is first waited for with WNOWAIT
/// (left a zombie, so its pid cannot be reused), then reaped under the lock that
/// `signalIfRunning` takes.
final class ExitMonitor: @unchecked Sendable {
    private let condition = NSCondition()
    private var exitStatus: Int32?

    var status: Int32? {
        condition.lock()
        defer { condition.unlock() }
        return exitStatus
    }

    func startReaping(pid: pid_t) {
        let thread = Thread { [self] in
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR {}
            condition.lock()
            var raw: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(pid, &raw, 0) } while reaped < 0 && errno == EINTR
            if reaped == pid {
                let signal = raw & 0x7F
                exitStatus = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
            } else {
                exitStatus = -1 // reaped by someone else: status unknown
            }
            condition.broadcast()
            condition.unlock()
        }
        thread.name = "worker-reaper-\(pid)"
        thread.start()
    }

    func wait(deadline: Date) -> Int32? {
        condition.lock()
        defer { condition.unlock() }
        while exitStatus == nil {
            if !condition.wait(until: deadline) { return exitStatus }
        }
        return exitStatus
    }

    func signalIfRunning(pid: pid_t, signal: Int32) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard exitStatus == nil else { return false }
        return kill(pid, signal) == 0
    }
}
