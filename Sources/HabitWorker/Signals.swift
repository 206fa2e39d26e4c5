import Foundation

/// A pipe whose read end the line reader polls next to stdin: one byte written to it ends
/// the read loop like EOF. Written from signal handlers (write(2) is async-signal-safe)
/// and by the worker itself when stdout breaks.
public final class WakePipe: Sendable {
    public let readEnd: Int32
    let writeEnd: Int32

    public init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        }
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    public func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }
}

/// SIGTERM and SIGINT wake the reader, so a signal ends the read loop like EOF: in-flight
/// requests finish and are answered, then the worker exits 0. SIGPIPE is ignored so a
/// vanished reader shows up as EPIPE, not a crash.
///
/// `habit serve` installs this as the first thing its own code does (`Habit.main`, before the
/// arguments are parsed), so a signal at any moment after that takes the documented way out;
/// `ServeCommand` later hands the same pipe to the worker. A signal that arrives before that,
/// while the dynamic loader still maps the libraries, ends the process by the default action:
/// no program's code can catch it. A spawner closes that window by starting the worker with
/// SIGTERM and SIGINT blocked (`WorkerCommand.serve` does): the signal then waits, pending,
/// until `install()` has put the handler in place and unblocks them.
public enum ShutdownSignals {
    nonisolated(unsafe) private static var writeEnd: Int32 = -1
    nonisolated(unsafe) private static var installed: WakePipe?

    /// Installs the handlers (once; later calls return the same pipe) and unblocks SIGTERM
    /// and SIGINT. Call it from the main thread before any other thread exists.
    @discardableResult
    public static func install() -> WakePipe {
        if let installed { return installed }
        let pipe = WakePipe()
        writeEnd = pipe.writeEnd
        installed = pipe
        signal(SIGPIPE, SIG_IGN)
        let handler: @convention(c) (Int32) -> Void = { _ in
            var byte: UInt8 = 1
            _ = write(ShutdownSignals.writeEnd, &byte, 1)
        }
        signal(SIGTERM, handler)
        signal(SIGINT, handler)
        unblock()
        return pipe
    }

    /// Unblocks SIGTERM and SIGINT in the calling thread (the mask a spawner gave the process
    /// survives exec). Every `habit` command calls it first: a signal held back by the spawner
    /// is delivered now, to the handler `install()` set or, for the other commands, to the
    /// default action.
    public static func unblock() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}
