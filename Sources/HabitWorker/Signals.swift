import Foundation

/// SIGTERM and SIGINT become a byte on a pipe that the line reader polls, so a signal ends
/// the read loop like EOF: in-flight requests finish and are answered, then the worker
/// exits 0. SIGPIPE is ignored so a vanished reader shows up as EPIPE, not a crash.
public enum ShutdownSignals {
    nonisolated(unsafe) private static var writeEnd: Int32 = -1

    /// Installs the handlers and returns the file descriptor to poll.
    public static func install() -> Int32 {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return -1 }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)
        writeEnd = fds[1]
        signal(SIGPIPE, SIG_IGN)
        let handler: @convention(c) (Int32) -> Void = { _ in
            var byte: UInt8 = 1
            _ = write(ShutdownSignals.writeEnd, &byte, 1) // async-signal-safe
        }
        signal(SIGTERM, handler)
        signal(SIGINT, handler)
        return fds[0]
    }
}
