import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How to start a worker: an executable, its arguments and exactly this environment.
public struct WorkerCommand: Sendable {
    public var executable: String
    public var arguments: [String]
    public var environment: [String: String]
    /// Start the child with SIGTERM and SIGINT blocked. `habit` unblocks them as the first
    /// thing its code does, after `habit serve` has put its handler in place, so a SIGTERM
    /// sent at any moment after the spawn (even while the dynamic loader still maps the
    /// libraries) waits and then drains the worker to exit 0, instead of killing it. Only for
    /// programs that unblock them (`habit`, or `env … habit`): any other would never see them.
    public var holdsShutdownSignals: Bool

    public init(executable: String, arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
                holdsShutdownSignals: Bool = false) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.holdsShutdownSignals = holdsShutdownSignals
    }

    /// `executable serve --database-url url arguments…` (e.g. `["--pool-size", "4"]`), with
    /// SIGTERM and SIGINT held back until the worker handles them (`holdsShutdownSignals`).
    public static func serve(executable: String, databaseURL: String, arguments: [String] = [],
                             environment: [String: String] = ProcessInfo.processInfo.environment) -> WorkerCommand {
        WorkerCommand(executable: executable, arguments: ["serve", "--database-url", databaseURL] + arguments, environment: environment,
                      holdsShutdownSignals: true)
    }
}

/// A child process with its stdin, stdout and stderr on pipes, each output pipe read by its
/// own thread with blocking reads (one thread per pipe: the child never blocks on a full
/// pipe, nothing polls), and a thread that waits for it to exit.
///
/// * Spawned with `posix_spawn` from pipes made close-on-exec under one lock, so children
///   started at the same time by other threads never inherit each other's pipe ends (which
///   would hide EOF).
/// * The exit is first waited for with `WNOWAIT` (the child stays a zombie, its pid cannot
///   be reused), then reaped under the lock `signal(_:)` takes: a signal never reaches a
///   recycled pid.
final class ChildProcess: @unchecked Sendable { // mutable state under `inputLock` / ExitMonitor's lock
    let pid: pid_t
    private let inputLock = NSLock()
    private var inputFD: Int32
    let exitMonitor = ExitMonitor()

    /// `onStdout`/`onStderr` get each chunk read, on that pipe's thread; `onStdoutEnd` and
    /// `onStderrEnd` run once after the last chunk (EOF or a read error). With
    /// `closeOutput`, stdout's read end is closed at once (a client that went away) and
    /// `onStdoutEnd` runs before this returns.
    init(command: WorkerCommand, closeOutput: Bool = false,
         onStdout: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, onStdoutEnd: @escaping @Sendable () -> Void,
         onStderr: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, onStderrEnd: @escaping @Sendable () -> Void) throws(HabitClientError) {
        _ = ChildProcess.ignoreSIGPIPE
        var stdinPipe: [Int32] = [-1, -1]
        var stdoutPipe: [Int32] = [-1, -1]
        var stderrPipe: [Int32] = [-1, -1]
        func closeAll() { for fd in stdinPipe + stdoutPipe + stderrPipe where fd >= 0 { close(fd) } }
        // pipe2(O_CLOEXEC) is not exported to Swift: pipe + FD_CLOEXEC, under a lock every
        // spawn of this module holds, so no concurrently spawned child inherits these ends.
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        func makePipe(_ fds: inout [Int32]) -> Bool {
            guard pipe(&fds) == 0 else { return false }
            return fcntl(fds[0], F_SETFD, FD_CLOEXEC) == 0 && fcntl(fds[1], F_SETFD, FD_CLOEXEC) == 0
        }
        guard makePipe(&stdinPipe), makePipe(&stdoutPipe), makePipe(&stderrPipe) else {
            let error = errno
            closeAll()
            throw .spawnFailed(executable: "pipe", errno: error)
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
        // This process ignores SIGPIPE; the child starts with default dispositions and an
        // empty signal mask, as it would from a shell, except that SIGTERM and SIGINT stay
        // blocked until a `habit` child has its handler (`WorkerCommand.holdsShutdownSignals`).
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        if command.holdsShutdownSignals {
            sigaddset(&mask, SIGTERM)
            sigaddset(&mask, SIGINT)
        }
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv: [UnsafeMutablePointer<CChar>?] = ([command.executable] + command.arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = command.environment.sorted { $0.key < $1.key }.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, command.executable, &actions, &attributes, argv, envp)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        close(stderrPipe[1])
        guard status == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            close(stderrPipe[0])
            throw .spawnFailed(executable: command.executable, errno: status)
        }
        pid = child
        inputFD = stdinPipe[1]

        if closeOutput {
            close(stdoutPipe[0])
            onStdoutEnd()
        } else {
            Self.startReader(fd: stdoutPipe[0], name: "worker-stdout-\(child)", onData: onStdout, onEnd: onStdoutEnd)
        }
        Self.startReader(fd: stderrPipe[0], name: "worker-stderr-\(child)", onData: onStderr, onEnd: onStderrEnd)
        exitMonitor.startReaping(pid: child)
    }

    deinit {
        closeInput()
    }

    private static let spawnLock = NSLock()

    /// Writing to a worker that already exited must be an EPIPE error, not death by SIGPIPE,
    /// so the first spawn makes this process ignore SIGPIPE (as SwiftNIO does).
    private static let ignoreSIGPIPE: Void = ignoreBrokenPipes()

    // MARK: - stdin

    /// Writes `bytes` whole (blocking while the pipe is full: the worker's backpressure).
    /// Returns how many bytes went out before an error, and the error (nil when all did).
    func writeAll(_ bytes: UnsafeRawBufferPointer) -> (written: Int, errno: Int32?) {
        inputLock.lock()
        defer { inputLock.unlock() }
        guard inputFD >= 0 else { return (0, EBADF) }
        var offset = 0
        while offset < bytes.count {
            let written = write(inputFD, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return (offset, errno)
            }
        }
        return (offset, nil)
    }

    /// Closes the child's stdin: it sees EOF after the bytes already written. Idempotent.
    func closeInput() {
        inputLock.lock()
        defer { inputLock.unlock() }
        if inputFD >= 0 {
            close(inputFD)
            inputFD = -1
        }
    }

    /// Sends `signal` unless the process was already reaped (never a recycled pid).
    func sendSignal(_ signal: Int32) -> Bool {
        exitMonitor.signalIfRunning(pid: pid, signal: signal)
    }

    // MARK: - Threads

    private static func startReader(fd: Int32, name: String, onData: @escaping @Sendable (UnsafeRawBufferPointer) -> Void,
                                    onEnd: @escaping @Sendable () -> Void) {
        let thread = Thread {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
            defer { buffer.deallocate() }
            while true {
                let count = read(fd, buffer.baseAddress, buffer.count)
                if count > 0 {
                    onData(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
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

private func ignoreBrokenPipes() {
    signal(SIGPIPE, SIG_IGN)
}

/// Waits for the child on its own thread. The child is first waited for with WNOWAIT
/// (left a zombie, so its pid cannot be reused), then reaped under the lock that
/// `signalIfRunning` takes.
final class ExitMonitor: @unchecked Sendable { // state under `condition`
    private let condition = NSCondition()
    private var exitStatus: Int32?
    private var observers: [@Sendable (Int32) -> Void] = []

    /// The exit status, 128 + signal number if a signal killed it, -1 if unknown; nil while it runs.
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
            let status: Int32
            if reaped == pid {
                let signal = raw & 0x7F
                status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
            } else {
                status = -1 // reaped by someone else: status unknown
            }
            exitStatus = status
            let waiting = observers
            observers = []
            condition.broadcast()
            condition.unlock()
            for observer in waiting { observer(status) }
        }
        thread.name = "worker-reaper-\(pid)"
        thread.start()
    }

    /// Calls `observer` with the status once the process exited (at once if it has).
    func onExit(_ observer: @escaping @Sendable (Int32) -> Void) {
        condition.lock()
        if let exitStatus {
            condition.unlock()
            observer(exitStatus)
            return
        }
        observers.append(observer)
        condition.unlock()
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

/// Splits a byte stream into lines (without "\n"); a last line without "\n" is still a line.
struct LineSplitter {
    private var partial: [UInt8] = []

    mutating func append(_ bytes: UnsafeRawBufferPointer, _ line: (UnsafeRawBufferPointer) -> Void) {
        guard let base = bytes.baseAddress else { return }
        var start = 0
        while start < bytes.count {
            guard let found = memchr(base + start, 0x0A, bytes.count - start) else {
                partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...]))
                return
            }
            let end = UnsafeRawPointer(found) - base
            if partial.isEmpty {
                line(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
            } else {
                partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                partial.withUnsafeBytes { line($0) }
                partial.removeAll(keepingCapacity: true)
            }
            start = end + 1
        }
    }

    mutating func finish(_ line: (UnsafeRawBufferPointer) -> Void) {
        if !partial.isEmpty {
            partial.withUnsafeBytes { line($0) }
            partial = []
        }
    }
}
