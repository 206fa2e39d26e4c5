import Foundation
import HabitClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process (normally `habit serve`) driven through pipes on its stdin, stdout and
/// stderr, for black-box tests of the JSON-RPC worker: a thin layer over HabitClient's
/// `WorkerConnection`, which spawns the process, reads stdout and stderr on a thread each
/// and reaps it. This layer keeps every stdout line in order (tests write their own ids and
/// hostile lines with `send`/`sendRaw`; none of them goes through the connection's id
/// matching) and stderr whole, and waits synchronously with hang guards.
///
/// * Spawned with close-on-exec pipes under a lock (`WorkerConnection`), so workers started
///   by tests running in parallel never inherit each other's pipe ends (which would hide EOF).
/// * stdout and stderr are drained by background threads, so the child never blocks on a
///   full pipe while the test is still writing requests.
/// * Every wait has a timeout that is only a hang guard (default 30 s): reads block until
///   the data arrives, nothing sleeps to wait for work, nothing asserts speed.
/// * The exit is waited for without reaping first (`WNOWAIT`), so `terminate(signal:)` can
///   never hit a recycled pid.
/// * `withServe(…)`/`forceStop()` kill and reap the child on every path; so does deinit.
/// * `connection` offers HabitClient's typed async calls on the same worker (`try await
///   worker.connection.dayGet(…)`); their answers are matched by id and do not appear in
///   this layer's stdout lines.
///
/// Not meant for concurrent use by several test threads at once (one test drives one worker).
///
/// This file starts the process and keeps stderr. Reading responses and matching them to
/// requests: WorkerProcess+Responses.swift; the checks every response line must pass:
/// WorkerResponse.swift; one-shot commands (`habit migrate`…): WorkerProcess+Commands.swift.
public final class WorkerProcess: @unchecked Sendable {
    /// Default hang guard for reads and waits.
    public static let defaultTimeout: TimeInterval = 30

    public let connection: WorkerConnection
    public var pid: pid_t { connection.pid }
    public let executable: String
    public let arguments: [String]

    private let stderrCapture: StderrCapture

    // Response collection (WorkerProcess+Responses.swift).
    let stdoutLines: StdoutLines
    let stateLock = NSLock()
    /// Responses read while waiting for another id (see `response(id:)`), oldest first.
    var pending: [WorkerResponse] = []
    var nextAutomaticID = 1

    // MARK: - Starting

    /// Starts `executable` with `arguments` and exactly `environment`. With `closeOutput`,
    /// the read end of the child's stdout is closed at once (a client that went away), so
    /// its writes fail with EPIPE; `nextOutput` then reports `.endOfOutput` immediately.
    /// With `holdsShutdownSignals`, the child starts with SIGTERM and SIGINT blocked, as
    /// `WorkerCommand.serve` starts a gateway's workers (`habit` unblocks them itself).
    public init(executable: String, arguments: [String], environment: [String: String], closeOutput: Bool = false,
                holdsShutdownSignals: Bool = false) throws {
        self.executable = executable
        self.arguments = arguments
        let stdoutLines = StdoutLines()
        let stderrCapture = StderrCapture()
        self.stdoutLines = stdoutLines
        self.stderrCapture = stderrCapture
        do {
            connection = try WorkerConnection(
                command: WorkerCommand(executable: executable, arguments: arguments, environment: environment,
                                       holdsShutdownSignals: holdsShutdownSignals),
                // Tests send over-long lines on purpose (sendRaw), never through the connection's check.
                options: .init(maxLineBytes: .max, closeOutput: closeOutput),
                handlers: .init(stderrLine: { stderrCapture.append(line: $0) }, stderrEnded: { stderrCapture.finish() },
                                otherLine: { stdoutLines.append(line: $0) }, outputEnded: { stdoutLines.finish() }))
        } catch {
            if case .spawnFailed(let what, let code) = error { throw WorkerProcessError.spawnFailed(what, errno: code) }
            throw error
        }
    }

    /// Starts `habit serve --database-url <url> <arguments…>` from `binaryPath()`, with
    /// SIGTERM and SIGINT held back until the worker handles them, as `WorkerCommand.serve`
    /// starts a gateway's workers. The environment is this process's minus `DATABASE_URL`,
    /// `HABIT_*`, `PGTZ`, `PGOPTIONS`, plus `environment`.
    public static func serve(databaseURL: String, arguments: [String] = [], environment: [String: String] = [:],
                             closeOutput: Bool = false) throws -> WorkerProcess {
        try WorkerProcess(executable: try binaryPath(), arguments: ["serve", "--database-url", databaseURL] + arguments,
                          environment: childEnvironment(environment), closeOutput: closeOutput, holdsShutdownSignals: true)
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
        do {
            try connection.sendRaw(bytes)
        } catch {
            if case .notSent(_, let code) = error { throw WorkerProcessError.inputClosed(errno: code) }
            throw error
        }
    }

    /// Closes the worker's stdin: it sees EOF after the bytes already written.
    public func closeInput() {
        connection.closeInput()
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
        connection.waitForExit(timeout: timeout)
    }

    public var isRunning: Bool { connection.isRunning }

    /// Sends `signal` unless the process was already reaped (never a recycled pid).
    @discardableResult
    public func terminate(signal: Int32 = SIGTERM) -> Bool {
        connection.terminate(signal: signal)
    }

    /// Closes stdin, SIGKILLs the process if it still runs and waits for it. Idempotent.
    public func forceStop() {
        closeInput()
        if isRunning {
            terminate(signal: SIGKILL)
            _ = waitForExit(timeout: 10)
        }
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

/// stderr, kept whole (line by line, each with its "\n").
final class StderrCapture: @unchecked Sendable {
    private let condition = NSCondition()
    private var storage: [UInt8] = []
    private var finished = false

    func append(line: [UInt8]) {
        condition.lock()
        storage.append(contentsOf: line)
        storage.append(0x0A)
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
