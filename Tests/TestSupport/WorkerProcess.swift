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
public final class WorkerProcess: @unchecked Sendable {
    /// Default hang guard for reads and waits.
    public static let defaultTimeout: TimeInterval = 30

    public let pid: pid_t
    public let executable: String
    public let arguments: [String]

    private let inputLock = NSLock()
    private var inputFD: Int32
    private let output = LineCollector()
    private let errors = ByteCollector()
    private let exit = ExitMonitor()
    private let stateLock = NSLock()
    /// Responses read while waiting for another id (see `response(id:)`), oldest first.
    private var pending: [WorkerResponse] = []
    private var nextAutomaticID = 1

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

        let output = self.output
        let errors = self.errors
        if closeOutput {
            close(stdoutPipe[0])
            output.finish()
        } else {
            Self.startReader(fd: stdoutPipe[0], name: "worker-stdout-\(child)", onData: { output.append($0) }, onEnd: { output.finish() })
        }
        Self.startReader(fd: stderrPipe[0], name: "worker-stderr-\(child)", onData: { errors.append($0) }, onEnd: { errors.finish() })
        exit.startReaping(pid: child)
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

    /// Sends `{"jsonrpc":"2.0","id":id,"method":method[,"params":params]}`.
    public func sendRequest(_ method: String, params: WireJSON? = nil, id: WireJSON) throws {
        try send(Self.envelope(method: method, params: params, id: id))
    }

    /// Sends a notification (a request without "id").
    public func notify(_ method: String, params: WireJSON? = nil) throws {
        try send(Self.envelope(method: method, params: params, id: nil))
    }

    public static func envelope(method: String, params: WireJSON?, id: WireJSON?) -> WireJSON {
        var members: [WireJSON.Member] = [.init("jsonrpc", "2.0")]
        if let id { members.append(.init("id", id)) }
        members.append(.init("method", .string(method)))
        if let params { members.append(.init("params", params)) }
        return .object(members)
    }

    /// A fresh id ("auto-N") that no test writes by hand.
    public func automaticID() -> WireJSON {
        stateLock.withLock {
            defer { nextAutomaticID += 1 }
            return .string("auto-\(nextAutomaticID)")
        }
    }

    // MARK: - Reading

    public enum OutputEvent: Sendable, Equatable {
        case line([UInt8])
        /// stdout reached EOF (the worker closed it or exited) and every line was read.
        case endOfOutput
        /// The hang guard expired.
        case timedOut
    }

    /// The next stdout line (without "\n"), bypassing the response buffer.
    public func nextOutput(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> OutputEvent {
        output.next(deadline: Date(timeIntervalSinceNow: timeout))
    }

    /// The next stdout line as text, or nil at end of output or when the hang guard expires.
    public func readLine(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> String? {
        if case .line(let bytes) = nextOutput(timeout: timeout) { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    /// Responses read ahead by `response(id:)` and not yet returned.
    public var bufferedResponses: [WorkerResponse] { stateLock.withLock { pending } }

    /// The next response: a buffered one first, else the next stdout line, which must be a
    /// well-formed JSON-RPC response object or batch array (else this throws).
    public func readResponse(timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> WorkerResponse {
        if let buffered = stateLock.withLock({ pending.isEmpty ? nil : pending.removeFirst() }) { return buffered }
        return try readLineResponse(timeout: timeout)
    }

    private func readLineResponse(timeout: TimeInterval) throws -> WorkerResponse {
        switch nextOutput(timeout: timeout) {
        case .line(let bytes):
            return try WorkerResponse(line: bytes)
        case .endOfOutput:
            throw WorkerProcessError.endOfOutput("while waiting for a response", stderrTail: stderrTail())
        case .timedOut:
            throw WorkerProcessError.timedOut("no response within \(timeout) s", stderrTail: stderrTail())
        }
    }

    /// The response (not a batch) with this id, buffering every other response read meanwhile.
    public func response(id: WireJSON, timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> WorkerResponse {
        let found: WorkerResponse? = stateLock.withLock {
            guard let index = pending.firstIndex(where: { !$0.isBatch && $0.id == id }) else { return nil }
            return pending.remove(at: index)
        }
        if let found { return found }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let response = try readLineResponse(timeout: max(0, deadline.timeIntervalSinceNow))
            if !response.isBatch && response.id == id { return response }
            stateLock.withLock { pending.append(response) }
        }
    }

    /// Sends a request and waits for the response with its id (others are buffered).
    /// Without `id`, a fresh automatic id is used.
    @discardableResult
    public func request(_ method: String, params: WireJSON? = nil, id: WireJSON? = nil,
                        timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> WorkerResponse {
        let id = id ?? automaticID()
        try sendRequest(method, params: params, id: id)
        return try response(id: id, timeout: timeout)
    }

    /// Reads until stdout ends; returns the lines seen on the way (none, if the worker said
    /// nothing more). Throws if the hang guard expires first.
    public func remainingOutput(timeout: TimeInterval = WorkerProcess.defaultTimeout) throws -> [String] {
        var lines = bufferedResponses.map(\.raw)
        stateLock.withLock { pending.removeAll() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            switch nextOutput(timeout: max(0, deadline.timeIntervalSinceNow)) {
            case .line(let bytes): lines.append(String(decoding: bytes, as: UTF8.self))
            case .endOfOutput: return lines
            case .timedOut: throw WorkerProcessError.timedOut("stdout did not end within \(timeout) s", stderrTail: stderrTail())
            }
        }
    }

    /// Everything written to stderr so far.
    public var stderrText: String { String(decoding: errors.bytes, as: UTF8.self) }

    /// Whether stderr reached EOF (after the process exited, once the reader drained it).
    public func waitForStderrEnd(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> Bool {
        errors.waitForEnd(deadline: Date(timeIntervalSinceNow: timeout))
    }

    func stderrTail(_ count: Int = 2_000) -> String {
        String(stderrText.suffix(count))
    }

    // MARK: - Process state

    /// Waits for the process to exit: its exit status, 128 + signal number if a signal
    /// killed it, or nil if the hang guard expired.
    public func waitForExit(timeout: TimeInterval = WorkerProcess.defaultTimeout) -> Int32? {
        exit.wait(deadline: Date(timeIntervalSinceNow: timeout))
    }

    public var isRunning: Bool { exit.status == nil }

    /// Sends `signal` unless the process was already reaped (never a recycled pid).
    @discardableResult
    public func terminate(signal: Int32 = SIGTERM) -> Bool {
        exit.signalIfRunning(pid: pid, signal: signal)
    }

    /// Closes stdin, SIGKILLs the process if it still runs and waits for it. Idempotent.
    public func forceStop() {
        closeInput()
        if isRunning {
            terminate(signal: SIGKILL)
            _ = waitForExit(timeout: 10)
        }
    }

    // MARK: - Commands

    public struct CommandResult: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// `result` if the command exited 0; otherwise an error naming `what`, with its output.
    @discardableResult
    public static func checked(_ result: CommandResult, _ what: String) throws -> CommandResult {
        guard result.status == 0 else { throw CommandFailed(what: what, status: result.status, output: result.stdout + result.stderr) }
        return result
    }

    public struct CommandFailed: Error, CustomStringConvertible {
        public let what: String
        public let status: Int32
        public let output: String
        public var description: String { "\(what) exited \(status): \(output.suffix(2_000))" }
    }

    /// Runs a command to completion with stdin at EOF and returns its status and output.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           timeout: TimeInterval = 120) throws -> CommandResult {
        let process = try WorkerProcess(executable: executable, arguments: arguments,
                                        environment: environment ?? ProcessInfo.processInfo.environment)
        defer { process.forceStop() }
        process.closeInput()
        let lines = try process.remainingOutput(timeout: timeout)
        guard let status = process.waitForExit(timeout: timeout) else {
            throw WorkerProcessError.timedOut("\(executable) \(arguments.joined(separator: " ")) did not exit", stderrTail: process.stderrTail())
        }
        _ = process.waitForStderrEnd(timeout: 10)
        return CommandResult(status: status, stdout: lines.joined(separator: "\n"), stderr: process.stderrText)
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

// MARK: - Responses

/// One stdout line of the worker, parsed and checked to be a JSON-RPC 2.0 response object
/// (`{"jsonrpc":"2.0","id":…,"result"|"error":…}`) or a non-empty array of them.
public struct WorkerResponse: Sendable, CustomStringConvertible {
    /// The line exactly as written (without "\n").
    public let raw: String
    public let json: WireJSON

    public init(line bytes: [UInt8]) throws {
        let raw = String(decoding: bytes, as: UTF8.self)
        let json: WireJSON
        do {
            json = try WireJSON.parse(bytes)
        } catch {
            throw WorkerProcessError.malformedOutput(line: raw, problem: "\(error)")
        }
        if let problem = WorkerResponse.shapeProblem(json) {
            throw WorkerProcessError.malformedOutput(line: raw, problem: problem)
        }
        self.raw = raw
        self.json = json
    }

    private init(raw: String, json: WireJSON) {
        self.raw = raw
        self.json = json
    }

    public var description: String { raw }

    public var isBatch: Bool { json.arrayValue != nil }
    /// The entries of a batch response (each with its JSON re-encoded as `raw`).
    public var batch: [WorkerResponse] { json.arrayValue?.map { WorkerResponse(raw: $0.encoded, json: $0) } ?? [] }

    public var id: WireJSON? { json["id"] }
    public var result: WireJSON? { json["result"] }
    public var error: WireJSON? { json["error"] }
    public var isSuccess: Bool { result != nil }
    public var code: Int? { error?["code"]?.intValue }
    public var message: String? { error?["message"]?.stringValue }
    public var data: WireJSON? { error?["data"] }
    /// error.data.reason
    public var reason: String? { data?["reason"]?.stringValue }
    /// error.data.field
    public var field: String? { data?["field"]?.stringValue }

    /// Why `json` is not a valid JSON-RPC 2.0 response line, or nil if it is one.
    public static func shapeProblem(_ json: WireJSON) -> String? {
        if let elements = json.arrayValue {
            if elements.isEmpty { return "empty batch response" }
            for element in elements {
                if let problem = singleProblem(element) { return "batch entry: \(problem)" }
            }
            return nil
        }
        return singleProblem(json)
    }

    private static func singleProblem(_ json: WireJSON) -> String? {
        guard let keys = json.keys else { return "not an object" }
        guard json["jsonrpc"] == .string("2.0") else { return "jsonrpc is not \"2.0\"" }
        switch json["id"] {
        case .string?, .number?, .null?: break
        default: return "missing or invalid id"
        }
        let hasResult = json["result"] != nil
        let hasError = json["error"] != nil
        guard hasResult != hasError else { return "needs exactly one of result and error" }
        guard Set(keys) == ["jsonrpc", "id", hasResult ? "result" : "error"] else { return "unexpected members \(keys)" }
        if let error = json["error"] {
            guard let errorKeys = error.keys else { return "error is not an object" }
            guard error["code"]?.intValue != nil else { return "error.code is not an integer" }
            guard error["message"]?.stringValue != nil else { return "error.message is not a string" }
            guard Set(errorKeys).isSubset(of: ["code", "message", "data"]) else { return "unexpected error members \(errorKeys)" }
        }
        return nil
    }
}

// MARK: - Collectors

/// stdout split into lines, handed out in order.
final class LineCollector: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [[UInt8]] = []
    private var head = 0
    private var partial: [UInt8] = []
    private var finished = false

    func append(_ bytes: UnsafeRawBufferPointer) {
        condition.lock()
        defer { condition.unlock() }
        var start = 0
        for index in 0..<bytes.count where bytes[index] == 0x0A {
            partial.append(contentsOf: bytes[start..<index])
            lines.append(partial)
            partial = []
            start = index + 1
        }
        partial.append(contentsOf: bytes[start..<bytes.count])
        condition.broadcast()
    }

    func finish() {
        condition.lock()
        defer { condition.unlock() }
        if !partial.isEmpty {
            // A last line without "\n" is still output; the test sees it as a line.
            lines.append(partial)
            partial = []
        }
        finished = true
        condition.broadcast()
    }

    func next(deadline: Date) -> WorkerProcess.OutputEvent {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if head < lines.count {
                let line = lines[head]
                head += 1
                return .line(line)
            }
            if finished { return .endOfOutput }
            if !condition.wait(until: deadline) {
                if head < lines.count || finished { continue }
                return .timedOut
            }
        }
    }
}

/// stderr, kept whole.
final class ByteCollector: @unchecked Sendable {
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
